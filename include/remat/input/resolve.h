/* SPDX-License-Identifier: MIT */
/*
 * remat/input/resolve.h: a config's names made into objects: its graph (a
 * built-in or a file), its policy (a preset, custom placements or a file)
 * and its hardware profile, each a new object the caller owns.
 */
#ifndef REMAT_INPUT_RESOLVE_H
#define REMAT_INPUT_RESOLVE_H

#include "remat/base/error.h"
#include "remat/input/config.h"
#include "remat/model/graph.h"
#include "remat/model/hw.h"
#include "remat/model/policy.h"

/**
 * Resolves the config's remat_policy: a preset, "custom" with the config's
 * per-name keys, or a policy file. New policy in *policy.
 */
remat_status_t remat_resolve_policy(const remat_config_t *cfg, remat_policy_t **policy,
                                    remat_error_t *err);

/**
 * Resolves the config's graph, policy and hardware (built-in names or files)
 * into new objects the caller frees (remat_graph_free, remat_policy_free).
 */
remat_status_t remat_resolve(const remat_config_t *cfg, remat_graph_t **graph,
                             remat_policy_t **policy, remat_hw_t *hw, remat_error_t *err);

#endif
