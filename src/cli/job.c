/* SPDX-License-Identifier: MIT */
/*
 * job.c: what every command of the command line shares (job.h): its error
 * lines and exit codes, one analysis's inputs built and resolved from the
 * options (a job), the config's and the result's notes, and compare's set
 * of analyses ranked. The rooms above it (main.c's commands, view.c's
 * pictures, fix.c's fix lines) call it; it calls none of them.
 *
 * Invariants: a job owns its graph and policy until released; compare's
 * jobs borrow the first job's graph and hardware, and its ranking is a
 * total order (ties end on the policy's name), so its output is stable.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remat/data/builtin.h"
#include "remat/input/resolve.h"
#include "remat/sim/sim.h"
#include "base/util.h"
#include "cli/job.h"
#include "input/config_internal.h"
#include "view/report_internal.h"

typedef remat_cli_opts_t opts_t;
typedef remat_cli_job_t job_t;

/* Per thread, so that bindings may run commands from several threads at
   once; NULL outside remat_cli_call. */
static _Thread_local remat_cli_sink_t *thread_sink;

void remat_cli_set_sink(remat_cli_sink_t *sink) {
    thread_sink = sink;
}

FILE *remat_cli_stderr(void) {
    return thread_sink && thread_sink->messages ? thread_sink->messages : stderr;
}

void remat_cli_catch(const remat_error_t *err) {
    if (thread_sink) {
        thread_sink->err = *err;
        thread_sink->has_err = true;
    }
}

int remat_cli_report_error(const remat_error_t *err) {
    char line[1024];
    remat_error_format(err, line, sizeof line);
    fprintf(remat_cli_stderr(), "remat: %s\n", line);
    remat_cli_catch(err);
    return err->code == REMAT_E_INTERNAL || err->code == REMAT_E_NOMEM ? REMAT_EXIT_INTERNAL
                                                                        : REMAT_EXIT_INPUT;
}

/* A usage error: its line (the text, then @p tail) where the thread's
   errors go, and the error caught for a binding. */
__attribute__((format(printf, 2, 0))) static int usage_v(const char *tail, const char *fmt,
                                                         va_list ap) {
    remat_error_t err;
    remat_error_init(&err);
    err.code = REMAT_E_USAGE;
    vsnprintf(err.text, sizeof err.text, fmt, ap);
    fprintf(remat_cli_stderr(), "remat: %s%s\n", err.text, tail);
    remat_cli_catch(&err);
    return REMAT_EXIT_INPUT;
}

int remat_cli_usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    const int rc = usage_v(" (see 'remat help')", fmt, ap);
    va_end(ap);
    return rc;
}

int remat_cli_usage_line(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    const int rc = usage_v("", fmt, ap);
    va_end(ap);
    return rc;
}

void remat_cli_job_release(job_t *j) {
    remat_result_release(&j->result);
    remat_graph_free(j->graph);
    remat_policy_free(j->policy);
    j->graph = NULL;
    j->policy = NULL;
}

remat_status_t remat_cli_config_build(const opts_t *o, remat_config_t *c, remat_error_t *err) {
    return remat_i_config_build_file(o->config ? o->file : NULL, (size_t)o->nargs, o->args, c,
                                     err);
}

remat_status_t remat_cli_job_resolve(job_t *j, const opts_t *o, remat_error_t *err) {
    remat_result_init(&j->result);
    remat_status_t st = remat_cli_config_build(o, &j->cfg, err);
    return st ? st : remat_resolve(&j->cfg, &j->graph, &j->policy, &j->hw, err);
}

remat_status_t remat_cli_job_analyze(job_t *j, const opts_t *o, remat_error_t *err) {
    remat_status_t st = remat_cli_job_resolve(j, o, err);
    return st ? st : remat_analyze(j->graph, &j->cfg, j->policy, &j->hw, &j->result, err);
}

/* The config's notes on standard error, so that check's one line and the
   reports on standard output stay as they are: the MaxText keys remat does
   not model, assumptions made, and, when the step does not pass, that the
   device count was assumed (a model sized for a slice, checked on one
   device, reads as a hopeless OOM). */
void remat_cli_print_notes(const remat_config_t *c, bool passes) {
    for (const char *p = c->notes; *p;) {
        const char *end = strchr(p, '\n');
        fprintf(remat_cli_stderr(), "remat: note: %.*s\n", (int)(end - p), p);
        p = end + 1;
    }
    if (c->nunused) {
        fprintf(remat_cli_stderr(),
                "remat: note: not modeled by remat (no effect on its figures): %s\n",
                c->unused_keys);
    }
    if (c->num_devices_assumed && !passes) {
        fprintf(remat_cli_stderr(),
                "remat: note: no topology, num_devices or whole mesh was given, so this "
                "is one device; give the run's (e.g. topology=v5p-256 or num_devices=256)\n");
    }
}

static void note_to_stderr(void *ctx, const char *text) {
    (void)ctx;
    fprintf(remat_cli_stderr(), "remat: note: %s\n", text);
}

void remat_cli_print_result_notes(const remat_result_t *r) {
    remat_i_for_each_note(r, note_to_stderr, NULL);
}

/* minimal_flash is minimal_with_context under a second name: runs over every
   preset leave it out rather than report the same policy twice. */
bool remat_cli_policy_is_alias(const char *name) {
    return strcmp(name, "minimal_flash") == 0;
}

/* A verdict's place in compare's ranking: those that pass, then those
   inside the safety margin, then those whose offloads break the host's RAM,
   then those over the budget. */
static int verdict_rank(remat_verdict_t v) {
    switch (v) {
        case REMAT_VERDICT_OK: return 0;
        case REMAT_VERDICT_RISK: return 1;
        case REMAT_VERDICT_HOST_OOM: return 2;
        case REMAT_VERDICT_OOM: return 3;
    }
    return 4;
}

/* compare's order: by verdict (verdict_rank); those that pass or are
   inside the margin by step time, the host's RAM breakers by how much
   they put on the host, those over the budget by how far over (all share
   the budget: by peak); then by peak, step and name. */
static int rank_cmp(const void *pa, const void *pb) {
    const remat_result_t *a = *(const remat_result_t *const *)pa;
    const remat_result_t *b = *(const remat_result_t *const *)pb;
    const int va = verdict_rank(remat_result_verdict(a)), vb = verdict_rank(remat_result_verdict(b));
    if (va != vb) {
        return va < vb ? -1 : 1;
    }
    if (va == 2 && a->host_bytes_per_host != b->host_bytes_per_host) {
        return a->host_bytes_per_host < b->host_bytes_per_host ? -1 : 1;
    }
    if (va == 3 && a->peak_bytes != b->peak_bytes) {
        return a->peak_bytes < b->peak_bytes ? -1 : 1;
    }
    if (a->step_seconds != b->step_seconds) {
        return a->step_seconds < b->step_seconds ? -1 : 1;
    }
    if (a->peak_bytes != b->peak_bytes) {
        return a->peak_bytes < b->peak_bytes ? -1 : 1;
    }
    return strcmp(a->policy->name, b->policy->name);
}

/* The policies compare runs: --policies split into @p names (in @p list,
   which the caller frees), else every preset but the alias. */
static int compare_names(const opts_t *o, char **names, size_t *n, char **list) {
    *n = 0;
    if (!o->policies) {
        for (size_t i = 0; i < remat_builtin_count(REMAT_BUILTIN_POLICY) && *n < REMAT_MAX_COMPARED;
             i++) {
            const char *name = remat_builtin_name(REMAT_BUILTIN_POLICY, i);
            if (!remat_cli_policy_is_alias(name)) {
                names[(*n)++] = (char *)name;
            }
        }
        return REMAT_EXIT_OK;
    }
    *list = remat_i_xstrdup(o->policies);
    for (char *tok = strtok(*list, ","); tok; tok = strtok(NULL, ",")) {
        if (*n == REMAT_MAX_COMPARED) {
            return remat_cli_usage_error("--policies takes at most %d policies",
                                         REMAT_MAX_COMPARED);
        }
        names[(*n)++] = tok;
    }
    return *n ? REMAT_EXIT_OK : remat_cli_usage_error("--policies needs a comma-separated list");
}

int remat_cli_compare_run(const opts_t *o, remat_cli_compare_t *c, remat_status_t *st,
                          remat_error_t *err) {
    char *names[REMAT_MAX_COMPARED];
    size_t n = 0;
    *st = REMAT_OK;
    int rc = compare_names(o, names, &n, &c->list);
    if (rc) {
        return rc;
    }
    job_t *jobs = c->jobs = remat_i_xcalloc(n, sizeof *jobs);
    c->rs = remat_i_xcalloc(n, sizeof *c->rs);
    c->n = n;
    *st = remat_cli_config_build(o, &jobs[0].cfg, err);
    for (size_t i = 0; *st == REMAT_OK && i < n; i++) {
        jobs[i].cfg = jobs[0].cfg;
        if (strlen(names[i]) >= sizeof jobs[i].cfg.remat_policy) {
            *st = remat_error_set(err, REMAT_E_USAGE, NULL, NULL, "policy name too long");
            break;
        }
        strcpy(jobs[i].cfg.remat_policy, names[i]);
        if (strcmp(names[i], "custom") != 0) {
            jobs[i].cfg.ncustom = 0;
        }
        /* One graph and hardware for all; each entry resolves its policy. */
        remat_result_init(&jobs[i].result);
        if (i == 0) {
            *st = remat_resolve(&jobs[0].cfg, &jobs[0].graph, &jobs[0].policy, &jobs[0].hw, err);
        } else {
            jobs[i].hw = jobs[0].hw;
            *st = remat_resolve_policy(&jobs[i].cfg, &jobs[i].policy, err);
        }
        if (*st == REMAT_OK) {
            *st = remat_analyze(jobs[0].graph, &jobs[i].cfg, jobs[i].policy, &jobs[i].hw,
                                &jobs[i].result, err);
        }
        c->rs[i] = &jobs[i].result;
    }
    if (*st == REMAT_OK) {
        qsort(c->rs, n, sizeof *c->rs, rank_cmp);
    }
    return REMAT_EXIT_OK;
}

void remat_cli_compare_release(remat_cli_compare_t *c) {
    for (size_t i = 0; i < c->n; i++) {
        remat_cli_job_release(&c->jobs[i]);
    }
    free(c->jobs);
    free(c->rs);
    free(c->list);
    memset(c, 0, sizeof *c);
}
