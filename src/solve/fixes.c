/* SPDX-License-Identifier: MIT */
/*
 * fixes.c: what would make a run pass (remat_fixes_find, solve.h): the
 * solver's fastest placement that passes, the largest per_device_batch_size
 * that passes under each preset and the run's own policy, the smallest
 * slice of the run's chip that passes, and, where the layers run unrolled,
 * the run with them scanned (MaxText's default). check and analyze end
 * with them when the verdict is not OK.
 *
 * Invariants: every fix is found by analyses of the run with that one
 * change (the placement, the batch, the slice, the scan), each passing;
 * nothing here prints. A fix that cannot be had is absent (placement_found,
 * batches[i].batch == 0, slice_found false), never a guess. A search
 * error that says only that the change does not apply (a mesh that does
 * not divide the candidate slice, a solver search too large) leaves that
 * fix absent; out of memory or an internal error is returned.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remat/data/builtin.h"
#include "remat/input/config.h"
#include "remat/sim/sim.h"
#include "remat/solve/solve.h"
#include "base/util.h"

void remat_fixes_init(remat_fixes_t *f) {
    memset(f, 0, sizeof *f);
}

void remat_fixes_release(remat_fixes_t *f) {
    free(f->choices);
    free(f->batches);
    remat_fixes_init(f);
}

/* Errors that say a change does not apply to this run, not that remat
   failed: the fix is then absent. */
static bool inapplicable(remat_status_t st) {
    return st == REMAT_E_CONFIG || st == REMAT_E_GRAPH || st == REMAT_E_POLICY ||
           st == REMAT_E_OVERFLOW;
}

/* Analyzes @p c, the run with one change, into @p r; *passes when it
   passes. An error that says the change does not apply is none here (the
   fix is then absent); any other is copied to @p err and returned. */
static remat_status_t try_change(const remat_graph_t *g, const remat_config_t *c,
                                 const remat_policy_t *policy, const remat_hw_t *hw,
                                 remat_result_t *r, bool *passes, remat_error_t *err) {
    remat_error_t e;
    remat_error_init(&e);
    remat_status_t st = remat_analyze(g, c, policy, hw, r, &e);
    *passes = st == REMAT_OK && remat_result_passes(r);
    if (inapplicable(st)) {
        return REMAT_OK;
    }
    if (st) {
        *err = e;
    }
    return st;
}

/* The solver's fastest placement that passes. */
static remat_status_t find_placement(const remat_graph_t *g, const remat_config_t *cfg,
                                     const remat_hw_t *hw, remat_fixes_t *f,
                                     remat_error_t *err) {
    remat_solution_t sol;
    remat_solution_init(&sol);
    remat_error_t e;
    remat_error_init(&e);
    remat_status_t st = remat_solve(g, cfg, hw, REMAT_SOLVE_QUICK, &sol, &e);
    if (inapplicable(st)) {
        snprintf(f->placement_note, sizeof f->placement_note, "%.255s", e.text);
        st = REMAT_OK;
    } else if (st) {
        *err = e;
    } else if (sol.found) {
        f->placement_found = true;
        f->nchoices = sol.nnames;
        f->choices = remat_i_xcalloc(sol.nnames + 1, sizeof *f->choices);
        memcpy(f->choices, sol.choices + sol.best.first, sol.nnames * sizeof *f->choices);
        f->placement_peak_bytes = sol.best.peak_bytes;
        f->placement_step_seconds = sol.best.step_seconds;
    }
    remat_solution_release(&sol);
    return st;
}

/* Policy @p policy's largest batch into @p row, with its peak and step. */
static remat_status_t batch_row(const remat_graph_t *g, const remat_config_t *cfg,
                                const remat_policy_t *policy, const remat_hw_t *hw,
                                remat_fix_batch_t *row, remat_error_t *err) {
    remat_error_t e;
    remat_error_init(&e);
    remat_status_t st = remat_largest_batch(g, cfg, policy, hw, &row->batch, &e);
    if (st == REMAT_OK && row->batch > 0) {
        remat_config_t c = *cfg;
        c.per_device_batch_size = row->batch;
        remat_result_t r;
        remat_result_init(&r);
        st = remat_analyze(g, &c, policy, hw, &r, &e);
        row->peak_bytes = r.peak_bytes;
        row->step_seconds = r.step_seconds;
        remat_result_release(&r);
    }
    if (inapplicable(st)) {
        row->batch = 0;
        st = REMAT_OK;
    } else if (st) {
        *err = e;
    }
    return st;
}

/* Larger batch first; then the run's own policy (the least change); then
   more sequences a second; then by name. */
static int batch_cmp(const void *pa, const void *pb) {
    const remat_fix_batch_t *a = pa, *b = pb;
    if (a->batch != b->batch) {
        return a->batch > b->batch ? -1 : 1;
    }
    if (a->own != b->own) {
        return a->own ? -1 : 1;
    }
    const double ta = a->batch / a->step_seconds, tb = b->batch / b->step_seconds;
    if (a->batch > 0 && ta != tb) {
        return ta > tb ? -1 : 1;
    }
    return strcmp(a->policy, b->policy);
}

/* minimal_flash is minimal_with_context under a second name. */
static bool alias(const char *name) {
    return strcmp(name, "minimal_flash") == 0;
}

/* The largest batch of the run's own policy and of every preset. */
static remat_status_t find_batches(const remat_graph_t *g, const remat_config_t *cfg,
                                   const remat_policy_t *own, const remat_hw_t *hw,
                                   remat_fixes_t *f, remat_error_t *err) {
    const size_t npol = remat_builtin_count(REMAT_BUILTIN_POLICY);
    f->batches = remat_i_xcalloc(npol + 1, sizeof *f->batches);
    remat_fix_batch_t *row = &f->batches[f->nbatches++];
    snprintf(row->policy, sizeof row->policy, "%s", cfg->remat_policy);
    row->own = true;
    remat_status_t st = batch_row(g, cfg, own, hw, row, err);
    for (size_t i = 0; st == REMAT_OK && i < npol; i++) {
        const char *name = remat_builtin_name(REMAT_BUILTIN_POLICY, i);
        if (alias(name) || strcmp(name, cfg->remat_policy) == 0) {
            continue;
        }
        remat_config_t c = *cfg;
        snprintf(c.remat_policy, sizeof c.remat_policy, "%s", name);
        c.ncustom = 0;
        remat_policy_t *p = NULL;
        st = remat_policy_builtin(name, &p, err);
        if (st == REMAT_OK) {
            row = &f->batches[f->nbatches++];
            snprintf(row->policy, sizeof row->policy, "%s", name);
            st = batch_row(g, &c, p, hw, row, err);
        }
        remat_policy_free(p);
    }
    qsort(f->batches, f->nbatches, sizeof *f->batches, batch_cmp);
    return st;
}

/* The chip family a slice of @p hw is spelled with ("tpu7x" for tpu7x,
   "v5p" for tpu-v5p), from the run's topology when it has one; NULL for a
   profile file. */
static const char *family_of(const remat_config_t *cfg, const remat_hw_t *hw, char *buf,
                             size_t size) {
    static const struct {
        const char *hardware, *family;
    } families[] = {{"tpu7x", "tpu7x"}, {"tpu-v6e", "v6e"}, {"tpu-v5p", "v5p"},
                    {"tpu-v5e", "v5litepod"}, {"tpu-v4", "v4"}, {"h100", "h100"},
                    {"h200", "h200"}, {"b200", "b200"}};
    const char *dash = strrchr(cfg->topology, '-');
    if (cfg->topology[0] && dash && (size_t)(dash - cfg->topology) < size) {
        snprintf(buf, size, "%.*s", (int)(dash - cfg->topology), cfg->topology);
        return buf;
    }
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++) {
        if (strcmp(hw->name, families[i].hardware) == 0) {
            return families[i].family;
        }
    }
    return NULL;
}

/* The smallest slice of the run's chip (doubling from one chip) on which
   the run passes, up to REMAT_FIX_MAX_DEVICES devices. */
static remat_status_t find_slice(const remat_graph_t *g, const remat_config_t *cfg,
                                 const remat_policy_t *policy, const remat_hw_t *hw,
                                 remat_fixes_t *f, remat_error_t *err) {
    char buf[32];
    const char *family = family_of(cfg, hw, buf, sizeof buf);
    const uint64_t slices = cfg->num_slices > 0 ? (uint64_t)cfg->num_slices : 1;
    remat_status_t st = REMAT_OK;
    remat_result_t r;
    remat_result_init(&r);
    for (uint64_t chips = 1; family && st == REMAT_OK && !f->slice_found &&
                             chips * hw->devices_per_chip * slices <= REMAT_FIX_MAX_DEVICES;
         chips *= 2) {
        remat_config_t c = *cfg;
        snprintf(c.topology, sizeof c.topology, "%s-%llu", family,
                 (unsigned long long)(chips * hw->cores_per_chip));
        c.num_devices = chips * hw->devices_per_chip * slices;
        c.num_devices_set = true;
        c.num_devices_assumed = false;
        bool passes;
        st = try_change(g, &c, policy, hw, &r, &passes, err);
        if (passes) {
            f->slice_found = true;
            snprintf(f->topology, sizeof f->topology, "%s", c.topology);
            f->slice_devices = c.num_devices;
            f->slice_chips = chips * slices;
            f->slice_peak_bytes = r.peak_bytes;
            f->slice_step_seconds = r.step_seconds;
        }
    }
    remat_result_release(&r);
    return st;
}

/* The run with its layers scanned, where they run unrolled: on XLA:TPU an
   unrolled step passes only if every layer's re-run held at once fits
   (the unrolled bound, sim.h), which a scan's loop rules out. */
static remat_status_t find_scan(const remat_graph_t *g, const remat_config_t *cfg,
                                const remat_policy_t *policy, const remat_hw_t *hw,
                                remat_fixes_t *f, remat_error_t *err) {
    f->scan_tried = !cfg->scan_layers;
    if (!f->scan_tried) {
        return REMAT_OK;
    }
    remat_config_t c = *cfg;
    c.scan_layers = true;
    remat_error_t e;
    remat_error_init(&e);
    if (remat_config_check_scan(&c, &e)) {
        /* MaxText refuses the scan for this model (gemma4_small): no fix,
           and the user is told why rather than that it does not fit */
        snprintf(f->scan_note, sizeof f->scan_note, "%.255s", e.text);
        return REMAT_OK;
    }
    remat_result_t r;
    remat_result_init(&r);
    remat_status_t st = try_change(g, &c, policy, hw, &r, &f->scan_found, err);
    if (f->scan_found) {
        f->scan_peak_bytes = r.peak_bytes;
        f->scan_step_seconds = r.step_seconds;
    }
    remat_result_release(&r);
    return st;
}

remat_status_t remat_fixes_find(const remat_graph_t *g, const remat_config_t *cfg,
                                const remat_policy_t *policy, const remat_hw_t *hw,
                                remat_fixes_t *f, remat_error_t *err) {
    remat_fixes_release(f);
    remat_status_t st = find_placement(g, cfg, hw, f, err);
    if (st == REMAT_OK) {
        st = find_batches(g, cfg, policy, hw, f, err);
    }
    if (st == REMAT_OK) {
        st = find_slice(g, cfg, policy, hw, f, err);
    }
    if (st == REMAT_OK) {
        st = find_scan(g, cfg, policy, hw, f, err);
    }
    return st;
}
