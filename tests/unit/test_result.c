/* SPDX-License-Identifier: MIT */
/*
 * test_result.c: a result's memory (src/sim/result.c). An analysis into a
 * result that holds an earlier one empties it and reuses its blocks; what
 * it reports must be what an analysis into a fresh result reports, field
 * by field and row by row, whatever the earlier analysis was (more or
 * fewer profiles, layers and names, a grown chain of blocks). A failed
 * analysis leaves the result released; a hand-filled config past the layer
 * limit, or with no layer, is an error, not an allocation sized by it or a
 * walk over no layers.
 */
#include "remat/input/resolve.h"
#include "fixtures.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* llama3.1-405b (126 layers) on 256 devices: its 126 layer rows and six
   profiles' tensor rows pass the first block (32 KB), so the chain grows. */
static const char *const big[] = {"model_name=llama3.1-405b", "topology=tpu7x-256",
                                  "ici_tensor_parallelism=4", NULL};
/* A smaller model: fewer layers, other dims. */
static const char *const small[] = {"model_name=llama2-7b", "per_device_batch_size=2", NULL};

/* Six ranges that each keep another name in HBM: six layer plans, one
   more for the layers no range covers. */
static const char ranged_text[] =
    "{\"format\":\"remat-policy/1\",\"name\":\"six\",\"layers\":["
    "{\"range\":\"0-3\",\"names\":{\"query_proj\":\"device\"}},"
    "{\"range\":\"4-7\",\"names\":{\"key_proj\":\"device\"}},"
    "{\"range\":\"8-11\",\"names\":{\"value_proj\":\"device\"}},"
    "{\"range\":\"12-15\",\"names\":{\"context\":\"device\"}},"
    "{\"range\":\"16-19\",\"names\":{\"out_proj\":\"device\"}},"
    "{\"range\":\"20-23\",\"names\":{\"mlpwo\":\"offload\"}}]}";

typedef struct inputs {
    remat_config_t cfg;
    remat_graph_t *graph;
    remat_policy_t *preset; /* the config's remat_policy */
    remat_hw_t hw;
} inputs_t;

static void inputs_make(inputs_t *in, const char *const *args) {
    remat_error_t err;
    remat_error_init(&err);
    size_t n = 0;
    char *argv[8];
    for (; args[n]; n++) {
        argv[n] = (char *)args[n];
    }
    assert_int_equal(remat_config_build(NULL, (int)n, argv, &in->cfg, &err), REMAT_OK);
    assert_int_equal(remat_resolve(&in->cfg, &in->graph, &in->preset, &in->hw, &err), REMAT_OK);
}

static void inputs_free(inputs_t *in) {
    remat_graph_free(in->graph);
    remat_policy_free(in->preset);
}

static void rows_equal(const remat_result_t *a, const remat_result_t *b) {
    assert_int_equal(a->nlayers, b->nlayers);
    assert_memory_equal(a->layers, b->layers, a->nlayers * sizeof *a->layers);
    assert_int_equal(a->nstages, b->nstages);
    for (size_t k = 0; k < a->nstages; k++) {
        assert_int_equal(a->stages[k].peak_bytes, b->stages[k].peak_bytes);
        assert_int_equal(a->stages[k].floor_bytes, b->stages[k].floor_bytes);
        assert_memory_equal(a->stages[k].breakdown, b->stages[k].breakdown,
                            sizeof a->stages[k].breakdown);
    }
    assert_int_equal(a->nnames, b->nnames);
    for (size_t i = 0; i < a->nnames; i++) {
        assert_string_equal(a->names[i].name, b->names[i].name);
        assert_int_equal(a->names[i].saved_bytes, b->names[i].saved_bytes);
        assert_int_equal(a->names[i].offloaded_bytes, b->names[i].offloaded_bytes);
        assert_int_equal(a->names[i].recompute_flops, b->names[i].recompute_flops);
    }
}

static void profiles_equal(const remat_result_t *a, const remat_result_t *b) {
    assert_int_equal(a->nprofiles, b->nprofiles);
    for (size_t p = 0; p < a->nprofiles; p++) {
        const remat_profile_t *x = &a->profiles[p], *y = &b->profiles[p];
        assert_int_equal(x->first, y->first);
        assert_int_equal(x->last, y->last);
        assert_int_equal(x->nlayers, y->nlayers);
        assert_true(remat_plan_equal(&x->plan, &y->plan));
        assert_memory_equal(x->plan.needed, y->plan.needed,
                            (x->plan.ntensors + x->plan.nops) * sizeof *x->plan.needed);
        for (size_t i = 0; i < x->plan.ntensors; i++) {
            assert_int_equal(x->tensors[i].bytes, y->tensors[i].bytes);
            assert_int_equal(x->tensors[i].fate, y->tensors[i].fate);
            assert_int_equal(x->tensors[i].recompute_flops, y->tensors[i].recompute_flops);
        }
    }
}

/* What @p reused reports equals a fresh analysis of the same inputs. */
static void check_against_fresh(const inputs_t *in, const remat_policy_t *p,
                                const remat_result_t *reused) {
    remat_result_t fresh;
    remat_result_init(&fresh);
    remat_error_t err;
    remat_error_init(&err);
    assert_int_equal(remat_analyze(in->graph, &in->cfg, p, &in->hw, &fresh, &err), REMAT_OK);
    assert_int_equal(reused->peak_bytes, fresh.peak_bytes);
    assert_memory_equal(reused->breakdown, fresh.breakdown, sizeof fresh.breakdown);
    assert_true(reused->step_seconds == fresh.step_seconds);
    assert_true(reused->policy == fresh.policy && reused->graph == fresh.graph);
    rows_equal(reused, &fresh);
    profiles_equal(reused, &fresh);
    remat_result_release(&fresh);
}

/* One result through analyses of other sizes, in both orders. */
static void test_reuse_agrees(void **state) {
    (void)state;
    inputs_t a, b;
    inputs_make(&a, big);
    inputs_make(&b, small);
    remat_policy_t *six = NULL;
    remat_error_t err;
    remat_error_init(&err);
    assert_int_equal(remat_policy_load_string(ranged_text, "<six>", false, &six, &err), REMAT_OK);
    const struct {
        const inputs_t *in;
        const remat_policy_t *p;
    } seq[] = {{&b, b.preset}, {&a, six}, {&b, six}, {&a, a.preset}, {&a, six}, {&b, b.preset}};
    remat_result_t r;
    remat_result_init(&r);
    for (size_t i = 0; i < sizeof seq / sizeof seq[0]; i++) {
        assert_int_equal(remat_analyze(seq[i].in->graph, &seq[i].in->cfg, seq[i].p,
                                       &seq[i].in->hw, &r, &err),
                         REMAT_OK);
        if (seq[i].p == six) {
            assert_int_equal(r.nprofiles, 7); /* past the profiles' first growth (4) */
        }
        check_against_fresh(seq[i].in, seq[i].p, &r);
    }
    remat_result_release(&r);
    assert_null(r.mem);
    assert_null(r.layers);
    remat_policy_free(six);
    inputs_free(&a);
    inputs_free(&b);
}

/* An analysis that fails leaves the result released, its memory freed,
   whether it fails at the policy or at binding. */
static void test_failure_releases(void **state) {
    (void)state;
    inputs_t a;
    inputs_make(&a, big);
    remat_result_t r;
    remat_result_init(&r);
    remat_error_t err;
    remat_error_init(&err);
    assert_int_equal(remat_analyze(a.graph, &a.cfg, a.preset, &a.hw, &r, &err), REMAT_OK);
    assert_non_null(r.mem);
    remat_policy_t *bad = NULL;
    assert_int_equal(remat_policy_load_string("{\"format\":\"remat-policy/1\",\"name\":\"x\","
                                              "\"names\":{\"no_such_name\":\"device\"}}",
                                              "<bad>", false, &bad, &err),
                     REMAT_OK);
    assert_int_equal(remat_analyze(a.graph, &a.cfg, bad, &a.hw, &r, &err), REMAT_E_POLICY);
    assert_null(r.mem);
    assert_int_equal(r.nlayers, 0);
    assert_int_equal(remat_analyze(a.graph, &a.cfg, a.preset, &a.hw, &r, &err), REMAT_OK);
    remat_config_t odd = a.cfg;
    odd.base_num_query_heads = 7; /* 7 heads do not divide over 4 tensor shards */
    assert_int_equal(remat_analyze(a.graph, &odd, a.preset, &a.hw, &r, &err), REMAT_E_CONFIG);
    assert_null(r.mem);
    assert_int_equal(r.nprofiles, 0);
    /* A config struct filled by hand past the layer limit, which
       remat_config_build would have refused: an error, not an allocation
       sized by it. */
    remat_config_t deep = a.cfg;
    deep.base_num_decoder_layers = 1000000000000ull;
    remat_error_init(&err);
    assert_int_equal(remat_analyze(a.graph, &deep, a.preset, &a.hw, &r, &err), REMAT_E_CONFIG);
    assert_non_null(strstr(err.text, "base_num_decoder_layers=1000000000000 is above"));
    assert_null(r.mem);
    deep.base_num_decoder_layers = 0; /* and none at all */
    remat_error_init(&err);
    assert_int_equal(remat_analyze(a.graph, &deep, a.preset, &a.hw, &r, &err), REMAT_E_CONFIG);
    assert_non_null(strstr(err.text, "base_num_decoder_layers is 0"));
    assert_null(r.mem);
    remat_result_release(&r);
    remat_policy_free(bad);
    inputs_free(&a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reuse_agrees),
        cmocka_unit_test(test_failure_releases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
