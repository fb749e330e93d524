/* SPDX-License-Identifier: MIT */
/* fixtures.h: shared helpers for the cmocka unit tests. */
#ifndef REMAT_TEST_FIXTURES_H
#define REMAT_TEST_FIXTURES_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "remat/input/config.h"
#include "remat/model/graph.h"
#include "remat/model/hw.h"
#include "remat/model/policy.h"
#include "remat/sim/sim.h"
#include "remat/solve/solve.h"

/* A resolved analysis: config from key=value strings, built-ins resolved. */
typedef struct fx_run {
    remat_config_t cfg;
    remat_graph_t *graph;
    remat_policy_t *policy;
    remat_hw_t hw;
    remat_result_t r;
    remat_error_t err;
    remat_status_t st;
} fx_run_t;

/* Builds the config from a NULL-terminated list of "key=value" and analyzes.
   The graph may be given as JSON text (graph_text != NULL) instead. */
fx_run_t *fx_analyze(const char *graph_text, const char *const *args);

/* fx_analyze that fails the test, printing the error line, unless it succeeds. */
fx_run_t *fx_analyze_ok(const char *graph_text, const char *const *args);

/* fx_analyze_ok with two NULL-terminated lists of "key=value" joined (@p extra
   may be NULL). */
fx_run_t *fx_analyze_with(const char *graph_text, const char *const *base,
                          const char *const *extra);
void fx_free(fx_run_t *f);

/* What would make the analyzed run @p f pass, found into @p fx
   (initialized; released first by remat_fixes_find); asserts it is found. */
void fx_find_fixes(fx_run_t *f, remat_fixes_t *fx);

/* Fails the test unless @p a and @p b are equal graphs, every field (the
   derived ones included), and share no string or array: either may be
   freed or changed alone. How each is allocated (one_block) is not
   compared: a load and a built-in graph from remat_resolve are equal. */
void fx_graphs_equal(const remat_graph_t *a, const remat_graph_t *b);

/* Index of a layer tensor by name; fails the test if absent. */
size_t fx_tensor(const remat_graph_t *g, const char *name);

/* Index of a head tensor by name, and the head op that makes it; fail the
   test if absent. */
size_t fx_head_tensor(const remat_graph_t *g, const char *name);
const remat_op_t *fx_head_maker(const remat_graph_t *g, const char *name);

/* Fails the test unless the run of @p args (NULL-terminated "key=value")
   counts @p total params, within 0.5% of @p published (a model card's
   total), on graph @p graph (NULL: any). */
void fx_total_params(const char *const *args, const char *graph, uint64_t total,
                     double published);

/* Fails the test unless the run of @p args is refused with an error whose
   text contains @p needle. */
void fx_refused(const char *const *args, const char *needle);

/* Fails the test unless every param of the analyzed run @p f is whole and
   fp32 (one device, weight_dtype's default), @p frozen of them hold no
   gradient, and AdamW's two moments are held for every param. */
void fx_frozen_fp32(const fx_run_t *f, uint64_t frozen);

/* The forward FLOPs of the run of @p a less those of @p b (each a
   NULL-terminated "key=value" list): what a variant adds to a model. */
int64_t fx_forward_flops_less(const char *const *a, const char *const *b);

/* The tiny two-matmul layer of test_sim.c, as JSON. */
extern const char *const fx_mini_graph;

/* A gated (SwiGLU-like) MLP layer whose SiLU output XLA fuses, as JSON. */
extern const char *const fx_gated_graph;

/* A one-matmul layer under a head (embedding; logits and loss), with
   MaxText's logical axes on the head's params, as JSON. */
/* The head of fx_head_graph as a graph's "head" member (its JSON text, no
   comma before it): emb: h0 = table[tokens]; lg: logits = hL @ wl;
   ce: loss, lse = cross_entropy(logits, targets). For tests that pair it
   with a layer of their own. */
#define FX_HEAD_JSON \
    "\"head\":{\"inputs\":[\"tokens\",\"targets\"],\"outputs\":[\"loss\"]," \
    "\"feeds_layer\":\"h0\",\"takes_layer\":\"hL\",\"tensors\":{" \
    "\"tokens\":{\"shape\":[\"b\"],\"dtype\":\"int32\"}," \
    "\"targets\":{\"shape\":[\"b\"],\"dtype\":\"int32\"}," \
    "\"table\":{\"shape\":[\"v\",\"e\"],\"dtype\":\"weight\",\"param\":true," \
    "\"axes\":[\"vocab\",\"embed_vocab\"]}," \
    "\"h0\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"}," \
    "\"hL\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"}," \
    "\"wl\":{\"shape\":[\"e\",\"v\"],\"dtype\":\"weight\",\"param\":true," \
    "\"axes\":[\"embed_vocab\",\"vocab\"]}," \
    "\"logits\":{\"shape\":[\"b\",\"v\"],\"dtype\":\"act\"}," \
    "\"loss\":{\"shape\":[],\"dtype\":\"fp32\"}," \
    "\"lse\":{\"shape\":[\"b\"],\"dtype\":\"fp32\"}},\"ops\":[" \
    "{\"name\":\"emb\",\"op\":\"embedding\",\"in\":[\"table\",\"tokens\"],\"out\":[\"h0\"]}," \
    "{\"name\":\"lg\",\"op\":\"einsum\",\"spec\":\"be,ev->bv\",\"in\":[\"hL\",\"wl\"]," \
    "\"out\":[\"logits\"]}," \
    "{\"name\":\"ce\",\"op\":\"cross_entropy\",\"in\":[\"logits\",\"targets\"]," \
    "\"out\":[\"loss\",\"lse\"]}]}"

extern const char *const fx_head_graph;

#endif
