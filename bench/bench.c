/* SPDX-License-Identifier: MIT */
/*
 * bench.c: throughput benchmark of the analyzer, the resolver and the
 * solver (not a test: it checks only that every call succeeds and that the
 * paths agree). bench/README.md describes the output; it names exactly the
 * configurations of the tables below, which the output prints as well.
 *
 *   remat_bench [--quick]
 *
 * Invariants:
 *  - every figure is timed in ROUNDS rounds; a round times a chunk of the
 *    baseline and then a chunk of the figure, so that both see the same
 *    machine; a figure's time is the median over rounds of its per-call
 *    time, and its ratio the median over rounds of figure / baseline;
 *  - nothing is built, resolved or freed inside a timed chunk except what
 *    the figure names (the sanity checks read results after the chunk);
 *  - exit 0, 1 when a call fails or two paths disagree, 2 on a bad argument.
 */
#include <assert.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "remat/input/resolve.h"
#include "remat/data/builtin.h"
#include "remat/input/config.h"
#include "remat/base/error.h"
#include "remat/model/graph.h"
#include "remat/model/hw.h"
#include "remat/model/policy.h"
#include "remat/sim/sim.h"
#include "remat/solve/solve.h"

static const char *const models[] = {"llama3-70b", "llama3.1-405b"};
#define NMODELS (sizeof models / sizeof models[0])

static const unsigned batches[] = {1, 2, 4, 8};
#define NBATCHES (sizeof batches / sizeof batches[0])

static const unsigned lengths[] = {2048, 4096, 8192};
#define NLENGTHS (sizeof lengths / sizeof lengths[0])

/* Meshes of the sweep, as MaxText settings (at most 3 each): one device,
   and a tpu7x-256 slice (256 devices) with FSDP only, FSDP x tensor=4, and
   FSDP x tensor=4 x 2 pipeline stages. */
static const char *const meshes[][3] = {
    {NULL, NULL, NULL},
    {"topology=tpu7x-256", NULL, NULL},
    {"topology=tpu7x-256", "ici_tensor_parallelism=4", NULL},
    {"topology=tpu7x-256", "ici_tensor_parallelism=4", "ici_pipeline_parallelism=2"},
};
#define NMESHES (sizeof meshes / sizeof meshes[0])

/* The mesh of the per-model figures: FSDP x tensor=4 on tpu7x-256. */
#define ROW_MESH 2

/* The solver's configurations: the bench's (the budget binds at batch 2)
   and the 405B command. */
static const char *const solve_bench[] = {"model_name=llama3.1-405b", "topology=tpu7x-256",
                                          "per_device_batch_size=2", NULL};
static const char *const solve_405b[] = {"model_name=llama3.1-405b", "per_device_batch_size=1",
                                         "max_target_length=8192", "num_devices=256",
                                         "ici_fsdp_parallelism=256", NULL};

/* The baseline hashes this built-in graph's JSON text (see baseline()). */
#define BASELINE_GRAPH "llama.flash"

#define ROUNDS 7
static double chunk_s = 0.04; /* timed seconds per chunk (--quick: 0.004) */

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

/* Builds a config from the mesh's settings and the given key=values. */
static void build_config(remat_config_t *cfg, size_t mesh, const char *const *extra,
                         size_t nextra) {
    char a[12][REMAT_STR_LEN + 32];
    char *args[12];
    size_t n = 0;
    for (size_t k = 0; k < 3 && meshes[mesh][k]; k++, n++) {
        snprintf(a[n], sizeof a[n], "%s", meshes[mesh][k]);
        args[n] = a[n];
    }
    for (size_t k = 0; k < nextra && n < 12; k++, n++) {
        snprintf(a[n], sizeof a[n], "%s", extra[k]);
        args[n] = a[n];
    }
    remat_error_t err;
    remat_error_init(&err);
    if (remat_config_build(NULL, n, args, cfg, &err)) {
        die("config", &err);
    }
}

/* A sweep point's config: model x policy x batch x length x mesh. */
static void point_config(remat_config_t *cfg, size_t m, const char *pol, unsigned batch,
                         unsigned length, size_t mesh) {
    char a[4][REMAT_STR_LEN + 32];
    snprintf(a[0], sizeof a[0], "model_name=%s", models[m]);
    snprintf(a[1], sizeof a[1], "remat_policy=%s", pol);
    snprintf(a[2], sizeof a[2], "per_device_batch_size=%u", batch);
    snprintf(a[3], sizeof a[3], "max_target_length=%u", length);
    const char *extra[4] = {a[0], a[1], batch ? a[2] : NULL, length ? a[3] : NULL};
    build_config(cfg, mesh, extra, batch ? (length ? 4 : 3) : 2);
}

/* ---- the baseline ---------------------------------------------------- */

/* One FNV-1a pass over a built-in graph's JSON text (13 KB). Each step
   depends on the last (a multiply chain), so it runs at the core's speed
   whatever the compiler does, touches only L1-resident bytes, and costs
   about what an analysis does: the ratio to it cancels the clock, the
   hypervisor's steal and other processes' share of the core, as far as
   they slow both alike. */
typedef struct base_ctx {
    const unsigned char *text;
    size_t len;
    volatile uint64_t sink;
} base_ctx_t;

static void baseline(void *arg) {
    base_ctx_t *b = arg;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < b->len; i++) {
        h = (h ^ b->text[i]) * 1099511628211ull;
    }
    b->sink = b->sink + h;
}

static base_ctx_t base;

/* ---- timing ----------------------------------------------------------- */

typedef struct timing {
    double median_s;      /* per call */
    double ratio;         /* per call, in baseline calls */
    unsigned long calls;  /* timed calls of the figure */
    double base_ns;       /* the baseline's median per call */
} timing_t;

/* Calls per chunk: about chunk_s worth, at least one. */
static unsigned long calibrate(void (*fn)(void *), void *arg) {
    unsigned long n = 0;
    double t0 = now_s(), t = t0;
    while (n < 1 || t - t0 < chunk_s / 4) {
        fn(arg);
        n++;
        t = now_s();
    }
    double est = (t - t0) / (double)n;
    unsigned long per = est > 0 ? (unsigned long)(chunk_s / est) : 1;
    return per ? per : 1;
}

static double chunk(void (*fn)(void *), void *arg, unsigned long per) {
    double t0 = now_s();
    for (unsigned long i = 0; i < per; i++) {
        fn(arg);
    }
    return (now_s() - t0) / (double)per;
}

static int dcmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, size_t n) {
    qsort(v, n, sizeof *v, dcmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Times @p fn in ROUNDS rounds of (baseline chunk, figure chunk). */
static timing_t measure(void (*fn)(void *), void *arg) {
    unsigned long per = calibrate(fn, arg), bper = calibrate(baseline, &base);
    double f[ROUNDS], b[ROUNDS], r[ROUNDS];
    for (int k = 0; k < ROUNDS; k++) {
        b[k] = chunk(baseline, &base, bper);
        f[k] = chunk(fn, arg, per);
        r[k] = f[k] / b[k];
    }
    timing_t t = {median(f, ROUNDS), median(r, ROUNDS), per * ROUNDS, median(b, ROUNDS) * 1e9};
    return t;
}

/* One line of the figures table. @p units is the work of one call (the
   analyses or configurations it covers): times and ratios are per unit. */
static void report(const char *figure, const char *cfg, const timing_t *t, double units,
                   const char *unit, double scale, const char *note) {
    double per = t->median_s / units;
    printf("%-34s %-4s %8lu %12.2f %-13s %12.0f %10.3f %9.0f  %s\n", figure, cfg, t->calls,
           per * scale, unit, 1.0 / per, t->ratio / units, t->base_ns, note);
}

/* ---- figures 1 and 2: analysis and whole path, per model -------------- */

typedef struct model_ctx {
    size_t npol;
    remat_config_t *cfg;  /* per policy */
    remat_graph_t *g;
    remat_policy_t **pol; /* per policy */
    remat_hw_t hw;
    remat_result_t r;
    uint64_t peaks;       /* sum of the peaks of a pass: both paths agree */
} model_ctx_t;

static void pass_analyze(void *arg) {
    model_ctx_t *c = arg;
    remat_error_t err;
    remat_error_init(&err);
    c->peaks = 0;
    for (size_t i = 0; i < c->npol; i++) {
        if (remat_analyze(c->g, &c->cfg[i], c->pol[i], &c->hw, &c->r, &err)) {
            die("analyze", &err);
        }
        c->peaks += c->r.peak_bytes;
    }
}

/* The whole path: what an analysis of a built config costs, inputs
   resolved from their names each time. */
static void pass_path(void *arg) {
    model_ctx_t *c = arg;
    remat_error_t err;
    remat_error_init(&err);
    c->peaks = 0;
    for (size_t i = 0; i < c->npol; i++) {
        remat_graph_t *g = NULL;
        remat_policy_t *p = NULL;
        remat_hw_t hw;
        if (remat_resolve(&c->cfg[i], &g, &p, &hw, &err)) {
            die("resolve", &err);
        }
        if (remat_analyze(g, &c->cfg[i], p, &hw, &c->r, &err)) {
            die("analyze", &err);
        }
        c->peaks += c->r.peak_bytes;
        /* The result borrows the graph: release it before the graph goes. */
        remat_result_release(&c->r);
        remat_graph_free(g);
        remat_policy_free(p);
    }
}

static void model_setup(model_ctx_t *c, size_t m) {
    memset(c, 0, sizeof *c);
    c->npol = remat_builtin_count(REMAT_BUILTIN_POLICY);
    c->cfg = calloc(c->npol, sizeof *c->cfg);
    c->pol = calloc(c->npol, sizeof *c->pol);
    if (!c->cfg || !c->pol) {
        fprintf(stderr, "remat_bench: out of memory\n");
        exit(1);
    }
    remat_error_t err;
    remat_error_init(&err);
    for (size_t i = 0; i < c->npol; i++) {
        point_config(&c->cfg[i], m, remat_builtin_name(REMAT_BUILTIN_POLICY, i), 0, 0,
                     ROW_MESH);
        remat_graph_t *g = NULL;
        if (remat_resolve(&c->cfg[i], &g, &c->pol[i], &c->hw, &err)) {
            die("resolve", &err);
        }
        if (c->g) {
            remat_graph_free(g); /* one graph serves every policy of the model */
        } else {
            c->g = g;
        }
    }
    remat_result_init(&c->r);
}

static void model_teardown(model_ctx_t *c) {
    remat_result_release(&c->r);
    for (size_t i = 0; i < c->npol; i++) {
        remat_policy_free(c->pol[i]);
    }
    remat_graph_free(c->g);
    free(c->pol);
    free(c->cfg);
}

static void bench_models(void) {
    static const char *const cfgname[NMODELS] = {"A", "B"};
    for (size_t m = 0; m < NMODELS; m++) {
        model_ctx_t c;
        model_setup(&c, m);
        timing_t ta = measure(pass_analyze, &c);
        uint64_t peaks = c.peaks;
        timing_t tp = measure(pass_path, &c);
        if (c.peaks != peaks) {
            fprintf(stderr, "remat_bench: %s: the whole path's peaks differ\n", models[m]);
            exit(1);
        }
        report("analysis (resolved inputs)", cfgname[m], &ta, (double)c.npol, "us/analysis",
               1e6, "");
        report("whole path: resolve+analyze+free", cfgname[m], &tp, (double)c.npol,
               "us/analysis", 1e6, "");
        model_teardown(&c);
    }
}

/* ---- figure 3: the sweep ---------------------------------------------- */

/* Every model x policy x mesh x batch x length, configs built up front. */
typedef struct sweep_ctx {
    size_t npol, npoints, fits;
    remat_config_t *cfg;    /* npoints, in the order of the loops below */
    remat_graph_t *g[NMODELS];
    remat_policy_t **pol;   /* per policy */
    remat_hw_t hw;
    remat_result_t r;
} sweep_ctx_t;

static size_t point_model(const sweep_ctx_t *s, size_t i) {
    return i / (s->npoints / NMODELS);
}

static size_t point_policy(const sweep_ctx_t *s, size_t i) {
    return i / (NMESHES * NBATCHES * NLENGTHS) % s->npol;
}

static void sweep_point_config(const sweep_ctx_t *s, size_t i, remat_config_t *cfg) {
    size_t l = i % NLENGTHS, b = i / NLENGTHS % NBATCHES, mesh = i / (NLENGTHS * NBATCHES) % NMESHES;
    point_config(cfg, point_model(s, i), remat_builtin_name(REMAT_BUILTIN_POLICY,
                                                            point_policy(s, i)),
                 batches[b], lengths[l], mesh);
}

static void sweep_setup(sweep_ctx_t *s) {
    memset(s, 0, sizeof *s);
    s->npol = remat_builtin_count(REMAT_BUILTIN_POLICY);
    s->npoints = NMODELS * s->npol * NMESHES * NBATCHES * NLENGTHS;
    s->cfg = calloc(s->npoints, sizeof *s->cfg);
    s->pol = calloc(s->npol, sizeof *s->pol);
    if (!s->cfg || !s->pol) {
        fprintf(stderr, "remat_bench: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < s->npoints; i++) {
        sweep_point_config(s, i, &s->cfg[i]);
    }
    remat_error_t err;
    remat_error_init(&err);
    for (size_t i = 0; i < s->npoints; i += NMESHES * NBATCHES * NLENGTHS) {
        remat_graph_t *g = NULL;
        remat_policy_t *p = NULL;
        if (remat_resolve(&s->cfg[i], &g, &p, &s->hw, &err)) {
            die("resolve", &err);
        }
        size_t m = point_model(s, i), k = point_policy(s, i);
        remat_graph_free(s->g[m] ? g : NULL);
        s->g[m] = s->g[m] ? s->g[m] : g;
        remat_policy_free(s->pol[k] ? p : NULL);
        s->pol[k] = s->pol[k] ? s->pol[k] : p;
    }
    remat_result_init(&s->r);
}

static void sweep_teardown(sweep_ctx_t *s) {
    remat_result_release(&s->r);
    for (size_t m = 0; m < NMODELS; m++) {
        remat_graph_free(s->g[m]);
    }
    for (size_t k = 0; k < s->npol; k++) {
        remat_policy_free(s->pol[k]);
    }
    free(s->pol);
    free(s->cfg);
}

static void sweep_resolved(void *arg) {
    sweep_ctx_t *s = arg;
    remat_error_t err;
    remat_error_init(&err);
    s->fits = 0;
    for (size_t i = 0; i < s->npoints; i++) {
        if (remat_analyze(s->g[point_model(s, i)], &s->cfg[i], s->pol[point_policy(s, i)],
                          &s->hw, &s->r, &err)) {
            die("analyze", &err);
        }
        s->fits += s->r.fits;
    }
}

/* Per point, resolve (and with @p build, first build the config). */
static void sweep_path(sweep_ctx_t *s, bool build) {
    remat_error_t err;
    remat_error_init(&err);
    s->fits = 0;
    for (size_t i = 0; i < s->npoints; i++) {
        remat_config_t fresh;
        const remat_config_t *cfg = &s->cfg[i];
        if (build) {
            sweep_point_config(s, i, &fresh);
            cfg = &fresh;
        }
        remat_graph_t *g = NULL;
        remat_policy_t *p = NULL;
        remat_hw_t hw;
        if (remat_resolve(cfg, &g, &p, &hw, &err)) {
            die("resolve", &err);
        }
        if (remat_analyze(g, cfg, p, &hw, &s->r, &err)) {
            die("analyze", &err);
        }
        s->fits += s->r.fits;
        remat_result_release(&s->r); /* it borrows cfg and the graph */
        remat_graph_free(g);
        remat_policy_free(p);
    }
}

static void sweep_whole(void *arg) {
    sweep_path(arg, false);
}

static void sweep_built(void *arg) {
    sweep_path(arg, true);
}

static void bench_sweep(void) {
    sweep_ctx_t s;
    sweep_setup(&s);
    static const struct {
        const char *figure;
        void (*fn)(void *);
    } modes[] = {{"sweep, resolved inputs", sweep_resolved},
                 {"sweep, resolve+analyze+free", sweep_whole},
                 {"sweep, config+resolve+analyze+free", sweep_built}};
    size_t fits = 0;
    for (size_t k = 0; k < sizeof modes / sizeof modes[0]; k++) {
        timing_t t = measure(modes[k].fn, &s);
        if (k && s.fits != fits) {
            fprintf(stderr, "remat_bench: the sweep's paths disagree on what fits\n");
            exit(1);
        }
        fits = s.fits;
        char note[64];
        snprintf(note, sizeof note, "%zu of %zu fit", s.fits, s.npoints);
        report(modes[k].figure, "S", &t, (double)s.npoints, "us/config", 1e6, note);
    }
    sweep_teardown(&s);
}

/* ---- figure 4: the solver --------------------------------------------- */

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

static size_t count(const char *const *args) {
    size_t n = 0;
    while (args[n]) {
        n++;
    }
    return n;
}

static void bench_solve_one(const char *figure, const char *cfgname, const char *const *args,
                            unsigned flags) {
    remat_config_t cfg;
    build_config(&cfg, 0, args, count(args));
    remat_error_t err;
    remat_error_init(&err);
    remat_graph_t *g = NULL;
    remat_policy_t *p = NULL;
    remat_hw_t hw;
    if (remat_resolve(&cfg, &g, &p, &hw, &err)) {
        die("resolve", &err);
    }
    solve_ctx_t c = {g, &cfg, &hw, flags, {0}};
    remat_solution_init(&c.s);
    timing_t t = measure(run_solve, &c);
    char note[128];
    snprintf(note, sizeof note, "%llu analyses of %llu placements%s",
             (unsigned long long)c.s.evaluated, (unsigned long long)c.s.space,
             c.s.found ? "" : ", none fits");
    report(figure, cfgname, &t, 1, "ms/solve", 1e3, note);
    remat_solution_release(&c.s);
    remat_graph_free(g);
    remat_policy_free(p);
}

static void bench_solve(void) {
    bench_solve_one("solve (branch and bound)", "P", solve_bench, 0);
    bench_solve_one("solve --exhaustive", "P", solve_bench, REMAT_SOLVE_EXHAUSTIVE);
    bench_solve_one("solve (branch and bound)", "Q", solve_405b, 0);
}

/* ---- output ----------------------------------------------------------- */

static void print_args(const char *const *args) {
    for (size_t k = 0; args[k]; k++) {
        printf(" %s", args[k]);
    }
    printf("\n");
}

static void print_configurations(size_t npol) {
    printf("configurations (everything else at the defaults of the model preset and "
           "MaxText's base.yml)\n");
    for (size_t m = 0; m < NMODELS; m++) {
        printf("  %c  model_name=%s %s %s, each of the %zu built-in policies in turn\n",
               (int)('A' + m), models[m], meshes[ROW_MESH][0], meshes[ROW_MESH][1], npol);
    }
    printf("  S  %zu models x %zu policies x per_device_batch_size {", NMODELS, npol);
    for (size_t b = 0; b < NBATCHES; b++) {
        printf("%s%u", b ? "," : "", batches[b]);
    }
    printf("} x max_target_length {");
    for (size_t l = 0; l < NLENGTHS; l++) {
        printf("%s%u", l ? "," : "", lengths[l]);
    }
    printf("} x %zu meshes = %zu configurations; meshes:\n", NMESHES,
           NMODELS * npol * NBATCHES * NLENGTHS * NMESHES);
    for (size_t k = 0; k < NMESHES; k++) {
        printf("       ");
        for (size_t i = 0; i < 3 && meshes[k][i]; i++) {
            printf(" %s", meshes[k][i]);
        }
        printf("%s\n", meshes[k][0] ? "" : " (none: one device)");
    }
    printf("  P ");
    print_args(solve_bench);
    printf("  Q ");
    print_args(solve_405b);
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            chunk_s /= 10;
        } else {
            fprintf(stderr, "usage: remat_bench [--quick]\n");
            return 2;
        }
    }
    base.text = (const unsigned char *)remat_builtin_find(REMAT_BUILTIN_GRAPH, BASELINE_GRAPH);
    assert(base.text);
    base.len = strlen((const char *)base.text);
    print_configurations(remat_builtin_count(REMAT_BUILTIN_POLICY));
    printf("\n%d rounds of (baseline chunk, figure chunk), %.3f s a chunk; medians over the "
           "rounds\nbaseline: one FNV-1a pass over the %zu-byte JSON text of graph %s\n\n",
           ROUNDS, chunk_s, base.len, BASELINE_GRAPH);
    printf("%-34s %-4s %8s %12s %-13s %12s %10s %9s  %s\n", "figure", "cfg", "calls", "median",
           "unit", "per_s", "x_base", "base_ns", "note");
    bench_models();
    bench_sweep();
    bench_solve();
    return 0;
}
