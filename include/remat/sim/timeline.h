/* SPDX-License-Identifier: MIT */
/*
 * remat/sim/timeline.h: the simulated step event by event, for one pipeline
 * stage: every moment the simulator measures (an op's forward, re-run or
 * backward, a layer's host fetch) with its start and end time from the time
 * model and the live bytes by category (remat_cat_t) at that moment. The
 * highest event is the analysis's peak, at the analysis's moment.
 *
 * Times (docs/json-output.md, "remat-timeline/1"): one micro-batch through
 * the stage, from 0. Ops run one after another for their roofline time; a
 * layer's forward (backward) lasts its forward_seconds (backward_seconds),
 * so when a transfer or a collective is exposed the gap after its last op
 * is that exposed time. A fetch takes no time of its own (the host-to-
 * device copy overlaps the layer's backward: see the transfers).
 */
#ifndef REMAT_TIMELINE_H
#define REMAT_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "remat/base/error.h"
#include "remat/sim/sim.h"

typedef struct remat_event {
    size_t stage;
    remat_step_t step;   /* forward, fetch, recompute or backward */
    remat_where_t where; /* head_pre, layer or head_post */
    size_t layer;        /* where == REMAT_AT_LAYER: the layer whose figures these are */
    /* A folded event stands for the same op of every layer in
       [layer_first, layer_last] (repeat of them, layers of one profile that
       run one after another); its bytes and times are those of `layer`, the
       one of them whose live bytes are highest (the first on ties). Unfolded:
       layer_first == layer_last == layer, repeat 1. Head events: repeat 1. */
    size_t layer_first, layer_last, repeat;
    const char *op; /* borrowed from the graph; NULL for a fetch */
    double start_seconds, end_seconds;
    uint64_t live_bytes; /* the sum of bytes[] */
    int64_t bytes[REMAT_CAT_COUNT];
} remat_event_t;

/* What crosses a link while a layer runs (the time model's overlapped
   terms), for a trace's transfer and collective tracks. */
typedef enum remat_transfer_kind {
    REMAT_XFER_D2H,            /* offloaded activations to host, during the forward */
    REMAT_XFER_H2D,            /* and back, during the backward */
    REMAT_XFER_PARAM_FETCH,    /* host-resident params to HBM, each pass */
    REMAT_XFER_ALLGATHER,      /* FSDP weight all-gather, each pass */
    REMAT_XFER_REDUCE_SCATTER  /* FSDP gradient reduce-scatter, backward */
} remat_transfer_kind_t;

typedef struct remat_transfer {
    remat_transfer_kind_t kind;
    size_t layer;
    bool backward;
    double start_seconds, end_seconds;
    uint64_t bytes; /* D2H and H2D: the layer's offloaded bytes; others 0 (not reported) */
} remat_transfer_t;

typedef struct remat_timeline {
    size_t stage, nstages;
    bool folded;
    size_t nevents;
    remat_event_t *events; /* in the order the stage runs them */
    size_t peak;           /* index of the first event at the highest live bytes */
    uint64_t peak_bytes;   /* == the stage's peak_bytes (the result's, for the worst stage) */
    double seconds;        /* one micro-batch through the stage */
    size_t ntransfers;
    remat_transfer_t *transfers; /* every layer's, unfolded times, by start */
} remat_timeline_t;

typedef struct remat_timeline_opts {
    size_t stage; /* REMAT_NONE: the worst stage (the analysis's peak) */
    bool unfold;  /* every layer's events; else runs of one profile fold */
} remat_timeline_opts_t;

/** An empty timeline in caller storage; remat_timeline_release frees its events. */
void remat_timeline_init(remat_timeline_t *tl);
void remat_timeline_release(remat_timeline_t *tl);

/**
 * Analyzes one step as remat_analyze() does (into @p r, the same result)
 * and builds its timeline into @p tl (released first). Inputs are borrowed
 * and must outlive both. @p opts may be NULL (the worst stage, folded).
 * Errors: those of remat_analyze(); REMAT_E_CONFIG for a stage past the
 * run's. Complexity: O(layers x ops) events.
 */
remat_status_t remat_timeline_analyze(const remat_graph_t *g, const remat_config_t *cfg,
                                      const remat_policy_t *policy, const remat_hw_t *hw,
                                      const remat_timeline_opts_t *opts, remat_result_t *r,
                                      remat_timeline_t *tl, remat_error_t *err);

/** "d2h", "h2d", "param_fetch", "all_gather" or "reduce_scatter". */
const char *remat_transfer_kind_name(remat_transfer_kind_t k);

#endif
