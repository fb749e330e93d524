/* SPDX-License-Identifier: MIT */
/*
 * timeline.c: the step event by event (remat/sim/timeline.h): a traced analysis
 * (the simulator's own measures, sim_internal.h) laid on the time model's
 * clock, optionally folded over runs of identical layers.
 *
 * Invariants:
 *  - the timeline's peak is the stage's peak: the simulator measures every
 *    event as it measures the peak (asserted here, tested for every built-in
 *    graph), and folding keeps, of each run, the layer with the highest
 *    events, so the peak event survives it;
 *  - an event's bytes sum to its live bytes;
 *  - times never go back: an event starts where the previous one ended, or
 *    later when a layer's time exceeds its ops' (an exposed transfer);
 *  - a layer segment (one layer's forward, or its fetch, re-run and
 *    backward) lasts the layer row's forward_seconds (backward_seconds).
 */
#include "remat/sim/timeline.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_internal.h"
#include "base/util.h"

static const char *const xfer_names[] = {"d2h", "h2d", "param_fetch", "all_gather",
                                         "reduce_scatter"};

const char *remat_transfer_kind_name(remat_transfer_kind_t k) {
    return (size_t)k < sizeof xfer_names / sizeof xfer_names[0] ? xfer_names[k] : "?";
}

void remat_timeline_init(remat_timeline_t *tl) {
    memset(tl, 0, sizeof *tl);
}

void remat_timeline_release(remat_timeline_t *tl) {
    free(tl->events);
    free(tl->transfers);
    remat_timeline_init(tl);
}

static bool is_backward(remat_step_t s) {
    return s != REMAT_STEP_FORWARD;
}

/* Whether trace event @p e begins a layer segment after @p prev (NULL at
   the start): another layer, or the same layer turning backward. */
static bool starts_segment(const remat_trace_event_t *prev, const remat_trace_event_t *e) {
    return e->where == REMAT_AT_LAYER &&
           (!prev || prev->where != REMAT_AT_LAYER || prev->layer != e->layer ||
            is_backward(prev->step) != is_backward(e->step));
}

static void add_xfer(remat_timeline_t *tl, size_t *cap, remat_transfer_kind_t kind, size_t layer,
                     bool backward, double start, double secs, uint64_t bytes) {
    if (!(secs > 0)) {
        return;
    }
    if (tl->ntransfers == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        tl->transfers = remat_i_xrealloc(tl->transfers, *cap * sizeof *tl->transfers);
    }
    tl->transfers[tl->ntransfers++] = (remat_transfer_t){.kind = kind,
                                                          .layer = layer,
                                                          .backward = backward,
                                                          .start_seconds = start,
                                                          .end_seconds = start + secs,
                                                          .bytes = bytes};
}

/* The links' work during a layer segment starting at @p t0, as the time
   model overlaps it with the layer's compute: the forward's all-gather,
   D2H copy and parameter fetch all start with the layer; the backward's
   H2D copy then the parameter fetch share the host link, the all-gather
   then the reduce-scatter the ICI. */
static void segment_transfers(remat_timeline_t *tl, size_t *cap, const remat_layer_row_t *row,
                              bool backward, double t0) {
    const size_t l = row->index;
    if (!backward) {
        add_xfer(tl, cap, REMAT_XFER_D2H, l, false, t0, row->d2h_seconds, row->offloaded_bytes);
        add_xfer(tl, cap, REMAT_XFER_PARAM_FETCH, l, false, t0, row->param_fetch_seconds, 0);
        add_xfer(tl, cap, REMAT_XFER_ALLGATHER, l, false, t0, row->allgather_seconds, 0);
        return;
    }
    add_xfer(tl, cap, REMAT_XFER_H2D, l, true, t0, row->h2d_seconds, row->offloaded_bytes);
    add_xfer(tl, cap, REMAT_XFER_PARAM_FETCH, l, true, t0 + row->h2d_seconds,
             row->param_fetch_seconds, 0);
    add_xfer(tl, cap, REMAT_XFER_ALLGATHER, l, true, t0, row->allgather_seconds, 0);
    add_xfer(tl, cap, REMAT_XFER_REDUCE_SCATTER, l, true, t0 + row->allgather_seconds,
             row->reduce_scatter_seconds, 0);
}

static void copy_event(const remat_trace_event_t *e, double start, remat_event_t *out) {
    memset(out, 0, sizeof *out);
    out->stage = e->stage;
    out->step = e->step;
    out->where = e->where;
    out->layer = out->layer_first = out->layer_last = e->layer;
    out->repeat = 1;
    out->op = e->op;
    out->start_seconds = start;
    out->end_seconds = start + e->seconds;
    assert(e->live >= 0);
    out->live_bytes = (uint64_t)e->live;
    memcpy(out->bytes, e->cats, sizeof out->bytes);
}

/* Stage @p k's events of @p tr, every layer, on the clock; the transfers
   of each layer segment. */
static void lay_out(const remat_trace_t *tr, const remat_result_t *r, size_t k,
                    remat_timeline_t *tl) {
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < tr->nevents; i++) {
        n += tr->events[i].stage == k;
    }
    tl->events = remat_i_xcalloc(n ? n : 1, sizeof *tl->events);
    double t = 0, seg_end = 0;
    const remat_trace_event_t *prev = NULL;
    for (size_t i = 0; i < tr->nevents; i++) {
        const remat_trace_event_t *e = &tr->events[i];
        if (e->stage != k) {
            continue;
        }
        const bool new_seg = starts_segment(prev, e);
        if (new_seg || (e->where != REMAT_AT_LAYER && prev && prev->where == REMAT_AT_LAYER)) {
            t = t > seg_end ? t : seg_end; /* the previous segment's full time */
        }
        if (new_seg) {
            const remat_layer_row_t *row = &r->layers[e->layer];
            const bool bwd = is_backward(e->step);
            seg_end = t + (bwd ? row->backward_seconds : row->forward_seconds);
            segment_transfers(tl, &cap, row, bwd, t);
        }
        copy_event(e, t, &tl->events[tl->nevents++]);
        t += e->seconds;
        prev = e;
    }
    if (prev && prev->where == REMAT_AT_LAYER && seg_end > t) {
        t = seg_end;
    }
    tl->seconds = t;
}

/* The first event at the highest live bytes. */
static void find_peak(remat_timeline_t *tl) {
    tl->peak = 0;
    tl->peak_bytes = 0;
    for (size_t i = 0; i < tl->nevents; i++) {
        if (i == 0 || tl->events[i].live_bytes > tl->peak_bytes) {
            tl->peak = i;
            tl->peak_bytes = tl->events[i].live_bytes;
        }
    }
}

/* The end of the layer segment starting at event @p i. */
static size_t segment_end(const remat_timeline_t *tl, size_t i) {
    const remat_event_t *a = &tl->events[i];
    size_t j = i + 1;
    while (j < tl->nevents && tl->events[j].where == REMAT_AT_LAYER &&
           tl->events[j].layer == a->layer &&
           is_backward(tl->events[j].step) == is_backward(a->step)) {
        j++;
    }
    return j;
}

static uint64_t segment_max(const remat_timeline_t *tl, size_t from, size_t to) {
    uint64_t m = 0;
    for (size_t i = from; i < to; i++) {
        m = tl->events[i].live_bytes > m ? tl->events[i].live_bytes : m;
    }
    return m;
}

/* Folds runs of layer segments of one profile and direction in place:
   each run keeps its highest segment (the first on ties), marked with the
   run's layer range. @p profile_of gives each layer's profile. */
static void fold(remat_timeline_t *tl, const remat_result_t *r) {
    size_t w = 0, i = 0;
    while (i < tl->nevents) {
        const remat_event_t *a = &tl->events[i];
        if (a->where != REMAT_AT_LAYER) {
            tl->events[w++] = tl->events[i++];
            continue;
        }
        const size_t prof = r->layers[a->layer].profile;
        const bool bwd = is_backward(a->step);
        size_t best = i, best_end = segment_end(tl, i), j = best_end;
        size_t lo = a->layer, hi = a->layer, count = 1;
        uint64_t best_max = segment_max(tl, i, best_end);
        while (j < tl->nevents && tl->events[j].where == REMAT_AT_LAYER &&
               is_backward(tl->events[j].step) == bwd &&
               r->layers[tl->events[j].layer].profile == prof) {
            const size_t e = segment_end(tl, j), l = tl->events[j].layer;
            const uint64_t m = segment_max(tl, j, e);
            if (m > best_max) {
                best = j, best_end = e, best_max = m;
            }
            lo = l < lo ? l : lo;
            hi = l > hi ? l : hi;
            count++;
            j = e;
        }
        assert(hi - lo + 1 == count && "a run's layers are consecutive");
        for (size_t k = best; k < best_end; k++) {
            tl->events[w] = tl->events[k];
            tl->events[w].layer_first = lo;
            tl->events[w].layer_last = hi;
            tl->events[w++].repeat = count;
        }
        i = j;
    }
    tl->nevents = w;
    tl->folded = true;
}

/* Runs the traced analysis and keeps the trace for the caller. */
static remat_status_t traced_run(const remat_graph_t *g, const remat_config_t *cfg,
                                 const remat_policy_t *policy, const remat_hw_t *hw,
                                 remat_trace_t *tr, remat_result_t *r, remat_error_t *err) {
    remat_result_release(r);
    remat_status_t st = remat_policy_check(policy, g, err);
    remat_analyzer_t *an = NULL;
    if (st == REMAT_OK) {
        st = remat_analyzer_new(g, cfg, hw, &an, err);
    }
    if (st == REMAT_OK) {
        const remat_run_opts_t opts = {.trace = tr};
        st = remat_analyzer_run(an, policy, &opts, r, err);
    }
    remat_analyzer_free(an);
    return st;
}

remat_status_t remat_timeline_analyze(const remat_graph_t *g, const remat_config_t *cfg,
                                      const remat_policy_t *policy, const remat_hw_t *hw,
                                      const remat_timeline_opts_t *opts, remat_result_t *r,
                                      remat_timeline_t *tl, remat_error_t *err) {
    const remat_timeline_opts_t dflt = {.stage = REMAT_NONE};
    opts = opts ? opts : &dflt;
    remat_timeline_release(tl);
    remat_trace_t tr;
    remat_i_trace_init(&tr);
    remat_status_t st = traced_run(g, cfg, policy, hw, &tr, r, err);
    const size_t k = opts->stage == REMAT_NONE ? r->worst_stage : opts->stage;
    if (st == REMAT_OK && k >= r->nstages) {
        st = remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                             "stage %zu: the run has %zu pipeline stage%s (0 to %zu)", k,
                             r->nstages, r->nstages == 1 ? "" : "s", r->nstages - 1);
    }
    if (st == REMAT_OK) {
        tl->stage = k;
        tl->nstages = r->nstages;
        lay_out(&tr, r, k, tl);
        find_peak(tl);
        assert(tl->peak_bytes == r->stages[k].peak_bytes && "the timeline's peak is the stage's");
        if (!opts->unfold) {
            fold(tl, r);
            find_peak(tl);
            assert(tl->peak_bytes == r->stages[k].peak_bytes);
        }
    }
    remat_i_trace_release(&tr);
    return st;
}
