/* SPDX-License-Identifier: MIT */
/* fixtures.c: see fixtures.h. */
#include "remat/input/resolve.h"
#include "remat/input/graph_file.h"
#include "fixtures.h"

#include "model/graph_index.h"

#include <math.h>
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
    FX_HEAD_JSON "}";

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

size_t fx_head_tensor(const remat_graph_t *g, const char *name) {
    size_t i = remat_block_find_tensor(&g->head, name);
    if (i == REMAT_NONE) {
        fail_msg("no head tensor '%s'", name);
    }
    return i;
}

const remat_op_t *fx_head_maker(const remat_graph_t *g, const char *name) {
    return &g->head.ops[g->head.tensors[fx_head_tensor(g, name)].producer];
}

void fx_total_params(const char *const *args, const char *graph, uint64_t total,
                     double published) {
    fx_run_t *f = fx_analyze_ok(NULL, args);
    if (graph) {
        assert_string_equal(f->cfg.graph, graph);
    }
    assert_int_equal(f->r.param_count, total);
    const double off = fabs((double)f->r.param_count - published) / published;
    if (off > 0.005) {
        fail_msg("%s: %.4f off the published total", args[0], off);
    }
    fx_free(f);
}

void fx_refused(const char *const *args, const char *needle) {
    fx_run_t *f = fx_analyze(NULL, args);
    assert_int_not_equal(f->st, REMAT_OK);
    if (!strstr(f->err.text, needle)) {
        fail_msg("wanted \"%s\" in: %s", needle, f->err.text);
    }
    fx_free(f);
}

void fx_frozen_fp32(const fx_run_t *f, uint64_t frozen) {
    assert_int_equal(f->r.param_bytes, f->r.param_count * 4);
    assert_int_equal(f->r.param_bytes - f->r.grad_bytes, frozen * 4);
    assert_int_equal(f->r.optimizer_bytes, 2 * f->r.param_bytes); /* adamw: mu and nu */
}

int64_t fx_forward_flops_less(const char *const *a, const char *const *b) {
    fx_run_t *fa = fx_analyze_ok(NULL, a);
    fx_run_t *fb = fx_analyze_ok(NULL, b);
    const int64_t d = (int64_t)fa->r.forward_flops - (int64_t)fb->r.forward_flops;
    fx_free(fa);
    fx_free(fb);
    return d;
}

/* ---- graph equality (fx_graphs_equal) ----------------------------------- */

static void same_str(const char *a, const char *b) {
    if (!a || !b) {
        assert_true(a == b);
        return;
    }
    assert_string_equal(a, b);
    assert_true(a != b);
}

static void tensors_equal(const remat_tensor_t *a, const remat_tensor_t *b) {
    same_str(a->name, b->name);
    assert_int_equal(a->rank, b->rank);
    assert_memory_equal(a->dim, b->dim, sizeof a->dim);
    assert_int_equal(a->dtype, b->dtype);
    assert_true(a->param == b->param && a->input == b->input && a->has_axes == b->has_axes);
    assert_int_equal(a->ntags, b->ntags);
    for (size_t k = 0; k < REMAT_MAX_TAGS; k++) {
        same_str(a->tags[k], b->tags[k]);
    }
    same_str(a->gather_group, b->gather_group);
    assert_int_equal(a->kept, b->kept);
    for (size_t k = 0; k < REMAT_MAX_RANK; k++) {
        same_str(a->axes[k], b->axes[k]);
    }
    assert_true(a->producer == b->producer && a->storage == b->storage &&
                a->last_use == b->last_use && a->needs_grad == b->needs_grad &&
                a->residual == b->residual);
}

static void ops_equal(const remat_op_t *a, const remat_op_t *b) {
    same_str(a->name, b->name);
    assert_int_equal(a->kind, b->kind);
    assert_true(a->nin == b->nin && a->nout == b->nout && a->nsaves == b->nsaves);
    assert_memory_equal(a->in, b->in, sizeof a->in);
    assert_memory_equal(a->out, b->out, sizeof a->out);
    assert_memory_equal(a->subs, b->subs, sizeof a->subs);
    assert_memory_equal(a->ragged, b->ragged, sizeof a->ragged);
    assert_memory_equal(a->over, b->over, sizeof a->over);
    assert_memory_equal(a->window, b->window, sizeof a->window);
    assert_memory_equal(a->saves, b->saves, sizeof a->saves);
    assert_memory_equal(&a->value, &b->value, sizeof a->value); /* the bits, -0.0 included */
    assert_true(a->outer == b->outer && a->outside == b->outside);
    assert_true(a->causal == b->causal && a->bhsd == b->bhsd &&
                a->saves_override == b->saves_override && a->has_backward == b->has_backward);
}

static void blocks_equal(const remat_block_t *a, const remat_block_t *b) {
    assert_true(a->ntensors == b->ntensors && a->nops == b->nops && a->ninputs == b->ninputs &&
                a->noutputs == b->noutputs);
    assert_true(a->tensors != b->tensors && a->ops != b->ops);
    for (size_t i = 0; i < a->ntensors; i++) {
        tensors_equal(&a->tensors[i], &b->tensors[i]);
    }
    for (size_t i = 0; i < a->nops; i++) {
        ops_equal(&a->ops[i], &b->ops[i]);
    }
    assert_true(a->nops == 0 || a->order != b->order);
    assert_memory_equal(a->order, b->order, a->nops * sizeof *a->order);
    assert_memory_equal(a->inputs, b->inputs, a->ninputs * sizeof *a->inputs);
    assert_memory_equal(a->outputs, b->outputs, a->noutputs * sizeof *a->outputs);
}

static void kinds_equal(const remat_kind_t *a, const remat_kind_t *b) {
    same_str(a->name, b->name);
    same_str(a->block_name, b->block_name);
    same_str(a->first, b->first);
    same_str(a->every, b->every);
    same_str(a->window, b->window);
    assert_true(a->first_n == b->first_n && a->every_n == b->every_n);
    assert_true(a->keeps_offloads == b->keeps_offloads && a->own_residuals == b->own_residuals &&
                a->gathers_ahead == b->gathers_ahead);
    blocks_equal(&a->block, &b->block);
}

void fx_graphs_equal(const remat_graph_t *a, const remat_graph_t *b) {
    assert_true(a != b);
    same_str(a->name, b->name);
    same_str(a->description, b->description);
    same_str(a->source, b->source);
    assert_int_equal(a->ndims, b->ndims);
    assert_true(a->dims != b->dims);
    for (size_t i = 0; i < a->ndims; i++) {
        const remat_dim_t *x = &a->dims[i], *y = &b->dims[i];
        same_str(x->name, y->name);
        same_str(x->from, y->from);
        same_str(x->div, y->div);
        same_str(x->axis, y->axis);
        same_str(x->weight_axis, y->weight_axis);
        assert_true(x->value == y->value);
    }
    assert_int_equal(a->nkinds, b->nkinds);
    assert_true(a->kinds != b->kinds);
    for (size_t k = 0; k < a->nkinds; k++) {
        kinds_equal(&a->kinds[k], &b->kinds[k]);
    }
    assert_true(a->expert_parallel == b->expert_parallel);
    assert_true(a->has_head == b->has_head && a->head_feeds == b->head_feeds &&
                a->head_takes == b->head_takes && a->head_npre == b->head_npre);
    if (a->has_head) {
        blocks_equal(&a->head, &b->head);
    }
    /* the index holds offsets, not pointers: equal graphs' are equal bytes */
    assert_non_null(a->index);
    assert_non_null(b->index);
    assert_true(a->index != b->index);
    assert_int_equal(a->index->size, b->index->size);
    assert_memory_equal(a->index, b->index, a->index->size);
}

void fx_find_fixes(fx_run_t *f, remat_fixes_t *fx) {
    remat_error_t err;
    remat_error_init(&err);
    assert_int_equal(remat_fixes_find(f->graph, &f->cfg, f->policy, &f->hw, fx, &err), REMAT_OK);
}
