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

#include "remat/sim.h"

typedef struct remat_analyzer remat_analyzer_t;

typedef struct remat_run_opts {
    /* The already computed plan of a policy without layer ranges, or NULL.
       Ignored for a policy with ranges (each layer is planned). */
    const remat_plan_t *plan;
    /* Skip the per-tensor and per-name tables: the result's profiles then
       have no tensor rows and it has no name rows. */
    bool lite;
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
 * Analyzes @p policy (borrowed like the graph) into @p r, which is released
 * first and left released on error. @p opts may be NULL (a full analysis).
 * A run reuses the analyzer's scratch: one analyzer serves one thread.
 */
remat_status_t remat_analyzer_run(remat_analyzer_t *an, const remat_policy_t *policy,
                                  const remat_run_opts_t *opts, remat_result_t *r,
                                  remat_error_t *err);

void remat_analyzer_free(remat_analyzer_t *an);

#endif
