/* SPDX-License-Identifier: MIT */
/*
 * report.c: text, JSON, CSV and Markdown renderings of remat_result_t. No
 * arithmetic beyond unit conversion for display (bytes -> GiB, FLOPs ->
 * seconds were computed by the simulator); JSON carries exact integers.
 */
#include "remat/view/report.h"
#include "view/report_internal.h"

#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

static const double GIB = 1073741824.0;

static const char *const format_names[] = {"text", "json", "csv", "md", "trace"};
enum { NFORMATS = sizeof format_names / sizeof format_names[0] };

const char *remat_format_name(remat_format_t f) {
    assert((size_t)f < NFORMATS);
    return format_names[f];
}

bool remat_format_parse(const char *s, remat_format_t *out) {
    for (int i = 0; i < NFORMATS; i++) {
        if (strcmp(s, format_names[i]) == 0) {
            *out = (remat_format_t)i;
            return true;
        }
    }
    return false;
}

void remat_format_bytes(uint64_t bytes, char *buf, size_t size) {
    snprintf(buf, size, "%.2f GiB", (double)bytes / GIB);
}

void remat_i_budget_bytes(uint64_t bytes, char *buf, size_t size) {
    if (bytes >= GIB / 100) {
        snprintf(buf, size, "%.2f GiB", (double)bytes / GIB);
    } else if (bytes >= (1u << 20)) {
        snprintf(buf, size, "%.2f MiB", (double)bytes / (1u << 20));
    } else if (bytes >= 1024) {
        snprintf(buf, size, "%.2f KiB", (double)bytes / 1024);
    } else {
        snprintf(buf, size, "%" PRIu64 " byte%s", bytes, bytes == 1 ? "" : "s");
    }
}

void remat_i_share_text(uint64_t part, uint64_t whole, char *buf, size_t size) {
    const double pct = 100.0 * (double)part / (double)whole;
    if (pct < 1000) {
        snprintf(buf, size, "%.1f%%", pct);
    } else {
        snprintf(buf, size, "%.3g times the budget", pct / 100);
    }
}

void remat_i_budget_assumed(const remat_result_t *r, char *buf, size_t size) {
    buf[0] = '\0';
    if (r->config->hbm_budget || !remat_hw_is_assumed(r->hw, "hbm_limit_bytes")) {
        return;
    }
    const double share = (double)r->hw->hbm_limit_bytes / (double)r->hw->hbm_bytes;
    if (strncmp(r->hw->name, "tpu", 3) == 0) {
        snprintf(buf, size, "assumed: %.3g%% of the device's HBM", 100 * share);
    } else {
        /* a GPU's XLA takes the share of memory the client is given */
        snprintf(buf, size, "assumed: XLA_PYTHON_CLIENT_MEM_FRACTION=%.3g of the device's HBM",
                 share);
    }
}

const char *remat_i_step_name(remat_step_t s) {
    static const char *const names[] = {"forward", "fetch", "recompute", "backward"};
    return (unsigned)s < 4 ? names[s] : "?";
}

const char *remat_i_where_name(remat_where_t w) {
    static const char *const names[] = {"head_pre", "layer", "head_post"};
    return (unsigned)w < 3 ? names[w] : "?";
}

void remat_format_moment(const remat_moment_t *m, char *buf, size_t size) {
    char stage[48] = "";
    if (m->stages > 1) {
        snprintf(stage, sizeof stage, "stage %zu of %zu, ", m->stage, m->stages);
    }
    if (m->where == REMAT_AT_LAYER) {
        if (m->op) {
            snprintf(buf, size, "%slayer %zu %s, op '%s'", stage, m->layer, remat_i_step_name(m->step),
                     m->op);
        } else {
            snprintf(buf, size, "%slayer %zu %s (host-to-device copies)", stage, m->layer,
                     remat_i_step_name(m->step));
        }
    } else {
        snprintf(buf, size, "%shead %s, op '%s'", stage,
                 m->step == REMAT_STEP_FORWARD ? "forward" : "backward", m->op ? m->op : "?");
    }
}

static const char *policy_label(const remat_result_t *r) {
    return r->policy->name;
}

static void shape_text(const remat_tensor_row_t *row, const remat_tensor_t *t, char *buf,
                       size_t n) {
    size_t len = 0;
    len += (size_t)snprintf(buf, n, "[");
    for (size_t i = 0; i < t->rank && len < n; i++) {
        len += (size_t)snprintf(buf + len, n - len, "%s%" PRIu64, i ? "," : "", row->shape[i]);
    }
    if (len < n) {
        snprintf(buf + len, n - len, "]");
    }
}

/* ---- JSON --------------------------------------------------------------- */

static json_t *jint(uint64_t v) {
    /* Every byte and FLOP count is capped at 2^62 by the simulator. */
    return json_integer((json_int_t)v);
}

/* A figure that only some steps have (0: none): null when absent. */
static json_t *jint_or_null(uint64_t v) {
    return v ? jint(v) : json_null();
}

json_t *remat_i_moment_json(const remat_moment_t *m) {
    json_t *o = json_object();
    json_object_set_new(o, "stage", jint(m->stage));
    json_object_set_new(o, "step", json_string(remat_i_step_name(m->step)));
    json_object_set_new(o, "where", json_string(remat_i_where_name(m->where)));
    json_object_set_new(o, "layer", m->where == REMAT_AT_LAYER ? jint(m->layer) : json_null());
    json_object_set_new(o, "op", m->op ? json_string(m->op) : json_null());
    return o;
}

static json_t *layers_json(const remat_result_t *r) {
    json_t *a = json_array();
    for (size_t l = 0; l < r->nlayers; l++) {
        const remat_layer_row_t *row = &r->layers[l];
        json_t *o = json_object();
        json_object_set_new(o, "index", jint(row->index));
        json_object_set_new(o, "profile", jint(row->profile));
        json_object_set_new(o, "saved_device_bytes", jint(row->saved_device_bytes));
        json_object_set_new(o, "offloaded_bytes", jint(row->offloaded_bytes));
        json_object_set_new(o, "recompute_flops", jint(row->recompute_flops));
        json_object_set_new(o, "forward_flops", jint(row->forward_flops));
        json_object_set_new(o, "backward_flops", jint(row->backward_flops));
        json_object_set_new(o, "forward_seconds", json_real(row->forward_seconds));
        json_object_set_new(o, "backward_seconds", json_real(row->backward_seconds));
        json_object_set_new(o, "forward_compute_seconds", json_real(row->forward_compute_seconds));
        json_object_set_new(o, "backward_compute_seconds",
                            json_real(row->backward_compute_seconds));
        json_object_set_new(o, "recompute_seconds", json_real(row->recompute_seconds));
        json_object_set_new(o, "allgather_seconds", json_real(row->allgather_seconds));
        json_object_set_new(o, "reduce_scatter_seconds", json_real(row->reduce_scatter_seconds));
        json_object_set_new(o, "all_to_all_seconds", json_real(row->all_to_all_seconds));
        json_object_set_new(o, "act_collective_forward_seconds",
                            json_real(row->act_collective_forward_seconds));
        json_object_set_new(o, "act_collective_backward_seconds",
                            json_real(row->act_collective_backward_seconds));
        json_object_set_new(o, "d2h_seconds", json_real(row->d2h_seconds));
        json_object_set_new(o, "h2d_seconds", json_real(row->h2d_seconds));
        json_object_set_new(o, "param_fetch_seconds", json_real(row->param_fetch_seconds));
        json_array_append_new(a, o);
    }
    return a;
}

static json_t *tensors_json(const remat_result_t *r, const remat_profile_t *p) {
    json_t *a = json_array();
    const remat_block_t *b = &r->graph->kinds[p->kind].block;
    for (size_t i = 0; i < b->ntensors; i++) {
        const remat_tensor_t *t = &b->tensors[i];
        const remat_tensor_row_t *row = &p->tensors[i];
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(t->name));
        json_t *tags = json_array();
        for (size_t k = 0; k < t->ntags; k++) {
            json_array_append_new(tags, json_string(t->tags[k]));
        }
        json_object_set_new(o, "checkpoint", tags);
        json_t *shape = json_array();
        for (size_t k = 0; k < t->rank; k++) {
            json_array_append_new(shape, jint(row->shape[k]));
        }
        json_object_set_new(o, "shape", shape);
        json_object_set_new(o, "dtype", json_string(remat_dtype_name(
                                            t->dtype == REMAT_DTYPE_ACT      ? r->config->dtype
                                            : t->dtype == REMAT_DTYPE_WEIGHT ? r->config->weight_dtype
                                                                             : t->dtype)));
        json_object_set_new(o, "bytes", jint(row->bytes));
        json_object_set_new(o, "view_of",
                            t->storage != i ? json_string(b->tensors[t->storage].name)
                                            : json_null());
        json_object_set_new(o, "placement", json_string(remat_place_name(row->asked)));
        json_object_set_new(o, "fate", json_string(remat_fate_name(row->fate)));
        json_object_set_new(o, "unused", json_boolean(row->unused));
        json_object_set_new(o, "recompute_flops", jint(row->recompute_flops));
        json_array_append_new(a, o);
    }
    return a;
}

static json_t *names_json(const remat_result_t *r) {
    json_t *a = json_array();
    for (size_t i = 0; i < r->nnames; i++) {
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(r->names[i].name));
        json_object_set_new(o, "saved_bytes", jint(r->names[i].saved_bytes));
        json_object_set_new(o, "offloaded_bytes", jint(r->names[i].offloaded_bytes));
        json_object_set_new(o, "recompute_flops", jint(r->names[i].recompute_flops));
        json_array_append_new(a, o);
    }
    return a;
}

static json_t *notes_json(const remat_result_t *r);

/* Bytes per category at a peak, keyed by category name. */
static json_t *breakdown_json(const int64_t *breakdown) {
    json_t *bd = json_object();
    for (int c = 0; c < REMAT_CAT_COUNT; c++) {
        json_object_set_new(bd, remat_cat_name((remat_cat_t)c),
                            json_integer((json_int_t)breakdown[c]));
    }
    return bd;
}

/* Each layer profile's span and its per-tensor table. */
static json_t *profiles_json(const remat_result_t *r) {
    json_t *profiles = json_array();
    for (size_t p = 0; p < r->nprofiles; p++) {
        json_t *po = json_object();
        json_object_set_new(po, "kind", json_string(r->graph->kinds[r->profiles[p].kind].name));
        json_object_set_new(po, "first_layer", jint(r->profiles[p].first));
        json_object_set_new(po, "last_layer", jint(r->profiles[p].last));
        json_object_set_new(po, "layers", jint(r->profiles[p].nlayers));
        json_object_set_new(po, "tensors", tensors_json(r, &r->profiles[p]));
        json_array_append_new(profiles, po);
    }
    return profiles;
}

static json_t *stages_json(const remat_result_t *r) {
    json_t *a = json_array();
    for (size_t k = 0; k < r->nstages; k++) {
        const remat_stage_row_t *s = &r->stages[k];
        json_t *o = json_object();
        json_object_set_new(o, "index", jint(s->index));
        json_object_set_new(o, "first_layer", jint(s->first_layer));
        json_object_set_new(o, "last_layer", jint(s->last_layer));
        json_object_set_new(o, "in_flight", jint(s->in_flight));
        json_object_set_new(o, "peak_hbm_bytes", jint(s->peak_bytes));
        json_object_set_new(o, "static_bytes", jint(s->static_bytes));
        json_object_set_new(o, "inflight_bytes", jint(s->inflight_bytes));
        json_object_set_new(o, "peak_at", remat_i_moment_json(&s->peak_at));
        json_object_set_new(o, "breakdown", breakdown_json(s->breakdown));
        json_array_append_new(a, o);
    }
    return a;
}

static json_t *mesh_json(const remat_result_t *r) {
    json_t *o = json_object();
    for (int a = 0; a < REMAT_AXIS_COUNT; a++) {
        json_object_set_new(o, remat_axis_name((remat_axis_t)a), jint(r->mesh.shards[a]));
    }
    return o;
}

/* The static (per-step constant) memory: params, optimizer state, grads. */
static json_t *static_json(const remat_result_t *r) {
    json_t *st = json_object();
    json_object_set_new(st, "param_count", jint(r->param_count));
    json_object_set_new(st, "param_count_device", jint(r->param_count_device));
    json_object_set_new(st, "active_param_count", jint(r->active_param_count));
    json_object_set_new(st, "host_bytes", jint(r->host_static_bytes));
    json_object_set_new(st, "param_bytes", jint(r->param_bytes));
    json_object_set_new(st, "optimizer_bytes", jint(r->optimizer_bytes));
    json_object_set_new(st, "grad_bytes", jint(r->grad_bytes));
    json_object_set_new(st, "grad_accum_bytes", jint(r->accum_bytes));
    json_object_set_new(st, "reserve_bytes", jint(r->reserve_bytes));
    return st;
}

/* Host offload traffic, its cost and whether the host's RAM holds it. */
static json_t *offload_json(const remat_result_t *r) {
    json_t *off = json_object();
    json_object_set_new(off, "d2h_bytes", jint(r->d2h_bytes));
    json_object_set_new(off, "h2d_bytes", jint(r->h2d_bytes));
    json_object_set_new(off, "seconds", json_real(r->d2h_seconds + r->h2d_seconds));
    json_object_set_new(off, "exposed_seconds", json_real(r->exposed_seconds));
    json_object_set_new(off, "hidden", json_boolean(r->offload_hidden));
    json_object_set_new(off, "host_bytes", jint(r->host_bytes_per_host));
    json_object_set_new(off, "host_ram_bytes", jint(r->host_ram_bytes));
    json_object_set_new(off, "host_fits", json_boolean(r->host_fits));
    json_object_set_new(off, "link_bytes_per_second", json_real(r->host_link_bw));
    json_object_set_new(off, "link_assumed", json_boolean(r->host_link_assumed));
    return off;
}

static json_t *result_json(const remat_result_t *r, bool tables) {
    json_t *o = json_object();
    json_object_set_new(o, "schema", json_string("remat-result/1"));
    json_object_set_new(o, "model", json_string(r->config->model_name));
    json_object_set_new(o, "graph", json_string(r->graph->name));
    json_object_set_new(o, "hardware", json_string(r->hw->name));
    json_object_set_new(o, "remat_policy", json_string(policy_label(r)));
    json_object_set_new(o, "layers_count", jint(r->nlayers));
    json_object_set_new(o, "num_devices", jint(r->mesh.devices));
    json_object_set_new(o, "devices_per_chip", jint(r->hw->devices_per_chip));
    json_object_set_new(o, "mesh", mesh_json(r));
    json_object_set_new(o, "pipeline_microbatches", jint(r->microbatches));
    json_object_set_new(o, "pipeline_iterations", jint(r->pipeline_iterations));
    json_object_set_new(o, "remat_unit", jint(r->remat_unit));
    json_object_set_new(o, "unrolled_held_peak_bytes", jint_or_null(r->unrolled_held_peak_bytes));
    json_object_set_new(o, "unit_held_peak_bytes", jint_or_null(r->unit_held_peak_bytes));
    json_object_set_new(o, "unit_apart_partway", json_boolean(r->unit_apart_partway));
    json_object_set_new(o, "weights_streamed", json_boolean(r->weights_streamed));
    json_object_set_new(o, "worst_stage", jint(r->worst_stage));
    json_object_set_new(o, "stages", stages_json(r));
    json_object_set_new(o, "peak_hbm_bytes", jint(r->peak_bytes));
    json_object_set_new(o, "xla_expected_peak_bytes", jint(r->xla_expected_peak_bytes));
    json_object_set_new(o, "budget_bytes", jint(r->budget_bytes));
    json_object_set_new(o, "budget_source",
                        json_string(r->config->hbm_budget ? "hbm_budget" : "hbm_limit_bytes"));
    char assumed[160];
    remat_i_budget_assumed(r, assumed, sizeof assumed);
    json_object_set_new(o, "budget_assumption", assumed[0] ? json_string(assumed) : json_null());
    json_object_set_new(o, "default_run", json_boolean(r->config->default_run));
    json_object_set_new(o, "device_hbm_bytes", jint(r->hw->hbm_bytes));
    json_object_set_new(o, "chip_hbm_bytes", jint(r->hw->chip_hbm_bytes));
    json_object_set_new(o, "usable_bytes", jint(r->usable_bytes));
    json_object_set_new(o, "safety_margin", json_real(r->config->safety_margin));
    json_object_set_new(o, "fits", json_boolean(r->fits));
    json_object_set_new(o, "fits_with_margin", json_boolean(r->fits_margin));
    json_object_set_new(o, "breakdown", breakdown_json(r->breakdown));
    json_object_set_new(o, "peak_at", remat_i_moment_json(&r->peak_at));
    json_object_set_new(o, "static", static_json(r));
    json_object_set_new(o, "forward_flops", jint(r->forward_flops));
    json_object_set_new(o, "backward_flops", jint(r->backward_flops));
    json_object_set_new(o, "model_flops", jint(r->model_flops));
    json_object_set_new(o, "recompute_flops", jint(r->recompute_flops));
    json_object_set_new(o, "recompute_share", json_real(r->recompute_share));
    json_object_set_new(o, "recompute_seconds", json_real(r->recompute_seconds));
    json_object_set_new(o, "added_seconds", json_real(r->added_seconds));
    json_object_set_new(o, "step_seconds", json_real(r->step_seconds));
    json_object_set_new(o, "compute_seconds", json_real(r->compute_seconds));
    json_object_set_new(o, "mfu", json_real(r->mfu));
    json_object_set_new(o, "hfu", json_real(r->hfu));
    json_object_set_new(o, "exposed_collective_seconds", json_real(r->exposed_collective_seconds));
    json_object_set_new(o, "pipeline_bubble_fraction", json_real(r->bubble_fraction));
    json_object_set_new(o, "offload", offload_json(r));
    if (tables) {
        json_object_set_new(o, "layers", layers_json(r));
        json_t *profiles = profiles_json(r);
        json_object_set_new(o, "profiles", profiles);
        json_object_set_new(o, "tensors",
                            json_incref(json_object_get(json_array_get(profiles, 0), "tensors")));
        json_object_set_new(o, "names", names_json(r));
    }
    json_object_set_new(o, "notes", notes_json(r));
    return o;
}

void remat_i_emit_json(FILE *out, json_t *o) {
    char *s = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(REMAT_JSON_REAL_DIGITS));
    if (s) {
        fputs(s, out);
        fputc('\n', out);
        free(s);
    }
    json_decref(o);
}

/* ---- notes -------------------------------------------------------------- */

typedef remat_i_note_fn note_fn;

/* Whether rule @p i of rule set @p k (0: the policy's own, k: range k-1) is
   the first placement of its name in the policy. */
static bool first_placement_of(const remat_policy_t *p, size_t k, size_t i) {
    const char *name = (k == 0 ? p->rules : p->ranges[k - 1].rules)[i].name;
    for (size_t kk = 0; kk <= k; kk++) {
        const remat_policy_rule_t *rules = kk == 0 ? p->rules : p->ranges[kk - 1].rules;
        size_t n = kk == k ? i : (kk == 0 ? p->nrules : p->ranges[kk - 1].nrules);
        for (size_t j = 0; j < n; j++) {
            if (strcmp(rules[j].name, name) == 0) {
                return false;
            }
        }
    }
    return true;
}

/* MaxText names the policy places that the graph does not tag, each once. */
static void absent_name_notes(const remat_result_t *r, note_fn fn, void *ctx) {
    const remat_policy_t *p = r->policy;
    if (p->preset) {
        return;
    }
    char buf[512];
    for (size_t k = 0; k <= p->nranges; k++) {
        const remat_policy_rule_t *rules = k == 0 ? p->rules : p->ranges[k - 1].rules;
        size_t n = k == 0 ? p->nrules : p->ranges[k - 1].nrules;
        for (size_t i = 0; i < n; i++) {
            if (remat_policy_graph_knows(r->graph, rules[i].name) ||
                !first_placement_of(p, k, i)) {
                continue;
            }
            snprintf(buf, sizeof buf,
                     "'%s' is a MaxText checkpoint name that graph '%s' does not tag: MaxText "
                     "ignores it for this model, and so does remat",
                     rules[i].name, r->graph->name);
            fn(ctx, buf);
        }
    }
}

/* The worst stage's relaid copy of the saved inputs (the sim's
   relays_inputs), when XLA makes one: its size, since it is counted. */
static void relaid_note(const remat_result_t *r, note_fn fn, void *ctx) {
    const uint64_t relaid = r->stages[r->worst_stage].relaid_bytes;
    if (!relaid) {
        return;
    }
    char copy[32], buf[512];
    remat_format_bytes(relaid, copy, sizeof copy);
    const bool slices = remat_config_several_slices(r->config);
    snprintf(buf, sizeof buf,
             "%s: XLA lays the scan's saved %s out again for the backward, and both copies "
             "(%s more) live through the last layer's backward, which these figures count "
             "(docs/memory-model.md)",
             slices ? "several slices with data and FSDP parallelism alone"
                    : "one slice with a kept residual that meets an offloaded one",
             slices ? "layer inputs" : "stacks", copy);
    fn(ctx, buf);
}

/* Why the pass note's expected figure is what it is (remat_xla_expected_peak). */
static const char *pass_expected_why(const remat_result_t *r, uint64_t limit, uint64_t before) {
    if (r->xla_expected_peak_bytes == before) {
        return "at most this step's peak: how much the pass remakes over the usable HBM is not "
               "modelled";
    }
    if (r->xla_expected_peak_bytes == limit) {
        return "the pass's limit, where its remaking stops";
    }
    return "at most the step with each weight gathered again where its op reads it, not ahead "
           "of it: the step with fsdp_prefetch=false; what more the pass remakes over the "
           "usable HBM is not modelled";
}

/* The note on XLA:TPU's rematerialization pass, for a step it would run
   on (remat_xla_expected_peak: the step as scheduled over 95% of XLA's
   usable HBM): remat's figures are the step before the pass, XLA's the
   step after it (docs/validation.md). */
static void pass_note(const remat_result_t *r, note_fn fn, void *ctx) {
    const uint64_t limit = remat_xla_pass_limit(r->hw->hbm_limit_bytes);
    const uint64_t before = remat_result_scheduled_peak(r);
    if (r->hw->xla_gpu || before <= limit) {
        return;
    }
    char buf[768], lim[32], expected[32];
    remat_i_budget_bytes(limit, lim, sizeof lim);
    remat_i_budget_bytes(r->xla_expected_peak_bytes, expected, sizeof expected);
    snprintf(buf, sizeof buf,
             "the step is over %d%% of XLA's usable HBM (%s), where XLA:TPU's "
             "rematerialization pass starts: it makes buffers again where they are next read "
             "(gathers weights again, re-runs activations) until the step is under that or it "
             "finds nothing more to remake. XLA's figures (its memory analysis, the \"Used\" "
             "of its OOM message) are the step after that pass, expected at %s (%s); these "
             "are the step as scheduled before it (docs/validation.md)",
             REMAT_XLA_PASS_PERCENT, lim, expected,
             pass_expected_why(r, limit, before));
    fn(ctx, buf);
}

/* The notes on re-runs held together: unrolled layers' bound, and a
   scanned block's held figure when XLA takes the block apart. */
static void held_notes(const remat_result_t *r, note_fn fn, void *ctx) {
    char buf[512];
    if (r->unrolled_held_peak_bytes) {
        /* unrolled, the backward has no loop boundary to keep the layers'
           re-runs apart (docs/memory-model.md, "Unrolled layers") */
        char held[32];
        remat_format_bytes(r->unrolled_held_peak_bytes, held, sizeof held);
        snprintf(buf, sizeof buf,
                 "scan_layers=false: XLA:TPU schedules an unrolled backward freely and may make "
                 "every layer's re-run before the first backward op, holding each until its own "
                 "layer's backward: so held, the step peaks at %s, which these figures (one "
                 "layer's re-run at a time) leave out; check passes the step only if that fits "
                 "too (its compiles of such runs were refused at up to 1.9 times remat's "
                 "layer-by-layer peak; docs/memory-model.md): or scan the layers where MaxText "
                 "can (check's fix lines say)",
                 held);
        fn(ctx, buf);
    }
    if (r->unit_held_peak_bytes) {
        char held[32];
        remat_format_bytes(r->unit_held_peak_bytes, held, sizeof held);
        snprintf(buf, sizeof buf,
                 "MaxText checkpoints each scanned block of %llu layers whole, so its backward "
                 "re-runs them together: held so, the step peaks at %s, over the budget, where "
                 "XLA's own rematerialization re-runs them layer by layer, as these figures do "
                 "(XLA's peak has landed between the two; docs/memory-model.md)%s",
                 (unsigned long long)r->remat_unit, held,
                 r->unit_apart_partway
                     ? "; with the layers' inputs re-run or offloaded XLA has taken such blocks "
                       "apart in some compiles and refused others, so check calls it RISK"
                     : "");
        fn(ctx, buf);
    }
}

void remat_i_for_each_note(const remat_result_t *r, note_fn fn, void *ctx) {
    char buf[512];
    relaid_note(r, fn, ctx);
    held_notes(r, fn, ctx);
    pass_note(r, fn, ctx);
    if (r->none_as_full) {
        fn(ctx, "remat_policy none behaves as full: MaxText reads none as no policy and "
                "checkpoints every decoder layer with it, keeping only the layer's input "
                "(everything_saveable keeps every residual)");
    }
    if ((r->d2h_bytes || r->config->parameter_memory_host_offload) && r->host_link_assumed) {
        snprintf(buf, sizeof buf,
                 "host link bandwidth %.3g B/s is an assumption for %s (not published); set "
                 "host_link_bw=... to override",
                 r->host_link_bw, r->hw->name);
        fn(ctx, buf);
    }
    if ((r->d2h_bytes || r->host_static_bytes) && remat_hw_is_assumed(r->hw, "host_ram_bytes")) {
        snprintf(buf, sizeof buf, "host RAM per host for %s is an assumption", r->hw->name);
        fn(ctx, buf);
    }
    absent_name_notes(r, fn, ctx);
    for (size_t p = 0; p < r->nprofiles && r->profiles[p].tensors; p++) {
        const remat_block_t *b = remat_profile_block(r, p);
        for (size_t i = 0; i < b->ntensors; i++) {
            if (!r->profiles[p].tensors[i].unused) {
                continue;
            }
            const remat_profile_t *pr = &r->profiles[p];
            char where[96];
            if (pr->nlayers == r->nlayers) {
                snprintf(where, sizeof where, "every layer");
            } else if (pr->last - pr->first + 1 == pr->nlayers) {
                snprintf(where, sizeof where, "layers %zu-%zu", pr->first, pr->last);
            } else {
                snprintf(where, sizeof where, "%zu layers from %zu to %zu, profile %zu",
                         pr->nlayers, pr->first, pr->last, p);
            }
            if (b->tensors[i].ntags > 0) {
                snprintf(buf, sizeof buf,
                         "'%s' (%s) is placed %s but no backward op reads it: unused, JAX "
                         "drops it (%s)",
                         b->tensors[i].tags[0], b->tensors[i].name,
                         remat_place_name(pr->tensors[i].asked), where);
            } else { /* placed by the predicate, with no name */
                snprintf(buf, sizeof buf,
                         "tensor '%s' is placed %s by the policy's predicate (an einsum with no "
                         "batch dimension) but no backward op reads it: unused, JAX drops it "
                         "(%s)",
                         b->tensors[i].name, remat_place_name(pr->tensors[i].asked), where);
            }
            fn(ctx, buf);
        }
    }
}

static void note_to_json(void *ctx, const char *text) {
    json_array_append_new((json_t *)ctx, json_string(text));
}

static json_t *notes_json(const remat_result_t *r) {
    json_t *a = json_array();
    remat_i_for_each_note(r, note_to_json, a);
    return a;
}

static void note_to_text(void *ctx, const char *text) {
    fprintf((FILE *)ctx, "  - %s\n", text);
}

static void note_count(void *ctx, const char *text) {
    (void)text;
    (*(size_t *)ctx)++;
}

/* ---- analyze ------------------------------------------------------------ */

/* "128 devices (64 tpu7x chips, 2 per chip)", or "8 devices (tpu-v6e, one
   per chip)". */
static void slice_text(const remat_result_t *r, char *buf, size_t size) {
    const uint64_t d = r->mesh.devices, per = r->hw->devices_per_chip;
    const char *devices = d == 1 ? "device" : "devices";
    if (per > 1 && d % per == 0) {
        snprintf(buf, size, "%" PRIu64 " %s (%" PRIu64 " %s chip%s, %" PRIu64 " per chip)", d,
                 devices, d / per, r->hw->name, d / per == 1 ? "" : "s", per);
    } else if (per > 1) {
        snprintf(buf, size, "%" PRIu64 " %s (%s, %" PRIu64 " per chip)", d, devices,
                 r->hw->name, per);
    } else {
        snprintf(buf, size, "%" PRIu64 " %s (%s, one per chip)", d, devices, r->hw->name);
    }
}

/* Where the budget comes from, and what a chip has: the 192 GiB users
   quote for TPU7x is the chip's, two devices' worth. */
static void budget_text(const remat_result_t *r, char *buf, size_t size) {
    char dev[64], chip[64];
    remat_format_bytes(r->hw->hbm_bytes, dev, sizeof dev);
    remat_format_bytes(r->hw->chip_hbm_bytes, chip, sizeof chip);
    const char *src = r->config->hbm_budget ? "hbm_budget as set"
                                            : "XLA's usable HBM per device (its OOM limit)";
    if (r->hw->devices_per_chip > 1) {
        snprintf(buf, size, "%s; a %s device has %s, the chip %s for %" PRIu64 " devices", src,
                 r->hw->name, dev, chip, r->hw->devices_per_chip);
    } else {
        snprintf(buf, size, "%s; a %s chip (one device) has %s", src, r->hw->name, dev);
    }
}

static void header_text(FILE *out, const remat_result_t *r) {
    const remat_config_t *c = r->config;
    fprintf(out, "remat analyze: %s on %s, remat_policy=%s\n", c->model_name, r->hw->name,
            policy_label(r));
    fprintf(out, "  graph %s, %zu layers, per_device_batch_size %g, max_target_length %" PRIu64
                 ", dtype %s, weights %s, %s\n",
            r->graph->name, r->nlayers, c->per_device_batch_size, c->max_target_length,
            remat_dtype_name(c->dtype), remat_dtype_name(c->weight_dtype), c->opt_type);
    if (c->default_run) {
        fprintf(out, "  remat's default run: MaxText's llama3.1-70b recipe for tpu7x-128 "
                     "(tpu-recipes, 12.2 s a step), with the settings given on top; a "
                     "model_name replaces it\n");
    }
}

static void analyze_csv(FILE *out, const remat_result_t *r, const char *m) {
    fprintf(out, "field,value\n");
    fprintf(out, "peak_hbm_bytes,%" PRIu64 "\nbudget_bytes,%" PRIu64 "\nusable_bytes,%" PRIu64
                 "\nfits,%s\nfits_with_margin,%s\n",
            r->peak_bytes, r->budget_bytes, r->usable_bytes, r->fits ? "true" : "false",
            r->fits_margin ? "true" : "false");
    fprintf(out, "peak_at,\"%s\"\n", m);
    for (int c = 0; c < REMAT_CAT_COUNT; c++) {
        fprintf(out, "breakdown.%s,%" PRId64 "\n", remat_cat_name((remat_cat_t)c),
                r->breakdown[c]);
    }
    fprintf(out, "model_flops,%" PRIu64 "\nrecompute_flops,%" PRIu64 "\nd2h_bytes,%" PRIu64
                 "\nh2d_bytes,%" PRIu64 "\nhost_bytes,%" PRIu64 "\n",
            r->model_flops, r->recompute_flops, r->d2h_bytes, r->h2d_bytes,
            r->host_bytes_per_host);
}

static void analyze_md(FILE *out, const remat_result_t *r, const char *m) {
    char a[64], b[64];
    fprintf(out, "## %s on %s, remat_policy=%s\n\n", r->config->model_name, r->hw->name,
            policy_label(r));
    remat_format_bytes(r->peak_bytes, a, sizeof a);
    remat_format_bytes(r->budget_bytes, b, sizeof b);
    fprintf(out, "Peak HBM **%s** of %s (%s), at %s.\n\n", a, b,
            r->fits_margin ? "fits" : r->fits ? remat_result_risk_reason(r) : "does not fit", m);
    fprintf(out, "| category | bytes | GiB |\n|---|---:|---:|\n");
    for (int c = 0; c < REMAT_CAT_COUNT; c++) {
        fprintf(out, "| %s | %" PRId64 " | %.2f |\n", remat_cat_name((remat_cat_t)c),
                r->breakdown[c], (double)r->breakdown[c] / GIB);
    }
    fprintf(out, "| **total** | %" PRIu64 " | %.2f |\n", r->peak_bytes,
            (double)r->peak_bytes / GIB);
}

/* The mesh and pipeline lines under the header, when there is more than
   one device or stage. */
static void layout_text(FILE *out, const remat_result_t *r) {
    if (r->mesh.devices > 1) {
        fprintf(out, "  mesh");
        for (int x = 0; x < REMAT_AXIS_COUNT; x++) {
            if (r->mesh.shards[x] > 1) {
                fprintf(out, " %s=%" PRIu64, remat_axis_name((remat_axis_t)x), r->mesh.shards[x]);
            }
        }
        char slice[192];
        slice_text(r, slice, sizeof slice);
        fprintf(out, " over %s; every figure is per device\n", slice);
    }
    if (r->nstages > 1) {
        const remat_stage_row_t *w = &r->stages[r->worst_stage];
        fprintf(out, "  pipeline %zu stages, %" PRIu64 " micro-batches, circular: %" PRIu64
                     " iterations, each stage's layers %" PRIu64 " times, every iteration's "
                     "residuals kept to the backward; worst stage %zu (layers %zu-%zu)\n",
                r->nstages, r->microbatches, r->pipeline_iterations, r->pipeline_repeats,
                w->index, w->first_layer, w->last_layer);
    }
}

/* What is left of the budget, or how far over it the peak is, against
   check's safety margin. */
static void margin_text(FILE *out, const remat_result_t *r) {
    char left[64], keep[64], share[64];
    const double pct = 100.0 * r->config->safety_margin;
    remat_i_budget_bytes(r->budget_bytes - r->usable_bytes, keep, sizeof keep);
    if (r->peak_bytes <= r->budget_bytes) {
        remat_i_budget_bytes(r->budget_bytes - r->peak_bytes, left, sizeof left);
        remat_i_share_text(r->budget_bytes - r->peak_bytes, r->budget_bytes, share, sizeof share);
        fprintf(out, "margin       %s free (%s of the budget); check keeps %.0f%% (%s) free: %s\n",
                left, share, pct, keep, r->fits_margin ? "it passes" : "RISK");
    } else {
        remat_i_budget_bytes(r->peak_bytes - r->budget_bytes, left, sizeof left);
        remat_i_share_text(r->peak_bytes - r->budget_bytes, r->budget_bytes, share, sizeof share);
        fprintf(out, "margin       none: the peak is %s over the budget (%s of it)\n", left,
                share);
    }
}

/* The peak against the budget, where it happens and what it is made of. */
static void peak_text(FILE *out, const remat_result_t *r, const char *m) {
    char a[64], b[64], share[64], assumed[160];
    remat_i_budget_bytes(r->peak_bytes, a, sizeof a); /* one unit with the budget's */
    remat_i_budget_bytes(r->budget_bytes, b, sizeof b);
    remat_i_share_text(r->peak_bytes, r->budget_bytes, share, sizeof share);
    remat_i_budget_assumed(r, assumed, sizeof assumed);
    char risk[96];
    snprintf(risk, sizeof risk, "fits, but %s", remat_result_risk_reason(r));
    fprintf(out, "\npeak HBM     %s of %s per device%s (%s): %s\n", a, b,
            assumed[0] ? " (assumed)" : "", share,
            r->fits_margin ? "fits" : r->fits ? risk : "DOES NOT FIT");
    margin_text(out, r);
    char budget[512];
    budget_text(r, budget, sizeof budget);
    fprintf(out, "budget       %s%s%s\n", budget, assumed[0] ? "; " : "", assumed);
    fprintf(out, "peak at      %s\n", m);
    fprintf(out, "\nbreakdown at the peak          bytes        GiB\n");
    for (int c = 0; c < REMAT_CAT_COUNT; c++) {
        if (r->breakdown[c] == 0) {
            continue;
        }
        fprintf(out, "  %-18s %16" PRId64 " %10.2f\n", remat_cat_name((remat_cat_t)c),
                r->breakdown[c], (double)r->breakdown[c] / GIB);
    }
    fprintf(out, "  %-18s %16" PRIu64 " %10.2f\n", "total", r->peak_bytes,
            (double)r->peak_bytes / GIB);
}

/* Static memory, FLOPs, step time and offload traffic. */
static void costs_text(FILE *out, const remat_result_t *r) {
    fprintf(out, "\nstatic       %" PRIu64 " params in the model, %" PRIu64 " on this device; "
                 "params %.2f GiB, optimizer %.2f GiB, grads %.2f GiB\n",
            r->param_count, r->param_count_device, (double)r->param_bytes / GIB,
            (double)r->optimizer_bytes / GIB, (double)r->grad_bytes / GIB);
    if (r->active_param_count != r->param_count) {
        fprintf(out, "active       %" PRIu64 " params run per token (top-%" PRIu64
                     " of %lld experts)\n",
                r->active_param_count, r->config->num_experts_per_tok,
                (long long)r->config->num_experts);
    }
    if (r->host_static_bytes) {
        fprintf(out, "host static  %.2f GiB of params/optimizer state in host RAM per device\n",
                (double)r->host_static_bytes / GIB);
    }
    fprintf(out, "compute      model %.4e FLOPs (forward %.4e, backward %.4e) per device\n",
            (double)r->model_flops, (double)r->forward_flops, (double)r->backward_flops);
    fprintf(out, "recompute    %.4e FLOPs, %.2f%% of model FLOPs, %.4f s\n",
            (double)r->recompute_flops, 100.0 * r->recompute_share, r->recompute_seconds);
    fprintf(out, "step time    %.4f s estimated (MFU %.1f%%, HFU %.1f%%); exposed: host %.4f s, "
                 "collectives %.4f s",
            r->step_seconds, 100.0 * r->mfu, 100.0 * r->hfu, r->exposed_seconds,
            r->exposed_collective_seconds);
    if (r->nstages > 1) {
        fprintf(out, ", pipeline bubble %.1f%%", 100.0 * r->bubble_fraction);
    }
    fputc('\n', out);
    if (r->d2h_bytes) {
        fprintf(out, "offload      %.2f GiB to host and back per step, %.4f s each way at %.3g "
                     "B/s%s; exposed %.4f s (%s)\n",
                (double)r->d2h_bytes / GIB, r->d2h_seconds, r->host_link_bw,
                r->host_link_assumed ? " (assumed)" : "", r->exposed_seconds,
                r->offload_hidden ? "hidden behind compute" : "not hidden");
        fprintf(out, "host RAM     %.2f GiB per host (%" PRIu64 " chips) of %.2f GiB: %s\n",
                (double)r->host_bytes_per_host / GIB, r->hw->chips_per_host,
                (double)r->host_ram_bytes / GIB, r->host_fits ? "fits" : "DOES NOT FIT");
    } else {
        fprintf(out, "offload      none\n");
    }
}

/* The notes as a bulleted list under @p heading; nothing when there are none. */
static void notes_text(FILE *out, const remat_result_t *r, const char *heading) {
    size_t nnotes = 0;
    remat_i_for_each_note(r, note_count, &nnotes);
    if (nnotes) {
        fputs(heading, out);
        remat_i_for_each_note(r, note_to_text, out);
    }
}

void remat_report_analyze(FILE *out, const remat_result_t *r, remat_format_t fmt) {
    remat_report_analyze_with(out, r, NULL, fmt);
}

void remat_report_analyze_with(FILE *out, const remat_result_t *r,
                               const remat_fix_report_t *fx, remat_format_t fmt) {
    char m[256];
    remat_format_moment(&r->peak_at, m, sizeof m);
    if (fmt == REMAT_FMT_JSON) {
        json_t *o = result_json(r, true);
        if (fx) {
            json_object_set_new(o, "fixes", remat_i_fixes_json(fx));
        }
        remat_i_emit_json(out, o);
        return;
    }
    if (fmt == REMAT_FMT_CSV) {
        analyze_csv(out, r, m);
        return;
    }
    if (fmt == REMAT_FMT_MD) {
        analyze_md(out, r, m);
        return;
    }
    header_text(out, r);
    layout_text(out, r);
    peak_text(out, r, m);
    costs_text(out, r);
    notes_text(out, r, "\nnotes\n");
    if (fx) {
        remat_report_fixes(out, fx);
    }
}

/* ---- table -------------------------------------------------------------- */

/*
 * Every table (per layer, per tensor, per checkpoint name, per stage, and
 * compare's ranking) is one column spec drawn three ways: text (right-
 * aligned to each column's width, under a title), CSV (RFC 4180: a cell
 * holding a comma, a quote or a line break is quoted, quotes doubled) and
 * Markdown (a separator row under the header). A table's rows are written
 * by one function that fills the row's cells; the drawing is here only.
 * JSON is not drawn from the spec: it carries more fields, exact (see the
 * *_json builders above).
 */

/* A cell holds four checkpoint names and their separators, or a quoted
   moment. */
enum { CELL = REMAT_MAX_TAGS * REMAT_NAME_LEN + 8, MAX_COLS = 10 };
_Static_assert(CELL >= 192, "a moment or a shape fits a cell");

typedef struct column {
    const char *name;
    int width;   /* text: right-aligned to at least this many characters */
    bool quoted; /* CSV: always quoted (the cell is prose that may hold commas) */
} column_t;

typedef char cells_t[MAX_COLS][CELL];

typedef struct table_spec {
    const char *title; /* text only, above the header */
    const column_t *cols;
    size_t ncols, nrows;
    /* Fills row i's cells; fmt is given for separators that differ. */
    void (*row)(const void *ctx, size_t i, remat_format_t fmt, cells_t v);
} table_spec_t;

void remat_i_csv_cell(FILE *out, const char *text, bool quoted) {
    if (!quoted && !strpbrk(text, ",\"\r\n")) {
        fputs(text, out);
        return;
    }
    fputc('"', out);
    for (const char *c = text; *c; c++) {
        if (*c == '"') {
            fputc('"', out);
        }
        fputc(*c, out);
    }
    fputc('"', out);
}

/* One row; a header row is never quoted, even where its column's cells are. */
static void draw_row(FILE *out, remat_format_t fmt, const column_t *cols, size_t n,
                     const char *const *text, bool header) {
    if (fmt == REMAT_FMT_MD) {
        fputs("| ", out);
    }
    for (size_t i = 0; i < n; i++) {
        if (fmt == REMAT_FMT_CSV) {
            fputs(i ? "," : "", out);
            remat_i_csv_cell(out, text[i], cols[i].quoted && !header);
        } else if (fmt == REMAT_FMT_MD) {
            fprintf(out, "%s%s", i ? " | " : "", text[i]);
        } else {
            fprintf(out, "%s%*s", i ? " " : "", cols[i].width, text[i]);
        }
    }
    fputs(fmt == REMAT_FMT_MD ? " |\n" : "\n", out);
}

static void draw_table(FILE *out, remat_format_t fmt, const table_spec_t *t, const void *ctx) {
    assert(t->ncols <= MAX_COLS && fmt != REMAT_FMT_JSON);
    const char *text[MAX_COLS] = {0};
    if (fmt == REMAT_FMT_TEXT && t->title) {
        fprintf(out, "%s\n", t->title);
    }
    for (size_t c = 0; c < t->ncols; c++) {
        text[c] = t->cols[c].name;
    }
    draw_row(out, fmt, t->cols, t->ncols, text, true);
    if (fmt == REMAT_FMT_MD) {
        fputc('|', out);
        for (size_t c = 0; c < t->ncols; c++) {
            fputs("---|", out);
        }
        fputc('\n', out);
    }
    cells_t v;
    for (size_t c = 0; c < t->ncols; c++) {
        text[c] = v[c];
    }
    for (size_t i = 0; i < t->nrows; i++) {
        t->row(ctx, i, fmt, v);
        draw_row(out, fmt, t->cols, t->ncols, text, false);
    }
}

static const column_t layer_cols[] = {
    {"layer", 5, false},          {"profile", 7, false},        {"saved_device_bytes", 20, false},
    {"offloaded_bytes", 16, false}, {"recompute_flops", 18, false}, {"forward_flops", 18, false},
    {"backward_flops", 18, false}};

static void layer_row(const void *ctx, size_t l, remat_format_t fmt, cells_t v) {
    (void)fmt;
    const remat_layer_row_t *row = &((const remat_result_t *)ctx)->layers[l];
    snprintf(v[0], CELL, "%zu", row->index);
    snprintf(v[1], CELL, "%zu", row->profile);
    snprintf(v[2], CELL, "%" PRIu64, row->saved_device_bytes);
    snprintf(v[3], CELL, "%" PRIu64, row->offloaded_bytes);
    snprintf(v[4], CELL, "%" PRIu64, row->recompute_flops);
    snprintf(v[5], CELL, "%" PRIu64, row->forward_flops);
    snprintf(v[6], CELL, "%" PRIu64, row->backward_flops);
}

static const column_t tensor_cols[] = {
    {"profile", 7, false}, {"tensor", 20, false},   {"checkpoint", 26, false},
    {"shape", 26, true},   {"dtype", 6, false},     {"bytes", 14, false},
    {"placement", 9, false}, {"fate", 9, false},    {"unused", 6, false},
    {"recompute_flops", 16, false}};

/* The per-tensor table's rows: every profile's block's tensors. */
static size_t tensor_rows(const remat_result_t *r) {
    size_t n = 0;
    for (size_t p = 0; p < r->nprofiles; p++) {
        n += remat_profile_block(r, p)->ntensors;
    }
    return n;
}

/* Rows run over profiles, then their block's tensors. */
static void tensor_row(const void *ctx, size_t k, remat_format_t fmt, cells_t v) {
    const remat_result_t *r = ctx;
    size_t p = 0, i = k;
    while (i >= remat_profile_block(r, p)->ntensors) {
        i -= remat_profile_block(r, p++)->ntensors;
    }
    const remat_tensor_t *t = &remat_profile_block(r, p)->tensors[i];
    const remat_tensor_row_t *row = &r->profiles[p].tensors[i];
    if (r->graph->nkinds > 1) {
        snprintf(v[0], CELL, "%zu:%s", p, r->graph->kinds[r->profiles[p].kind].name);
    } else {
        snprintf(v[0], CELL, "%zu", p);
    }
    snprintf(v[1], CELL, "%s", t->name);
    v[2][0] = '\0';
    for (size_t n = 0, len = 0; n < t->ntags; n++) {
        len += (size_t)snprintf(v[2] + len, CELL - len, "%s%s",
                                n ? (fmt == REMAT_FMT_CSV ? ";" : "+") : "", t->tags[n]);
    }
    if (!t->ntags) {
        snprintf(v[2], CELL, "-");
    }
    shape_text(row, t, v[3], CELL);
    remat_dtype_t d = t->dtype == REMAT_DTYPE_ACT      ? r->config->dtype
                      : t->dtype == REMAT_DTYPE_WEIGHT ? r->config->weight_dtype
                                                       : t->dtype;
    snprintf(v[4], CELL, "%s", remat_dtype_name(d));
    snprintf(v[5], CELL, "%" PRIu64, row->bytes);
    snprintf(v[6], CELL, "%s", t->param ? "-" : remat_place_name(row->asked));
    snprintf(v[7], CELL, "%s", remat_fate_name(row->fate));
    snprintf(v[8], CELL, "%s", row->unused ? "yes" : "no");
    snprintf(v[9], CELL, "%" PRIu64, row->recompute_flops);
}

static const column_t name_cols[] = {{"checkpoint", 20, false},
                                     {"saved_bytes", 16, false},
                                     {"offloaded_bytes", 16, false},
                                     {"recompute_flops", 18, false}};

static void name_row(const void *ctx, size_t i, remat_format_t fmt, cells_t v) {
    (void)fmt;
    const remat_name_row_t *n = &((const remat_result_t *)ctx)->names[i];
    snprintf(v[0], CELL, "%s", n->name);
    snprintf(v[1], CELL, "%" PRIu64, n->saved_bytes);
    snprintf(v[2], CELL, "%" PRIu64, n->offloaded_bytes);
    snprintf(v[3], CELL, "%" PRIu64, n->recompute_flops);
}

static const column_t stage_cols[] = {
    {"stage", 5, false},           {"first_layer", 11, false},    {"last_layer", 10, false},
    {"in_flight", 9, false},       {"static_bytes", 16, false},   {"inflight_bytes", 16, false},
    {"peak_hbm_bytes", 16, false}, {"peak_at", 1, true}};

static void stage_row(const void *ctx, size_t k, remat_format_t fmt, cells_t v) {
    (void)fmt;
    const remat_stage_row_t *s = &((const remat_result_t *)ctx)->stages[k];
    snprintf(v[0], CELL, "%zu", s->index);
    snprintf(v[1], CELL, "%zu", s->first_layer);
    snprintf(v[2], CELL, "%zu", s->last_layer);
    snprintf(v[3], CELL, "%zu", s->in_flight);
    snprintf(v[4], CELL, "%" PRIu64, s->static_bytes);
    snprintf(v[5], CELL, "%" PRIu64, s->inflight_bytes);
    snprintf(v[6], CELL, "%" PRIu64, s->peak_bytes);
    remat_moment_t at = s->peak_at;
    at.stages = 1; /* the row names the stage */
    remat_format_moment(&at, v[7], CELL);
}

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static json_t *table_json(const remat_result_t *r, unsigned kinds) {
    json_t *o = json_object();
    json_object_set_new(o, "schema", json_string("remat-table/1"));
    json_object_set_new(o, "remat_policy", json_string(policy_label(r)));
    if (kinds & REMAT_TABLE_LAYERS) {
        json_object_set_new(o, "layers", layers_json(r));
    }
    if (kinds & REMAT_TABLE_TENSORS) {
        json_object_set_new(o, "profiles", profiles_json(r));
    }
    if (kinds & REMAT_TABLE_NAMES) {
        json_object_set_new(o, "names", names_json(r));
    }
    if (kinds & REMAT_TABLE_STAGES) {
        json_object_set_new(o, "stages", stages_json(r));
    }
    return o;
}

void remat_report_table(FILE *out, const remat_result_t *r, remat_format_t fmt, unsigned kinds) {
    if (fmt == REMAT_FMT_JSON) {
        remat_i_emit_json(out, table_json(r, kinds));
        return;
    }
    const table_spec_t specs[] = {
        {"per-layer (per device)", layer_cols, COUNT(layer_cols), r->nlayers, layer_row},
        {"per-tensor, one layer (per device)", tensor_cols, COUNT(tensor_cols),
         tensor_rows(r), tensor_row},
        {"per checkpoint name, all layers, one micro-batch (per device)", name_cols,
         COUNT(name_cols), r->nnames, name_row},
        {"per pipeline stage (per device)", stage_cols, COUNT(stage_cols), r->nstages, stage_row}};
    static const unsigned kind_of[] = {REMAT_TABLE_LAYERS, REMAT_TABLE_TENSORS, REMAT_TABLE_NAMES,
                                       REMAT_TABLE_STAGES};
    bool first = true;
    for (size_t k = 0; k < COUNT(specs); k++) {
        if (kinds & kind_of[k]) {
            if (!first) {
                fputc('\n', out);
            }
            draw_table(out, fmt, &specs[k], r);
            first = false;
        }
    }
}

/* ---- compare and check -------------------------------------------------- */

static const column_t compare_cols[] = {
    {"rank", 4, false},          {"remat_policy", 33, false},    {"peak_hbm_bytes", 15, false},
    {"peak_gib", 9, false},      {"of_budget", 9, false},        {"fits", 6, false},
    {"recompute_flops", 17, false}, {"offload_bytes", 14, false}, {"step_seconds", 12, false},
    {"mfu", 6, false}};

/* A compare row's fits column: the verdict, in one word. */
static const char *fits_word(remat_verdict_t v) {
    static const char *const words[] = {[REMAT_VERDICT_OOM] = "no",
                                        [REMAT_VERDICT_RISK] = "margin",
                                        [REMAT_VERDICT_HOST_OOM] = "host",
                                        [REMAT_VERDICT_OK] = "yes"};
    return words[v];
}

static void compare_row(const void *ctx, size_t i, remat_format_t fmt, cells_t v) {
    (void)fmt;
    const remat_result_t *r = ((const remat_result_t *const *)ctx)[i];
    snprintf(v[0], CELL, "%zu", i + 1);
    snprintf(v[1], CELL, "%s", policy_label(r));
    snprintf(v[2], CELL, "%" PRIu64, r->peak_bytes);
    snprintf(v[3], CELL, "%.2f", (double)r->peak_bytes / GIB);
    /* how far under or over the budget, the ranking's key once nothing fits */
    snprintf(v[4], CELL, "%.1f%%", 100.0 * (double)r->peak_bytes / (double)r->budget_bytes);
    snprintf(v[5], CELL, "%s", fits_word(remat_result_verdict(r)));
    snprintf(v[6], CELL, "%" PRIu64, r->recompute_flops);
    snprintf(v[7], CELL, "%" PRIu64, r->d2h_bytes);
    snprintf(v[8], CELL, "%.6f", r->step_seconds);
    snprintf(v[9], CELL, "%.3f", r->mfu);
}

void remat_report_compare(FILE *out, const remat_result_t *const *rs, size_t n,
                          remat_format_t fmt) {
    if (fmt == REMAT_FMT_JSON) {
        json_t *o = json_object();
        json_object_set_new(o, "schema", json_string("remat-compare/1"));
        json_t *a = json_array();
        for (size_t i = 0; i < n; i++) {
            json_t *ri = result_json(rs[i], false);
            json_object_set_new(ri, "rank", jint(i + 1));
            json_object_set_new(ri, "pass", json_boolean(remat_result_passes(rs[i])));
            json_array_append_new(a, ri);
        }
        json_object_set_new(o, "results", a);
        remat_i_emit_json(out, o);
        return;
    }
    if (fmt == REMAT_FMT_TEXT && n) {
        char b[64], assumed[160];
        remat_i_budget_bytes(rs[0]->budget_bytes, b, sizeof b);
        remat_i_budget_assumed(rs[0], assumed, sizeof assumed);
        fprintf(out, "remat compare: %s on %s, budget %s%s%s%s (margin %.0f%%); ranked: those "
                     "that pass by step time, then those inside the margin, then those over "
                     "the host's RAM, then the rest by how far over the budget\n",
                rs[0]->config->model_name, rs[0]->hw->name, b, assumed[0] ? " (" : "", assumed,
                assumed[0] ? ")" : "", 100.0 * rs[0]->config->safety_margin);
    }
    const table_spec_t spec = {NULL, compare_cols, COUNT(compare_cols), n, compare_row};
    draw_table(out, fmt, &spec, rs);
}

/* The verdict's spellings: JSON's and the check line's. */
static const struct {
    const char *json, *text;
} verdicts[] = {[REMAT_VERDICT_OOM] = {"oom", "OOM"},
                [REMAT_VERDICT_RISK] = {"risk", "RISK"},
                [REMAT_VERDICT_HOST_OOM] = {"host_oom", "HOST-OOM"},
                [REMAT_VERDICT_OK] = {"ok", "OK"}};

const char *remat_i_verdict_word(remat_verdict_t v) {
    return verdicts[v].text;
}

const char *remat_verdict_name(remat_verdict_t v) {
    return verdicts[v].json;
}

static json_t *check_json(const remat_result_t *r) {
    json_t *o = json_object();
    json_object_set_new(o, "schema", json_string("remat-check/1"));
    json_object_set_new(o, "verdict", json_string(verdicts[remat_result_verdict(r)].json));
    json_object_set_new(o, "pass", json_boolean(remat_result_passes(r)));
    json_object_set_new(o, "fits", json_boolean(r->fits));
    json_object_set_new(o, "fits_with_margin", json_boolean(r->fits_margin));
    json_object_set_new(o, "peak_hbm_bytes", jint(r->peak_bytes));
    json_object_set_new(o, "xla_expected_peak_bytes", jint(r->xla_expected_peak_bytes));
    json_object_set_new(o, "unrolled_held_peak_bytes", jint_or_null(r->unrolled_held_peak_bytes));
    json_object_set_new(o, "budget_bytes", jint(r->budget_bytes));
    json_object_set_new(o, "usable_bytes", jint(r->usable_bytes));
    json_object_set_new(o, "host_fits", json_boolean(r->host_fits));
    json_object_set_new(o, "peak_at", remat_i_moment_json(&r->peak_at));
    char assumed[160];
    remat_i_budget_assumed(r, assumed, sizeof assumed);
    json_object_set_new(o, "budget_assumption", assumed[0] ? json_string(assumed) : json_null());
    json_object_set_new(o, "notes", notes_json(r));
    return o;
}

void remat_report_check(FILE *out, const remat_result_t *r, remat_format_t fmt) {
    remat_report_check_with(out, r, NULL, fmt);
}

void remat_report_check_with(FILE *out, const remat_result_t *r, const remat_fix_report_t *fx,
                             remat_format_t fmt) {
    if (fmt == REMAT_FMT_JSON) {
        json_t *o = check_json(r);
        if (fx) {
            json_object_set_new(o, "fixes", remat_i_fixes_json(fx));
        }
        remat_i_emit_json(out, o);
        return;
    }
    char a[64], b[64], m[256], slice[192], share[64], assumed[160], paren[170] = "";
    remat_format_moment(&r->peak_at, m, sizeof m);
    remat_i_budget_bytes(r->peak_bytes, a, sizeof a);
    remat_i_budget_bytes(r->budget_bytes, b, sizeof b);
    remat_i_share_text(r->peak_bytes, r->budget_bytes, share, sizeof share);
    remat_i_budget_assumed(r, assumed, sizeof assumed);
    if (assumed[0]) {
        snprintf(paren, sizeof paren, " (%s)", assumed);
    }
    slice_text(r, slice, sizeof slice);
    remat_verdict_t v = remat_result_verdict(r);
    /* The host note also follows an OOM: both are worth fixing. */
    char risk[96];
    snprintf(risk, sizeof risk, " (%s)", remat_result_risk_reason(r));
    const char *note = v == REMAT_VERDICT_RISK ? risk
                       : !r->host_fits         ? " (offloaded bytes exceed host RAM)"
                                               : "";
    fprintf(out, "%s: %s on %s, remat_policy=%s: peak %s (%" PRIu64 " bytes) of %s per device%s, "
                 "%s%s, at %s\n",
            verdicts[v].text, r->config->model_name, slice, policy_label(r), a, r->peak_bytes, b,
            paren, share, note, m);
    if (fx) {
        remat_report_fixes(out, fx);
    }
}

/* ---- solve -------------------------------------------------------------- */

static json_t *choices_json(const remat_choice_t *c, size_t n) {
    json_t *o = json_object();
    for (size_t i = 0; i < n; i++) {
        json_object_set_new(o, c[i].name, json_string(remat_place_name(c[i].place)));
    }
    return o;
}

void remat_report_policy_file(FILE *out, const remat_choice_t *choices, size_t n,
                              const char *description) {
    json_t *o = json_object();
    json_object_set_new(o, "format", json_string("remat-policy/1"));
    json_object_set_new(o, "name", json_string("solved"));
    json_object_set_new(o, "description", json_string(description));
    json_object_set_new(o, "names", choices_json(choices, n));
    remat_i_emit_json(out, o);
}

/* The overrides a user pastes after a MaxText command line. */
static void overrides_text(const remat_choice_t *c, size_t n, char *buf, size_t size) {
    size_t len = (size_t)snprintf(buf, size, "remat_policy=custom");
    for (size_t i = 0; i < n && len < size; i++) {
        len += (size_t)snprintf(buf + len, size - len, " %s=%s", c[i].name,
                                remat_place_name(c[i].place));
    }
}

/* Index of the frontier point dominating (peak, step), or -1 when none
   does (the point is on the frontier): a point that passes when one does,
   so that nothing reads as beaten by a plan the host's RAM or the budget
   rules out. */
static long dominated_by(const remat_solution_t *s, uint64_t peak, double step) {
    long any = -1;
    for (size_t i = 0; i < s->npoints; i++) {
        const remat_point_t *p = &s->points[i];
        if (p->peak_bytes <= peak && p->step_seconds <= step &&
            (p->peak_bytes < peak || p->step_seconds < step)) {
            if (p->feasible) {
                return (long)i;
            }
            any = any < 0 ? (long)i : any;
        }
    }
    return any;
}

/* A frontier point's verdict: "fits", "HOST-OOM" (within the budget, but
   its offloads break the host's RAM), "OOM" (over the usable budget). */
static const char *point_verdict(const remat_point_t *p, bool json) {
    if (p->feasible) {
        return json ? "ok" : "fits";
    }
    if (p->fits_budget && !p->host_fits) {
        return json ? "host_oom" : "HOST-OOM";
    }
    return json ? "oom" : "OOM";
}

/* 1.23 GiB, 45.6 MiB or 789 B: three significant figures for a table. */
static void human_bytes(uint64_t b, char *buf, size_t size) {
    if (b >= (1ull << 30)) {
        snprintf(buf, size, "%.2f GiB", (double)b / GIB);
    } else if (b >= (1ull << 20)) {
        snprintf(buf, size, "%.1f MiB", (double)b / (1 << 20));
    } else if (b >= 1024) {
        snprintf(buf, size, "%.1f KiB", (double)b / 1024);
    } else {
        snprintf(buf, size, "%llu B", (unsigned long long)b);
    }
}

/* The name's row in the optimum's per-name table (bytes kept, offloaded,
   re-run FLOPs), or NULL when the plan gives it none. */
static const remat_name_row_t *name_stats(const remat_result_t *r, const char *name) {
    for (size_t i = 0; r && i < r->nnames; i++) {
        if (strcmp(r->names[i].name, name) == 0) {
            return &r->names[i];
        }
    }
    return NULL;
}

static const char *alt_reason(const remat_alternative_t *a, const remat_solution_t *s, char *buf,
                              size_t size) {
    if (!a->fits) {
        snprintf(buf, size, "peak %.2f GiB: over the usable budget", (double)a->peak_bytes / GIB);
    } else if (!a->host_fits) {
        snprintf(buf, size, "offloaded bytes exceed host RAM");
    } else if (a->step_seconds > s->best.step_seconds) {
        snprintf(buf, size, "slower by %.6f s", a->step_seconds - s->best.step_seconds);
    } else {
        snprintf(buf, size, "as fast, peak %.2f GiB (not lower)", (double)a->peak_bytes / GIB);
    }
    return buf;
}

/* Each name's placement, what it holds under the optimum, and why each
   other placement lost. */
static json_t *explain_json(const remat_solution_t *s, const remat_explain_row_t *rows,
                            const remat_result_t *best) {
    char why[160];
    json_t *ex = json_array();
    for (size_t i = 0; i < s->nnames; i++) {
        json_t *e = json_object();
        json_object_set_new(e, "name", json_string(rows[i].name));
        json_object_set_new(e, "placement", json_string(remat_place_name(rows[i].place)));
        const remat_name_row_t *ns = name_stats(best, rows[i].name);
        json_object_set_new(e, "saved_bytes", jint(ns ? ns->saved_bytes : 0));
        json_object_set_new(e, "offloaded_bytes", jint(ns ? ns->offloaded_bytes : 0));
        json_object_set_new(e, "recompute_flops", jint(ns ? ns->recompute_flops : 0));
        json_t *alts = json_array();
        for (size_t k = 0; k < rows[i].nalt; k++) {
            const remat_alternative_t *a = &rows[i].alt[k];
            json_t *ao = json_object();
            json_object_set_new(ao, "placement", json_string(remat_place_name(a->place)));
            json_object_set_new(ao, "peak_hbm_bytes", jint(a->peak_bytes));
            json_object_set_new(ao, "step_seconds", json_real(a->step_seconds));
            json_object_set_new(ao, "fits", json_boolean(a->fits));
            json_object_set_new(ao, "host_fits", json_boolean(a->host_fits));
            json_object_set_new(ao, "reason", json_string(alt_reason(a, s, why, sizeof why)));
            json_array_append_new(alts, ao);
        }
        json_object_set_new(e, "alternatives", alts);
        json_array_append_new(ex, e);
    }
    return ex;
}

static json_t *batches_json(const remat_batch_row_t *batches, size_t nbatches) {
    json_t *lb = json_array();
    for (size_t i = 0; i < nbatches; i++) {
        json_t *b = json_object();
        json_object_set_new(b, "remat_policy", json_string(batches[i].policy));
        json_object_set_new(b, "per_device_batch_size", json_real(batches[i].batch));
        json_array_append_new(lb, b);
    }
    return lb;
}

static json_t *frontier_json(const remat_solution_t *s) {
    json_t *fr = json_array();
    for (size_t i = 0; i < s->npoints; i++) {
        json_t *p = json_object();
        json_object_set_new(p, "peak_hbm_bytes", jint(s->points[i].peak_bytes));
        json_object_set_new(p, "step_seconds", json_real(s->points[i].step_seconds));
        json_object_set_new(p, "feasible", json_boolean(s->points[i].feasible));
        json_object_set_new(p, "fits_budget", json_boolean(s->points[i].fits_budget));
        json_object_set_new(p, "host_fits", json_boolean(s->points[i].host_fits));
        json_object_set_new(p, "verdict", json_string(point_verdict(&s->points[i], true)));
        json_object_set_new(p, "placement",
                            choices_json(s->choices + s->points[i].first, s->nnames));
        json_array_append_new(fr, p);
    }
    return fr;
}

/* Each preset's point, and the frontier point that dominates it (null: none). */
static json_t *presets_json(const remat_solution_t *s, const remat_result_t *const *presets,
                            size_t npresets) {
    json_t *pr = json_array();
    for (size_t i = 0; i < npresets; i++) {
        json_t *p = json_object();
        long d = dominated_by(s, presets[i]->peak_bytes, presets[i]->step_seconds);
        json_object_set_new(p, "remat_policy", json_string(presets[i]->policy->name));
        json_object_set_new(p, "peak_hbm_bytes", jint(presets[i]->peak_bytes));
        json_object_set_new(p, "step_seconds", json_real(presets[i]->step_seconds));
        json_object_set_new(p, "dominated_by", d < 0 ? json_null() : jint((uint64_t)d));
        json_object_set_new(p, "dominated_by_passing",
                            json_boolean(d >= 0 && s->points[d].feasible));
        json_array_append_new(pr, p);
    }
    return pr;
}

static json_t *solve_json(const remat_solution_t *s, const remat_explain_row_t *rows,
                          const remat_result_t *best, const remat_result_t *const *presets,
                          size_t npresets, const remat_batch_row_t *batches, size_t nbatches) {
    json_t *o = json_object();
    json_object_set_new(o, "schema", json_string("remat-solve/1"));
    json_object_set_new(o, "found", json_boolean(s->found));
    json_t *names = json_array();
    for (size_t i = 0; i < s->nnames; i++) {
        json_array_append_new(names, json_string(s->names[i]));
    }
    json_object_set_new(o, "names", names);
    json_object_set_new(o, "space", jint(s->space));
    json_object_set_new(o, "evaluated", jint(s->evaluated));
    json_object_set_new(o, "visited", jint(s->visited));
    json_object_set_new(o, "enumerated", json_boolean(s->enumerated));
    if (s->found) {
        const remat_choice_t *ch = s->choices + s->best.first;
        char line[2048];
        json_object_set_new(o, "placement", choices_json(ch, s->nnames));
        overrides_text(ch, s->nnames, line, sizeof line);
        json_object_set_new(o, "maxtext_overrides", json_string(line));
        json_object_set_new(o, "result", result_json(best, false));
    }
    if (rows) {
        json_object_set_new(o, "explain", explain_json(s, rows, best));
    }
    json_object_set_new(o, "largest_batch", batches_json(batches, nbatches));
    if (s->npoints) {
        json_t *faster = json_array(); /* points that beat the optimum but do not pass */
        for (size_t i = 0; s->found && i < s->npoints; i++) {
            if (s->points[i].peak_bytes <= s->best.peak_bytes &&
                s->points[i].step_seconds < s->best.step_seconds) {
                json_array_append_new(faster, jint(i));
            }
        }
        json_object_set_new(o, "faster_points_that_do_not_pass", faster);
        json_object_set_new(o, "frontier", frontier_json(s));
        json_object_set_new(o, "presets", presets_json(s, presets, npresets));
    }
    return o;
}

/* The optimum (or that there is none), the search's size, and the
   optimum as MaxText overrides with its notes. */
static void solve_summary_text(FILE *out, const remat_solution_t *s, const remat_result_t *best) {
    if (!s->found) {
        fprintf(out, "remat solve: no placement fits\n");
    } else {
        char b[64], u[64], assumed[160];
        remat_format_bytes(best->peak_bytes, b, sizeof b);
        remat_format_bytes(best->usable_bytes, u, sizeof u);
        remat_i_budget_assumed(best, assumed, sizeof assumed);
        fprintf(out, "remat solve: %s on %s: step %.6f s (MFU %.1f%%), peak %s of %s usable%s%s%s\n",
                best->config->model_name, best->hw->name, best->step_seconds, 100.0 * best->mfu,
                b, u, assumed[0] ? " (" : "", assumed, assumed[0] ? ")" : "");
    }
    fprintf(out, "searched %zu names, %" PRIu64 " placements, %" PRIu64
                 " analyses (distinct layer plans)%s\n",
            s->nnames, s->space, s->evaluated,
            s->enumerated ? ", every placement enumerated"
            : s->pareto   ? ", branch and bound, Pareto for the frontier"
                          : ", branch and bound");
    if (s->found) {
        char line[2048];
        overrides_text(s->choices + s->best.first, s->nnames, line, sizeof line);
        fprintf(out, "\nMaxText overrides:\n  %s\n", line);
        notes_text(out, best, "notes on this placement\n");
    }
}

static void explain_text(FILE *out, const remat_solution_t *s, const remat_explain_row_t *rows,
                         const remat_result_t *best) {
    char why[160];
    fprintf(out, "\nwhy each name got its placement (its bytes: all layers, one micro-batch)\n");
    for (size_t i = 0; i < s->nnames; i++) {
        const remat_name_row_t *ns = name_stats(best, rows[i].name);
        char bytes[64] = "", size[32];
        if (ns && ns->saved_bytes) {
            human_bytes(ns->saved_bytes, size, sizeof size);
            snprintf(bytes, sizeof bytes, "%s in HBM", size);
        } else if (ns && ns->offloaded_bytes) {
            human_bytes(ns->offloaded_bytes, size, sizeof size);
            snprintf(bytes, sizeof bytes, "%s to host", size);
        } else if (ns && ns->recompute_flops) {
            snprintf(bytes, sizeof bytes, "%.3g FLOPs re-run", (double)ns->recompute_flops);
        }
        fprintf(out, "  %-22s %-8s %-18s ", rows[i].name, remat_place_name(rows[i].place), bytes);
        for (size_t k = 0; k < rows[i].nalt; k++) {
            fprintf(out, "%s%s: %s", k ? "; " : "", remat_place_name(rows[i].alt[k].place),
                    alt_reason(&rows[i].alt[k], s, why, sizeof why));
        }
        fputc('\n', out);
    }
}

/* Where the solved placement stands against the frontier: on it, or
   beaten only by points that do not pass, which are named. */
static void solved_against_frontier(FILE *out, const remat_solution_t *s) {
    if (!s->found) {
        fprintf(out, "no placement passes: every point above is over the usable budget or the "
                     "host's RAM\n");
        return;
    }
    const remat_point_t *b = &s->best;
    char faster[256] = "";
    size_t len = 0, n = 0;
    for (size_t i = 0; i < s->npoints && len < sizeof faster; i++) {
        const remat_point_t *p = &s->points[i];
        if (p->peak_bytes <= b->peak_bytes && p->step_seconds < b->step_seconds) {
            len += (size_t)snprintf(faster + len, sizeof faster - len, "%s%zu (%s)",
                                    n++ ? ", " : "", i, point_verdict(p, false));
        }
    }
    fprintf(out, "solved       %10.2f GiB %12.6f s  ", (double)b->peak_bytes / GIB,
            b->step_seconds);
    if (n == 0) {
        fprintf(out, "on the frontier: the fastest placement that passes\n");
    } else {
        fprintf(out, "the fastest placement that passes; point%s %s %s faster at no higher "
                     "peak but do%s not pass\n",
                n > 1 ? "s" : "", faster, n > 1 ? "are" : "is", n > 1 ? "" : "es");
    }
}

static void frontier_text(FILE *out, const remat_solution_t *s,
                          const remat_result_t *const *presets, size_t npresets) {
    char line[2048];
    fprintf(out, "\nPareto frontier (peak HBM, step time) over every placement: fits, HOST-OOM "
                 "(the host's RAM cannot hold its offloads), OOM (over the usable budget)\n");
    for (size_t i = 0; i < s->npoints; i++) {
        overrides_text(s->choices + s->points[i].first, s->nnames, line, sizeof line);
        fprintf(out, "  %2zu %10.2f GiB %12.6f s %-8s %s\n", i,
                (double)s->points[i].peak_bytes / GIB, s->points[i].step_seconds,
                point_verdict(&s->points[i], false), line + strlen("remat_policy=custom "));
    }
    solved_against_frontier(out, s);
    fprintf(out, "presets against the frontier\n");
    for (size_t i = 0; i < npresets; i++) {
        long d = dominated_by(s, presets[i]->peak_bytes, presets[i]->step_seconds);
        fprintf(out, "  %-34s %10.2f GiB %12.6f s  ", presets[i]->policy->name,
                (double)presets[i]->peak_bytes / GIB, presets[i]->step_seconds);
        if (d < 0) {
            fprintf(out, "on the frontier\n");
        } else if (s->points[d].feasible) {
            fprintf(out, "dominated by point %ld\n", d);
        } else {
            fprintf(out, "dominated only by point %ld, which does not pass (%s)\n", d,
                    point_verdict(&s->points[d], false));
        }
    }
}

void remat_report_solve(FILE *out, const remat_solution_t *s, const remat_explain_row_t *rows,
                        const remat_result_t *best, const remat_result_t *const *presets,
                        size_t npresets, const remat_batch_row_t *batches, size_t nbatches,
                        remat_format_t fmt) {
    if (fmt == REMAT_FMT_JSON) {
        remat_i_emit_json(out, solve_json(s, rows, best, presets, npresets, batches, nbatches));
        return;
    }
    solve_summary_text(out, s, best);
    if (rows) {
        explain_text(out, s, rows, best);
    }
    if (nbatches) {
        fprintf(out, "\nlargest per_device_batch_size that fits\n");
        for (size_t i = 0; i < nbatches; i++) {
            fprintf(out, "  %-34s %g\n", batches[i].policy, batches[i].batch);
        }
    }
    if (s->npoints) {
        frontier_text(out, s, presets, npresets);
    }
}
