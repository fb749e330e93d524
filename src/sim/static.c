/* SPDX-License-Identifier: MIT */
/*
 * static.c: the memory a device holds for the whole step whatever the
 * policy: params, optimizer state, the accumulator and the reserve, per
 * pipeline stage; the weight gradients' sizes (they exist from the
 * backward on: step.c places them); and what the layer's collectives move.
 *
 * Invariants:
 *  - every total is a checked sum at most BYTES_MAX (2^62), an overflow
 *    error otherwise;
 *  - a stage's static categories sum to its static bytes, and what moves to
 *    host RAM is in neither;
 *  - a head param is counted once on every stage (MaxText runs the
 *    embedding and the loss on every stage, outside the pipeline): in the
 *    pre part when the embedding uses it, else in the post part (tied
 *    embeddings count once);
 *  - a frozen param (a vision encoder's under freeze_vision_encoder_params)
 *    counts in the params and the optimizer state, not in the gradients:
 *    its part's frozen bytes are at most its bytes.
 */
#include <string.h>

#include "sim/sim_rooms.h"

/* Optimizer state elements for one param of local shape @p dims under
   adafactor (optax defaults, as MaxText uses them: no momentum, factored
   second moment when the two largest dims are both >= 128): one statistic
   per slice along each of the two largest dims, else the full moment. */
static uint64_t adafactor_elems(const uint64_t *dims, size_t rank, uint64_t numel) {
    size_t big = REMAT_NONE, second = REMAT_NONE;
    for (size_t i = 0; i < rank; i++) {
        if (big == REMAT_NONE || dims[i] >= dims[big]) {
            second = big;
            big = i;
        } else if (second == REMAT_NONE || dims[i] >= dims[second]) {
            second = i;
        }
    }
    if (second == REMAT_NONE || dims[second] < 128) {
        return numel;
    }
    return numel / dims[big] + numel / dims[second];
}

static void add_param(static_part_t *p, const bound_t *bd, const remat_tensor_t *t, size_t i) {
    p->count += bd->numel[i];
    p->bytes += bd->bytes[i];
    p->adafactor += adafactor_elems(bd->tdim[i], t->rank, bd->numel[i]);
    p->frozen += t->frozen ? bd->bytes[i] : 0;
}

/* A param's elements over the whole model (unsharded). Bounded by its
   bytes, which binding checked. */
static uint64_t global_numel(const remat_analyzer_t *an, const remat_tensor_t *t) {
    uint64_t n = 1;
    for (size_t j = 0; j < t->rank; j++) {
        n *= an->dim_size[t->dim[j]];
    }
    return n;
}

/* Whether param @p t is a routed expert's weight: one of its dims is on
   the `exp` logical axis (its own `axes`, else its dim's weight axis), or
   on `expert_only`, the batch-split schedule's name for it. */
static bool routed_param(const remat_graph_t *g, const remat_tensor_t *t) {
    for (size_t j = 0; j < t->rank; j++) {
        const char *axis = t->has_axes ? t->axes[j] : g->dims[t->dim[j]].weight_axis;
        if (axis && remat_i_expert_axis(axis)) {
            return true;
        }
    }
    return false;
}

/* What one token runs through of @p n params of @p t: a routed expert
   weight's top-k of its experts (n / experts x top-k: the experts dim
   divides n), any other param whole. */
static uint64_t active_numel(const remat_analyzer_t *an, const remat_tensor_t *t, uint64_t n) {
    const remat_config_t *c = an->cfg;
    if (c->num_experts <= 1 || !routed_param(an->g, t)) {
        return n;
    }
    return n / (uint64_t)c->num_experts * c->num_experts_per_tok;
}

/* One layer of kind @p k: its params, and the bytes its collectives move
   (its gathered weights and their whole gradients). Returns its global
   param count, and adds what one token runs through to *active. */
static uint64_t layer_params(remat_analyzer_t *an, size_t k, uint64_t *active) {
    const remat_block_t *b = &an->g->kinds[k].block;
    const bound_t *lb = &an->kb[k];
    const uint64_t compute_bytes = remat_dtype_bytes(an->cfg->dtype);
    uint64_t global_layer = 0;
    an->col[k] = (collectives_t){0};
    an->kpart[k] = (static_part_t){0};
    for (size_t j = 0; j < b->nops; j++) {
        if (b->ops[j].kind == REMAT_OP_GATHER && b->ops[j].over[0]) {
            /* below the envelope: a part of the block's bytes */
            an->col[k].all_to_all += lb->tbytes[b->ops[j].out[0]];
        }
    }
    for (size_t i = 0; i < b->ntensors; i++) {
        const remat_tensor_t *t = &b->tensors[i];
        if (!t->param) {
            continue;
        }
        add_param(&an->kpart[k], lb, t, i);
        const uint64_t global = global_numel(an, t);
        global_layer += global;
        *active += active_numel(an, t, global);
        if (lb->gnumel[i] != lb->numel[i]) {
            /* gathered in the compute dtype (fp8 under fp8: gathered_bytes,
               bound per param), its gradient reduce-scattered in the
               compute dtype */
            an->col[k].sharded += lb->gnumel[i] * lb->cbytes[i];
            an->col[k].grad_buffer += lb->gnumel[i] * compute_bytes;
        }
    }
    return global_layer;
}

/* What the chunked loss (num_vocab_tiling > 1) gathers of head param @p i,
   a param the loss reads: the whole param in its own dtype (when it is
   sharded over the gathered axes), and an accumulator of its gradients, a
   zeros_like of that gathered copy. */
static void tiled_gathers(remat_analyzer_t *an, const remat_tensor_t *t, size_t i) {
    const remat_config_t *cfg = an->cfg;
    const bound_t *hb = &an->hb;
    if (cfg->num_vocab_tiling > 1) {
        uint64_t whole = hb->gnumel[i] * remat_config_dtype_bytes(cfg, t->dtype);
        an->tiled_gather += hb->gnumel[i] != hb->numel[i] ? whole : 0;
        an->tiled_acc += whole;
    }
}

/* The head's params by the part that reads them; adds their global count
   to *global and what one token runs through of them to *active. */
static void head_params(remat_analyzer_t *an, uint64_t *global, uint64_t *active) {
    const remat_graph_t *g = an->g;
    const remat_block_t *b = &g->head;
    for (size_t i = 0; g->has_head && i < b->ntensors; i++) {
        const remat_tensor_t *t = &b->tensors[i];
        if (!t->param) {
            continue;
        }
        const uint64_t n = global_numel(an, t);
        *global += n;
        *active += active_numel(an, t, n);
        bool in_pre = false, in_post = false;
        for (size_t p = 0; p < b->nops; p++) {
            const remat_op_t *op = &b->ops[b->order[p]];
            for (size_t k = 0; k < op->nin; k++) {
                if (op->in[k] == i) {
                    in_pre |= p < g->head_npre;
                    in_post |= p >= g->head_npre;
                }
            }
        }
        /* a param no op reads (a bias whose add the graph leaves to its
           matmul) is held all the same: with the embedding's part */
        in_pre |= !in_post;
        if (in_pre) {
            add_param(&an->pre, &an->hb, t, i);
        }
        if (in_post && !in_pre) { /* every stage runs both parts: a shared param once */
            add_param(&an->post, &an->hb, t, i);
        }
        if (in_post) {
            tiled_gathers(an, t, i);
        }
    }
}

remat_status_t remat_i_static_parts(remat_analyzer_t *an, remat_error_t *err) {
    uint64_t global = 0, active = 0;
    for (size_t k = 0; k < an->g->nkinds; k++) {
        uint64_t layer_active = 0;
        remat_status_t st = sum_checked(&global, layer_params(an, k, &layer_active),
                                        an->klayers[k], "parameters", err);
        if (st) {
            return st;
        }
        /* at most the layer's params: the sum above bounds it */
        active += layer_active * an->klayers[k];
    }
    an->tiled_gather = an->tiled_acc = 0;
    head_params(an, &global, &active);
    an->param_count = global;
    an->active_param_count = active;
    return REMAT_OK;
}

/* Params, bytes and adafactor elements of stage @p k's layers and head
   parts; *layers gets the layers' share of *count. */
static remat_status_t stage_params(const remat_analyzer_t *an, size_t k, uint64_t *count,
                                   uint64_t *pbytes, uint64_t *afac, uint64_t *layers,
                                   remat_error_t *err) {
    const size_t Ls = an->nlayers / an->nstages;
    size_t of_kind[REMAT_MAX_KINDS] = {Ls};
    for (size_t l = k * Ls; an->g->nkinds > 1 && l < (k + 1) * Ls; l++) {
        of_kind[0] -= an->kind_of[l] != 0;
        of_kind[an->kind_of[l]] += an->kind_of[l] != 0;
    }
    remat_status_t st = REMAT_OK;
    for (size_t kd = 0; kd < an->g->nkinds && st == REMAT_OK; kd++) {
        const static_part_t *part = &an->kpart[kd];
        if ((st = sum_checked(count, part->count, of_kind[kd], "parameters", err)) ||
            (st = sum_checked(pbytes, part->bytes, of_kind[kd], "parameter bytes", err))) {
            break;
        }
        st = sum_checked(afac, part->adafactor, of_kind[kd], "optimizer bytes", err);
    }
    if (st) {
        return st;
    }
    *layers = *count;
    /* every stage runs the head (step.c): MaxText splits no head param by stage */
    const static_part_t *parts[2] = {an->g->has_head ? &an->pre : NULL,
                                     an->g->has_head ? &an->post : NULL};
    for (int i = 0; i < 2; i++) {
        if (parts[i]) {
            *count += parts[i]->count;
            *pbytes += parts[i]->bytes;
            *afac += parts[i]->adafactor;
        }
    }
    return REMAT_OK;
}

/* Whether the scan holds a copy of the layers' params in the compute dtype:
   XLA makes one before the forward scan, of every scanned layer's local
   params, and the backward scan reads its slices, so it lives to the end
   of the backward scan. MaxText's decoders scan the params stacked on
   param_scan_axis and move that axis to the front (nnx_decoders.py at
   e591f30, and flax's scan for the linen decoder): the cast each layer's
   matmul needs fuses into that transpose; with the layer axis first (0)
   XLA hoists the cast out of the loop instead, and the compiled peak is
   the same to the byte (docs/validation.md). Params already in the
   compute dtype need no cast, and XLA slices the stack where it lies: no
   copy (a 70B step with bf16 weights holds 0.7 GiB of layout copies, not
   the 9 GiB of its layers). A pipeline scans its stages' layers its own
   way: not modelled there. */
static bool scan_copies_weights(const remat_analyzer_t *an) {
    const remat_config_t *cfg = an->cfg;
    return cfg->scan_layers && an->nstages == 1 && cfg->weight_dtype != cfg->dtype;
}

remat_status_t remat_i_stage_static(const remat_analyzer_t *an, size_t k, stage_static_t *out,
                                    remat_error_t *err) {
    const remat_config_t *cfg = an->cfg;
    const bool adafactor = cfg->optimizer == REMAT_OPT_ADAFACTOR;
    const bool adam = cfg->optimizer == REMAT_OPT_ADAM;
    memset(out, 0, sizeof *out);
    uint64_t afac = 0, layer_count = 0;
    remat_status_t st;
    if ((st = stage_params(an, k, &out->count, &out->params, &afac, &layer_count, err)) ||
        (scan_copies_weights(an) &&
         (st = sum_checked(&out->scan_weights, layer_count, remat_dtype_bytes(cfg->dtype),
                           "scan weight bytes", err))) ||
        (adam && (st = sum_checked(&out->optimizer, out->count,
                                           2u * remat_dtype_bytes(cfg->mu_dtype),
                                           "optimizer bytes", err))) ||
        (adafactor &&
         (st = sum_checked(&out->optimizer, afac, 4, "optimizer bytes", err))) ||
        (cfg->gradient_accumulation_steps > 1 &&
         (st = sum_checked(&out->accum, out->count, 4, "accumulator bytes", err)))) {
        return st;
    }
    /* JAX's gradients have their params' dtypes; MaxText casts the fp32
       ones to grad_dtype only after the backward pass (train.py at
       e591f30), so the step holds them as the params: the same bytes. A
       frozen param's gradient is JAX's symbolic zero, which XLA folds into
       the optimizer's update: no buffer (its optimizer state stays: the
       optimizer is not masked, optimizers.py get_optimizer at e591f30) */
    assert(an->pre.frozen <= an->pre.bytes && an->post.frozen <= an->post.bytes);
    out->grads = out->params - (an->g->has_head ? an->pre.frozen + an->post.frozen : 0);
    if (an->g->has_head) { /* part of grads: stage_params counted both parts on every stage */
        out->grads_embed = an->pre.bytes - an->pre.frozen;
        out->grads_logits = remat_i_loss_grads_deferred(an) ? an->post.bytes - an->post.frozen : 0;
    }
    /* parameter_memory_host_offload keeps the params in host RAM between
       steps only: MaxText moves every Param to the device before the
       forward and backward (train.py at e591f30), so the step holds them in
       HBM as it would without the offload. XLA's copies at the peak of a
       v5e-16 llama2-7b step hold the whole fp32 stacks, the params' 1.57
       GiB (docs/validation.md). */
    if (cfg->parameter_memory_host_offload) {
        out->host += out->params;
    }
    out->cats[REMAT_CAT_PARAMS] = (int64_t)out->params;
    if (cfg->optimizer_memory_host_offload) {
        out->host += out->optimizer;
    } else {
        out->cats[REMAT_CAT_OPTIMIZER] = (int64_t)out->optimizer;
    }
    /* The gradients are not live the whole step: XLA allocates them (the
       backward scan's stacked output) as the backward pass begins (step.c),
       so they are not in the static categories. */
    out->cats[REMAT_CAT_GRAD_ACCUM] = (int64_t)out->accum;
    out->cats[REMAT_CAT_RESERVE] = (int64_t)cfg->hbm_reserve;
    for (int c = 0; c < REMAT_CAT_COUNT; c++) {
        if ((st = sum_checked(&out->bytes, (uint64_t)out->cats[c], 1, "static bytes",
                                      err))) {
            return st;
        }
    }
    assert(out->bytes <= BYTES_MAX);
    return REMAT_OK;
}
