/* SPDX-License-Identifier: MIT */
/*
 * graph_index.c: the index of a graph's blocks (graph_index.h), derived
 * from the graph alone.
 *
 * Invariants:
 *  - the index depends only on the graph's blocks, never on a config or a
 *    plan: every analysis of the graph reads the same one;
 *  - it holds no pointer, only offsets from its start, and it is one
 *    allocation of `size` bytes, so copying those bytes copies it;
 *  - each free list holds the buffers whose key is its position, ascending
 *    (remat_i_bucket pushes last to first), the order a walk over every
 *    buffer at every position would meet them;
 *  - name ids number distinct texts: two tags of one text share an id.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "model/graph_index.h"
#include "model/graph_internal.h"
#include "remat/model/mesh.h"
#include "base/util.h"

/* The words of a block's arrays (REMAT_I_BLOCK_ARRAYS). */
static size_t block_words(const remat_block_t *b) {
    const size_t nt = b->ntensors, no = b->nops, ne = remat_i_ein_words(b);
#define WORDS(f, n) +(n)
    return 0 REMAT_I_BLOCK_ARRAYS(WORDS);
#undef WORDS
}

/* Einsum op @p op's words (REMAT_I_EIN_NEW and remat_i_ein_word) into
   @p out, or only counted when @p out is NULL. A letter names one dim of
   an operand (remat_i_op_check), so its appearances from its first on are
   its group. Letters are 'A' to 'z' (remat_i_einsum_parse): a bit each. */
static size_t einsum_words(const remat_op_t *op, size_t *out) {
    size_t n = 0;
    uint64_t done = 0;
    for (size_t k = 0; k <= op->nin; k++) {
        for (const char *c = op->subs[k]; *c; c++) {
            const unsigned l = (unsigned)((unsigned char)*c - 'A');
            assert(l < 64);
            if (done >> l & 1 || strchr(op->ragged, *c)) {
                continue; /* met, or a ragged index: it does not multiply */
            }
            done |= (uint64_t)1 << l;
            for (size_t k2 = k; k2 <= op->nin; k2++) {
                const char *at = strchr(op->subs[k2], *c);
                if (at && out) {
                    out[n] = remat_i_ein_word(k2, (size_t)(at - op->subs[k2]), k2 == k);
                }
                n += at != NULL;
            }
        }
    }
    return n;
}

size_t remat_i_ein_words(const remat_block_t *b) {
    size_t n = 0;
    for (size_t j = 0; j < b->nops; j++) {
        n += b->ops[j].kind == REMAT_OP_EINSUM ? einsum_words(&b->ops[j], NULL) : 0;
    }
    return n;
}

void remat_i_bucket(const size_t *key, size_t n, size_t npos, size_t *head, size_t *next) {
    for (size_t p = 0; p < npos; p++) {
        head[p] = REMAT_NONE;
    }
    for (size_t i = n; i-- > 0;) {
        next[i] = REMAT_NONE;
        if (key[i] != REMAT_NONE) {
            assert(key[i] < npos);
            next[i] = head[key[i]];
            head[key[i]] = i;
        }
    }
}

/* What XLA does with each op kind, as flags:
   FUSES: cheap elementwise work that XLA computes inside the fusions of
     the ops that read its result...
   READS_FUSED: ...when every reader is itself a loop or reduction fusion
     (elementwise ops, norms, softmax, the loss, layout changes); a
     contraction or the attention kernel reads materialized operands;
   BWD_ELEMENTWISE: its backward is elementwise in its operands, so XLA can
     write an input's gradient over a same-size buffer that dies there (its
     in-place fusion): not so for contractions, attention kernels, gathers
     and layout changes. */
enum { FUSES = 1, READS_FUSED = 2, BWD_ELEMENTWISE = 4 };

static const unsigned char kind_flags[REMAT_OP_COUNT] = {
    [REMAT_OP_ADD] = FUSES | READS_FUSED | BWD_ELEMENTWISE,
    [REMAT_OP_MUL] = FUSES | READS_FUSED | BWD_ELEMENTWISE,
    [REMAT_OP_SCALE] = FUSES | READS_FUSED | BWD_ELEMENTWISE,
    [REMAT_OP_SILU] = FUSES | READS_FUSED | BWD_ELEMENTWISE,
    [REMAT_OP_GELU] = FUSES | READS_FUSED | BWD_ELEMENTWISE,
    [REMAT_OP_CAST] = FUSES | READS_FUSED | BWD_ELEMENTWISE,
    [REMAT_OP_ROPE] = FUSES | READS_FUSED | BWD_ELEMENTWISE,
    [REMAT_OP_TRANSPOSE] = FUSES | READS_FUSED,
    [REMAT_OP_SPLIT] = FUSES | READS_FUSED,
    [REMAT_OP_RMSNORM] = READS_FUSED | BWD_ELEMENTWISE,
    [REMAT_OP_LAYERNORM] = READS_FUSED | BWD_ELEMENTWISE,
    [REMAT_OP_SOFTMAX] = READS_FUSED | BWD_ELEMENTWISE,
    /* the loss's logits gradient is a new buffer where the logits' weight
       gradient is a windowed einsum (the compiler's live ranges at e591f30
       hold the logits and their gradient at once); the step writes it over
       the logits where XLA fuses it into its matmuls instead (sim/step.c,
       loss_grad_fused; docs/memory-model.md) */
    [REMAT_OP_CROSS_ENTROPY] = READS_FUSED,
    [REMAT_OP_DROPOUT] = READS_FUSED | BWD_ELEMENTWISE,
};

static bool has_flag(remat_opkind_t k, unsigned flag) {
    return k < REMAT_OP_COUNT && (kind_flags[k] & flag);
}

/* Tensor @p i can stay unmaterialized when its producer is fusable, it owns
   its buffer, it is not a block input or output, and every op that reads it
   in forward, and every op whose backward reads it, fuses. One pass over
   the ops clears the tensors some reader does not let fuse. */
static void fusable_tensors(const remat_block_t *b, unsigned char *fusable) {
    for (size_t i = 0; i < b->ntensors; i++) {
        const remat_tensor_t *t = &b->tensors[i];
        fusable[i] = t->producer != REMAT_NONE && t->storage == i && !t->param &&
                     has_flag(b->ops[t->producer].kind, FUSES);
    }
    for (size_t k = 0; k < b->noutputs; k++) {
        fusable[b->outputs[k]] = 0;
    }
    for (size_t j = 0; j < b->nops; j++) {
        const remat_op_t *op = &b->ops[j];
        if (has_flag(op->kind, READS_FUSED)) {
            continue;
        }
        for (size_t k = 0; k < op->nin; k++) {
            fusable[op->in[k]] = 0;
        }
        for (size_t k = 0; op->has_backward && k < op->nsaves; k++) {
            fusable[op->saves[k]] = 0;
        }
    }
}

/* Each buffer's forward free position (after its last reader; right after
   its producer when nothing reads it) and its last backward reader (the
   smallest position among ops whose backward saves a member), into
   @p free_fwd and @p bwd_use (REMAT_NONE elsewhere). */
static void lifetimes(const remat_block_t *b, const size_t *pos, size_t *free_fwd,
                      size_t *bwd_use) {
    for (size_t i = 0; i < b->ntensors; i++) {
        free_fwd[i] = REMAT_NONE;
        bwd_use[i] = REMAT_NONE;
    }
    for (size_t i = 0; i < b->ntensors; i++) {
        const remat_tensor_t *t = &b->tensors[i];
        size_t buf = t->storage;
        size_t last = t->last_use != REMAT_NONE   ? t->last_use
                      : t->producer != REMAT_NONE ? pos[t->producer]
                                                  : 0;
        if (free_fwd[buf] == REMAT_NONE || last > free_fwd[buf]) {
            free_fwd[buf] = last;
        }
    }
    for (size_t j = 0; j < b->nops; j++) {
        const remat_op_t *op = &b->ops[j];
        if (op->has_backward) {
            for (size_t i = 0; i < op->nsaves; i++) {
                size_t buf = b->tensors[op->saves[i]].storage;
                bwd_use[buf] = remat_i_min_pos(bwd_use[buf], pos[j]);
            }
        }
    }
}

/* Writable views of one block's arrays while the index is built. */
typedef struct block_arrays {
#define POINTER(f, n) size_t *f;
    REMAT_I_BLOCK_ARRAYS(POINTER)
#undef POINTER
    unsigned char *fusable_flag;
} block_arrays_t;

/* Lays block @p b's arrays out from byte offsets *@p words (its word
   arrays) and *@p bytes (its flags), advancing both. */
static void carve_block(remat_i_block_index_t *bi, const remat_block_t *b, size_t *words,
                        size_t *bytes) {
    const size_t nt = b->ntensors, no = b->nops, ne = remat_i_ein_words(b);
    size_t at = *words;
#define TAKE(f, n)                                                                             \
    bi->f = at;                                                                                \
    at += (n) * sizeof(size_t);
    REMAT_I_BLOCK_ARRAYS(TAKE)
#undef TAKE
    assert(at - *words == block_words(b) * sizeof(size_t));
    *words = at;
    bi->fusable_flag = *bytes;
    *bytes += nt;
}

static block_arrays_t arrays_of(remat_graph_index_t *x, const remat_i_block_index_t *bi) {
    char *base = (char *)x;
    block_arrays_t a;
#define AT(f, n) a.f = (size_t *)(void *)(base + bi->f);
    REMAT_I_BLOCK_ARRAYS(AT)
#undef AT
    a.fusable_flag = (unsigned char *)(base + bi->fusable_flag);
    return a;
}

/* Name id @p id's text in index @p x: REMAT_NAME_LEN bytes, the text and
   NULs after it. */
static const char *index_name(const remat_graph_index_t *x, size_t id) {
    assert(id < x->nnames);
    return (const char *)x + x->names + id * REMAT_NAME_LEN;
}

/* Name id @p id's text set to @p name (under REMAT_NAME_LEN: graph_load
   checks); the slot is zeroed (the index's allocation is). */
static void set_name(remat_graph_index_t *x, size_t id, const char *name) {
    const size_t n = strlen(name);
    assert(n < REMAT_NAME_LEN);
    memcpy((char *)x + x->names + id * REMAT_NAME_LEN, name, n < REMAT_NAME_LEN ? n : 0);
}

/* The id of checkpoint name @p name, added when new. */
static size_t name_id(remat_graph_index_t *x, const char *name) {
    for (size_t id = 0; id < x->nnames; id++) {
        const char *s = index_name(x, id);
        if (s[0] == name[0] && strcmp(s, name) == 0) {
            return id;
        }
    }
    set_name(x, x->nnames, name);
    return x->nnames++;
}

/* Owners, tags' name ids, the fusable tensors in the order fusion visits
   them (ops last to first, outputs in order: a chain of fused ops needs
   it) and each position's owning outputs. */
static void index_tensors(const remat_graph_t *g, remat_graph_index_t *x, size_t k,
                          const block_arrays_t *a) {
    const remat_block_t *b = remat_i_block_at(g, k);
    remat_i_block_index_t *bi = &x->block[k];
    const size_t nt = b->ntensors, no = b->nops;
    bi->nowners = bi->nfusable = 0;
    for (size_t i = 0; i < nt; i++) {
        const remat_tensor_t *t = &b->tensors[i];
        if (t->storage == i) {
            a->owners[bi->nowners++] = i;
        }
        _Static_assert(REMAT_DTYPE_COUNT <= 256, "a dtype fits the flags' low byte");
        a->tflags[i] = (size_t)t->dtype | (t->param ? REMAT_I_T_PARAM : 0) |
                       (t->needs_grad ? REMAT_I_T_GRAD : 0) |
                       (t->gather_group ? REMAT_I_T_GROUP : 0) |
                       (t->storage == i ? REMAT_I_T_OWN : 0);
        a->storage[i] = t->storage;
        for (size_t j = 0; j < REMAT_MAX_TAGS; j++) {
            a->tag_id[i * REMAT_MAX_TAGS + j] =
                k < g->nkinds && j < t->ntags ? name_id(x, t->tags[j]) : REMAT_I_NAME_UNNAMED;
        }
    }
    for (size_t p = no; p-- > 0;) {
        const remat_op_t *op = &b->ops[b->order[p]];
        for (size_t o = 0; o < op->nout; o++) {
            if (a->fusable_flag[op->out[o]]) {
                a->fusable[bi->nfusable++] = op->out[o];
            }
        }
    }
    size_t nouts = 0; /* at most one a tensor: each has one producer */
    for (size_t p = 0; p < no; p++) {
        const remat_op_t *op = &b->ops[b->order[p]];
        a->out_at[p] = nouts;
        for (size_t o = 0; o < op->nout; o++) {
            if (b->tensors[op->out[o]].storage == op->out[o]) {
                a->outs[nouts++] = op->out[o];
            }
        }
    }
    a->out_at[no] = nouts;
}

/* Each op's inputs that need a gradient and its first param input, and
   each einsum's subscripts as its FLOP count reads them. */
static void index_ops(const remat_block_t *b, const block_arrays_t *a) {
    size_t n = 0;
    for (size_t j = 0; j < b->nops; j++) {
        const remat_op_t *op = &b->ops[j];
        a->ngrad[j] = 0;
        a->first_param[j] = op->nin;
        for (size_t i = op->nin; i-- > 0;) {
            a->ngrad[j] += b->tensors[op->in[i]].needs_grad;
            a->first_param[j] = b->tensors[op->in[i]].param ? i : a->first_param[j];
        }
        a->ein_at[j] = n;
        n += op->kind == REMAT_OP_EINSUM ? einsum_words(op, a->ein + n) : 0;
    }
    a->ein_at[b->nops] = n;
    assert(n == remat_i_ein_words(b));
}

/* Block @p k (a layer kind, or the head at nkinds) indexed. */
static void index_block(const remat_graph_t *g, remat_graph_index_t *x, size_t k) {
    const bool head = k == g->nkinds;
    const remat_block_t *b = remat_i_block_at(g, k);
    const block_arrays_t a = arrays_of(x, &x->block[k]);
    for (size_t p = 0; p < b->nops; p++) {
        a.pos[b->order[p]] = p;
    }
    if (head) {
        memset(a.fusable_flag, 0, b->ntensors); /* the head runs unfused */
    } else {
        fusable_tensors(b, a.fusable_flag);
    }
    lifetimes(b, a.pos, a.free_fwd, a.bwd_use);
    remat_i_bucket(a.free_fwd, b->ntensors, b->nops, a.fwd_head, a.fwd_next);
    remat_i_bucket(a.bwd_use, b->ntensors, b->nops, a.bwd_head, a.bwd_next);
    index_tensors(g, x, k, &a);
    for (size_t j = 0; j < b->nops; j++) {
        const remat_op_t *op = &b->ops[j];
        a.op_name[j] = REMAT_I_NAME_UNNAMED;
        for (size_t o = 0; !head && o < op->nout; o++) {
            if (b->tensors[op->out[o]].ntags) {
                a.op_name[j] = a.tag_id[op->out[o] * REMAT_MAX_TAGS];
                break;
            }
        }
        a.inplace[j] = has_flag(op->kind, BWD_ELEMENTWISE);
    }
    index_ops(b, &a);
}

/* ---- logical names and shapes -------------------------------------------- */

/* While the index is built, open-addressed tables (a slot holds an id + 1,
   0 is empty) find a logical name's id by its text and a shape's by its
   key, in a scratch tail past the index's `size` bytes. */
typedef struct numbering {
    size_t *lslot, nlslots; /* powers of two, at least twice the most ids */
    size_t *sslot, nsslots;
    const char **ltext;     /* per logical id */
    uint64_t *skey;         /* per shape id: shape_key */
    const size_t **saxes;   /* per shape id: its first tensor's `axes` ids, or NULL */
} numbering_t;

static size_t pow2_at_least(size_t n) {
    size_t p = 16;
    while (p < n) {
        p *= 2;
    }
    return p;
}

/* The logical id of @p name (REMAT_NONE for NULL), numbered when new: its
   hash, and its rules under the default mesh rules, recorded. */
static size_t logical_id(remat_graph_index_t *x, numbering_t *nb, const char *name) {
    if (!name) {
        return REMAT_NONE;
    }
    size_t *hashes = (size_t *)(void *)((char *)x + x->logical_hash);
    const uint32_t h = remat_mesh_name_hash(name);
    size_t i = h & (nb->nlslots - 1);
    for (; nb->lslot[i]; i = (i + 1) & (nb->nlslots - 1)) {
        const size_t id = nb->lslot[i] - 1;
        if (hashes[id] == h && strcmp(nb->ltext[id], name) == 0) {
            return id;
        }
    }
    const size_t id = x->nlogical++;
    nb->lslot[i] = id + 1;
    nb->ltext[id] = name;
    hashes[id] = h;
    size_t *rules = (size_t *)(void *)((char *)x + x->logical_rules) + id * REMAT_I_RULE_STRIDE;
    uint64_t words[REMAT_RULE_WORDS];
    rules[REMAT_RULE_WORDS] = remat_mesh_default_name_rules(name, h, words);
    for (size_t w = 0; w < REMAT_RULE_WORDS; w++) {
        rules[w] = (size_t)words[w];
    }
    return id;
}

/* The dims six bits each, then the rank (which tells where they start)
   and the flags: equal keys, equal dims and flags. */
static uint64_t shape_key(const remat_tensor_t *t) {
    _Static_assert(REMAT_MAX_RANK <= 8 && REMAT_MAX_DIMS <= 64, "a shape fits 64 bits");
    uint64_t k = 0;
    for (size_t j = 0; j < t->rank; j++) {
        k = k << 6 | t->dim[j];
    }
    return k << 6 | t->rank | (uint64_t)t->param << 4 | (uint64_t)t->has_axes << 5;
}

/* Whether a tensor of @p t's shape (its `axes` ids @p axes) takes each
   dim's first rule under the default mesh rules (remat_mesh_first_rules):
   its dims' logical ids, then their rules as the index recorded them. */
static bool default_first(const remat_graph_index_t *x, const remat_tensor_t *t,
                          const size_t *axes) {
    static const remat_mesh_t defaults = {.default_rules = true};
    const size_t *dim_axis = (const size_t *)(const void *)((const char *)x + x->dim_axis);
    const size_t *rules = (const size_t *)(const void *)((const char *)x + x->logical_rules);
    static const uint64_t none[REMAT_RULE_WORDS];
    uint64_t words[REMAT_MAX_RANK][REMAT_RULE_WORDS];
    const uint64_t *row[REMAT_MAX_RANK];
    unsigned out[REMAT_MAX_RANK];
    for (size_t j = 0; j < t->rank; j++) {
        const size_t id = t->has_axes ? axes[j] : dim_axis[2 * t->dim[j] + t->param];
        for (size_t w = 0; w < REMAT_RULE_WORDS; w++) {
            words[j][w] = id == REMAT_NONE ? 0 : rules[id * REMAT_I_RULE_STRIDE + w];
        }
        row[j] = id == REMAT_NONE ? none : words[j];
    }
    return remat_mesh_first_rules(&defaults, row, t->rank, out);
}

/* The shape id of tensor @p t, whose `axes` ids are @p axes, numbered when
   new (and whether it takes its first rules under the defaults). */
static size_t shape_id(remat_graph_index_t *x, numbering_t *nb, const remat_tensor_t *t,
                       const size_t *axes) {
    const uint64_t key = shape_key(t);
    size_t i = (size_t)((key * 0x9e3779b97f4a7c15u) >> 32) & (nb->nsslots - 1);
    for (; nb->sslot[i]; i = (i + 1) & (nb->nsslots - 1)) {
        const size_t id = nb->sslot[i] - 1;
        if (nb->skey[id] == key &&
            (!t->has_axes || memcmp(nb->saxes[id], axes, t->rank * sizeof *axes) == 0)) {
            return id;
        }
    }
    nb->sslot[i] = x->nshapes + 1;
    nb->skey[x->nshapes] = key;
    nb->saxes[x->nshapes] = t->has_axes ? axes : NULL;
    size_t *first = (size_t *)(void *)((char *)x + x->shape_first);
    first[x->nshapes] = default_first(x, t, axes);
    return x->nshapes++;
}

/* Every dim's two logical names, then each block's tensors' `axes` and
   shapes, numbered. */
static void number_shapes(const remat_graph_t *g, remat_i_size_field_fn field,
                          remat_graph_index_t *x, numbering_t *nb) {
    size_t *dim_axis = (size_t *)(void *)((char *)x + x->dim_axis);
    size_t *dim_field = (size_t *)(void *)((char *)x + x->dim_field);
    for (size_t d = 0; d < g->ndims; d++) {
        dim_axis[2 * d] = logical_id(x, nb, g->dims[d].axis);
        dim_axis[2 * d + 1] = logical_id(x, nb, g->dims[d].weight_axis);
        const char *from = g->dims[d].from;
        size_t *f = &dim_field[REMAT_I_DIM_STRIDE * d];
        f[0] = from ? field(from) : 0;
        f[1] = g->dims[d].div ? field(g->dims[d].div) : 0;
        f[2] = !from                                          ? REMAT_I_DIM_PLAIN
               : strcmp(from, "moe_buffer_factor") == 0     ? REMAT_I_DIM_MOE_BUFFER
               : strcmp(from, "per_device_batch_size") == 0 ? REMAT_I_DIM_BATCH
               : strcmp(from, "expert_shards") == 0         ? REMAT_I_DIM_EXPERT_SHARDS
                                                            : REMAT_I_DIM_PLAIN;
    }
    for (size_t k = 0; k < g->nkinds + g->has_head; k++) {
        const remat_block_t *b = remat_i_block_at(g, k);
        const block_arrays_t a = arrays_of(x, &x->block[k]);
        for (size_t i = 0; i < b->ntensors; i++) {
            const remat_tensor_t *t = &b->tensors[i];
            size_t *axes = &a.axes[i * REMAT_MAX_RANK];
            for (size_t j = 0; j < REMAT_MAX_RANK; j++) {
                axes[j] = t->has_axes && j < t->rank ? logical_id(x, nb, t->axes[j])
                                                     : REMAT_NONE;
            }
            a.shape[i] = shape_id(x, nb, t, axes);
        }
    }
}

/* ---- the whole index ------------------------------------------------------ */

/* Byte offsets of the index's parts: the header, each block's words, the
   dims' logical ids and config fields, the logical names' hashes and
   default rules, the shapes' first-rule flags, the names' texts
   (REMAT_NAME_LEN bytes an id), the flag bytes (the index ends there),
   then the scratch.
   The counts are a graph's, bounded by its input's size: no overflow. */
typedef struct layout {
    size_t dim_axis, dim_field, logical_hash, logical_rules, shape_first, names, flags, size;
    size_t scratch, total;
    size_t nlogical, ntensors; /* the most logical ids and shape ids */
} layout_t;

static layout_t index_layout(const remat_graph_t *g) {
    size_t words = 0, tags = 0;
    layout_t l = {0};
    l.nlogical = 2 * g->ndims;
    for (size_t k = 0; k < g->nkinds + g->has_head; k++) {
        const remat_block_t *b = remat_i_block_at(g, k);
        words += block_words(b);
        l.ntensors += b->ntensors;
        for (size_t i = 0; i < b->ntensors; i++) {
            tags += k < g->nkinds ? b->tensors[i].ntags : 0;
            l.nlogical += b->tensors[i].has_axes ? b->tensors[i].rank : 0;
        }
    }
    const size_t w = sizeof(size_t);
    l.dim_axis = sizeof(remat_graph_index_t) + words * w;
    l.dim_field = l.dim_axis + 2 * g->ndims * w;
    l.logical_hash = l.dim_field + REMAT_I_DIM_STRIDE * g->ndims * w;
    l.logical_rules = l.logical_hash + l.nlogical * w;
    l.shape_first = l.logical_rules + l.nlogical * REMAT_I_RULE_STRIDE * w;
    l.names = l.shape_first + l.ntensors * w;
    l.flags = l.names + (2 + tags) * REMAT_NAME_LEN;
    l.size = l.flags + l.ntensors;
    l.scratch = (l.size + w - 1) / w * w;
    l.total = l.scratch + (pow2_at_least(2 * l.nlogical) + pow2_at_least(2 * l.ntensors) +
                           l.nlogical + 2 * l.ntensors) * w;
    return l;
}

/* The scratch tail's tables, zeroed (the allocation is). */
static numbering_t numbering_at(remat_graph_index_t *x, const layout_t *l) {
    numbering_t nb;
    _Static_assert(sizeof(const char *) == sizeof(size_t) && sizeof(uint64_t) == sizeof(size_t),
                   "the scratch is words");
    size_t *z = (size_t *)(void *)((char *)x + l->scratch);
    nb.nlslots = pow2_at_least(2 * l->nlogical);
    nb.nsslots = pow2_at_least(2 * l->ntensors);
    nb.lslot = z;
    nb.sslot = nb.lslot + nb.nlslots;
    nb.ltext = (const char **)(void *)(nb.sslot + nb.nsslots);
    nb.skey = (uint64_t *)(void *)(nb.ltext + l->nlogical);
    nb.saxes = (const size_t **)(void *)(nb.skey + l->ntensors);
    return nb;
}

remat_status_t remat_i_graph_index(const remat_graph_t *g, remat_i_size_field_fn field,
                                   remat_graph_index_t **out, remat_error_t *err) {
    assert(field);
    _Static_assert(sizeof(remat_graph_index_t) % sizeof(size_t) == 0, "the words stay aligned");
    const layout_t l = index_layout(g);
    remat_graph_index_t *x = remat_i_try_calloc(1, l.total, err);
    *out = NULL;
    if (!x) {
        return REMAT_E_NOMEM;
    }
    x->size = l.size;
    x->names = l.names;
    x->nnames = 2;
    x->dim_axis = l.dim_axis;
    x->dim_field = l.dim_field;
    x->logical_hash = l.logical_hash;
    x->logical_rules = l.logical_rules;
    x->shape_first = l.shape_first;
    size_t words = sizeof *x, bytes = l.flags;
    for (size_t k = 0; k < g->nkinds + g->has_head; k++) {
        const remat_block_t *b = remat_i_block_at(g, k);
        carve_block(&x->block[k], b, &words, &bytes);
    }
    assert(words == l.dim_axis && bytes == l.size);
    set_name(x, REMAT_I_NAME_INPUT, "decoder_layer_input");
    set_name(x, REMAT_I_NAME_UNNAMED, "(unnamed)");
    for (size_t k = 0; k < g->nkinds + g->has_head; k++) {
        index_block(g, x, k);
    }
    numbering_t nb = numbering_at(x, &l);
    number_shapes(g, field, x, &nb);
    /* the scratch is not the index: give it back (a shrink that fails
       leaves the larger allocation, as good) */
    remat_graph_index_t *shrunk = realloc(x, l.size);
    *out = shrunk ? shrunk : x;
    return REMAT_OK;
}

remat_i_block_view_t remat_i_block_view(const remat_graph_t *g, size_t k) {
    const remat_graph_index_t *x = g->index;
    const remat_i_block_index_t *bi = &x->block[k];
    assert(k < g->nkinds || (k == g->nkinds && g->has_head));
    const char *base = (const char *)x;
    remat_i_block_view_t v = {.nowners = bi->nowners, .nfusable = bi->nfusable};
#define AT(f, n) v.f = (const size_t *)(const void *)(base + bi->f);
    REMAT_I_BLOCK_ARRAYS(AT)
#undef AT
    v.fusable_flag = (const unsigned char *)(base + bi->fusable_flag);
    return v;
}

const char *remat_i_index_name(const remat_graph_t *g, size_t id) {
    return index_name(g->index, id);
}
