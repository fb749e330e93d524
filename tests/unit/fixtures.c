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

/* x [b,e] -> gp (x @ w0) -> g [b,m] "mlpwi_0", up (x @ w1) -> u [b,m]
   "mlpwi_1"; act: s = silu(g); gate: p = s * u; down: o = p @ w2 [b,e]
   "mlpwo"; res: y = x + o. s is made by silu and read, forward and in
   backward, only by the mul: XLA fuses it. No head. */
const char *const fx_gated_graph =
    "{\"format\":\"remat-graph/1\",\"name\":\"gated\","
    "\"dims\":{\"b\":{\"from\":\"per_device_batch_size\"},\"e\":{\"from\":\"base_emb_dim\"},"
    "\"m\":{\"from\":\"base_mlp_dim\"}},"
    "\"layer\":{\"inputs\":[\"x\"],\"outputs\":[\"y\"],\"tensors\":{"
    "\"x\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\",\"checkpoint\":\"decoder_layer_input\"},"
    "\"w0\":{\"shape\":[\"e\",\"m\"],\"dtype\":\"weight\",\"param\":true},"
    "\"w1\":{\"shape\":[\"e\",\"m\"],\"dtype\":\"weight\",\"param\":true},"
    "\"g\":{\"shape\":[\"b\",\"m\"],\"dtype\":\"act\",\"checkpoint\":\"mlpwi_0\"},"
    "\"u\":{\"shape\":[\"b\",\"m\"],\"dtype\":\"act\",\"checkpoint\":\"mlpwi_1\"},"
    "\"s\":{\"shape\":[\"b\",\"m\"],\"dtype\":\"act\"},"
    "\"p\":{\"shape\":[\"b\",\"m\"],\"dtype\":\"act\"},"
    "\"w2\":{\"shape\":[\"m\",\"e\"],\"dtype\":\"weight\",\"param\":true},"
    "\"o\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\",\"checkpoint\":\"mlpwo\"},"
    "\"y\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"}},"
    "\"ops\":["
    "{\"name\":\"gp\",\"op\":\"einsum\",\"spec\":\"be,em->bm\",\"in\":[\"x\",\"w0\"],\"out\":[\"g\"]},"
    "{\"name\":\"up\",\"op\":\"einsum\",\"spec\":\"be,em->bm\",\"in\":[\"x\",\"w1\"],\"out\":[\"u\"]},"
    "{\"name\":\"act\",\"op\":\"silu\",\"in\":[\"g\"],\"out\":[\"s\"]},"
    "{\"name\":\"gate\",\"op\":\"mul\",\"in\":[\"s\",\"u\"],\"out\":[\"p\"]},"
    "{\"name\":\"down\",\"op\":\"einsum\",\"spec\":\"bm,me->be\",\"in\":[\"p\",\"w2\"],\"out\":[\"o\"]},"
    "{\"name\":\"res\",\"op\":\"add\",\"in\":[\"x\",\"o\"],\"out\":[\"y\"]}]}}";

/* Layer: fc: o = x @ w [b,e]; res: y = x + o. Head: emb: h0 = table[tokens]
   before the layers; after them lg: logits = hL @ wl [b,v] (the compute
   dtype), ce: loss, lse = cross_entropy(logits, targets). The batch is
   activation_batch, the params' embed dims shard like MaxText's (w's
   first "embed"; the head's "embed_vocab" and "vocab" by `axes`). */
const char *const fx_head_graph =
    "{\"format\":\"remat-graph/1\",\"name\":\"headed\",\"dims\":{"
    "\"b\":{\"from\":\"per_device_batch_size\",\"axis\":\"activation_batch\"},"
    "\"e\":{\"from\":\"base_emb_dim\",\"weight_axis\":\"embed\"},"
    "\"v\":{\"from\":\"vocab_size\"}},"
    "\"layer\":{\"inputs\":[\"x\"],\"outputs\":[\"y\"],\"tensors\":{"
    "\"x\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"},"
    "\"w\":{\"shape\":[\"e\",\"e\"],\"dtype\":\"weight\",\"param\":true},"
    "\"o\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"},"
    "\"y\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"}},\"ops\":["
    "{\"name\":\"fc\",\"op\":\"einsum\",\"spec\":\"be,ef->bf\",\"in\":[\"x\",\"w\"],\"out\":[\"o\"]},"
    "{\"name\":\"res\",\"op\":\"add\",\"in\":[\"x\",\"o\"],\"out\":[\"y\"]}]},"
    "\"head\":{\"inputs\":[\"tokens\",\"targets\"],\"outputs\":[\"loss\"],"
    "\"feeds_layer\":\"h0\",\"takes_layer\":\"hL\",\"tensors\":{"
    "\"tokens\":{\"shape\":[\"b\"],\"dtype\":\"int32\"},"
    "\"targets\":{\"shape\":[\"b\"],\"dtype\":\"int32\"},"
    "\"table\":{\"shape\":[\"v\",\"e\"],\"dtype\":\"weight\",\"param\":true,"
    "\"axes\":[\"vocab\",\"embed_vocab\"]},"
    "\"h0\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"},"
    "\"hL\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"},"
    "\"wl\":{\"shape\":[\"e\",\"v\"],\"dtype\":\"weight\",\"param\":true,"
    "\"axes\":[\"embed_vocab\",\"vocab\"]},"
    "\"logits\":{\"shape\":[\"b\",\"v\"],\"dtype\":\"act\"},"
    "\"loss\":{\"shape\":[],\"dtype\":\"fp32\"},"
    "\"lse\":{\"shape\":[\"b\"],\"dtype\":\"fp32\"}},\"ops\":["
    "{\"name\":\"emb\",\"op\":\"embedding\",\"in\":[\"table\",\"tokens\"],\"out\":[\"h0\"]},"
    "{\"name\":\"lg\",\"op\":\"einsum\",\"spec\":\"be,ev->bv\",\"in\":[\"hL\",\"wl\"],"
    "\"out\":[\"logits\"]},"
    "{\"name\":\"ce\",\"op\":\"cross_entropy\",\"in\":[\"logits\",\"targets\"],"
    "\"out\":[\"loss\",\"lse\"]}]}}";

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

fx_run_t *fx_analyze_with(const char *graph_text, const char *const *base,
                          const char *const *extra) {
    const char *args[64];
    size_t n = 0;
    for (size_t i = 0; base && base[i]; i++) {
        assert_true(n < 63);
        args[n++] = base[i];
    }
    for (size_t i = 0; extra && extra[i]; i++) {
        assert_true(n < 63);
        args[n++] = extra[i];
    }
    args[n] = NULL;
    return fx_analyze_ok(graph_text, args);
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
    size_t i = remat_block_find_tensor(&g->kinds[0].block, name);
    if (i == REMAT_NONE) {
        fail_msg("no tensor '%s'", name);
    }
    return i;
}
