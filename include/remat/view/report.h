/* SPDX-License-Identifier: MIT */
/*
 * remat/view/report.h: formatting of analysis results as text for people, or as
 * JSON (docs/json-output.md, schema "remat-result/1"), CSV and Markdown for
 * tools. Formatting only: every number printed is a field of the result.
 * Output is deterministic (no times, no paths beyond the inputs' names).
 */
#ifndef REMAT_REPORT_H
#define REMAT_REPORT_H

#include <stdio.h>

#include "remat/sim/sim.h"
#include "remat/solve/solve.h"
#include "remat/sim/timeline.h"

typedef enum remat_format {
    REMAT_FMT_TEXT,
    REMAT_FMT_JSON,
    REMAT_FMT_CSV,
    REMAT_FMT_MD,
    REMAT_FMT_TRACE /* Chrome's trace event JSON (the timeline only) */
} remat_format_t;

/** "text", "json", "csv", "md" or "trace" into @p out; false for any other string. */
bool remat_format_parse(const char *s, remat_format_t *out);

/** The spelling remat_format_parse() accepts for @p f (a static string). */
const char *remat_format_name(remat_format_t f);

/** `remat analyze`: verdict, breakdown at the peak, compute and offload. */
void remat_report_analyze(FILE *out, const remat_result_t *r, remat_format_t fmt);

/** `remat table`: per-layer rows, per-tensor rows per profile, per-name rows. */
typedef enum remat_table_kind {
    REMAT_TABLE_LAYERS = 1,
    REMAT_TABLE_TENSORS = 2,
    REMAT_TABLE_NAMES = 4,
    REMAT_TABLE_STAGES = 8,
    REMAT_TABLE_ALL = 15
} remat_table_kind_t;

/** `remat table`: the tables of @p kinds (remat_table_kind_t bits) of result @p r. */
void remat_report_table(FILE *out, const remat_result_t *r, remat_format_t fmt, unsigned kinds);

/** `remat compare`: results side by side in the given (ranked) order. */
void remat_report_compare(FILE *out, const remat_result_t *const *rs, size_t n,
                          remat_format_t fmt);

/** `remat check`: the one-line verdict (text) or a small JSON object. */
void remat_report_check(FILE *out, const remat_result_t *r, remat_format_t fmt);

/** One fix as check and analyze end with it: the settings that change,
    the whole command with them (a line to paste), and what it gives. */
typedef struct remat_fix_line {
    const char *kind;      /* "placement", "batch" or "slice" (static) */
    char settings[2048];   /* key=value ...; "" when there is no fix */
    char command[8192];    /* "remat check ... key=value ..."; "" when there is no fix, or
                              when the command would not fit (the comment then says so) */
    char comment[512];     /* what it gives, or why there is none */
} remat_fix_line_t;

/** The fixes of a run that does not pass: what remat_fixes_find found and
    their lines. */
typedef struct remat_fix_report {
    const remat_fixes_t *fixes;
    const remat_fix_line_t *lines;
    size_t nlines;
} remat_fix_report_t;

/** check and analyze with the fixes of a run that does not pass (@p fx may
    be NULL): text ends with them, one pasteable line each; JSON carries
    them as "fixes" (docs/json-output.md). */
void remat_report_check_with(FILE *out, const remat_result_t *r, const remat_fix_report_t *fx,
                             remat_format_t fmt);
/** As remat_report_check_with, for analyze's report. */
void remat_report_analyze_with(FILE *out, const remat_result_t *r,
                               const remat_fix_report_t *fx, remat_format_t fmt);

/** The fixes as text alone ("what would make it fit", one line each). */
void remat_report_fixes(FILE *out, const remat_fix_report_t *fx);

/** A policy's largest fitting per_device_batch_size (0: none fits). */
typedef struct remat_batch_row {
    const char *policy;
    double batch;
} remat_batch_row_t;

/**
 * `remat solve`: the optimum with its MaxText overrides, why each name got
 * its placement (@p rows, may be NULL), the largest batch per policy, and,
 * when the solution holds a frontier, the Pareto points with every preset
 * (@p presets) placed against them. @p best is the analysis of the optimum
 * (NULL when nothing fits).
 */
void remat_report_solve(FILE *out, const remat_solution_t *s, const remat_explain_row_t *rows,
                        const remat_result_t *best, const remat_result_t *const *presets,
                        size_t npresets, const remat_batch_row_t *batches, size_t nbatches,
                        remat_format_t fmt);

/** A policy file (remat-policy/1) holding @p n placements. */
void remat_report_policy_file(FILE *out, const remat_choice_t *choices, size_t n,
                              const char *description);

/**
 * `remat timeline`: the events of @p tl (the timeline of @p r) as a text
 * table, CSV or JSON ("remat-timeline/1"), or as Chrome's trace event JSON
 * (REMAT_FMT_TRACE; docs/json-output.md). The trace wants an unfolded
 * timeline: a folded one's times are not one clock.
 */
void remat_report_timeline(FILE *out, const remat_result_t *r, const remat_timeline_t *tl,
                           remat_format_t fmt);

/** What `remat report --html` shows; everything is borrowed. */
typedef struct remat_html {
    const remat_result_t *result;          /* the run */
    const remat_timeline_t *timeline;      /* its timeline, unfolded */
    const remat_result_t *const *presets;  /* the run under each policy, ranked; may be NULL */
    size_t npresets;
    const remat_solution_t *frontier;      /* the solver's Pareto frontier; may be NULL */
    const char *frontier_note;             /* why there is none; may be NULL */
    const char *config_file;               /* --config as given; may be NULL */
    const char *const *settings;           /* key=value arguments as given */
    size_t nsettings;
} remat_html_t;

/**
 * One self-contained HTML page (no network: inline SVG charts, style and a
 * few lines of script): the verdict, the breakdown at the peak, the step's
 * costs, the charts, the per-layer, per-name and per-policy tables, the
 * notes and the configuration.
 */
void remat_report_html(FILE *out, const remat_html_t *in);

/**
 * The page's head for a notebook: one HTML fragment (a div with its own
 * scoped style, no script, no network) holding the verdict, the breakdown
 * at the peak, the step's costs and the chart of live HBM over the step.
 * @p tl is @p r's timeline, unfolded (remat_timeline_analyze).
 */
void remat_report_html_summary(FILE *out, const remat_result_t *r, const remat_timeline_t *tl);

/** Significant digits of every real in the JSON documents
    (docs/json-output.md): what a reader of a figure outside them (the
    Python package's) rounds to, to equal the document's. */
#define REMAT_JSON_REAL_DIGITS 10

/** The verdict's name as the JSON documents write it: "ok", "risk",
    "host_oom" or "oom". Static storage. */
const char *remat_verdict_name(remat_verdict_t v);

/** "12.34 GiB" into @p buf. */
void remat_format_bytes(uint64_t bytes, char *buf, size_t size);

/** "layer 31 forward 'wo'" style description of a moment. */
void remat_format_moment(const remat_moment_t *m, char *buf, size_t size);

#endif
