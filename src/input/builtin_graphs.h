/* SPDX-License-Identifier: MIT */
/*
 * builtin_graphs.h: the built-in graphs as C data, generated at build time
 * (tools/gen_graphs.c) from the graph texts the build embeds, so that
 * resolving a built-in graph parses no JSON and runs no igraph analysis.
 *
 * Invariants:
 *  - Each entry is what remat_graph_load_string makes of the embedded text
 *    of the built-in graph it names, with REMAT_I_BUILTIN_GRAPH_SOURCE as
 *    the source: every field, the derived ones (producer, storage, order,
 *    last_use, needs_grad, residual, saves, has_backward, head_npre)
 *    included. The generator loads each text with the loader itself, and a
 *    text that does not load fails the build. tests/unit/test_builtin_graphs.c
 *    compares every entry with a fresh load, field by field.
 *  - The data holds no pointer: a static PIE relocates every pointer of its
 *    data at start-up, writing to each page that holds one, so pointers in
 *    the data would cost every command, `--help` included, page faults.
 *    The tensors and ops are the graph's own structs with every pointer
 *    field NULL; their strings are offsets into one pool, and a block or
 *    graph names its tensors, ops, index arrays, dims and kinds by where
 *    they start in one array of each (remat_i_static_tensors, ...), which
 *    hold the graphs one after the other.
 *  - A string is remat_i_str_t, an offset into remat_i_graph_strings; 0 is
 *    NULL (the pool starts with a NUL no string uses). Equal strings share
 *    their bytes.
 *  - Nothing here is freed or written: resolve.c copies an entry into a
 *    graph of its own (remat_i_graph_from_static) and caches that.
 */
#ifndef REMAT_BUILTIN_GRAPHS_H
#define REMAT_BUILTIN_GRAPHS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "remat/model/graph.h"

/* The source a built-in graph carries (and names in errors), with its
   built-in name: the same for the generator's load and the run time's. */
#define REMAT_I_BUILTIN_GRAPH_SOURCE "built-in graph '%s'"

typedef uint32_t remat_i_str_t;

/* A tensor's strings, one per string field of remat_tensor_t. */
typedef struct remat_i_tensor_strs {
    remat_i_str_t name, gather_group;
    remat_i_str_t tags[REMAT_MAX_TAGS];
    remat_i_str_t axes[REMAT_MAX_RANK];
} remat_i_tensor_strs_t;

/* A remat_block_t: its tensors are remat_i_static_tensors[tensors ..
   tensors + ntensors), with their strings at the same indices of
   remat_i_static_tensor_strs; its ops remat_i_static_ops[ops ..], with
   their names in remat_i_static_op_names; order (nops entries), inputs and
   outputs start at those indices of remat_i_static_sizes. */
typedef struct remat_i_static_block {
    uint32_t ntensors, nops, ninputs, noutputs;
    uint32_t tensors, ops, order, inputs, outputs;
} remat_i_static_block_t;

typedef struct remat_i_static_dim {
    remat_i_str_t name, from, div, axis, weight_axis;
    uint64_t value;
} remat_i_static_dim_t;

typedef struct remat_i_static_kind {
    remat_i_str_t name, block_name, first, every, window;
    uint64_t first_n, every_n;
    bool keeps_offloads, own_residuals, gathers_ahead;
    remat_i_static_block_t block;
} remat_i_static_kind_t;

/* A graph: its dims are remat_i_static_dims[dims .. dims + ndims), its
   kinds remat_i_static_kinds[kinds .. kinds + nkinds). */
typedef struct remat_i_static_graph {
    remat_i_str_t builtin; /* its name in the built-in table ("llama.flash") */
    remat_i_str_t name, description, source;
    uint32_t ndims, dims, nkinds, kinds;
    bool expert_parallel, has_head;
    remat_i_static_block_t head;
    size_t head_feeds, head_takes, head_npre;
} remat_i_static_graph_t;

/* Each array ends with a zeroed entry, so that none is empty. */
extern const char remat_i_graph_strings[];
extern const remat_tensor_t remat_i_static_tensors[];
extern const remat_i_tensor_strs_t remat_i_static_tensor_strs[];
extern const remat_op_t remat_i_static_ops[];
extern const remat_i_str_t remat_i_static_op_names[];
extern const size_t remat_i_static_sizes[];
extern const remat_i_static_dim_t remat_i_static_dims[];
extern const remat_i_static_kind_t remat_i_static_kinds[];
extern const remat_i_static_graph_t remat_i_static_graphs[];
extern const size_t remat_i_nstatic_graphs;

/* The string @p s of the pool, or NULL. */
static inline const char *remat_i_static_str(remat_i_str_t s) {
    return s ? remat_i_graph_strings + s : NULL;
}

/* The entry of built-in graph @p name, or NULL. */
const remat_i_static_graph_t *remat_i_static_graph_find(const char *name);

/**
 * A new graph equal to @p s, owning all of its strings and arrays (free
 * with remat_graph_free); REMAT_E_NOMEM with @p err set when it cannot be
 * allocated. In resolve.c.
 */
remat_status_t remat_i_graph_from_static(const remat_i_static_graph_t *s, remat_graph_t **out,
                                         remat_error_t *err);

#endif
