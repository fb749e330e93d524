/* SPDX-License-Identifier: MIT */
/*
 * sim_rooms.h: what the simulator's rooms share (not public). Every room
 * (bind, layer, step, static, time, verdict) includes this header and no
 * other room's; the orchestrator, analyze.c, calls them in pipeline order.
 *
 * Invariants the rooms rely on:
 *  - a bound byte or FLOP count is at most BYTES_MAX (2^62), so a signed
 *    delta of two of them, or a sum of a handful, never overflows;
 *  - a meter's categories always sum to its live bytes;
 *  - a buffer's bytes count once: it is allocated only while not live, and
 *    freeing a buffer that is not live changes nothing.
 */
#ifndef REMAT_SIM_ROOMS_H
#define REMAT_SIM_ROOMS_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "remat/sim/sim.h"
#include "model/graph_index.h"
#include "sim/sim_internal.h"
#include "base/util.h"

/* Byte counts stay below 2^62 so that signed deltas never overflow. */
#define BYTES_MAX REMAT_BYTES_MAX
_Static_assert(REMAT_BYTES_MAX == REMAT_ACC_MAX, "one limit for bytes and the accumulator");
_Static_assert(REMAT_MAX_KINDS <= 256, "a layer's kind fits in a byte");

/* The graph's dims a run can bind; the result reports each one's size. */
#define SIM_MAX_DIMS REMAT_MAX_DIMS
_Static_assert(sizeof(((remat_result_t *)0)->dim_size) == SIM_MAX_DIMS * sizeof(uint64_t),
               "the result reports every dim the analyzer binds");

/* ---- bind.c: one block bound to a config and mesh ----------------------- */

typedef struct bound {
    /* per tensor: its shape's per-device dim sizes (REMAT_MAX_RANK, zero
       past its rank), and the dims ops compute with (a param gathered, an
       activation as it is held): rows that tensors of one shape share */
    const uint64_t **tdim, **ctdim;
    uint64_t *numel;    /* per tensor, per device */
    uint64_t *bytes;    /* per tensor: its own buffer; 0 for a view */
    uint64_t *kbytes;   /* per tensor: bytes of the kept copy (fp8 residuals) */
    uint64_t *gbytes;   /* per tensor: its gradient buffer; 0 if none */
    uint64_t *gnumel;   /* per param: elements once FSDP-gathered */
    unsigned char *cbytes; /* per param: bytes per element of its gathered copy
                              (gathered_bytes, decided once per bind) */
    uint64_t *fwd, *bwd; /* per op */
    uint64_t *kv_extra; /* per op: context-parallel K/V gather live during it */
    uint64_t *op_gather; /* per op: bytes of its params as it reads them (whole over FSDP) */
    uint64_t *op_gather_mem; /* per op: of those, the copies FSDP or the host must make */
    uint64_t *op_wgrad;  /* per op: its FSDP-gathered params' gradients before the reduce-scatter */
    uint64_t *gather_next, *gather_prev; /* per op: the gather prefetched during it, forward
                                            (the next gathering op's) and backward (the previous) */
    uint64_t *tbytes;   /* per tensor: its size, views included */
    unsigned char *mark; /* per tensor: binding's scratch */
    double *fwd_s, *bwd_s; /* per op: roofline seconds (op_times) */
    /* per op: the activation collectives (act_comm.c): bytes each device
       sends to gather the inputs first gathered here, and to complete its
       partial output; and their seconds on the op's critical path
       (op_times), forward, backward and backward when the op re-runs */
    uint64_t *act_ag, *act_rs;
    /* per op: the whole-size activation buffers those collectives need
       while it runs (act_comm.c): its inputs gathered whole, its partial
       output before the reduce-scatter; counted as activations at every
       measure of the op, forward, re-run and backward */
    uint64_t *act_mem;
    double *act_f_s, *act_b_s, *act_br_s;
    double *xscale;     /* per op: executed over model FLOPs beyond the kernel's own rule
                           (a windowed flash op's whole blocks); 0 is 1 */
    /* per op: in a gather group's span (bind.c, gather_group) */
    unsigned char *grouped;
    /* per op in a span: the group's copies beyond those of the params it
       reads itself, held only for the span's other ops */
    uint64_t *group_ahead;
    /* the copies of all of the block's gather groups, together: what a
       layer's re-run leaves gathered for its backward (tpl_t's rec_group) */
    uint64_t group_mem;
    unsigned char *streams; /* per op: a windowed einsum's (remat_i_windowed_einsums): its
                               weights stream shard by shard, and the prefetch of the
                               next gathered weight waits for it as for a gather */
    void *slab;         /* the one allocation every array above lives in */
    /* The block's index (graph_index.h): what no config changes, among it
       each op's position, each tensor's buffer, flags and whether XLA can
       compute it inside the ops that read it instead of materializing it
       (fusable_flag: none in the head), and each op's backward kind. */
    remat_i_block_view_t ix;
} bound_t;

/* ---- layer.c: one layer's plan played op by op -------------------------- */

/* A layer's profile: its forward and backward peaks relative to the live
   bytes it starts from, and what it leaves live (the deltas). */
typedef struct tpl {
    size_t kind;          /* the layer kind whose block it plays */
    const char *fwd_name, *bwd_name; /* its peaks' ops (borrowed from the graph; NULL for
                                        the fetch): the step reads them once per layer */
    int64_t fwd_peak;
    size_t fwd_op;
    int64_t fwd_cats[REMAT_CAT_COUNT];
    int64_t fwd_delta;
    int64_t fwd_dcats[REMAT_CAT_COUNT];
    int64_t bwd_peak;
    /* the regathered peaks (meter_t's np_peak) and their categories */
    int64_t fwd_np, bwd_np;
    int64_t fwd_np_cats[REMAT_CAT_COUNT], bwd_np_cats[REMAT_CAT_COUNT];
    remat_step_t bwd_step;
    size_t bwd_op;
    int64_t bwd_cats[REMAT_CAT_COUNT];
    int64_t bwd_delta;
    int64_t bwd_dcats[REMAT_CAT_COUNT];
    uint64_t saved, offloaded, recompute_flops, fwd_flops, bwd_flops;
    double fwd_s, bwd_s, rec_s;
    /* its activation collectives' waits (act_comm.c), forward and
       backward, the re-run's among the backward's */
    double act_f_s, act_b_s;
    /* the re-run's bytes its backward starts from (RECOMPUTE once the
       plan's re-run ops ran): what the layer holds while the layers above
       it in its remat unit run their backward */
    int64_t rec_held;
    /* every byte the re-run makes (its ops' outputs the plan needs, none
       freed): what a re-run hoisted ahead of the loss holds for its layer
       (step.c, unrolled_bound) */
    int64_t rec_made;
    /* the gather groups' copies its re-run makes (bound_t's group_mem, 0
       when the plan re-runs no grouped op): XLA keeps them from the re-run
       to the layer's own backward, which reads them again, so a layer
       below the top of its remat unit holds them too (step.c, unit_enter) */
    int64_t rec_group;
    /* the layer input's bytes kept in HBM to the backward (0: offloaded or
       not saved), and those of every kept residual shaped like it (the
       input among them): their slices of the scan's stacks (step.c) */
    int64_t input_kept, relaid;
    /* the kept residuals XLA lays out again on one slice when one is
       offloaded (layer.c, relaid_on_one_slice), and the layer input's
       bytes among them (step.c, relays_one_slice) */
    int64_t relaid_one, relaid_one_input;
} tpl_t;

/* A buffer's class: freed after its last forward reader, kept in HBM, or
   copied to host at the end of the layer's forward. */
enum { B_TRANS = 0, B_KEEP, B_OFF };

typedef struct scratch {
    unsigned char *cls;   /* per buffer: B_TRANS / B_KEEP / B_OFF */
    size_t *free_fwd;     /* per buffer: forward position after which it is freed */
    size_t *bwd_use;      /* per buffer: smallest backward position reading it */
    size_t *rec_use;      /* per buffer: largest recompute position reading it */
    uint64_t *cur;        /* per buffer: bytes while live */
    unsigned char *live;  /* per buffer */
    unsigned char *cat;   /* per buffer: remat_cat_t while live */
    unsigned char *glive; /* per tensor: gradient live */
    unsigned char *virt;  /* per tensor: fused into its readers under this plan (no buffer,
                             nor for its gradient) */
    size_t *held;         /* a layer's buffers of class keep or offload, ascending */
    /* The buffers by the position that frees them: lists through *_next,
       REMAT_NONE-terminated, buffers ascending, from the free_fwd, rec_use
       and bwd_use above (a layer's from its kind_prep, patched per plan;
       the head's backward one by remat_i_backward_list). They spare a scan
       of every buffer at every op. */
    size_t *fwd_head, *rec_head, *bwd_head; /* per position */
    size_t *fwd_next, *rec_next, *bwd_next; /* per buffer */
    /* Per analyzer, not per run (remat_i_layer_prepare, in one allocation
       that starts at prep): what each layer kind's profile reads that no
       plan changes. */
    struct kind_prep *prep;  /* per layer kind */
    size_t *row_of;          /* per name id (graph_index.h), per run: its row in the
                                result, or REMAT_NONE */
} scratch_t;

/* What a layer kind's profile reads that no plan changes and the graph's
   index (the bound block's ix) does not hold: what the bound block adds
   (layer.c). */
typedef struct kind_prep {
    int64_t *xf, *xb; /* per op: the bytes live only while it runs (its collective
                         buffers), forward or re-run and backward */
    /* per op j: gin[gin_at[j] .. gin_at[j + 1]) are its inputs that have a
       gradient, in order */
    size_t *gin_at, *gin;
    uint64_t fwd_flops, bwd_flops; /* summed over the ops in op order, as a profile sums */
    double fwd_s, bwd_s;
    double act_f_s, act_b_s; /* the activation collectives, no op re-run */
} kind_prep_t;

/* A layer's measures relative to its start, kept for the trace: its
   profile's events, which every layer of the profile repeats on top of the
   live bytes it starts from. */
typedef struct rel_event {
    int64_t live;
    int64_t cats[REMAT_CAT_COUNT];
    remat_step_t step;
    size_t op; /* REMAT_NONE for the fetch */
} rel_event_t;

struct remat_i_rel_events {
    rel_event_t *ev;
    size_t n, cap;
};
typedef struct remat_i_rel_events rel_events_t;

typedef struct meter {
    int64_t live;
    int64_t cats[REMAT_CAT_COUNT];
    int64_t peak;
    int64_t peak_cats[REMAT_CAT_COUNT];
    bool any;
    remat_step_t step;
    size_t op;
    rel_events_t *rec; /* a traced run: every measure is appended here; else NULL */
    /* The regathered figures: the highest measure less the weights gathered
       ahead for the next op at it (fsdp_prefetch's), which XLA's
       rematerialization pass gathers again where they are read, and that
       moment's categories (the layer room's; the step keeps the value
       alone). np_peak <= peak: the same measures, less bytes. */
    int64_t np_peak;
    int64_t np_cats[REMAT_CAT_COUNT];
    /* Of cats[GATHERED], the gather groups' copies the lower layers of a
       remat unit keep from their re-run to their own backward (step.c,
       unit_enter): gathered ahead too, so the regathered measure leaves
       them out. */
    int64_t held_gathered;
    /* the bytes the re-run's ops made, whatever they freed since (tpl_t's
       rec_made) */
    int64_t made;
} meter_t;

/* What a layer's FSDP collectives move (the time model): its weights
   gathered for use, and their whole gradients reduce-scattered. The
   buffers themselves live per op (bound_t's op_gather_mem, op_wgrad). */
typedef struct collectives {
    uint64_t sharded;     /* per layer: bytes gathered over the gathered axes (ICI) */
    uint64_t grad_buffer; /* per layer: gradient bytes reduce-scattered */
    uint64_t all_to_all;  /* per layer: bytes its all-to-alls (gathers over the expert
                             axis) move each way, forward and again backward */
} collectives_t;

/* ---- static.c: params by the part of the step that uses them ------------ */

/* Static bytes of the params one device holds, by which part of the step
   uses them: the layers (times the stage's layer count), the head's pre
   ops (stage 0) and post ops (last stage). */
typedef struct static_part {
    uint64_t count, bytes, adafactor;
    uint64_t frozen; /* of bytes, the frozen params': no gradient buffer */
} static_part_t;

/* One stage's static memory per device. */
typedef struct stage_static {
    uint64_t count;       /* params held */
    uint64_t params, optimizer, grads, accum;
    /* Of grads, the head's params' gradients, made after the layers'
       backward (step.c): the embedding's by its backward, the loss's by the
       logits' deferred weight gradient (0 under the chunked loss, which
       makes them at the loss). */
    uint64_t grads_embed, grads_logits;
    uint64_t host;        /* params/optimizer moved to host RAM */
    uint64_t scan_weights; /* the scan's layer-first copy of the stage's layer params
                              (live through the layers' forward and backward: step.c) */
    uint64_t bytes;       /* in HBM: the sum of cats */
    int64_t cats[REMAT_CAT_COUNT];
} stage_static_t;

/* ---- the analyzer: what binding leaves for every run -------------------- */

/* Layers first..last, all of profile `profile`; names_input: their policy
   saves decoder_layer_input by name (device or offload, or a default that
   saves everything), so a block keeps its inner layers' inputs too;
   input_on_device: it keeps them in HBM (not offloaded). */
typedef struct layer_run {
    size_t first, last, profile;
    bool names_input, input_on_device;
} layer_run_t;

struct remat_analyzer {
    const remat_graph_t *g;
    const remat_config_t *cfg;
    const remat_hw_t *hw;
    uint64_t dim_size[SIM_MAX_DIMS]; /* bound per-device size of each graph dim */
    /* The head's: MaxText runs the embedding and the loss outside the
       pipeline, on every device, over the whole step's batch sharded over
       the stage axis too: the batch dims are microbatches / nstages times a
       layer's (the same without a pipeline). */
    uint64_t head_dim_size[SIM_MAX_DIMS];
    uint64_t microbatches;
    size_t nlayers, nstages;
    /* MaxText's circular pipeline (layers/pipeline.py): each of its
       microbatches x repeats + bubble iterations runs
       num_layers_per_pipeline_stage layers on one micro-batch on every
       stage; a stage's layers repeat `repeats` = L / (stages x that) times.
       bubble = delay (stages - 1), delay 2 with delayed activation
       forwarding (a stage's output reaches the next an iteration later),
       else 1. No pipeline: repeats 1, bubble 0. */
    uint64_t repeats, bubble, delay;
    /* Layers per remat unit (remat_config_remat_unit): a scanned block of
       them runs under one jax.checkpoint, so its backward re-runs them all
       before the first of their backward ops, and each layer's re-run
       residuals wait for that layer's backward (step.c, unit_backward). */
    size_t unit;
    /* The layers whose re-runs are held together from the first backward
       op of the topmost of them: the unit, or, for the unrolled bound
       (step.c, unrolled_bound), every layer of a stage. */
    size_t span;
    bool hold; /* the span's re-runs held together (false: XLA's rematerialization) */
    /* The unrolled bound's re-runs are made before the head's loss
       backward, the stage's first backward op, not at its top layer's
       (step.c, unrolled_bound); false for every other figure. */
    bool hoist;
    /* The kind of every layer (remat_kind_t's rule): kb[kind_of[l]],
       below, is layer l's block. */
    static_part_t kpart[REMAT_MAX_KINDS]; /* one layer's params, per kind */
    collectives_t col[REMAT_MAX_KINDS];   /* one layer's collectives, per kind */
    size_t klayers[REMAT_MAX_KINDS];      /* layers of each kind */
    unsigned char *kind_of;  /* per layer (kinds are fewer than REMAT_MAX_KINDS) */
    static_part_t pre, post;
    uint64_t param_count;    /* the whole model */
    uint64_t active_param_count; /* what one token runs through (remat_result_t's) */
    double reserve_fraction; /* of the transient bytes (config, else the hardware's) */
    /* num_vocab_tiling > 1: the loss's params gathered whole in their dtype,
       and the accumulator of their gradients (zeros_like of them). */
    uint64_t tiled_gather, tiled_acc;
    /* The one allocation (analyzer_arena) that holds every bound block's
       slab, the scratch, the kinds' preparation, kind_of and the runs. */
    void *arena;
    void *bind_mem;          /* binding's share: the bound shapes and names */
    /* Per run; kept to spare the allocations. */
    scratch_t s;             /* sized for the largest block */
    /* The runs of identical layers (one profile), ascending, covering
       every layer once; adjacent runs differ in profile. Set per run by
       remat_i_plan_profiles: the rooms walk runs, not layers. */
    struct layer_run *runs;
    size_t nruns;
    tpl_t *tpls;             /* per profile */
    size_t tpls_cap;
    remat_trace_t *trace;    /* the run's trace (remat_run_opts_t), or NULL */
    /* Per head position: the gathered weights its backward prefetches
       (step.c, remat_i_step_prepare), in the arena (head.nops). */
    uint64_t *head_pf;
    /* The head's forward before the layers (step.c, stage_begin), played
       once per starting meter and copied after: no plan changes it. */
    struct pre_memo {
        bool valid;
        int64_t key[REMAT_CAT_COUNT]; /* the meter's categories it started from */
        meter_t m;                    /* the meter after it */
        remat_moment_t at;            /* the step's highest moment, if in it */
        /* per head buffer, after it (in the arena, head.ntensors each) */
        uint64_t *cur;
        unsigned char *live, *cat;
    } pre_memo;
    /* Last, and not zeroed with the rest (analyzer_zero): binding writes
       each block it binds whole (bound_alloc) and reads no other, and
       remat_mesh_build writes what it reads; they are most of the
       analyzer's bytes. The layer kinds (graph->kinds) and the head,
       bound: */
    bound_t kb[REMAT_MAX_KINDS];
    bound_t hb;
    remat_mesh_t mesh;
    /* Each kind's planning scratch, in the arena (analyzer_arena), and
       written before read. */
    remat_plan_t kplan[REMAT_MAX_KINDS];
};

/* ---- helpers every room uses (inline: some run once per op or layer) --- */

/* Whether the loss's weight gradients wait for the layers' backward (XLA's
   deferred windowed einsum: step.c, head_defers), as they do unless the
   chunked loss (num_vocab_tiling > 1) makes them in its own loop. With
   data parallelism across slices (no windowed einsum) XLA's own schedule
   holds the logits all the same (llama3.1-8b on two v6e-8 slices at batch
   9, under the rematerialization pass's limit: remat's step is 0.986 of
   XLA's figure); over that limit the pass gets them out (at batch 10 to
   13 remat's step is 1.007 of XLA's step before the pass and 1.15 to 1.20
   of its figure after), which is not modelled (docs/validation.md).
   Under gradient accumulation XLA sometimes makes them at the loss
   instead (no logits-sized buffer in the layers' backward: llama2-7b on
   v5e-16 and llama3.1-70b on v5p-16 at batch 12 and 13) and sometimes holds the
   logits through the backward as without it (llama3.1-8b under minimal on
   v6e-8, llama3.1-70b on v5p-16 at batch 20, which XLA refuses at 1.116 of
   its limit); nothing read yet tells the two apart, so remat counts the
   held buffer, the safe side (docs/validation.md). The stage's static
   gradients (static.c) and the step (step.c) both read it. */
/* Whether logical axis @p name is the experts' dim of the routed expert
   weights, which stays sharded when they are gathered: MaxText's `exp`,
   and `expert_only`, the batch-split schedule's (moe.py
   get_batchsplit_init_kernel_axes). bind.c's rules and static.c's routed
   params read it. */
static inline bool remat_i_expert_axis(const char *name) {
    return strcmp(name, "exp") == 0 || strcmp(name, "expert_only") == 0;
}

static inline bool remat_i_loss_grads_deferred(const remat_analyzer_t *an) {
    return an->cfg->num_vocab_tiling <= 1;
}

/* XLA:TPU's SPMD partitioner runs a matmul whose weight is sharded like
   its activation's batch as a windowed einsum (a ring of collective
   permutes, shard by shard, in both directions) instead of an all-gather
   and a reduce-scatter, so neither the gathered weight nor its whole
   gradient is ever a buffer. It does so when the devices' one sharded mesh
   axis is fsdp over at most 32 of them (its iteration limit); any other
   sharded axis (data across slices, tensor, stage, expert, context) makes
   the weight replicated along it and XLA gathers it whole. Read from the
   compiler: sharded matmuls and their gradients compiled for v4, v5e and
   v6e (4 MiB to 1.1 GiB weights, 32 to 768 rows a shard: windowed on 8,
   16 and 32 fsdp devices, gathered on 64, on 2 x 8 and on 8 x tensor 2),
   and MaxText's steps (bf16[49152, 1, 768] shards in gpt3-175b's loop on
   v4-32; collective permutes of every weight in the 4-layer dumps on one
   slice, none on two). XLA:GPU's threshold leaves them off. */
enum { WINDOWED_EINSUM_MAX_SHARDS = 32 };
static inline bool remat_i_windowed_einsums(const remat_analyzer_t *an) {
    if (an->hw->xla_gpu) {
        return false;
    }
    for (unsigned a = 0; a < REMAT_AXIS_COUNT; a++) {
        if (a != REMAT_AXIS_FSDP && an->mesh.shards[a] != 1) {
            return false;
        }
    }
    return an->mesh.shards[REMAT_AXIS_FSDP] > 1 &&
           an->mesh.shards[REMAT_AXIS_FSDP] <= WINDOWED_EINSUM_MAX_SHARDS;
}

/* The run that holds layer @p l (< nlayers): a binary search of the runs,
   which are few (one per policy range and layer kind at most). */
static inline const layer_run_t *run_of(const remat_analyzer_t *an, size_t l) {
    size_t lo = 0, hi = an->nruns;
    while (hi - lo > 1) {
        const size_t mid = lo + (hi - lo) / 2;
        if (an->runs[mid].first <= l) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    assert(an->runs[lo].first <= l && l <= an->runs[lo].last);
    return &an->runs[lo];
}

/* The last layer of the run of identical layers (one profile, so equal
   rows) that holds layer @p l, within [l, last]. */
static inline size_t run_end(const remat_analyzer_t *an, size_t l, size_t last) {
    const size_t e = run_of(an, l)->last;
    return e < last ? e : last;
}

/* *acc += a x times, an overflow error past BYTES_MAX. */
static inline remat_status_t sum_checked(uint64_t *acc, uint64_t a, uint64_t times,
                                                 const char *what, remat_error_t *err) {
    remat_acc_t sum = {*acc, false};
    remat_acc_add_product(&sum, a, times);
    if (sum.overflow) {
        return remat_error_set(err, REMAT_E_OVERFLOW, NULL, NULL,
                               "the step's %s do not fit in 62 bits with this config", what);
    }
    *acc = sum.value;
    return REMAT_OK;
}

/* *out = what a stage holds of @p stage_bytes (one micro-batch through its
   layers) over the whole pipeline: the scan over iterations keeps each
   iteration's residuals to the backward, M micro-batches through every
   repeat of the stage's layers and the bubble's iterations (a repeat's
   share each, layers run on nothing that still save their inputs). No
   pipeline: @p stage_bytes. */
static inline remat_status_t pipeline_held(const remat_analyzer_t *an, uint64_t stage_bytes,
                                           uint64_t *out, const char *what,
                                           remat_error_t *err) {
    assert(an->repeats >= 1 && (an->nstages > 1 || (an->microbatches == 1 && !an->bubble)));
    *out = 0;
    remat_status_t st = sum_checked(out, stage_bytes, an->microbatches, what, err);
    return st ? st : sum_checked(out, stage_bytes / an->repeats, an->bubble, what, err);
}

/* Most configs quantize nothing (an empty string): one byte tells, and
   the rooms ask a few times an analysis. */
static inline bool is_fp8(const remat_config_t *cfg) {
    const char *q = cfg->quantization;
    return q[0] && (strcmp(q, "fp8") == 0 || strcmp(q, "nanoo_fp8") == 0);
}

/* A weight einsum: an einsum with a param operand. */
static inline bool weight_einsum(const remat_block_t *b, const remat_op_t *op) {
    if (op->kind != REMAT_OP_EINSUM) {
        return false;
    }
    for (size_t i = 0; i < op->nin; i++) {
        if (b->tensors[op->in[i]].param) {
            return true;
        }
    }
    return false;
}

/* A weight einsum that quantization=fp8 runs in fp8: a dense one. MaxText
   quantizes the grouped matmuls (`ragged`) only under fp8_full (moe.py at
   e591f30), which remat does not model: they stay in the compute dtype. */
static inline bool fp8_matmul(const remat_config_t *cfg, const remat_block_t *b,
                              const remat_op_t *op) {
    return is_fp8(cfg) && weight_einsum(b, op) && !op->ragged[0];
}

/* Whether param @p w is a grouped matmul's weight (an expert's). */
static inline bool grouped_weight(const remat_block_t *b, size_t w) {
    for (size_t j = 0; j < b->nops; j++) {
        const remat_op_t *op = &b->ops[j];
        for (size_t i = 0; op->ragged[0] && i < op->nin; i++) {
            if (op->in[i] == w) {
                return true;
            }
        }
    }
    return false;
}

/* The bytes per element of param @p w's gathered copy (and of what its
   all-gather moves): the compute dtype, one byte under fp8 but for a
   grouped matmul's weights (fp8_matmul). */
static inline uint64_t gathered_bytes(const remat_config_t *cfg, const remat_block_t *b,
                                      size_t w) {
    return is_fp8(cfg) && !grouped_weight(b, w) ? 1 : remat_dtype_bytes(cfg->dtype);
}

/* ---- the meter: shared by a layer's profile and the step ---------------- */

/* Whether categories @p cats sum to @p live bytes (debug checks). */
static inline bool cats_sum_to(const int64_t *cats, int64_t live) {
    int64_t sum = 0;
    for (int c = 0; c < REMAT_CAT_COUNT; c++) {
        sum += cats[c];
    }
    return sum == live;
}

static inline bool meter_consistent(const meter_t *m) {
    return cats_sum_to(m->cats, m->live);
}

static inline void alloc_buf(meter_t *m, scratch_t *s, size_t buf, uint64_t bytes,
                             remat_cat_t c) {
    assert(!s->live[buf] && "a buffer's bytes count once");
    s->live[buf] = 1;
    s->cat[buf] = (unsigned char)c;
    s->cur[buf] = bytes;
    m->live += (int64_t)bytes;
    m->cats[c] += (int64_t)bytes;
}

static inline void free_buf(meter_t *m, scratch_t *s, size_t buf) {
    if (!s->live[buf]) {
        return;
    }
    s->live[buf] = 0;
    m->live -= (int64_t)s->cur[buf];
    m->cats[s->cat[buf]] -= (int64_t)s->cur[buf];
}

static inline void add_const(meter_t *m, remat_cat_t c, int64_t bytes) {
    m->live += bytes;
    m->cats[c] += bytes;
}

/* The buffer of the @p k-th operand of @p op, inputs then outputs. */
static inline size_t operand_buf(const remat_block_t *b, const remat_op_t *op, size_t k) {
    return b->tensors[k < op->nin ? op->in[k] : op->out[k - op->nin]].storage;
}

/* ---- the rooms, in pipeline order --------------------------------------- */

/* bind.c: binds into the slabs (remat_i_bound_bytes each) and kind_of the
   analyzer's arena holds... */
remat_status_t remat_i_bind(remat_analyzer_t *an, remat_error_t *err);
size_t remat_i_bound_bytes(const remat_block_t *b);
/* ...and in its own share of the arena (bind_mem), the bytes of: */
size_t remat_i_bind_bytes(const remat_graph_t *g);

/* act_comm.c: block @p b's activation collectives into @p bd's act_ag and
   act_rs (zeroed), once its tensors and ops are bound (@p dimsize: the
   block's whole dim sizes); uses bd's mark as scratch. */
remat_status_t remat_i_act_collectives(const remat_graph_t *g, const remat_block_t *b,
                                       const uint64_t *dimsize, bound_t *bd,
                                       remat_error_t *err);

/* static.c */
remat_status_t remat_i_static_parts(remat_analyzer_t *an, remat_error_t *err);
remat_status_t remat_i_stage_static(const remat_analyzer_t *an, size_t stage,
                                    stage_static_t *out, remat_error_t *err);

/* layer.c */
/* The scratch and the kinds' preparation live in the analyzer's arena
   (analyze.c): their bytes, then each laid out in memory it gives. */
size_t remat_i_scratch_bytes(size_t ntensors, size_t nops);
void remat_i_scratch_init(scratch_t *s, size_t ntensors, size_t nops, void *mem);
size_t remat_i_prep_bytes(const remat_graph_t *g);
/* Fills the scratch's per-analyzer part (prep, the name rows' index) in
   the room at s.prep once the layer kinds are bound and timed. */
void remat_i_layer_prepare(remat_analyzer_t *an);
/* The head's use of the scratch (a layer's profile fills it from its
   kind_prep): its buffers' lifetimes, classes transient; then, once the
   caller has set bwd_use, the backward free list backward_end reads. */
void remat_i_buffer_lifetimes(const remat_block_t *b, const remat_i_block_view_t *v,
                              scratch_t *s);
void remat_i_backward_list(const remat_block_t *b, scratch_t *s);
/* @p inplace: the op's backward writes over a dying buffer of its size
   even where its kind's rule (the graph's index) does not say so. */
void remat_i_backward_begin(meter_t *m, scratch_t *s, const remat_block_t *b, const bound_t *bd,
                            const remat_op_t *op, size_t p, bool inplace);
void remat_i_backward_end(meter_t *m, scratch_t *s, const bound_t *bd, const remat_op_t *op,
                          size_t p);
remat_status_t remat_i_profile_layers(remat_analyzer_t *an, const remat_policy_t *policy,
                                      bool lite, remat_result_t *r, remat_error_t *err);

/* result.c: a result's tables, carved from blocks it owns (never freed
   one by one; remat_result_release frees the blocks). */
void remat_i_result_reuse(remat_result_t *r);   /* emptied, its blocks kept */
void *remat_i_result_alloc(remat_result_t *r, size_t bytes); /* 16-aligned, not zeroed */
/* Room for element @p n of an array of @p size-byte elements, @p array,
   that holds @p first (a power of two), then doubles at every power of two
   from there: the capacity follows from the count, so the public result
   needs no field for it. Returns the array, moved when it grew
   (remat_i_result_grow, which copies it). */
void *remat_i_result_grow(remat_result_t *r, void *array, size_t n, size_t size, size_t first);
static inline void *remat_i_result_room(remat_result_t *r, void *array, size_t n, size_t size,
                                        size_t first) {
    assert(first > 0 && (first & (first - 1)) == 0);
    const bool full = n == 0 || (n >= first && (n & (n - 1)) == 0);
    return full ? remat_i_result_grow(r, array, n, size, first) : array;
}
void remat_i_result_plan(remat_result_t *r, remat_plan_t *dst, const remat_plan_t *src);

/* step.c */
remat_status_t remat_i_plan_profiles(remat_analyzer_t *an, const remat_policy_t *policy,
                                     const remat_plan_t *given, remat_result_t *r,
                                     remat_error_t *err);
remat_status_t remat_i_run_stages(remat_analyzer_t *an, remat_result_t *r, remat_error_t *err);
/* Fills what every run's head reads that no plan changes (head_pf), once
   the head is bound. */
void remat_i_step_prepare(remat_analyzer_t *an);

/* time.c */
void remat_i_op_times(const remat_block_t *b, const remat_config_t *cfg, const remat_hw_t *hw,
                      size_t chunked_from, bound_t *bd);
void remat_i_layer_rows(const remat_analyzer_t *an, remat_result_t *r);
remat_status_t remat_i_step_time(const remat_analyzer_t *an, remat_result_t *r,
                                 remat_error_t *err);

/* trace.c */
void remat_i_rel_push(rel_events_t *l, const meter_t *m, remat_step_t step, size_t op);
void remat_i_trace_profiles(remat_trace_t *t, size_t nprofiles);
void remat_i_trace_push(remat_trace_t *t, const remat_trace_event_t *e);

/* verdict.c */
/* The run's budget per device and what is usable of it (less the safety
   margin), the one rule the verdict and the blocks' hold (step.c) read. */
void remat_i_budget(const remat_analyzer_t *an, uint64_t *budget, uint64_t *usable);
remat_status_t remat_i_verdict(const remat_analyzer_t *an, remat_result_t *r,
                               remat_error_t *err);

#endif
