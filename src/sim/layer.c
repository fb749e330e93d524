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
 *    gradients, K/V gathered over the context axis) live only while their
 *    op runs: they add to the peaks, never to the deltas.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_rooms.h"
#include "util.h"

/* Every scratch array in one allocation, widest elements first (cur, then
   the size_t arrays), so each array starts aligned; release frees it
   whole. The counts are a graph's: no overflow. */
void remat_i_scratch_init(scratch_t *s, size_t ntensors, size_t nops) {
    const size_t n = ntensors, np = nops ? nops : 1;
    char *slab = remat_i_xcalloc(1, n * sizeof(uint64_t) + (6 * n + 3 * np) * sizeof(size_t) +
                                        5 * n);
    s->cur = (uint64_t *)(void *)slab;
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
    unsigned char *c = (unsigned char *)(s->bwd_head + np);
    s->cls = c;
    s->live = c + n;
    s->cat = c + 2 * n;
    s->glive = c + 3 * n;
    s->virt = c + 4 * n;
}

void remat_i_scratch_release(scratch_t *s) {
    free(s->cur);
    memset(s, 0, sizeof *s);
}

/* One free list: buffer i in the list of position key[i] (none when
   key[i] is REMAT_NONE), pushed last to first so that lists ascend. */
static void bucket(const size_t *key, size_t n, size_t npos, size_t *head, size_t *next) {
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

void remat_i_buckets(const remat_block_t *b, scratch_t *s) {
    bucket(s->free_fwd, b->ntensors, b->nops, s->fwd_head, s->fwd_next);
    bucket(s->rec_use, b->ntensors, b->nops, s->rec_head, s->rec_next);
    bucket(s->bwd_use, b->ntensors, b->nops, s->bwd_head, s->bwd_next);
}

static void measure(meter_t *m, remat_step_t step, size_t op) {
    assert(meter_consistent(m));
    if (m->rec) {
        remat_i_rel_push(m->rec, m, step, op);
    }
    if (!m->any || m->live > m->peak) {
        m->any = true;
        m->peak = m->live;
        memcpy(m->peak_cats, m->cats, sizeof m->cats);
        m->step = step;
        m->op = op;
    }
}

/* Measures op @p j at @p step with the buffers that live only while it runs:
   its weights gathered for it (and the next op's, prefetched), in backward
   its weights' whole gradients before their reduce-scatter, and K/V
   gathered over the context axis. */
static void measure_op(meter_t *m, const bound_t *bd, size_t j, remat_step_t step) {
    const bool bwd = step == REMAT_STEP_BACKWARD;
    const int64_t g = (int64_t)(bd->op_gather_mem[j] + (bwd ? bd->gather_prev[j] : bd->gather_next[j]));
    const int64_t w = bwd ? (int64_t)bd->op_wgrad[j] : 0, kv = (int64_t)bd->kv_extra[j];
    add_const(m, REMAT_CAT_GATHERED, g);
    add_const(m, REMAT_CAT_GRAD_BUFFER, w);
    add_const(m, REMAT_CAT_KV_GATHER, kv);
    measure(m, step, j);
    add_const(m, REMAT_CAT_GATHERED, -g);
    add_const(m, REMAT_CAT_GRAD_BUFFER, -w);
    add_const(m, REMAT_CAT_KV_GATHER, -kv);
}

static size_t min_pos(size_t a, size_t b) {
    return a == REMAT_NONE ? b : b == REMAT_NONE ? a : (a < b ? a : b);
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

/* The gradient of input @p ti takes over a buffer of its size that dies at
   this op (backward position @p p): first an output's gradient, else a
   residual this op is the last backward reader of. */
static bool take_dying(meter_t *m, scratch_t *s, const remat_block_t *b, const bound_t *bd,
                       const remat_op_t *op, size_t p, size_t ti) {
    const uint64_t want = bd->gbytes[ti];
    for (size_t i = 0; i < op->nout; i++) {
        size_t o = op->out[i];
        if (s->glive[o] && !s->virt[o] && bd->gbytes[o] == want) {
            s->glive[o] = 0; /* backward_end finds it gone */
            return true;
        }
    }
    for (size_t i = 0; i < op->nsaves; i++) {
        size_t buf = b->tensors[op->saves[i]].storage;
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
   a dying buffer of their size where the op is elementwise; then its
   outputs' gradients are consumed and the residuals whose last reader it is
   (at backward position @p p) are freed. */
void remat_i_backward_begin(meter_t *m, scratch_t *s, const remat_block_t *b, const bound_t *bd,
                            const remat_op_t *op, size_t p) {
    const bool inplace = elementwise_backward(op->kind);
    for (size_t i = 0; i < op->nin; i++) {
        size_t ti = op->in[i];
        if (!bd->gbytes[ti] || s->glive[ti]) {
            continue;
        }
        /* a fused tensor's gradient is fused too: computed inside the
           backward fusion that reads it, never materialized */
        if (!s->virt[ti] && !(inplace && take_dying(m, s, b, bd, op, p, ti))) {
            add_const(m, REMAT_CAT_ACT_GRADS, (int64_t)bd->gbytes[ti]);
        }
        s->glive[ti] = 1;
    }
}

void remat_i_backward_end(meter_t *m, scratch_t *s, const bound_t *bd, const remat_op_t *op,
                          size_t p) {
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

/* Resets @p s for block @p b and fills each buffer's forward free position
   (after its last reader; right after its producer when nothing reads it)
   and its last backward reader (the smallest position among ops whose
   backward saves a member). Classes start transient. */
void remat_i_buffer_lifetimes(const remat_block_t *b, const bound_t *bd, scratch_t *s) {
    for (size_t i = 0; i < b->ntensors; i++) {
        s->cls[i] = B_TRANS;
        s->free_fwd[i] = REMAT_NONE;
        s->bwd_use[i] = REMAT_NONE;
        s->rec_use[i] = REMAT_NONE;
        s->live[i] = 0;
        s->glive[i] = 0;
        s->virt[i] = 0;
    }
    for (size_t i = 0; i < b->ntensors; i++) {
        const remat_tensor_t *t = &b->tensors[i];
        size_t buf = t->storage;
        size_t last = t->last_use != REMAT_NONE   ? t->last_use
                      : t->producer != REMAT_NONE ? bd->pos[t->producer]
                                                  : 0;
        if (s->free_fwd[buf] == REMAT_NONE || last > s->free_fwd[buf]) {
            s->free_fwd[buf] = last;
        }
    }
    for (size_t j = 0; j < b->nops; j++) {
        const remat_op_t *op = &b->ops[j];
        if (op->has_backward) {
            for (size_t i = 0; i < op->nsaves; i++) {
                size_t buf = b->tensors[op->saves[i]].storage;
                s->bwd_use[buf] = min_pos(s->bwd_use[buf], bd->pos[j]);
            }
        }
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

/* XLA's fusion: a fusable tensor that the plan neither keeps nor offloads
   is never materialized; each op that reads it computes it from its
   producer's inputs, which therefore live until its last reader, forward,
   in the re-run and in backward. Outputs are visited last to first, so a
   chain of fused ops hands the latest reader down to its first inputs. */
static void fuse(const remat_block_t *b, const bound_t *bd, const remat_plan_t *plan,
                 scratch_t *s) {
    for (size_t p = b->nops; p-- > 0;) {
        const remat_op_t *op = &b->ops[b->order[p]];
        for (size_t o = 0; o < op->nout; o++) {
            size_t t = op->out[o];
            if (!bd->fusable[t] || plan->fate[t] == REMAT_FATE_DEVICE ||
                plan->fate[t] == REMAT_FATE_OFFLOAD) {
                continue;
            }
            s->virt[t] = 1;
            for (size_t i = 0; i < op->nin; i++) {
                size_t u = b->tensors[op->in[i]].storage;
                if (b->tensors[op->in[i]].param) {
                    continue;
                }
                s->free_fwd[u] = max_pos(s->free_fwd[u], s->free_fwd[t]);
                s->rec_use[u] = max_pos(s->rec_use[u], s->rec_use[t]);
                s->bwd_use[u] = min_pos(s->bwd_use[u], s->bwd_use[t]);
            }
        }
    }
}

/* Each buffer's class under @p plan (a kept member keeps the buffer), and
   its last recompute reader. */
static void classify(const remat_block_t *b, const bound_t *bd, const remat_plan_t *plan,
                     scratch_t *s) {
    remat_i_buffer_lifetimes(b, bd, s);
    for (size_t i = 0; i < b->ntensors; i++) {
        size_t buf = b->tensors[i].storage;
        if (plan->fate[i] == REMAT_FATE_DEVICE) {
            s->cls[buf] = B_KEEP;
        } else if (plan->fate[i] == REMAT_FATE_OFFLOAD && s->cls[buf] != B_KEEP) {
            s->cls[buf] = B_OFF;
        }
    }
    for (size_t j = 0; j < b->nops; j++) {
        const remat_op_t *op = &b->ops[j];
        size_t p = bd->pos[j];
        if (plan->recompute_op[j]) {
            for (size_t i = 0; i < op->nin; i++) {
                size_t buf = b->tensors[op->in[i]].storage;
                if (s->rec_use[buf] == REMAT_NONE || p > s->rec_use[buf]) {
                    s->rec_use[buf] = p;
                }
            }
        }
    }
    fuse(b, bd, plan, s);
    remat_i_buckets(b, s);
}

/* Kept and offloaded bytes, FLOPs and op times of one layer. */
static void totals(const remat_block_t *b, const bound_t *bd, const remat_plan_t *plan,
                   const scratch_t *s, tpl_t *t) {
    for (size_t i = 0; i < b->ntensors; i++) {
        if (b->tensors[i].storage != i) {
            continue;
        }
        if (s->cls[i] == B_KEEP) {
            t->saved += bd->kbytes[i];
        } else if (s->cls[i] == B_OFF) {
            t->offloaded += bd->kbytes[i];
        }
    }
    for (size_t j = 0; j < b->nops; j++) {
        t->fwd_flops += bd->fwd[j];
        t->bwd_flops += bd->bwd[j];
        t->fwd_s += bd->fwd_s[j];
        t->bwd_s += bd->bwd_s[j];
        if (plan->recompute_op[j]) {
            t->recompute_flops += bd->fwd[j];
            t->rec_s += bd->fwd_s[j];
        }
    }
}

/* Forward (1)-(4). The layer input's buffer is in the caller's baseline.
   @p rec, when traced, gets every measure. */
static void play_forward(const remat_block_t *b, const bound_t *bd, scratch_t *s, tpl_t *t,
                         rel_events_t *rec) {
    const size_t x = b->inputs[0], ys = b->tensors[b->outputs[0]].storage;
    meter_t m = {.rec = rec};
    s->live[x] = 1;
    s->cat[x] = REMAT_CAT_SAVED;
    s->cur[x] = bd->kbytes[x];
    for (size_t p = 0; p < b->nops; p++) {
        const size_t j = b->order[p];
        const remat_op_t *op = &b->ops[j];
        for (size_t i = 0; i < op->nout; i++) {
            size_t o = op->out[i];
            if (b->tensors[o].storage == o && !s->virt[o]) {
                /* A residual kept as a smaller copy (fp8) is a working
                   activation until its last forward reader. */
                bool saved = (s->cls[o] == B_KEEP && bd->kbytes[o] == bd->bytes[o]) || o == ys;
                alloc_buf(&m, s, o, bd->bytes[o],
                          saved ? REMAT_CAT_SAVED : REMAT_CAT_ACTIVATIONS);
            }
        }
        measure_op(&m, bd, j, REMAT_STEP_FORWARD);
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
    for (size_t i = 0; i < b->ntensors; i++) {
        if (b->tensors[i].storage == i && s->cls[i] == B_OFF && s->live[i]) {
            free_buf(&m, s, i);
        }
    }
    t->fwd_peak = m.peak;
    t->fwd_op = m.op;
    memcpy(t->fwd_cats, m.peak_cats, sizeof m.cats);
    t->fwd_delta = m.live;
    memcpy(t->fwd_dcats, m.cats, sizeof m.cats);
}

/* (5) Fetches the offloaded buffers, then frees those that nothing in
   backward reads. */
static void fetch(const remat_block_t *b, const bound_t *bd, scratch_t *s, meter_t *w) {
    bool fetched = false;
    for (size_t i = 0; i < b->ntensors; i++) {
        if (b->tensors[i].storage == i && s->cls[i] == B_OFF) {
            alloc_buf(w, s, i, bd->kbytes[i], REMAT_CAT_FETCHED);
            fetched = true;
        }
    }
    if (fetched) {
        measure(w, REMAT_STEP_FETCH, REMAT_NONE);
    }
    for (size_t i = 0; i < b->ntensors; i++) {
        if (s->live[i] && s->bwd_use[i] == REMAT_NONE && s->rec_use[i] == REMAT_NONE) {
            free_buf(w, s, i);
        }
    }
}

/* (6) The plan's re-run ops, in forward order. */
static void play_recompute(const remat_block_t *b, const bound_t *bd, const remat_plan_t *plan,
                           scratch_t *s, meter_t *w) {
    for (size_t p = 0; p < b->nops; p++) {
        size_t j = b->order[p];
        if (!plan->recompute_op[j]) {
            continue;
        }
        const remat_op_t *op = &b->ops[j];
        for (size_t i = 0; i < op->nout; i++) {
            /* Outputs nothing needs are dead code in the re-run (XLA drops
               them): a dropout re-run for its mask makes no data output. */
            size_t buf = b->tensors[op->out[i]].storage;
            if (!s->live[buf] && plan->needed[op->out[i]] && !s->virt[buf]) {
                alloc_buf(w, s, buf, bd->bytes[buf], REMAT_CAT_RECOMPUTE);
            }
        }
        measure_op(w, bd, j, REMAT_STEP_RECOMPUTE);
        /* freed here: what nothing in backward reads, once its last re-run
           reader has run, if that is this op or the buffer is its operand */
        for (size_t buf = s->rec_head[p]; buf != REMAT_NONE; buf = s->rec_next[buf]) {
            rerun_free(w, s, buf, p);
        }
        for (size_t k = 0; k < op->nin + op->nout; k++) {
            rerun_free(w, s, operand_buf(b, op, k), p);
        }
    }
}

/* Backward (5)-(7). Baseline: kept buffers (SAVED) and the output's
   gradient. */
static void play_backward(const remat_block_t *b, const bound_t *bd, const remat_plan_t *plan,
                          scratch_t *s, tpl_t *t, rel_events_t *rec) {
    meter_t w = {.rec = rec};
    for (size_t i = 0; i < b->ntensors; i++) {
        s->live[i] = 0;
        if (b->tensors[i].storage == i && s->cls[i] == B_KEEP) {
            s->live[i] = 1;
            s->cat[i] = REMAT_CAT_SAVED;
            s->cur[i] = bd->kbytes[i];
        }
    }
    s->glive[b->outputs[0]] = 1;
    fetch(b, bd, s, &w);
    play_recompute(b, bd, plan, s, &w);
    for (size_t p = b->nops; p-- > 0;) {
        size_t j = b->order[p];
        const remat_op_t *op = &b->ops[j];
        if (!op->has_backward) {
            continue;
        }
        remat_i_backward_begin(&w, s, b, bd, op, p);
        measure_op(&w, bd, j, REMAT_STEP_BACKWARD);
        remat_i_backward_end(&w, s, bd, op, p);
    }
    t->bwd_peak = w.peak;
    t->bwd_step = w.step;
    t->bwd_op = w.op;
    memcpy(t->bwd_cats, w.peak_cats, sizeof w.cats);
    t->bwd_delta = w.live;
    memcpy(t->bwd_dcats, w.cats, sizeof w.cats);
}

/* One profile; a traced run records its measures in @p fwd and @p bwd
   (else both are NULL). */
static void profile_layer(const remat_block_t *b, const bound_t *bd, const remat_plan_t *plan,
                          scratch_t *s, tpl_t *t, rel_events_t *fwd, rel_events_t *bwd) {
    memset(t, 0, sizeof *t);
    classify(b, bd, plan, s);
    totals(b, bd, plan, s, t);
    play_forward(b, bd, s, t, fwd);
    play_backward(b, bd, plan, s, t, bwd);
    assert(t->fwd_dcats[REMAT_CAT_GATHERED] == 0 && t->bwd_dcats[REMAT_CAT_GATHERED] == 0 &&
           t->bwd_dcats[REMAT_CAT_GRAD_BUFFER] == 0 && t->fwd_dcats[REMAT_CAT_KV_GATHER] == 0 &&
           t->bwd_dcats[REMAT_CAT_KV_GATHER] == 0);
}

/* ---- the tables: per tensor and per checkpoint name --------------------- */

/* The row of @p name, appended when new. The rows grow to 8, then double
   (at every power of two from 8 on): the capacity is implied by the count,
   so the public result needs no field for it. */
static remat_name_row_t *name_row(remat_result_t *r, const char *name) {
    for (size_t i = 0; i < r->nnames; i++) {
        if (r->names[i].name[0] == name[0] && strcmp(r->names[i].name, name) == 0) {
            return &r->names[i];
        }
    }
    const size_t count = r->nnames;
    if (count == 0 || (count >= 8 && (count & (count - 1)) == 0)) {
        r->names = remat_i_xrealloc(r->names, (count ? 2 * count : 8) * sizeof *r->names);
    }
    remat_name_row_t *row = &r->names[r->nnames++];
    memset(row, 0, sizeof *row);
    /* graph and policy names are under REMAT_NAME_LEN (graph_load, policy) */
    const size_t n = strlen(name);
    assert(n < sizeof row->name);
    memcpy(row->name, name, n < sizeof row->name ? n : sizeof row->name - 1);
    return row;
}

/* The checkpoint name a buffer's bytes are reported under: the first tag of
   a member with the buffer's fate, the owner first. */
static const char *buffer_name(const remat_block_t *b, const remat_plan_t *plan,
                               const remat_policy_t *policy, size_t layer, size_t buf,
                               remat_fate_t fate) {
    /* The buffer's own name (gpt3's qkv_proj), the one that placed it there
       when it has several (llama's context and attention_out). */
    const remat_tensor_t *t = &b->tensors[buf];
    remat_place_t want = fate == REMAT_FATE_DEVICE ? REMAT_PLACE_DEVICE : REMAT_PLACE_OFFLOAD;
    for (size_t k = 0; k < t->ntags; k++) {
        remat_place_t got;
        if (remat_policy_lookup(policy, t->tags[k], layer, &got) && got == want) {
            return t->tags[k];
        }
    }
    if (t->ntags) {
        return t->tags[0];
    }
    for (size_t i = 0; i < b->ntensors; i++) {
        if (b->tensors[i].storage == buf && plan->fate[i] == fate && b->tensors[i].ntags) {
            return b->tensors[i].tags[0];
        }
    }
    return buf == b->inputs[0] ? "decoder_layer_input" : "(unnamed)";
}

/* Tensor @p i's row under profile @p pr. A re-run's FLOPs go to its first
   output that is needed (a dropout re-run for its mask: the mask). */
static void tensor_row(const remat_block_t *b, const bound_t *lb, const remat_profile_t *pr,
                       size_t i, remat_tensor_row_t *row) {
    const remat_tensor_t *t = &b->tensors[i];
    row->tensor = i;
    memcpy(row->shape, lb->tdim[i], sizeof row->shape);
    row->bytes = lb->bytes[i];
    row->asked = pr->plan.asked[i];
    row->fate = pr->plan.fate[i];
    row->unused = pr->plan.unused[i];
    if (t->producer != REMAT_NONE && pr->plan.recompute_op[t->producer]) {
        const remat_op_t *op = &b->ops[t->producer];
        size_t first = REMAT_NONE;
        for (size_t k = 0; k < op->nout && first == REMAT_NONE; k++) {
            if (pr->plan.needed[op->out[k]]) {
                first = op->out[k];
            }
        }
        if (first == i) {
            row->recompute_flops = lb->fwd[t->producer];
        }
    }
}

/* The tensor rows of profile @p pr and its buffers' bytes by name; reads
   the classes its profile_layer left in the scratch. */
static remat_status_t saved_rows(const remat_analyzer_t *an, const remat_policy_t *policy,
                                 remat_profile_t *pr, remat_result_t *r, remat_error_t *err) {
    const remat_block_t *b = &an->g->kinds[pr->kind].block;
    const bound_t *lb = &an->kb[pr->kind];
    const scratch_t *s = &an->s;
    pr->tensors = remat_i_xcalloc(b->ntensors, sizeof *pr->tensors);
    for (size_t i = 0; i < b->ntensors; i++) {
        tensor_row(b, lb, pr, i, &pr->tensors[i]);
        if (b->tensors[i].storage != i || s->cls[i] == B_TRANS) {
            continue;
        }
        remat_fate_t f = s->cls[i] == B_KEEP ? REMAT_FATE_DEVICE : REMAT_FATE_OFFLOAD;
        remat_name_row_t *nr = name_row(r, buffer_name(b, &pr->plan, policy, pr->first, i, f));
        uint64_t *acc = f == REMAT_FATE_DEVICE ? &nr->saved_bytes : &nr->offloaded_bytes;
        remat_status_t st =
            sum_checked(acc, lb->kbytes[i], pr->nlayers, "saved bytes", err);
        if (st) {
            return st;
        }
    }
    return REMAT_OK;
}

/* Profile @p pr's re-run FLOPs by the name of each op's first tagged
   output. */
static remat_status_t recompute_rows(const remat_analyzer_t *an, const remat_profile_t *pr,
                                     remat_result_t *r, remat_error_t *err) {
    const remat_block_t *b = &an->g->kinds[pr->kind].block;
    for (size_t j = 0; j < b->nops; j++) {
        if (!pr->plan.recompute_op[j]) {
            continue;
        }
        const char *name = "(unnamed)";
        for (size_t i = 0; i < b->ops[j].nout; i++) {
            if (b->tensors[b->ops[j].out[i]].ntags) {
                name = b->tensors[b->ops[j].out[i]].tags[0];
                break;
            }
        }
        remat_status_t st = sum_checked(&name_row(r, name)->recompute_flops,
                                        an->kb[pr->kind].fwd[j], pr->nlayers, "recompute FLOPs",
                                        err);
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
    for (size_t p = 0; p < r->nprofiles; p++) {
        remat_profile_t *pr = &r->profiles[p];
        tpl_t *t = &an->tpls[p];
        profile_layer(&an->g->kinds[pr->kind].block, &an->kb[pr->kind], &pr->plan, &an->s, t,
                      tr ? &tr->fwd[p] : NULL, tr ? &tr->bwd[p] : NULL);
        t->kind = pr->kind;
        const remat_op_t *ops = an->g->kinds[pr->kind].block.ops;
        t->fwd_name = ops[t->fwd_op].name;
        t->bwd_name = t->bwd_op == REMAT_NONE ? NULL : ops[t->bwd_op].name;
        pr->fwd_peak_rel = t->fwd_peak > 0 ? (uint64_t)t->fwd_peak : 0;
        pr->bwd_peak_rel = t->bwd_peak > 0 ? (uint64_t)t->bwd_peak : 0;
        if (lite) {
            continue; /* the solver reads only the verdict and the times */
        }
        remat_status_t st;
        if ((st = saved_rows(an, policy, pr, r, err)) || (st = recompute_rows(an, pr, r, err))) {
            return st;
        }
    }
    return REMAT_OK;
}
