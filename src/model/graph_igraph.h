/* SPDX-License-Identifier: MIT */
/*
 * graph_igraph.h: the igraph view of a block, shared by the graph checks
 * (graph.c) and the solver (solve.c). The only internal header that pulls
 * in igraph; no public header does.
 */
#ifndef REMAT_GRAPH_IGRAPH_H
#define REMAT_GRAPH_IGRAPH_H

#include <stdbool.h>

#include <igraph.h>

#include "remat/model/graph.h"

/* The block's op graph for igraph: tensors are vertices [0, nt), ops
   [nt, nt + nops); edges run tensor -> reading op -> written tensor. The
   caller destroys @p ig. */
igraph_error_t remat_i_block_igraph(const remat_block_t *b, igraph_t *ig);

/* Marks in @p hit every vertex reachable from @p roots following @p mode,
   through vertices in @p allowed (NULL: all). */
igraph_error_t remat_i_reach(const igraph_t *ig, const igraph_vector_int_t *roots,
                             igraph_neimode_t mode, const igraph_vector_int_t *allowed, bool *hit);

#endif
