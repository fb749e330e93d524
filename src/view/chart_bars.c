/* SPDX-License-Identifier: MIT */
/*
 * chart_bars.c: the per-layer chart (bytes kept and offloaded, recompute
 * FLOPs, one bar per layer) and the policy comparison (each policy's peak
 * against its step time, the budget, the solver's Pareto frontier).
 *
 * Invariants: a bar's height is its layer row's bytes or FLOPs, scaled; a
 * policy's point is its result's step_seconds and peak_bytes; a frontier
 * point is the solution's; markers differ by shape as well as by fill;
 * policy names sit in a column beside the plot, at least a row apart, each
 * joined to its point by a leader line.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "remat/view/chart.h"
#include "view/chart_internal.h"
#include "base/util.h"

static const double GIB = 1073741824.0;

/* ---- per layer ---------------------------------------------------------- */

/* A unit for FLOPs near @p max: FLOP, GFLOP (1e9), TFLOP, PFLOP. */
static double flop_unit(double max, const char **name) {
    static const char *const names[] = {"FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP",
                                        "EFLOP"};
    size_t k = 0;
    double scale = 1;
    while (k + 1 < sizeof names / sizeof names[0] && max >= scale * 1000) {
        scale *= 1000;
        k++;
    }
    *name = names[k];
    return scale;
}

static void bar(FILE *out, double x, double y, double w, double h, const char *fill) {
    fprintf(out, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"/>\n", x, y,
            w, h > 0 ? h : 0, fill);
}

/* Layer @p l's bars in both panels and its hover strip. */
static void layer_bars(FILE *out, const remat_result_t *r, size_t l, const remat_i_frame_t *top,
                       const remat_i_frame_t *low, double fscale, const char *funit) {
    const remat_layer_row_t *row = &r->layers[l];
    const double bw = top->w / (double)r->nlayers, x = top->x + bw * (double)l + bw * 0.1;
    const double kept = (double)row->saved_device_bytes / GIB;
    const double off = (double)row->offloaded_bytes / GIB;
    char k[8], o[8], c[8];
    remat_chart_fill(0, 4, k);
    remat_chart_fill(2, 4, o);
    remat_chart_fill(1, 4, c);
    bar(out, x, remat_i_py(top, kept), bw * 0.8, remat_i_py(top, 0) - remat_i_py(top, kept), k);
    bar(out, x, remat_i_py(top, kept + off), bw * 0.8, remat_i_py(top, kept) - remat_i_py(top, kept + off),
        o);
    bar(out, x, remat_i_py(top, kept + off), bw * 0.8, remat_i_py(top, kept) - remat_i_py(top, kept + off),
        "url(#remat-layers-hatch-k)");
    const double rc = (double)row->recompute_flops / fscale;
    bar(out, x, remat_i_py(low, rc), bw * 0.8, remat_i_py(low, 0) - remat_i_py(low, rc), c);
    fprintf(out,
            "<rect class=\"remat-hover\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" "
            "fill=\"#ffffff\" fill-opacity=\"0\"><title>layer %zu (profile %zu): kept %.3f GiB, "
            "offloaded %.3f GiB, recompute %.4g %s (%.6f s)</title></rect>\n",
            top->x + bw * (double)l, top->y, bw, low->y + low->h - top->y, l, row->profile, kept,
            off, rc, funit, row->recompute_seconds);
}

void remat_chart_layers(FILE *out, const remat_result_t *r, bool embedded) {
    char title[512], ylow[96], fill[8];
    snprintf(title, sizeof title, "%s on %s, remat_policy=%s: per layer, one micro-batch",
             r->config->model_name, r->hw->name, r->policy->name);
    remat_i_svg_begin(out, "remat-layers", 1000, 600, title, embedded);
    remat_i_svg_text(out, 500, 26, "middle", "font-size=\"15\" font-weight=\"bold\"", title);
    double bmax = 0, fmax = 0;
    for (size_t l = 0; l < r->nlayers; l++) {
        const double b = (double)(r->layers[l].saved_device_bytes + r->layers[l].offloaded_bytes);
        bmax = b > bmax ? b : bmax;
        fmax = (double)r->layers[l].recompute_flops > fmax ? (double)r->layers[l].recompute_flops
                                                            : fmax;
    }
    const char *funit;
    const double fscale = flop_unit(fmax, &funit);
    const double n = r->nlayers ? (double)r->nlayers : 1;
    const remat_i_frame_t top = {78, 56, 700, 260, 0, n, 0, bmax > 0 ? bmax / GIB * 1.1 : 1};
    const remat_i_frame_t low = {78, 380, 700, 140, 0, n, 0, fmax > 0 ? fmax / fscale * 1.1 : 1};
    remat_i_axes(out, &top, "layer", "kept / offloaded (GiB)");
    snprintf(ylow, sizeof ylow, "recompute (%s)", funit);
    remat_i_axes(out, &low, "layer", ylow);
    for (size_t l = 0; l < r->nlayers; l++) {
        layer_bars(out, r, l, &top, &low, fscale, funit);
    }
    const double lx = top.x + top.w + 24;
    remat_chart_fill(0, 4, fill);
    remat_i_swatch(out, lx, top.y + 10, 0, fill, NULL, "kept in HBM");
    remat_chart_fill(2, 4, fill);
    remat_i_swatch(out, lx, top.y + 10, 1, fill, "remat-layers-hatch-k", "offloaded to host");
    remat_chart_fill(1, 4, fill);
    remat_i_swatch(out, lx, top.y + 10, 2, fill, NULL, "recompute FLOPs");
    remat_i_svg_end(out);
}

/* ---- the policies ------------------------------------------------------- */

/* A marker of the verdict's shape at (x, y): a filled circle passes, an
   open triangle is inside the margin, a diamond overfills the host, a
   cross does not fit; a point off the scale is an arrow up at the top
   edge. */
static void marker(FILE *out, double x, double y, remat_verdict_t v, bool off) {
    if (off) {
        fprintf(out,
                "<path d=\"M%.1f,%.1fl6,9h-4v7h-4v-7h-4z\" fill=\"#b22222\" "
                "stroke=\"#333333\" stroke-width=\"0.5\"/>\n",
                x, y);
        return;
    }
    switch (v) {
        case REMAT_VERDICT_OK:
            fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"#1f3a6e\"/>\n", x, y);
            break;
        case REMAT_VERDICT_RISK:
            fprintf(out,
                    "<path d=\"M%.1f,%.1fl6,10h-12z\" fill=\"#ffffff\" stroke=\"#8a5a00\" "
                    "stroke-width=\"2\"/>\n",
                    x, y - 6);
            break;
        case REMAT_VERDICT_HOST_OOM:
            fprintf(out,
                    "<path d=\"M%.1f,%.1fl6,6l-6,6l-6,-6z\" fill=\"#e8d84a\" stroke=\"#333333\"/>\n",
                    x, y - 6);
            break;
        default:
            fprintf(out,
                    "<path d=\"M%.1f,%.1fl10,10m0,-10l-10,10\" stroke=\"#b22222\" "
                    "stroke-width=\"2.5\"/>\n",
                    x - 5, y - 5);
            break;
    }
}

/* Label rows for points at pixel heights @p y (n of them): each label as
   near its point's height as it can be, at least @p gap apart, within
   [@p top, @p bottom]: a pass down pushes overlapping labels apart, a pass
   up pulls back those pushed past the bottom. @p order is filled with the
   points sorted by height. */
static void label_rows(const double *y, size_t n, double gap, double top, double bottom,
                       size_t *order, double *ly) {
    for (size_t i = 0; i < n; i++) {
        order[i] = i;
    }
    for (size_t i = 1; i < n; i++) { /* insertion sort: a stable order for equal heights */
        for (size_t k = i; k > 0 && y[order[k]] < y[order[k - 1]]; k--) {
            const size_t t = order[k];
            order[k] = order[k - 1];
            order[k - 1] = t;
        }
    }
    for (size_t i = 0; i < n; i++) {
        const double want = y[order[i]] < top ? top : y[order[i]];
        ly[i] = i && want < ly[i - 1] + gap ? ly[i - 1] + gap : want;
    }
    for (size_t i = n; i-- > 0;) {
        const double lim = i + 1 < n ? ly[i + 1] - gap : bottom;
        ly[i] = ly[i] > lim ? lim : ly[i];
    }
}

/* The frontier as the boundary of what it dominates: from each point up to
   the next one's peak, then across to its step time. */
/* A peak's height in the plot, held at the top edge when it is off the
   scale (the zoom on the budget's neighbourhood leaves far points out). */
static double clamp_py(const remat_i_frame_t *f, uint64_t peak) {
    const double y = remat_i_py(f, (double)peak / GIB);
    return y < f->y ? f->y : y;
}

static bool off_scale(const remat_i_frame_t *f, uint64_t peak) {
    return (double)peak / GIB > f->y1;
}

static void frontier_path(FILE *out, const remat_i_frame_t *f, const remat_solution_t *s) {
    fputs("<path d=\"", out);
    for (size_t i = 0; i < s->npoints; i++) {
        const double x = remat_i_px(f, s->points[i].step_seconds);
        const double y = clamp_py(f, s->points[i].peak_bytes);
        if (i == 0) {
            fprintf(out, "M%.1f,%.1f", x, y);
        } else {
            fprintf(out, "V%.1fH%.1f", y, x);
        }
    }
    fputs("\" fill=\"none\" stroke=\"#555555\" stroke-width=\"1.5\" stroke-dasharray=\"3 3\"/>\n",
          out);
    for (size_t i = 0; i < s->npoints; i++) {
        if (off_scale(f, s->points[i].peak_bytes)) {
            continue; /* the staircase leaves the plot at its top edge */
        }
        fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\" stroke=\"#555555\"/>\n",
                remat_i_px(f, s->points[i].step_seconds),
                remat_i_py(f, (double)s->points[i].peak_bytes / GIB),
                s->points[i].feasible ? "#555555" : "#ffffff");
    }
}

/* The solver's placement: a ring around its point and a label that keeps
   clear of the budget line and its labels. */
static void solved_mark(FILE *out, const remat_i_frame_t *f, const remat_result_t *r,
                        const remat_solution_t *s) {
    const double x = remat_i_px(f, s->best.step_seconds), y = clamp_py(f, s->best.peak_bytes);
    char t[160];
    snprintf(t, sizeof t, "remat solve: %.2f GiB, %.3f s", (double)s->best.peak_bytes / GIB,
             s->best.step_seconds);
    fprintf(out,
            "<circle id=\"remat-solved-marker\" cx=\"%.1f\" cy=\"%.1f\" r=\"9\" "
            "fill=\"none\" stroke=\"#1f7a1f\" stroke-width=\"2.5\"/>\n",
            x, y);
    remat_i_box_t avoid[REMAT_I_BUDGET_BOXES];
    remat_i_budget_boxes(f, r, avoid);
    /* beside the ring, on the side of the plot with room for the text */
    const bool right = x > f->x + f->w * 0.5;
    const char *anchor = right ? "end" : "start";
    const double lx = right ? x - 13 : x + 13;
    const double ys[] = {y + 4, y + 24, y - 14, y + 40, y - 30};
    double ly = ys[0];
    for (size_t k = 0; k < sizeof ys / sizeof ys[0]; k++) {
        const remat_i_box_t b = remat_i_text_box(lx, ys[k], anchor, t, true);
        bool clear = b.y0 >= f->y && b.y1 <= f->y + f->h;
        for (size_t i = 0; clear && i < REMAT_I_BUDGET_BOXES; i++) {
            clear = !remat_i_boxes_overlap(&b, &avoid[i]);
        }
        if (clear) {
            ly = ys[k];
            break;
        }
    }
    remat_i_svg_text(out, lx, ly, anchor,
                     "id=\"remat-solved-label\" font-weight=\"bold\" fill=\"#1f7a1f\"", t);
}

/* The data range of the points and the frontier, widened to whole ticks'
   room around them. */
/* The peaks the plot zooms on: those within POLICIES_ZOOM times the budget
   (the neighbourhood where a choice is made); a policy past it is drawn
   off the scale, at the top edge. */
#define POLICIES_ZOOM 1.6

/* The chart's width, and the room its column of policy names takes (the
   longest preset's name with an off-scale peak in 12 px type). */
enum { POLICIES_W = 1120, POLICIES_NAMES_W = 320 };

/* Widens [*lo, *hi] to @p v, and the shown peaks' top to @p peak when it is
   in the budget's neighbourhood (*least tracks the lowest peak). */
static void take_point(double step, uint64_t peak, double near, double *lo, double *hi,
                       double *top, double *least) {
    *lo = step < *lo ? step : *lo;
    *hi = step > *hi ? step : *hi;
    *least = (double)peak < *least ? (double)peak : *least;
    if ((double)peak <= near && (double)peak > *top) {
        *top = (double)peak;
    }
}

/* The data range of the points and the frontier, widened to whole ticks'
   room around them; the peaks zoomed on the budget's neighbourhood, or on
   the lowest peak when every one is past it. */
static remat_i_frame_t policies_frame(const remat_result_t *const *rs, size_t n,
                                      const remat_solution_t *s) {
    const double budget = (double)rs[0]->budget_bytes, near = budget * POLICIES_ZOOM;
    double x0 = INFINITY, x1 = 0, top = budget, least = INFINITY;
    for (size_t i = 0; i < n; i++) {
        take_point(rs[i]->step_seconds, rs[i]->peak_bytes, near, &x0, &x1, &top, &least);
    }
    for (size_t i = 0; s && i < s->npoints; i++) {
        take_point(s->points[i].step_seconds, s->points[i].peak_bytes, near, &x0, &x1, &top,
                   &least);
    }
    if (least > near) {
        top = least;
    }
    const double pad = x1 > x0 ? (x1 - x0) * 0.08 : (x0 > 0 ? x0 * 0.1 : 1);
    return (remat_i_frame_t){78, 56, 480, 420, x0 - pad > 0 ? x0 - pad : 0, x1 + pad, 0,
                             top / GIB * 1.1};
}

static void policies_legend(FILE *out, double x, double y, bool frontier) {
    static const struct {
        remat_verdict_t v;
        const char *name;
    } rows[] = {{REMAT_VERDICT_OK, "passes check"},
                {REMAT_VERDICT_RISK, "inside the safety margin"},
                {REMAT_VERDICT_HOST_OOM, "host RAM too small"},
                {REMAT_VERDICT_OOM, "over the budget"}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        marker(out, x + 7, y + 20.0 * (double)i + 7, rows[i].v, false);
        remat_i_svg_text(out, x + 20, y + 20.0 * (double)i + 11, "start", NULL, rows[i].name);
    }
    marker(out, x + 7, y + 80, REMAT_VERDICT_OOM, true);
    remat_i_svg_text(out, x + 20, y + 91, "start", NULL, "off the scale (peak in its label)");
    if (frontier) {
        fprintf(out,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555555\" "
                "stroke-width=\"1.5\" stroke-dasharray=\"3 3\"/>\n",
                x, y + 107, x + 14, y + 107);
        remat_i_svg_text(out, x + 20, y + 111, "start", NULL, "Pareto frontier (solver)");
        fprintf(out,
                "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"6\" fill=\"none\" stroke=\"#1f7a1f\" "
                "stroke-width=\"2.5\"/>\n",
                x + 7, y + 127);
        remat_i_svg_text(out, x + 20, y + 131, "start", NULL, "the solver's placement");
    }
}

void remat_chart_policies(FILE *out, const remat_result_t *const *rs, size_t n,
                          const remat_solution_t *frontier, const char *note, bool embedded) {
    char title[512];
    snprintf(title, sizeof title, "%s on %s: peak HBM against step time, per policy",
             n ? rs[0]->config->model_name : "", n ? rs[0]->hw->name : "");
    remat_i_svg_begin(out, "remat-policies", POLICIES_W, 560, title, embedded);
    remat_i_svg_text(out, POLICIES_W / 2.0, 26, "middle", "font-size=\"15\" font-weight=\"bold\"",
                     title);
    if (n == 0) {
        remat_i_svg_end(out);
        return;
    }
    const bool has_frontier = frontier && frontier->npoints > 0;
    const remat_i_frame_t f = policies_frame(rs, n, has_frontier ? frontier : NULL);
    remat_i_axes(out, &f, "estimated step time (s)", "peak HBM per device (GiB)");
    remat_i_budget_marks(out, "remat-policies", &f, rs[0]);
    if (has_frontier) {
        frontier_path(out, &f, frontier);
    }
    double *ys = remat_i_xcalloc(n, sizeof *ys), *ly = remat_i_xcalloc(n, sizeof *ly);
    size_t *order = remat_i_xcalloc(n, sizeof *order);
    for (size_t i = 0; i < n; i++) {
        ys[i] = clamp_py(&f, rs[i]->peak_bytes);
    }
    label_rows(ys, n, 14, f.y + 4, f.y + f.h, order, ly);
    for (size_t k = 0; k < n; k++) {
        const remat_result_t *r = rs[order[k]];
        const double x = remat_i_px(&f, r->step_seconds), y = ys[order[k]];
        fprintf(out, "<g class=\"remat-hover\"><title>");
        remat_i_xml_text(out, r->policy->name);
        fprintf(out, ": peak %.2f GiB, step %.6f s, recompute %.4g FLOPs, offload %.2f GiB</title>\n",
                (double)r->peak_bytes / GIB, r->step_seconds, (double)r->recompute_flops,
                (double)r->d2h_bytes / GIB);
        fprintf(out,
                "<path d=\"M%.1f,%.1fL%.1f,%.1fL%.1f,%.1f\" fill=\"none\" stroke=\"#999999\" "
                "stroke-width=\"0.75\"/>\n",
                x + 6, y, f.x + f.w + 6, ly[k], f.x + f.w + 12, ly[k]);
        const bool off = off_scale(&f, r->peak_bytes);
        marker(out, x, y, remat_result_verdict(r), off);
        char name[160];
        snprintf(name, sizeof name, off ? "%s (%.0f GiB, off the scale)" : "%s",
                 r->policy->name, (double)r->peak_bytes / GIB);
        /* the column of names is POLICIES_NAMES_W wide: the legend after it */
        remat_i_svg_text(out, f.x + f.w + 15, ly[k] + 4, "start", NULL, name);
        fputs("</g>\n", out);
    }
    if (has_frontier && frontier->found) {
        solved_mark(out, &f, rs[0], frontier);
    }
    free(ys);
    free(ly);
    free(order);
    policies_legend(out, f.x + f.w + 15 + POLICIES_NAMES_W, f.y + 10, has_frontier);
    if (note) {
        remat_i_svg_text(out, f.x, f.y + f.h + 56, "start", "fill=\"#555555\"", note);
    }
    remat_i_svg_end(out);
}
