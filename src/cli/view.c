/* SPDX-License-Identifier: MIT */
/*
 * cli/view.c: the commands that show the step rather than sum it up:
 * `timeline` (events as text, CSV, JSON or a Chrome trace), `chart` (SVG:
 * the memory timeline, the layers, the policies) and `report` (one HTML
 * page with all of them). Part of the
 * remat program, like cli/main.c, whose helpers it shares through cli.h.
 *
 * Invariants: a command writes its output only once the analysis has
 * succeeded, so a failed run leaves no half-written file; an output file
 * that cannot be opened or written is an input error (exit 2) naming it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "remat/view/chart.h"
#include "remat/solve/solve.h"
#include "remat/sim/timeline.h"
#include "cli/fix.h"
#include "cli/job.h"
#include "cli/view.h"
#include "base/util.h"

/* Where a command writes: @p path, or the command's output stream @p out
   (standard output, or a binding's memory) for NULL or "-". */
static FILE *open_output(const char *path, FILE *out, remat_error_t *err) {
    if (!path || strcmp(path, "-") == 0) {
        return out;
    }
    FILE *f = fopen(path, "w");
    if (!f) {
        remat_error_set(err, REMAT_E_IO, path, NULL, "cannot write file");
    }
    return f;
}

/* Closes what open_output opened (flushes the command's own stream @p out);
   a failed write is an error. */
static remat_status_t close_output(FILE *f, FILE *out, const char *path, remat_error_t *err) {
    bool bad = ferror(f) != 0;
    if (f != out) {
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
        f = open_output(o->output, o->out, &err);
        st = f ? REMAT_OK : REMAT_E_IO;
    }
    if (st == REMAT_OK) {
        remat_report_timeline(f, &j->result, &tl, o->fmt);
        st = close_output(f, o->out, o->output, &err);
    }
    int rc = st ? remat_cli_report_run_error(o, &err) : REMAT_EXIT_OK;
    remat_timeline_release(&tl);
    remat_cli_job_release(j);
    free(j);
    return rc;
}

/* Writes @p r's chart of @p kind: the run's timeline, its layers. */
static remat_status_t chart_of_run(const remat_cli_opts_t *o, remat_chart_kind_t kind,
                                   remat_error_t *err) {
    remat_cli_job_t *j = remat_i_xcalloc(1, sizeof *j);
    remat_timeline_t tl;
    remat_timeline_init(&tl);
    remat_status_t st;
    if (kind == REMAT_CHART_TIMELINE) {
        st = job_timeline(j, o, true, &tl, err);
    } else {
        st = remat_cli_job_analyze(j, o, err);
    }
    FILE *f = NULL;
    if (st == REMAT_OK) {
        remat_cli_print_notes(&j->cfg, remat_result_passes(&j->result));
        f = open_output(o->output, o->out, err);
        st = f ? REMAT_OK : REMAT_E_IO;
    }
    if (st == REMAT_OK) {
        if (kind == REMAT_CHART_TIMELINE) {
            remat_chart_timeline(f, &j->result, &tl, false);
        } else {
            remat_chart_layers(f, &j->result, false);
        }
        st = close_output(f, o->out, o->output, err);
    }
    remat_timeline_release(&tl);
    remat_cli_job_release(j);
    free(j);
    return st;
}

/* The solver's Pareto frontier for the compared run, or why there is none
   (into @p note): a search too large for an enumeration is not an error
   here, the chart just goes without it. */
static void policies_frontier(const remat_cli_compare_t *c, remat_solution_t *sol, char *note,
                              size_t size) {
    remat_error_t err;
    remat_error_init(&err);
    const remat_cli_job_t *j = &c->jobs[0];
    note[0] = '\0';
    if (remat_solve(j->graph, &j->cfg, &j->hw, REMAT_SOLVE_FRONTIER, sol, &err)) {
        char line[512];
        remat_error_format(&err, line, sizeof line);
        snprintf(note, size, "no Pareto frontier: %s", line);
    } else if (sol->npoints == 0) {
        snprintf(note, size, "no Pareto frontier: the solver found no placement");
    }
}

/* Every preset (or --policies) and the frontier: into @p out's policies
   chart, or @p c and @p sol for the caller (the HTML report). */
remat_status_t remat_cli_policies(const remat_cli_opts_t *o, remat_cli_compare_t *c,
                                  remat_solution_t *sol, char *note, size_t size, int *rc,
                                  remat_error_t *err) {
    remat_status_t st = REMAT_OK;
    *rc = remat_cli_compare_run(o, c, &st, err);
    if (*rc == REMAT_EXIT_OK && st == REMAT_OK) {
        policies_frontier(c, sol, note, size);
    }
    return st;
}

static remat_status_t chart_policies(const remat_cli_opts_t *o, int *rc, remat_error_t *err) {
    remat_cli_compare_t c = {0};
    remat_solution_t sol;
    remat_solution_init(&sol);
    char note[640];
    remat_status_t st = remat_cli_policies(o, &c, &sol, note, sizeof note, rc, err);
    if (*rc == REMAT_EXIT_OK && st == REMAT_OK) {
        remat_cli_print_notes(&c.jobs[0].cfg, c.n && remat_result_passes(c.rs[0]));
        FILE *f = open_output(o->output, o->out, err);
        st = f ? REMAT_OK : REMAT_E_IO;
        if (f) {
            remat_chart_policies(f, c.rs, c.n, &sol, note[0] ? note : NULL, false);
            st = close_output(f, o->out, o->output, err);
        }
    }
    remat_solution_release(&sol);
    remat_cli_compare_release(&c);
    return st;
}

int remat_cli_chart(const remat_cli_opts_t *o) {
    remat_chart_kind_t kind = REMAT_CHART_TIMELINE;
    if (o->kind && !remat_chart_kind_parse(o->kind, &kind)) {
        return remat_cli_usage_error("unknown chart kind '%s' (timeline, layers, policies)",
                                     o->kind);
    }
    if (kind != REMAT_CHART_TIMELINE && (o->given & CLI_OPT_STAGE)) {
        return remat_cli_usage_error("--stage chooses the stage of --kind timeline");
    }
    if (kind != REMAT_CHART_POLICIES && (o->given & CLI_OPT_POLICIES)) {
        return remat_cli_usage_error("--policies lists the policies of --kind policies");
    }
    remat_error_t err;
    remat_error_init(&err);
    int rc = REMAT_EXIT_OK;
    remat_status_t st = kind == REMAT_CHART_POLICIES ? chart_policies(o, &rc, &err)
                                                     : chart_of_run(o, kind, &err);
    return rc ? rc : st ? remat_cli_report_run_error(o, &err) : REMAT_EXIT_OK;
}

int remat_cli_report(const remat_cli_opts_t *o) {
    if (o->html && o->output) {
        return remat_cli_usage_error("report takes its file once: --html FILE or -o FILE");
    }
    const char *html = o->html ? o->html : o->output;
    if (!html) {
        return remat_cli_usage_error("report writes an HTML page: --html FILE or -o FILE ('-' "
                                     "for standard output)");
    }
    remat_error_t err;
    remat_error_init(&err);
    remat_cli_job_t *j = remat_i_xcalloc(1, sizeof *j);
    remat_timeline_t tl;
    remat_timeline_init(&tl);
    remat_cli_compare_t c = {0};
    remat_solution_t sol;
    remat_solution_init(&sol);
    char note[640] = "";
    int rc = REMAT_EXIT_OK;
    remat_status_t st = job_timeline(j, o, true, &tl, &err);
    if (st == REMAT_OK) {
        st = remat_cli_policies(o, &c, &sol, note, sizeof note, &rc, &err);
    }
    if (rc == REMAT_EXIT_OK && st == REMAT_OK) {
        remat_cli_print_notes(&j->cfg, remat_result_passes(&j->result));
        const remat_html_t in = {&j->result, &tl, c.rs, c.n, &sol, note[0] ? note : NULL,
                                 o->config, (const char *const *)o->args, (size_t)o->nargs};
        FILE *f = open_output(html, o->out, &err);
        st = f ? REMAT_OK : REMAT_E_IO;
        if (f) {
            remat_report_html(f, &in);
            st = close_output(f, o->out, html, &err);
        }
    }
    remat_solution_release(&sol);
    remat_cli_compare_release(&c);
    remat_timeline_release(&tl);
    remat_cli_job_release(j);
    free(j);
    return rc ? rc : st ? remat_cli_report_run_error(o, &err) : REMAT_EXIT_OK;
}

/* The terminal chart's width and colour: on a terminal, its width (less
   the axis and the budget's value) and colour unless NO_COLOR is set or
   TERM is unset or "dumb" (no-color.org); elsewhere (--chart into a file
   or a pipe) 64 columns without colour, so that the output stays the same
   wherever it is read. */
static bool terminal_style(const remat_cli_opts_t *o, size_t *width) {
    *width = 64;
    if (o->out != stdout || !isatty(STDOUT_FILENO)) {
        return false;
    }
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
        /* 10 columns of axis on the left, " budget 123.45 GiB" on the right */
        const long w = (long)ws.ws_col - 10 - 19;
        *width = w < 24 ? 24 : w > 480 ? 480 : (size_t)w;
    }
    const char *term = getenv("TERM"), *nocolor = getenv("NO_COLOR");
    return term && *term && strcmp(term, "dumb") != 0 && !(nocolor && *nocolor);
}

int remat_cli_analyze_chart(const remat_cli_opts_t *o) {
    remat_error_t err;
    remat_error_init(&err);
    remat_cli_job_t *j = remat_i_xcalloc(1, sizeof *j);
    remat_timeline_t tl;
    remat_timeline_init(&tl);
    /* The traced run's result is the ordinary one (test_timeline checks). */
    remat_status_t st = job_timeline(j, o, true, &tl, &err);
    if (st == REMAT_OK) {
        remat_cli_print_notes(&j->cfg, remat_result_passes(&j->result));
        remat_report_analyze(o->out, &j->result, REMAT_FMT_TEXT);
        fputc('\n', o->out);
        size_t width;
        const bool color = terminal_style(o, &width);
        remat_chart_term_color(o->out, &j->result, &tl, width, 8, color);
    }
    if (st == REMAT_OK && !remat_result_passes(&j->result)) {
        /* what would make it fit, after the chart: the text's last lines */
        remat_fixes_t f;
        remat_fixes_init(&f);
        remat_fix_line_t lines[REMAT_CLI_FIX_LINES];
        size_t n = 0;
        st = remat_cli_fixes(o, "analyze", j, &f, lines, &n, &err);
        const remat_fix_report_t fx = {&f, lines, n};
        if (st == REMAT_OK) {
            remat_report_fixes(o->out, &fx);
        }
        remat_fixes_release(&f);
    }
    int rc = st ? remat_cli_report_run_error(o, &err) : REMAT_EXIT_OK;
    remat_timeline_release(&tl);
    remat_cli_job_release(j);
    free(j);
    return rc;
}
