/* SPDX-License-Identifier: MIT */
/*
 * report_timeline.c: `remat timeline` as a text table, CSV, JSON
 * ("remat-timeline/1") and Chrome's trace event JSON (docs/json-output.md).
 * Formatting only: every byte count is an event's or a layer row's, every
 * time the timeline's (remat/sim/timeline.h); the trace converts seconds to
 * microseconds, its unit.
 *
 * Invariants: the same timeline gives byte-identical output; the CSV has
 * one header and one row per event, the columns of every category in
 * remat_cat_t order; the trace's compute track holds every event, its
 * counters one sample per event.
 */
#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "remat/view/report.h"
#include "view/report_internal.h"

static const double GIB = 1073741824.0;

static json_t *jint(uint64_t v) {
    return json_integer((json_int_t)v); /* counts stay below 2^62 (the simulator's bound) */
}

static const char *phase_name(remat_step_t s) {
    return s == REMAT_STEP_FORWARD ? "forward" : "backward";
}

/* "31" or "0-31" for an event's layers; "" for a head event. */
static void layers_text(const remat_event_t *e, char *buf, size_t size) {
    if (e->where != REMAT_AT_LAYER) {
        snprintf(buf, size, "-");
    } else if (e->repeat > 1) {
        snprintf(buf, size, "%zu (%zu-%zu)", e->layer, e->layer_first, e->layer_last);
    } else {
        snprintf(buf, size, "%zu", e->layer);
    }
}

/* The moment of the stage's peak, as `analyze` prints it. */
static void peak_line(FILE *out, const remat_result_t *r, const remat_timeline_t *tl) {
    char m[256];
    remat_format_moment(&r->stages[tl->stage].peak_at, m, sizeof m);
    fprintf(out, "peak %" PRIu64 " B (%.2f GiB) at event %zu: %s\n", tl->peak_bytes,
            (double)tl->peak_bytes / GIB, tl->peak, m);
}

static void timeline_text(FILE *out, const remat_result_t *r, const remat_timeline_t *tl) {
    fprintf(out, "remat timeline: %s on %s, remat_policy=%s, stage %zu of %zu, one micro-batch "
                 "%.6f s\n",
            r->config->model_name, r->hw->name, r->policy->name, tl->stage, tl->nstages,
            tl->seconds);
    if (tl->folded) {
        fputs("layers of one profile that run in a row are folded: a row shows the layer of the "
              "run with the highest live bytes, the run in parentheses (--unfold lists every "
              "layer)\n",
              out);
    }
    peak_line(out, r, tl);
    fprintf(out, "%6s %-9s %-9s %-9s %-14s %-24s %12s %12s %16s %9s\n", "event", "phase", "where",
            "step", "layer", "op", "start_s", "end_s", "live_bytes", "live_GiB");
    for (size_t i = 0; i < tl->nevents; i++) {
        const remat_event_t *e = &tl->events[i];
        char layers[64];
        layers_text(e, layers, sizeof layers);
        fprintf(out, "%6zu %-9s %-9s %-9s %-14s %-24s %12.6f %12.6f %16" PRIu64 " %9.2f\n", i,
                phase_name(e->step), remat_i_where_name(e->where), remat_i_step_name(e->step),
                layers, e->op ? e->op : "(fetch)", e->start_seconds, e->end_seconds,
                e->live_bytes, (double)e->live_bytes / GIB);
    }
}

static void timeline_csv(FILE *out, const remat_timeline_t *tl) {
    fputs("event,stage,phase,where,step,layer,layer_first,layer_last,repeat,op,start_seconds,"
          "end_seconds,live_bytes",
          out);
    for (int c = 0; c < REMAT_CAT_COUNT; c++) {
        fprintf(out, ",%s", remat_cat_name((remat_cat_t)c));
    }
    fputc('\n', out);
    for (size_t i = 0; i < tl->nevents; i++) {
        const remat_event_t *e = &tl->events[i];
        fprintf(out, "%zu,%zu,%s,%s,%s,", i, e->stage, phase_name(e->step),
                remat_i_where_name(e->where), remat_i_step_name(e->step));
        if (e->where == REMAT_AT_LAYER) {
            fprintf(out, "%zu,%zu,%zu,", e->layer, e->layer_first, e->layer_last);
        } else {
            fputs(",,,", out);
        }
        fprintf(out, "%zu,", e->repeat);
        remat_i_csv_cell(out, e->op ? e->op : "", false);
        fprintf(out, ",%.10g,%.10g,%" PRIu64, e->start_seconds, e->end_seconds, e->live_bytes);
        for (int c = 0; c < REMAT_CAT_COUNT; c++) {
            fprintf(out, ",%" PRId64, e->bytes[c]);
        }
        fputc('\n', out);
    }
}

static json_t *bytes_json(const int64_t *bytes) {
    json_t *o = json_object();
    for (int c = 0; c < REMAT_CAT_COUNT; c++) {
        json_object_set_new(o, remat_cat_name((remat_cat_t)c), json_integer(bytes[c]));
    }
    return o;
}

static json_t *event_json(const remat_event_t *e, size_t i) {
    const bool layer = e->where == REMAT_AT_LAYER;
    json_t *o = json_object();
    json_object_set_new(o, "index", jint(i));
    json_object_set_new(o, "stage", jint(e->stage));
    json_object_set_new(o, "phase", json_string(phase_name(e->step)));
    json_object_set_new(o, "where", json_string(remat_i_where_name(e->where)));
    json_object_set_new(o, "step", json_string(remat_i_step_name(e->step)));
    json_object_set_new(o, "layer", layer ? jint(e->layer) : json_null());
    json_object_set_new(o, "layer_first", layer ? jint(e->layer_first) : json_null());
    json_object_set_new(o, "layer_last", layer ? jint(e->layer_last) : json_null());
    json_object_set_new(o, "repeat", jint(e->repeat));
    json_object_set_new(o, "op", e->op ? json_string(e->op) : json_null());
    json_object_set_new(o, "start_seconds", json_real(e->start_seconds));
    json_object_set_new(o, "end_seconds", json_real(e->end_seconds));
    json_object_set_new(o, "live_bytes", jint(e->live_bytes));
    json_object_set_new(o, "bytes", bytes_json(e->bytes));
    return o;
}

static json_t *transfer_json(const remat_transfer_t *x) {
    json_t *o = json_object();
    json_object_set_new(o, "kind", json_string(remat_transfer_kind_name(x->kind)));
    json_object_set_new(o, "layer", jint(x->layer));
    json_object_set_new(o, "phase", json_string(x->backward ? "backward" : "forward"));
    json_object_set_new(o, "start_seconds", json_real(x->start_seconds));
    json_object_set_new(o, "end_seconds", json_real(x->end_seconds));
    json_object_set_new(o, "bytes", jint(x->bytes));
    return o;
}

static json_t *timeline_json(const remat_result_t *r, const remat_timeline_t *tl) {
    json_t *o = json_object();
    json_object_set_new(o, "schema", json_string("remat-timeline/1"));
    json_object_set_new(o, "model", json_string(r->config->model_name));
    json_object_set_new(o, "graph", json_string(r->graph->name));
    json_object_set_new(o, "hardware", json_string(r->hw->name));
    json_object_set_new(o, "remat_policy", json_string(r->policy->name));
    json_object_set_new(o, "stage", jint(tl->stage));
    json_object_set_new(o, "stages", jint(tl->nstages));
    json_object_set_new(o, "worst_stage", jint(r->worst_stage));
    json_object_set_new(o, "folded", json_boolean(tl->folded));
    json_object_set_new(o, "seconds", json_real(tl->seconds));
    json_object_set_new(o, "budget_bytes", jint(r->budget_bytes));
    json_object_set_new(o, "usable_bytes", jint(r->usable_bytes));
    json_object_set_new(o, "peak_hbm_bytes", jint(tl->peak_bytes));
    json_object_set_new(o, "peak_event", jint(tl->peak));
    json_object_set_new(o, "peak_at", remat_i_moment_json(&r->stages[tl->stage].peak_at));
    json_t *cats = json_array();
    for (int c = 0; c < REMAT_CAT_COUNT; c++) {
        json_array_append_new(cats, json_string(remat_cat_name((remat_cat_t)c)));
    }
    json_object_set_new(o, "categories", cats);
    json_t *ev = json_array();
    for (size_t i = 0; i < tl->nevents; i++) {
        json_array_append_new(ev, event_json(&tl->events[i], i));
    }
    json_object_set_new(o, "events", ev);
    json_t *xs = json_array();
    for (size_t i = 0; i < tl->ntransfers; i++) {
        json_array_append_new(xs, transfer_json(&tl->transfers[i]));
    }
    json_object_set_new(o, "transfers", xs);
    return o;
}

/* ---- Chrome's trace event format ----------------------------------------- */

enum { PID = 1, TID_COMPUTE = 1, TID_D2H = 2, TID_H2D = 3, TID_ICI = 4 };

static double usec(double seconds) {
    return seconds * 1e6;
}

static json_t *meta_json(const char *what, int tid, const char *name) {
    json_t *args = json_pack("{s:s}", "name", name);
    json_t *o = json_pack("{s:s,s:s,s:i}", "name", what, "ph", "M", "pid", PID);
    if (tid) {
        json_object_set_new(o, "tid", json_integer(tid));
    }
    json_object_set_new(o, "args", args);
    return o;
}

static json_t *slice_json(const char *name, const char *cat, int tid, double start, double end,
                          json_t *args) {
    json_t *o = json_pack("{s:s,s:s,s:s,s:f,s:f,s:i,s:i}", "name", name, "cat", cat, "ph", "X",
                          "ts", usec(start), "dur", usec(end - start), "pid", PID, "tid", tid);
    json_object_set_new(o, "args", args ? args : json_object());
    return o;
}

static json_t *counter_json(const char *name, double t, json_t *args) {
    json_t *o = json_pack("{s:s,s:s,s:f,s:i}", "name", name, "ph", "C", "ts", usec(t), "pid", PID);
    json_object_set_new(o, "args", args);
    return o;
}

/* The tracks' names, and the process's: what was analyzed. */
static void trace_meta(json_t *a, const remat_result_t *r, const remat_timeline_t *tl) {
    char name[512];
    snprintf(name, sizeof name, "remat: %s on %s, remat_policy=%s, stage %zu of %zu",
             r->config->model_name, r->hw->name, r->policy->name, tl->stage, tl->nstages);
    json_array_append_new(a, meta_json("process_name", 0, name));
    json_array_append_new(a, meta_json("thread_name", TID_COMPUTE, "compute (ops)"));
    json_array_append_new(a, meta_json("thread_name", TID_D2H, "host link: device to host"));
    json_array_append_new(a, meta_json("thread_name", TID_H2D, "host link: host to device"));
    json_array_append_new(a, meta_json("thread_name", TID_ICI, "ICI: FSDP collectives"));
}

/* Which categories are ever non-zero: the counter's series. */
static void used_cats(const remat_timeline_t *tl, bool *used) {
    for (int c = 0; c < REMAT_CAT_COUNT; c++) {
        used[c] = false;
        for (size_t i = 0; i < tl->nevents && !used[c]; i++) {
            used[c] = tl->events[i].bytes[c] != 0;
        }
    }
}

/* One op event: its slice on the compute track and the counters' samples
   at its start. */
static void trace_event(json_t *a, const remat_event_t *e, const bool *used) {
    char name[160];
    snprintf(name, sizeof name, "%s", e->op ? e->op : "fetch offloaded buffers");
    json_t *args = json_pack("{s:s,s:I}", "where", remat_i_where_name(e->where), "live_bytes",
                             (json_int_t)e->live_bytes);
    if (e->where == REMAT_AT_LAYER) {
        json_object_set_new(args, "layer", jint(e->layer));
    }
    json_array_append_new(a, slice_json(name, remat_i_step_name(e->step), TID_COMPUTE,
                                        e->start_seconds, e->end_seconds, args));
    json_t *cats = json_object();
    for (int c = 0; c < REMAT_CAT_COUNT; c++) {
        if (used[c]) {
            json_object_set_new(cats, remat_cat_name((remat_cat_t)c), json_integer(e->bytes[c]));
        }
    }
    json_array_append_new(a, counter_json("HBM by category (bytes)", e->start_seconds, cats));
    json_array_append_new(a, counter_json("HBM live (bytes)", e->start_seconds,
                                          json_pack("{s:I}", "live", (json_int_t)e->live_bytes)));
}

/* A slice per layer segment around its ops: "layer 3 forward". */
static void trace_layer_slices(json_t *a, const remat_result_t *r, const remat_timeline_t *tl) {
    for (size_t i = 0; i < tl->nevents; i++) {
        const remat_event_t *e = &tl->events[i], *p = i ? &tl->events[i - 1] : NULL;
        const bool bwd = e->step != REMAT_STEP_FORWARD;
        if (e->where != REMAT_AT_LAYER ||
            (p && p->where == REMAT_AT_LAYER && p->layer == e->layer &&
             (p->step != REMAT_STEP_FORWARD) == bwd)) {
            continue;
        }
        const remat_layer_row_t *row = &r->layers[e->layer];
        char name[64];
        snprintf(name, sizeof name, "layer %zu %s", e->layer, bwd ? "backward" : "forward");
        json_array_append_new(
            a, slice_json(name, "layer", TID_COMPUTE, e->start_seconds,
                          e->start_seconds + (bwd ? row->backward_seconds : row->forward_seconds),
                          json_pack("{s:I}", "profile", (json_int_t)row->profile)));
    }
}

static void trace_transfers(json_t *a, const remat_timeline_t *tl) {
    for (size_t i = 0; i < tl->ntransfers; i++) {
        const remat_transfer_t *x = &tl->transfers[i];
        const int tid = x->kind == REMAT_XFER_D2H   ? TID_D2H
                        : x->kind == REMAT_XFER_H2D || x->kind == REMAT_XFER_PARAM_FETCH ? TID_H2D
                                                                                       : TID_ICI;
        char name[96];
        snprintf(name, sizeof name, "%s layer %zu", remat_transfer_kind_name(x->kind), x->layer);
        json_t *args = json_pack("{s:s}", "phase", x->backward ? "backward" : "forward");
        if (x->bytes) {
            json_object_set_new(args, "bytes", jint(x->bytes));
        }
        json_array_append_new(a, slice_json(name, remat_transfer_kind_name(x->kind), tid,
                                            x->start_seconds, x->end_seconds, args));
    }
}

static json_t *trace_json(const remat_result_t *r, const remat_timeline_t *tl) {
    json_t *a = json_array();
    trace_meta(a, r, tl);
    trace_layer_slices(a, r, tl);
    bool used[REMAT_CAT_COUNT];
    used_cats(tl, used);
    for (size_t i = 0; i < tl->nevents; i++) {
        trace_event(a, &tl->events[i], used);
    }
    trace_transfers(a, tl);
    json_array_append_new(a, counter_json("HBM budget (bytes)", 0,
                                          json_pack("{s:I}", "budget",
                                                    (json_int_t)r->budget_bytes)));
    json_array_append_new(a, counter_json("HBM budget (bytes)", tl->seconds,
                                          json_pack("{s:I}", "budget",
                                                    (json_int_t)r->budget_bytes)));
    json_t *other = json_pack("{s:s,s:s,s:s,s:s,s:I,s:I,s:f}", "schema", "remat-trace/1", "model",
                              r->config->model_name, "hardware", r->hw->name, "remat_policy",
                              r->policy->name, "stage", (json_int_t)tl->stage, "peak_hbm_bytes",
                              (json_int_t)tl->peak_bytes, "seconds", tl->seconds);
    return json_pack("{s:o,s:s,s:o}", "traceEvents", a, "displayTimeUnit", "ms", "otherData",
                     other);
}

void remat_report_timeline(FILE *out, const remat_result_t *r, const remat_timeline_t *tl,
                           remat_format_t fmt) {
    assert(tl->stage < r->nstages);
    switch (fmt) {
        case REMAT_FMT_JSON:
            remat_i_emit_json(out, timeline_json(r, tl));
            break;
        case REMAT_FMT_TRACE:
            remat_i_emit_json(out, trace_json(r, tl));
            break;
        case REMAT_FMT_CSV:
            timeline_csv(out, tl);
            break;
        default:
            timeline_text(out, r, tl);
            break;
    }
}
