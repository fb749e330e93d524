/* SPDX-License-Identifier: MIT */
/*
 * test_graph_load.c: the graph loader (graph_load.c) and the whole-graph
 * analysis it ends with (graph.c), on small hand-written graphs:
 *  - what a valid graph loads into: counts, each tensor's producer, the
 *    order the ops run in, views sharing their base's buffer, residual and
 *    gradient flags, last uses, and the head block with its split around
 *    the layers;
 *  - every class of schema and graph error, with its status code and the
 *    JSON path it names (the path is what a user follows to the mistake);
 *  - that loading scales: a 20,000-op chain loads;
 *  - that every built-in graph loads, and is the file of the same name
 *    under graphs/.
 */
#include "remat/input/graph_file.h"
#include "fixtures.h"

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "remat/data/builtin.h"

/* ---- helpers ------------------------------------------------------------ */

static remat_graph_t *load_ok(const char *text) {
    remat_graph_t *g = NULL;
    remat_error_t err;
    remat_error_init(&err);
    remat_status_t st = remat_graph_load_string(text, "<test>", &g, &err);
    if (st != REMAT_OK) {
        char line[1024];
        remat_error_format(&err, line, sizeof line);
        fail_msg("expected the graph to load: %s", line);
    }
    assert_non_null(g);
    return g;
}

/* Loads @p text, which must fail with @p code at JSON path @p path, with a
   message holding @p fragment (so that the right rule fired, not just any
   rule at the same place). */
static void expect_error(const char *text, remat_status_t code, const char *path,
                         const char *fragment) {
    remat_graph_t *g = (remat_graph_t *)1; /* the loader must clear it */
    remat_error_t err;
    remat_error_init(&err);
    remat_status_t st = remat_graph_load_string(text, "<test>", &g, &err);
    if (st != code || strcmp(err.json_path, path) != 0 || !strstr(err.text, fragment)) {
        fail_msg("expected %s at '%s' ('%s'), got %s at '%s': %s", remat_status_name(code), path,
                 fragment, remat_status_name(st), err.json_path, err.text);
    }
    assert_null(g);
    assert_int_equal(err.code, code);
    assert_string_equal(err.source, "<test>");
}

/* As expect_error, on a JSON tree (which it releases). */
static void expect_tree_error(json_t *root, remat_status_t code, const char *path,
                              const char *fragment) {
    char *text = json_dumps(root, JSON_COMPACT);
    assert_non_null(text);
    expect_error(text, code, path, fragment);
    free(text);
    json_decref(root);
}

/* The mini layer of fixtures.c as a JSON tree, to break one thing at a time. */
static json_t *mini_tree(void) {
    json_error_t jerr;
    json_t *root = json_loads(fx_mini_graph, 0, &jerr);
    assert_non_null(root);
    return root;
}

/* The head graph of fixtures.c as a JSON tree. */
static json_t *head_tree(void) {
    json_error_t jerr;
    json_t *root = json_loads(fx_head_graph, 0, &jerr);
    assert_non_null(root);
    return root;
}

static json_t *at(json_t *root, const char *section, const char *key) {
    json_t *v = json_object_get(json_object_get(root, section), key);
    assert_non_null(v);
    return v;
}

static json_t *mini_tensor(json_t *root, const char *name) {
    json_t *t = json_object_get(at(root, "layer", "tensors"), name);
    assert_non_null(t);
    return t;
}

static json_t *mini_op(json_t *root, size_t i) {
    json_t *o = json_array_get(at(root, "layer", "ops"), i);
    assert_non_null(o);
    return o;
}

/* A graph around a hand-written layer body: dims b and e, x [b,e] in and
   y [b,e] out; @p tensors are more entries of the tensors object (with a
   leading comma) and @p ops the ops array's entries. */
#define LAYER_FMT                                                                      \
    "{\"format\":\"remat-graph/1\",\"name\":\"hand\",\"dims\":{"                            \
    "\"b\":{\"from\":\"per_device_batch_size\"},\"e\":{\"from\":\"base_emb_dim\"}},"         \
    "\"layer\":{\"inputs\":[\"x\"],\"outputs\":[\"y\"],\"tensors\":{"                      \
    "\"x\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"},"                                   \
    "\"y\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"}%s},\"ops\":[%s]}}"

static char *layer_text(const char *tensors, const char *ops) {
    size_t n = strlen(LAYER_FMT) + strlen(tensors) + strlen(ops) + 1;
    char *text = malloc(n);
    assert_non_null(text);
    snprintf(text, n, LAYER_FMT, tensors, ops);
    return text;
}

static size_t op_index(const remat_block_t *b, const char *name) {
    for (size_t j = 0; j < b->nops; j++) {
        if (strcmp(b->ops[j].name, name) == 0) {
            return j;
        }
    }
    fail_msg("no op '%s'", name);
    return REMAT_NONE;
}

static size_t dim_index(const remat_graph_t *g, const char *name) {
    for (size_t i = 0; i < g->ndims; i++) {
        if (strcmp(g->dims[i].name, name) == 0) {
            return i;
        }
    }
    fail_msg("no dim '%s'", name);
    return REMAT_NONE;
}

/* ---- valid graphs ------------------------------------------------------- */

/* The mini layer: 3 dims, 7 tensors (x w1 h a w2 o y), 4 ops (fc1 act fc2
   res), one input x and one output y, no head. */
static void test_mini_counts_and_producers(void **state) {
    (void)state;
    remat_graph_t *g = load_ok(fx_mini_graph);
    const remat_block_t *L = &g->kinds[0].block;
    assert_string_equal(g->name, "mini");
    assert_string_equal(g->description, ""); /* absent: empty, not NULL */
    assert_string_equal(g->source, "<test>");
    assert_int_equal(g->ndims, 3);
    assert_int_equal(L->ntensors, 7);
    assert_int_equal(L->nops, 4);
    assert_false(g->has_head);
    assert_int_equal(L->ninputs, 1);
    assert_int_equal(L->noutputs, 1);
    assert_int_equal(L->inputs[0], fx_tensor(g, "x"));
    assert_int_equal(L->outputs[0], fx_tensor(g, "y"));
    /* Origins: x is the input, w1 and w2 params, every other tensor the
       output of exactly one op. */
    assert_true(L->tensors[fx_tensor(g, "x")].input);
    assert_true(L->tensors[fx_tensor(g, "w1")].param);
    assert_true(L->tensors[fx_tensor(g, "w2")].param);
    assert_false(L->tensors[fx_tensor(g, "h")].param);
    assert_int_equal(L->tensors[fx_tensor(g, "x")].producer, REMAT_NONE);
    assert_int_equal(L->tensors[fx_tensor(g, "w1")].producer, REMAT_NONE);
    assert_int_equal(L->tensors[fx_tensor(g, "w2")].producer, REMAT_NONE);
    assert_int_equal(L->tensors[fx_tensor(g, "h")].producer, op_index(L, "fc1"));
    assert_int_equal(L->tensors[fx_tensor(g, "a")].producer, op_index(L, "act"));
    assert_int_equal(L->tensors[fx_tensor(g, "o")].producer, op_index(L, "fc2"));
    assert_int_equal(L->tensors[fx_tensor(g, "y")].producer, op_index(L, "res"));
    /* Shapes resolve to dim indices; dtypes and checkpoint names as written. */
    const remat_tensor_t *h = &L->tensors[fx_tensor(g, "h")];
    assert_int_equal(h->rank, 2);
    assert_int_equal(h->dim[0], dim_index(g, "b"));
    assert_int_equal(h->dim[1], dim_index(g, "m"));
    assert_int_equal(h->dtype, REMAT_DTYPE_ACT);
    assert_int_equal(h->ntags, 1);
    assert_string_equal(h->tags[0], "mlpwi");
    assert_int_equal(L->tensors[fx_tensor(g, "w1")].dtype, REMAT_DTYPE_WEIGHT);
    assert_int_equal(L->tensors[fx_tensor(g, "a")].ntags, 0);
    assert_string_equal(g->dims[dim_index(g, "m")].from, "base_mlp_dim");
    /* The einsum's spec split into per-operand subscripts. */
    const remat_op_t *fc1 = &L->ops[op_index(L, "fc1")];
    assert_int_equal(fc1->kind, REMAT_OP_EINSUM);
    assert_int_equal(fc1->nin, 2);
    assert_int_equal(fc1->nout, 1);
    assert_int_equal(fc1->in[1], fx_tensor(g, "w1"));
    assert_string_equal(fc1->subs[0], "be");
    assert_string_equal(fc1->subs[1], "em");
    assert_string_equal(fc1->subs[2], "bm");
    assert_true(remat_graph_has_tag(g, "mlpwo"));
    assert_false(remat_graph_has_tag(g, "mlpwo_missing"));
    remat_graph_free(g);
}

/* Facts derived from the mini layer's data flow, by hand:
   order: the file's order is topological, so it is kept: fc1 act fc2 res.
   residuals: fc1's backward reads x (w1 is a param: always there), silu's
   reads h, fc2's reads a; add reads nothing; so x, h, a are residuals and
   o, y are not.
   last forward use (position in order): x at res (3), h at act (1), a at
   fc2 (2), o at res (3); y has no reader.
   gradients: every tensor lies on a path from x or a weight to y. */
static void test_mini_derived_facts(void **state) {
    (void)state;
    remat_graph_t *g = load_ok(fx_mini_graph);
    const remat_block_t *L = &g->kinds[0].block;
    const char *const file_order[] = {"fc1", "act", "fc2", "res"};
    for (size_t p = 0; p < 4; p++) {
        assert_string_equal(L->ops[L->order[p]].name, file_order[p]);
    }
    const struct {
        const char *name;
        bool residual;
        size_t last_use;
    } want[] = {{"x", true, 3},  {"w1", false, 0}, {"h", true, 1},          {"a", true, 2},
                {"w2", false, 2}, {"o", false, 3}, {"y", false, REMAT_NONE}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const remat_tensor_t *t = &L->tensors[fx_tensor(g, want[i].name)];
        if (t->residual != want[i].residual || t->last_use != want[i].last_use) {
            fail_msg("'%s': residual %d last_use %zu", t->name, t->residual, t->last_use);
        }
        assert_true(t->needs_grad);
        /* No reshape here: every tensor is its own buffer. */
        assert_int_equal(t->storage, fx_tensor(g, want[i].name));
    }
    for (size_t j = 0; j < L->nops; j++) {
        assert_true(L->ops[j].has_backward);
    }
    /* silu's backward keeps its input, the add's nothing. */
    const remat_op_t *act = &L->ops[op_index(L, "act")];
    assert_int_equal(act->nsaves, 1);
    assert_int_equal(act->saves[0], fx_tensor(g, "h"));
    assert_int_equal(L->ops[op_index(L, "res")].nsaves, 0);
    remat_graph_free(g);
}

/* Ops listed against the data flow (res fc2 act fc1: reversed) still run
   in data-flow order: the chain fc1 -> act -> fc2 -> res has exactly one
   topological order, which in file indices is 3 2 1 0. */
static void test_order_when_file_is_not_topological(void **state) {
    (void)state;
    json_t *root = mini_tree();
    json_t *ops = at(root, "layer", "ops");
    json_t *rev = json_array();
    for (size_t i = json_array_size(ops); i-- > 0;) {
        json_array_append(rev, json_array_get(ops, i));
    }
    json_object_set_new(json_object_get(root, "layer"), "ops", rev);
    char *text = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    remat_graph_t *g = load_ok(text);
    free(text);
    const remat_block_t *L = &g->kinds[0].block;
    assert_string_equal(L->ops[0].name, "res");
    for (size_t p = 0; p < 4; p++) {
        assert_int_equal(L->order[p], 3 - p);
    }
    /* Producers are file indices: h by fc1, now the fourth op. */
    assert_int_equal(L->tensors[fx_tensor(g, "h")].producer, 3);
    assert_int_equal(L->tensors[fx_tensor(g, "y")].producer, 0);
    /* Last uses are positions in the order, not file indices: h is read
       by act, which runs second. */
    assert_int_equal(L->tensors[fx_tensor(g, "h")].last_use, 1);
    remat_graph_free(g);
}

/* A reshape shares its input's buffer (storage); a transpose does not (a
   copy in JAX). p = x @ w; v = reshape(p); t = transpose(v); s = silu(t);
   y = x + s. The reshape's element counts are checked at binding, not
   here. */
static void test_reshape_is_a_view(void **state) {
    (void)state;
    char *text = layer_text(
        ",\"w\":{\"shape\":[\"e\",\"e\"],\"dtype\":\"weight\",\"param\":true},"
        "\"p\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"},"
        "\"v\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"},"
        "\"t\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"},"
        "\"s\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"}",
        "{\"name\":\"mm\",\"op\":\"einsum\",\"spec\":\"be,ef->bf\",\"in\":[\"x\",\"w\"],"
        "\"out\":[\"p\"]},"
        "{\"name\":\"rs\",\"op\":\"reshape\",\"in\":[\"p\"],\"out\":[\"v\"]},"
        "{\"name\":\"tr\",\"op\":\"transpose\",\"in\":[\"v\"],\"out\":[\"t\"]},"
        "{\"name\":\"si\",\"op\":\"silu\",\"in\":[\"t\"],\"out\":[\"s\"]},"
        "{\"name\":\"res\",\"op\":\"add\",\"in\":[\"x\",\"s\"],\"out\":[\"y\"]}");
    remat_graph_t *g = load_ok(text);
    free(text);
    const remat_block_t *L = &g->kinds[0].block;
    const size_t p = fx_tensor(g, "p"), v = fx_tensor(g, "v"), t = fx_tensor(g, "t");
    assert_int_equal(L->tensors[p].storage, p);
    assert_int_equal(L->tensors[v].storage, p);
    assert_int_equal(L->tensors[t].storage, t);
    /* silu keeps t for its backward; mm keeps x; the views keep nothing. */
    assert_true(L->tensors[t].residual);
    assert_true(L->tensors[fx_tensor(g, "x")].residual);
    assert_false(L->tensors[v].residual);
    assert_false(L->tensors[p].residual);
    assert_int_equal(L->ops[op_index(L, "rs")].nsaves, 0);
    remat_graph_free(g);
}

/* The head of fixtures.c: tokens, targets in; loss out; emb feeds layer 0
   (h0) and runs before the layers; lg and ce take the last layer's output
   (hL) and run after them. */
static void test_head_block(void **state) {
    (void)state;
    remat_graph_t *g = load_ok(fx_head_graph);
    const remat_block_t *H = &g->head;
    assert_true(g->has_head);
    assert_int_equal(g->kinds[0].block.ntensors, 4);
    assert_int_equal(g->kinds[0].block.nops, 2);
    assert_int_equal(H->ntensors, 9);
    assert_int_equal(H->nops, 3);
    assert_int_equal(H->ninputs, 2);
    assert_int_equal(H->noutputs, 1);
    assert_int_equal(g->head_feeds, remat_block_find_tensor(H, "h0"));
    assert_int_equal(g->head_takes, remat_block_find_tensor(H, "hL"));
    assert_int_equal(H->outputs[0], remat_block_find_tensor(H, "loss"));
    assert_int_equal(g->head_npre, 1);
    assert_int_equal(H->order[0], op_index(H, "emb"));
    assert_int_equal(H->order[1], op_index(H, "lg"));
    assert_int_equal(H->order[2], op_index(H, "ce"));
    /* takes_layer is an origin: no op makes it. */
    assert_int_equal(H->tensors[g->head_takes].producer, REMAT_NONE);
    assert_int_equal(H->tensors[g->head_feeds].producer, op_index(H, "emb"));
    /* Token ids carry no gradient (int32 stops it); the logits do, and
       cross_entropy's backward reads them. */
    const remat_tensor_t *tokens = &H->tensors[remat_block_find_tensor(H, "tokens")];
    const remat_tensor_t *logits = &H->tensors[remat_block_find_tensor(H, "logits")];
    assert_int_equal(tokens->dtype, REMAT_DTYPE_I32);
    assert_false(tokens->needs_grad);
    assert_true(logits->needs_grad);
    assert_true(logits->residual);
    /* axes override the dims' own: the table's are vocab, embed_vocab. */
    const remat_tensor_t *table = &H->tensors[remat_block_find_tensor(H, "table")];
    assert_true(table->has_axes);
    assert_string_equal(table->axes[0], "vocab");
    assert_string_equal(table->axes[1], "embed_vocab");
    assert_string_equal(g->dims[dim_index(g, "b")].axis, "activation_batch");
    assert_string_equal(g->dims[dim_index(g, "e")].weight_axis, "embed");
    remat_graph_free(g);
}

/* ---- errors ------------------------------------------------------------- */

/* A key no section knows is a typo; the path names the key itself. */
static void test_unknown_keys(void **state) {
    (void)state;
    json_t *r = mini_tree();
    json_object_set_new(r, "lyaer", json_object());
    expect_tree_error(r, REMAT_E_SCHEMA, "$.lyaer", "unknown key 'lyaer'");
    r = mini_tree();
    json_object_set_new(at(r, "dims", "b"), "size", json_integer(4));
    expect_tree_error(r, REMAT_E_SCHEMA, "$.dims.b.size", "unknown key 'size'");
    r = mini_tree();
    json_object_set_new(json_object_get(r, "layer"), "feeds_layer", json_string("x"));
    expect_tree_error(r, REMAT_E_SCHEMA, "$.layer.feeds_layer", "unknown key 'feeds_layer'");
    r = mini_tree();
    json_object_set_new(mini_tensor(r, "h"), "dtyp", json_string("bf16"));
    expect_tree_error(r, REMAT_E_SCHEMA, "$.layer.tensors.h.dtyp", "unknown key 'dtyp'");
    r = mini_tree();
    json_object_set_new(mini_op(r, 1), "inputs", json_array());
    expect_tree_error(r, REMAT_E_SCHEMA, "$.layer.ops[1].inputs", "unknown key 'inputs'");
    /* The head's own keys are not the layer's, and vice versa. */
    r = head_tree();
    json_object_set_new(json_object_get(r, "head"), "extra", json_true());
    expect_tree_error(r, REMAT_E_SCHEMA, "$.head.extra", "unknown key 'extra'");
}

/* A value of the wrong JSON type, at each level. */
static void test_wrong_types(void **state) {
    (void)state;
    json_t *r = mini_tree();
    json_object_set_new(r, "format", json_integer(1));
    expect_tree_error(r, REMAT_E_SCHEMA, "$.format", "'format' must be a string");
    r = mini_tree();
    json_object_set_new(r, "format", json_string("remat-graph/2"));
    expect_tree_error(r, REMAT_E_SCHEMA, "$.format", "unsupported format");
    r = mini_tree();
    json_object_set_new(r, "dims", json_array());
    expect_tree_error(r, REMAT_E_SCHEMA, "$.dims", "'dims' must be a non-empty object");
    r = mini_tree();
    json_object_set_new(at(r, "dims", "b"), "from", json_integer(2));
    expect_tree_error(r, REMAT_E_SCHEMA, "$.dims.b.from", "'from' must be a string");
    r = mini_tree();
    json_object_set_new(json_object_get(r, "layer"), "ops", json_object());
    expect_tree_error(r, REMAT_E_SCHEMA, "$.layer", "'ops' must be a non-empty array");
    r = mini_tree();
    json_object_set_new(mini_tensor(r, "w1"), "param", json_string("yes"));
    expect_tree_error(r, REMAT_E_SCHEMA, "$.layer.tensors.w1.param", "'param' must be true");
    r = mini_tree();
    json_object_set_new(mini_tensor(r, "h"), "shape", json_string("b"));
    expect_tree_error(r, REMAT_E_SCHEMA, "$.layer.tensors.h.shape", "'shape' must be an array");
    r = mini_tree();
    json_array_set_new(json_object_get(mini_tensor(r, "h"), "shape"), 1, json_integer(8));
    expect_tree_error(r, REMAT_E_SCHEMA, "$.layer.tensors.h.shape[1]", "must be a dim name");
    r = mini_tree();
    json_object_set_new(mini_tensor(r, "h"), "dtype", json_string("float64"));
    expect_tree_error(r, REMAT_E_SCHEMA, "$.layer.tensors.h.dtype", "unknown dtype 'float64'");
    r = mini_tree();
    json_object_set_new(mini_op(r, 2), "in", json_string("a"));
    expect_tree_error(r, REMAT_E_SCHEMA, "$.layer.ops[2].in", "must be an array of 1 to 8");
    r = mini_tree();
    json_array_set_new(json_object_get(mini_op(r, 2), "in"), 0, json_null());
    expect_tree_error(r, REMAT_E_SCHEMA, "$.layer.ops[2].in[0]", "must be a string");
    r = mini_tree();
    json_object_set_new(mini_op(r, 0), "name", json_true());
    expect_tree_error(r, REMAT_E_SCHEMA, "$.layer.ops[0].name", "'name' must be a string");
    r = mini_tree();
    json_object_set_new(mini_op(r, 1), "op", json_string("swish"));
    expect_tree_error(r, REMAT_E_SCHEMA, "$.layer.ops[1].op", "unknown op kind 'swish'");
    r = mini_tree();
    json_object_del(mini_tensor(r, "a"), "dtype");
    expect_tree_error(r, REMAT_E_SCHEMA, "$.layer.tensors.a", "missing required key 'dtype'");
}

/* Names in inputs, outputs, in, out, saves and the head's feeds/takes must
   be tensors of the same block. */
static void test_unknown_tensor_references(void **state) {
    (void)state;
    json_t *r = mini_tree();
    json_array_set_new(json_object_get(mini_op(r, 0), "in"), 1, json_string("w3"));
    expect_tree_error(r, REMAT_E_SCHEMA, "$.layer.ops[0].in[1]", "unknown tensor 'w3'");
    r = mini_tree();
    json_array_set_new(json_object_get(mini_op(r, 3), "out"), 0, json_string("z"));
    expect_tree_error(r, REMAT_E_SCHEMA, "$.layer.ops[3].out[0]", "unknown tensor 'z'");
    r = mini_tree();
    json_array_set_new(at(r, "layer", "inputs"), 0, json_string("input"));
    expect_tree_error(r, REMAT_E_SCHEMA, "$.layer.inputs[0]", "unknown tensor 'input'");
    r = mini_tree();
    json_array_set_new(at(r, "layer", "outputs"), 0, json_string("out"));
    expect_tree_error(r, REMAT_E_SCHEMA, "$.layer.outputs[0]", "unknown tensor 'out'");
    r = mini_tree();
    json_object_set_new(mini_op(r, 1), "saves", json_pack("[s]", "o"));
    expect_tree_error(r, REMAT_E_SCHEMA, "$.layer.ops[1].saves[0]", "only the op's own");
    r = mini_tree();
    json_array_set_new(json_object_get(mini_op(r, 3), "in"), 1, json_string("x"));
    expect_tree_error(r, REMAT_E_SCHEMA, "$.layer.ops[3].in[1]", "tensor 'x' is listed twice");
    /* A layer tensor is not a head tensor: each block has its own names. */
    r = head_tree();
    json_object_set_new(json_object_get(r, "head"), "takes_layer", json_string("y"));
    expect_tree_error(r, REMAT_E_SCHEMA, "$.head.takes_layer", "unknown tensor 'y'");
    r = head_tree();
    json_object_set_new(json_object_get(r, "head"), "feeds_layer", json_string("x"));
    expect_tree_error(r, REMAT_E_SCHEMA, "$.head.feeds_layer", "unknown tensor 'x'");
}

/* Op names are unique in a block (policies and reports name ops); the
   error points at the second one's name. */
static void test_duplicate_op_names(void **state) {
    (void)state;
    json_t *r = mini_tree();
    json_object_set_new(mini_op(r, 2), "name", json_string("fc1"));
    expect_tree_error(r, REMAT_E_GRAPH, "$.layer.ops[2].name", "duplicate op name 'fc1'");
}

/* 47 characters is the longest name (a policy's REMAT_NAME_LEN - 1); one
   more fails, for tensors, ops, dims and checkpoint names alike. */
static void test_name_length(void **state) {
    (void)state;
    char n47[48], n48[49], path[96];
    memset(n47, 'a', 47);
    n47[47] = '\0';
    memset(n48, 'a', 48);
    n48[48] = '\0';
    json_t *r = mini_tree();
    json_object_set_new(mini_op(r, 0), "name", json_string(n47));
    json_object_set_new(mini_tensor(r, "h"), "checkpoint", json_string(n47));
    char *text = json_dumps(r, JSON_COMPACT);
    json_decref(r);
    remat_graph_t *g = load_ok(text);
    free(text);
    assert_string_equal(g->kinds[0].block.ops[0].name, n47);
    assert_true(remat_graph_has_tag(g, n47));
    remat_graph_free(g);

    r = mini_tree();
    json_object_set_new(mini_op(r, 0), "name", json_string(n48));
    expect_tree_error(r, REMAT_E_SCHEMA, "$.layer.ops[0]", "invalid op name");
    r = mini_tree();
    json_object_set_new(mini_tensor(r, "h"), "checkpoint", json_string(n48));
    expect_tree_error(r, REMAT_E_SCHEMA, "$.layer.tensors.h.checkpoint",
                      "invalid checkpoint name");
    r = mini_tree();
    json_object_set(at(r, "layer", "tensors"), n48, mini_tensor(r, "h"));
    snprintf(path, sizeof path, "$.layer.tensors.%s", n48);
    expect_tree_error(r, REMAT_E_SCHEMA, path, "invalid tensor name");
    r = mini_tree();
    json_object_set_new(json_object_get(r, "dims"), n48, json_pack("{s:i}", "value", 2));
    snprintf(path, sizeof path, "$.dims.%s", n48);
    expect_tree_error(r, REMAT_E_SCHEMA, path, "invalid dim name");
}

/* Only A-Z a-z 0-9 _ - . in names, and never an empty one. */
static void test_name_characters(void **state) {
    (void)state;
    static const char *const bad[] = {"", "fc 1", "fc/1", "fc:1", "fc\t1", "f\xc3\xa9"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *r = mini_tree();
        json_object_set_new(mini_op(r, 0), "name", json_string(bad[i]));
        expect_tree_error(r, REMAT_E_SCHEMA, "$.layer.ops[0]", "invalid op name");
        r = mini_tree();
        json_object_set_new(mini_tensor(r, "h"), "checkpoint", json_pack("[s,s]", "ok", bad[i]));
        expect_tree_error(r, REMAT_E_SCHEMA, "$.layer.tensors.h.checkpoint",
                          "invalid checkpoint name");
    }
    /* The punctuation the rule allows is accepted. */
    json_t *r = mini_tree();
    json_object_set_new(mini_op(r, 0), "name", json_string("Fc-1_a.b"));
    char *text = json_dumps(r, JSON_COMPACT);
    json_decref(r);
    remat_graph_t *g = load_ok(text);
    free(text);
    remat_graph_free(g);
}

/* The graph's name and description go into reports line by line: control
   characters (newline, tab, escape, DEL) are refused. */
static void test_control_characters(void **state) {
    (void)state;
    static const char *const bad[] = {"mi\nni", "mi\tni", "\x1b[31mred", "del\x7f"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *r = mini_tree();
        json_object_set_new(r, "name", json_string(bad[i]));
        expect_tree_error(r, REMAT_E_SCHEMA, "$.name", "control characters");
        r = mini_tree();
        json_object_set_new(r, "description", json_string(bad[i]));
        expect_tree_error(r, REMAT_E_SCHEMA, "$.description", "control characters");
    }
    /* Printable text, spaces and UTF-8 included, is fine. */
    json_t *r = mini_tree();
    json_object_set_new(r, "name", json_string("mini layer \xc3\xa9"));
    char *text = json_dumps(r, JSON_COMPACT);
    json_decref(r);
    remat_graph_t *g = load_ok(text);
    free(text);
    assert_string_equal(g->name, "mini layer \xc3\xa9");
    remat_graph_free(g);
}

/* Loads a layer_text graph that must fail as expected. */
static void expect_layer_error(const char *tensors, const char *ops, remat_status_t code,
                               const char *path, const char *fragment) {
    char *text = layer_text(tensors, ops);
    expect_error(text, code, path, fragment);
    free(text);
}

#define T_BE(n) ",\"" n "\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"}"
#define OP1(n, kind, in, out) \
    "{\"name\":\"" n "\",\"op\":\"" kind "\",\"in\":[\"" in "\"],\"out\":[\"" out "\"]},"
#define RES(t) "{\"name\":\"res\",\"op\":\"add\",\"in\":[\"x\",\"" t "\"],\"out\":[\"y\"]}"

/* The data flow: a DAG, one origin per tensor, outputs that ops make. */
static void test_data_flow_errors(void **state) {
    (void)state;
    /* p = silu(q), q = silu(p): a cycle, named at its first op. */
    expect_layer_error(T_BE("p") T_BE("q"), OP1("f", "silu", "q", "p") OP1("g", "silu", "p", "q")
                       RES("p"), REMAT_E_GRAPH, "$.layer.ops[0]", "cycle through 'f'");
    /* An op reading its own output is a cycle of one op. */
    expect_layer_error(T_BE("p"), OP1("f", "scale", "p", "p") RES("p"), REMAT_E_GRAPH,
                       "$.layer.ops[0]", "cycle through 'f'");
    /* Two ops write p: the second is named. */
    expect_layer_error(T_BE("p"), OP1("f", "silu", "x", "p") OP1("g", "gelu", "x", "p")
                       RES("p"), REMAT_E_GRAPH, "$.layer.ops[1]",
                       "tensor 'p' is produced twice (also by 'f')");
    /* z is read but nothing makes it. */
    expect_layer_error(T_BE("z"), RES("z"), REMAT_E_GRAPH, "$.layer.tensors.z",
                       "tensor 'z' is not an input or a param and no op produces it");
    /* Writing the block's input. */
    expect_layer_error(T_BE("p"), OP1("f", "silu", "p", "x") RES("p"), REMAT_E_GRAPH,
                       "$.layer.ops[0]", "op 'f' writes 'x', which is a block input");
    /* The layer's output is the input: no op makes it. */
    json_t *r = mini_tree();
    json_array_set_new(at(r, "layer", "outputs"), 0, json_string("x"));
    expect_tree_error(r, REMAT_E_GRAPH, "$.layer.outputs[0]", "output 'x' is not produced");
    /* One input and one output of the same shape: the residual stream. */
    r = mini_tree();
    json_array_append_new(at(r, "layer", "inputs"), json_string("w1"));
    expect_tree_error(r, REMAT_E_GRAPH, "$.layer.inputs", "one input and one output");
    r = mini_tree();
    json_array_set_new(at(r, "layer", "outputs"), 0, json_string("h"));
    expect_tree_error(r, REMAT_E_GRAPH, "$.layer.outputs[0]", "must have the shape and dtype");
    /* The output kept for the layer's own backward: the next layer owns it. */
    r = mini_tree();
    json_object_set_new(mini_op(r, 3), "saves", json_pack("[s]", "y"));
    expect_tree_error(r, REMAT_E_GRAPH, "$.layer.outputs[0]", "read by its own layer's backward");
    /* A param is not an input. */
    r = mini_tree();
    json_object_set_new(mini_tensor(r, "x"), "param", json_true());
    json_object_del(mini_tensor(r, "x"), "checkpoint");
    expect_tree_error(r, REMAT_E_GRAPH, "$.layer.inputs", "param 'x' cannot be a block input");
}

/* Shapes: dims that exist, at most 8 of them per tensor, at most 64 dims,
   and ops whose operands agree. */
static void test_shape_errors(void **state) {
    (void)state;
    json_t *r = mini_tree();
    json_array_set_new(json_object_get(mini_tensor(r, "h"), "shape"), 1, json_string("n"));
    expect_tree_error(r, REMAT_E_SCHEMA, "$.layer.tensors.h.shape[1]", "unknown dim 'n'");
    /* An extra param of rank 8 loads; of rank 9 it does not. */
    for (size_t rank = 8; rank <= 9; rank++) {
        r = mini_tree();
        json_t *shape = json_array();
        for (size_t i = 0; i < rank; i++) {
            json_array_append_new(shape, json_string("b"));
        }
        json_object_set_new(at(r, "layer", "tensors"), "big",
                            json_pack("{s:o,s:s,s:b}", "shape", shape, "dtype", "weight",
                                      "param", 1));
        if (rank == 9) {
            expect_tree_error(r, REMAT_E_SCHEMA, "$.layer.tensors.big.shape",
                              "rank above the maximum of 8");
            continue;
        }
        char *text = json_dumps(r, JSON_COMPACT);
        json_decref(r);
        remat_graph_t *g = load_ok(text);
        free(text);
        assert_int_equal(g->kinds[0].block.tensors[fx_tensor(g, "big")].rank, 8);
        remat_graph_free(g);
    }
    /* 64 dims load (the mini's 3 and 61 constants); 65 do not. */
    for (size_t ndims = 64; ndims <= 65; ndims++) {
        r = mini_tree();
        for (size_t i = 3; i < ndims; i++) {
            char name[16];
            snprintf(name, sizeof name, "c%zu", i);
            json_object_set_new(json_object_get(r, "dims"), name, json_pack("{s:i}", "value", 2));
        }
        if (ndims == 65) {
            expect_tree_error(r, REMAT_E_SCHEMA, "$.dims", "at most 64 dims");
            continue;
        }
        char *text = json_dumps(r, JSON_COMPACT);
        json_decref(r);
        remat_graph_t *g = load_ok(text);
        free(text);
        assert_int_equal(g->ndims, 64);
        assert_int_equal(g->dims[dim_index(g, "c63")].value, 2);
        remat_graph_free(g);
    }
    /* fc1 contracts x's e with w1's first dim; "me" makes e mean m. */
    r = mini_tree();
    json_object_set_new(mini_op(r, 0), "spec", json_string("be,me->bm"));
    expect_tree_error(r, REMAT_E_GRAPH, "$.layer.ops[0]", "index 'e' is dim");
    r = mini_tree();
    json_object_set_new(mini_op(r, 0), "spec", json_string("be,em"));
    expect_tree_error(r, REMAT_E_GRAPH, "$.layer.ops[0].spec", "needs exactly one '->'");
    /* silu keeps the shape: a [b,m] from x [b,e] is refused. */
    r = mini_tree();
    json_array_set_new(json_object_get(mini_op(r, 1), "in"), 0, json_string("x"));
    expect_tree_error(r, REMAT_E_GRAPH, "$.layer.ops[1]", "must have the same shape");
}

/* A dim binds to exactly one of a config key and a positive constant. */
static void test_dim_errors(void **state) {
    (void)state;
    json_t *r = mini_tree();
    json_object_set_new(at(r, "dims", "b"), "value", json_integer(2));
    expect_tree_error(r, REMAT_E_SCHEMA, "$.dims.b", "exactly one of 'from' and 'value'");
    r = mini_tree();
    json_object_set_new(json_object_get(r, "dims"), "b", json_pack("{s:i}", "value", 0));
    expect_tree_error(r, REMAT_E_SCHEMA, "$.dims.b", "positive integer");
    r = mini_tree();
    json_object_set_new(at(r, "dims", "b"), "from", json_string("dtype"));
    expect_tree_error(r, REMAT_E_SCHEMA, "$.dims.b", "not an integer config key");
    r = mini_tree();
    json_object_set_new(json_object_get(r, "dims"), "b", json_integer(2));
    expect_tree_error(r, REMAT_E_SCHEMA, "$.dims.b", "must be an object");
}

/* The head's own rules: its feed is made before the layers, takes_layer is
   an origin, both are shaped like the layer input. */
static void test_head_errors(void **state) {
    (void)state;
    json_t *r = head_tree();
    json_object_del(json_object_get(r, "head"), "takes_layer");
    expect_tree_error(r, REMAT_E_SCHEMA, "$.head", "missing required key 'takes_layer'");
    /* emb writes hL, which stands for the last layer's output. */
    r = head_tree();
    json_array_set_new(json_object_get(json_array_get(at(r, "head", "ops"), 0), "out"), 0,
                       json_string("hL"));
    expect_tree_error(r, REMAT_E_GRAPH, "$.head.ops[0]", "takes_layer");
    r = head_tree();
    json_object_set_new(json_object_get(r, "head"), "feeds_layer", json_string("tokens"));
    expect_tree_error(r, REMAT_E_GRAPH, "$.head.feeds_layer", "must have the layer input's shape");
    /* hz = 2 hL feeding layer 0 would need the layers to have run. */
    r = head_tree();
    json_object_set_new(at(r, "head", "tensors"), "hz",
                        json_pack("{s:[s,s],s:s}", "shape", "b", "e", "dtype", "act"));
    json_array_append_new(at(r, "head", "ops"),
                          json_pack("{s:s,s:s,s:[s],s:[s]}", "name", "late", "op", "scale", "in",
                                    "hL", "out", "hz"));
    json_object_set_new(json_object_get(r, "head"), "feeds_layer", json_string("hz"));
    expect_tree_error(r, REMAT_E_GRAPH, "$.head.feeds_layer", "run before the layers");
}

/* Not JSON, or JSON with a key twice: syntax errors with a position. */
static void test_syntax_errors(void **state) {
    (void)state;
    static const char *const bad[] = {"{\"format\":", "{\"a\":1,\"a\":2}", "[1,]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        remat_graph_t *g = NULL;
        remat_error_t err;
        remat_error_init(&err);
        assert_int_equal(remat_graph_load_string(bad[i], "<test>", &g, &err), REMAT_E_SYNTAX);
        assert_null(g);
        assert_true(err.line >= 1);
    }
    /* Well-formed but not an object. */
    expect_error("[]", REMAT_E_SCHEMA, "$", "must be a JSON object");
    expect_error("{\"format\":\"remat-graph/1\"}", REMAT_E_SCHEMA, "$",
                 "missing required key 'name'");
}

/* ---- scale -------------------------------------------------------------- */

typedef struct buf {
    char *s;
    size_t len, cap;
} buf_t;

static void put(buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(buf_t *b, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        assert_true(n >= 0);
        if (b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        b->cap = 2 * b->cap + (size_t)n;
        b->s = realloc(b->s, b->cap);
        assert_non_null(b->s);
    }
}

/* x -> t0 = silu(x) -> t1 = silu(t0) -> ... -> t19998; y = x + t19998:
   19,999 silu ops and the add, 20,001 tensors. A quadratic step anywhere
   in the loader (name lookups, duplicate checks) would make this crawl;
   the test asserts only the result, not the time. */
static void test_long_chain_loads(void **state) {
    (void)state;
    enum { NOPS = 20000 };
    buf_t b = {malloc(1024), 0, 1024};
    assert_non_null(b.s);
    put(&b, "{\"format\":\"remat-graph/1\",\"name\":\"chain\",\"dims\":{"
            "\"b\":{\"from\":\"per_device_batch_size\"},\"e\":{\"from\":\"base_emb_dim\"}},"
            "\"layer\":{\"inputs\":[\"x\"],\"outputs\":[\"y\"],\"tensors\":{"
            "\"x\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"}");
    for (int i = 0; i < NOPS - 1; i++) {
        put(&b, ",\"t%d\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"}", i);
    }
    put(&b, ",\"y\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"}},\"ops\":[");
    for (int i = 0; i < NOPS - 1; i++) {
        char in[16];
        snprintf(in, sizeof in, i ? "t%d" : "x", i - 1);
        put(&b, "{\"name\":\"s%d\",\"op\":\"silu\",\"in\":[\"%s\"],\"out\":[\"t%d\"]},", i, in, i);
    }
    put(&b, "{\"name\":\"res\",\"op\":\"add\",\"in\":[\"x\",\"t%d\"],\"out\":[\"y\"]}]}}",
        NOPS - 2);
    remat_graph_t *g = load_ok(b.s);
    free(b.s);
    const remat_block_t *L = &g->kinds[0].block;
    assert_int_equal(L->nops, NOPS);
    assert_int_equal(L->ntensors, NOPS + 1);
    /* Tensors keep the file's order: x, t0.., y; t_i is made by op i, and
       the file's order is the run order. */
    assert_string_equal(L->tensors[NOPS].name, "y");
    assert_int_equal(L->tensors[0].producer, REMAT_NONE);
    for (size_t i = 1; i <= NOPS; i++) {
        assert_int_equal(L->tensors[i].producer, i - 1);
        assert_int_equal(L->order[i - 1], i - 1);
    }
    /* Every silu keeps its input: x and t0..t19997 are residuals. */
    assert_true(L->tensors[0].residual);
    assert_true(L->tensors[NOPS - 2].residual);
    assert_false(L->tensors[NOPS - 1].residual); /* t19998: read by the add only */
    remat_graph_free(g);
}

/* ---- built-ins ---------------------------------------------------------- */

/* Every built-in graph loads, has a head and the one-in one-out layer, and
   is the file graphs/<name>.json: same counts when loaded from disk, and as
   many built-ins as files. */
static void test_builtin_graphs_load(void **state) {
    (void)state;
    glob_t files;
    assert_int_equal(glob(REMAT_SOURCE_DIR "/graphs/*.json", 0, NULL, &files), 0);
    const size_t n = remat_builtin_count(REMAT_BUILTIN_GRAPH);
    assert_int_equal(n, files.gl_pathc);
    for (size_t i = 0; i < n; i++) {
        const char *name = remat_builtin_name(REMAT_BUILTIN_GRAPH, i);
        const char *text = remat_builtin_find(REMAT_BUILTIN_GRAPH, name);
        assert_non_null(text);
        remat_graph_t *g = load_ok(text);
        assert_true(g->has_head);
        assert_int_equal(g->kinds[0].block.ninputs, 1);
        assert_int_equal(g->kinds[0].block.noutputs, 1);
        /* "llama.flash" is graph "llama" with flash attention. */
        assert_int_equal(strncmp(name, g->name, strlen(g->name)), 0);
        char path[1024];
        snprintf(path, sizeof path, "%s/graphs/%s.json", REMAT_SOURCE_DIR, name);
        remat_graph_t *fg = NULL;
        remat_error_t err;
        remat_error_init(&err);
        assert_int_equal(remat_graph_load_file(path, &fg, &err), REMAT_OK);
        assert_string_equal(fg->source, path);
        assert_int_equal(fg->kinds[0].block.ntensors, g->kinds[0].block.ntensors);
        assert_int_equal(fg->kinds[0].block.nops, g->kinds[0].block.nops);
        assert_int_equal(fg->head.nops, g->head.nops);
        assert_int_equal(fg->head_npre, g->head_npre);
        remat_graph_free(fg);
        remat_graph_free(g);
    }
    assert_null(remat_builtin_find(REMAT_BUILTIN_GRAPH, "no-such-graph"));
    globfree(&files);
}

/* A missing file is an I/O error naming the file. */
static void test_missing_file(void **state) {
    (void)state;
    remat_graph_t *g = (remat_graph_t *)1;
    remat_error_t err;
    remat_error_init(&err);
    assert_int_equal(remat_graph_load_file("/nonexistent/graph.json", &g, &err), REMAT_E_IO);
    assert_null(g);
    assert_string_equal(err.source, "/nonexistent/graph.json");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mini_counts_and_producers),
        cmocka_unit_test(test_mini_derived_facts),
        cmocka_unit_test(test_order_when_file_is_not_topological),
        cmocka_unit_test(test_reshape_is_a_view),
        cmocka_unit_test(test_head_block),
        cmocka_unit_test(test_unknown_keys),
        cmocka_unit_test(test_wrong_types),
        cmocka_unit_test(test_unknown_tensor_references),
        cmocka_unit_test(test_duplicate_op_names),
        cmocka_unit_test(test_name_length),
        cmocka_unit_test(test_name_characters),
        cmocka_unit_test(test_control_characters),
        cmocka_unit_test(test_data_flow_errors),
        cmocka_unit_test(test_shape_errors),
        cmocka_unit_test(test_dim_errors),
        cmocka_unit_test(test_head_errors),
        cmocka_unit_test(test_syntax_errors),
        cmocka_unit_test(test_long_chain_loads),
        cmocka_unit_test(test_builtin_graphs_load),
        cmocka_unit_test(test_missing_file),
    };
    return cmocka_run_group_tests_name("graph_load", tests, NULL, NULL);
}
