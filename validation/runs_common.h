/* SPDX-License-Identifier: MIT */
/*
 * runs_common.h: what the validation programs (realruns.c, xlaruns.c)
 * share: one run's settings analyzed exactly as `remat check` analyzes
 * them, JSON field readers and the --name=VALUE option parser.
 *
 * Invariant: a vr_run_t that vr_run_analyze filled owns its graph, policy
 * and result (the result borrows the other two) until vr_run_release; on
 * failure it owns nothing and holds the one-line error.
 */
#ifndef REMAT_VALIDATION_RUNS_COMMON_H
#define REMAT_VALIDATION_RUNS_COMMON_H

#include <stdbool.h>

#include <jansson.h>

#include "remat/input/config.h"
#include "remat/model/graph.h"
#include "remat/model/hw.h"
#include "remat/model/policy.h"
#include "remat/sim/sim.h"

#define VR_GIB (1024.0 * 1024.0 * 1024.0)

typedef struct vr_run {
    remat_config_t cfg;
    remat_graph_t *graph;
    remat_policy_t *policy;
    remat_hw_t hw;
    remat_result_t result;
    bool ok;
    char error[256];
    remat_error_hint_t hint; /* what the error says can be done (a mesh that does not lay out) */
} vr_run_t;

/**
 * Analyzes @p settings (a JSON array of "key=value" strings), after the
 * optional @p first setting (NULL for none), with the default budget and
 * margin. Sets run->ok, or run->error. Release with vr_run_release either way.
 */
void vr_run_analyze(vr_run_t *run, const char *first, json_t *settings);
/** vr_run_analyze after @p nfirst leading settings (the run's own win). */
void vr_run_analyze_with(vr_run_t *run, const char *const *first, size_t nfirst, json_t *settings);
void vr_run_release(vr_run_t *run);

/** A string member of @p o, or NULL. */
const char *vr_str(json_t *o, const char *key);
/** A number member of @p o, or 0. */
double vr_num(json_t *o, const char *key);
/** A byte count member of @p o (a number from 1 to REMAT_BYTES_MAX, whole
    bytes taken), or 0 for anything else: a missing, negative or
    non-number member, or one too large to be a device's bytes. */
uint64_t vr_bytes(json_t *o, const char *key);
/** "--name=VALUE" into *out (a non-negative number); false if not this option. */
bool vr_option(const char *arg, const char *name, double *out);

#endif
