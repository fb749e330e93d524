/* SPDX-License-Identifier: MIT */
/*
 * graph_index.h: what the simulator reads of a graph's blocks that no
 * config and no plan changes, derived once when the graph is made (its
 * loader, or the unpacking of a built-in) instead of once per analysis:
 * each op's position, each buffer's lifetimes and the free lists that
 * list buffers by the position that frees them, the tensors that own a
 * buffer, the fusable tensors, each position's owning outputs, each op's
 * backward kind, the checkpoint names as small integers (and their
 * texts), the logical axis names and the tensors' shapes as numbers with
 * their rules under MaxText's default rules, each dim's config fields, and
 * each einsum's subscripts as its FLOP count reads them.
 *
 * The index is one allocation that holds no pointer: every array is at a
 * byte offset from its start, so a copy of it is a memcpy (a one-block
 * graph carries its index inside its block; resolve.c). The graph owns it
 * (graph.h, `index`). Not public.
 */
#ifndef REMAT_GRAPH_INDEX_H
#define REMAT_GRAPH_INDEX_H

#include <stdbool.h>
#include <stddef.h>

#include "remat/model/graph.h"
#include "remat/model/mesh.h"

/* Checkpoint-name ids: these two first, then the layer kinds' distinct
   tags in kind, tensor and tag order. */
#define REMAT_I_NAME_INPUT 0   /* "decoder_layer_input": the layer input's buffer */
#define REMAT_I_NAME_UNNAMED 1 /* "(unnamed)": a buffer no tag names */

/* One block's word arrays, each with its length in the block's tensors
   (nt) and ops (no), in the order they are laid out:
     pos       per op: its position in the block's order
     free_fwd  per buffer: the forward position after which it is freed
     bwd_use   per buffer: the smallest backward position reading it
     fwd_head, bwd_head  per position: the lists of the two above
     fwd_next, bwd_next  per buffer: the lists' links
     owners    the tensors that own their buffer, ascending (nowners)
     fusable   the fusable tensors in fusion's order, last op first (nfusable)
     out_at, outs  outs[out_at[p] .. out_at[p + 1]): position p's owning outputs
     tag_id    per tensor, REMAT_MAX_TAGS each: its tags' name ids (layer kinds)
     op_name   per op: the name id of its re-run FLOPs (layer kinds)
     inplace   per op: whether its backward is elementwise
     shape     per tensor: its shape id
     tflags    per tensor: its dtype and REMAT_I_T_* flags, in one word
     storage   per tensor: the tensor whose buffer it uses (its `storage`)
     axes      per tensor, REMAT_MAX_RANK each: its `axes` entries' logical ids
     ngrad     per op: how many of its inputs need a gradient
     first_param  per op: the position of its first param input (nin: none)
     ein_at, ein  ein[ein_at[j] .. ein_at[j + 1]): einsum op j's subscripts as
               the FLOP count reads them (remat_i_ein_*), none for other ops;
               ne, the block's total, is remat_i_ein_words
   and one byte array, fusable_flag: per tensor, whether it may stay
   unmaterialized. */
#define REMAT_I_BLOCK_ARRAYS(X)                                                                \
    X(pos, no) X(free_fwd, nt) X(bwd_use, nt) X(fwd_head, no) X(bwd_head, no)                  \
    X(fwd_next, nt) X(bwd_next, nt) X(owners, nt) X(fusable, nt) X(out_at, no + 1)             \
    X(outs, nt) X(tag_id, REMAT_MAX_TAGS * nt) X(op_name, no) X(inplace, no) X(shape, nt)     \
    X(tflags, nt) X(storage, nt) X(axes, REMAT_MAX_RANK * nt) X(ngrad, no) X(first_param, no)  \
    X(ein_at, no + 1) X(ein, ne)

/* An einsum's subscripts for its FLOP count (ops.c): every appearance of
   each of its letters but the ragged ones, grouped by letter in the order
   the letters first appear (the inputs', then the output's), a word each:
   the operand (an input's position, or nin for the output) and the dim
   that carries it, and whether it starts its letter's group. The count is
   2 x, letter by letter in that order, the largest size of its group. */
#define REMAT_I_EIN_NEW ((size_t)1)
static inline size_t remat_i_ein_word(size_t operand, size_t dim, bool first) {
    return operand << 16 | dim << 8 | (first ? REMAT_I_EIN_NEW : 0);
}
static inline size_t remat_i_ein_operand(size_t w) {
    return w >> 16;
}
static inline size_t remat_i_ein_dim(size_t w) {
    return (w >> 8) & 0xff;
}

/* The words of block @p b's `ein` (every subscript letter of its einsums). */
size_t remat_i_ein_words(const remat_block_t *b);

/* One block's arrays, as byte offsets from the index's start. */
typedef struct remat_i_block_index {
    size_t nowners, nfusable;
#define REMAT_I_OFFSET(f, n) size_t f;
    REMAT_I_BLOCK_ARRAYS(REMAT_I_OFFSET)
#undef REMAT_I_OFFSET
    size_t fusable_flag;
} remat_i_block_index_t;

/* A tensor's flags word (tflags): its dtype in the low byte, then these,
   so that binding reads a word a tensor, not the tensor's 240 bytes. */
#define REMAT_I_T_DTYPE ((size_t)0xff)
#define REMAT_I_T_PARAM ((size_t)1 << 8)
#define REMAT_I_T_GRAD ((size_t)1 << 9)  /* needs_grad */
#define REMAT_I_T_GROUP ((size_t)1 << 10) /* has a gather group */
#define REMAT_I_T_OWN ((size_t)1 << 11)   /* owns its buffer (storage is itself) */

/* Logical axis names (a dim's `axis` and `weight_axis`, a tensor's `axes`)
   are numbered by text from 0, in dim order, then block by block; a NULL
   name is REMAT_NONE. Shapes are numbered from 0 in block order: tensors
   of one shape have the same dims, param flag and `axes` flag, and the
   same `axes` names when they have them, so they bind alike. */
typedef struct remat_graph_index {
    size_t size;      /* bytes, this header included */
    size_t nnames;    /* name ids */
    size_t names;     /* per id, REMAT_NAME_LEN bytes: its text, NULs after it */
    size_t nlogical;  /* logical name ids */
    size_t nshapes;   /* shape ids */
    size_t dim_axis;  /* per dim, two words: its `axis` and `weight_axis` logical ids */
    size_t dim_field; /* per dim, REMAT_I_DIM_STRIDE words: its `from` and `div` keys'
                         fields (the index's size-field lookup; 0: ask remat_config_size),
                         then its `from` key's role (REMAT_I_DIM_*) */
    size_t logical_hash; /* per logical id: remat_mesh_name_hash of its text */
    size_t logical_rules; /* per logical id, REMAT_I_RULE_STRIDE words: its rules under
                             the default mesh rules, REMAT_RULE_WORDS words as
                             remat_mesh_default_name_rules gives them, then the
                             first one's axes (for a mesh whose `default_rules` is set) */
    size_t shape_first;   /* per shape id: whether its tensors take each dim's first
                             rule under the default mesh rules (remat_mesh_first_rules) */
    remat_i_block_index_t block[REMAT_MAX_KINDS + 1]; /* the kinds, then the head */
} remat_graph_index_t;

/* The words per dim of the index's dim_field, and the roles of a dim's
   `from` key that binding treats apart: named once here, so that binding
   compares no key's text. */
#define REMAT_I_DIM_STRIDE 3
enum {
    REMAT_I_DIM_PLAIN = 0,
    REMAT_I_DIM_MOE_BUFFER, /* moe_buffer_factor: the expert-parallel receive buffer's */
    REMAT_I_DIM_BATCH,      /* per_device_batch_size: divided over the pipeline's micro-batches */
    REMAT_I_DIM_EXPERT_SHARDS /* expert_shards: the expert mesh axis's size */
};

/* The words per logical id of the index's logical_rules. */
#define REMAT_I_RULE_STRIDE (REMAT_RULE_WORDS + 1)

/* A block's arrays as pointers (remat_i_block_view). */
typedef struct remat_i_block_view {
    size_t nowners, nfusable;
#define REMAT_I_POINTER(f, n) const size_t *f;
    REMAT_I_BLOCK_ARRAYS(REMAT_I_POINTER)
#undef REMAT_I_POINTER
    const unsigned char *fusable_flag;
} remat_i_block_view_t;

/* The index's per-dim and per-logical-name arrays of graph @p g. */
static inline const size_t *remat_i_index_words(const remat_graph_t *g, size_t offset) {
    return (const size_t *)(const void *)((const char *)g->index + offset);
}

/* Where config key @p key's size lives in the config the graph will be
   bound to: a byte offset into it, or 0 when the size is derived (asked of
   the config when bound). The input layer owns the config and passes its
   lookup (remat_i_config_size_field): the model layer knows key names,
   never the config's layout. */
typedef size_t (*remat_i_size_field_fn)(const char *key);

/* The index of graph @p g (whose blocks are analyzed: remat_i_graph_analyze)
   into *@p out, a new allocation the caller owns, each dim's size keys
   placed by @p field. REMAT_E_NOMEM when it cannot be allocated. */
remat_status_t remat_i_graph_index(const remat_graph_t *g, remat_i_size_field_fn field,
                                   remat_graph_index_t **out, remat_error_t *err);

/* The earlier of positions @p a and @p b, either REMAT_NONE (none). */
static inline size_t remat_i_min_pos(size_t a, size_t b) {
    return a == REMAT_NONE ? b : b == REMAT_NONE ? a : (a < b ? a : b);
}

/* Lists buffers 0..@p n by key: buffer i in the list of position key[i]
   (none when key[i] is REMAT_NONE), through @p head (per position, @p npos
   of them) and @p next, each list ascending. */
void remat_i_bucket(const size_t *key, size_t n, size_t npos, size_t *head, size_t *next);

/* Block @p k of graph @p g: layer kind @p k, or the head when @p k is
   nkinds (the numbering the index's blocks and the analyzer use). */
static inline const remat_block_t *remat_i_block_at(const remat_graph_t *g, size_t k) {
    return k < g->nkinds ? &g->kinds[k].block : &g->head;
}

/* Block @p k's arrays: layer kind @p k, or the head when @p k is nkinds. */
remat_i_block_view_t remat_i_block_view(const remat_graph_t *g, size_t k);

/* The text of name id @p id (below the index's nnames), in REMAT_NAME_LEN
   bytes: NULs follow it to the end. */
const char *remat_i_index_name(const remat_graph_t *g, size_t id);

#endif
