/* SPDX-License-Identifier: MIT */
/*
 * layer.c: one layer's plan played op by op, into its profile (tpl_t), and
 * the per-tensor and per-name tables of each profile.
 *
 * Buffers. A tensor owns a buffer unless a reshape made it, in which case it
 * uses its base's buffer (XLA's bitcast); a transpose or a slice is an array
 * of its own, as in JAX. A buffer is live while any tensor using it is live,
 * and its bytes count once.
 *
 * One layer, forward (positions p = 0.. in topological order):
 *  (1) an op's output buffers are allocated when it runs; the live bytes are
 *      measured right after, when inputs and outputs coexist;
 *  (2) a buffer holding a `device` residual, or the layer output, is kept;
 *  (3) a buffer holding an `offload` residual stays until the end of the
 *      layer's forward (the copy overlaps the layer) and is then freed;
 *  (4) any other buffer is freed after its last forward reader.
 * One layer, backward:
 *  (5) offloaded buffers are fetched (allocated) first;
 *  (6) the plan's recompute ops run in topological order; a rebuilt buffer
 *      that no backward op reads is freed after its last recompute reader;
 *  (7) ops run backward in reverse order: gradients of their differentiable
 *      non-param inputs are allocated (once, accumulated after), the
 *      gradients of their outputs are freed, and residual buffers are freed
 *      after their last backward reader. Weight gradients go to the stage's
 *      gradient buffer (live from the first layer's backward on).
 *
 * Invariants:
 *  - a profile's bytes are relative to the live bytes the layer starts from
 *    (its input is in the caller's baseline), so layers with one plan share
 *    one profile: a layer's bytes depend only on its plan;
 *  - a buffer's bytes count once (alloc_buf asserts it is not live);
 *  - a meter's categories sum to its live bytes at every measure;
 *  - the collective buffers (an op's gathered weights, its weights' whole
 *    gradients, K/V gathered over the context axis, its activations
 *    gathered or summed whole over the tensor axes) live only while their
 *    op runs: they add to the peaks, never to the deltas;
 *  - a kind's preparation (remat_i_layer_prepare: lifetimes before fusion,
 *    their free lists, buffer owners, each op's gradient inputs, the name
 *    numbers) depends on the bound block alone, never on a plan: a run
 *    copies it and patches only what the plan's fusions move, so a run
 *    plays what a walk over every buffer at every op would (the free lists
 *    ascend, as that walk's buffer order does).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_rooms.h"
#include "base/util.h"

/* The scratch's bytes for blocks of at most @p ntensors tensors and
   @p nops ops. The counts are a graph's: no overflow. */
size_t remat_i_scratch_bytes(size_t ntensors, size_t nops) {
    const size_t n = ntensors, np = nops ? nops : 1;
    return n * sizeof(uint64_t) + (7 * n + 3 * np) * sizeof(size_t) + 5 * n;
}

/* Every scratch array in @p mem (remat_i_scratch_bytes of it, aligned),
   widest elements first (cur, then the size_t arrays), so each array
   starts aligned. Not zeroed: a room writes what it reads of the scratch
   first (remat_i_buffer_lifetimes and reset clear the per-buffer state,
   rerun_list and the free lists their heads, a buffer's bytes are set
   when it is allocated). */
void remat_i_scratch_init(scratch_t *s, size_t ntensors, size_t nops, void *mem) {
    const size_t n = ntensors, np = nops ? nops : 1;
    s->cur = mem;
    size_t *z = (size_t *)(void *)(s->cur + n);
    s->free_fwd = z;
    s->bwd_use = z + n;
    s->rec_use = z + 2 * n;
    s->fwd_next = z + 3 * n;
    s->rec_next = z + 4 * n;
    s->bwd_next = z + 5 * n;
    s->fwd_head = z + 6 * n;
    s->rec_head = s->fwd_head + np;
    s->bwd_head = s->rec_head + np;
    s->held = s->bwd_head + np;
    unsigned char *c = (unsigned char *)(s->held + n);
    s->cls = c;
    s->live = c + n;
    s->cat = c + 2 * n;
    s->glive = c + 3 * n;
    s->virt = c + 4 * n;
}

void remat_i_backward_list(const remat_block_t *b, scratch_t *s) {
    remat_i_bucket(s->bwd_use, b->ntensors, b->nops, s->bwd_head, s->bwd_next);
}

/* Measures the live bytes at an op (@p op at @p step), of which @p pf are
   the next op's weights gathered ahead (in GATHERED), for the peak and the
   regathered peak (meter_t). The first measure sets both. */
static void measure(meter_t *m, remat_step_t step, size_t op, int64_t pf) {
    assert(meter_consistent(m) && pf >= 0 && pf <= m->cats[REMAT_CAT_GATHERED]);
    if (m->rec) {
        remat_i_rel_push(m->rec, m, step, op);
    }
    const bool first = !m->any;
    if (first || m->live > m->peak) {
        m->any = true;
        m->peak = m->live;
        memcpy(m->peak_cats, m->cats, sizeof m->cats);
        m->step = step;
        m->op = op;
    }
    if (first || m->live - pf > m->np_peak) {
        m->np_peak = m->live - pf;
        memcpy(m->np_cats, m->cats, sizeof m->cats);
        m->np_cats[REMAT_CAT_GATHERED] -= pf;
    }
}

/* The collective buffers an op holds while it runs (measure_op): its
   weights gathered (@p pf of them the next op's, gathered ahead), its
   weights' whole gradients, K/V gathered over the context axis and its
   activations gathered or summed whole (act_mem). */
typedef struct op_extra {
    int64_t g, pf, w, kv, a;
} op_extra_t;

/* measure() with an op's collective buffers added for the moment. */
static void measure_with(meter_t *m, const op_extra_t *x, remat_step_t step, size_t j) {
    add_const(m, REMAT_CAT_GATHERED, x->g);
    add_const(m, REMAT_CAT_GRAD_BUFFER, x->w);
    add_const(m, REMAT_CAT_KV_GATHER, x->kv);
    add_const(m, REMAT_CAT_ACTIVATIONS, x->a);
    measure(m, step, j, x->pf);
    add_const(m, REMAT_CAT_GATHERED, -x->g);
    add_const(m, REMAT_CAT_GRAD_BUFFER, -x->w);
    add_const(m, REMAT_CAT_KV_GATHER, -x->kv);
    add_const(m, REMAT_CAT_ACTIVATIONS, -x->a);
}

/* Measures op @p j at @p step with the buffers that live only while it runs:
   its weights gathered for it (and the next op's, prefetched, and its gather
   group's other members', both gathered ahead for the regathered peak), in
   backward its weights' whole gradients before their reduce-scatter, K/V
   gathered over the context axis and its activations gathered or summed
   whole over the tensor axes (act_mem). The whole measure only when it can
   change something (@p extra is their sum, kind_prep's xf or xb): most are
   no new peak, and untraced such a measure leaves the meter as it was. */
static inline void measure_op(meter_t *m, const bound_t *bd, size_t j, remat_step_t step,
                              int64_t extra) {
    assert(meter_consistent(m));
    const bool bwd = step == REMAT_STEP_BACKWARD;
    const int64_t pf = (int64_t)(bwd ? bd->gather_prev[j] : bd->gather_next[j]);
    if (m->rec || !m->any || m->live + extra > m->peak ||
        m->live + extra - pf - (int64_t)bd->group_ahead[j] > m->np_peak) {
        const op_extra_t x = {.g = (int64_t)bd->op_gather_mem[j] + pf,
                              .pf = pf + (int64_t)bd->group_ahead[j],
                              .w = bwd ? (int64_t)bd->op_wgrad[j] : 0,
                              .kv = (int64_t)bd->kv_extra[j],
                              .a = (int64_t)bd->act_mem[j]};
        assert(x.g + x.w + x.kv + x.a == extra);
        measure_with(m, &x, step, j);
    }
}

/* Which buffers dying at an op its input's gradient may take over: none;
   an output's gradient or a residual (an elementwise op's backward, one
   fusion); or a residual alone (a grouped matmul's: XLA makes its weight
   gradient first, the last reader of its activation input, then the input
   gradient in the freed place; the output's gradient both read stays). */
typedef enum { TAKE_NONE, TAKE_ANY, TAKE_RESIDUAL } take_t;

/* The gradient of input @p ti takes over a buffer of its size that dies at
   this op (backward position @p p): first an output's gradient (@p how
   TAKE_ANY), else a residual this op is the last backward reader of. */
static bool take_dying(meter_t *m, scratch_t *s, const bound_t *bd, const remat_op_t *op,
                       size_t p, size_t ti, take_t how) {
    const uint64_t want = bd->gbytes[ti];
    for (size_t i = 0; how == TAKE_ANY && i < op->nout; i++) {
        size_t o = op->out[i];
        if (s->glive[o] && !s->virt[o] && bd->gbytes[o] == want) {
            s->glive[o] = 0; /* backward_end finds it gone */
            return true;
        }
    }
    for (size_t i = 0; i < op->nsaves; i++) {
        size_t buf = bd->ix.storage[op->saves[i]];
        if (s->live[buf] && s->bwd_use[buf] == p && s->cur[buf] == want) {
            free_buf(m, s, buf);
            add_const(m, REMAT_CAT_ACT_GRADS, (int64_t)want);
            return true;
        }
    }
    return false;
}

/* An op's backward, around the moment it is measured: its inputs'
   gradients are allocated (once: later writers accumulate into them), over
   a dying buffer of their size as @p how allows (take_t); then its
   outputs' gradients are consumed and the residuals whose last reader it is
   (at backward position @p p) are freed. The inputs are @p in (op's, or
   only those with a gradient). Inline here: a profile runs it for every
   op. */
static inline void backward_begin(meter_t *m, scratch_t *s, const bound_t *bd,
                                  const remat_op_t *op, size_t p, const size_t *in, size_t nin,
                                  take_t how) {
    for (size_t i = 0; i < nin; i++) {
        size_t ti = in[i];
        if (!bd->gbytes[ti] || s->glive[ti]) {
            continue;
        }
        /* a fused tensor's gradient is fused too: computed inside the
           backward fusion that reads it, never materialized */
        if (!s->virt[ti] && !(how != TAKE_NONE && take_dying(m, s, bd, op, p, ti, how))) {
            add_const(m, REMAT_CAT_ACT_GRADS, (int64_t)bd->gbytes[ti]);
        }
        s->glive[ti] = 1;
    }
}

static inline void backward_end(meter_t *m, scratch_t *s, const bound_t *bd,
                                const remat_op_t *op, size_t p) {
    for (size_t i = 0; i < op->nout; i++) {
        size_t to = op->out[i];
        if (s->glive[to]) {
            s->glive[to] = 0;
            if (!s->virt[to]) {
                add_const(m, REMAT_CAT_ACT_GRADS, -(int64_t)bd->gbytes[to]);
            }
        }
    }
    /* the residuals whose last backward reader this is, its own or those a
       fused tensor it reads is computed from */
    for (size_t buf = s->bwd_head[p]; buf != REMAT_NONE; buf = s->bwd_next[buf]) {
        assert(s->bwd_use[buf] == p);
        free_buf(m, s, buf);
    }
}

void remat_i_backward_begin(meter_t *m, scratch_t *s, const remat_block_t *b, const bound_t *bd,
                            const remat_op_t *op, size_t p, bool inplace) {
    backward_begin(m, s, bd, op, p, op->in, op->nin,
                   inplace || bd->ix.inplace[op - b->ops] ? TAKE_ANY : TAKE_NONE);
}

void remat_i_backward_end(meter_t *m, scratch_t *s, const bound_t *bd, const remat_op_t *op,
                          size_t p) {
    backward_end(m, s, bd, op, p);
}

/* Resets @p s for block @p b and copies each buffer's lifetimes from its
   index @p v. Classes start transient. */
void remat_i_buffer_lifetimes(const remat_block_t *b, const remat_i_block_view_t *v,
                              scratch_t *s) {
    const size_t nt = b->ntensors;
    _Static_assert(REMAT_NONE == SIZE_MAX && B_TRANS == 0, "the resets below write bytes");
    memcpy(s->free_fwd, v->free_fwd, nt * sizeof *s->free_fwd);
    memcpy(s->bwd_use, v->bwd_use, nt * sizeof *s->bwd_use);
    memset(s->rec_use, 0xff, nt * sizeof *s->rec_use);
    memset(s->cls, 0, nt);
    memset(s->live, 0, nt);
    memset(s->glive, 0, nt);
    memset(s->virt, 0, nt);
}

/* Per op of block @p b: the sums a profile takes (in op order, as it
   would), the bytes measure_op adds, and its inputs with a gradient, into
   @p k, whose arrays start at @p slab (prep_words of it). */
static void prepare_ops(const remat_block_t *b, const bound_t *bd, size_t *slab,
                        kind_prep_t *k) {
    const size_t no = b->nops;
    _Static_assert(sizeof(int64_t) == sizeof(size_t), "one word each");
    k->xf = (int64_t *)(void *)slab;
    k->xb = k->xf + no;
    k->gin_at = (size_t *)(void *)(k->xb + no);
    k->gin = k->gin_at + no + 1;
    size_t ngin = 0;
    k->fwd_flops = k->bwd_flops = 0;
    k->fwd_s = k->bwd_s = k->act_f_s = k->act_b_s = 0;
    for (size_t j = 0; j < no; j++) {
        const remat_op_t *op = &b->ops[j];
        k->fwd_flops += bd->fwd[j];
        k->bwd_flops += bd->bwd[j];
        k->fwd_s += bd->fwd_s[j];
        k->bwd_s += bd->bwd_s[j];
        k->act_f_s += bd->act_f_s[j];
        k->act_b_s += bd->act_b_s[j];
        const int64_t x = (int64_t)bd->kv_extra[j] + (int64_t)bd->act_mem[j];
        k->xf[j] = (int64_t)(bd->op_gather_mem[j] + bd->gather_next[j]) + x;
        k->xb[j] = (int64_t)(bd->op_gather_mem[j] + bd->gather_prev[j]) + (int64_t)bd->op_wgrad[j] + x;
        k->gin_at[j] = ngin;
        for (size_t i = 0; i < op->nin; i++) {
            if (bd->gbytes[op->in[i]]) {
                k->gin[ngin++] = op->in[i];
            }
        }
    }
    k->gin_at[no] = ngin;
}

/* The words of block @p b's arrays in its kind_prep. */
static size_t prep_words(const remat_block_t *b) {
    size_t nin = 0;
    for (size_t j = 0; j < b->nops; j++) {
        nin += b->ops[j].nin;
    }
    return 3 * b->nops + 1 + nin;
}

/* The bytes of the kinds' preparation: the kinds' preps, then the name
   rows' index, then each kind's arrays, every element pointer-sized; the
   counts are a graph's (no overflow). */
size_t remat_i_prep_bytes(const remat_graph_t *g) {
    size_t words = g->index->nnames;
    for (size_t k = 0; k < g->nkinds; k++) {
        words += prep_words(&g->kinds[k].block);
    }
    _Static_assert(sizeof(kind_prep_t) % sizeof(size_t) == 0, "the arrays stay aligned");
    return g->nkinds * sizeof(kind_prep_t) + words * sizeof(size_t);
}

/* Into s->prep, where the analyzer's arena put remat_i_prep_bytes of
   room. What no config changes is the graph's index (the bound block's
   ix), not here. */
void remat_i_layer_prepare(remat_analyzer_t *an) {
    const remat_graph_t *g = an->g;
    scratch_t *s = &an->s;
    s->row_of = (size_t *)(void *)(s->prep + g->nkinds);
    size_t *z = s->row_of + g->index->nnames;
    for (size_t k = 0; k < g->nkinds; k++) {
        const remat_block_t *b = &g->kinds[k].block;
        prepare_ops(b, &an->kb[k], z, &s->prep[k]);
        z += prep_words(b);
    }
}

/* Frees @p buf after re-run position @p p when backward never reads it
   and no later re-run op does. */
static void rerun_free(meter_t *w, scratch_t *s, size_t buf, size_t p) {
    const bool done = s->rec_use[buf] == REMAT_NONE || s->rec_use[buf] <= p;
    if (s->live[buf] && s->bwd_use[buf] == REMAT_NONE && done) {
        free_buf(w, s, buf);
    }
}

static size_t max_pos(size_t a, size_t b) {
    return a == REMAT_NONE ? b : b == REMAT_NONE ? a : (a > b ? a : b);
}

/* One profile's run: the layer, its plan, and what the plan makes of its
   buffers (classify). */
typedef struct play {
    const remat_block_t *b;
    const bound_t *bd;
    const kind_prep_t *k;
    const remat_plan_t *plan;
    scratch_t *s;
    size_t noff;  /* buffers of class offload */
    size_t nheld; /* buffers of class keep or offload (scratch_t's held) */
    bool rerun;   /* some op is re-run */
} play_t;

/* Sets buffer @p u's key (*@p key, a position or REMAT_NONE) to @p to, and
   moves it to that position's free list (lists through @p next from
   @p head, buffers ascending, as bucket makes them). */
static void relist(size_t *head, size_t *next, size_t u, size_t *key, size_t to) {
    if (*key == to) {
        return;
    }
    if (*key != REMAT_NONE) {
        size_t *link = &head[*key];
        while (*link != u) {
            link = &next[*link];
        }
        *link = next[u];
    }
    *key = to;
    if (to != REMAT_NONE) {
        size_t *link = &head[to];
        while (*link != REMAT_NONE && *link < u) {
            link = &next[*link];
        }
        next[u] = *link;
        *link = u;
    }
}

/* XLA's fusion: a fusable tensor that the plan neither keeps nor offloads
   is never materialized; each op that reads it computes it from its
   producer's inputs, which therefore live until its last reader, forward,
   in the re-run and in backward. Outputs are visited last to first, so a
   chain of fused ops hands the latest reader down to its first inputs. The
   free lists follow each lifetime that moves. */
static void fuse(const play_t *pl) {
    const remat_block_t *b = pl->b;
    scratch_t *s = pl->s;
    for (size_t f = 0; f < pl->bd->ix.nfusable; f++) {
        const size_t t = pl->bd->ix.fusable[f];
        if (pl->plan->fate[t] == REMAT_FATE_DEVICE || pl->plan->fate[t] == REMAT_FATE_OFFLOAD) {
            continue;
        }
        s->virt[t] = 1;
        const remat_op_t *op = &b->ops[b->tensors[t].producer];
        for (size_t i = 0; i < op->nin; i++) {
            size_t u = pl->bd->ix.storage[op->in[i]];
            if (pl->bd->ix.tflags[op->in[i]] & REMAT_I_T_PARAM) {
                continue;
            }
            relist(s->fwd_head, s->fwd_next, u, &s->free_fwd[u],
                   max_pos(s->free_fwd[u], s->free_fwd[t]));
            s->rec_use[u] = max_pos(s->rec_use[u], s->rec_use[t]);
            relist(s->bwd_head, s->bwd_next, u, &s->bwd_use[u],
                   remat_i_min_pos(s->bwd_use[u], s->bwd_use[t]));
        }
    }
}

/* Resets the scratch for the run: the lifetimes before fusion
   (remat_i_buffer_lifetimes, which clears every other per-tensor array)
   and their forward and backward free lists, copied from the kind's. */
static void reset(const play_t *pl) {
    const size_t nt = pl->b->ntensors, np = pl->b->nops;
    const remat_i_block_view_t *ix = &pl->bd->ix;
    scratch_t *s = pl->s;
    remat_i_buffer_lifetimes(pl->b, ix, s);
    memcpy(s->fwd_head, ix->fwd_head, np * sizeof *s->fwd_head);
    memcpy(s->bwd_head, ix->bwd_head, np * sizeof *s->bwd_head);
    memcpy(s->fwd_next, ix->fwd_next, nt * sizeof *s->fwd_next);
    memcpy(s->bwd_next, ix->bwd_next, nt * sizeof *s->bwd_next);
}

/* The re-run's free list (bucket's), in one pass over the owners
   (only an owner has a lifetime), last to first so that lists ascend. */
static void rerun_list(const play_t *pl) {
    scratch_t *s = pl->s;
    for (size_t p = 0; p < pl->b->nops; p++) {
        s->rec_head[p] = REMAT_NONE;
    }
    for (size_t n = pl->bd->ix.nowners; n-- > 0;) {
        const size_t i = pl->bd->ix.owners[n];
        if (s->rec_use[i] != REMAT_NONE) {
            s->rec_next[i] = s->rec_head[s->rec_use[i]];
            s->rec_head[s->rec_use[i]] = i;
        }
    }
}

/* Each buffer's class under the plan (a kept member keeps the buffer), its
   last recompute reader, fusion and the free lists; the re-run's FLOPs and
   time into @p t, summed in op order. */
static void classify(play_t *pl, tpl_t *t) {
    const remat_block_t *b = pl->b;
    const remat_plan_t *plan = pl->plan;
    scratch_t *s = pl->s;
    reset(pl);
    for (size_t i = 0; i < b->ntensors; i++) {
        size_t buf = pl->bd->ix.storage[i];
        if (plan->fate[i] == REMAT_FATE_DEVICE) {
            s->cls[buf] = B_KEEP;
        } else if (plan->fate[i] == REMAT_FATE_OFFLOAD && s->cls[buf] != B_KEEP) {
            s->cls[buf] = B_OFF;
        }
    }
    pl->rerun = false;
    for (size_t j = 0; j < b->nops; j++) {
        if (!plan->recompute_op[j]) {
            continue;
        }
        const remat_op_t *op = &b->ops[j];
        const size_t p = pl->bd->ix.pos[j];
        pl->rerun = true;
        t->recompute_flops += pl->bd->fwd[j];
        t->rec_s += pl->bd->fwd_s[j];
        /* the re-run's collectives, and its gather serves the backward */
        t->act_b_s += pl->bd->act_f_s[j] + (pl->bd->act_br_s[j] - pl->bd->act_b_s[j]);
        for (size_t i = 0; i < op->nin; i++) {
            size_t buf = pl->bd->ix.storage[op->in[i]];
            if (s->rec_use[buf] == REMAT_NONE || p > s->rec_use[buf]) {
                s->rec_use[buf] = p;
            }
        }
    }
    fuse(pl);
    if (pl->rerun) {
        rerun_list(pl); /* else nothing reads it */
    }
}

/* Whether tensor @p i has the layer input's dims (batch, sequence,
   embed): the saved stacks XLA lays out again (step.c, relays_inputs). */
static bool input_shaped(const remat_block_t *b, size_t i) {
    const remat_tensor_t *x = &b->tensors[b->inputs[0]], *t = &b->tensors[i];
    return t->rank == x->rank && memcmp(t->dim, x->dim, x->rank * sizeof *x->dim) == 0;
}

/* Whether op kind @p k is elementwise on one input, so that XLA fuses it
   into its reader: an activation, a scale, a cast. */
static bool unary_elementwise(remat_opkind_t k) {
    return k == REMAT_OP_SCALE || k == REMAT_OP_SILU || k == REMAT_OP_GELU ||
           k == REMAT_OP_CAST || k == REMAT_OP_SIGMOID || k == REMAT_OP_TANH;
}

/* The buffer that tensor @p i stands for in an elementwise fusion: its own
   when kept or offloaded, else, through the unary elementwise ops that
   made it, the first kept or offloaded one; REMAT_NONE when a transient
   made by anything else (a matmul, a norm) is on the way. */
static size_t fused_source(const play_t *pl, size_t i) {
    const remat_block_t *b = pl->b;
    for (size_t hops = 0; hops < b->ntensors; hops++) {
        const size_t buf = pl->bd->ix.storage[i], p = b->tensors[i].producer;
        if (pl->s->cls[buf] != B_TRANS) {
            return buf;
        }
        if (p == REMAT_NONE || b->ops[p].nin != 1 || !unary_elementwise(b->ops[p].kind)) {
            return REMAT_NONE;
        }
        i = b->ops[p].in[0];
    }
    return REMAT_NONE;
}

/* Whether kept buffer @p k meets an offloaded buffer in one elementwise
   add or multiply (through unary elementwise ops on either side): the
   fusion that reads both in the backward reads the kept stack laid out
   again (step.c, relays_one_slice). The layer input offloaded is no such
   partner: a 4-layer llama2-7b compile on v5e-16 with the input offloaded
   and the output projection kept peels the last layer and holds one
   projection stack, in its own layout (docs/validation.md). */
static bool meets_offloaded(const play_t *pl, size_t k) {
    const remat_block_t *b = pl->b;
    const size_t input = pl->bd->ix.storage[b->inputs[0]];
    for (size_t j = 0; j < b->nops; j++) {
        const remat_op_t *op = &b->ops[j];
        if (op->kind != REMAT_OP_ADD && op->kind != REMAT_OP_MUL) {
            continue;
        }
        bool kept = false, off = false;
        for (size_t i = 0; i < op->nin; i++) {
            const size_t src = fused_source(pl, op->in[i]);
            kept |= src == k;
            off |= src != REMAT_NONE && src != input && pl->s->cls[src] == B_OFF;
        }
        if (kept && off) {
            return true;
        }
    }
    return false;
}

/* Whether XLA stores this layer's residual-stream tensors, [B, S, E],
   sequence-minor in the forward: where its weights stream (windowed
   einsums) and the embed is not a power of two. 4-layer compiles:
   llama2-13b (5120) on v5e-16 under full and qkv_proj_offloaded and on
   v5e-32, gemma-7b (3072) on v5e-16 and Envy (1536) on v5p-16 carry
   them {1,2,0} through the forward loop; every embed of 4096 or 8192
   carries them row-major, and so does llama2-13b on v5e-256, whose
   weights are gathered, not streamed. */
static bool stores_sequence_minor(const play_t *pl) {
    const size_t x = pl->b->inputs[0];
    const uint64_t e = pl->bd->tdim[x][pl->b->tensors[x].rank - 1];
    bool streamed = false;
    for (size_t j = 0; j < pl->b->nops && !streamed; j++) {
        streamed = pl->bd->streams[j];
    }
    return streamed && (e & (e - 1)) != 0;
}

/* The kept stacks XLA lays out again on one slice when a residual is
   offloaded (step.c, relays_one_slice): those that meet an offloaded one
   (the backward's fusion reads them in its layout), and, where the
   forward stores the residual stream sequence-minor, every kept one shaped
   like the input (the peeled layer reads them row-major). */
static bool relaid_on_one_slice(const play_t *pl, size_t i, bool seq_minor) {
    return (seq_minor && input_shaped(pl->b, i)) || meets_offloaded(pl, i);
}

/* Kept and offloaded bytes, FLOPs and op times of one layer; lists the
   kept and offloaded buffers (held) and counts the offloaded ones. */
static void totals(play_t *pl, tpl_t *t) {
    const bound_t *bd = pl->bd;
    const scratch_t *s = pl->s;
    pl->noff = pl->nheld = 0;
    for (size_t n = 0; n < pl->bd->ix.nowners; n++) {
        const size_t i = pl->bd->ix.owners[n];
        if (s->cls[i] == B_KEEP) {
            t->saved += bd->kbytes[i];
            t->input_kept += i == pl->b->inputs[0] ? (int64_t)bd->kbytes[i] : 0;
            t->relaid += input_shaped(pl->b, i) ? (int64_t)bd->kbytes[i] : 0;
        } else if (s->cls[i] == B_OFF) {
            t->offloaded += bd->kbytes[i];
            pl->noff++;
        } else {
            continue;
        }
        s->held[pl->nheld++] = i;
    }
    const bool seq_minor = pl->noff && stores_sequence_minor(pl);
    for (size_t n = 0; pl->noff && n < pl->nheld; n++) {
        const size_t i = s->held[n];
        if (s->cls[i] == B_KEEP && relaid_on_one_slice(pl, i, seq_minor)) {
            t->relaid_one += (int64_t)bd->kbytes[i];
            t->relaid_one_input += i == pl->b->inputs[0] ? (int64_t)bd->kbytes[i] : 0;
        }
    }
    t->fwd_flops = pl->k->fwd_flops;
    t->bwd_flops = pl->k->bwd_flops;
    t->fwd_s = pl->k->fwd_s;
    t->bwd_s = pl->k->bwd_s;
    t->act_f_s = pl->k->act_f_s;
    t->act_b_s += pl->k->act_b_s;
}

/* Forward (1)-(4). The layer input's buffer is in the caller's baseline.
   @p rec, when traced, gets every measure. */
static void play_forward(const play_t *pl, tpl_t *t, rel_events_t *rec) {
    const remat_block_t *b = pl->b;
    const bound_t *bd = pl->bd;
    scratch_t *s = pl->s;
    const size_t x = b->inputs[0], ys = bd->ix.storage[b->outputs[0]];
    meter_t m = {.rec = rec};
    s->live[x] = 1;
    s->cat[x] = REMAT_CAT_SAVED;
    s->cur[x] = bd->kbytes[x];
    for (size_t p = 0; p < b->nops; p++) {
        const size_t j = b->order[p];
        for (size_t n = pl->bd->ix.out_at[p]; n < pl->bd->ix.out_at[p + 1]; n++) {
            const size_t o = pl->bd->ix.outs[n];
            if (!s->virt[o]) {
                /* A residual kept as a smaller copy (fp8) is a working
                   activation until its last forward reader. */
                bool saved = (s->cls[o] == B_KEEP && bd->kbytes[o] == bd->bytes[o]) || o == ys;
                alloc_buf(&m, s, o, bd->bytes[o],
                          saved ? REMAT_CAT_SAVED : REMAT_CAT_ACTIVATIONS);
            }
        }
        measure_op(&m, bd, j, REMAT_STEP_FORWARD, pl->k->xf[j]);
        /* Every buffer whose last forward reader this is: an operand, or
           the input of a fused tensor this op computes inside. */
        for (size_t buf = s->fwd_head[p]; buf != REMAT_NONE; buf = s->fwd_next[buf]) {
            if (buf == ys || buf == x || !s->live[buf]) {
                continue;
            }
            if (s->cls[buf] == B_TRANS) {
                free_buf(&m, s, buf);
            } else if (s->cur[buf] != bd->kbytes[buf]) {
                /* Done in forward: only the quantized copy stays. */
                free_buf(&m, s, buf);
                alloc_buf(&m, s, buf, bd->kbytes[buf],
                          s->cls[buf] == B_KEEP ? REMAT_CAT_SAVED : REMAT_CAT_ACTIVATIONS);
            }
        }
    }
    for (size_t n = 0; pl->noff && n < pl->nheld; n++) {
        const size_t i = s->held[n];
        if (s->cls[i] == B_OFF && s->live[i]) {
            free_buf(&m, s, i);
        }
    }
    t->fwd_peak = m.peak;
    t->fwd_op = m.op;
    memcpy(t->fwd_cats, m.peak_cats, sizeof m.cats);
    t->fwd_np = m.np_peak;
    memcpy(t->fwd_np_cats, m.np_cats, sizeof m.cats);
    t->fwd_delta = m.live;
    memcpy(t->fwd_dcats, m.cats, sizeof m.cats);
}

/* The backward's start: the kept buffers live (SAVED), and (5) the
   offloaded ones fetched (measured); then those that nothing in backward
   reads are freed. Only they are live. */
static void fetch(const play_t *pl, meter_t *w) {
    const size_t *held = pl->s->held, nheld = pl->nheld;
    const uint64_t *kbytes = pl->bd->kbytes;
    scratch_t *s = pl->s;
    memset(s->live, 0, pl->b->ntensors);
    for (size_t n = 0; n < nheld; n++) {
        const size_t i = held[n];
        if (s->cls[i] == B_KEEP) {
            s->live[i] = 1;
            s->cat[i] = REMAT_CAT_SAVED;
            s->cur[i] = kbytes[i];
        } else {
            alloc_buf(w, s, i, kbytes[i], REMAT_CAT_FETCHED);
        }
        if (!pl->noff && s->bwd_use[i] == REMAT_NONE && s->rec_use[i] == REMAT_NONE) {
            free_buf(w, s, i); /* no fetch to measure first */
        }
    }
    if (!pl->noff) {
        return;
    }
    measure(w, REMAT_STEP_FETCH, REMAT_NONE, 0);
    for (size_t n = 0; n < nheld; n++) {
        const size_t i = held[n];
        if (s->bwd_use[i] == REMAT_NONE && s->rec_use[i] == REMAT_NONE) {
            free_buf(w, s, i);
        }
    }
}

/* (6) The plan's re-run ops, in forward order. */
static void play_recompute(const play_t *pl, meter_t *w) {
    const remat_block_t *b = pl->b;
    const remat_plan_t *plan = pl->plan;
    scratch_t *s = pl->s;
    for (size_t p = 0; pl->rerun && p < b->nops; p++) {
        size_t j = b->order[p];
        if (!plan->recompute_op[j]) {
            continue;
        }
        const remat_op_t *op = &b->ops[j];
        for (size_t i = 0; i < op->nout; i++) {
            /* Outputs nothing needs are dead code in the re-run (XLA drops
               them): a dropout re-run for its mask makes no data output. */
            size_t buf = pl->bd->ix.storage[op->out[i]];
            if (!s->live[buf] && plan->needed[op->out[i]] && !s->virt[buf]) {
                alloc_buf(w, s, buf, pl->bd->bytes[buf], REMAT_CAT_RECOMPUTE);
                w->made += (int64_t)pl->bd->bytes[buf];
            }
        }
        measure_op(w, pl->bd, j, REMAT_STEP_RECOMPUTE, pl->k->xf[j]);
        /* freed here: what nothing in backward reads, once its last re-run
           reader has run, if that is this op or the buffer is its output
           (an input's last re-run reader is this op or a later one, so the
           list has every input this op can free) */
        for (size_t buf = s->rec_head[p]; buf != REMAT_NONE; buf = s->rec_next[buf]) {
            rerun_free(w, s, buf, p);
        }
        for (size_t i = 0; i < op->nin; i++) {
            assert(s->rec_use[pl->bd->ix.storage[op->in[i]]] >= p);
        }
        for (size_t i = 0; i < op->nout; i++) {
            rerun_free(w, s, pl->bd->ix.storage[op->out[i]], p);
        }
    }
}

/* The gather groups' copies the plan's re-run makes: all of them when it
   re-runs an op of a group's span (the group is gathered whole there),
   else none. */
static int64_t rerun_group(const play_t *pl) {
    for (size_t j = 0; pl->rerun && j < pl->b->nops; j++) {
        if (pl->plan->recompute_op[j] && pl->bd->grouped[j]) {
            return (int64_t)pl->bd->group_mem;
        }
    }
    return 0;
}

/* The gradients a grouped matmul adds to ones already made (inputs @p in,
   @p n of them), live while it runs: a kernel (Megablox's gmm) writes a
   buffer of its own, which XLA sums into the first after (add_any), where
   an einsum's output fuses with the add. DeepSeek-V2 236B's step holds
   both of the routed tokens' gradients from the experts' two input
   projections at once (bf16[196608, 5120] each, v5p-16, batch 16). */
static int64_t own_parts(const play_t *pl, const size_t *in, size_t n) {
    int64_t b = 0;
    for (size_t i = 0; i < n; i++) {
        const size_t ti = in[i];
        if (pl->s->glive[ti] && !pl->s->virt[ti] && !(pl->bd->ix.tflags[ti] & REMAT_I_T_PARAM)) {
            b += (int64_t)pl->bd->gbytes[ti];
        }
    }
    return b;
}

/* Backward (5)-(7). Baseline: kept buffers (SAVED) and the output's
   gradient. */
static void play_backward(const play_t *pl, tpl_t *t, rel_events_t *rec) {
    const remat_block_t *b = pl->b;
    scratch_t *s = pl->s;
    meter_t w = {.rec = rec};
    s->glive[b->outputs[0]] = 1;
    fetch(pl, &w);
    play_recompute(pl, &w);
    t->rec_held = w.cats[REMAT_CAT_RECOMPUTE];
    t->rec_made = w.made;
    assert(t->rec_made >= t->rec_held);
    t->rec_group = rerun_group(pl);
    for (size_t p = b->nops; p-- > 0;) {
        size_t j = b->order[p];
        const remat_op_t *op = &b->ops[j];
        if (!op->has_backward) {
            continue;
        }
        const size_t *gin = pl->k->gin, *at = pl->k->gin_at;
        /* a grouped matmul (ragged), not an op of a gather group's span
           (bound_t's grouped) */
        const bool ragged = op->ragged[0];
        const int64_t part = ragged ? own_parts(pl, gin + at[j], at[j + 1] - at[j]) : 0;
        const take_t how = pl->bd->ix.inplace[j] ? TAKE_ANY : ragged ? TAKE_RESIDUAL : TAKE_NONE;
        backward_begin(&w, s, pl->bd, op, p, gin + at[j], at[j + 1] - at[j], how);
        add_const(&w, REMAT_CAT_ACT_GRADS, part);
        measure_op(&w, pl->bd, j, REMAT_STEP_BACKWARD, pl->k->xb[j]);
        add_const(&w, REMAT_CAT_ACT_GRADS, -part);
        backward_end(&w, s, pl->bd, op, p);
    }
    t->bwd_peak = w.peak;
    t->bwd_step = w.step;
    t->bwd_op = w.op;
    memcpy(t->bwd_cats, w.peak_cats, sizeof w.cats);
    t->bwd_np = w.np_peak;
    memcpy(t->bwd_np_cats, w.np_cats, sizeof w.cats);
    t->bwd_delta = w.live;
    memcpy(t->bwd_dcats, w.cats, sizeof w.cats);
}

/* One profile; a traced run records its measures in @p fwd and @p bwd
   (else both are NULL). */
static void profile_layer(play_t *pl, tpl_t *t, rel_events_t *fwd, rel_events_t *bwd) {
    memset(t, 0, sizeof *t);
    classify(pl, t);
    totals(pl, t);
    play_forward(pl, t, fwd);
    play_backward(pl, t, bwd);
    assert(t->fwd_dcats[REMAT_CAT_GATHERED] == 0 && t->bwd_dcats[REMAT_CAT_GATHERED] == 0 &&
           t->bwd_dcats[REMAT_CAT_GRAD_BUFFER] == 0 && t->fwd_dcats[REMAT_CAT_KV_GATHER] == 0 &&
           t->bwd_dcats[REMAT_CAT_KV_GATHER] == 0);
}

/* ---- the tables: per tensor and per checkpoint name --------------------- */

/* The row of name id @p id (remat_i_layer_prepare), appended when new, in
   the result's memory (remat_i_result_room: room for 16, then doubling). */
static remat_name_row_t *name_row(remat_result_t *r, scratch_t *s, const remat_graph_t *g,
                                  size_t id) {
    if (s->row_of[id] != REMAT_NONE) {
        return &r->names[s->row_of[id]];
    }
    const size_t count = r->nnames;
    r->names = remat_i_result_room(r, r->names, count, sizeof *r->names, 16);
    s->row_of[id] = count;
    remat_name_row_t *row = &r->names[r->nnames++];
    /* the index keeps each name in REMAT_NAME_LEN bytes, NULs after it */
    _Static_assert(sizeof row->name == REMAT_NAME_LEN, "a row's name is an index name's slot");
    memcpy(row->name, remat_i_index_name(g, id), sizeof row->name);
    row->recompute_flops = row->saved_bytes = row->offloaded_bytes = 0;
    return row;
}

/* The id of the checkpoint name a buffer's bytes are reported under: the
   first tag of a member with the buffer's fate, the owner first. */
static size_t buffer_name(const remat_block_t *b, const remat_i_block_view_t *ix,
                          const remat_plan_t *plan, const remat_policy_t *policy, size_t layer,
                          size_t buf, remat_fate_t fate) {
    /* The buffer's own name (gpt3's qkv_proj), the one that placed it there
       when it has several (llama's context and attention_out). One name is
       the answer whatever placed it: no lookup. */
    const remat_tensor_t *t = &b->tensors[buf];
    const size_t *ids = &ix->tag_id[buf * REMAT_MAX_TAGS];
    if (t->ntags == 1) {
        return ids[0];
    }
    remat_place_t want = fate == REMAT_FATE_DEVICE ? REMAT_PLACE_DEVICE : REMAT_PLACE_OFFLOAD;
    for (size_t j = 0; j < t->ntags; j++) {
        remat_place_t got;
        if (remat_policy_lookup(policy, t->tags[j], layer, &got) && got == want) {
            return ids[j];
        }
    }
    if (t->ntags) {
        return ids[0];
    }
    for (size_t i = 0; i < b->ntensors; i++) {
        if (b->tensors[i].storage == buf && plan->fate[i] == fate && b->tensors[i].ntags) {
            return ix->tag_id[i * REMAT_MAX_TAGS];
        }
    }
    return buf == b->inputs[0] ? REMAT_I_NAME_INPUT : REMAT_I_NAME_UNNAMED;
}

/* The tensor rows of profile @p pr, every field written (they are not
   zeroed), and its buffers' bytes by name; reads the classes and the
   @p nheld kept and offloaded buffers its profile_layer left in the
   scratch. */
static remat_status_t saved_rows(remat_analyzer_t *an, const remat_policy_t *policy,
                                 remat_profile_t *pr, size_t nheld, remat_result_t *r,
                                 remat_error_t *err) {
    const remat_block_t *b = &an->g->kinds[pr->kind].block;
    const bound_t *lb = &an->kb[pr->kind];
    scratch_t *s = &an->s;
    pr->tensors = remat_i_result_alloc(r, b->ntensors * sizeof *pr->tensors);
    for (size_t i = 0; i < b->ntensors; i++) {
        remat_tensor_row_t *row = &pr->tensors[i];
        row->tensor = i;
        memcpy(row->shape, lb->tdim[i], sizeof row->shape);
        row->bytes = lb->bytes[i];
        row->asked = pr->plan.asked[i];
        row->fate = pr->plan.fate[i];
        row->unused = pr->plan.unused[i];
        row->recompute_flops = 0; /* recompute_rows */
    }
    for (size_t n = 0; n < nheld; n++) {
        const size_t i = s->held[n];
        remat_fate_t f = s->cls[i] == B_KEEP ? REMAT_FATE_DEVICE : REMAT_FATE_OFFLOAD;
        remat_name_row_t *nr =
            name_row(r, s, an->g, buffer_name(b, &lb->ix, &pr->plan, policy, pr->first, i, f));
        uint64_t *acc = f == REMAT_FATE_DEVICE ? &nr->saved_bytes : &nr->offloaded_bytes;
        remat_status_t st =
            sum_checked(acc, lb->kbytes[i], pr->nlayers, "saved bytes", err);
        if (st) {
            return st;
        }
    }
    return REMAT_OK;
}

/* Profile @p pr's re-run FLOPs, in its tensor rows and by name. An op's go
   to its first output that is needed (a dropout re-run for its mask: the
   mask), and under the name of its first tagged output (the index's
   op_name). */
static remat_status_t recompute_rows(remat_analyzer_t *an, remat_profile_t *pr,
                                     remat_result_t *r, remat_error_t *err) {
    const remat_block_t *b = &an->g->kinds[pr->kind].block;
    const size_t *op_name = an->kb[pr->kind].ix.op_name;
    const uint64_t *fwd = an->kb[pr->kind].fwd;
    for (size_t j = 0; j < b->nops; j++) {
        if (!pr->plan.recompute_op[j]) {
            continue;
        }
        const remat_op_t *op = &b->ops[j];
        for (size_t k = 0; k < op->nout; k++) {
            if (pr->plan.needed[op->out[k]]) {
                pr->tensors[op->out[k]].recompute_flops = fwd[j];
                break;
            }
        }
        remat_status_t st = sum_checked(&name_row(r, &an->s, an->g, op_name[j])->recompute_flops, fwd[j],
                                        pr->nlayers, "recompute FLOPs", err);
        if (st) {
            return st;
        }
    }
    return REMAT_OK;
}

remat_status_t remat_i_profile_layers(remat_analyzer_t *an, const remat_policy_t *policy,
                                      bool lite, remat_result_t *r, remat_error_t *err) {
    if (r->nprofiles > an->tpls_cap) {
        an->tpls = remat_i_xrealloc(an->tpls, r->nprofiles * sizeof *an->tpls);
        an->tpls_cap = r->nprofiles;
    }
    remat_trace_t *tr = an->trace;
    if (tr) {
        remat_i_trace_profiles(tr, r->nprofiles);
    }
    assert(r->nnames == 0 && "a run's name rows start empty (result_begin)");
    for (size_t i = 0; !lite && i < an->g->index->nnames; i++) {
        an->s.row_of[i] = REMAT_NONE;
    }
    for (size_t p = 0; p < r->nprofiles; p++) {
        remat_profile_t *pr = &r->profiles[p];
        tpl_t *t = &an->tpls[p];
        play_t pl = {.b = &an->g->kinds[pr->kind].block, .bd = &an->kb[pr->kind],
                     .k = &an->s.prep[pr->kind], .plan = &pr->plan, .s = &an->s};
        profile_layer(&pl, t, tr ? &tr->fwd[p] : NULL, tr ? &tr->bwd[p] : NULL);
        t->kind = pr->kind;
        const remat_op_t *ops = pl.b->ops;
        t->fwd_name = ops[t->fwd_op].name;
        t->bwd_name = t->bwd_op == REMAT_NONE ? NULL : ops[t->bwd_op].name;
        pr->fwd_peak_rel = t->fwd_peak > 0 ? (uint64_t)t->fwd_peak : 0;
        pr->bwd_peak_rel = t->bwd_peak > 0 ? (uint64_t)t->bwd_peak : 0;
        if (lite) {
            continue; /* the solver reads only the verdict and the times */
        }
        remat_status_t st;
        if ((st = saved_rows(an, policy, pr, pl.nheld, r, err)) || (st = recompute_rows(an, pr, r, err))) {
            return st;
        }
    }
    return REMAT_OK;
}
