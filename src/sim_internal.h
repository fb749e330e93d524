/* SPDX-License-Identifier: MIT */
/* sim_internal.h: the simulator's entry for the solver (not public). */
#ifndef REMAT_SIM_INTERNAL_H
#define REMAT_SIM_INTERNAL_H

#include "remat/sim.h"

/* Bound sizes, FLOPs and op times of one (graph, config, hardware), kept
   between analyses of different policies. Owned by the caller. */
typedef struct remat_i_bind_cache remat_i_bind_cache_t;
remat_i_bind_cache_t *remat_i_bind_cache_new(void);
void remat_i_bind_cache_free(remat_i_bind_cache_t *c);

/* remat_analyze with shortcuts for callers that analyze many policies:
   @p plan, when not NULL, is the already computed plan of a policy without
   layer ranges; @p lite skips the per-tensor and per-name tables (the
   result's profiles then have no tensor rows and it has no name rows);
   @p cache, when not NULL, reuses the binding while graph, config (by
   content) and hardware stay the same. */
remat_status_t remat_i_analyze(const remat_graph_t *g, const remat_config_t *cfg,
                               const remat_policy_t *policy, const remat_hw_t *hw,
                               const remat_plan_t *plan, bool lite, remat_i_bind_cache_t *cache,
                               remat_result_t *r, remat_error_t *err);

#endif
