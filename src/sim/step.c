/* SPDX-License-Identifier: MIT */
/*
 * step.c: the step composed from layer profiles, stage by stage: static
 * memory and the residuals of the pipeline's other iterations, the head's
 * embedding (every stage runs the head: MaxText's is outside its pipeline),
 * the stage's layers forward, the head's loss forward and backward (for a
 * graph with no head, the output leaving and its gradient arriving), the
 * layers backward, the embedding backward.
 *
 * Layers of one kind with the same plan share one profile computed once;
 * the step composes profiles, which is exact because a layer's bytes depend
 * only on its kind's block, its plan and the live bytes it starts from.
 *
 * Invariants:
 *  - plans come in runs of identical layers: every layer has exactly one
 *    profile, of its own kind, and a profile's [first, last] spans its
 *    layers;
 *  - the step meter's categories sum to its live bytes, which never go
 *    below zero: what a layer or the head frees was counted before;
 *  - a stage's peak is at least its static bytes plus its in-flight bytes
 *    (they are live from its start to its end);
 *  - the worst stage (the largest peak, the first on ties) is the verdict;
 *  - a traced run measures every event as the peak is measured (the live
 *    bytes plus the reserve), so the highest event of a stage is its peak;
 *    tracing only reads the step, never changes it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_rooms.h"
#include "base/util.h"

typedef struct step {
    meter_t m;
    remat_moment_t at;
    double reserve_fraction; /* XLA's temporaries: a fraction of the transient bytes */
    remat_trace_t *tr;       /* a traced run's events; NULL in an ordinary analysis */
    size_t stage;
    size_t first, last;      /* the stage's layers */
    /* what the logits' weight gradient holds through the layers' backward
       (head_defer): its output's gradient, its activation operands */
    int64_t deferred_grads, deferred_head;
    /* XLA's relaid copy of the saved inputs (relaid_bytes; 0: none) and the
       peeled layers' weight gradients (peeled_grads), set at the turn */
    int64_t relaid, peeled_grads;
} step_t;

/* The bytes that come and go within the step at a moment: all but the
   static state, the weight gradients and other micro-batches' residuals. */
static int64_t transient_bytes(const int64_t *cats) {
    int64_t t = 0;
    for (int c = 0; c < REMAT_CAT_COUNT; c++) {
        bool fixed = c == REMAT_CAT_PARAMS || c == REMAT_CAT_OPTIMIZER || c == REMAT_CAT_GRADS ||
                     c == REMAT_CAT_GRAD_ACCUM || c == REMAT_CAT_RESERVE ||
                     c == REMAT_CAT_INFLIGHT || c == REMAT_CAT_SCAN_WEIGHTS;
        t += fixed ? 0 : cats[c];
    }
    return t;
}

/* Measures the step at a moment: its live bytes plus @p extra (a layer's
   peak above its baseline, with its categories), plus the reserve for what
   XLA adds that liveness misses (temporaries, fragmentation), which grows
   with the transient bytes (docs/memory-model.md). */
static int64_t moment_cats(const step_t *st, const int64_t *extra_cats, int64_t *cats) {
    for (int c = 0; c < REMAT_CAT_COUNT; c++) {
        cats[c] = st->m.cats[c] + (extra_cats ? extra_cats[c] : 0);
    }
    return (int64_t)(st->reserve_fraction * (double)transient_bytes(cats));
}

static void step_measure(step_t *st, int64_t extra, const int64_t *extra_cats,
                         remat_moment_t at) {
    assert(meter_consistent(&st->m) && st->m.live >= 0);
    int64_t cats[REMAT_CAT_COUNT];
    const int64_t reserve = moment_cats(st, extra_cats, cats);
    int64_t v = st->m.live + extra + reserve;
    if (!st->m.any || v > st->m.peak) {
        st->m.any = true;
        st->m.peak = v;
        memcpy(st->m.peak_cats, cats, sizeof cats);
        st->m.peak_cats[REMAT_CAT_RESERVE] += reserve;
        st->at = at;
    }
}

/* The regathered measure (meter_t's np_peak) at a moment: the live bytes
   plus @p extra, the moment's bytes above them less the weights gathered
   ahead at it, with their categories @p extra_cats, and the reserve on
   those. At most step_measure's at the same moment. */
static void step_measure_np(step_t *st, int64_t extra, const int64_t *extra_cats) {
    const int64_t held = st->m.held_gathered;
    assert(held >= 0 && held <= st->m.cats[REMAT_CAT_GATHERED]);
    int64_t cats[REMAT_CAT_COUNT];
    int64_t reserve = moment_cats(st, extra_cats, cats);
    if (held) { /* the groups' copies a remat unit holds for a later backward leave too */
        cats[REMAT_CAT_GATHERED] -= held;
        reserve = (int64_t)(st->reserve_fraction * (double)transient_bytes(cats));
    }
    const int64_t v = st->m.live - held + extra + reserve;
    if (!st->m.any || v > st->m.np_peak) {
        st->m.np_peak = v;
    }
}

/* A traced run's event at moment @p at, measured exactly as step_measure
   measures it (so that the events' highest live bytes are the peak). */
static void step_event(const step_t *st, int64_t extra, const int64_t *extra_cats,
                       remat_moment_t at, size_t profile, double seconds) {
    remat_trace_event_t e = {.stage = st->stage,
                             .layer = at.where == REMAT_AT_LAYER ? at.layer : REMAT_NONE,
                             .profile = profile,
                             .step = at.step,
                             .where = at.where,
                             .op = at.op,
                             .seconds = seconds};
    const int64_t reserve = moment_cats(st, extra_cats, e.cats);
    e.cats[REMAT_CAT_RESERVE] += reserve;
    e.live = st->m.live + extra + reserve;
    remat_i_trace_push(st->tr, &e);
}

static void step_add(step_t *st, int64_t delta, const int64_t *dcats) {
    st->m.live += delta;
    for (int c = 0; c < REMAT_CAT_COUNT; c++) {
        st->m.cats[c] += dcats[c];
    }
}

/* ---- the head ----------------------------------------------------------- */

/* The head's ops gather their own weights unless the chunked loss gathered
   them for the whole head (num_vocab_tiling > 1, after the layers). */
static bool head_gathers_per_op(const remat_analyzer_t *an, size_t p) {
    return p < an->g->head_npre || an->cfg->num_vocab_tiling <= 1;
}

/* The head's forward over positions [from, to), on the step meter, its
   outputs in category @p cat (the head's, or recompute for the chunked
   loss's re-run). A head op's gathered weights live while it runs. */
static void head_forward(const remat_analyzer_t *an, scratch_t *s, step_t *st, size_t from,
                         size_t to, remat_cat_t cat) {
    const remat_graph_t *g = an->g;
    const remat_block_t *b = &g->head;
    const bound_t *bd = &an->hb;
    const size_t feeds = b->tensors[g->head_feeds].storage;
    remat_where_t where = from == 0 ? REMAT_AT_HEAD_PRE : REMAT_AT_HEAD_POST;
    int64_t gcats[REMAT_CAT_COUNT] = {0};
    for (size_t p = from; p < to; p++) {
        size_t j = b->order[p];
        const remat_op_t *op = &b->ops[j];
        for (size_t i = 0; i < op->nout; i++) {
            size_t o = op->out[i];
            if (b->tensors[o].storage == o && !s->live[o]) {
                alloc_buf(&st->m, s, o, bd->bytes[o], o == feeds ? REMAT_CAT_SAVED : cat);
            }
        }
        uint64_t gx = head_gathers_per_op(an, p) ? bd->op_gather_mem[j] : 0;
        gcats[REMAT_CAT_GATHERED] = (int64_t)gx;
        const remat_moment_t at = {
            .step = cat == REMAT_CAT_RECOMPUTE ? REMAT_STEP_RECOMPUTE : REMAT_STEP_FORWARD,
            .where = where,
            .op = op->name};
        step_measure_np(st, (int64_t)gx, gcats); /* forward gathers nothing ahead */
        step_measure(st, (int64_t)gx, gcats, at);
        if (st->tr) {
            step_event(st, (int64_t)gx, gcats, at, REMAT_NONE, bd->fwd_s[j]);
        }
        for (size_t k = 0; k < op->nin + op->nout; k++) {
            size_t buf = operand_buf(b, op, k);
            if (buf != feeds && s->cls[buf] == B_TRANS && s->free_fwd[buf] == p) {
                free_buf(&st->m, s, buf);
            }
        }
    }
}

/* The gathered weights of the op that runs backward after position @p p
   (the next lower one that gathers its own, within p's part of the head:
   before the layers or after them): with fsdp_prefetch XLA starts its
   all-gather while this op runs, as it does for a layer's ops. */
static uint64_t head_prefetch(const remat_analyzer_t *an, size_t p) {
    return an->head_pf[p];
}

void remat_i_step_prepare(remat_analyzer_t *an) {
    if (!an->g->has_head) {
        return;
    }
    const remat_block_t *b = &an->g->head;
    uint64_t below = 0; /* the gather of the highest gathering op below p in its part */
    for (size_t p = 0; p < b->nops; p++) {
        below = p == an->g->head_npre ? 0 : below; /* the part after the layers starts */
        an->head_pf[p] = an->cfg->fsdp_prefetch ? below : 0;
        const size_t j = b->order[p];
        if (b->ops[j].has_backward && head_gathers_per_op(an, p) && an->hb.op_gather_mem[j]) {
            below = an->hb.op_gather_mem[j];
        }
    }
}

/* Whether op @p j of the head (at position @p p) computes its weight
   gradient after the layers' backward: an op after the layers with a
   weight (the logits), unless the chunked loss runs it. XLA schedules that
   gradient (a windowed einsum, reduce-scattering shard by shard) after the
   layers' backward scan, so the op's output gradient and its activation
   operands stay live through it: the compiler's live ranges at e591f30
   hold the compute-dtype logits gradient at the peak of most steps whose
   peak is in the layers' backward (docs/validation.md). */
static bool head_defers(const remat_analyzer_t *an, size_t p, const remat_op_t *op) {
    if (p < an->g->head_npre || !remat_i_loss_grads_deferred(an)) {
        return false;
    }
    for (size_t i = 0; i < op->nin; i++) {
        if (an->g->head.tensors[op->in[i]].param) {
            return true;
        }
    }
    return false;
}

/* Moves what op @p op (backward position @p p) leaves for its deferred
   weight gradient from the op to the step: the bytes its backward is
   about to free (its outputs' gradients, the activation operands it reads
   last) stay, counted in st->deferred_* until the layers' backward ends. */
static void head_defer(const remat_analyzer_t *an, scratch_t *s, step_t *st,
                       const remat_op_t *op, size_t p) {
    const bound_t *bd = &an->hb;
    int64_t grads = 0, acts = 0;
    for (size_t i = 0; i < op->nout; i++) {
        const size_t o = op->out[i];
        grads += s->glive[o] && !s->virt[o] ? (int64_t)bd->gbytes[o] : 0;
    }
    for (size_t i = 0; i < op->nin; i++) {
        const size_t buf = bd->ix.storage[op->in[i]];
        if (!an->g->head.tensors[op->in[i]].param && s->live[buf] && s->bwd_use[buf] == p) {
            acts += (int64_t)s->cur[buf];
        }
    }
    st->deferred_grads += grads;
    st->deferred_head += acts;
}

/* XLA's TPU tile is 128 rows: a weight gradient whose FSDP shard is
   shorter is not reduce-scattered as a windowed einsum. */
enum { WINDOWED_EINSUM_MIN_ROWS = 128 };

/* Whether an op of @p b other than op @p j reads tensor @p w. */
static bool read_by_another(const remat_block_t *b, size_t w, size_t j) {
    for (size_t k = 0; k < b->nops; k++) {
        for (size_t i = 0; k != j && i < b->ops[k].nin; i++) {
            if (b->ops[k].in[i] == w) {
                return true;
            }
        }
    }
    return false;
}

/* Whether the loss's backward @p ce is fused into the two matmuls that read
   the logits' gradient (the input's gradient and the weight gradient), so
   that gradient is never a buffer of its own: the logits stay until those
   matmuls, which is the bytes of a gradient written over them. XLA does so
   where the logits' weight gradient is a plain matmul; where it is a
   windowed einsum, a loop that takes the gradient as its operand, the
   gradient is made beside the logits. The compiler at e591f30 picks the
   windowed einsum when the weight's FSDP shard is a tile of 128 rows or
   more (llama3-8b's [4096, 128256] weight: its gradient beside the logits
   on v6e-32 and TPU7x-8, 128 and 512 rows; fused into the matmuls on
   v6e-64, 64 rows; docs/validation.md). Where another mesh axis is
   sharded there is no windowed einsum (remat_i_windowed_einsums), but the
   gradient is made beside the logits all the same wherever the weight
   gradient waits for the layers' backward, as remat counts it
   (remat_i_loss_grads_deferred): that matmul runs after the loop, so the
   gradient is a buffer held through it (llama3.1-8b on two TPU7x-8
   slices, 32 layers, batch 56, --dump: the loss's `multiply_convert_fusion`
   bf16[56, 2048, 128256] and the logits both live at XLA's peak, the
   weight gradient's matmul after the backward loop). The fused clones
   read on two v6e-8 slices (4 layers, --dump) went with a weight gradient
   made at the loss, before the loop, which is not the step remat counts.
   A tied head's table is never
   fused so: its gradient also takes the embedding's, and XLA makes the
   logits' gradient beside them at any shard (gemma2-9b: 112 rows on
   v5e-32, 14 on v6e-256, the loss's `div` beside the logits at XLA's
   peak in both). */
static bool loss_grad_fused(const remat_analyzer_t *an, const remat_op_t *ce) {
    const remat_block_t *b = &an->g->head;
    const bound_t *bd = &an->hb;
    for (size_t j = 0; j < b->nops && ce->nin; j++) {
        const remat_op_t *op = &b->ops[j];
        if (op->nout == 0 || op->out[0] != ce->in[0]) {
            continue; /* not the op that makes the logits */
        }
        for (size_t i = 0; i < op->nin; i++) {
            const size_t w = op->in[i];
            if (!b->tensors[w].param) {
                continue;
            }
            if (read_by_another(b, w, j)) {
                return false; /* tied: the embedding reads the table too */
            }
            for (size_t d = 0; d < b->tensors[w].rank; d++) {
                const uint64_t rows = bd->tdim[w][d];
                if (rows < bd->ctdim[w][d] && rows < WINDOWED_EINSUM_MIN_ROWS) {
                    return true; /* an FSDP shard under one tile */
                }
            }
        }
    }
    return false;
}

/* The head's backward over positions [from, to), in reverse: a head op's
   gathered weights live while it runs, with the next one's prefetched. An
   op before the layers (the embedding) holds its weights' whole gradient
   before their reduce-scatter; one after them (the logits) does not: XLA
   computes that gradient as a windowed einsum, reduce-scattering shard by
   shard (the compiler's HLO at e591f30: a windowed_dot_general loop with
   shard-size buffers), so only its shards are made. */
static void head_backward(const remat_analyzer_t *an, scratch_t *s, step_t *st, size_t from,
                          size_t to) {
    const remat_graph_t *g = an->g;
    const remat_block_t *b = &g->head;
    const bound_t *bd = &an->hb;
    remat_where_t where = from == 0 ? REMAT_AT_HEAD_PRE : REMAT_AT_HEAD_POST;
    int64_t gcats[REMAT_CAT_COUNT] = {0};
    for (size_t p = to; p-- > from;) {
        size_t j = b->order[p];
        const remat_op_t *op = &b->ops[j];
        if (!op->has_backward) {
            continue;
        }
        const bool fused = op->kind == REMAT_OP_CROSS_ENTROPY && p >= g->head_npre &&
                           remat_i_loss_grads_deferred(an) && loss_grad_fused(an, op);
        remat_i_backward_begin(&st->m, s, b, bd, op, p, fused);
        bool own = head_gathers_per_op(an, p);
        const int64_t pf = (int64_t)head_prefetch(an, p);
        gcats[REMAT_CAT_GATHERED] = own ? (int64_t)bd->op_gather_mem[j] : 0;
        gcats[REMAT_CAT_GRAD_BUFFER] = own && p < g->head_npre ? (int64_t)bd->op_wgrad[j] : 0;
        step_measure_np(st, gcats[REMAT_CAT_GATHERED] + gcats[REMAT_CAT_GRAD_BUFFER], gcats);
        gcats[REMAT_CAT_GATHERED] += pf;
        const int64_t extra = gcats[REMAT_CAT_GATHERED] + gcats[REMAT_CAT_GRAD_BUFFER];
        const remat_moment_t at = {.step = REMAT_STEP_BACKWARD, .where = where, .op = op->name};
        step_measure(st, extra, gcats, at);
        if (st->tr) {
            step_event(st, extra, gcats, at, REMAT_NONE, bd->bwd_s[j]);
        }
        const bool defers = head_defers(an, p, op);
        const int64_t g0 = st->deferred_grads, h0 = st->deferred_head;
        if (defers) {
            head_defer(an, s, st, op, p);
        }
        remat_i_backward_end(&st->m, s, bd, op, p);
        add_const(&st->m, REMAT_CAT_ACT_GRADS, st->deferred_grads - g0);
        add_const(&st->m, REMAT_CAT_HEAD, st->deferred_head - h0);
    }
}

/* Head buffers: residuals stay to their last backward reader, the rest are
   freed after their last forward reader. An input that no backward reads
   (a vision encoder's images, read by its forward only) stays the whole
   step: it is an argument of the step, which XLA counts live throughout
   and the step does not free. The feed to layer 0 belongs to the layers
   once made; the last layer's output arrives from them. */
static void head_prepare(const remat_graph_t *g, const bound_t *hb, scratch_t *s) {
    const remat_block_t *b = &g->head;
    remat_i_buffer_lifetimes(b, &hb->ix, s);
    for (size_t i = 0; i < b->ntensors; i++) {
        if (b->tensors[i].input && !b->tensors[i].residual && i != g->head_takes) {
            s->cls[b->tensors[i].storage] = B_KEEP;
            s->bwd_use[b->tensors[i].storage] = REMAT_NONE;
        }
        if (b->tensors[i].residual) {
            s->cls[b->tensors[i].storage] = B_KEEP;
        }
    }
    s->cls[b->tensors[g->head_feeds].storage] = B_TRANS;
    s->bwd_use[b->tensors[g->head_feeds].storage] = REMAT_NONE;
    remat_i_backward_list(b, s); /* head_forward scans its ops' operands: no forward list */
}

/* ---- plans: runs of identical layers ------------------------------------ */

static remat_status_t check_ranges(const remat_policy_t *policy, size_t L, remat_error_t *err) {
    if (policy->nranges > REMAT_MAX_RANGES) {
        return remat_error_set(err, REMAT_E_POLICY, policy->source, "$.layers",
                               "at most 64 layer ranges");
    }
    for (size_t i = 0; i < policy->nranges; i++) {
        if (policy->ranges[i].last >= L) {
            char path[48];
            snprintf(path, sizeof path, "$.layers[%zu].range", i);
            return remat_error_set(err, REMAT_E_POLICY, policy->source, path,
                                   "range %zu-%zu is beyond the model's %zu layers (0-%zu)",
                                   policy->ranges[i].first, policy->ranges[i].last, L, L - 1);
        }
    }
    return REMAT_OK;
}

/* A new profile at the end of @p r's, zeroed (room for 4, then
   doubling). */
static remat_profile_t *new_profile(remat_result_t *r) {
    r->profiles = remat_i_result_room(r, r->profiles, r->nprofiles, sizeof *r->profiles, 4);
    remat_profile_t *pr = &r->profiles[r->nprofiles++];
    memset(pr, 0, sizeof *pr);
    return pr;
}

/* The profile of @p plan of layer kind @p kind: an equal one already in
   @p r, else a new one starting at layer @p l with a copy of the plan in
   the result's memory. */
static size_t profile_of_plan(remat_result_t *r, size_t kind, const remat_plan_t *plan,
                              size_t l) {
    size_t p = 0;
    while (p < r->nprofiles && (r->profiles[p].kind != kind ||
                                !remat_plan_equal(&r->profiles[p].plan, plan))) {
        p++;
    }
    if (p == r->nprofiles) {
        assert(kind < REMAT_MAX_KINDS && plan->ntensors > 0);
        remat_profile_t *pr = new_profile(r);
        pr->kind = kind;
        remat_i_result_plan(r, &pr->plan, plan);
        pr->first = l;
    }
    return p;
}

/* The set of @p policy's ranges that cover layer @p l, one bit a range
   (check_ranges keeps them to 64). */
static uint64_t range_key(const remat_policy_t *policy, size_t l) {
    uint64_t key = 0;
    for (size_t i = 0; i < policy->nranges; i++) {
        if (l >= policy->ranges[i].first && l <= policy->ranges[i].last) {
            key |= (uint64_t)1 << i;
        }
    }
    return key;
}

/* Layers of one kind covered by the same set of ranges get the same plan:
   plan once per distinct (kind, set), then merge identical plans of a kind
   into one profile. Consecutive layers of one kind and set are taken as a
   run: the distinct pairs are looked up once a run, not once a layer. */
/* Layers [@p l, @p end) of profile @p p appended to the runs, merged with
   the run before when it has the profile. */
/* Where @p policy puts decoder_layer_input at layer @p l: by name where
   the layer's kind tags its input so (MaxText's policy matches the
   checkpoint name; qwen3_next's layers do not tag it), or by a default
   that saves everything (on the device), else re-run. A kind that saves
   its own residuals places it by its `kept` (the batch-split scan offloads
   its layers' inputs), no policy. */
static remat_place_t input_place(const remat_analyzer_t *an, const remat_policy_t *policy,
                                 size_t l) {
    const remat_kind_t *kind = &an->g->kinds[an->kind_of[l]];
    const remat_block_t *b = &kind->block;
    remat_place_t place;
    if (kind->own_residuals) {
        return remat_kept_place(b->tensors[b->inputs[0]].kept);
    }
    if (remat_tensor_has_tag(&b->tensors[b->inputs[0]], "decoder_layer_input") &&
        remat_policy_lookup(policy, "decoder_layer_input", l, &place)) {
        return place;
    }
    return policy->fallback == REMAT_PLACE_DEVICE ? REMAT_PLACE_DEVICE : REMAT_PLACE_REMAT;
}

/* Layers [l, end) of profile @p p, their input placed as @p policy says at
   @p l: saved by name (HBM or the host), a block's inner layers' inputs
   are saved too (input_dropped). */
static void add_run(remat_analyzer_t *an, size_t l, size_t end, size_t p,
                    const remat_policy_t *policy) {
    const remat_place_t place = input_place(an, policy, l);
    const bool names = place != REMAT_PLACE_REMAT, device = place == REMAT_PLACE_DEVICE;
    layer_run_t *last = an->nruns ? &an->runs[an->nruns - 1] : NULL;
    if (last && last->profile == p && last->last + 1 == l && last->names_input == names &&
        last->input_on_device == device) {
        last->last = end - 1;
    } else {
        an->runs[an->nruns++] = (layer_run_t){l, end - 1, p, names, device};
    }
}

static remat_status_t plan_ranges(remat_analyzer_t *an, const remat_policy_t *policy,
                                  remat_result_t *r, remat_error_t *err) {
    enum { NKEYS = (REMAT_MAX_RANGES + 1) * REMAT_MAX_KINDS };
    uint64_t keys[NKEYS];
    size_t key_kind[NKEYS], key_profile[NKEYS], nkeys = 0;
    remat_status_t st = REMAT_OK;
    for (size_t l = 0, end; l < an->nlayers; l = end) {
        const uint64_t key = range_key(policy, l);
        const size_t kind = an->kind_of[l];
        if (an->g->nkinds == 1 && policy->nranges == 0) {
            end = an->nlayers; /* one run: every layer alike */
        } else {
            for (end = l + 1; end < an->nlayers && an->kind_of[end] == kind &&
                              (policy->nranges == 0 || range_key(policy, end) == key);
                 end++) {
            }
        }
        size_t k = 0;
        while (k < nkeys && (keys[k] != key || key_kind[k] != kind)) {
            k++;
        }
        if (k == nkeys) {
            assert(nkeys < NKEYS);
            remat_plan_t *plan = &an->kplan[kind]; /* its scratch, in the arena */
            if ((st = remat_plan_layer(an->g, kind, policy, l, plan, err))) {
                break;
            }
            keys[nkeys] = key;
            key_kind[nkeys] = kind;
            key_profile[nkeys++] = profile_of_plan(r, kind, plan, l);
        }
        const size_t p = key_profile[k];
        add_run(an, l, end, p, policy);
        r->profiles[p].last = end - 1;
        r->profiles[p].nlayers += end - l;
    }
    return st;
}

remat_status_t remat_i_plan_profiles(remat_analyzer_t *an, const remat_policy_t *policy,
                                     const remat_plan_t *given, remat_result_t *r,
                                     remat_error_t *err) {
    const size_t L = an->nlayers;
    remat_status_t st = REMAT_OK;
    an->nruns = 0;
    if (given && policy->nranges == 0 && an->g->nkinds == 1) {
        /* A uniform policy the caller already planned (the solver). */
        remat_profile_t *pr = new_profile(r);
        remat_i_result_plan(r, &pr->plan, given);
        pr->first = 0;
        pr->last = L - 1;
        pr->nlayers = L;
        add_run(an, 0, L, 0, policy);
    } else if ((st = check_ranges(policy, L, err)) || (st = plan_ranges(an, policy, r, err))) {
        return st;
    }
    return REMAT_OK;
}

/* ---- a stage ------------------------------------------------------------ */

/* Whether the head's forward before the layers, from the meter @p stp
   starts on, is in the analyzer's memo. That forward reads the analyzer
   and the meter alone, never the plan (the head has no checkpoint names):
   the solver's plans would otherwise play it again each time, hundreds of
   ops for a vision encoder. A traced run plays it for its events. */
static bool pre_memo_hit(const remat_analyzer_t *an, const step_t *stp) {
    const struct pre_memo *pm = &an->pre_memo;
    return !stp->tr && pm->valid && memcmp(pm->key, stp->m.cats, sizeof pm->key) == 0;
}

/* Copies the meter and the head's buffers after the forward to or from
   the memo: @p save into it, else out of it. */
static void pre_memo_copy(remat_analyzer_t *an, scratch_t *s, bool save, step_t *stp) {
    struct pre_memo *pm = &an->pre_memo;
    const size_t n = an->g->head.ntensors;
    if (save) {
        pm->m = stp->m;
        pm->at = stp->at;
        memcpy(pm->cur, s->cur, n * sizeof *s->cur);
        memcpy(pm->live, s->live, n);
        memcpy(pm->cat, s->cat, n);
        pm->valid = true;
        return;
    }
    stp->m = pm->m;
    stp->at = pm->at;
    memcpy(s->cur, pm->cur, n * sizeof *s->cur);
    memcpy(s->live, pm->live, n);
    memcpy(s->cat, pm->cat, n);
    assert(meter_consistent(&stp->m) && stp->m.rec == NULL);
}

/* The stage's start: the head's embedding forward; with no head, the
   input arriving. */
static void stage_begin(remat_analyzer_t *an, scratch_t *s, bool pre, step_t *stp) {
    const remat_graph_t *g = an->g;
    const remat_block_t *H = &g->head;
    if (!pre) {
        const size_t kind = an->kind_of[stp->first];
        const size_t x = g->kinds[kind].block.inputs[0];
        add_const(&stp->m, REMAT_CAT_SAVED, (int64_t)an->kb[kind].kbytes[x]);
        return;
    }
    if (pre_memo_hit(an, stp)) {
        pre_memo_copy(an, s, false, stp);
        return;
    }
    int64_t key[REMAT_CAT_COUNT];
    memcpy(key, stp->m.cats, sizeof key);
    for (size_t i = 0; i < H->ninputs; i++) {
        size_t in = H->inputs[i];
        if (in != g->head_takes && H->tensors[in].storage == in) {
            alloc_buf(&stp->m, s, in, an->hb.bytes[in], REMAT_CAT_HEAD);
        }
    }
    head_forward(an, s, stp, 0, g->head_npre, REMAT_CAT_HEAD);
    s->live[H->tensors[g->head_feeds].storage] = 0; /* the layers own it now */
    if (!stp->tr) {
        memcpy(an->pre_memo.key, key, sizeof key);
        pre_memo_copy(an, s, true, stp);
    }
}

/* The gradients of the loss: live from the head's backward on. */
static void loss_grads(const remat_analyzer_t *an, scratch_t *s, step_t *stp) {
    const remat_block_t *H = &an->g->head;
    for (size_t i = 0; i < H->noutputs; i++) {
        size_t o = H->outputs[i];
        if (an->hb.gbytes[o] && !s->glive[o]) {
            s->glive[o] = 1;
            add_const(&stp->m, REMAT_CAT_ACT_GRADS, (int64_t)an->hb.gbytes[o]);
        }
    }
}

/* The class of every output of the head's ops from position @p from on:
   a residual is kept to its backward when @p keep, else nothing is. */
static void post_outputs_keep(const remat_block_t *H, size_t from, bool keep, scratch_t *s) {
    for (size_t p = from; p < H->nops; p++) {
        const remat_op_t *op = &H->ops[H->order[p]];
        for (size_t i = 0; i < op->nout; i++) {
            const remat_tensor_t *t = &H->tensors[op->out[i]];
            s->cls[t->storage] = keep && t->residual ? B_KEEP : B_TRANS;
        }
    }
}

/* num_vocab_tiling > 1: MaxText's chunked loss (vocabulary_tiling.py), a
   custom VJP over token chunks. Its residuals are the layers' output (hL)
   and the head's params gathered whole in their own dtype, live for the
   whole loss. Forward runs each chunk and keeps nothing of it; backward
   holds an accumulator of the gathered params' gradients, and for each
   chunk runs the chunk's forward again (the re-run: recompute) and its
   backward. Chunks are alike, so one stands for all. */
static void head_post_tiled(const remat_analyzer_t *an, scratch_t *s, uint64_t grads,
                            step_t *stp) {
    const remat_graph_t *g = an->g;
    const remat_block_t *H = &g->head;
    add_const(&stp->m, REMAT_CAT_GATHERED, (int64_t)an->tiled_gather);
    post_outputs_keep(H, g->head_npre, false, s);
    head_forward(an, s, stp, g->head_npre, H->nops, REMAT_CAT_HEAD);
    add_const(&stp->m, REMAT_CAT_GRAD_BUFFER, (int64_t)an->tiled_acc);
    post_outputs_keep(H, g->head_npre, true, s);
    head_forward(an, s, stp, g->head_npre, H->nops, REMAT_CAT_RECOMPUTE);
    loss_grads(an, s, stp);
    head_backward(an, s, stp, g->head_npre, H->nops);
    add_const(&stp->m, REMAT_CAT_GATHERED, -(int64_t)an->tiled_gather);
    add_const(&stp->m, REMAT_CAT_GRAD_BUFFER, -(int64_t)an->tiled_acc);
    add_const(&stp->m, REMAT_CAT_GRADS, (int64_t)grads);
}

/* The stage's turn from forward to backward: the head's loss forward and
   backward; with no head, the output leaves (for the next stage) and its
   gradient arrives in its place. The weight gradients
   exist from the layers' backward on: XLA allocates the backward scan's
   stacked gradients as that scan begins, after the head's backward (the
   compiler's live ranges at e591f30: none at the loss). */
static void stage_turn(const remat_analyzer_t *an, scratch_t *s, bool pre, bool post,
                       uint64_t grads, step_t *stp) {
    const remat_graph_t *g = an->g;
    const remat_block_t *H = &g->head;
    const bound_t *hb = &an->hb;
    if (!post) {
        const size_t kind = an->kind_of[stp->last];
        const size_t y = g->kinds[kind].block.outputs[0];
        add_const(&stp->m, REMAT_CAT_SAVED, -(int64_t)an->kb[kind].bytes[y]);
        add_const(&stp->m, REMAT_CAT_ACT_GRADS, (int64_t)an->kb[kind].gbytes[y]);
        add_const(&stp->m, REMAT_CAT_GRADS, (int64_t)grads);
        return;
    }
    for (size_t i = 0; i < H->ninputs; i++) {
        size_t in = H->inputs[i];
        if (!pre && in != g->head_takes && H->tensors[in].storage == in) {
            alloc_buf(&stp->m, s, in, hb->bytes[in], REMAT_CAT_HEAD);
        }
    }
    size_t takes = H->tensors[g->head_takes].storage;
    s->live[takes] = 1;
    s->cat[takes] = REMAT_CAT_SAVED;
    s->cur[takes] = hb->bytes[takes];
    if (an->cfg->num_vocab_tiling > 1) {
        head_post_tiled(an, s, grads, stp);
    } else {
        head_forward(an, s, stp, g->head_npre, H->nops, REMAT_CAT_HEAD);
        loss_grads(an, s, stp);
        head_backward(an, s, stp, g->head_npre, H->nops);
        add_const(&stp->m, REMAT_CAT_GRADS, (int64_t)grads);
    }
    s->glive[g->head_takes] = 0; /* dy of the last layer: the layers free it */
}

/* ---- remat units: a scanned block under one checkpoint ------------------ */

/* The first layer of layer @p l's group of @p size layers (groups start at
   multiples of it), within the stage from @p first. */
static size_t group_start(size_t l, size_t first, size_t size) {
    const size_t u0 = l - l % size;
    return u0 < first ? first : u0;
}

/* The first layer of layer @p l's remat unit, within the stage from @p first. */
static size_t unit_start(const remat_analyzer_t *an, size_t l, size_t first) {
    return group_start(l, first, an->unit);
}

/* The first layer of layer @p l's span (the layers re-run together),
   within the stage from @p first. */
static size_t span_start(const remat_analyzer_t *an, size_t l, size_t first) {
    return group_start(l, first, an->span);
}

/* What layer @p l's re-run holds for its backward: hoisted ahead of the
   loss (the unrolled bound), all it made, as XLA keeps the re-run's
   intermediates or the backward's factors made from them in their place
   (the E2B recipe's dump: four [batch, seq, mlp] buffers a layer where the
   re-run's outputs the backward reads are three); else what its backward
   reads. */
static int64_t held_of(const remat_analyzer_t *an, size_t l) {
    const tpl_t *t = &an->tpls[run_of(an, l)->profile];
    return an->hoist ? t->rec_made : t->rec_held;
}

static int64_t group_of(const remat_analyzer_t *an, size_t l) {
    return an->tpls[run_of(an, l)->profile].rec_group;
}

/* Whether layer @p l's input is not saved: a layer inside a block (not
   its first) whose policy names no saving of decoder_layer_input. JAX
   saves a checkpointed block's own input and what its policy names, so a
   block of u layers under `full` keeps one input, not u (XLA's scan output
   holds gpt-oss-120b's 7 block inputs for 14 layers). */
static bool input_dropped(const remat_analyzer_t *an, size_t l, size_t first) {
    return an->unit > 1 && l != unit_start(an, l, first) && !run_of(an, l)->names_input;
}

/* The bytes layer @p l keeps of its input (its profile's saved share). */
static int64_t input_bytes(const remat_analyzer_t *an, size_t l) {
    const size_t kind = an->kind_of[l];
    return (int64_t)an->kb[kind].kbytes[an->g->kinds[kind].block.inputs[0]];
}

/* After layer @p l's forward: a dropped input dies with the layer. */
static void unit_forward_after(const remat_analyzer_t *an, size_t l, size_t first, meter_t *m) {
    if (input_dropped(an, l, first)) {
        add_const(m, REMAT_CAT_SAVED, -input_bytes(an, l));
    }
}

/* Adds (@p sign 1) or takes back (-1) the re-runs layers [@p from, @p to)
   of the stage from @p first hold for their own backward: each layer's
   re-run, the input its unit did not save, the gather groups it re-ran. */
static void hold_reruns(const remat_analyzer_t *an, size_t from, size_t to, size_t first,
                        int64_t sign, meter_t *m) {
    int64_t h = 0, g = 0;
    for (size_t i = from; i < to; i++) {
        h += held_of(an, i) + (input_dropped(an, i, first) ? input_bytes(an, i) : 0);
        g += group_of(an, i);
    }
    add_const(m, REMAT_CAT_RECOMPUTE, sign * h);
    add_const(m, REMAT_CAT_GATHERED, sign * g);
    m->held_gathered += sign * g;
}

/* Before layer @p l's backward. JAX re-runs a checkpointed block's forward
   whole before its first backward op (the rematted computation), so at
   the top layer of a unit the re-run residuals of the unit's lower layers
   arrive too, with the inputs the block did not save, and wait for their
   own layers' backward: XLA holds 4 layers' re-runs of Llama 4 Scout and 6
   of Gemma 3 at once (docs/validation.md, "Blocks re-run whole"). Each
   layer's own re-run stays in its profile, and its own input, which its
   profile frees as saved, arrives saved. Without the hold (an->hold false:
   XLA's rematerialization, remat_i_run_stages) each dropped input is made
   again just before its layer's backward. */
static void unit_enter(const remat_analyzer_t *an, size_t l, size_t first, size_t last,
                       meter_t *m) {
    if (an->span == 1) {
        return;
    }
    const bool top = l == last || (l + 1) % an->span == 0;
    if (an->hold && top && !an->hoist) {
        hold_reruns(an, span_start(an, l, first), l, first, 1, m);
    }
    if ((top || !an->hold) && input_dropped(an, l, first)) {
        add_const(m, REMAT_CAT_SAVED, input_bytes(an, l));
    }
}

/* After layer @p l's backward, holding: the layer below it in the unit
   plays its own re-run (its profile), so what it held goes back into that,
   and its input becomes what its profile frees as saved. */
static void unit_leave(const remat_analyzer_t *an, size_t l, size_t first, meter_t *m) {
    if (an->span == 1 || !an->hold || l == span_start(an, l, first)) {
        return;
    }
    add_const(m, REMAT_CAT_RECOMPUTE, -held_of(an, l - 1));
    add_const(m, REMAT_CAT_GATHERED, -group_of(an, l - 1));
    m->held_gathered -= group_of(an, l - 1);
    if (input_dropped(an, l - 1, first)) {
        const int64_t x = input_bytes(an, l - 1);
        add_const(m, REMAT_CAT_RECOMPUTE, -x);
        add_const(m, REMAT_CAT_SAVED, x);
    }
}

/* A traced run's events of layers [first, last], forward or backward: each
   layer's profile events on top of the live bytes it starts from, which
   move by the profile's delta from layer to layer, as in stage_layers. */
static void trace_layers(const remat_analyzer_t *an, size_t first, size_t last, bool backward,
                         const step_t *stp) {
    step_t st = *stp;
    for (size_t k = 0; k <= last - first; k++) {
        const size_t l = backward ? last - k : first + k, p = run_of(an, l)->profile;
        const tpl_t *t = &an->tpls[p];
        const remat_block_t *b = &an->g->kinds[t->kind].block;
        const bound_t *lb = &an->kb[t->kind];
        const rel_events_t *rel = backward ? &an->trace->bwd[p] : &an->trace->fwd[p];
        if (backward) {
            unit_enter(an, l, first, last, &st.m);
        }
        for (size_t i = 0; i < rel->n; i++) {
            const rel_event_t *e = &rel->ev[i];
            const bool none = e->op == REMAT_NONE;
            const double secs = none                           ? 0
                                : e->step == REMAT_STEP_BACKWARD ? lb->bwd_s[e->op]
                                                                 : lb->fwd_s[e->op];
            step_event(&st, e->live, e->cats,
                       (remat_moment_t){.step = e->step, .where = REMAT_AT_LAYER, .layer = l,
                                        .op = none ? NULL : b->ops[e->op].name},
                       p, secs);
        }
        if (backward) {
            step_add(&st, t->bwd_delta, t->bwd_dcats);
            unit_leave(an, l, first, &st.m);
        } else {
            step_add(&st, t->fwd_delta, t->fwd_dcats);
            unit_forward_after(an, l, first, &st.m);
        }
    }
}

/* Which layer of a run of identical layers (one profile) holds the run's
   highest measure, without measuring each: the k-th layer's measure is
   live + k delta + peak + reserve, the reserve a truncated fraction of the
   transient bytes, which move by D = transient(dcats) a layer. With delta
   and D of one sign the measures are strictly monotone (delta > 0, D >= 0:
   the last; delta < 0, D <= 0: the first), and with delta = 0, D <= 0 they
   do not rise (the first, as measuring each keeps the first on ties).
   Returns 0 (first), 1 (last), or -1 when only measuring each can tell. */
static int run_argmax(int64_t delta, const int64_t *dcats) {
    const int64_t d = transient_bytes(dcats);
    if (delta > 0 && d >= 0) {
        return 1;
    }
    return delta <= 0 && d <= 0 ? 0 : -1;
}

/* @p times of a layer's deltas on the step's meter at once (their sums are
   parts of the envelope: no overflow). */
static void add_times(step_t *st, int64_t delta, const int64_t *dcats, int64_t times) {
    int64_t dn[REMAT_CAT_COUNT];
    for (int c = 0; c < REMAT_CAT_COUNT; c++) {
        dn[c] = dcats[c] * times;
    }
    step_add(st, delta * times, dn);
}

/* A run of @p n identical layers, processed from layer @p l in steps of
   @p dir (+1 forward, -1 backward): the measure of the one layer that can
   hold its peak (run_argmax), taken with the deltas of the layers before
   it, or of each layer; then the rest of the run's deltas. */
static void run_layers(step_t *st, const tpl_t *t, bool backward, size_t l, size_t n, int dir) {
    const int64_t peak = backward ? t->bwd_peak : t->fwd_peak;
    const int64_t *cats = backward ? t->bwd_cats : t->fwd_cats;
    const int64_t np = backward ? t->bwd_np : t->fwd_np;
    const int64_t *np_cats = backward ? t->bwd_np_cats : t->fwd_np_cats;
    const int64_t delta = backward ? t->bwd_delta : t->fwd_delta;
    const int64_t *dcats = backward ? t->bwd_dcats : t->fwd_dcats;
    remat_moment_t at = {.step = backward ? t->bwd_step : REMAT_STEP_FORWARD,
                         .where = REMAT_AT_LAYER,
                         .op = backward ? t->bwd_name : t->fwd_name};
    const int which = n > 1 ? run_argmax(delta, dcats) : 0;
    if (which < 0) {
        for (size_t k = 0; k < n; k++) {
            at.layer = (size_t)((ptrdiff_t)l + dir * (ptrdiff_t)k);
            step_measure_np(st, np, np_cats);
            step_measure(st, peak, cats, at);
            step_add(st, delta, dcats);
        }
        return;
    }
    const size_t k = (size_t)which * (n - 1); /* the first or the last */
    add_times(st, delta, dcats, (int64_t)k);
    at.layer = (size_t)((ptrdiff_t)l + dir * (ptrdiff_t)k);
    step_measure_np(st, np, np_cats); /* the same layer: the moves are the same */
    step_measure(st, peak, cats, at);
    add_times(st, delta, dcats, (int64_t)(n - k));
}

#ifndef NDEBUG
/* The step over layers [first, last] measured layer by layer, as runs
   stand for: debug builds check that run_layers finds the same peak, at
   the same moment, and leaves the same meter. */
static void check_runs(const remat_analyzer_t *an, size_t first, size_t last, bool backward,
                       step_t check, const step_t *st) {
    for (size_t k = 0; k <= last - first; k++) {
        const size_t l = backward ? last - k : first + k;
        run_layers(&check, &an->tpls[run_of(an, l)->profile], backward, l, 1, 1);
    }
    assert(check.m.any == st->m.any && check.m.peak == st->m.peak &&
           check.m.np_peak == st->m.np_peak &&
           check.m.live == st->m.live && check.at.layer == st->at.layer &&
           check.at.step == st->at.step && check.at.op == st->at.op &&
           memcmp(check.m.cats, st->m.cats, sizeof check.m.cats) == 0 &&
           memcmp(check.m.peak_cats, st->m.peak_cats, sizeof check.m.peak_cats) == 0);
}
#endif

/* Layers [first, last] one at a time, forward or backward, under remat
   units: the inputs a block does not save dropped after their layer's
   forward; each unit's lower layers' re-runs held through the backward of
   the layers above them (unit_enter). */
static void unit_layers(const remat_analyzer_t *an, size_t first, size_t last, bool backward,
                        step_t *st) {
    for (size_t k = 0; k <= last - first; k++) {
        const size_t l = backward ? last - k : first + k;
        const tpl_t *t = &an->tpls[run_of(an, l)->profile];
        if (backward) {
            unit_enter(an, l, first, last, &st->m);
            run_layers(st, t, true, l, 1, -1);
            unit_leave(an, l, first, &st->m);
        } else {
            run_layers(st, t, false, l, 1, 1);
            unit_forward_after(an, l, first, &st->m);
        }
    }
}

/* Layers [first, last] forward, then backward in reverse, as profiles, a
   run of identical layers at a time (run_layers). The hottest loop of an
   analysis: it works on a local copy of the meter, which the profiles it
   reads cannot alias, so the categories stay in registers. */
static void stage_layers(const remat_analyzer_t *an, size_t first, size_t last, bool backward,
                         step_t *stp) {
    if (stp->tr) {
        trace_layers(an, first, last, backward, stp);
    }
    step_t st = *stp;
    if (an->span > 1) {
        unit_layers(an, first, last, backward, &st);
        *stp = st;
        return;
    }
    size_t done = 0;
    const size_t count = last - first + 1;
    while (done < count) {
        const size_t l = backward ? last - done : first + done;
        const layer_run_t *run = run_of(an, l);
        const size_t to = backward ? (run->first > first ? run->first : first)
                                   : (run->last < last ? run->last : last);
        const size_t n = (backward ? l - to : to - l) + 1;
        run_layers(&st, &an->tpls[run->profile], backward, l, n, backward ? -1 : 1);
        done += n;
    }
#ifndef NDEBUG
    check_runs(an, first, last, backward, *stp, &st);
#endif
    *stp = st;
}

/* ---- the saved inputs laid out again ------------------------------------ */

/* The conditions both relaid-stack rules were read under: data and FSDP
   parallelism alone (every other mesh axis 1), scanned layers, no chunked
   loss, no pipeline. */
static bool scanned_data_parallel(const remat_analyzer_t *an) {
    const remat_config_t *c = an->cfg;
    for (int a = 0; a < REMAT_AXIS_COUNT; a++) {
        const bool dp = a == REMAT_AXIS_DATA || a == REMAT_AXIS_FSDP ||
                        a == REMAT_AXIS_FSDP_TRANSPOSE;
        if (!dp && an->mesh.shards[a] > 1) {
            return false;
        }
    }
    return c->scan_layers && c->num_vocab_tiling <= 1 && an->nstages == 1;
}

/* Whether XLA lays the scan's stacked layer inputs out a second time for
   the backward. Its compiles of runs over several slices with FSDP (and
   data) parallelism alone do: between the two scans it copies the stacked
   inputs, bf16[L, B, S, E], into a sequence-minor layout ({2,3,1,0}) and
   peels the last layer's backward out of the backward loop, both copies
   live through that layer's backward and the stacked weight gradients not
   yet made (v4-384 x 2 52B and v5e-16 x 2 llama2-7b, --dump;
   docs/validation.md). Chips with 128-wide matrix units do (v4, v5e and
   v5p: 4-layer llama3-8b compiles on two slices of each hold a
   bf16[4, B, 2048, 4096]{2,3,1,0} copy); v6e's and TPU7x's 256-wide ones
   do not. Runs with tensor parallelism, the chunked loss or one slice
   make no copy; with expert, sequence or context parallelism, a pipeline
   or unrolled layers it has not been seen, nor from XLA's GPU backend or
   on a profile that gives no mxu_size, so the rule stays off there. */
static bool relays_inputs(const remat_analyzer_t *an) {
    return !an->hw->xla_gpu && an->hw->mxu_size == 128 && remat_config_several_slices(an->cfg) &&
           scanned_data_parallel(an);
}

/* Whether XLA lays out again, on one slice, the kept stacks of a layer
   with an offloaded residual (relaid_one, layer.c): it peels the last
   layer's backward, and copies the stacks that layer reads in another
   layout than the forward stored them. Those that the backward's fusions
   read beside an offloaded one (layer.c, meets_offloaded):
   mistral-7b under minimal_offloaded on v4-16 (4 layers, --dump: the
   stacked inputs, which its residual adds meet with the offloaded
   attention and MLP outputs, copied to {2,3,1,0} and the last layer's
   backward peeled to read them) and llama3.1-70b keeping mlpwi_0 and
   offloading mlpwi_1 on v5p-16 (4 layers, --dump: the mlpwi_0 stack
   copied, which the gated MLP's multiply meets with mlpwi_1, and not the
   inputs), and llama3.1-8b under minimal_offloaded on v6e-8 (its peak
   buffers hold the copied inputs): chips of either matrix width. Query,
   key and value offloaded meet no kept stack, and those runs (v4-16,
   v5e-16, v5p-8) make no copy. And where the forward stores the
   residual stream sequence-minor (layer.c, stores_sequence_minor), the
   kept stacks shaped like the input, which the peeled layer reads
   row-major: llama2-13b under qkv_proj_offloaded on v5e-16 and v5e-32
   (4 layers, --dump: the inputs' stack, stored {2,3,1,0}, copied to
   {3,2,1,0}); llama2-7b under it on v5e-32 and llama2-13b on v5e-256
   store it row-major and make none, and under full (nothing offloaded,
   no peeled layer) llama2-13b makes none either. Seen with FSDP alone;
   the same conditions as several slices' rule hold it elsewhere. */
static bool relays_one_slice(const remat_analyzer_t *an) {
    return !an->hw->xla_gpu && !remat_config_several_slices(an->cfg) && scanned_data_parallel(an);
}

/* The first of the layers XLA peels off the backward loop of the stage
   [first, last]: the last remat unit's. Units start at multiples of
   an->unit, so where the layers are not a whole number of units (Gemma
   3's blocks of 6, the remainder one more block; a stage of fewer layers
   than a unit) the last unit is the remainder. Which block XLA peels
   there is not read from a compile yet; a whole unit's count back from
   the last layer, as this was, took layers of two units and, past the
   stage's first layer, wrapped below zero (Gemma 3 with 2 layers under
   qkv_proj_offloaded walked 2^64 layers). */
static size_t peeled_from(const remat_analyzer_t *an, size_t first, size_t last) {
    const size_t from = unit_start(an, last, first);
    assert(first <= from && from <= last && last - from < an->unit);
    return from;
}

/* The second copy's bytes on stage [first, last]: every residual shaped
   like the layer input, [B, S, E], that the scan keeps on the device (the
   input; under save_dot_except_mlp and minimal the attention's output
   projection too: 4-layer llama3-8b compiles on two v5e-16 slices copy
   both stacks); on one slice (relays_one_slice), layer.c's relaid_one. An offloaded
   stack is on the host, and a block's inner dropped inputs are not kept
   (input_dropped, which the profile does not know); 0 where XLA makes
   none. */
static int64_t relaid_bytes(const remat_analyzer_t *an, size_t first, size_t last) {
    int64_t x = 0;
    const bool inputs = relays_inputs(an);
    if (!inputs && !relays_one_slice(an)) {
        return 0;
    }
    for (size_t l = first; l <= last; l++) {
        const tpl_t *t = &an->tpls[run_of(an, l)->profile];
        const int64_t kept = inputs ? t->relaid : t->relaid_one;
        const int64_t in = inputs ? t->input_kept : t->relaid_one_input;
        x += kept - (input_dropped(an, l, first) ? in : 0);
    }
    return x;
}

/* The weight gradients of the peeled layers [from, last]: their params'
   bytes (the gradients have the params' dtypes, static.c). */
static int64_t peeled_grads(const remat_analyzer_t *an, size_t from, size_t last) {
    int64_t g = 0;
    for (size_t l = from; l <= last; l++) {
        g += (int64_t)an->kpart[an->kind_of[l]].bytes;
    }
    return g;
}

/* The layers' backward when XLA lays the inputs out again (@p copy bytes,
   relays_inputs): the peeled layers with both copies and their own weight
   gradients, then the loop over the rest, which reads the copy alone and
   carries the stacked gradients (@p grads, all of the layers'). */
static void relaid_backward(const remat_analyzer_t *an, int64_t copy, uint64_t grads,
                            step_t *stp) {
    const size_t first = stp->first, last = stp->last;
    const size_t from = peeled_from(an, first, last);
    const int64_t own = stp->peeled_grads = peeled_grads(an, from, last);
    assert(from >= first && own >= 0 && (uint64_t)own <= grads);
    add_const(&stp->m, REMAT_CAT_SAVED, copy);
    add_const(&stp->m, REMAT_CAT_GRADS, own);
    stage_layers(an, from, last, true, stp);
    add_const(&stp->m, REMAT_CAT_SAVED, -copy);
    add_const(&stp->m, REMAT_CAT_GRADS, (int64_t)grads - own);
    if (from > first) {
        stage_layers(an, first, from - 1, true, stp);
    }
}

/* The weight gradients that exist when the layers' backward begins: XLA
   allocates the backward scan's stacked gradients before the loop, as the
   head's backward begins; the head's own come later (stage_static_t). */
static uint64_t grads_at_turn(const stage_static_t *ss) {
    assert(ss->grads >= ss->grads_embed + ss->grads_logits);
    return ss->grads - ss->grads_embed - ss->grads_logits;
}

/* Stage @p k's step for one micro-batch on top of its static bytes and the
   residuals of the micro-batches in flight (@p base_cats). The weight
   gradients exist from the backward pass on (grads_at_turn); the loss's
   params' gradients when the logits' deferred weight gradient is made,
   after the layers' backward, and the embedding's at its backward (the
   compiler's loop state at a layer-backward peak holds the layers'
   gradients only: v5p-16 llama3.1-70b, 0.98 GiB of head gradients short of
   all of them, docs/validation.md). */
static void simulate_stage(remat_analyzer_t *an, size_t k, bool pre, bool post,
                           const stage_static_t *ss, step_t *stp) {
    const int64_t *base_cats = ss->cats;
    const size_t Ls = an->nlayers / an->nstages, first = k * Ls, last = first + Ls - 1;
    const remat_graph_t *g = an->g;
    scratch_t *s = &an->s;
    memset(stp, 0, sizeof *stp);
    stp->reserve_fraction = an->reserve_fraction;
    stp->tr = an->trace;
    stp->stage = k;
    stp->first = first;
    stp->last = last;
    for (int c = 0; c < REMAT_CAT_COUNT; c++) {
        stp->m.cats[c] = base_cats[c];
        stp->m.live += base_cats[c];
    }
    if (pre || post) {
        head_prepare(g, &an->hb, s); /* a stage between runs no head op */
    }
    stage_begin(an, s, pre, stp);
    add_const(&stp->m, REMAT_CAT_SCAN_WEIGHTS, (int64_t)ss->scan_weights);
    stage_layers(an, first, last, false, stp);
    const int64_t copy = stp->relaid = relaid_bytes(an, first, last);
    const bool hoist = an->hoist && an->hold && an->span > 1;
    if (hoist) {
        hold_reruns(an, first, last + 1, first, 1, &stp->m); /* unrolled_bound */
    }
    stage_turn(an, s, pre, post, copy ? 0 : grads_at_turn(ss), stp);
    if (hoist) {
        hold_reruns(an, last, last + 1, first, -1, &stp->m); /* its profile plays its own */
    }
    if (copy) {
        relaid_backward(an, copy, grads_at_turn(ss), stp);
    } else {
        stage_layers(an, first, last, true, stp);
    }
    add_const(&stp->m, REMAT_CAT_SCAN_WEIGHTS, -(int64_t)ss->scan_weights);
    add_const(&stp->m, REMAT_CAT_ACT_GRADS, -stp->deferred_grads); /* the weight gradient is made */
    add_const(&stp->m, REMAT_CAT_HEAD, -stp->deferred_head);
    add_const(&stp->m, REMAT_CAT_GRADS, (int64_t)ss->grads_logits);
    if (pre) {
        s->glive[g->head_feeds] = 1; /* dx of the first layer, made by the layers */
        add_const(&stp->m, REMAT_CAT_GRADS, (int64_t)ss->grads_embed);
        head_backward(an, s, stp, 0, g->head_npre);
    }
    assert(pre || !ss->grads_embed); /* every stage of a graph with a head runs it */
}

/* The pipeline's loop state beyond its inputs and outputs (the head's
   batch holds those, state_io): in micro-batches of a layer's input, the
   buffer that shifts each stage's output to the next, the previous outputs
   with delayed forwarding (delay 2: together `delay` of them), and, when a
   stage's layers repeat over more micro-batches than the stages forward at
   once, the circular storage of every micro-batch and its mover
   (pipeline.py's init_states). Its gradient is as large and lives through
   the backward. */
static uint64_t loop_state_inputs(const remat_analyzer_t *an) {
    const bool circular = an->repeats > 1 && an->microbatches > an->nstages * an->delay;
    return an->delay + (circular ? an->microbatches + 1 : 0);
}

/* The floor's residuals and gradients on top of static and in-flight
   bytes: the stage's @p saved residuals with every weight gradient; where
   XLA peels layers to read a relaid copy (relaid_backward), the greater
   of the two moments around them without the copy: the peeled layers'
   backward, with their own gradients, and the loop's start, with every
   gradient beside the residuals of the layers not peeled. The copy stays
   out: offloading a name can add one (relays_one_slice), and the solver's
   bound (5) needs a floor that only falls as names move from HBM to the
   host or to a re-run (docs/solver.md, Lemma 2); each term here does, and
   turning the peel on only lowers it. */
static uint64_t floor_rest(const remat_analyzer_t *an, const remat_result_t *r,
                           const remat_stage_row_t *row, const step_t *stp, uint64_t saved,
                           const stage_static_t *ss) {
    const uint64_t all = grads_at_turn(ss);
    if (!stp->relaid) {
        return saved + all;
    }
    uint64_t peeled = 0;
    for (size_t l = peeled_from(an, row->first_layer, row->last_layer); l <= row->last_layer;
         l++) {
        peeled += r->layers[l].saved_device_bytes;
    }
    assert(peeled <= saved && stp->peeled_grads >= 0 && (uint64_t)stp->peeled_grads <= all);
    const uint64_t own = saved + (uint64_t)stp->peeled_grads, loop = saved - peeled + all;
    return own > loop ? own : loop;
}

/* Stage @p k's peak: its static memory, the residuals of the pipeline's
   other iterations, and one micro-batch's step. MaxText's pipeline is
   circular (layers/pipeline.py at e591f30): every stage runs its layers for
   each of the M micro-batches and the bubble, and the scan over iterations
   keeps each one's residuals to the backward (pipeline_held): the v4-16
   llama2-7b compile with 2 stages and 4 micro-batches holds 65 layer
   inputs, 4 x 16 + 1 (docs/validation.md). The embedding and the loss run
   on every stage, outside the pipeline, on the step's whole batch. */
static remat_status_t run_stage(remat_analyzer_t *an, size_t k, remat_result_t *r,
                                stage_static_t *ss, remat_error_t *err) {
    const size_t stages = an->nstages, Ls = an->nlayers / stages;
    remat_stage_row_t *row = &r->stages[k];
    row->index = k;
    row->first_layer = k * Ls;
    row->last_layer = (k + 1) * Ls - 1;
    remat_status_t st = remat_i_stage_static(an, k, ss, err);
    if (st) {
        return st;
    }
    row->in_flight = (size_t)r->microbatches;
    uint64_t stage_saved = 0, held; /* below 2^62: part of the simulated live bytes */
    for (size_t l = row->first_layer, e; l <= row->last_layer; l = e + 1) {
        /* a run's rows are equal, but for the inputs a block drops (unit_rows) */
        e = an->unit > 1 ? l : run_end(an, l, row->last_layer);
        stage_saved += r->layers[l].saved_device_bytes * (e - l + 1);
    }
    /* the step below simulates one micro-batch's: the rest are in flight */
    if ((st = pipeline_held(an, stage_saved, &held, "in-flight bytes", err))) {
        return st;
    }
    row->inflight_bytes = held - stage_saved;
    if (stages > 1) {
        const size_t kind = an->kind_of[row->first_layer];
        const uint64_t x = an->kb[kind].bytes[an->g->kinds[kind].block.inputs[0]];
        if ((st = sum_checked(&row->inflight_bytes, x, loop_state_inputs(an), "in-flight bytes",
                              err))) {
            return st;
        }
    }
    ss->cats[REMAT_CAT_INFLIGHT] = (int64_t)row->inflight_bytes;
    row->static_bytes = ss->bytes;
    step_t stp;
    const bool has_head = an->g->has_head;
    assert(row->first_layer == Ls * k && row->last_layer == Ls * k + Ls - 1);
    simulate_stage(an, k, has_head, has_head, ss, &stp);
    row->peak_bytes = stp.m.peak > 0 ? (uint64_t)stp.m.peak : 0;
    row->regathered_bytes = stp.m.np_peak > 0 ? (uint64_t)stp.m.np_peak : 0;
    assert(row->regathered_bytes <= row->peak_bytes);
    memcpy(row->breakdown, stp.m.peak_cats, sizeof row->breakdown);
    row->peak_at = stp.at;
    row->peak_at.stage = k;
    row->peak_at.stages = stages;
    /* cannot overflow: the in-flight sum above is checked and below 2^62,
       and one micro-batch's residuals are part of the simulated live bytes */
    row->relaid_bytes = (uint64_t)stp.relaid; /* the simulation's own, not summed again */
    row->floor_bytes = row->static_bytes + row->inflight_bytes +
                       floor_rest(an, r, row, &stp, stage_saved, ss);
    assert(row->peak_bytes >= row->floor_bytes);
    return REMAT_OK;
}

/* The layer rows and the decoder_layer_input name row under remat units:
   the inputs a block does not save are not saved (input_dropped). */
static void unit_rows(const remat_analyzer_t *an, remat_result_t *r) {
    const size_t Ls = an->nlayers / an->nstages;
    uint64_t dropped = 0;
    for (size_t l = 0; an->unit > 1 && l < an->nlayers; l++) {
        if (input_dropped(an, l, l - l % Ls)) {
            const uint64_t x = (uint64_t)input_bytes(an, l);
            assert(r->layers[l].saved_device_bytes >= x);
            r->layers[l].saved_device_bytes -= x;
            dropped += x;
        }
    }
    for (size_t i = 0; dropped && i < r->nnames; i++) {
        if (strcmp(r->names[i].name, "decoder_layer_input") == 0) {
            assert(r->names[i].saved_bytes >= dropped);
            r->names[i].saved_bytes -= dropped;
        }
    }
}

/* Every stage into @p r's stage rows (allocated), the worst one's static
   figures into @p r. */
static remat_status_t all_stages(remat_analyzer_t *an, remat_result_t *r, remat_error_t *err) {
    const size_t stages = an->nstages;
    memset(r->stages, 0, stages * sizeof *r->stages);
    uint64_t worst = 0;
    for (size_t k = 0; k < stages; k++) {
        stage_static_t ss;
        remat_status_t st = run_stage(an, k, r, &ss, err);
        if (st) {
            return st;
        }
        if (k == 0 || r->stages[k].peak_bytes > worst) {
            worst = r->stages[k].peak_bytes;
            r->worst_stage = k;
            r->param_count_device = ss.count;
            r->param_bytes = ss.params;
            r->optimizer_bytes = ss.optimizer;
            r->grad_bytes = ss.grads;
            r->accum_bytes = ss.accum;
            r->host_static_bytes = ss.host;
        }
    }
    return REMAT_OK;
}

/* The share of the way from the held step down to the layer-by-layer one
   that XLA's rematerialization is taken to cover where the blocks' inner
   inputs are re-run or offloaded: it covered 16% (Llama 4 Maverick) and
   failed at 47% (OLMo 3 7B, batch 12), so a fifth (below). */
#define UNIT_TAKE_BACK_NUM 1
#define UNIT_TAKE_BACK_DEN 5

/* Whether the budget lies within UNIT_TAKE_BACK of the way from @p held
   (over it) down to @p apart (under it). Bytes are below 2^62: the
   products fit in 64 bits. */
static bool takes_apart(uint64_t held, uint64_t apart, uint64_t budget) {
    assert(held > budget && apart <= held && held <= BYTES_MAX);
    return UNIT_TAKE_BACK_DEN * (held - budget) <= UNIT_TAKE_BACK_NUM * (held - apart);
}

/* Whether every layer keeps its input in HBM (decoder_layer_input on the
   device): each layer's re-run then needs nothing from the layers below
   it, and XLA's rematerialization, over the limit, runs it just before the
   layer's backward, as the layer-by-layer step does (Gemma 3 12B at 32k
   on v6e, its layer inputs kept: 26.5 GiB compiled where the blocks held
   whole would need 45.9). */
static bool inputs_on_device(const remat_analyzer_t *an) {
    for (size_t i = 0; i < an->nruns; i++) {
        if (!an->runs[i].input_on_device) {
            return false;
        }
    }
    return true;
}

/* The highest of the stages' floors: no simulation of them, held or
   layer by layer, peaks below it (the floor counts the static bytes, the
   saved residuals and the gradients, which the hold does not change), so
   a layer-by-layer step that the floor already rules out need not run. */
static uint64_t floor_of(const remat_result_t *r) {
    uint64_t top = 0;
    for (size_t k = 0; k < r->nstages; k++) {
        top = r->stages[k].floor_bytes > top ? r->stages[k].floor_bytes : top;
    }
    return top;
}

/* The stages, once with the hold set as @p hold; a traced run keeps this
   run's events only. */
static remat_status_t stages_with(remat_analyzer_t *an, bool hold, remat_result_t *r,
                                  remat_error_t *err) {
    an->hold = hold;
    if (an->trace) {
        an->trace->nevents = 0;
    }
    return all_stages(an, r, err);
}

/* The stages, each scanned block re-run whole (an->unit). When that peak is
   over the budget, XLA's rematerialization pass, which runs when a program
   does not fit its limit, re-runs the held layers' residuals where their
   backward reads them: Gemma 3 at 32k on v6e holds 6.8 GiB of re-runs,
   not the 6 layers' 32 (docs/validation.md, "Blocks re-run whole"). It
   gets there only with room to spare. When the layer-by-layer step is not
   under the budget less the safety margin, XLA keeps the blocks' re-runs
   and is refused at about the held figure (Llama 4 Scout under full:
   124.3 GiB where the held step is 128.4 and the layer-by-layer one 93.5,
   of a 94.75 GiB limit; on v5p-16, 156.7 against 155.6 and 112.1). And it
   takes the hold apart only partway where the inner inputs are re-run or
   offloaded: of the way from the held step down to the layer-by-layer
   one, the compile that fit needed 16% (Llama 4 Maverick on v5p-128),
   those refused 47% to 85% (OLMo 3 7B, batch 12 to 16 on v6e-8) and 74%
   (Gemma 3 12B, 48 layers, batch 8 on v6e-16). So the stages are simulated
   again layer by layer, when their floor (floor_of) leaves room, and that
   figure kept, with the held one for the note, only when it is under the
   margin and the budget is within UNIT_TAKE_BACK of that way, or the
   layers keep their inputs in HBM (inputs_on_device: nothing holds the
   re-runs together then). */
/* The stages' highest regathered moment (remat_stage_row_t). */
static uint64_t regathered_of(const remat_result_t *r) {
    uint64_t x = 0;
    for (size_t k = 0; k < r->nstages; k++) {
        x = r->stages[k].regathered_bytes > x ? r->stages[k].regathered_bytes : x;
    }
    return x;
}

static remat_status_t held_or_apart(remat_analyzer_t *an, remat_result_t *r,
                                    remat_error_t *err) {
    r->unit_held_peak_bytes = 0;
    r->unit_apart_partway = false;
    an->hold = true;
    an->span = an->unit;
    if (an->trace) {
        an->trace->nevents = 0;
    }
    remat_status_t st = all_stages(an, r, err);
    uint64_t budget, usable;
    remat_i_budget(an, &budget, &usable);
    if (st || an->unit == 1 || r->stages[r->worst_stage].peak_bytes <= budget) {
        return st;
    }
    const uint64_t held = r->stages[r->worst_stage].peak_bytes, floor = floor_of(r);
    const uint64_t held_np = regathered_of(r);
    const bool on_device = inputs_on_device(an);
    if (floor > usable || (!on_device && !takes_apart(held, floor, budget))) {
        return REMAT_OK; /* no layer-by-layer step can pass: the held one stands */
    }
    if ((st = stages_with(an, false, r, err))) {
        an->hold = true;
        return st;
    }
    const uint64_t apart = r->stages[r->worst_stage].peak_bytes;
    assert(apart >= floor);
    if (apart <= usable && (on_device || takes_apart(held, apart, budget))) {
        an->hold = true;
        r->unit_held_peak_bytes = held;
        r->unit_apart_partway = !on_device;
        r->regathered_peak_bytes = held_np;
        return REMAT_OK;
    }
    return stages_with(an, true, r, err); /* XLA keeps the blocks' re-runs */
}

/* Whether the layers run unrolled on XLA:TPU (scan_layers false, more
   than one layer a stage): no loop boundary keeps their re-runs apart. */
static bool unrolled_on_tpu(const remat_analyzer_t *an) {
    return !an->cfg->scan_layers && !an->hw->xla_gpu && an->nlayers / an->nstages > 1;
}

/* The unrolled bound: each stage with every layer's re-run made before the
   first backward op and held until its own layer's backward. Unrolled,
   the re-runs depend on the saved inputs alone and XLA:TPU's scheduler
   runs them early: a 4-layer llama2-7b compile on v4-16 at batch 24
   (--dump) holds all four layers' re-run MLP products at its peak, and
   the 8-layer one is refused at 1.09 of the limit where the layers re-run
   one at a time need 0.57 (docs/validation.md, "Unrolled layers"). They
   run before the head's loss backward too (an->hoist): the published Gemma
   4 E2B recipe's compile peaks at the loss's gradient all-reduce with all
   35 layers' re-runs live (docs/validation.md, "Gemma 4 E2B and E4B"). */
static remat_status_t unrolled_bound(remat_analyzer_t *an, remat_result_t *r,
                                     remat_error_t *err) {
    r->unrolled_held_peak_bytes = 0;
    if (!unrolled_on_tpu(an)) {
        return REMAT_OK;
    }
    an->hold = true;
    an->hoist = true;
    an->span = an->nlayers / an->nstages;
    remat_status_t st = all_stages(an, r, err);
    an->span = an->unit;
    an->hoist = false;
    if (!st) {
        r->unrolled_held_peak_bytes = r->stages[r->worst_stage].peak_bytes;
    }
    return st;
}

remat_status_t remat_i_run_stages(remat_analyzer_t *an, remat_result_t *r, remat_error_t *err) {
    r->nstages = an->nstages;
    r->stages = remat_i_result_alloc(r, an->nstages * sizeof *r->stages);
    r->remat_unit = an->unit;
    r->weights_streamed = remat_i_windowed_einsums(an);
    unit_rows(an, r);
    remat_status_t st = unrolled_bound(an, r, err);
    if (!st) {
        st = held_or_apart(an, r, err);
    }
    if (!st && !r->unit_held_peak_bytes) {
        r->regathered_peak_bytes = regathered_of(r);
    }
    assert(st || r->regathered_peak_bytes <= (r->unit_held_peak_bytes
                                                   ? r->unit_held_peak_bytes
                                                   : r->stages[r->worst_stage].peak_bytes));
    /* the bound only adds held re-runs to the layer-by-layer step */
    assert(st || !r->unrolled_held_peak_bytes ||
           r->unrolled_held_peak_bytes >= r->stages[r->worst_stage].peak_bytes);
    return st;
}
