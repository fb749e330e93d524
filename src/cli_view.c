/* SPDX-License-Identifier: MIT */
/*
 * cli_view.c: the commands that show the step rather than sum it up:
 * `timeline` (events as text, CSV, JSON or a Chrome trace). Part of the
 * remat program, like cli.c, whose helpers it shares through cli.h.
 *
 * Invariants: a command writes its output only once the analysis has
 * succeeded, so a failed run leaves no half-written file; an output file
 * that cannot be opened or written is an input error (exit 2) naming it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remat/timeline.h"
#include "cli.h"
#include "util.h"

/* Where a command writes: @p path, or standard output for NULL or "-". */
static FILE *open_output(const char *path, remat_error_t *err) {
    if (!path || strcmp(path, "-") == 0) {
        return stdout;
    }
    FILE *f = fopen(path, "w");
    if (!f) {
        remat_error_set(err, REMAT_E_IO, path, NULL, "cannot write file");
    }
    return f;
}

/* Closes what open_output opened; a failed write is an error. */
static remat_status_t close_output(FILE *f, const char *path, remat_error_t *err) {
    bool bad = ferror(f) != 0;
    if (f != stdout) {
        bad = fclose(f) != 0 || bad;
    } else {
        bad = fflush(f) != 0 || bad;
    }
    return bad ? remat_error_set(err, REMAT_E_IO, path ? path : "<stdout>", NULL,
                                 "write failed")
               : REMAT_OK;
}

/* The job's timeline (and its analysis, in j->result). */
static remat_status_t job_timeline(remat_cli_job_t *j, const remat_cli_opts_t *o, bool unfold,
                                   remat_timeline_t *tl, remat_error_t *err) {
    remat_status_t st = remat_cli_job_resolve(j, o, err);
    if (st == REMAT_OK) {
        const remat_timeline_opts_t to = {.stage = o->stage, .unfold = unfold};
        st = remat_timeline_analyze(j->graph, &j->cfg, j->policy, &j->hw, &to, &j->result, tl,
                                    err);
    }
    return st;
}

int remat_cli_timeline(const remat_cli_opts_t *o) {
    remat_error_t err;
    remat_error_init(&err);
    remat_cli_job_t *j = remat_i_xcalloc(1, sizeof *j);
    remat_timeline_t tl;
    remat_timeline_init(&tl);
    /* A trace is one clock: Perfetto shows every layer. */
    remat_status_t st = job_timeline(j, o, o->unfold || o->fmt == REMAT_FMT_TRACE, &tl, &err);
    FILE *f = NULL;
    if (st == REMAT_OK) {
        remat_cli_print_notes(&j->cfg, remat_result_passes(&j->result));
        f = open_output(o->output, &err);
        st = f ? REMAT_OK : REMAT_E_IO;
    }
    if (st == REMAT_OK) {
        remat_report_timeline(f, &j->result, &tl, o->fmt);
        st = close_output(f, o->output, &err);
    }
    int rc = st ? remat_cli_report_error(&err) : REMAT_EXIT_OK;
    remat_timeline_release(&tl);
    remat_cli_job_release(j);
    free(j);
    return rc;
}
