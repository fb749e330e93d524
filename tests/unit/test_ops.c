/* SPDX-License-Identifier: MIT */
/*
 * test_ops.c: every op kind's FLOP counts and backward residuals, on one
 * layer that chains them all, with the arithmetic written out. Sizes:
 * b=2 s=3 e=4 heads=2 kv=1 d=5 half=2 (e = 2 halves), v=7.
 */
#include "remat/input/graph_file.h"
#include "fixtures.h"

#include <stdio.h>
#include <string.h>

#include "model/graph_index.h"
#include "model/graph_internal.h"

#define T(name, shape, dtype) "\"" name "\":{\"shape\":" shape ",\"dtype\":\"" dtype "\"}"
#define P(name, shape) "\"" name "\":{\"shape\":" shape ",\"dtype\":\"weight\",\"param\":true}"
#define BSE "[\"b\",\"s\",\"e\"]"
#define BSHD "[\"b\",\"s\",\"h\",\"d\"]"
#define BSKD "[\"b\",\"s\",\"k\",\"d\"]"

static const char *const graph_text =
    "{\"format\":\"remat-graph/1\",\"name\":\"allops\",\"dims\":{"
    "\"b\":{\"value\":2},\"s\":{\"value\":3},\"e\":{\"value\":4},\"h\":{\"value\":2},"
    "\"k\":{\"value\":1},\"d\":{\"value\":5},\"half\":{\"value\":2},\"v\":{\"value\":7}},"
    "\"layer\":{\"inputs\":[\"x\"],\"outputs\":[\"y\"],\"tensors\":{" T("x", BSE, "act") ","
    P("g", "[\"e\"]") "," P("beta", "[\"e\"]") "," T("xn", BSE, "act") ","
    T("rstd", "[\"b\",\"s\"]", "fp32") "," T("xl", BSE, "act") ","
    T("mean2", "[\"b\",\"s\"]", "fp32") "," T("rstd2", "[\"b\",\"s\"]", "fp32") ","
    P("wq", "[\"e\",\"h\",\"d\"]") "," P("wk", "[\"e\",\"k\",\"d\"]") ","
    T("q", BSHD, "act") "," T("kk", BSKD, "act") "," T("vv", BSKD, "act") ","
    T("qr", BSHD, "act") "," T("o", BSHD, "act") "," T("lse", "[\"b\",\"h\",\"s\"]", "fp32") ","
    T("os", BSHD, "act") "," T("ot", "[\"b\",\"h\",\"s\",\"d\"]", "act") ","
    T("orr", "[\"b\",\"s\",\"d\",\"h\"]", "act") "," P("wo", "[\"h\",\"d\",\"e\"]") ","
    T("p", BSE, "act") "," T("pd", BSE, "act") "," T("mask", BSE, "bool") ","
    T("h1", BSE, "act") "," T("m1", BSE, "act") "," T("s1", BSE, "act") ","
    T("g1", BSE, "act") "," T("sm", BSE, "act") "," T("c32", BSE, "fp32") ","
    T("ga", "[\"b\",\"s\",\"half\"]", "fp32") "," T("gb", "[\"b\",\"s\",\"half\"]", "fp32") ","
    T("cc", BSE, "fp32") "," P("bias", "[\"e\"]") "," T("yb", BSE, "fp32") ","
    T("y", BSE, "act") "},\"ops\":["
    "{\"name\":\"rms\",\"op\":\"rmsnorm\",\"in\":[\"x\",\"g\"],\"out\":[\"xn\",\"rstd\"]},"
    "{\"name\":\"ln\",\"op\":\"layernorm\",\"in\":[\"x\",\"g\",\"beta\"],\"out\":[\"xl\",\"mean2\",\"rstd2\"]},"
    "{\"name\":\"qp\",\"op\":\"einsum\",\"spec\":\"bse,ehd->bshd\",\"in\":[\"xn\",\"wq\"],\"out\":[\"q\"]},"
    "{\"name\":\"kp\",\"op\":\"einsum\",\"spec\":\"bse,ekd->bskd\",\"in\":[\"xn\",\"wk\"],\"out\":[\"kk\"]},"
    "{\"name\":\"vp\",\"op\":\"einsum\",\"spec\":\"bse,ekd->bskd\",\"in\":[\"xl\",\"wk\"],\"out\":[\"vv\"]},"
    "{\"name\":\"rope\",\"op\":\"rope\",\"in\":[\"q\"],\"out\":[\"qr\"]},"
    "{\"name\":\"fa\",\"op\":\"flash_attention\",\"causal\":true,\"in\":[\"qr\",\"kk\",\"vv\"],\"out\":[\"o\",\"lse\"]},"
    "{\"name\":\"sc\",\"op\":\"scale\",\"value\":0.5,\"in\":[\"o\"],\"out\":[\"os\"]},"
    "{\"name\":\"tr\",\"op\":\"transpose\",\"in\":[\"os\"],\"out\":[\"ot\"]},"
    "{\"name\":\"rs\",\"op\":\"reshape\",\"in\":[\"os\"],\"out\":[\"orr\"]},"
    "{\"name\":\"op\",\"op\":\"einsum\",\"spec\":\"bhsd,hde->bse\",\"in\":[\"ot\",\"wo\"],\"out\":[\"p\"]},"
    "{\"name\":\"dr\",\"op\":\"dropout\",\"value\":0.1,\"in\":[\"p\"],\"out\":[\"pd\",\"mask\"]},"
    "{\"name\":\"res\",\"op\":\"add\",\"in\":[\"x\",\"pd\"],\"out\":[\"h1\"]},"
    "{\"name\":\"mu\",\"op\":\"mul\",\"in\":[\"h1\",\"xl\"],\"out\":[\"m1\"]},"
    "{\"name\":\"si\",\"op\":\"silu\",\"in\":[\"m1\"],\"out\":[\"s1\"]},"
    "{\"name\":\"ge\",\"op\":\"gelu\",\"in\":[\"s1\"],\"out\":[\"g1\"]},"
    "{\"name\":\"sm\",\"op\":\"softmax\",\"in\":[\"g1\"],\"out\":[\"sm\"]},"
    "{\"name\":\"ca\",\"op\":\"cast\",\"in\":[\"sm\"],\"out\":[\"c32\"]},"
    "{\"name\":\"spl\",\"op\":\"split\",\"in\":[\"c32\"],\"out\":[\"ga\",\"gb\"]},"
    "{\"name\":\"cat\",\"op\":\"concat\",\"in\":[\"ga\",\"gb\"],\"out\":[\"cc\"]},"
    "{\"name\":\"ba\",\"op\":\"add\",\"in\":[\"cc\",\"bias\"],\"out\":[\"yb\"]},"
    "{\"name\":\"back\",\"op\":\"cast\",\"in\":[\"yb\"],\"out\":[\"y\"]}]},"
    "\"head\":{\"inputs\":[\"tokens\",\"targets\"],\"outputs\":[\"loss\"],"
    "\"feeds_layer\":\"h0\",\"takes_layer\":\"hL\",\"tensors\":{"
    "\"tokens\":{\"shape\":[\"b\",\"s\"],\"dtype\":\"int32\"},"
    "\"targets\":{\"shape\":[\"b\",\"s\"],\"dtype\":\"int32\"}," P("table", "[\"v\",\"e\"]") ","
    T("h0", BSE, "act") "," T("hL", BSE, "act") "," P("wl", "[\"e\",\"v\"]") ","
    T("logits", "[\"b\",\"s\",\"v\"]", "fp32") "," T("loss", "[]", "fp32") ","
    T("llse", "[\"b\",\"s\"]", "fp32") "},\"ops\":["
    "{\"name\":\"emb\",\"op\":\"embedding\",\"in\":[\"table\",\"tokens\"],\"out\":[\"h0\"]},"
    "{\"name\":\"lg\",\"op\":\"einsum\",\"spec\":\"bse,ev->bsv\",\"in\":[\"hL\",\"wl\"],\"out\":[\"logits\"]},"
    "{\"name\":\"ce\",\"op\":\"cross_entropy\",\"in\":[\"logits\",\"targets\"],\"out\":[\"loss\",\"llse\"]}]}}";

static remat_graph_t *g;
static uint64_t dimsize[8];

static int setup(void **state) {
    (void)state;
    remat_error_t err;
    remat_error_init(&err);
    if (remat_graph_load_string(graph_text, "<allops>", &g, &err)) {
        char line[512];
        remat_error_format(&err, line, sizeof line);
        fprintf(stderr, "%s\n", line);
        return -1;
    }
    for (size_t i = 0; i < g->ndims; i++) {
        dimsize[i] = g->dims[i].value;
    }
    return 0;
}

static int teardown(void **state) {
    (void)state;
    remat_graph_free(g);
    return 0;
}

static void flops_of(const remat_block_t *b, const char *name, uint64_t *fwd, uint64_t *bwd) {
    uint64_t numel[64], tdim[64][REMAT_MAX_RANK];
    const uint64_t *rows[64];
    assert_true(b->ntensors <= 64);
    for (size_t i = 0; i < b->ntensors; i++) {
        rows[i] = tdim[i];
        numel[i] = 1;
        for (size_t j = 0; j < b->tensors[i].rank; j++) {
            tdim[i][j] = dimsize[b->tensors[i].dim[j]];
            numel[i] *= tdim[i][j];
        }
    }
    /* the block's index view: the layer kind's, or the head's */
    const remat_i_block_view_t v = remat_i_block_view(g, b == &g->kinds[0].block ? 0 : g->nkinds);
    for (size_t j = 0; j < b->nops; j++) {
        if (strcmp(b->ops[j].name, name) == 0) {
            assert_true(remat_i_op_flops(b, &v, j, numel, rows, dimsize, fwd, bwd));
            return;
        }
    }
    fail_msg("no op '%s'", name);
}

static void check(const remat_block_t *b, const char *op, uint64_t fwd, uint64_t bwd) {
    uint64_t f = 0, w = 0;
    flops_of(b, op, &f, &w);
    if (f != fwd || w != bwd) {
        fail_msg("op '%s': forward %llu backward %llu, expected %llu %llu", op,
                 (unsigned long long)f, (unsigned long long)w, (unsigned long long)fwd,
                 (unsigned long long)bwd);
    }
}

static void test_flops_every_kind(void **state) {
    (void)state;
    const remat_block_t *L = &g->kinds[0].block;
    /* [b,s,e] has 24 elements, [b,s,h,d] 60, [b,s,k,d] 30. */
    check(L, "rms", 4 * 24, 8 * 24);         /* rmsnorm 4n / 8n */
    check(L, "ln", 8 * 24, 12 * 24);         /* layernorm 8n / 12n */
    check(L, "qp", 2 * 2 * 3 * 4 * 2 * 5, 2 * 480); /* 2*b*s*e*h*d; x and W grads */
    check(L, "kp", 2 * 2 * 3 * 4 * 1 * 5, 2 * 240);
    check(L, "rope", 3 * 60, 3 * 60);        /* rope 3n / 3n */
    /* flash: QK^T and PV, 2*2*b*h*s*t*d forward, 4 contractions backward;
       a causal kernel skips the blocks above the diagonal: half of each
       (2*2*2*3*3*5 = 360 forward, 720 backward). */
    check(L, "fa", 4 * 2 * 2 * 3 * 3 * 5 / 2, 8 * 2 * 2 * 3 * 3 * 5 / 2);
    check(L, "sc", 60, 60);                  /* scale n / n */
    check(L, "tr", 0, 0);                    /* layout changes do no arithmetic */
    check(L, "rs", 0, 0);
    check(L, "op", 480, 960);
    check(L, "dr", 2 * 24, 24);              /* dropout 2n / n */
    check(L, "res", 24, 0);                  /* add: gradients pass through */
    check(L, "mu", 24, 2 * 24);              /* mul: one product per input */
    check(L, "si", 4 * 24, 6 * 24);          /* silu 4n / 6n */
    check(L, "ge", 8 * 24, 12 * 24);         /* gelu 8n / 12n */
    check(L, "sm", 5 * 24, 4 * 24);          /* softmax 5n / 4n */
    check(L, "ca", 0, 0);
    check(L, "spl", 0, 0);
    check(L, "cat", 0, 0);
    check(L, "ba", 24, 24);                  /* broadcast bias: its gradient sums 24 */
    const remat_block_t *H = &g->head;
    check(H, "emb", 0, 24);                  /* scatter-add of the 24 output grads */
    check(H, "lg", 2 * 2 * 3 * 4 * 7, 2 * 336); /* 336 forward; hL and wl grads */
    check(H, "ce", 4 * 42, 2 * 42);          /* cross-entropy 4n / 2n over logits */
}

static void expect_saves(const remat_block_t *b, const char *op, const char *const *names) {
    for (size_t j = 0; j < b->nops; j++) {
        if (strcmp(b->ops[j].name, op) != 0) {
            continue;
        }
        size_t n = 0;
        while (names[n]) {
            n++;
        }
        if (b->ops[j].nsaves != n) {
            fail_msg("op '%s' saves %zu tensors, expected %zu", op, b->ops[j].nsaves, n);
        }
        for (size_t i = 0; i < n; i++) {
            assert_string_equal(b->tensors[b->ops[j].saves[i]].name, names[i]);
        }
        return;
    }
    fail_msg("no op '%s'", op);
}

static void test_saves_every_kind(void **state) {
    (void)state;
    const remat_block_t *L = &g->kinds[0].block;
    expect_saves(L, "rms", (const char *[]){"x", "rstd", NULL});
    expect_saves(L, "ln", (const char *[]){"x", "mean2", "rstd2", NULL});
    expect_saves(L, "qp", (const char *[]){"xn", NULL}); /* the weight is always there */
    expect_saves(L, "rope", (const char *[]){NULL});
    expect_saves(L, "fa", (const char *[]){"qr", "kk", "vv", "o", "lse", NULL});
    expect_saves(L, "sc", (const char *[]){NULL});
    expect_saves(L, "tr", (const char *[]){NULL});
    expect_saves(L, "op", (const char *[]){"ot", NULL});
    expect_saves(L, "dr", (const char *[]){"mask", NULL});
    expect_saves(L, "res", (const char *[]){NULL});
    expect_saves(L, "mu", (const char *[]){"h1", "xl", NULL});
    expect_saves(L, "si", (const char *[]){"m1", NULL});
    expect_saves(L, "ge", (const char *[]){"s1", NULL});
    expect_saves(L, "sm", (const char *[]){"sm", NULL});
    expect_saves(L, "ca", (const char *[]){NULL});
    expect_saves(L, "cat", (const char *[]){NULL});
    const remat_block_t *H = &g->head;
    expect_saves(H, "emb", (const char *[]){"tokens", NULL});
    expect_saves(H, "ce", (const char *[]){"logits", "targets", "llse", NULL});
}

/* Only a reshape is a view (XLA's bitcast): it shares its input's buffer.
   A transpose or a split (a slice) is an array of its own, as in JAX. */
static void test_only_reshape_shares_buffers(void **state) {
    (void)state;
    const remat_block_t *L = &g->kinds[0].block;
    size_t os = remat_block_find_tensor(L, "os");
    assert_int_equal(L->tensors[remat_block_find_tensor(L, "orr")].storage, os);
    size_t ot = remat_block_find_tensor(L, "ot");
    assert_int_equal(L->tensors[ot].storage, ot);
    size_t ga = remat_block_find_tensor(L, "ga"), gb = remat_block_find_tensor(L, "gb");
    assert_int_equal(L->tensors[ga].storage, ga);
    assert_int_equal(L->tensors[gb].storage, gb);
    /* concat copies: its output has a buffer of its own */
    size_t cc = remat_block_find_tensor(L, "cc");
    assert_int_equal(L->tensors[cc].storage, cc);
    /* a transpose's output is read by the out projection's backward: a
       residual of its own; its input os is read by no backward */
    assert_true(L->tensors[ot].residual);
    assert_false(L->tensors[os].residual);
}

static void test_gradients_and_batch_dims(void **state) {
    (void)state;
    const remat_block_t *L = &g->kinds[0].block;
    assert_false(L->tensors[remat_block_find_tensor(L, "mask")].needs_grad);  /* bool */
    assert_false(L->tensors[remat_block_find_tensor(L, "lse")].needs_grad);   /* unread */
    assert_true(L->tensors[remat_block_find_tensor(L, "x")].needs_grad);
    assert_true(L->tensors[remat_block_find_tensor(L, "wq")].needs_grad);
    const remat_block_t *H = &g->head;
    assert_false(H->tensors[remat_block_find_tensor(H, "tokens")].needs_grad);
    assert_true(H->tensors[remat_block_find_tensor(H, "table")].needs_grad);
    assert_int_equal(g->head_npre, 1); /* only the embedding runs before the layers */
    for (size_t j = 0; j < L->nops; j++) {
        if (strcmp(L->ops[j].name, "qp") == 0) {
            assert_true(remat_op_einsum_no_batch_dims(&L->ops[j]));
        }
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flops_every_kind),
        cmocka_unit_test(test_saves_every_kind),
        cmocka_unit_test(test_only_reshape_shares_buffers),
        cmocka_unit_test(test_gradients_and_batch_dims),
    };
    return cmocka_run_group_tests_name("ops", tests, setup, teardown);
}
