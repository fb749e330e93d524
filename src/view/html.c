/* SPDX-License-Identifier: MIT */
/*
 * html.c: `remat report --html`, one self-contained page: the
 * verdict, the breakdown at the peak, the step's costs, the charts (inline
 * SVG), the per-layer, per-name and per-policy tables and the config that
 * produced them. No network: no external script, style sheet, font or
 * image; a few lines of inline script show a chart element's description
 * (its SVG <title>, also what a browser shows without the script) beside
 * the pointer.
 *
 * Invariants: every string from the inputs is escaped; every figure is a
 * field of the result, timeline or solution (bytes shown exact and in GiB);
 * the page is deterministic for the same inputs; the script marks the body
 * with data-script="ok" once it has run, and any script error in the page
 * is written into data-script-error, so that a headless browser's DOM tells
 * whether the page ran cleanly.
 */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "remat/view/chart.h"
#include "remat/view/report.h"
#include "remat/base/version.h"
#include "view/chart_internal.h"
#include "view/report_internal.h"

static const double GIB = 1073741824.0;

static void esc(FILE *out, const char *s) {
    remat_i_xml_text(out, s);
}

static const char *const page_style =
    "body{font-family:sans-serif;margin:0 auto;max-width:1040px;padding:16px;color:#1a1a1a;"
    "background:#ffffff}"
    "h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #cccccc}"
    "table{border-collapse:collapse;margin:8px 0;display:block;max-width:100%;overflow-x:auto}"
    "th,td{padding:3px 8px;border-bottom:1px solid #e2e2e2;text-align:right}"
    "th{background:#f2f2f2}td.l,th.l{text-align:left}"
    ".verdict{font-size:20px;font-weight:bold;padding:10px 14px;border-left:8px solid}"
    ".ok{border-color:#1f6f3f;background:#e6f4ea}.risk{border-color:#8a5a00;background:#fff4d6}"
    ".oom,.host-oom{border-color:#b22222;background:#fbe4e4}"
    "svg{max-width:100%;height:auto}"
    "#remat-tip{position:absolute;pointer-events:none;background:#1a1a1a;color:#ffffff;"
    "padding:6px 8px;font-size:12px;max-width:480px;border-radius:3px}"
    "details{margin:8px 0}code{background:#f2f2f2;padding:1px 4px}";

/* The script: the tooltip, and the marks a headless browser reads. */
static const char *const page_script =
    "window.addEventListener('error',function(e){document.body.setAttribute("
    "'data-script-error',String(e.message));});\n"
    "(function(){var tip=document.getElementById('remat-tip');\n"
    "var els=document.querySelectorAll('.remat-hover');\n"
    "for(var i=0;i<els.length;i++){(function(el){var t=el.querySelector('title');"
    "if(!t){return;}el.setAttribute('data-tip',t.textContent);t.parentNode.removeChild(t);\n"
    "el.addEventListener('mousemove',function(ev){tip.textContent=el.getAttribute('data-tip');"
    "tip.style.left=(ev.pageX+14)+'px';tip.style.top=(ev.pageY+14)+'px';tip.hidden=false;});\n"
    "el.addEventListener('mouseleave',function(){tip.hidden=true;});})(els[i]);}\n"
    "document.body.setAttribute('data-script','ok');})();\n";

static void head(FILE *out, const remat_result_t *r) {
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>remat: ",
          out);
    esc(out, r->config->model_name);
    fputs(" on ", out);
    esc(out, r->hw->name);
    fputs(", remat_policy=", out);
    esc(out, r->policy->name);
    fprintf(out, "</title>\n<style>%s</style>\n</head>\n<body>\n", page_style);
}

/* The verdict line and where the peak is. */
static void verdict(FILE *out, const remat_result_t *r) {
    static const char *const cls[] = {[REMAT_VERDICT_OOM] = "oom",
                                      [REMAT_VERDICT_RISK] = "risk",
                                      [REMAT_VERDICT_HOST_OOM] = "host-oom",
                                      [REMAT_VERDICT_OK] = "ok"};
    const remat_verdict_t v = remat_result_verdict(r);
    char m[256];
    remat_format_moment(&r->peak_at, m, sizeof m);
    fputs("<h1>remat report: ", out);
    esc(out, r->config->model_name);
    fputs(" on ", out);
    esc(out, r->hw->name);
    fputs(", remat_policy=", out);
    esc(out, r->policy->name);
    char peak[64], budget[64], share[64], assumed[160];
    remat_i_budget_bytes(r->peak_bytes, peak, sizeof peak);
    remat_i_budget_bytes(r->budget_bytes, budget, sizeof budget);
    remat_i_share_text(r->peak_bytes, r->budget_bytes, share, sizeof share);
    remat_i_budget_assumed(r, assumed, sizeof assumed);
    fprintf(out,
            "</h1>\n<p id=\"verdict\" class=\"verdict %s\">%s: peak %s of %s per device%s%s%s "
            "(%s)%s%s</p>\n<p id=\"peak-at\">Peak HBM <b>%" PRIu64 " bytes</b> at ",
            cls[v], remat_i_verdict_word(v), peak, budget, assumed[0] ? " (" : "", assumed,
            assumed[0] ? ")" : "", share,
            v == REMAT_VERDICT_RISK ? ", " : "",
            v == REMAT_VERDICT_RISK ? remat_result_risk_reason(r)
            : !r->host_fits         ? "; offloaded bytes exceed the host's RAM"
                                    : "",
            r->peak_bytes);
    esc(out, m);
    fprintf(out, "; usable budget %" PRIu64 " bytes (%.0f%% safety margin).</p>\n",
            r->usable_bytes, 100 * r->config->safety_margin);
}

static void breakdown(FILE *out, const remat_result_t *r) {
    fputs("<h2>Breakdown at the peak</h2>\n<table id=\"breakdown\">\n<tr><th class=\"l\">category"
          "</th><th>bytes</th><th>GiB</th><th>share</th></tr>\n",
          out);
    for (int c = 0; c < REMAT_CAT_COUNT; c++) {
        if (r->breakdown[c] == 0) {
            continue;
        }
        fprintf(out,
                "<tr><td class=\"l\">%s</td><td>%" PRId64 "</td><td>%.2f</td><td>%.1f%%</td>"
                "</tr>\n",
                remat_cat_name((remat_cat_t)c), r->breakdown[c], (double)r->breakdown[c] / GIB,
                100.0 * (double)r->breakdown[c] / (double)r->peak_bytes);
    }
    fprintf(out,
            "<tr><th class=\"l\">total</th><th>%" PRIu64 "</th><th>%.2f</th><th>100%%</th></tr>\n"
            "</table>\n",
            r->peak_bytes, (double)r->peak_bytes / GIB);
}

/* One row of the costs table; @p value is trusted text. */
static void cost_row(FILE *out, const char *name, const char *value) {
    fprintf(out, "<tr><td class=\"l\">%s</td><td class=\"l\">%s</td></tr>\n", name, value);
}

static void costs(FILE *out, const remat_result_t *r) {
    char v[256];
    fputs("<h2>The step</h2>\n<table id=\"costs\">\n", out);
    snprintf(v, sizeof v, "%.6f s estimated (MFU %.1f%%, HFU %.1f%%)", r->step_seconds,
             100 * r->mfu, 100 * r->hfu);
    cost_row(out, "step time", v);
    snprintf(v, sizeof v, "%.4e (forward %.4e, backward %.4e)", (double)r->model_flops,
             (double)r->forward_flops, (double)r->backward_flops);
    cost_row(out, "model FLOPs per device", v);
    snprintf(v, sizeof v, "%.4e FLOPs, %.2f%% of model FLOPs, %.6f s", (double)r->recompute_flops,
             100 * r->recompute_share, r->recompute_seconds);
    cost_row(out, "recompute", v);
    snprintf(v, sizeof v, "%.2f GiB each way, %.6f s each way, %.6f s exposed (%s)",
             (double)r->d2h_bytes / GIB, r->d2h_seconds, r->exposed_seconds,
             r->offload_hidden ? "hidden behind compute" : "not hidden");
    cost_row(out, "host offload per step", v);
    snprintf(v, sizeof v, "%.6f s", r->exposed_collective_seconds);
    cost_row(out, "exposed collectives", v);
    snprintf(v, sizeof v, "params %.2f GiB, optimizer %.2f GiB, grads %.2f GiB (%" PRIu64
             " params on this device, %" PRIu64 " in the model)",
             (double)r->param_bytes / GIB, (double)r->optimizer_bytes / GIB,
             (double)r->grad_bytes / GIB, r->param_count_device, r->param_count);
    cost_row(out, "static", v);
    snprintf(v, sizeof v, "%.2f GiB per host of %.2f GiB", (double)r->host_bytes_per_host / GIB,
             (double)r->host_ram_bytes / GIB);
    cost_row(out, "host RAM", v);
    fputs("</table>\n", out);
}

static void note_item(void *ctx, const char *text) {
    FILE *out = ctx;
    fputs("<li>", out);
    esc(out, text);
    fputs("</li>\n", out);
}

static void notes(FILE *out, const remat_result_t *r) {
    fputs("<h2>Notes</h2>\n<ul id=\"notes\">\n", out);
    remat_i_for_each_note(r, note_item, out);
    fputs("<li>Every figure is per JAX device; the model is described in remat's "
          "docs/memory-model.md and docs/time-model.md.</li>\n</ul>\n",
          out);
}

static void layers_table(FILE *out, const remat_result_t *r) {
    fputs("<details><summary>per-layer table</summary>\n<table id=\"layers\">\n<tr><th>layer</th>"
          "<th>profile</th><th>kept bytes</th><th>offloaded bytes</th><th>recompute FLOPs</th>"
          "<th>forward s</th><th>backward s</th></tr>\n",
          out);
    for (size_t l = 0; l < r->nlayers; l++) {
        const remat_layer_row_t *row = &r->layers[l];
        fprintf(out,
                "<tr><td>%zu</td><td>%zu</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td><td>%" PRIu64
                "</td><td>%.6f</td><td>%.6f</td></tr>\n",
                l, row->profile, row->saved_device_bytes, row->offloaded_bytes,
                row->recompute_flops, row->forward_seconds, row->backward_seconds);
    }
    fputs("</table>\n</details>\n", out);
}

static void names_table(FILE *out, const remat_result_t *r) {
    fputs("<h2>Per checkpoint name</h2>\n<table id=\"names\">\n<tr><th class=\"l\">name</th>"
          "<th>kept bytes</th><th>offloaded bytes</th><th>recompute FLOPs</th></tr>\n",
          out);
    for (size_t i = 0; i < r->nnames; i++) {
        const remat_name_row_t *n = &r->names[i];
        fputs("<tr><td class=\"l\">", out);
        esc(out, n->name);
        fprintf(out, "</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td></tr>\n",
                n->saved_bytes, n->offloaded_bytes, n->recompute_flops);
    }
    fputs("</table>\n<p>All layers, one micro-batch.</p>\n", out);
}

static void policies_table(FILE *out, const remat_result_t *const *rs, size_t n) {
    fputs("<table id=\"policies-table\">\n<tr><th>rank</th><th class=\"l\">remat_policy</th>"
          "<th>peak bytes</th><th>GiB</th><th>of budget</th><th class=\"l\">verdict</th>"
          "<th>step s</th>"
          "<th>recompute FLOPs</th><th>offload bytes</th></tr>\n",
          out);
    for (size_t i = 0; i < n; i++) {
        fprintf(out, "<tr><td>%zu</td><td class=\"l\">", i + 1);
        esc(out, rs[i]->policy->name);
        fprintf(out,
                "</td><td>%" PRIu64 "</td><td>%.2f</td><td>%.1f%%</td><td class=\"l\">%s</td>"
                "<td>%.6f</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td></tr>\n",
                rs[i]->peak_bytes, (double)rs[i]->peak_bytes / GIB,
                100.0 * (double)rs[i]->peak_bytes / (double)rs[i]->budget_bytes,
                remat_i_verdict_word(remat_result_verdict(rs[i])), rs[i]->step_seconds,
                rs[i]->recompute_flops, rs[i]->d2h_bytes);
    }
    fputs("</table>\n<p>Ranked as <code>remat compare</code> ranks: those that pass, by step "
          "time; then those inside the safety margin, by step time; then those whose offloads "
          "break the host's RAM; then those over the budget, by how far over.</p>\n",
          out);
}

/* What produced the page: the settings as given, then what they resolved to. */
static void config_section(FILE *out, const remat_html_t *in) {
    const remat_result_t *r = in->result;
    const remat_config_t *c = r->config;
    fputs("<h2>Configuration</h2>\n<p id=\"settings\">Settings as given: <code>", out);
    if (in->config_file) {
        fputs("--config ", out);
        esc(out, in->config_file);
        fputs(in->nsettings ? " " : "", out);
    }
    for (size_t i = 0; i < in->nsettings; i++) {
        fputs(i ? " " : "", out);
        esc(out, in->settings[i]);
    }
    fputs(in->nsettings || in->config_file ? "" : "(none: the defaults)", out);
    fputs("</code></p>\n<table id=\"config\">\n", out);
    const char *strs[][2] = {{"model_name", c->model_name}, {"graph", r->graph->name},
                             {"hardware", r->hw->name},     {"remat_policy", r->policy->name},
                             {"opt_type", c->opt_type},     {"dtype", remat_dtype_name(c->dtype)},
                             {"weight_dtype", remat_dtype_name(c->weight_dtype)}};
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++) {
        fprintf(out, "<tr><td class=\"l\">%s</td><td class=\"l\">", strs[i][0]);
        esc(out, strs[i][1]);
        fputs("</td></tr>\n", out);
    }
    fprintf(out,
            "<tr><td class=\"l\">per_device_batch_size</td><td class=\"l\">%g</td></tr>\n"
            "<tr><td class=\"l\">max_target_length</td><td class=\"l\">%" PRIu64 "</td></tr>\n"
            "<tr><td class=\"l\">layers</td><td class=\"l\">%zu</td></tr>\n"
            "<tr><td class=\"l\">devices</td><td class=\"l\">%" PRIu64 "</td></tr>\n"
            "<tr><td class=\"l\">pipeline stages</td><td class=\"l\">%zu</td></tr>\n"
            "<tr><td class=\"l\">gradient_accumulation_steps</td><td class=\"l\">%" PRIu64
            "</td></tr>\n</table>\n",
            c->per_device_batch_size, c->max_target_length, r->nlayers, r->mesh.devices,
            r->nstages, c->gradient_accumulation_steps);
}

/* The fragment's style: the page's rules that its parts use, each under
   .remat-summary, so that a notebook's own page keeps its look. */
static const char *const summary_style =
    ".remat-summary{font-family:sans-serif;color:#1a1a1a;max-width:1040px}"
    ".remat-summary h1{font-size:18px}.remat-summary h2{font-size:16px;margin-top:16px;"
    "border-bottom:1px solid #cccccc}"
    ".remat-summary table{border-collapse:collapse;margin:8px 0}"
    ".remat-summary th,.remat-summary td{padding:3px 8px;border-bottom:1px solid #e2e2e2;"
    "text-align:right}.remat-summary th{background:#f2f2f2}"
    ".remat-summary td.l,.remat-summary th.l{text-align:left}"
    ".remat-summary .verdict{font-size:16px;font-weight:bold;padding:8px 12px;"
    "border-left:8px solid}"
    ".remat-summary .ok{border-color:#1f6f3f;background:#e6f4ea}"
    ".remat-summary .risk{border-color:#8a5a00;background:#fff4d6}"
    ".remat-summary .oom,.remat-summary .host-oom{border-color:#b22222;background:#fbe4e4}"
    ".remat-summary svg{max-width:100%;height:auto}";

void remat_report_html_summary(FILE *out, const remat_result_t *r, const remat_timeline_t *tl) {
    assert(r && tl);
    fprintf(out, "<div class=\"remat-summary\">\n<style>%s</style>\n", summary_style);
    verdict(out, r);
    breakdown(out, r);
    costs(out, r);
    fputs("<h2>Live HBM over the step</h2>\n<div class=\"remat-timeline\">\n", out);
    remat_chart_timeline(out, r, tl, true);
    fputs("</div>\n</div>\n", out);
}

void remat_report_html(FILE *out, const remat_html_t *in) {
    const remat_result_t *r = in->result;
    head(out, r);
    verdict(out, r);
    breakdown(out, r);
    costs(out, r);
    fputs("<h2>Live HBM over the step</h2>\n<div id=\"timeline\">\n", out);
    remat_chart_timeline(out, r, in->timeline, true);
    fputs("</div>\n<p>Hover the chart for the op at each moment and its bytes by category "
          "(<code>remat timeline</code> lists every event).</p>\n<h2>Per layer</h2>\n"
          "<div id=\"layers-chart\">\n",
          out);
    remat_chart_layers(out, r, true);
    fputs("</div>\n", out);
    layers_table(out, r);
    names_table(out, r);
    if (in->npresets) {
        fputs("<h2>Policies</h2>\n<div id=\"policies\">\n", out);
        remat_chart_policies(out, in->presets, in->npresets, in->frontier, in->frontier_note,
                             true);
        fputs("</div>\n", out);
        policies_table(out, in->presets, in->npresets);
    }
    notes(out, r);
    config_section(out, in);
    fprintf(out,
            "<p><small>Written by remat %s.</small></p>\n<div id=\"remat-tip\" hidden></div>\n"
            "<script>\n%s</script>\n</body>\n</html>\n",
            REMAT_VERSION_STRING, page_script);
}
