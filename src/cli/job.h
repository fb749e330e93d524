/* SPDX-License-Identifier: MIT */
/*
 * job.h: what the command line's rooms share (job.c): error lines and exit
 * codes, a job built and resolved from the options, the notes, compare's
 * ranked analyses. Internal to the remat program.
 */
#ifndef REMAT_CLI_JOB_H
#define REMAT_CLI_JOB_H

#include <stdbool.h>
#include <stddef.h>

#include "cli/cli.h"

/* Where a run in process (a binding: remat_cli_call) takes what the
   program would write on standard error: every line into messages, and
   the run's error, structured, into err (has_err set). One per thread. */
typedef struct remat_cli_sink {
    FILE *messages;
    remat_error_t err;
    bool has_err;
} remat_cli_sink_t;

/* Sets the calling thread's sink (NULL: standard error again). */
void remat_cli_set_sink(remat_cli_sink_t *sink);

/* Where the calling thread's error lines and notes go: its sink's
   messages, else standard error. */
FILE *remat_cli_stderr(void);

/* Records @p err as the run's error in the calling thread's sink, if it
   has one (remat_cli_report_error does; so does a usage error). */
void remat_cli_catch(const remat_error_t *err);

/* The error's one line on stderr; its exit code (2 input, 3 internal). */
int remat_cli_report_error(const remat_error_t *err);

/* "remat: ..." with a pointer to 'remat help' on stderr; exit code 2. */
int remat_cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* "remat: ..." alone on stderr (the text says where to look); exit code 2. */
int remat_cli_usage_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

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

/* remat_cli_job_resolve, then @p j's analysis into j->result. Release
   @p j either way. */
remat_status_t remat_cli_job_analyze(remat_cli_job_t *j, const remat_cli_opts_t *o,
                                     remat_error_t *err);

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

/* Whether preset @p name is another name of a preset (minimal_flash is
   minimal_with_context): runs over every preset leave it out. */
bool remat_cli_policy_is_alias(const char *name);

#endif
