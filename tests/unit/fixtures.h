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

/* Fails the test unless @p a and @p b are equal graphs, every field (the
   derived ones included), and share no string or array: either may be
   freed or changed alone. How each is allocated (one_block) is not
   compared: a load and a built-in graph from remat_resolve are equal. */
void fx_graphs_equal(const remat_graph_t *a, const remat_graph_t *b);

/* Index of a layer tensor by name; fails the test if absent. */
size_t fx_tensor(const remat_graph_t *g, const char *name);

/* The tiny two-matmul layer of test_sim.c, as JSON. */
extern const char *const fx_mini_graph;

/* A gated (SwiGLU-like) MLP layer whose SiLU output XLA fuses, as JSON. */
extern const char *const fx_gated_graph;

/* A one-matmul layer under a head (embedding; logits and loss), with
   MaxText's logical axes on the head's params, as JSON. */
extern const char *const fx_head_graph;

#endif
