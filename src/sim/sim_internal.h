/* SPDX-License-Identifier: MIT */
/*
 * sim_internal.h: the analyzer, for callers inside remat that analyze many
 * policies of one run (the solver). Not public: the options name the
 * solver's shortcuts, which a library user has no use for.
 *
 * An analyzer binds a (graph, config, hardware) once: mesh, per-device
 * sizes, FLOPs, op times and static parameter bytes. Each run then plans,
 * profiles and composes the step for one policy. remat_analyze() is
 * remat_analyzer_new + remat_analyzer_run + remat_analyzer_free.
 */
#ifndef REMAT_SIM_INTERNAL_H
#define REMAT_SIM_INTERNAL_H

#include <stdbool.h>

#include "remat/sim/sim.h"

typedef struct remat_analyzer remat_analyzer_t;

/* One moment the simulator measured: the live bytes right after an op ran
   (or a layer's host fetch), by category, the reserve included, exactly as
   the peak is measured. */
typedef struct remat_trace_event {
    size_t stage;
    size_t layer;   /* REMAT_NONE for a head op */
    size_t profile; /* the layer's profile; REMAT_NONE for a head op */
    remat_step_t step;
    remat_where_t where;
    const char *op; /* borrowed from the graph; NULL for a fetch */
    double seconds; /* the op's roofline time in this step (0 for a fetch) */
    int64_t live;   /* the sum of cats */
    int64_t cats[REMAT_CAT_COUNT];
} remat_trace_event_t;

/* What a traced run fills, in the order the simulator measured: every
   stage's events, stage by stage. The per-profile lists are the layer
   room's own measures (relative to a layer's start), which the step turns
   into events; they are the simulator's and nobody else's to read. */
typedef struct remat_trace {
    remat_trace_event_t *events;
    size_t nevents, cap;
    struct remat_i_rel_events *fwd, *bwd; /* per profile */
    size_t nprof;
} remat_trace_t;

void remat_i_trace_init(remat_trace_t *t);
void remat_i_trace_release(remat_trace_t *t);

typedef struct remat_run_opts {
    /* The already computed plan of a policy without layer ranges, or NULL.
       Ignored for a policy with ranges (each layer is planned). */
    const remat_plan_t *plan;
    /* Skip the per-tensor and per-name tables: the result's profiles then
       have no tensor rows and it has no name rows. */
    bool lite;
    /* The caller has checked the policy against this analyzer's graph
       (remat_policy_check): a run of many policies built from the graph's
       own names (the solver) checks once, not once per run. */
    bool policy_checked;
    /* When set, every measured moment is appended to it (the timeline).
       A run without one does no tracing work beyond a branch per stage. */
    remat_trace_t *trace;
} remat_run_opts_t;

/**
 * Binds @p g to @p cfg and @p hw into a new analyzer (*out; NULL on error).
 * All three are borrowed and must outlive the analyzer and every result it
 * fills. Errors as remat_analyze's, less the policy's.
 */
remat_status_t remat_analyzer_new(const remat_graph_t *g, const remat_config_t *cfg,
                                  const remat_hw_t *hw, remat_analyzer_t **out,
                                  remat_error_t *err);

/**
 * Analyzes @p policy (borrowed like the graph) into @p r, which is emptied
 * first (its memory kept for the new tables) and left released on error. @p opts may be NULL (a full analysis).
 * A run reuses the analyzer's scratch: one analyzer serves one thread.
 */
remat_status_t remat_analyzer_run(remat_analyzer_t *an, const remat_policy_t *policy,
                                  const remat_run_opts_t *opts, remat_result_t *r,
                                  remat_error_t *err);

void remat_analyzer_free(remat_analyzer_t *an);

#endif
