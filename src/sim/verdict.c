/* SPDX-License-Identifier: MIT */
/*
 * verdict.c: whether the step fits: the worst stage's peak against the HBM
 * budget with and without the safety margin, and the host's RAM against
 * what its chips offload. remat_result_passes() is the one definition of
 * "passes" that check, compare, the reports and the solver share, and
 * remat_result_verdict() the one classification of a step that does not.
 *
 * Invariants:
 *  - the result's peak, breakdown and moment are the worst stage's;
 *  - host bytes are a checked sum at most BYTES_MAX;
 *  - usable <= budget (the config takes a margin in [0, 1)), so
 *    fits_margin implies fits; checked below 2^53 bytes, where a double
 *    holds the budget exactly and the product cannot round above it;
 *  - a step whose figures rest on XLA taking held blocks apart partway
 *    (unit_apart_partway) never fits with the margin: XLA's compiles of
 *    such steps have fit and been refused alike (docs/memory-model.md,
 *    "Blocks re-run whole", counts them), so check calls it RISK;
 *  - xla_expected_peak_bytes <= the scheduled peak (unit_held_peak_bytes
 *    when set, which is then over the peak, else the peak): XLA's
 *    rematerialization pass only ever lowers the step it schedules;
 *  - nor does an unrolled TPU step whose unrolled bound (every layer's
 *    re-run held at once, unrolled_held_peak_bytes) is over the margin:
 *    XLA's compiles of unrolled runs were refused at up to 1.9 times the
 *    layer-by-layer peak (docs/memory-model.md, "Unrolled layers").
 */
#include <assert.h>
#include <string.h>

#include "sim/sim_rooms.h"

bool remat_result_passes(const remat_result_t *r) {
    return r->fits_margin && r->host_fits;
}

const char *remat_result_risk_reason(const remat_result_t *r) {
    if (r->peak_bytes <= r->usable_bytes && r->unit_apart_partway) {
        return "only if XLA's rematerialization takes the held blocks apart";
    }
    if (r->peak_bytes <= r->usable_bytes && r->unrolled_held_peak_bytes > r->usable_bytes) {
        return "only if XLA re-runs the unrolled layers one at a time";
    }
    return "inside the safety margin";
}

/* XLA:TPU's rematerialization limit, 95% of the usable HBM: libtpu's
   info log prints "rematerialization limit 14.86G = 95% hbm (14.96G) -
   (arguments - aliased_output) - overlays" (the default of
   xla_jf_rematerialization_percent_shared_memory_limit). */
uint64_t remat_xla_pass_limit(uint64_t limit) {
    return limit / 100 * REMAT_XLA_PASS_PERCENT;
}

uint64_t remat_xla_expected_peak(uint64_t step, uint64_t held, uint64_t regathered,
                                 uint64_t limit) {
    const uint64_t pass_limit = remat_xla_pass_limit(limit);
    const uint64_t before = held ? held : step; /* the step as XLA schedules it */
    if (before <= pass_limit) {
        return before;
    }
    if (before <= limit || (held && step <= pass_limit)) {
        return pass_limit;
    }
    if (regathered && regathered < before) {
        return regathered > pass_limit ? regathered : pass_limit;
    }
    return before;
}

remat_verdict_t remat_result_verdict(const remat_result_t *r) {
    remat_verdict_t v = !r->fits          ? REMAT_VERDICT_OOM
                        : !r->fits_margin ? REMAT_VERDICT_RISK
                        : !r->host_fits   ? REMAT_VERDICT_HOST_OOM
                                          : REMAT_VERDICT_OK;
    assert((v == REMAT_VERDICT_OK) == remat_result_passes(r));
    return v;
}

/* Host RAM: offloaded residuals of a device's layers for every pipeline
   iteration (pipeline_held), plus host-resident params/optimizer, for each
   device of the host (TPU7x: two per chip). */
static remat_status_t host_ram(const remat_analyzer_t *an, remat_result_t *r,
                               remat_error_t *err) {
    const remat_stage_row_t *w = &r->stages[r->worst_stage];
    uint64_t per_device = 0, off_stage = 0; /* below 2^62: the envelope's */
    for (size_t l = w->first_layer, e; l <= w->last_layer; l = e + 1) {
        e = run_end(an, l, w->last_layer);
        off_stage += r->layers[l].offloaded_bytes * (e - l + 1); /* a run's equal rows */
    }
    remat_status_t st;
    if ((st = pipeline_held(an, off_stage, &per_device, "host bytes", err)) ||
        (st = sum_checked(&per_device, r->host_static_bytes, 1, "host bytes", err)) ||
        (st = sum_checked(&r->host_bytes_per_host, per_device, an->hw->devices_per_host,
                                  "host bytes", err))) {
        return st;
    }
    r->host_ram_bytes = an->hw->host_ram_bytes;
    r->host_fits = r->host_bytes_per_host <= r->host_ram_bytes;
    return REMAT_OK;
}

/* Per device: XLA's limit (what its OOM message prints), not the nominal
   HBM, unless the user sets a budget; usable: less the safety margin. */
void remat_i_budget(const remat_analyzer_t *an, uint64_t *budget, uint64_t *usable) {
    const remat_config_t *cfg = an->cfg;
    *budget = cfg->hbm_budget ? cfg->hbm_budget : an->hw->hbm_limit_bytes;
    *usable = (uint64_t)((double)*budget * (1.0 - cfg->safety_margin));
}

remat_status_t remat_i_verdict(const remat_analyzer_t *an, remat_result_t *r,
                               remat_error_t *err) {
    const remat_config_t *cfg = an->cfg;
    const remat_stage_row_t *w = &r->stages[r->worst_stage];
    r->reserve_bytes = cfg->hbm_reserve;
    r->peak_bytes = w->peak_bytes;
    memcpy(r->breakdown, w->breakdown, sizeof r->breakdown);
    r->peak_at = w->peak_at;
    remat_status_t st = host_ram(an, r, err);
    if (st) {
        return st;
    }
    remat_i_budget(an, &r->budget_bytes, &r->usable_bytes);
    r->xla_expected_peak_bytes =
        an->hw->xla_gpu ? r->peak_bytes
                        : remat_xla_expected_peak(r->peak_bytes, r->unit_held_peak_bytes,
                                                  r->regathered_peak_bytes,
                                                  an->hw->hbm_limit_bytes);
    r->fits = r->peak_bytes <= r->budget_bytes;
    r->fits_margin = r->peak_bytes <= r->usable_bytes && !r->unit_apart_partway &&
                     r->unrolled_held_peak_bytes <= r->usable_bytes;
    assert(cfg->safety_margin < 0 || r->budget_bytes > ((uint64_t)1 << 53) ||
           r->usable_bytes <= r->budget_bytes);
    assert(r->host_bytes_per_host <= BYTES_MAX);
    assert(r->xla_expected_peak_bytes <= remat_result_scheduled_peak(r));
    return REMAT_OK;
}
