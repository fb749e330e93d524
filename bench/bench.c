/* SPDX-License-Identifier: MIT */
/*
 * bench.c: throughput benchmark of the analyzer (not a test).
 *
 *   remat_bench [--quick]
 *
 * Part 1, per model and built-in policy, on a tpu7x-256 slice (128 chips, 256
 * devices; FSDP x tensor=4):
 *   analyze_us  remat_analyze on a graph/policy/hardware resolved once, outside
 *               the timed loop (one full-model analysis: every layer, the head)
 *   path_us     the whole path per analysis: remat_resolve (JSON parse of the
 *               built-in graph, policy and hardware), remat_analyze, and
 *               freeing the result, graph and policy
 * Each row runs a warm-up, then enough iterations for about 0.2 s (0.02 s
 * with --quick), and reports the mean.
 *
 * Part 2, a sweep: every built-in policy x per_device_batch_size {1,2,4,8} x
 * max_target_length {2048,4096,8192} x 4 meshes (one device; tpu7x-256 with
 * FSDP, FSDP x tensor, FSDP x tensor x 2 pipeline stages) for both models, in
 * configurations per
 * second, (a) through the whole path per point (remat_config_build,
 * remat_resolve, remat_analyze, free) and (b) with graph/policy/hardware
 * resolved once per model x policy (remat_config_build, remat_analyze).
 *
 * Part 3, the solver on llama3.1-405b, tpu7x-256, per_device_batch_size 2
 * (the budget binds): `remat solve` (branch and bound), the frontier, and
 * exhaustive enumeration, in ms per call, with the ratio to exhaustive.
 *
 * Output: a plain table on stdout with a fixed column layout; only the
 * measured times vary between runs. Exit 0, or 1 when an analysis fails,
 * 2 on a bad argument.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "remat/builtin.h"
#include "remat/config.h"
#include "remat/error.h"
#include "remat/graph.h"
#include "remat/hw.h"
#include "remat/policy.h"
#include "remat/sim.h"
#include "remat/solve.h"

static const char *const models[] = {"llama3-70b", "llama3.1-405b"};
#define NMODELS (sizeof models / sizeof models[0])

static const unsigned batches[] = {1, 2, 4, 8};
#define NBATCHES (sizeof batches / sizeof batches[0])

static const unsigned lengths[] = {2048, 4096, 8192};
#define NLENGTHS (sizeof lengths / sizeof lengths[0])

/* Meshes of the sweep, as MaxText settings (at most 3 each): one chip, and
   a tpu7x-256 slice (256 devices) with FSDP only, FSDP x tensor, FSDP x tensor x 2
   pipeline stages. */
static const char *const meshes[][3] = {
    {NULL, NULL, NULL},
    {"topology=tpu7x-256", NULL, NULL},
    {"topology=tpu7x-256", "ici_tensor_parallelism=4", NULL},
    {"topology=tpu7x-256", "ici_tensor_parallelism=4", "ici_pipeline_parallelism=2"},
};
#define NMESHES (sizeof meshes / sizeof meshes[0])

/* The mesh of part 1's rows: FSDP x tensor on tpu7x-256 (256 devices). */
#define ROW_MESH 2

#define TARGET_S 0.2   /* timed seconds per row */
#define WARMUP_S 0.02  /* warm-up seconds per row (also calibrates the count) */
#define MIN_ITERS 3

static double target_s = TARGET_S;
static double warmup_s = WARMUP_S;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what, const remat_error_t *err) {
    char line[1024];
    remat_error_format(err, line, sizeof line);
    fprintf(stderr, "remat_bench: %s: %s\n", what, line);
    exit(1);
}

/* Builds a config from key=value strings (copied: the API takes char *const *). */
static void build_config(remat_config_t *cfg, const char *model, const char *policy,
                         unsigned batch, unsigned length, size_t mesh) {
    char a[7][REMAT_STR_LEN + 32];
    char *args[7];
    size_t n = 0;
    for (size_t k = 0; k < 3 && meshes[mesh][k]; k++) {
        snprintf(a[n], sizeof a[n], "%s", meshes[mesh][k]);
        args[n] = a[n];
        n++;
    }
    snprintf(a[n], sizeof a[n], "model_name=%s", model);
    args[n] = a[n];
    n++;
    snprintf(a[n], sizeof a[n], "remat_policy=%s", policy);
    args[n] = a[n];
    n++;
    if (batch) {
        snprintf(a[n], sizeof a[n], "per_device_batch_size=%u", batch);
        args[n] = a[n];
        n++;
    }
    if (length) {
        snprintf(a[n], sizeof a[n], "max_target_length=%u", length);
        args[n] = a[n];
        n++;
    }
    remat_error_t err;
    remat_error_init(&err);
    if (remat_config_build(NULL, n, args, cfg, &err)) {
        die("config", &err);
    }
}

/* One timed unit of work; returns nothing, fails hard. */
typedef struct analyze_ctx {
    const remat_graph_t *g;
    const remat_policy_t *p;
    const remat_hw_t *hw;
    const remat_config_t *cfg;
    remat_result_t *r;
} analyze_ctx_t;

static void run_analyze(void *arg) {
    analyze_ctx_t *c = arg;
    remat_error_t err;
    remat_error_init(&err);
    if (remat_analyze(c->g, c->cfg, c->p, c->hw, c->r, &err)) {
        die("analyze", &err);
    }
}

typedef struct path_ctx {
    const remat_config_t *cfg;
    remat_result_t *r;
    uint64_t peak; /* checked against the resolved-once result */
} path_ctx_t;

static void run_path(void *arg) {
    path_ctx_t *c = arg;
    remat_error_t err;
    remat_error_init(&err);
    remat_graph_t *g = NULL;
    remat_policy_t *p = NULL;
    remat_hw_t hw;
    if (remat_resolve(c->cfg, &g, &p, &hw, &err)) {
        die("resolve", &err);
    }
    if (remat_analyze(g, c->cfg, p, &hw, c->r, &err)) {
        die("analyze", &err);
    }
    c->peak = c->r->peak_bytes;
    /* The result borrows the graph: release it before the graph goes. */
    remat_result_release(c->r);
    remat_graph_free(g);
    remat_policy_free(p);
}

/*
 * Runs fn for warmup_s (at least MIN_ITERS times) to warm caches and estimate
 * its cost, then times enough iterations for target_s, in NCHUNKS equal
 * chunks. Returns the mean seconds per call over all of them; *best gets the
 * mean of the fastest chunk (less sensitive to other processes on a shared
 * machine), *iters the timed count.
 */
#define NCHUNKS 5

static double time_loop(void (*fn)(void *), void *arg, unsigned long *iters, double *best) {
    unsigned long n = 0;
    double t0 = now_s(), t = t0;
    while (n < MIN_ITERS || t - t0 < warmup_s) {
        fn(arg);
        n++;
        t = now_s();
    }
    double est = (t - t0) / (double)n;
    unsigned long per = est > 0 ? (unsigned long)(target_s / est / NCHUNKS) : 100000UL;
    if (per < 1) {
        per = 1;
    }
    double total = 0;
    *best = 0;
    for (int c = 0; c < NCHUNKS; c++) {
        t0 = now_s();
        for (unsigned long i = 0; i < per; i++) {
            fn(arg);
        }
        double dt = now_s() - t0;
        total += dt;
        if (c == 0 || dt < *best) {
            *best = dt;
        }
    }
    *best /= (double)per;
    *iters = per * NCHUNKS;
    return total / (double)*iters;
}

static double gib(uint64_t b) {
    return (double)b / (1024.0 * 1024.0 * 1024.0);
}

/* Mean seconds per call over a model's policies: analyze, best, path, best. */
typedef struct sums {
    double v[4];
    size_t n;
} sums_t;

/* Part 1: per model x policy, analyze alone and the whole path. */
static void bench_rows(sums_t sums[NMODELS]) {
    size_t npol = remat_builtin_count(REMAT_BUILTIN_POLICY);
    printf("%-14s %-34s %11s %9s %8s %11s %9s %7s %10s %5s\n", "model", "policy",
           "analyze_us", "best_us", "iters", "path_us", "best_us", "iters", "peak_GiB", "fits");
    for (size_t m = 0; m < NMODELS; m++) {
        memset(&sums[m], 0, sizeof sums[m]);
        for (size_t i = 0; i < npol; i++) {
            const char *pol = remat_builtin_name(REMAT_BUILTIN_POLICY, i);
            remat_config_t cfg;
            build_config(&cfg, models[m], pol, 0, 0, ROW_MESH);
            remat_error_t err;
            remat_error_init(&err);
            remat_graph_t *g = NULL;
            remat_policy_t *p = NULL;
            remat_hw_t hw;
            if (remat_resolve(&cfg, &g, &p, &hw, &err)) {
                die("resolve", &err);
            }
            remat_result_t r;
            remat_result_init(&r);
            analyze_ctx_t ac = {g, p, &hw, &cfg, &r};
            unsigned long ia = 0, ip = 0;
            double ba = 0, bp = 0;
            double ta = time_loop(run_analyze, &ac, &ia, &ba);
            uint64_t peak = r.peak_bytes;
            bool fits = r.fits;

            remat_result_t r2;
            remat_result_init(&r2);
            path_ctx_t pc = {&cfg, &r2, 0};
            double tp = time_loop(run_path, &pc, &ip, &bp);
            if (pc.peak != peak) {
                fprintf(stderr, "remat_bench: %s %s: peak differs between paths\n", models[m],
                        pol);
                exit(1);
            }
            printf("%-14s %-34s %11.2f %9.2f %8lu %11.2f %9.2f %7lu %10.2f %5s\n", models[m],
                   pol, ta * 1e6, ba * 1e6, ia, tp * 1e6, bp * 1e6, ip, gib(peak),
                   fits ? "yes" : "no");
            sums[m].v[0] += ta;
            sums[m].v[1] += ba;
            sums[m].v[2] += tp;
            sums[m].v[3] += bp;
            sums[m].n++;

            remat_result_release(&r2);
            remat_result_release(&r);
            remat_graph_free(g);
            remat_policy_free(p);
        }
    }
}

/* Part 2: the sweep. One pass over every point; counts the fits. */
typedef struct sweep_ctx {
    bool reuse; /* resolve once per model x policy */
    size_t points, fits;
    remat_result_t r;
} sweep_ctx_t;

static void sweep_pass(void *arg) {
    sweep_ctx_t *s = arg;
    size_t npol = remat_builtin_count(REMAT_BUILTIN_POLICY);
    s->points = s->fits = 0;
    for (size_t m = 0; m < NMODELS; m++) {
        for (size_t i = 0; i < npol; i++) {
            const char *pol = remat_builtin_name(REMAT_BUILTIN_POLICY, i);
            remat_error_t err;
            remat_error_init(&err);
            remat_graph_t *g = NULL;
            remat_policy_t *p = NULL;
            remat_hw_t hw;
            for (size_t b = 0; b < NBATCHES * NMESHES; b++) {
                for (size_t l = 0; l < NLENGTHS; l++) {
                    remat_config_t cfg;
                    build_config(&cfg, models[m], pol, batches[b % NBATCHES], lengths[l],
                                 b / NBATCHES);
                    if (!g && remat_resolve(&cfg, &g, &p, &hw, &err)) {
                        die("resolve", &err);
                    }
                    if (remat_analyze(g, &cfg, p, &hw, &s->r, &err)) {
                        die("analyze", &err);
                    }
                    s->points++;
                    s->fits += s->r.fits;
                    /* The result borrows cfg (and the graph): release it here. */
                    remat_result_release(&s->r);
                    if (!s->reuse) {
                        remat_graph_free(g);
                        remat_policy_free(p);
                        g = NULL;
                        p = NULL;
                    }
                }
            }
            remat_graph_free(g);
            remat_policy_free(p);
        }
    }
}

static void bench_sweep(void) {
    static const char *const label[2] = {"config+resolve+analyze", "config+analyze (resolved)"};
    printf("%-28s %7s %5s %7s %11s %9s %11s %11s\n", "sweep", "points", "fits", "passes",
           "us_per_cfg", "best_us", "configs_s", "best_cfg_s");
    for (int reuse = 0; reuse < 2; reuse++) {
        sweep_ctx_t s;
        memset(&s, 0, sizeof s);
        s.reuse = reuse != 0;
        remat_result_init(&s.r);
        unsigned long passes = 0;
        double best = 0;
        double t = time_loop(sweep_pass, &s, &passes, &best);
        double per = t / (double)s.points, bper = best / (double)s.points;
        printf("%-28s %7zu %5zu %7lu %11.2f %9.2f %11.0f %11.0f\n", label[reuse], s.points,
               s.fits, passes, per * 1e6, bper * 1e6, 1.0 / per, 1.0 / bper);
        remat_result_release(&s.r);
    }
}

/* Part 3: the solver. */
typedef struct solve_ctx {
    const remat_graph_t *g;
    const remat_config_t *cfg;
    const remat_hw_t *hw;
    unsigned flags;
    remat_solution_t s;
} solve_ctx_t;

static void run_solve(void *arg) {
    solve_ctx_t *c = arg;
    remat_error_t err;
    remat_error_init(&err);
    if (remat_solve(c->g, c->cfg, c->hw, c->flags, &c->s, &err)) {
        die("solve", &err);
    }
}

static void bench_solve(void) {
    const char *args[] = {"model_name=llama3.1-405b", "topology=tpu7x-256",
                          "per_device_batch_size=2"};
    remat_config_t cfg;
    remat_error_t err;
    remat_error_init(&err);
    if (remat_config_build(NULL, 3, (char *const *)args, &cfg, &err)) {
        die("config", &err);
    }
    remat_graph_t *g = NULL;
    remat_policy_t *p = NULL;
    remat_hw_t hw;
    if (remat_resolve(&cfg, &g, &p, &hw, &err)) {
        die("resolve", &err);
    }
    static const struct {
        const char *label;
        unsigned flags;
    } modes[] = {{"solve (branch and bound)", 0},
                 {"solve --frontier", REMAT_SOLVE_FRONTIER},
                 {"solve --exhaustive", REMAT_SOLVE_EXHAUSTIVE}};
    double ms[3];
    printf("%-28s %10s %10s %8s %10s %11s\n", "llama3.1-405b, tpu7x-256", "ms", "best_ms",
           "iters", "analyses", "placements");
    for (int m = 0; m < 3; m++) {
        solve_ctx_t c = {g, &cfg, &hw, modes[m].flags, {0}};
        remat_solution_init(&c.s);
        unsigned long iters = 0;
        double best = 0;
        double t = time_loop(run_solve, &c, &iters, &best);
        ms[m] = t * 1e3;
        printf("%-28s %10.2f %10.2f %8lu %10llu %11llu\n", modes[m].label, t * 1e3, best * 1e3,
               iters, (unsigned long long)c.s.evaluated, (unsigned long long)c.s.space);
        remat_solution_release(&c.s);
    }
    printf("exhaustive enumeration takes %.1fx the time of branch and bound and %.2fx that of "
           "the frontier\n",
           ms[2] / ms[0], ms[2] / ms[1]);
    remat_graph_free(g);
    remat_policy_free(p);
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            target_s = TARGET_S / 10;
            warmup_s = WARMUP_S / 10;
        } else {
            fprintf(stderr, "usage: remat_bench [--quick]\n");
            return 2;
        }
    }
    printf("remat_bench: %.3f s per row in %d chunks after %.3f s warm-up; times are means per\n"
           "call over all chunks, best_* the mean of the fastest chunk\n\n",
           target_s, NCHUNKS, warmup_s);
    sums_t sums[NMODELS];
    bench_rows(sums);
    printf("\n%-14s %-34s %11s %9s %8s %11s %9s\n", "model", "mean over policies", "analyze_us",
           "best_us", "", "path_us", "best_us");
    for (size_t m = 0; m < NMODELS; m++) {
        char what[64];
        snprintf(what, sizeof what, "(%zu policies)", sums[m].n);
        double k = 1e6 / (double)sums[m].n;
        printf("%-14s %-34s %11.2f %9.2f %8s %11.2f %9.2f\n", models[m], what, sums[m].v[0] * k,
               sums[m].v[1] * k, "", sums[m].v[2] * k, sums[m].v[3] * k);
    }
    printf("\n");
    bench_sweep();
    printf("\n");
    bench_solve();
    return 0;
}
