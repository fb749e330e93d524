/* SPDX-License-Identifier: MIT */
/*
 * test_graph_index.c: the graph's index (graph_index.c) and binding by its
 * ids. A generated chain of 48 matmuls has 97 shapes and 145 logical
 * names, more than a graph of MaxText's has (at most 42 and 27): its last
 * tensors' ids are numbered as the index says, and their sizes, bound by
 * id, are checked by hand.
 */
#include "remat/input/graph_file.h"
#include "fixtures.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/graph_index.h"

#define STEPS 48

/* Dim k's size: d0 is 96, which three shards divide and five do not. */
static unsigned dim_size(size_t k) {
    return k == 0 ? 96 : (unsigned)(8 * (k + 1));
}

static void put(char **p, char *end, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(*p, (size_t)(end - *p), fmt, ap);
    va_end(ap);
    assert_true(n >= 0 && n < end - *p);
    *p += n;
}

/* x0 [b, d0] -> x1 = x0 @ w0 [b, d1] -> ... -> x48 = x47 @ w47 [b, d0]: the
   dims d0..d47 cycle, so the output has the input's dims. Tensors are
   listed x0, w0, x1, w1, ...: shape ids alternate. Each xk (k > 0) names
   its own axes [activation_batch, mk], each wk [nka, nkb]; w47 names
   [embed, mlp], the last logical names. */
static char *chain_graph(void) {
    const size_t cap = 64 * 1024;
    char *text = malloc(cap), *p = text, *end = text + cap;
    assert_non_null(text);
    put(&p, end, "{\"format\":\"remat-graph/1\",\"name\":\"chain\",\"dims\":{"
                 "\"b\":{\"from\":\"per_device_batch_size\",\"axis\":\"activation_batch\"}");
    for (size_t k = 0; k < STEPS; k++) {
        put(&p, end, ",\"d%zu\":{\"value\":%u}", k, dim_size(k));
    }
    put(&p, end, "},\"layer\":{\"inputs\":[\"x0\"],\"outputs\":[\"x%d\"],\"tensors\":{", STEPS);
    put(&p, end, "\"x0\":{\"shape\":[\"b\",\"d0\"],\"dtype\":\"act\"}");
    for (size_t k = 0; k < STEPS; k++) {
        const size_t next = (k + 1) % STEPS;
        if (k + 1 < STEPS) {
            put(&p, end, ",\"w%zu\":{\"shape\":[\"d%zu\",\"d%zu\"],\"dtype\":\"weight\","
                         "\"param\":true,\"axes\":[\"n%zu_a\",\"n%zu_b\"]}",
                k, k, next, k, k);
        } else {
            put(&p, end, ",\"w%zu\":{\"shape\":[\"d%zu\",\"d%zu\"],\"dtype\":\"weight\","
                         "\"param\":true,\"axes\":[\"embed\",\"mlp\"]}",
                k, k, next);
        }
        put(&p, end, ",\"x%zu\":{\"shape\":[\"b\",\"d%zu\"],\"dtype\":\"act\","
                     "\"axes\":[\"activation_batch\",\"m%zu\"]}",
            k + 1, next, k + 1);
    }
    put(&p, end, "},\"ops\":[");
    for (size_t k = 0; k < STEPS; k++) {
        put(&p, end, "%s{\"name\":\"f%zu\",\"op\":\"einsum\",\"spec\":\"bi,ij->bj\","
                     "\"in\":[\"x%zu\",\"w%zu\"],\"out\":[\"x%zu\"]}",
            k ? "," : "", k, k, k, k + 1);
    }
    put(&p, end, "]}}");
    return text;
}

static const remat_tensor_row_t *row_of(const fx_run_t *f, const char *name) {
    const size_t i = fx_tensor(f->graph, name);
    assert_true(i != REMAT_NONE && f->r.nprofiles > 0);
    return &f->r.profiles[0].tensors[i];
}

/* The index numbers the generator's shapes and names in tensor order. */
static void test_chain_is_numbered(void **state) {
    (void)state;
    char *text = chain_graph();
    remat_graph_t *g = NULL;
    remat_error_t err;
    remat_error_init(&err);
    assert_int_equal(remat_graph_load_string(text, "<chain>", &g, &err), REMAT_OK);
    /* x0, then each step's wk [dk, dk+1] and xk+1 [b, dk+1] with axes of
       its own (x48 has x0's dims, not its axes) */
    assert_int_equal(g->index->nshapes, 2 * STEPS + 1);
    /* b's activation_batch; per step k < 47 nka, nkb and mk+1; the last
       step m48, embed and mlp */
    assert_int_equal(g->index->nlogical, 1 + 3 * (STEPS - 1) + 3);
    const remat_i_block_view_t v = remat_i_block_view(g, 0);
    const size_t w47 = fx_tensor(g, "w47");
    assert_int_equal(v.shape[w47], 2 * STEPS - 1);
    assert_int_equal(v.axes[w47 * REMAT_MAX_RANK], 3 * STEPS - 2);     /* embed */
    assert_int_equal(v.axes[w47 * REMAT_MAX_RANK + 1], 3 * STEPS - 1); /* mlp */
    assert_int_equal(v.axes[w47 * REMAT_MAX_RANK + 2], REMAT_NONE);
    remat_graph_free(g);
    free(text);
}

/* The last tensors bind by their ids: w47 (embed, mlp) sharded over
   tensor=2 on its mlp dim, x47 whole. */
static void test_binding_by_id(void **state) {
    (void)state;
    char *text = chain_graph();
    const char *args[] = {"model_name=llama3-8b", "per_device_batch_size=2", "num_devices=2",
                          "ici_tensor_parallelism=2", "ici_fsdp_parallelism=1", NULL};
    fx_run_t *f = fx_analyze_ok(text, args);
    const remat_tensor_row_t *w = row_of(f, "w47"), *x = row_of(f, "x47");
    const uint64_t batch = f->r.dim_size[0]; /* b: activation_batch, not on tensor */
    const unsigned wb = remat_config_dtype_bytes(&f->cfg, REMAT_DTYPE_WEIGHT);
    const unsigned ab = remat_config_dtype_bytes(&f->cfg, REMAT_DTYPE_ACT);
    assert_true(batch > 0 && wb > 0 && ab > 0);
    assert_int_equal(w->shape[0], dim_size(STEPS - 1));
    assert_int_equal(w->shape[1], dim_size(0) / 2);
    assert_int_equal(w->shape[2], 0);
    assert_int_equal(x->shape[0], batch);
    assert_int_equal(x->shape[1], dim_size(STEPS - 1));
    assert_int_equal(w->bytes, (uint64_t)dim_size(STEPS - 1) * (dim_size(0) / 2) * wb);
    assert_int_equal(x->bytes, batch * dim_size(STEPS - 1) * ab);
    fx_free(f);
    free(text);
}

/* A shape numbered last reports a dim its shards do not divide: three
   tensor shards divide d0 (96), five do not. */
static void test_divide_error_by_id(void **state) {
    (void)state;
    char *text = chain_graph();
    const char *args[] = {"model_name=llama3-8b", "num_devices=3", "ici_tensor_parallelism=3",
                          "ici_fsdp_parallelism=1", NULL};
    fx_run_t *f = fx_analyze(text, args);
    assert_int_equal(f->st, REMAT_OK); /* mlp (tensor) shards d0 only */
    fx_free(f);
    const char *bad[] = {"model_name=llama3-8b", "num_devices=5", "ici_tensor_parallelism=5",
                         "ici_fsdp_parallelism=1", NULL};
    f = fx_analyze(text, bad);
    assert_int_equal(f->st, REMAT_E_CONFIG);
    assert_non_null(strstr(f->err.text, "tensor 'w47' dim 'd0' of 96 does not divide over its 5 shards"));
    fx_free(f);
    free(text);
}

/* A graph without its index (one the library did not make) is an error,
   not a crash. */
static void test_graph_without_index(void **state) {
    (void)state;
    char *text = chain_graph();
    const char *args[] = {"model_name=llama3-8b", "num_devices=1", NULL};
    fx_run_t *f = fx_analyze_ok(text, args);
    const struct remat_graph_index *index = f->graph->index;
    f->graph->index = NULL;
    remat_result_t r;
    remat_result_init(&r);
    remat_error_t err;
    remat_error_init(&err);
    assert_int_equal(remat_analyze(f->graph, &f->cfg, f->policy, &f->hw, &r, &err),
                     REMAT_E_GRAPH);
    assert_non_null(strstr(err.text, "the graph has no index"));
    assert_int_equal(r.nlayers, 0);
    f->graph->index = index;
    fx_free(f);
    free(text);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chain_is_numbered),
        cmocka_unit_test(test_binding_by_id),
        cmocka_unit_test(test_divide_error_by_id),
        cmocka_unit_test(test_graph_without_index),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
