/* SPDX-License-Identifier: MIT */
/*
 * graph_internal.h: shared between the graph loader (graph_load.c), the graph
 * analysis (graph.c), the op-kind rules (ops.c) and the graph's index
 * (graph_index.c). Not public.
 */
#ifndef REMAT_GRAPH_INTERNAL_H
#define REMAT_GRAPH_INTERNAL_H

#include <stdint.h>

#include "remat/model/graph.h"

bool remat_i_opkind_parse(const char *s, remat_opkind_t *out);

/* Parses an einsum spec into op->subs; needs op->nin already set. */
remat_status_t remat_i_einsum_parse(const char *spec, remat_op_t *op, const char *source,
                                    const char *path, remat_error_t *err);

/* Checks an op's arity, shapes and dtypes against its kind's rule. */
remat_status_t remat_i_op_check(const remat_graph_t *g, const remat_block_t *b,
                                const remat_op_t *op, const char *source, const char *path,
                                remat_error_t *err);

/* Fills op->saves from its kind's rule (unless the graph overrode it). */
void remat_i_op_default_saves(const remat_block_t *b, remat_op_t *op);

/* Whether the kind's outputs alias its first input (no copy, no bytes). */
bool remat_i_opkind_is_view(remat_opkind_t k);

/* Forward and backward FLOPs of op @p j of block @p b (@p v its index
   view, graph_index.h) from bound element counts (per tensor) and dim
   sizes (per graph dim). False on 64-bit overflow. */
struct remat_i_block_view;
bool remat_i_op_flops(const remat_block_t *b, const struct remat_i_block_view *v, size_t j,
                      const uint64_t *numel, const uint64_t *const *tdim,
                      const uint64_t *dimsize, uint64_t *fwd, uint64_t *bwd);

/* Whether two dims have the same size (same config key or constant): a
   tensor may carry either where an op needs equal sizes. */
bool remat_i_dims_equivalent(const remat_graph_t *g, size_t a, size_t b);

/* Derives producers, order, storage, last uses, gradients, residuals. */
remat_status_t remat_i_graph_analyze(remat_graph_t *g, const char *source, remat_error_t *err);

#endif
