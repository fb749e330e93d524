/* SPDX-License-Identifier: MIT */
/*
 * cli.h: the command line's tables, shared by cli.c (which runs commands)
 * and cli_help.c (which describes them). Internal to the remat program; not
 * part of the library.
 *
 * Invariants: every command's options are a subset of CLI_OPT_ALL; a
 * command that parses its own arguments (list, validate, help, version)
 * takes no options (opts == 0); formats is non-zero exactly when the
 * command takes --format, and always holds text (the default); a command
 * without --format writes one kind of file (chart: SVG, report: HTML).
 */
#ifndef REMAT_CLI_H
#define REMAT_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "remat/config.h"
#include "remat/error.h"
#include "remat/graph.h"
#include "remat/hw.h"
#include "remat/policy.h"
#include "remat/report.h"
#include "remat/sim.h"
#include "remat/solve.h"
#include "config_internal.h"

/* The options, as bits of a command's opts. */
enum {
    CLI_OPT_CONFIG = 1u << 0,
    CLI_OPT_FORMAT = 1u << 1,
    CLI_OPT_POLICIES = 1u << 2,
    CLI_OPT_KIND = 1u << 3,
    CLI_OPT_FRONTIER = 1u << 4,
    CLI_OPT_EXHAUSTIVE = 1u << 5,
    CLI_OPT_EMIT_POLICY = 1u << 6,
    CLI_OPT_UNFOLD = 1u << 7,
    CLI_OPT_STAGE = 1u << 8,
    CLI_OPT_OUTPUT = 1u << 9,
    CLI_OPT_HTML = 1u << 10,
    CLI_OPT_CHART = 1u << 11,
    CLI_OPT_NO_CHART = 1u << 12,
    CLI_OPT_ALL = (1u << 13) - 1
};

/* A format's bit in a command's formats. */
#define CLI_FMT(f) (1u << (f))

/* One option: how it is spelled, what it takes, what it does. */
typedef struct remat_cli_option {
    unsigned bit;     /* CLI_OPT_* */
    const char *name; /* "--config" */
    const char *arg;  /* "FILE", or NULL for a flag */
    const char *help; /* one line, without the command's name */
} remat_cli_option_t;

extern const remat_cli_option_t remat_cli_options[];
extern const size_t remat_cli_noptions;

/* The options given, parsed. */
typedef struct remat_cli_opts {
    unsigned given; /* CLI_OPT_* bits of the options on the command line */
    bool help;      /* --help or -h */
    const char *config;
    const char *emit_policy;
    unsigned solve_flags;
    remat_format_t fmt;
    const char *policies;
    const char *kind;  /* --kind as given: each command reads its own kinds */
    unsigned kinds;    /* table's, from kind (REMAT_TABLE_ALL without one) */
    bool unfold;
    size_t stage;      /* REMAT_NONE: the worst */
    const char *output; /* NULL or "-": standard output */
    const char *html;
    int chart;         /* analyze's chart: 1 --chart, 0 --no-chart, -1 on a terminal */
    int nargs;
    char **args;
    /* The config file's text, read once before the command runs (every
       build reads this copy: standard input and a pipe read only once). */
    remat_i_config_file_t *file;
    /* Where a report goes: standard output, or memory that reaches -o's
       file once the command ran (cli.c, run_to_output). */
    FILE *out;
} remat_cli_opts_t;

/* Everything one analysis needs, owned together. */
typedef struct remat_cli_job {
    remat_config_t cfg;
    remat_graph_t *graph;
    remat_policy_t *policy;
    remat_hw_t hw;
    remat_result_t result;
} remat_cli_job_t;

/* Exit codes. */
enum { REMAT_EXIT_OK = 0, REMAT_EXIT_NO = 1, REMAT_EXIT_INPUT = 2, REMAT_EXIT_INTERNAL = 3 };

/* The error's one line on stderr; its exit code (2 input, 3 internal). */
int remat_cli_report_error(const remat_error_t *err);

/* "remat: ..." with a pointer to 'remat help' on stderr; exit code 2. */
int remat_cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The config's notes on standard error (keys not modeled, assumptions). */
void remat_cli_print_notes(const remat_config_t *c, bool passes);

/* The analysis's notes (analyze's "notes": placements that change nothing,
   assumptions) on standard error, for check, whose standard output is its
   verdict. */
void remat_cli_print_result_notes(const remat_result_t *r);

/* The config the options give (the file read once, then the settings). */
remat_status_t remat_cli_config_build(const remat_cli_opts_t *o, remat_config_t *c,
                                      remat_error_t *err);

/* Builds @p j's config from the options and resolves its graph, policy and
   hardware (the result is left initialized, not computed). */
remat_status_t remat_cli_job_resolve(remat_cli_job_t *j, const remat_cli_opts_t *o,
                                     remat_error_t *err);
void remat_cli_job_release(remat_cli_job_t *j);

/* compare's analyses: every preset (or --policies), ranked. */
typedef struct remat_cli_compare {
    remat_cli_job_t *jobs; /* jobs[0] owns the graph the others borrow */
    const remat_result_t **rs; /* ranked: passing first, then by step time */
    size_t n;
    char *list; /* --policies, split in place */
} remat_cli_compare_t;

/* Runs compare's analyses into @p c (zeroed). Returns an exit code for a
   usage error, else REMAT_EXIT_OK with *st the analyses' status (an error
   in @p err). Release @p c either way. */
int remat_cli_compare_run(const remat_cli_opts_t *o, remat_cli_compare_t *c, remat_status_t *st,
                          remat_error_t *err);
void remat_cli_compare_release(remat_cli_compare_t *c);

/* One command, as git's builtin table lists them. */
typedef struct remat_cli_command {
    const char *name;
    const char *label;    /* the overview's first column: the name and its arguments */
    const char *synopsis; /* a usage line, after "remat " */
    const char *summary;  /* one line for the overview */
    const char *help;     /* what 'remat help NAME' adds to the summary */
    const char *exits;    /* its exit codes, as its help lists them */
    unsigned opts;        /* CLI_OPT_* it takes; 0 when it parses its own arguments */
    unsigned formats;     /* CLI_FMT(...) --format accepts; 0 without --format */
    int (*run)(const struct remat_cli_command *cmd, const remat_cli_opts_t *o, int argc,
               char **argv);
} remat_cli_command_t;

/* The overview: every command and option ('remat help'). */
void remat_cli_overview(FILE *out, const remat_cli_command_t *cmds, size_t n);

/* One command's help ('remat help NAME', 'remat NAME --help'). */
void remat_cli_command_help(FILE *out, const remat_cli_command_t *cmd);

/* "text, json, csv" for a formats mask, "text (default), ..." with
   @p mark_default. */
void remat_cli_formats_text(unsigned formats, bool mark_default, char *buf, size_t size);

/* The fixes of job @p j, which does not pass, as check and analyze end
   with them (cli_fix.c): remat_fixes_find into @p f, then one line each
   (placement, batch, slice) into @p lines (room for 3), each the command
   @p cmd as given with the change, printed only once the changed run was
   built and passed. Release @p f either way. */
remat_status_t remat_cli_fixes(const remat_cli_opts_t *o, const char *cmd,
                               const remat_cli_job_t *j, remat_fixes_t *f,
                               remat_fix_line_t *lines, size_t *nlines, remat_error_t *err);

/* An analysis error's line (remat_cli_report_error), and, when a dim did
   not divide over its mesh shards (REMAT_HINT_MESH_DIVIDE), the nearest
   mesh of the same devices on which the run binds, as settings to give
   (cli_fix.c). @p o may be NULL (no suggestion). Its exit code. */
int remat_cli_report_run_error(const remat_cli_opts_t *o, const remat_error_t *err);

/* The drawing commands (cli_view.c). */
int remat_cli_timeline(const remat_cli_opts_t *o);
int remat_cli_chart(const remat_cli_opts_t *o);
int remat_cli_report(const remat_cli_opts_t *o);
/* analyze's text report followed by the terminal chart of live HBM. */
int remat_cli_analyze_chart(const remat_cli_opts_t *o);

/* compare's analyses (remat_cli_compare_run, exit code in *rc) and the
   solver's Pareto frontier of the run into @p sol, or, when there is none,
   why into @p note (else note is ""). Release @p c and @p sol either way. */
remat_status_t remat_cli_policies(const remat_cli_opts_t *o, remat_cli_compare_t *c,
                                  remat_solution_t *sol, char *note, size_t size, int *rc,
                                  remat_error_t *err);

#endif
