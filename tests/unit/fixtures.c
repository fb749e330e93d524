/* SPDX-License-Identifier: MIT */
/* fixtures.c: see fixtures.h. */
#include "fixtures.h"

#include <stdlib.h>
#include <string.h>

/* x [b,e] -> fc1 (x @ w1) -> h [b,m] "mlpwi" -> silu -> a -> fc2 (a @ w2)
   -> o [b,e] "mlpwo" -> y = x + o. No head. */
const char *const fx_mini_graph =
    "{\"format\":\"remat-graph/1\",\"name\":\"mini\","
    "\"dims\":{\"b\":{\"from\":\"per_device_batch_size\"},\"e\":{\"from\":\"base_emb_dim\"},"
    "\"m\":{\"from\":\"base_mlp_dim\"}},"
    "\"layer\":{\"inputs\":[\"x\"],\"outputs\":[\"y\"],\"tensors\":{"
    "\"x\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\",\"checkpoint\":\"decoder_layer_input\"},"
    "\"w1\":{\"shape\":[\"e\",\"m\"],\"dtype\":\"weight\",\"param\":true},"
    "\"h\":{\"shape\":[\"b\",\"m\"],\"dtype\":\"act\",\"checkpoint\":\"mlpwi\"},"
    "\"a\":{\"shape\":[\"b\",\"m\"],\"dtype\":\"act\"},"
    "\"w2\":{\"shape\":[\"m\",\"e\"],\"dtype\":\"weight\",\"param\":true},"
    "\"o\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\",\"checkpoint\":\"mlpwo\"},"
    "\"y\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"}},"
    "\"ops\":["
    "{\"name\":\"fc1\",\"op\":\"einsum\",\"spec\":\"be,em->bm\",\"in\":[\"x\",\"w1\"],\"out\":[\"h\"]},"
    "{\"name\":\"act\",\"op\":\"silu\",\"in\":[\"h\"],\"out\":[\"a\"]},"
    "{\"name\":\"fc2\",\"op\":\"einsum\",\"spec\":\"bm,me->be\",\"in\":[\"a\",\"w2\"],\"out\":[\"o\"]},"
    "{\"name\":\"res\",\"op\":\"add\",\"in\":[\"x\",\"o\"],\"out\":[\"y\"]}]}}";

fx_run_t *fx_analyze(const char *graph_text, const char *const *args) {
    fx_run_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    remat_error_init(&f->err);
    remat_result_init(&f->r);
    size_t n = 0;
    while (args && args[n]) {
        n++;
    }
    f->st = remat_config_build(NULL, n, (char *const *)args, &f->cfg, &f->err);
    if (f->st) {
        return f;
    }
    if (graph_text) {
        f->st = remat_graph_load_string(graph_text, "<test>", &f->graph, &f->err);
        if (f->st) {
            return f;
        }
        char saved[sizeof f->cfg.graph];
        memcpy(saved, f->cfg.graph, sizeof saved);
        /* Resolve policy and hardware through the normal path with a
           built-in graph, then swap in the test graph. */
        remat_graph_t *builtin = NULL;
        f->st = remat_resolve(&f->cfg, &builtin, &f->policy, &f->hw, &f->err);
        remat_graph_free(builtin);
        if (f->st) {
            return f;
        }
    } else {
        f->st = remat_resolve(&f->cfg, &f->graph, &f->policy, &f->hw, &f->err);
        if (f->st) {
            return f;
        }
    }
    f->st = remat_analyze(f->graph, &f->cfg, f->policy, &f->hw, &f->r, &f->err);
    return f;
}

fx_run_t *fx_analyze_ok(const char *graph_text, const char *const *args) {
    fx_run_t *f = fx_analyze(graph_text, args);
    if (f->st) {
        char line[768];
        remat_error_format(&f->err, line, sizeof line);
        fail_msg("%s", line);
    }
    return f;
}

void fx_free(fx_run_t *f) {
    if (!f) {
        return;
    }
    remat_result_release(&f->r);
    remat_graph_free(f->graph);
    remat_policy_free(f->policy);
    free(f);
}

size_t fx_tensor(const remat_graph_t *g, const char *name) {
    size_t i = remat_block_find_tensor(&g->layer, name);
    if (i == REMAT_NONE) {
        fail_msg("no tensor '%s'", name);
    }
    return i;
}
