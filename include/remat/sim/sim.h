/* SPDX-License-Identifier: MIT */
/*
 * remat/sim/sim.h: one training step of the bound model, simulated op by op:
 * forward over the head's embedding, every layer, the head's loss; backward
 * in reverse with host fetches and recomputation. The result is the peak HBM
 * per device with its breakdown and moment, recompute FLOPs, and offload
 * bytes and time. The memory model is DESIGN §3 and docs/memory-model.md.
 */
#ifndef REMAT_SIM_H
#define REMAT_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "remat/input/config.h"
#include "remat/base/error.h"
#include "remat/model/graph.h"
#include "remat/model/hw.h"
#include "remat/model/mesh.h"
#include "remat/model/policy.h"

/* What the live bytes at a moment are made of. */
typedef enum remat_cat {
    REMAT_CAT_PARAMS,      /* weights (weight_dtype) */
    REMAT_CAT_OPTIMIZER,   /* adamw moments (mu_dtype) */
    REMAT_CAT_GRADS,       /* weight gradients (grad_dtype), live all step */
    REMAT_CAT_GRAD_ACCUM,  /* fp32 accumulator when gradient_accumulation_steps > 1 */
    REMAT_CAT_SAVED,       /* residuals kept in HBM, layer inputs included */
    REMAT_CAT_ACTIVATIONS, /* forward working set of the op being run */
    REMAT_CAT_RECOMPUTE,   /* tensors rebuilt in backward */
    REMAT_CAT_FETCHED,     /* offloaded residuals copied back for backward */
    REMAT_CAT_ACT_GRADS,   /* activation gradients in flight */
    REMAT_CAT_HEAD,        /* embedding/logits/loss tensors of the head */
    REMAT_CAT_RESERVE,     /* hbm_reserve */
    REMAT_CAT_GATHERED,    /* FSDP all-gathered weights of the layer run (and the next) */
    REMAT_CAT_GRAD_BUFFER, /* full-size weight gradients before the reduce-scatter */
    REMAT_CAT_KV_GATHER,   /* context-parallel all-gathered K and V */
    REMAT_CAT_INFLIGHT,    /* pipeline: residuals of its other iterations, kept to the backward */
    REMAT_CAT_SCAN_WEIGHTS, /* the scanned layers' weights, copied layer-first in the compute
                               dtype for the scan (MaxText's NNX scan), live through both scans */
    REMAT_CAT_COUNT
} remat_cat_t;

const char *remat_cat_name(remat_cat_t c);

typedef enum remat_where {
    REMAT_AT_HEAD_PRE,  /* embedding, before the layers */
    REMAT_AT_LAYER,
    REMAT_AT_HEAD_POST, /* final norm, logits, loss */
} remat_where_t;

typedef enum remat_step {
    REMAT_STEP_FORWARD,
    REMAT_STEP_FETCH,     /* host-to-device copies before a layer's backward */
    REMAT_STEP_RECOMPUTE, /* re-running forward ops in backward */
    REMAT_STEP_BACKWARD
} remat_step_t;

typedef struct remat_moment {
    remat_step_t step;
    remat_where_t where;
    size_t layer;   /* when where == REMAT_AT_LAYER */
    size_t stage;   /* pipeline stage (0 without a pipeline) */
    size_t stages;  /* stage count of the run (1 without a pipeline) */
    const char *op; /* borrowed from the graph; NULL for a fetch */
} remat_moment_t;

typedef struct remat_layer_row {
    size_t index;
    size_t profile;              /* index into result->profiles */
    uint64_t saved_device_bytes; /* residuals kept in HBM, layer input included */
    uint64_t offloaded_bytes;    /* D2H in forward = H2D in backward */
    uint64_t recompute_flops;
    uint64_t forward_flops, backward_flops;
    /* time model (docs/time-model.md), one micro-batch */
    double forward_compute_seconds;  /* sum of forward op rooflines */
    double backward_compute_seconds; /* sum of backward op rooflines */
    double recompute_seconds;        /* re-run ops' forward rooflines */
    double allgather_seconds;        /* FSDP weight gather over ICI (each pass) */
    double reduce_scatter_seconds;   /* FSDP gradient reduce-scatter over ICI */
    double all_to_all_seconds;       /* MoE token all-to-alls over ICI (each pass; not hidden) */
    /* tensor- and sequence-parallel activation gathers and reduce-scatters
       over ICI, as much as the layer waits for them: forward, and backward
       with the re-run's (docs/time-model.md, "Activation collectives") */
    double act_collective_forward_seconds, act_collective_backward_seconds;
    double d2h_seconds, h2d_seconds; /* host link */
    double param_fetch_seconds;      /* host-resident params to HBM, each pass */
    double forward_seconds;  /* max(compute + waits, all-gather, D2H): they overlap */
    double backward_seconds; /* max(compute + recompute + waits, gather + scatter, H2D) */
} remat_layer_row_t;

typedef struct remat_tensor_row {
    size_t tensor;        /* index in its profile's kind's block */
    uint64_t shape[REMAT_MAX_RANK]; /* per-device dims */
    uint64_t bytes;       /* per device; 0 for a view (shares its base's buffer) */
    remat_place_t asked;  /* what the policy asked */
    remat_fate_t fate;    /* what happens (residual rule) */
    bool unused;          /* saveable placement that backward never reads */
    uint64_t recompute_flops; /* per layer, of re-running its producer */
} remat_tensor_row_t;

/* Layers that share one plan share one profile. */
typedef struct remat_profile {
    size_t kind;          /* the layer kind (graph->kinds) its layers run */
    size_t first, last, nlayers;
    remat_plan_t plan;
    remat_tensor_row_t *tensors; /* one row per tensor of its kind's block */
    uint64_t fwd_peak_rel, bwd_peak_rel;
} remat_profile_t;

typedef struct remat_name_row {
    char name[REMAT_NAME_LEN]; /* checkpoint name, or "(unnamed)" */
    uint64_t recompute_flops;  /* whole step */
    uint64_t saved_bytes;      /* whole step, kept in HBM */
    uint64_t offloaded_bytes;  /* whole step */
} remat_name_row_t;

/* One pipeline stage (the whole model when there is no pipeline). */
typedef struct remat_stage_row {
    /* in_flight: the micro-batches whose residuals the stage holds at once
       (all M of MaxText's circular pipeline; 1 without one); inflight_bytes:
       the residuals of every iteration but the simulated micro-batch's */
    size_t index, first_layer, last_layer, in_flight;
    uint64_t peak_bytes, static_bytes, inflight_bytes;
    /* the stage's highest moment less the weights gathered ahead at it
       (fsdp_prefetch: the next op's, gathered while this one runs; a
       gather group's copies beyond the op's own params; the experts'
       weights a remat unit's lower layers keep from their re-run to their
       own backward), which XLA's rematerialization pass gathers
       again where they are read: at most peak_bytes (remat_result_t's
       regathered_peak_bytes) */
    uint64_t regathered_bytes;
    /* static + in flight + this micro-batch's residuals kept in HBM + the
       weight gradients: all live when the stage turns from forward to
       backward, so the peak is at least this (asserted); the solver's
       feasibility bound rests on it. With relaid_bytes, the gradients
       counted are the lesser of all of them and the copy with the peeled
       layers' (docs/memory-model.md, "The saved inputs laid out again") */
    uint64_t floor_bytes;
    /* XLA's second, sequence-minor copy of the scan's saved layer inputs,
       live with them through the last layer's backward (0: none made) */
    uint64_t relaid_bytes;
    int64_t breakdown[REMAT_CAT_COUNT];
    remat_moment_t peak_at;
} remat_stage_row_t;

typedef struct remat_result {
    /* verdict */
    uint64_t peak_bytes, budget_bytes, usable_bytes; /* usable = budget x (1 - margin) */
    bool fits;        /* peak <= budget */
    bool fits_margin; /* peak <= usable */
    int64_t breakdown[REMAT_CAT_COUNT];
    remat_moment_t peak_at;
    /* static memory, per device of the worst stage */
    uint64_t param_count;        /* the whole model */
    uint64_t active_param_count; /* of those, what one token runs through: a routed expert
                                    weight (a dim on the `exp` axis) counts
                                    num_experts_per_tok / num_experts of itself */
    uint64_t param_count_device; /* held by one device of the worst stage */
    uint64_t param_bytes, optimizer_bytes, grad_bytes, accum_bytes, reserve_bytes;
    uint64_t host_static_bytes;  /* params/optimizer moved to host, per device */
    /* mesh and pipeline */
    remat_mesh_shape_t mesh;
    size_t nstages, worst_stage;
    remat_stage_row_t *stages;
    uint64_t microbatches;
    /* MaxText's circular pipeline: each stage's layers repeat `repeats`
       times (L / (stages x num_layers_per_pipeline_stage)); the scan runs
       microbatches x repeats + bubble iterations (bubble: stages - 1, twice
       that with pipeline_delay_activation_forwarding). No pipeline: 1 and 1. */
    uint64_t pipeline_repeats, pipeline_iterations;
    /* compute */
    uint64_t forward_flops, backward_flops, recompute_flops, model_flops;
    double recompute_share; /* recompute / model */
    double recompute_seconds, added_seconds, compute_seconds;
    double step_seconds;       /* estimated step time (time model) */
    double mfu, hfu;           /* model / hardware FLOPs utilization */
    double exposed_collective_seconds;
    double bubble_fraction;    /* pipeline bubble (stages - 1) / (micro-batches + stages - 1) */
    /* offload */
    uint64_t d2h_bytes, h2d_bytes, host_bytes_per_host, host_ram_bytes;
    double d2h_seconds, h2d_seconds, exposed_seconds;
    bool offload_hidden, host_fits;
    double host_link_bw;
    bool host_link_assumed;
    /* tables */
    size_t nlayers;
    remat_layer_row_t *layers;
    size_t nprofiles;
    remat_profile_t *profiles;
    size_t nnames;
    remat_name_row_t *names;
    /* the inputs, for reports (borrowed) */
    const remat_graph_t *graph;
    const remat_policy_t *policy;
    const remat_config_t *config;
    const remat_hw_t *hw;
    bool none_as_full; /* remat_policy none behaves as full (remat_policy_t) */
    /* Layers per remat unit (remat_config_remat_unit): a scanned block's
       backward re-runs its layers whole, each layer's re-run held until its
       backward. When that step's peak is over the budget and the layer
       by layer step is under the budget less the safety margin, XLA's own
       rematerialization re-runs layer by layer instead, which the figures
       then follow; unit_held_peak_bytes is the peak held whole (0 when the
       block's peak is the one reported, or the unit is one layer).
       unit_apart_partway: the figures are layer by layer only because XLA
       is taken to re-run the held blocks apart partway (their inner
       inputs not all kept in HBM): its compiles have done so for some such
       runs and refused others, so the step passes no check (RISK). */
    uint64_t remat_unit;
    /* unrolled_held_peak_bytes: with unrolled layers on XLA:TPU
       (scan_layers false), the peak when every layer's re-run is made
       before the backward's first op and held until its own layer's
       backward, as XLA's scheduler may place them (0: scanned layers, one
       layer a stage, or XLA:GPU). The figures are the layer-by-layer
       step's; the step fits with the margin only if this bound does too
       (docs/memory-model.md, "Unrolled layers"). */
    uint64_t unrolled_held_peak_bytes;
    uint64_t unit_held_peak_bytes;
    bool unit_apart_partway;
    /* xla_expected_peak_bytes: the peak XLA reports for this step (its
       memory analysis, or the "Used" of its OOM message), which is the step
       after XLA:TPU's rematerialization pass (remat_xla_expected_peak);
       peak_bytes on XLA:GPU. The verdict stays on peak_bytes, the step as
       scheduled before the pass. */
    uint64_t xla_expected_peak_bytes;
    /* regathered_peak_bytes: the step as scheduled with every weight
       gathered where its op reads it, not ahead of it: each moment less the
       weights fsdp_prefetch gathers during it for the next op, a gather
       group's copies beyond the op's own params and the gathered groups
       a remat unit's lower layers hold for their backward (the held
       step's where unit_held_peak_bytes is set, else the stages' highest
       regathered_bytes); with fsdp_prefetch off and no gather group, the
       scheduled step itself.
       xla_expected_peak_bytes takes it for a TPU step over XLA's usable
       HBM. At most the scheduled step. */
    uint64_t regathered_peak_bytes;
    /* Whether XLA:TPU runs the layers' weight matmuls as windowed einsums
       here (one sharded mesh axis, fsdp, over at most 32 devices): each
       weight streams shard by shard, and no gathered copy or whole weight
       gradient of a layer is counted (docs/memory-model.md). */
    bool weights_streamed;
    uint64_t dim_size[REMAT_MAX_DIMS]; /* bound per-device size of each graph dim */
    /* private: the blocks the tables above are carved from, which the
       result owns. remat_result_release frees them; an analysis into a
       result that holds some empties it and reuses them, so analyzing
       many configurations into one result allocates little. */
    struct remat_result_mem *mem;
} remat_result_t;

/** The block the layers of profile @p p run (their kind's). */
static inline const remat_block_t *remat_profile_block(const remat_result_t *r, size_t p) {
    return &r->graph->kinds[r->profiles[p].kind].block;
}

/** An empty result (all zero), which owns nothing yet. */
void remat_result_init(remat_result_t *r);
/** Frees what @p r owns (its tables) and empties it. */
void remat_result_release(remat_result_t *r);

/**
 * Whether the step passes: it fits the budget with the safety margin and
 * the host's RAM holds what it offloads (what `check` accepts, a compare
 * row's and a report's `pass`, the solver's feasibility).
 */
bool remat_result_passes(const remat_result_t *r);

/** The verdict, worst first: what `check` prints and a compare row's fits. */
typedef enum remat_verdict {
    REMAT_VERDICT_OOM,      /* the peak exceeds the budget */
    REMAT_VERDICT_RISK,     /* fits, but inside the safety margin, or only as XLA
                               takes held blocks apart (unit_apart_partway) */
    REMAT_VERDICT_HOST_OOM, /* fits HBM; offloaded bytes exceed the host's RAM */
    REMAT_VERDICT_OK        /* passes (remat_result_passes) */
} remat_verdict_t;

/** The verdict of an analyzed step; REMAT_VERDICT_OK exactly when it passes. */
remat_verdict_t remat_result_verdict(const remat_result_t *r);

/**
 * The peak XLA:TPU reports for a step, after its rematerialization pass,
 * from the step as scheduled (@p step: its held peak where MaxText's
 * blocks re-run whole, @p held; else @p held is 0), the layer by layer
 * step (@p step when @p held is set), the step as scheduled with every
 * weight gathered ahead of its op (fsdp_prefetch) gathered again where
 * that op reads it (@p regathered; 0 when not known) and XLA's usable HBM
 * @p limit. The pass runs when the step is over its limit, 95% of that HBM
 * (less the arguments not aliased to outputs, which a training step
 * donates, and the program's overlays): it makes buffers again where they
 * are next read until the step is under that limit or nothing more is
 * remade (libtpu's info log prints both). So: a step under the pass's
 * limit is reported as it is; a step within the usable HBM, or whose
 * blocks taken apart are under the pass's limit, is brought to it
 * (reported at the pass's limit, where its remaking stops); a step over
 * the usable HBM is reported as the regathered step where that is lower
 * (at least the pass's limit): the gathers made again are the cheapest
 * remaking there is, the weights' shards being live the whole step
 * (`all-gather.*.remat` in the compiled corpus); else as it is. Both are
 * upper bounds: the pass remade 0 to 67% of the limit in the compiled
 * corpus (docs/validation.md).
 */
uint64_t remat_xla_expected_peak(uint64_t step, uint64_t held, uint64_t regathered,
                                 uint64_t limit);

/** The step as XLA schedules it, before its rematerialization pass: the
    held peak where MaxText's blocks re-run whole (unit_held_peak_bytes),
    else the peak. */
static inline uint64_t remat_result_scheduled_peak(const remat_result_t *r) {
    return r->unit_held_peak_bytes ? r->unit_held_peak_bytes : r->peak_bytes;
}

/** XLA:TPU's rematerialization pass's limit, in percent of the usable HBM
    (libtpu's info log: "rematerialization limit ... = 95% hbm"). */
#define REMAT_XLA_PASS_PERCENT 95

/** The pass's limit for XLA's usable HBM @p limit: limit / 100 x 95 (the
    arguments a training step does not donate and the overlays, which XLA
    also subtracts, are left out). */
uint64_t remat_xla_pass_limit(uint64_t limit);

/** Why a step that fits is RISK, in words for a verdict line (static text). */
const char *remat_result_risk_reason(const remat_result_t *r);

/**
 * Analyzes one step. The graph, config, policy and hardware are borrowed and
 * must outlive @p out. @p out (initialized) is emptied first: what it held
 * is gone, though its memory is reused for the new tables; the caller
 * releases it. On error it is left released. Errors: REMAT_E_CONFIG (dims that do not bind),
 * REMAT_E_OVERFLOW (a byte or FLOP count over 64 bits), REMAT_E_POLICY.
 * Complexity: O(layers + tensors + ops) per distinct layer plan.
 */
remat_status_t remat_analyze(const remat_graph_t *g, const remat_config_t *cfg,
                             const remat_policy_t *policy, const remat_hw_t *hw,
                             remat_result_t *out, remat_error_t *err);

#endif
