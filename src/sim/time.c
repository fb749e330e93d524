/* SPDX-License-Identifier: MIT */
/*
 * time.c: the time model (docs/time-model.md): op rooflines, per-layer time
 * rows, the step's FLOPs and time on the worst stage, the pipeline bubble,
 * MFU and HFU.
 *
 * Invariants:
 *  - transfers overlap compute: a layer's forward (backward) time is the
 *    max of its compute (and recompute) and each transfer, never a sum, so
 *    it is at least its compute and the exposed times are not negative;
 *  - the step's FLOP and byte totals are checked sums at most BYTES_MAX;
 *  - the bubble fraction is in [0, 1) and MFU <= HFU <= 1 (MFU against the
 *    peak of the run's dtype).
 * Asserts on times are written !(a < b) so that a NaN from hardware figures
 * a library caller left at zero is not mistaken for a broken invariant.
 */
#include <math.h>
#include <string.h>

#include "model/graph_internal.h"
#include "sim/sim_rooms.h"
#include "base/util.h"

static double max2(double a, double b) {
    return a > b ? a : b;
}

/* The efficiencies a run uses: the config's, else the hardware profile's. */
static double eff(double cfg, double hw) {
    return cfg > 0 ? cfg : hw;
}

/* A grouped matmul's executed rows over its model rows: Megablox's kernel
   walks the rows in tiles of `tile` (wi_tile_fwd_batch_seq) and computes a
   tile that straddles two experts' groups once for each, so each local
   expert adds up to a tile: (R + G x tile) / R for R routed rows (the
   output's leading letters, less the ragged ones) and G local experts (the
   ragged letters a weight carries). */
static double grouped_padding(const remat_block_t *b, const remat_op_t *op, const bound_t *bd,
                              uint64_t tile) {
    const size_t out = op->out[0];
    const char *os = op->subs[op->nin];
    double rows = 1, groups = 1;
    for (size_t i = 0; os[i + 1]; i++) {
        rows *= strchr(op->ragged, os[i]) ? 1.0 : (double)bd->tdim[out][i];
    }
    for (size_t k = 0; k < op->nin; k++) {
        const size_t t = op->in[k];
        for (size_t i = 0; b->tensors[t].param && op->subs[k][i]; i++) {
            groups *= strchr(op->ragged, op->subs[k][i]) ? (double)bd->ctdim[t][i] : 1.0;
        }
    }
    return rows > 0 ? (rows + groups * (double)tile) / rows : 1;
}

/* The FLOPs an op's kernels execute, forward and backward: the model's,
   except that a flash kernel re-runs QK^T in its backward (5 contractions
   for the model's 4) and computes whole key blocks of a window (bind.c's
   xscale), and a grouped matmul pads its experts' groups to tiles
   (grouped_padding). */
static void executed_flops(const remat_block_t *b, const remat_config_t *cfg,
                           const remat_op_t *op, const bound_t *bd, size_t j, double *f,
                           double *w) {
    *f = (double)bd->fwd[j];
    *w = (double)bd->bwd[j];
    if (op->kind == REMAT_OP_FLASH_ATTENTION) {
        *w *= 5.0 / 4.0;
    }
    if (bd->xscale[j] > 0) {
        *f *= bd->xscale[j];
        *w *= bd->xscale[j];
    }
    if (op->kind == REMAT_OP_EINSUM && op->ragged[0]) {
        const double pad = grouped_padding(b, op, bd, cfg->wi_tile_fwd_batch_seq);
        *f *= pad;
        *w *= pad;
    }
}

/* Bytes an op moves through HBM, forward and backward: forward its inputs
   (weights as gathered) and outputs; backward the output gradients, the
   input gradients, the residuals it reads, the weights again and the
   weight gradients. */
static void moved_bytes(const remat_block_t *b, double grad_bytes, const bound_t *bd, size_t j,
                        double *fmoved, double *bmoved) {
    const remat_op_t *op = &b->ops[j];
    *fmoved = *bmoved = (double)bd->op_gather[j];
    for (size_t i = 0; i < op->nin; i++) {
        if (bd->ix.tflags[op->in[i]] & REMAT_I_T_PARAM) {
            *bmoved += (double)bd->gnumel[op->in[i]] * grad_bytes;
        } else {
            *fmoved += (double)bd->tbytes[op->in[i]];
            *bmoved += (double)bd->gbytes[op->in[i]];
        }
    }
    for (size_t i = 0; i < op->nout; i++) {
        *fmoved += (double)bd->tbytes[op->out[i]];
        *bmoved += (double)bd->gbytes[op->out[i]];
    }
    for (size_t i = 0; i < op->nsaves; i++) {
        *bmoved += (double)bd->tbytes[op->saves[i]];
    }
}

/* Whether XLA fuses every output of op @p j into the ops that read it: it
   then moves no bytes of its own (its readers read its inputs), and only its
   FLOPs take time, so that no op runs faster than its FLOPs at peak. */
static bool fused_away(const remat_op_t *op, const bound_t *bd) {
    for (size_t i = 0; i < op->nout; i++) {
        if (!bd->ix.fusable_flag[op->out[i]]) {
            return false;
        }
    }
    return op->nout > 0;
}

/* Op @p j's activation collectives in seconds at @p ici (ICI bytes per
   second), once its rooflines are set (docs/time-model.md, "Activation
   collectives"). Forward, its consumers wait for them: the gather of its
   inputs before it runs, the reduce-scatter of its partial output after.
   Backward, the transposes move the same bytes: its output's gradient is
   gathered before either contraction can start (waited for); its input's
   gradient is reduce-scattered, and its input gathered again for the
   weight gradient, beside its two contractions, so only what they do not
   cover waits. An op the plan re-runs gathers its input in the re-run
   (act_f_s there), not again in backward (act_br_s). */
static void act_times(const remat_op_t *op, double ici, size_t j, bound_t *bd) {
    const double ag = (double)bd->act_ag[j] / ici, rs = (double)bd->act_rs[j] / ici;
    bd->act_f_s[j] = ag + rs;
    if (!op->has_backward) {
        bd->act_b_s[j] = bd->act_br_s[j] = 0;
        return;
    }
    bd->act_b_s[j] = rs + max2(2 * ag - bd->bwd_s[j], 0);
    bd->act_br_s[j] = rs + max2(ag - bd->bwd_s[j], 0);
}

/* The roofline of every op (docs/time-model.md): its time is the larger of
   the FLOPs its kernels execute at the sustained peak of its kind (matmul
   or attention kernel; weight einsums at the fp8 peak under fp8
   quantization, all else at bf16) and the bytes it moves at the sustained
   HBM bandwidth. Views take no time; fused ops move no bytes. The ops
   from position @p chunked_from on run once per vocabulary chunk
   (num_vocab_tiling): their bytes are bound per chunk, so they move
   num_vocab_tiling times as much. The config's choices (fp8, the gradient
   dtype) are read once, not per op. */
void remat_i_op_times(const remat_block_t *b, const remat_config_t *cfg, const remat_hw_t *hw,
                      size_t chunked_from, bound_t *bd) {
    const double mm = eff(cfg->matmul_efficiency, hw->matmul_efficiency);
    const double at = eff(cfg->attention_efficiency, hw->attention_efficiency);
    const double bw = hw->hbm_bw * eff(cfg->memory_efficiency, hw->memory_efficiency);
    const double grad_bytes = remat_dtype_bytes(cfg->grad_dtype);
    const bool fp8 = is_fp8(cfg);
    for (size_t j = 0; j < b->nops; j++) {
        const remat_op_t *op = &b->ops[j];
        if (remat_i_opkind_is_view(op->kind)) {
            bd->fwd_s[j] = bd->bwd_s[j] = 0;
            act_times(op, hw->ici_bw, j, bd); /* a view moves nothing: zeros */
            continue;
        }
        double fmoved = 0, bmoved = 0, f, w;
        if (!fused_away(op, bd)) {
            moved_bytes(b, grad_bytes, bd, j, &fmoved, &bmoved);
        }
        if (bd->ix.pos[j] >= chunked_from && cfg->num_vocab_tiling > 1) {
            fmoved *= (double)cfg->num_vocab_tiling;
            bmoved *= (double)cfg->num_vocab_tiling;
        }
        executed_flops(b, cfg, op, bd, j, &f, &w);
        /* fp8_matmul, its fp8 test hoisted */
        const bool fp8_op = fp8 && weight_einsum(b, op) && !op->ragged[0];
        assert(fp8_op == fp8_matmul(cfg, b, op));
        double peak = fp8_op ? hw->flops_fp8 : hw->flops_bf16;
        peak *= op->kind == REMAT_OP_FLASH_ATTENTION ? at : mm;
        double fc = f / peak, fm = fmoved / bw;
        double bc = w / peak, bm = bmoved / bw;
        bd->fwd_s[j] = max2(fc, fm);
        bd->bwd_s[j] = op->has_backward ? max2(bc, bm) : 0;
        act_times(op, hw->ici_bw, j, bd);
    }
}

/* One layer's row from its profile @p t. A ring all-gather or
   reduce-scatter over n chips moves (n-1)/n of the full buffer through each
   chip's ICI (@p fsdp_frac). */
static void layer_row(const remat_analyzer_t *an, const tpl_t *t, double fsdp_frac,
                      double host_link_bw, remat_layer_row_t *row) {
    const remat_config_t *cfg = an->cfg;
    memset(row, 0, sizeof *row);
    row->saved_device_bytes = t->saved;
    row->offloaded_bytes = t->offloaded;
    row->recompute_flops = t->recompute_flops;
    row->forward_flops = t->fwd_flops;
    row->backward_flops = t->bwd_flops;
    row->d2h_seconds = row->h2d_seconds = (double)t->offloaded / host_link_bw;
    /* parameter_memory_host_offload: the layer's weights come over the
       host link for its forward and again for its backward, on the
       host-to-device direction. */
    row->param_fetch_seconds =
        cfg->parameter_memory_host_offload ? (double)an->kpart[t->kind].bytes / host_link_bw : 0;
    row->forward_compute_seconds = t->fwd_s;
    row->backward_compute_seconds = t->bwd_s;
    row->recompute_seconds = t->rec_s;
    const collectives_t *col = &an->col[t->kind];
    row->allgather_seconds = (double)col->sharded * fsdp_frac / an->hw->ici_bw;
    row->reduce_scatter_seconds = (double)col->grad_buffer * fsdp_frac / an->hw->ici_bw;
    /* Each token's rows go to the expert shards and come back, with
       (n-1)/n of them leaving the chip; the next op waits for them: on the
       critical path, forward and backward. */
    const double ep = (double)an->mesh.shards[REMAT_AXIS_EXPERT];
    row->all_to_all_seconds = (double)col->all_to_all * (ep - 1) / ep / an->hw->ici_bw;
    row->act_collective_forward_seconds = t->act_f_s;
    row->act_collective_backward_seconds = t->act_b_s;
    double f = t->fwd_s + row->all_to_all_seconds + t->act_f_s;
    double b2 = t->bwd_s + t->rec_s + row->all_to_all_seconds + t->act_b_s;
    double fc = row->allgather_seconds, bcol = row->allgather_seconds + row->reduce_scatter_seconds;
    double d2h = row->d2h_seconds, h2d = row->h2d_seconds + row->param_fetch_seconds;
    row->forward_seconds = max2(max2(max2(f, fc), d2h), row->param_fetch_seconds);
    row->backward_seconds = max2(max2(b2, bcol), h2d);
    assert(!(row->forward_seconds < f) && !(row->backward_seconds < b2));
}

/* Rows @p rows[1..n) copies of rows[0], each with its index (from
   @p first). The copies double (1, 2, 4, ... rows at a time): one memcpy
   a step moves a run's 17 KB in the widest stores the machine has, where
   a row at a time took a store per 16 bytes, the analysis's costliest
   loop. Source and destination never overlap (each copy is at most what
   is done). */
static void fill_rows(remat_layer_row_t *rows, size_t n, size_t first) {
    for (size_t done = 1; done < n;) {
        const size_t k = done < n - done ? done : n - done;
        memcpy(&rows[done], rows, k * sizeof *rows);
        done += k;
    }
    for (size_t i = 0; i < n; i++) {
        rows[i].index = first + i;
    }
}

/* Per-layer rows, FLOPs and offload (one micro-batch; a step runs
   `microbatches` of them). */
void remat_i_layer_rows(const remat_analyzer_t *an, remat_result_t *r) {
    const remat_config_t *cfg = an->cfg;
    const size_t L = an->nlayers;
    r->nlayers = L;
    /* not zeroed: every row is layer_row's (which zeroes it) or a copy */
    r->layers = remat_i_result_alloc(r, L * sizeof *r->layers);
    r->host_link_bw = cfg->host_link_bw > 0 ? cfg->host_link_bw : an->hw->host_link_bw;
    r->host_link_assumed = cfg->host_link_bw <= 0 && remat_hw_is_assumed(an->hw, "host_link_bw");
    const uint64_t fsdp_shards = remat_mesh_product(&an->mesh, (1u << REMAT_AXIS_FSDP) |
                                                                   (1u << REMAT_AXIS_FSDP_TRANSPOSE));
    const double fsdp_frac = (double)(fsdp_shards - 1) / (double)fsdp_shards;
    /* A row depends only on its layer's profile: a run of identical layers
       copies its first row (fill_rows). */
    for (size_t k = 0; k < an->nruns; k++) {
        const layer_run_t *run = &an->runs[k];
        remat_layer_row_t *rows = &r->layers[run->first];
        const size_t n = run->last - run->first + 1;
        layer_row(an, &an->tpls[run->profile], fsdp_frac, r->host_link_bw, rows);
        rows->profile = run->profile;
        fill_rows(rows, n, run->first);
    }
    assert(an->nruns ? an->runs[an->nruns - 1].last == L - 1 : L == 0);
}

/* The peak MFU and HFU are measured against: that of the dtype the run's
   matmuls compute in (fp8 under fp8 quantization, else bf16). */
static double compute_peak(const remat_analyzer_t *an) {
    return is_fp8(an->cfg) ? an->hw->flops_fp8 : an->hw->flops_bf16;
}

/* Whether the head's op at position @p p runs forward twice: the chunked
   loss (num_vocab_tiling > 1) re-runs each chunk's forward in its backward. */
static bool head_reruns(const remat_analyzer_t *an, size_t p) {
    return an->cfg->num_vocab_tiling > 1 && p >= an->g->head_npre;
}

/* *acc += a x steps x n, checked: what n layers' checked sums of a x steps
   add, failing exactly when theirs would (the sums only grow, so they pass
   the limit if and only if the total does). */
static remat_status_t sum_run(uint64_t *acc, uint64_t a, uint64_t steps, uint64_t n,
                              const char *what, remat_error_t *err) {
    uint64_t times;
    if (a == 0) {
        return REMAT_OK; /* nothing added: no error, as n sums of 0 give none */
    }
    if (!remat_i_mul(steps, n, &times)) {
        times = UINT64_MAX; /* saturated: a x times is past the limit either way */
    }
    return sum_checked(acc, a, times, what, err);
}

/* The integer totals of a run of @p n equal layer rows, per step. */
static remat_status_t run_counts(remat_result_t *r, const remat_layer_row_t *row, uint64_t steps,
                                 uint64_t n, remat_error_t *err) {
    remat_status_t st;
    if ((st = sum_run(&r->forward_flops, row->forward_flops, steps, n, "FLOPs", err)) ||
        (st = sum_run(&r->backward_flops, row->backward_flops, steps, n, "FLOPs", err)) ||
        (st = sum_run(&r->recompute_flops, row->recompute_flops, steps, n, "FLOPs", err))) {
        return st;
    }
    return sum_run(&r->d2h_bytes, row->offloaded_bytes, steps, n, "offload bytes", err);
}

/* FLOPs and offload bytes per step on a device of the worst stage: its
   layers for every micro-batch (gradient accumulation and pipeline
   micro-batches; the layer rows are per micro-batch), and the head once
   per accumulation step (it runs on the whole batch: every stage runs it
   outside MaxText's pipeline). Runs of identical layers share one row's
   terms. */
static remat_status_t worst_stage_work(const remat_analyzer_t *an, remat_result_t *r,
                                       uint64_t steps, remat_error_t *err) {
    const remat_stage_row_t *w = &r->stages[r->worst_stage];
    remat_status_t st;
    for (size_t l = w->first_layer, e; l <= w->last_layer; l = e + 1) {
        e = run_end(an, l, w->last_layer);
        const remat_layer_row_t *row = &r->layers[l];
        if ((st = run_counts(r, row, steps, e - l + 1, err))) {
            return st;
        }
    }
    const bound_t *hb = &an->hb;
    const uint64_t accum = an->cfg->gradient_accumulation_steps;
    for (size_t p = 0; an->g->has_head && p < an->g->head.nops; p++) {
        size_t j = an->g->head.order[p];
        if ((st = sum_checked(&r->forward_flops, hb->fwd[j], accum, "FLOPs", err)) ||
            (st = sum_checked(&r->backward_flops, hb->bwd[j], accum, "FLOPs", err)) ||
            (head_reruns(an, p) &&
             (st = sum_checked(&r->recompute_flops, hb->fwd[j], accum, "FLOPs", err)))) {
            return st;
        }
    }
    return REMAT_OK;
}

/* What the step sums layer by layer in floating point, in one pass over
   the layers: each stage's layers' time for one micro-batch, the head ops'
   rooflines (once a step), every layer's model and re-run FLOPs, and the
   worst stage's transfer seconds per step, exposed (what the compute does
   not hide), exposed collective and re-run. Each sum adds the same terms
   in the same order as a pass of its own would, so it rounds alike; in
   one pass the sums do not wait on each other (separate passes ran at a
   floating add's latency). */
typedef struct fsums {
    double slowest, model, rec;                      /* the stages' layers */
    double head, head_model, head_wait;              /* the head's, once per step */
    double d2h, exposed, collective, rerun;          /* the worst stage's */
} fsums_t;

/* The worst stage's per-step terms of @p row, into @p per[4]: host
   transfers beyond the compute and collectives (exposed), collectives
   beyond the compute, D2H and re-run. */
static void worst_terms(const remat_layer_row_t *row, double steps, double *per) {
    const double fc = row->forward_compute_seconds;
    const double bc = row->backward_compute_seconds + row->recompute_seconds;
    /* the collectives the compute waits for lengthen it; the weights'
       gathers and scatters run beside it */
    const double fwait = row->all_to_all_seconds + row->act_collective_forward_seconds;
    const double bwait = row->all_to_all_seconds + row->act_collective_backward_seconds;
    const double fcol = max2(fc + fwait, row->allgather_seconds);
    const double bcol =
        max2(bc + bwait, row->allgather_seconds + row->reduce_scatter_seconds);
    per[0] = row->d2h_seconds * steps;
    per[1] = (row->forward_seconds - fcol + row->backward_seconds - bcol) * steps;
    per[2] = (fcol - fc + bcol - bc) * steps;
    per[3] = row->recompute_seconds * steps;
}

/* Stage @p k's layers into @p f, returning its layer time. */
static double stage_layers(const remat_analyzer_t *an, const remat_result_t *r, size_t k,
                           double steps, fsums_t *f) {
    const remat_stage_row_t *sr = &r->stages[k];
    double t = 0, per[4] = {0, 0, 0, 0};
    for (size_t l = sr->first_layer, e; l <= sr->last_layer; l = e + 1) {
        e = run_end(an, l, sr->last_layer);
        const remat_layer_row_t *row = &r->layers[l];
        const double layer = row->forward_seconds + row->backward_seconds;
        const double model = (double)(row->forward_flops + row->backward_flops);
        const double rec = (double)row->recompute_flops;
        if (k == r->worst_stage) { /* other stages add zeros: x + 0 is x */
            worst_terms(row, steps, per);
        }
        for (size_t i = l; i <= e; i++) {
            t += layer;
            f->model += model;
            f->rec += rec;
            f->d2h += per[0];
            f->exposed += per[1];
            f->collective += per[2];
            f->rerun += per[3];
        }
    }
    return t;
}

static void step_fsums(const remat_analyzer_t *an, const remat_result_t *r, uint64_t steps,
                       fsums_t *f) {
    memset(f, 0, sizeof *f);
    for (size_t k = 0; k < an->nstages; k++) {
        f->slowest = max2(stage_layers(an, r, k, (double)steps, f), f->slowest);
    }
    for (size_t p = 0; an->g->has_head && p < an->g->head.nops; p++) {
        size_t j = an->g->head.order[p];
        /* its activation collectives wait on its critical path, as a
           layer's do (the chunked loss's forward runs twice) */
        const double runs = head_reruns(an, p) ? 2 : 1;
        const double wait = an->hb.act_f_s[j] * runs + an->hb.act_b_s[j];
        f->head += an->hb.fwd_s[j] * runs + an->hb.bwd_s[j] + wait;
        f->head_wait += wait;
        f->head_model += (double)(an->hb.fwd[j] + an->hb.bwd[j]);
    }
}

/* The pipeline runs at its slowest stage: the stage with the peak is not
   always the one with the most work (mixed layer stacks). Across stages,
   model and hardware FLOPs per device are averaged. */
static void utilization(const remat_analyzer_t *an, remat_result_t *r, uint64_t steps,
                        const fsums_t *f) {
    const size_t stages = an->nstages;
    const double flops_peak = compute_peak(an);
    const double slowest = f->slowest;
    const double accum = (double)an->cfg->gradient_accumulation_steps;
    const double all_model = f->model * ((double)steps / (double)stages) + f->head_model * accum;
    const double all_rec = f->rec * ((double)steps / (double)stages);
    /* MaxText's circular pipeline: M R + bubble iterations of L / (S R)
       layers each, M + bubble / R slots of one micro-batch's stage time
       (layers/pipeline.py; base.yml's bubble fraction (S - 1) / (M R + S - 1)),
       then the head once on the whole batch; gradient accumulation repeats
       the step. */
    const double bubble_slots = (double)an->bubble / (double)an->repeats;
    const double slots = (double)r->microbatches + bubble_slots;
    r->bubble_fraction = bubble_slots / slots;
    r->step_seconds = (slowest * slots + f->head) * accum;
    if (r->step_seconds > 0) {
        r->mfu = all_model / (r->step_seconds * flops_peak);
        r->hfu = (all_model + all_rec) / (r->step_seconds * flops_peak);
    }
    /* every op runs no faster than its executed FLOPs at the dtype's peak,
       and executed FLOPs are at least the counted ones: HFU <= 1 */
    assert(r->bubble_fraction >= 0 && r->bubble_fraction < 1 && !(r->mfu > r->hfu) &&
           !(r->hfu > 1.0 + 1e-9));
}

remat_status_t remat_i_step_time(const remat_analyzer_t *an, remat_result_t *r,
                                 remat_error_t *err) {
    const uint64_t steps = an->cfg->gradient_accumulation_steps * r->microbatches;
    remat_status_t st = worst_stage_work(an, r, steps, err);
    if (st) {
        return st;
    }
    fsums_t f;
    step_fsums(an, r, steps, &f);
    r->d2h_seconds = f.d2h;
    r->exposed_seconds = f.exposed;
    r->exposed_collective_seconds =
        f.collective + f.head_wait * (double)an->cfg->gradient_accumulation_steps;
    r->recompute_seconds = f.rerun;
    r->h2d_bytes = r->d2h_bytes;
    r->h2d_seconds = r->d2h_seconds;
    r->model_flops = r->forward_flops + r->backward_flops;
    r->recompute_share = r->model_flops ? (double)r->recompute_flops / (double)r->model_flops : 0;
    r->compute_seconds = (double)(r->model_flops + r->recompute_flops) / compute_peak(an);
    r->added_seconds = r->recompute_seconds + r->exposed_seconds;
    r->offload_hidden = r->exposed_seconds <= 0;
    assert(!(r->exposed_seconds < 0) && !(r->exposed_collective_seconds < 0));
    utilization(an, r, steps, &f);
    /* A rate near zero (host_link_bw=1e-300, a profile's flops_bf16 of
       1e-320) makes a time infinite: an input error, never a report (JSON
       has no infinity) or a ranking on it. */
    const double times[] = {r->step_seconds, r->compute_seconds, r->d2h_seconds,
                            r->exposed_seconds, r->exposed_collective_seconds,
                            r->recompute_seconds};
    for (size_t i = 0; i < sizeof times / sizeof times[0]; i++) {
        if (!isfinite(times[i])) {
            return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                                   "the step time is not finite (hardware %s: host link %g B/s, "
                                   "%g FLOP/s, HBM %g B/s per device): a rate is too small",
                                   an->hw->name, r->host_link_bw, compute_peak(an),
                                   an->hw->hbm_bw);
        }
    }
    return REMAT_OK;
}
