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

#include "graph_index.h"
#include "util.h"

/* The words of a block's size_t arrays, and its bytes of flags. */
static size_t block_words(const remat_block_t *b) {
    return (9 + REMAT_MAX_TAGS) * b->ntensors + 6 * b->nops + 1;
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

/* XLA fuses cheap elementwise work into the ops that read its result: an
   op of these kinds can be computed inside its readers' fusions... */
static bool fusable_producer(remat_opkind_t k) {
    switch (k) {
        case REMAT_OP_ADD:
        case REMAT_OP_MUL:
        case REMAT_OP_SCALE:
        case REMAT_OP_SILU:
        case REMAT_OP_GELU:
        case REMAT_OP_CAST:
        case REMAT_OP_ROPE:
        case REMAT_OP_TRANSPOSE:
        case REMAT_OP_SPLIT:
            return true;
        default:
            return false;
    }
}

/* ...when every reader is itself a loop or reduction fusion: elementwise
   ops, norms, softmax, the loss, layout changes. Contractions and the
   attention kernel read materialized operands. */
static bool fusing_reader(remat_opkind_t k) {
    return fusable_producer(k) || k == REMAT_OP_RMSNORM || k == REMAT_OP_LAYERNORM ||
           k == REMAT_OP_SOFTMAX || k == REMAT_OP_CROSS_ENTROPY || k == REMAT_OP_DROPOUT;
}

/* Tensor @p i can stay unmaterialized when its producer is fusable, it owns
   its buffer, it is not a block input or output, and every op that reads it
   in forward, and every op whose backward reads it, fuses. One pass over
   the ops clears the tensors some reader does not let fuse. */
static void fusable_tensors(const remat_block_t *b, unsigned char *fusable) {
    for (size_t i = 0; i < b->ntensors; i++) {
        const remat_tensor_t *t = &b->tensors[i];
        fusable[i] = t->producer != REMAT_NONE && t->storage == i && !t->param &&
                     fusable_producer(b->ops[t->producer].kind);
    }
    for (size_t k = 0; k < b->noutputs; k++) {
        fusable[b->outputs[k]] = 0;
    }
    for (size_t j = 0; j < b->nops; j++) {
        const remat_op_t *op = &b->ops[j];
        if (fusing_reader(op->kind)) {
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

/* Whether an op's backward is elementwise in its operands, so that XLA can
   write an input's gradient over a same-size buffer that dies there (its
   in-place fusion): not so for contractions, attention kernels, gathers
   and layout changes. */
static bool elementwise_backward(remat_opkind_t k) {
    switch (k) {
        case REMAT_OP_ADD:
        case REMAT_OP_MUL:
        case REMAT_OP_SCALE:
        case REMAT_OP_SILU:
        case REMAT_OP_GELU:
        case REMAT_OP_SOFTMAX:
        case REMAT_OP_RMSNORM:
        case REMAT_OP_LAYERNORM:
        case REMAT_OP_ROPE:
        case REMAT_OP_DROPOUT:
        case REMAT_OP_CAST:
        case REMAT_OP_CROSS_ENTROPY:
            return true;
        default:
            return false;
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
    size_t *pos, *free_fwd, *bwd_use, *fwd_head, *bwd_head, *fwd_next, *bwd_next;
    size_t *owners, *fusable, *out_at, *outs, *tag_id, *op_name, *inplace;
    unsigned char *fusable_flag;
} block_arrays_t;

/* Lays block @p b's arrays out from byte offsets *@p words (its size_t
   arrays) and *@p bytes (its flags), advancing both. */
static void carve_block(remat_i_block_index_t *bi, const remat_block_t *b, size_t *words,
                        size_t *bytes) {
    const size_t nt = b->ntensors, no = b->nops, w = sizeof(size_t);
    size_t at = *words;
#define TAKE(field, n)                                                                         \
    bi->field = at;                                                                            \
    at += (n) * w;
    TAKE(pos, no) TAKE(free_fwd, nt) TAKE(bwd_use, nt) TAKE(fwd_head, no) TAKE(bwd_head, no)
    TAKE(fwd_next, nt) TAKE(bwd_next, nt) TAKE(owners, nt) TAKE(fusable, nt) TAKE(out_at, no + 1)
    TAKE(outs, nt) TAKE(tag_id, REMAT_MAX_TAGS * nt) TAKE(op_name, no) TAKE(inplace, no)
#undef TAKE
    assert(at - *words == block_words(b) * w);
    *words = at;
    bi->fusable_flag = *bytes;
    *bytes += nt;
}

static block_arrays_t arrays_of(remat_graph_index_t *x, const remat_i_block_index_t *bi) {
    char *base = (char *)x;
#define AT(field) (size_t *)(void *)(base + bi->field)
    return (block_arrays_t){AT(pos),    AT(free_fwd), AT(bwd_use), AT(fwd_head), AT(bwd_head),
                            AT(fwd_next), AT(bwd_next), AT(owners), AT(fusable), AT(out_at),
                            AT(outs),   AT(tag_id),   AT(op_name), AT(inplace),
                            (unsigned char *)(base + bi->fusable_flag)};
#undef AT
}

/* Name id @p id's text in index @p x of graph @p g. */
static const char *index_name(const remat_graph_t *g, const remat_graph_index_t *x, size_t id) {
    assert(id < x->nnames);
    if (id == REMAT_I_NAME_INPUT) {
        return "decoder_layer_input";
    }
    if (id == REMAT_I_NAME_UNNAMED) {
        return "(unnamed)";
    }
    const size_t *ref = (const size_t *)(const void *)((const char *)x + x->names) + 2 * (id - 2);
    return g->kinds[ref[0] / REMAT_MAX_TAGS].block.tensors[ref[1]].tags[ref[0] % REMAT_MAX_TAGS];
}

/* The id of checkpoint name @p name (tag @p tag of tensor @p i of kind
   @p k), added when new. */
static size_t name_id(const remat_graph_t *g, remat_graph_index_t *x, size_t *refs, size_t k,
                      size_t i, size_t tag) {
    const char *name = g->kinds[k].block.tensors[i].tags[tag];
    for (size_t id = 0; id < x->nnames; id++) {
        const char *s = index_name(g, x, id);
        if (s[0] == name[0] && strcmp(s, name) == 0) {
            return id;
        }
    }
    refs[2 * (x->nnames - 2)] = k * REMAT_MAX_TAGS + tag;
    refs[2 * (x->nnames - 2) + 1] = i;
    return x->nnames++;
}

/* Owners, tags' name ids, the fusable tensors in the order fusion visits
   them (ops last to first, outputs in order: a chain of fused ops needs
   it) and each position's owning outputs. */
static void index_tensors(const remat_graph_t *g, remat_graph_index_t *x, size_t k,
                          const block_arrays_t *a, size_t *refs) {
    const remat_block_t *b = k < g->nkinds ? &g->kinds[k].block : &g->head;
    remat_i_block_index_t *bi = &x->block[k];
    const size_t nt = b->ntensors, no = b->nops;
    bi->nowners = bi->nfusable = 0;
    for (size_t i = 0; i < nt; i++) {
        const remat_tensor_t *t = &b->tensors[i];
        if (t->storage == i) {
            a->owners[bi->nowners++] = i;
        }
        for (size_t j = 0; j < REMAT_MAX_TAGS; j++) {
            a->tag_id[i * REMAT_MAX_TAGS + j] =
                k < g->nkinds && j < t->ntags ? name_id(g, x, refs, k, i, j) : REMAT_I_NAME_UNNAMED;
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

/* Block @p k (a layer kind, or the head at nkinds) indexed. */
static void index_block(const remat_graph_t *g, remat_graph_index_t *x, size_t k, size_t *refs) {
    const bool head = k == g->nkinds;
    const remat_block_t *b = head ? &g->head : &g->kinds[k].block;
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
    index_tensors(g, x, k, &a, refs);
    for (size_t j = 0; j < b->nops; j++) {
        const remat_op_t *op = &b->ops[j];
        a.op_name[j] = REMAT_I_NAME_UNNAMED;
        for (size_t o = 0; !head && o < op->nout; o++) {
            if (b->tensors[op->out[o]].ntags) {
                a.op_name[j] = a.tag_id[op->out[o] * REMAT_MAX_TAGS];
                break;
            }
        }
        a.inplace[j] = elementwise_backward(op->kind);
    }
}

/* The index's bytes: the header, each block's words, the name references
   (two words an id), then the flag bytes. The counts are a graph's, bounded
   by its input's size: no overflow. */
static size_t index_size(const remat_graph_t *g, size_t *names, size_t *flags) {
    size_t words = 0, tags = 0, nflags = 0;
    for (size_t k = 0; k <= g->nkinds; k++) {
        const remat_block_t *b = k < g->nkinds ? &g->kinds[k].block : &g->head;
        if (k == g->nkinds && !g->has_head) {
            break;
        }
        words += block_words(b);
        nflags += b->ntensors;
        for (size_t i = 0; k < g->nkinds && i < b->ntensors; i++) {
            tags += b->tensors[i].ntags;
        }
    }
    *names = sizeof(remat_graph_index_t) + words * sizeof(size_t);
    *flags = *names + 2 * tags * sizeof(size_t);
    return *flags + nflags;
}

remat_status_t remat_i_graph_index(const remat_graph_t *g, remat_graph_index_t **out,
                                   remat_error_t *err) {
    _Static_assert(sizeof(remat_graph_index_t) % sizeof(size_t) == 0, "the words stay aligned");
    size_t names, flags;
    const size_t size = index_size(g, &names, &flags);
    remat_graph_index_t *x = remat_i_try_calloc(1, size, err);
    *out = NULL;
    if (!x) {
        return REMAT_E_NOMEM;
    }
    x->size = size;
    x->names = names;
    x->nnames = 2;
    size_t words = sizeof *x, bytes = flags;
    for (size_t k = 0; k <= g->nkinds; k++) {
        if (k < g->nkinds || g->has_head) {
            const remat_block_t *b = k < g->nkinds ? &g->kinds[k].block : &g->head;
            carve_block(&x->block[k], b, &words, &bytes);
        }
    }
    assert(words == names && bytes == size);
    size_t *refs = (size_t *)(void *)((char *)x + names);
    for (size_t k = 0; k <= g->nkinds; k++) {
        if (k < g->nkinds || g->has_head) {
            index_block(g, x, k, refs);
        }
    }
    *out = x;
    return REMAT_OK;
}

remat_i_block_view_t remat_i_block_view(const remat_graph_t *g, size_t k) {
    const remat_graph_index_t *x = g->index;
    const remat_i_block_index_t *bi = &x->block[k];
    assert(k < g->nkinds || (k == g->nkinds && g->has_head));
    const char *base = (const char *)x;
#define AT(field) (const size_t *)(const void *)(base + bi->field)
    return (remat_i_block_view_t){bi->nowners, bi->nfusable, AT(pos), AT(free_fwd),
                                  AT(bwd_use), AT(fwd_head), AT(bwd_head), AT(fwd_next),
                                  AT(bwd_next), AT(owners), AT(fusable), AT(out_at), AT(outs),
                                  AT(tag_id), AT(op_name), AT(inplace),
                                  (const unsigned char *)(base + bi->fusable_flag)};
#undef AT
}

const char *remat_i_index_name(const remat_graph_t *g, size_t id) {
    return index_name(g, g->index, id);
}
