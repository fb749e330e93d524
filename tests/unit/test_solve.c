/* SPDX-License-Identifier: MIT */
/*
 * test_solve.c: the solver is exact (branch and bound returns the placement
 * exhaustive enumeration returns, on every built-in graph and on seeded
 * random graphs, with HBM and host RAM binding, with one stage and with
 * pipeline stages), its answers hold when re-analyzed, a larger budget is
 * never slower, and it beats `full` where MaxText's `minimal` does not fit.
 * Also remat_resolve's cache of parsed built-ins, which the solver's callers
 * lean on: each resolve gets its own copy, equal to a fresh parse, from any
 * thread, and errors are not cached.
 */
#include "remat/input/resolve.h"
#include "remat/input/graph_file.h"
#include "fixtures.h"
#include "input/builtin_graphs.h"

#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <threads.h>

#include "remat/data/builtin.h"
#include "remat/solve/solve.h"

static fx_run_t *setup_run(const char *graph_text, const char *const *args) {
    return fx_analyze_ok(graph_text, args);
}

/* Solves twice (bound and exhaustive) and checks that they agree on the
   point and on the placement; returns the bound's solution in @p out. */
static void solve_both(fx_run_t *f, remat_solution_t *out) {
    remat_solution_t ex;
    remat_solution_init(&ex);
    remat_solution_init(out);
    remat_error_t err;
    remat_error_init(&err);
    assert_int_equal(remat_solve(f->graph, &f->cfg, &f->hw, 0, out, &err), REMAT_OK);
    assert_int_equal(remat_solve(f->graph, &f->cfg, &f->hw, REMAT_SOLVE_EXHAUSTIVE, &ex, &err),
                     REMAT_OK);
    assert_int_equal(out->found, ex.found);
    if (out->found) {
        if (out->best.step_seconds != ex.best.step_seconds ||
            out->best.peak_bytes != ex.best.peak_bytes) {
            fail_msg("bound %.9f s %llu B, exhaustive %.9f s %llu B", out->best.step_seconds,
                     (unsigned long long)out->best.peak_bytes, ex.best.step_seconds,
                     (unsigned long long)ex.best.peak_bytes);
        }
        assert_true(out->evaluated <= ex.evaluated);
        assert_int_equal(out->nnames, ex.nnames);
        for (size_t i = 0; i < out->nnames; i++) {
            assert_string_equal(out->choices[out->best.first + i].name,
                                ex.choices[ex.best.first + i].name);
            assert_int_equal(out->choices[out->best.first + i].place,
                             ex.choices[ex.best.first + i].place);
        }
    }
    remat_solution_release(&ex);
}

/* Re-analyzes the solution's placement: it fits, and gives the same point. */
static void check_replay(fx_run_t *f, const remat_solution_t *s) {
    remat_policy_t *p = remat_solve_policy(s->choices + s->best.first, s->nnames, "solved");
    remat_result_t r;
    remat_result_init(&r);
    remat_error_t err;
    remat_error_init(&err);
    assert_int_equal(remat_analyze(f->graph, &f->cfg, p, &f->hw, &r, &err), REMAT_OK);
    assert_true(r.fits_margin);
    assert_true(r.host_fits);
    assert_int_equal(r.peak_bytes, s->best.peak_bytes);
    assert_true(r.step_seconds == s->best.step_seconds);
    remat_result_release(&r);
    remat_policy_free(p);
}

/* Peak of a preset under the run's config. */
static uint64_t preset_peak(fx_run_t *f, const char *name, double *step) {
    remat_policy_t *p = NULL;
    remat_error_t err;
    remat_error_init(&err);
    assert_int_equal(remat_policy_builtin(name, &p, &err), REMAT_OK);
    remat_result_t r;
    remat_result_init(&r);
    assert_int_equal(remat_analyze(f->graph, &f->cfg, p, &f->hw, &r, &err), REMAT_OK);
    uint64_t peak = r.peak_bytes;
    if (step) {
        *step = r.step_seconds;
    }
    remat_result_release(&r);
    remat_policy_free(p);
    return peak;
}

/* Host bytes per host when every tensor is offloaded (more than any
   searched placement offloads): a scale for host RAM limits. */
static uint64_t all_offload_host_bytes(fx_run_t *f) {
    remat_policy_t *p = remat_solve_policy(NULL, 0, "offloaded");
    p->fallback = REMAT_PLACE_OFFLOAD;
    remat_policy_set(p, "decoder_layer_input", REMAT_PLACE_OFFLOAD);
    remat_result_t r;
    remat_result_init(&r);
    remat_error_t err;
    remat_error_init(&err);
    assert_int_equal(remat_analyze(f->graph, &f->cfg, p, &f->hw, &r, &err), REMAT_OK);
    uint64_t bytes = r.host_bytes_per_host;
    assert_true(bytes > 0);
    remat_result_release(&r);
    remat_policy_free(p);
    return bytes;
}

/* Every built-in graph (graphs/), budgets from below full's peak to above
   minimal_with_context's, each solved both ways; and a larger budget is
   never slower. */
static void test_exact_on_builtin_graphs(void **state) {
    (void)state;
    static const char *const graphs[][5] = {
        {"model_name=llama3-8b", "per_device_batch_size=2", "attention=flash", NULL,
         "graph 'llama.flash'"},
        {"model_name=llama3-8b", "per_device_batch_size=2", "attention=dot_product", NULL,
         "graph 'llama.dot_product'"},
        {"model_name=gpt3-175b", "per_device_batch_size=1", "attention=flash", NULL,
         "graph 'gpt3.flash'"},
        {"model_name=gpt3-175b", "per_device_batch_size=1", "attention=dot_product", NULL,
         "graph 'gpt3.dot_product'"},
        {"model_name=gpt3-175b", "per_device_batch_size=1", "attention=dot_product",
         "dropout_rate=0.1", "graph 'gpt3.dot_product.dropout'"}};
    for (size_t gi = 0; gi < sizeof graphs / sizeof graphs[0]; gi++) {
        const char *args[] = {graphs[gi][0], "base_num_decoder_layers=4", graphs[gi][1],
                              graphs[gi][2], "hbm_budget=1", "safety_margin=0",
                              graphs[gi][3] ? graphs[gi][3] : "enable_dropout=false",
                              graphs[gi][3] ? "enable_dropout=true" : NULL, NULL};
        fx_run_t *f = setup_run(NULL, args);
        assert_non_null(strstr(f->graph->source, graphs[gi][4]));
        f->cfg.safety_margin = 0;
        uint64_t lo = preset_peak(f, "full", NULL);
        uint64_t hi = preset_peak(f, "minimal_with_context", NULL);
        double last = 1e300;
        for (int k = 0; k <= 5; k++) {
            f->cfg.hbm_budget = lo - lo / 50 + (hi - lo + lo / 25) / 5 * (uint64_t)k;
            remat_solution_t s;
            solve_both(f, &s);
            if (k == 0) {
                assert_false(s.found); /* below full's peak nothing fits here */
            }
            if (s.found) {
                check_replay(f, &s);
                assert_true(s.best.step_seconds <= last); /* monotone in the budget */
                last = s.best.step_seconds;
            }
            remat_solution_release(&s);
        }
        fx_free(f);
    }
}

/* Seeded random layers: a chain of silu / mul / add / weight einsums over
   [b,e] tensors, names on some of them, the input tagged
   decoder_layer_input as MaxText's layers tag theirs (what lets a policy
   offload it). */
static char *random_graph(unsigned seed) {
    srand(seed);
    size_t cap = 16384, len = 0;
    char *t = malloc(cap);
    assert_non_null(t);
#define PUT(...) (len += (size_t)snprintf(t + len, cap - len, __VA_ARGS__))
    PUT("{\"format\":\"remat-graph/1\",\"name\":\"rand\",\"dims\":{"
        "\"b\":{\"from\":\"per_device_batch_size\"},\"e\":{\"from\":\"base_emb_dim\"}},"
        "\"layer\":{\"inputs\":[\"x\"],\"outputs\":[\"y\"],\"tensors\":{"
        "\"x\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\","
        "\"checkpoint\":\"decoder_layer_input\"},"
        "\"w\":{\"shape\":[\"e\",\"e\"],\"dtype\":\"weight\",\"param\":true}");
    const int n = 6 + rand() % 5;
    for (int i = 0; i < n; i++) {
        PUT(",\"t%d\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"", i);
        if (rand() % 3) {
            PUT(",\"checkpoint\":\"n%d\"", rand() % 5);
        }
        PUT("}");
    }
    PUT(",\"y\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"}},\"ops\":[");
    for (int i = 0; i < n; i++) {
        char a[8], b[8];
        int ia = rand() % (i + 1) - 1, ib = rand() % (i + 1) - 1;
        snprintf(a, sizeof a, ia < 0 ? "x" : "t%d", ia);
        snprintf(b, sizeof b, ib < 0 ? "x" : "t%d", ib);
        switch (rand() % 4) {
            case 0:
                PUT("{\"name\":\"o%d\",\"op\":\"silu\",\"in\":[\"%s\"],\"out\":[\"t%d\"]},", i, a, i);
                break;
            case 1:
                if (strcmp(a, b) == 0) {
                    PUT("{\"name\":\"o%d\",\"op\":\"scale\",\"in\":[\"%s\"],\"out\":[\"t%d\"]},", i,
                        a, i);
                } else {
                    PUT("{\"name\":\"o%d\",\"op\":\"mul\",\"in\":[\"%s\",\"%s\"],\"out\":[\"t%d\"]},",
                        i, a, b, i);
                }
                break;
            case 2:
                PUT("{\"name\":\"o%d\",\"op\":\"einsum\",\"spec\":\"be,ef->bf\",\"in\":[\"%s\",\"w\"],"
                    "\"out\":[\"t%d\"]},",
                    i, a, i);
                break;
            default:
                if (strcmp(a, b) == 0) {
                    /* one operand twice: a unary op instead of add(a, a) */
                    PUT("{\"name\":\"o%d\",\"op\":\"silu\",\"in\":[\"%s\"],\"out\":[\"t%d\"]},", i, a,
                        i);
                } else {
                    PUT("{\"name\":\"o%d\",\"op\":\"add\",\"in\":[\"%s\",\"%s\"],\"out\":[\"t%d\"]},",
                        i, a, b, i);
                }
                break;
        }
    }
    PUT("{\"name\":\"out\",\"op\":\"add\",\"in\":[\"x\",\"t%d\"],\"out\":[\"y\"]}]}}", n - 1);
#undef PUT
    return t;
}

static void test_exact_on_random_graphs(void **state) {
    (void)state;
    for (unsigned seed = 1; seed <= 12; seed++) {
        char *text = random_graph(seed);
        const char *args[] = {"model_name=default", "per_device_batch_size=64", "base_emb_dim=256",
                              "base_num_decoder_layers=3", "safety_margin=0", "host_link_bw=1e9",
                              NULL};
        fx_run_t *f = fx_analyze(text, args);
        if (f->st) {
            char line[768];
            remat_error_format(&f->err, line, sizeof line);
            fail_msg("seed %u: %s\n%s", seed, line, text);
        }
        uint64_t lo = preset_peak(f, "full", NULL), hi = preset_peak(f, "selective", NULL);
        for (int k = 0; k <= 4; k++) {
            f->cfg.hbm_budget = lo + (hi > lo ? (hi - lo) / 4 * (uint64_t)k : 0);
            remat_solution_t s;
            solve_both(f, &s);
            assert_true(s.found); /* full's peak always fits */
            check_replay(f, &s);
            remat_solution_release(&s);
        }
        /* host RAM for a third of the most offloading: full still fits */
        const uint64_t ram = f->hw.host_ram_bytes;
        f->hw.host_ram_bytes = all_offload_host_bytes(f) / 3;
        for (int k = 0; k <= 4; k += 2) {
            f->cfg.hbm_budget = lo + (hi > lo ? (hi - lo) / 4 * (uint64_t)k : 0);
            remat_solution_t s;
            solve_both(f, &s);
            assert_true(s.found);
            check_replay(f, &s);
            remat_solution_release(&s);
        }
        f->hw.host_ram_bytes = ram;
        fx_free(f);
        free(text);
    }
}

/* Host RAM that holds a sixteenth and an eighth of the most offloading
   (there, offloading some names alone breaks the host's RAM and the search
   rules offload out for them), with one stage and with two pipeline
   stages, where the host counts the worst stage: the search still returns
   enumeration's placement. */
static void test_exact_when_host_ram_binds(void **state) {
    (void)state;
    static const char *const meshes[][2] = {{"num_devices=1", NULL},
                                            {"ici_pipeline_parallelism=2", "num_devices=2"}};
    for (size_t m = 0; m < 2; m++) {
        const char *args[] = {"model_name=llama3-8b", "base_num_decoder_layers=4",
                              "per_device_batch_size=2", "safety_margin=0", meshes[m][0],
                              meshes[m][1], NULL};
        fx_run_t *f = setup_run(NULL, args);
        const uint64_t most = all_offload_host_bytes(f);
        uint64_t lo = preset_peak(f, "full", NULL), hi = preset_peak(f, "minimal_with_context", NULL);
        for (int k = 1; k <= 2; k++) {
            f->hw.host_ram_bytes = most / 16 * (uint64_t)k;
            f->cfg.hbm_budget = lo + (hi - lo) / 3 * (uint64_t)k;
            remat_solution_t s;
            solve_both(f, &s);
            if (s.found) {
                check_replay(f, &s);
            }
            remat_solution_release(&s);
        }
        fx_free(f);
    }
}

/* Views of one buffer under different names, one of them kept only to
   re-run an op: saving more can turn the buffer from kept to offloaded, so
   the bound does not hold; the solver enumerates such graphs, and its answer
   is enumeration's. x -> p = x @ w; m, k views of p (mm, kk); s = 2k (ss);
   u = silu(s) (uu); v = m * u; y = x + v. */
static void test_shared_buffer_views(void **state) {
    (void)state;
    static const char *const graph =
        "{\"format\":\"remat-graph/1\",\"name\":\"views\",\"dims\":{"
        "\"b\":{\"from\":\"per_device_batch_size\"},\"e\":{\"from\":\"base_emb_dim\"}},"
        "\"layer\":{\"inputs\":[\"x\"],\"outputs\":[\"y\"],\"tensors\":{"
        "\"x\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"},"
        "\"w\":{\"shape\":[\"e\",\"e\"],\"dtype\":\"weight\",\"param\":true},"
        "\"p\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"},"
        "\"m\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\",\"checkpoint\":\"mm\"},"
        "\"k\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\",\"checkpoint\":\"kk\"},"
        "\"s\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\",\"checkpoint\":\"ss\"},"
        "\"u\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\",\"checkpoint\":\"uu\"},"
        "\"v\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"},"
        "\"y\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"}},\"ops\":["
        "{\"name\":\"mm\",\"op\":\"einsum\",\"spec\":\"be,ef->bf\",\"in\":[\"x\",\"w\"],"
        "\"out\":[\"p\"]},"
        "{\"name\":\"vm\",\"op\":\"reshape\",\"in\":[\"p\"],\"out\":[\"m\"]},"
        "{\"name\":\"vk\",\"op\":\"reshape\",\"in\":[\"p\"],\"out\":[\"k\"]},"
        "{\"name\":\"sc\",\"op\":\"scale\",\"value\":2,\"in\":[\"k\"],\"out\":[\"s\"]},"
        "{\"name\":\"si\",\"op\":\"silu\",\"in\":[\"s\"],\"out\":[\"u\"]},"
        "{\"name\":\"mu\",\"op\":\"mul\",\"in\":[\"m\",\"u\"],\"out\":[\"v\"]},"
        "{\"name\":\"res\",\"op\":\"add\",\"in\":[\"x\",\"v\"],\"out\":[\"y\"]}]}}";
    const char *args[] = {"model_name=default", "per_device_batch_size=64", "base_emb_dim=256",
                          "base_num_decoder_layers=3", "host_link_bw=1e6", NULL};
    fx_run_t *f = setup_run(graph, args);
    remat_solution_t s;
    solve_both(f, &s);
    assert_true(s.enumerated);
    assert_true(s.found);
    check_replay(f, &s);
    remat_solution_release(&s);
    fx_free(f);
}

/* llama3-70b on tpu7x-64 (32 chips, 64 devices) at per_device_batch_size
   6: minimal does not fit XLA's per-device limit less the margin, full
   does; the solution fits and is faster than full. */
static void test_beats_full_where_minimal_fails(void **state) {
    (void)state;
    const char *args[] = {"model_name=llama3-70b", "topology=tpu7x-64", "per_device_batch_size=6",
                          NULL};
    fx_run_t *f = setup_run(NULL, args);
    double full_step = 0, minimal_step = 0;
    /* the budget is the device's hbm_limit_bytes, 5% kept free */
    assert_int_equal(f->r.budget_bytes, f->hw.hbm_limit_bytes);
    uint64_t usable = (uint64_t)((double)f->hw.hbm_limit_bytes * 0.95);
    assert_int_equal(f->r.usable_bytes, usable);
    assert_true(preset_peak(f, "minimal", &minimal_step) > usable);
    assert_true(preset_peak(f, "full", &full_step) <= usable);
    remat_solution_t s;
    remat_solution_init(&s);
    remat_error_t err;
    remat_error_init(&err);
    assert_int_equal(remat_solve(f->graph, &f->cfg, &f->hw, 0, &s, &err), REMAT_OK);
    assert_true(s.found);
    check_replay(f, &s);
    assert_true(s.best.step_seconds < full_step);
    /* and it does not need the whole space (the bound prunes only a
       strictly slower subtree: placements that tie in step time are all
       explored) */
    assert_true(s.evaluated < s.space);
    /* explanations: every alternative is either over budget or no faster */
    remat_explain_row_t rows[16];
    assert_true(s.nnames <= 16);
    assert_int_equal(remat_solve_explain(f->graph, &f->cfg, &f->hw, &s, rows, &err), REMAT_OK);
    for (size_t i = 0; i < s.nnames; i++) {
        for (size_t k = 0; k < rows[i].nalt; k++) {
            const remat_alternative_t *a = &rows[i].alt[k];
            assert_true(!a->fits || !a->host_fits || a->step_seconds >= s.best.step_seconds);
        }
    }
    remat_solution_release(&s);
    fx_free(f);
}

/* The frontier: non-dominated, ascending peak, descending time, and the
   optimum is the fastest frontier point that fits. */
static void test_frontier(void **state) {
    (void)state;
    const char *args[] = {"model_name=llama3-8b", "per_device_batch_size=4",
                          "base_num_decoder_layers=4", NULL};
    fx_run_t *f = setup_run(NULL, args);
    remat_solution_t s;
    remat_solution_init(&s);
    remat_error_t err;
    remat_error_init(&err);
    assert_int_equal(remat_solve(f->graph, &f->cfg, &f->hw, REMAT_SOLVE_FRONTIER, &s, &err),
                     REMAT_OK);
    assert_true(s.npoints >= 2);
    const remat_point_t *fastest_fit = NULL;
    for (size_t i = 0; i < s.npoints; i++) {
        if (i) {
            assert_true(s.points[i].peak_bytes > s.points[i - 1].peak_bytes);
            assert_true(s.points[i].step_seconds < s.points[i - 1].step_seconds);
        }
        if (s.points[i].feasible) {
            fastest_fit = &s.points[i];
        }
    }
    assert_non_null(fastest_fit);
    assert_true(fastest_fit->step_seconds == s.best.step_seconds);
    remat_solution_release(&s);
    fx_free(f);
}

/* The frontier both ways, Pareto branch and bound and enumeration
   (REMAT_SOLVE_EXHAUSTIVE with REMAT_SOLVE_FRONTIER): the same optimum and
   the same points, each with the same pair, verdict and placement (the
   first in enumeration order with that pair). The Pareto search's
   analyses in @p pareto_evals, enumeration's in @p enum_evals. */
static void frontier_both(fx_run_t *f, uint64_t *pareto_evals, uint64_t *enum_evals) {
    remat_solution_t pa, ex;
    remat_solution_init(&pa);
    remat_solution_init(&ex);
    remat_error_t err;
    remat_error_init(&err);
    assert_int_equal(remat_solve(f->graph, &f->cfg, &f->hw, REMAT_SOLVE_FRONTIER, &pa, &err),
                     REMAT_OK);
    assert_int_equal(remat_solve(f->graph, &f->cfg, &f->hw,
                                 REMAT_SOLVE_FRONTIER | REMAT_SOLVE_EXHAUSTIVE, &ex, &err),
                     REMAT_OK);
    assert_true(ex.enumerated);
    assert_false(ex.pareto);
    assert_true(pa.pareto != pa.enumerated); /* the Pareto search, or it gave up */
    assert_int_equal(pa.found, ex.found);
    assert_int_equal(pa.nnames, ex.nnames);
    if (pa.found) {
        assert_true(pa.best.step_seconds == ex.best.step_seconds);
        assert_int_equal(pa.best.peak_bytes, ex.best.peak_bytes);
        for (size_t i = 0; i < pa.nnames; i++) {
            assert_int_equal(pa.choices[pa.best.first + i].place,
                             ex.choices[ex.best.first + i].place);
        }
    }
    assert_true(ex.npoints >= 1);
    assert_int_equal(pa.npoints, ex.npoints);
    for (size_t k = 0; k < pa.npoints; k++) {
        const remat_point_t *p = &pa.points[k], *q = &ex.points[k];
        if (p->peak_bytes != q->peak_bytes || p->step_seconds != q->step_seconds) {
            fail_msg("point %zu: pareto %llu B %.9f s, enumeration %llu B %.9f s", k,
                     (unsigned long long)p->peak_bytes, p->step_seconds,
                     (unsigned long long)q->peak_bytes, q->step_seconds);
        }
        assert_int_equal(p->feasible, q->feasible);
        for (size_t i = 0; i < pa.nnames; i++) {
            assert_string_equal(pa.choices[p->first + i].name, ex.choices[q->first + i].name);
            assert_int_equal(pa.choices[p->first + i].place, ex.choices[q->first + i].place);
        }
    }
    assert_true(pa.evaluated <= ex.evaluated);
    *pareto_evals = pa.evaluated;
    *enum_evals = ex.evaluated;
    remat_solution_release(&pa);
    remat_solution_release(&ex);
}

/* The Pareto search's frontier is enumeration's: llama3-8b at budgets from
   nothing fitting to everything fitting, with host RAM that binds, with two
   pipeline stages, llama3-70b (the docs' example), gpt3's graph and seeded
   random layers; and on the 405B run at 8192 tokens it needs fewer
   analyses than enumeration. */
static void test_frontier_pareto_exact(void **state) {
    (void)state;
    uint64_t pe, ee;
    static const char *const runs[][4] = {
        {"model_name=llama3-8b", "per_device_batch_size=4", "num_devices=1", NULL},
        {"model_name=llama3-8b", "per_device_batch_size=2", "ici_pipeline_parallelism=2",
         "num_devices=2"},
        {"model_name=gpt3-175b", "per_device_batch_size=1", "attention=flash", NULL}};
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        const char *args[] = {runs[r][0], "base_num_decoder_layers=4", "safety_margin=0",
                              runs[r][1], runs[r][2], runs[r][3], NULL};
        fx_run_t *f = setup_run(NULL, args);
        uint64_t lo = preset_peak(f, "full", NULL), hi = preset_peak(f, "minimal_with_context", NULL);
        f->cfg.hbm_budget = lo / 2; /* nothing fits */
        frontier_both(f, &pe, &ee);
        f->cfg.hbm_budget = lo + (hi - lo) / 2;
        frontier_both(f, &pe, &ee);
        f->hw.host_ram_bytes = all_offload_host_bytes(f) / 8; /* host RAM binds */
        frontier_both(f, &pe, &ee);
        fx_free(f);
    }
    const char *ex70[] = {"model_name=llama3-70b", "topology=tpu7x-128", "per_device_batch_size=6",
                          NULL};
    fx_run_t *f = setup_run(NULL, ex70);
    frontier_both(f, &pe, &ee);
    fx_free(f);
    for (unsigned seed = 1; seed <= 4; seed++) {
        char *text = random_graph(seed);
        const char *args[] = {"model_name=default", "per_device_batch_size=64", "base_emb_dim=256",
                              "base_num_decoder_layers=3", "host_link_bw=1e9", NULL};
        f = fx_analyze_ok(text, args);
        frontier_both(f, &pe, &ee);
        fx_free(f);
        free(text);
    }
    const char *q[] = {"model_name=llama3.1-405b", "per_device_batch_size=1",
                       "max_target_length=8192", "num_devices=256", "ici_fsdp_parallelism=256",
                       NULL};
    f = setup_run(NULL, q);
    frontier_both(f, &pe, &ee);
    assert_true(pe < ee / 2);
    fx_free(f);
}

/* llama3-8b's static memory (16 bytes a param with adamw and fp32
   gradients, 128 GB) needs more than one 94.75 GiB device: on tpu7x-8 (8
   devices, fsdp 8) the largest batch that fits is found. */
static void test_largest_batch(void **state) {
    (void)state;
    const char *args[] = {"model_name=llama3-8b", "topology=tpu7x-8", "per_device_batch_size=1",
                          NULL};
    fx_run_t *f = setup_run(NULL, args);
    remat_error_t err;
    remat_error_init(&err);
    double b = 0;
    assert_int_equal(remat_largest_batch(f->graph, &f->cfg, f->policy, &f->hw, &b, &err), REMAT_OK);
    assert_true(b >= 1);
    /* b fits, b + 1 does not */
    remat_result_t r;
    remat_result_init(&r);
    f->cfg.per_device_batch_size = b;
    assert_int_equal(remat_analyze(f->graph, &f->cfg, f->policy, &f->hw, &r, &err), REMAT_OK);
    assert_true(r.fits_margin);
    f->cfg.per_device_batch_size = b + 1;
    assert_int_equal(remat_analyze(f->graph, &f->cfg, f->policy, &f->hw, &r, &err), REMAT_OK);
    assert_false(r.fits_margin);
    remat_result_release(&r);
    fx_free(f);
}

/* ---- remat_resolve's cache of parsed built-ins (resolve.c) ------------- */


/* Every built-in graph: each resolve returns its own copy, equal to a fresh
   parse of the JSON, and a caller's change to what it got (a tensor's name,
   a policy's rule) is not seen by the next resolve. */
static void test_resolve_copies_parsed_builtins(void **state) {
    (void)state;
    /* the gpt3 graph's position table needs its rows (the gpt3 ymls') */
    static const char *const graphs[][4] = {
        {"graph=llama", "attention=flash", "llama.flash", NULL},
        {"graph=gpt3", "attention=dot_product", "gpt3.dot_product", "trainable_position_size=2048"}};
    for (size_t k = 0; k < 2; k++) {
        const char *args[] = {graphs[k][0], graphs[k][1], "remat_policy=minimal",
                              "hardware=v6e", graphs[k][3], NULL};
        fx_run_t *a = setup_run(NULL, args), *b = setup_run(NULL, args);
        remat_graph_t *fresh = NULL;
        remat_error_t err;
        remat_error_init(&err);
        char source[128];
        snprintf(source, sizeof source, REMAT_I_BUILTIN_GRAPH_SOURCE, graphs[k][2]);
        assert_int_equal(remat_graph_load_string(remat_builtin_find(REMAT_BUILTIN_GRAPH,
                                                                    graphs[k][2]),
                                                 source, &fresh, &err),
                         REMAT_OK);
        fx_graphs_equal(a->graph, b->graph);
        fx_graphs_equal(a->graph, fresh);
        assert_string_equal(a->hw.name, b->hw.name); /* v6e is tpu-v6e's family */
        assert_memory_equal(&a->hw, &b->hw, sizeof a->hw);
        assert_true(a->policy != b->policy && a->policy->rules != b->policy->rules);
        /* change the first copy; a new resolve is as before */
        a->graph->kinds[0].block.tensors[0].name[0] = '#';
        remat_policy_set(a->policy, "mlpwi_0", REMAT_PLACE_OFFLOAD);
        fx_run_t *c = setup_run(NULL, args);
        fx_graphs_equal(c->graph, fresh);
        assert_int_equal(c->policy->nrules, b->policy->nrules);
        assert_memory_equal(c->policy->rules, b->policy->rules,
                            b->policy->nrules * sizeof *b->policy->rules);
        remat_graph_free(fresh);
        fx_free(a);
        fx_free(b);
        fx_free(c);
    }
}

/* An error is not cached: an unknown preset fails the same way twice. */
static void test_resolve_errors_are_not_cached(void **state) {
    (void)state;
    const char *args[] = {"model_name=llama3-8b", "remat_policy=no_such_policy", NULL};
    char first[768] = "", line[768] = "";
    for (int k = 0; k < 2; k++) {
        fx_run_t *f = fx_analyze(NULL, args);
        assert_int_equal(f->st, REMAT_E_POLICY);
        assert_null(f->graph);
        assert_null(f->policy);
        remat_error_format(&f->err, k ? line : first, sizeof line);
        fx_free(f);
    }
    assert_string_equal(first, line);
}

/* Threads resolving at once (the slots are atomic; a thread that loses the
   race to fill one frees its own parse): every thread gets equal copies. */
typedef struct resolver {
    remat_config_t cfg;
    remat_graph_t *g[8];
    remat_status_t st;
    atomic_int *ready; /* threads started: each waits for all, then races */
} resolver_t;

static int resolve_many(void *arg) {
    resolver_t *r = arg;
    atomic_fetch_add(r->ready, 1);
    while (atomic_load(r->ready) < 4) {
        thrd_yield();
    }
    for (size_t i = 0; i < 8 && r->st == REMAT_OK; i++) {
        remat_policy_t *p = NULL;
        remat_hw_t hw;
        remat_error_t err;
        remat_error_init(&err);
        r->st = remat_resolve(&r->cfg, &r->g[i], &p, &hw, &err);
        remat_policy_free(p);
    }
    return 0;
}

static void test_resolve_from_threads(void **state) {
    (void)state;
    static const char *const args[] = {"graph=gpt3", "attention=dot_product",
                                       "dropout_rate=0.1", "enable_dropout=true", NULL};
    resolver_t r[4];
    thrd_t t[4];
    atomic_int ready;
    atomic_init(&ready, 0);
    remat_error_t err;
    remat_error_init(&err);
    for (size_t k = 0; k < 4; k++) {
        memset(&r[k], 0, sizeof r[k]);
        r[k].ready = &ready;
        assert_int_equal(remat_config_build(NULL, 4, (char *const *)args, &r[k].cfg, &err),
                         REMAT_OK);
        assert_int_equal(thrd_create(&t[k], resolve_many, &r[k]), thrd_success);
    }
    for (size_t k = 0; k < 4; k++) {
        assert_int_equal(thrd_join(t[k], NULL), thrd_success);
        assert_int_equal(r[k].st, REMAT_OK);
    }
    for (size_t k = 0; k < 4; k++) {
        for (size_t i = 0; i < 8; i++) {
            fx_graphs_equal(r[0].g[0], r[k].g[i == 0 && k == 0 ? 1 : i]);
        }
    }
    for (size_t k = 0; k < 4; k++) {
        for (size_t i = 0; i < 8; i++) {
            remat_graph_free(r[k].g[i]);
        }
    }
}


/* The run of @p args analyzed, and what would make it pass found into
   @p fx (initialized; released first by remat_fixes_find). */
static fx_run_t *find_fixes(const char *const *args, remat_fixes_t *fx) {
    fx_run_t *f = fx_analyze_ok(NULL, args);
    fx_find_fixes(f, fx);
    return f;
}

/* What would make a run pass: each fix found passes when applied alone;
   the batch rows run largest first with the run's own policy among them;
   a run nothing can fix has none. */
static void test_fixes(void **state) {
    (void)state;
    const char *args[] = {"model_name=llama3.1-405b", "topology=tpu7x-256", NULL};
    remat_fixes_t fx;
    remat_fixes_init(&fx);
    fx_run_t *f = find_fixes(args, &fx);
    assert_false(remat_result_passes(&f->r));
    remat_error_t err;
    remat_error_init(&err);
    remat_result_t r;
    remat_result_init(&r);
    /* the placement */
    assert_true(fx.placement_found);
    remat_policy_t *p = remat_solve_policy(fx.choices, fx.nchoices, "fix");
    assert_int_equal(remat_analyze(f->graph, &f->cfg, p, &f->hw, &r, &err), REMAT_OK);
    assert_true(remat_result_passes(&r));
    assert_int_equal(r.peak_bytes, fx.placement_peak_bytes);
    remat_policy_free(p);
    /* the batches: ordered, the run's own policy there, the first passes */
    size_t own = 0;
    for (size_t i = 0; i < fx.nbatches; i++) {
        own += fx.batches[i].own;
        assert_true(i == 0 || fx.batches[i - 1].batch >= fx.batches[i].batch);
    }
    assert_int_equal(own, 1);
    assert_true(fx.batches[0].batch > 0 && fx.batches[0].batch < f->cfg.per_device_batch_size);
    /* no slice: the activations at batch 12 outgrow a device however many */
    assert_false(fx.slice_found);
    assert_false(fx.scan_tried); /* scanned already */
    remat_fixes_release(&fx);
    fx_free(f);
    /* a slice fixes a model too large for its chips */
    const char *small[] = {"model_name=llama3-70b", "per_device_batch_size=4", NULL};
    f = find_fixes(small, &fx);
    assert_true(fx.slice_found);
    assert_string_equal(fx.topology, "tpu7x-16");
    remat_config_t c = f->cfg;
    c.num_devices = fx.slice_devices;
    assert_int_equal(remat_analyze(f->graph, &c, f->policy, &f->hw, &r, &err), REMAT_OK);
    assert_true(remat_result_passes(&r));
    c.num_devices = fx.slice_devices / 2; /* and the slice half its size does not */
    assert_int_equal(remat_analyze(f->graph, &c, f->policy, &f->hw, &r, &err), REMAT_OK);
    assert_false(remat_result_passes(&r));
    remat_fixes_release(&fx);
    fx_free(f);
    /* a budget of one byte: nothing */
    const char *none[] = {"model_name=llama3-8b", "num_devices=8", "hbm_budget=1", NULL};
    f = find_fixes(none, &fx);
    assert_false(fx.placement_found);
    assert_false(fx.slice_found);
    for (size_t i = 0; i < fx.nbatches; i++) {
        assert_true(fx.batches[i].batch == 0);
    }
    remat_fixes_release(&fx);
    fx_free(f);
    /* DeepSeek's 17 names: the fix lines' quick search gives up within its
       bound (20000 layer plans, 1/50 of remat solve's: a Release check took
       2.5 s with the full bound, 0.16 s with this one) and says so, naming
       the full search; the batch lines still come */
    const char *moe[] = {"model_name=deepseek3-671b", "topology=v5p-512",
                         "per_device_batch_size=3", "max_target_length=8192", NULL};
    f = find_fixes(moe, &fx);
    assert_false(remat_result_passes(&f->r));
    assert_false(fx.placement_found);
    assert_non_null(strstr(fx.placement_note, "20000 layer plans; remat solve searches"));
    assert_true(fx.nbatches > 0);
    remat_fixes_release(&fx);
    remat_result_release(&r);
    fx_free(f);
}

/* Unrolled layers on a TPU over their bound (the unrolled bound,
   test_report): scanning them is a fix, with the scanned run's own peak
   and step. */
static void test_fix_scan(void **state) {
    (void)state;
    const char *unrolled[] = {"model_name=llama2-7b", "topology=v4-16", "scan_layers=false",
                              "per_device_batch_size=8", NULL};
    remat_fixes_t fx;
    remat_fixes_init(&fx);
    fx_run_t *f = find_fixes(unrolled, &fx);
    assert_false(remat_result_passes(&f->r));
    remat_error_t err;
    remat_error_init(&err);
    assert_true(fx.scan_tried && fx.scan_found);
    remat_config_t scanned = f->cfg;
    scanned.scan_layers = true;
    remat_result_t r;
    remat_result_init(&r);
    assert_int_equal(remat_analyze(f->graph, &scanned, f->policy, &f->hw, &r, &err), REMAT_OK);
    assert_true(remat_result_passes(&r));
    assert_int_equal(r.peak_bytes, fx.scan_peak_bytes);
    assert_true(r.step_seconds == fx.scan_step_seconds);
    remat_result_release(&r);
    remat_fixes_release(&fx);
    fx_free(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        /* first: the cache is empty, so the threads race to fill it */
        cmocka_unit_test(test_resolve_from_threads),
        cmocka_unit_test(test_exact_on_builtin_graphs),
        cmocka_unit_test(test_exact_on_random_graphs),
        cmocka_unit_test(test_exact_when_host_ram_binds),
        cmocka_unit_test(test_shared_buffer_views),
        cmocka_unit_test(test_beats_full_where_minimal_fails),
        cmocka_unit_test(test_frontier),
        cmocka_unit_test(test_frontier_pareto_exact),
        cmocka_unit_test(test_largest_batch),
        cmocka_unit_test(test_resolve_copies_parsed_builtins),
        cmocka_unit_test(test_resolve_errors_are_not_cached),
        cmocka_unit_test(test_fixes),
        cmocka_unit_test(test_fix_scan),
    };
    return cmocka_run_group_tests_name("solve", tests, NULL, NULL);
}
