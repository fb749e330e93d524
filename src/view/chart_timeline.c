/* SPDX-License-Identifier: MIT */
/*
 * chart_timeline.c: the stacked memory timeline (remat_chart_timeline):
 * each pixel column shows the highest event of the timeline that falls in
 * it, its categories stacked in a fixed order, under the budget line and
 * the safety-margin band, with the peak marked and labelled.
 *
 * Invariants: the peak event is drawn (a column keeps its highest event,
 * so the peak's column shows it, and its marker sits at its bytes); the
 * bands of a column sum to that event's live bytes; a column no event
 * reaches holds the previous column's event (memory between measures is
 * shown as it was last measured).
 */
#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "remat/view/chart.h"
#include "remat/view/report.h"
#include "view/chart_internal.h"
#include "view/report_internal.h"
#include "base/util.h"

static const double GIB = 1073741824.0;

/* ---- the memory timeline ------------------------------------------------ */

enum { TL_W = 1000, TL_H = 560, TL_COLS = REMAT_I_TL_COLS };

/* The stack's order, bottom to top: the step's static state first, then
   what the layers keep, then the working sets. */
static const remat_cat_t stack_order[REMAT_CAT_COUNT] = {
    REMAT_CAT_PARAMS,      REMAT_CAT_OPTIMIZER,   REMAT_CAT_GRAD_ACCUM, REMAT_CAT_GRADS,
    REMAT_CAT_SCAN_WEIGHTS, REMAT_CAT_INFLIGHT,    REMAT_CAT_SAVED,       REMAT_CAT_HEAD,       REMAT_CAT_ACTIVATIONS,
    REMAT_CAT_RECOMPUTE,   REMAT_CAT_FETCHED,     REMAT_CAT_ACT_GRADS,  REMAT_CAT_GATHERED,
    REMAT_CAT_GRAD_BUFFER, REMAT_CAT_KV_GATHER,   REMAT_CAT_RESERVE};

size_t remat_i_used_cats(const remat_timeline_t *tl, remat_cat_t *cats) {
    size_t n = 0;
    for (size_t k = 0; k < REMAT_CAT_COUNT; k++) {
        const remat_cat_t c = stack_order[k];
        bool used = false;
        for (size_t i = 0; i < tl->nevents && !used; i++) {
            used = tl->events[i].bytes[c] > 0;
        }
        if (used) {
            cats[n++] = c;
        }
    }
    return n;
}

/* The column of @p ncols over [0, @p T] that time @p t falls in. */
size_t remat_i_column_of(double t, double T, size_t ncols) {
    double c = T > 0 ? floor(t / T * (double)ncols) : 0;
    return c < 0 ? 0 : c >= (double)ncols ? ncols - 1 : (size_t)c;
}

static size_t col_of(double t, double T) {
    return remat_i_column_of(t, T, TL_COLS);
}

/* For each pixel column, the highest event that falls in it (an event
   that takes no time falls in its start's); a column no event reaches
   holds the previous one's. */
void remat_i_timeline_columns(const remat_timeline_t *tl, size_t *best, size_t ncols) {
    assert(ncols > 0 && tl->nevents > 0);
    for (size_t c = 0; c < ncols; c++) {
        best[c] = REMAT_NONE;
    }
    for (size_t i = 0; i < tl->nevents; i++) {
        const remat_event_t *e = &tl->events[i];
        size_t c0 = remat_i_column_of(e->start_seconds, tl->seconds, ncols), c1 = c0;
        if (e->end_seconds > e->start_seconds) {
            c1 = remat_i_column_of(e->end_seconds - (e->end_seconds - e->start_seconds) * 1e-9,
                                   tl->seconds, ncols);
        }
        for (size_t c = c0; c <= c1; c++) {
            if (best[c] == REMAT_NONE || e->live_bytes > tl->events[best[c]].live_bytes) {
                best[c] = i;
            }
        }
    }
    for (size_t c = 0; c < ncols; c++) {
        if (best[c] == REMAT_NONE) {
            best[c] = c ? best[c - 1] : 0;
        }
    }
}

/* One band: the area between the stack below category @p k and its top,
   as a step path over the columns (a point only where the height
   changes). */
static void band(FILE *out, const remat_i_frame_t *f, const remat_timeline_t *tl, const size_t *best,
                 const remat_cat_t *cats, size_t k, const char *fill, const char *hatch) {
    double lo[TL_COLS], hi[TL_COLS];
    for (size_t c = 0; c < TL_COLS; c++) {
        const int64_t *b = tl->events[best[c]].bytes;
        double below = 0;
        for (size_t j = 0; j < k; j++) {
            below += b[cats[j]] > 0 ? (double)b[cats[j]] : 0;
        }
        lo[c] = below / GIB;
        hi[c] = (below + (b[cats[k]] > 0 ? (double)b[cats[k]] : 0)) / GIB;
    }
    const double cw = f->w / TL_COLS;
    for (int pass = 0; pass < (hatch ? 2 : 1); pass++) {
        fprintf(out, "<path d=\"M%.1f,%.1f", f->x, remat_i_py(f, hi[0]));
        for (size_t c = 0; c < TL_COLS; c++) {
            if (c && hi[c] != hi[c - 1]) {
                fprintf(out, "H%.1fV%.1f", f->x + cw * (double)c, remat_i_py(f, hi[c]));
            }
        }
        fprintf(out, "H%.1fV%.1f", f->x + f->w, remat_i_py(f, lo[TL_COLS - 1]));
        for (size_t c = TL_COLS; c-- > 0;) {
            if (c && lo[c] != lo[c - 1]) {
                fprintf(out, "H%.1fV%.1f", f->x + cw * (double)c, remat_i_py(f, lo[c - 1]));
            }
        }
        fprintf(out, "H%.1fZ\" fill=\"%s\"/>\n", f->x, pass ? hatch : fill);
    }
}

/* "head backward, op 'logits'" for an event. */
void remat_i_event_text(const remat_event_t *e, size_t nstages, char *buf, size_t size) {
    const remat_moment_t m = {.step = e->step,
                              .where = e->where,
                              .layer = e->layer,
                              .stage = e->stage,
                              .stages = nstages,
                              .op = e->op};
    remat_format_moment(&m, buf, size);
}

/* Transparent strips over runs of columns showing one event, each with
   the event as its <title>: what a pointer over the chart shows. */
static void hover_strips(FILE *out, const remat_i_frame_t *f, const remat_timeline_t *tl,
                         const size_t *best, const remat_cat_t *cats, size_t ncats) {
    const double cw = f->w / TL_COLS;
    for (size_t c = 0; c < TL_COLS;) {
        size_t d = c + 1;
        while (d < TL_COLS && best[d] == best[c]) {
            d++;
        }
        const remat_event_t *e = &tl->events[best[c]];
        char m[256];
        remat_i_event_text(e, tl->nstages, m, sizeof m);
        fprintf(out,
                "<rect class=\"remat-hover\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                "height=\"%.1f\" fill=\"#ffffff\" fill-opacity=\"0\"><title>",
                f->x + cw * (double)c, f->y, cw * (double)(d - c), f->h);
        remat_i_xml_text(out, m);
        fprintf(out, " at %.6f s: %.2f GiB live", e->start_seconds, (double)e->live_bytes / GIB);
        for (size_t k = ncats; k-- > 0;) {
            if (e->bytes[cats[k]] > 0) {
                fprintf(out, "; %s %.2f", remat_cat_name(cats[k]),
                        (double)e->bytes[cats[k]] / GIB);
            }
        }
        fputs("</title></rect>\n", out);
        c = d;
    }
}

/* Where the peak's label goes: beside the marker above it, else below it,
   else above or below the budget line's labels, on the side with room; the
   first place whose box crosses neither the budget line nor its labels nor
   the marker and stays in the plot (the first one when none does). */
static void peak_label_place(const remat_i_frame_t *f, const remat_result_t *r, double x,
                             double y, const char *text, double *lx, double *ly,
                             const char **anchor) {
    remat_i_box_t avoid[REMAT_I_BUDGET_BOXES + 1];
    remat_i_budget_boxes(f, r, avoid);
    avoid[REMAT_I_BUDGET_BOXES] = (remat_i_box_t){x - 7, y - 7, x + 7, y + 7};
    const double line = avoid[0].y0 + 1.5;
    const bool right = x > f->x + f->w * 0.55;
    const double ys[] = {y - 9, y + 21, line - 22, line + 18, avoid[1].y0 - 6};
    *anchor = right ? "end" : "start";
    *lx = right ? x - 9 : x + 9;
    *ly = ys[0];
    for (size_t k = 0; k < sizeof ys / sizeof ys[0]; k++) {
        const remat_i_box_t b = remat_i_text_box(*lx, ys[k], *anchor, text, true);
        bool clear = b.y0 >= f->y && b.y1 <= f->y + f->h;
        for (size_t i = 0; clear && i < REMAT_I_BUDGET_BOXES + 1; i++) {
            clear = !remat_i_boxes_overlap(&b, &avoid[i]);
        }
        if (clear) {
            *ly = ys[k];
            return;
        }
    }
}

/* The peak's marker and its label: bytes, time and moment. */
static void peak_mark(FILE *out, const remat_i_frame_t *f, const remat_result_t *r,
                      const remat_timeline_t *tl) {
    const remat_event_t *e = &tl->events[tl->peak];
    const double x = f->x + f->w / TL_COLS * ((double)col_of(e->start_seconds, tl->seconds) + 0.5);
    const double y = remat_i_py(f, (double)tl->peak_bytes / GIB);
    char m[256], t[400];
    remat_i_event_text(e, tl->nstages, m, sizeof m);
    snprintf(t, sizeof t, "peak %.2f GiB at %.4f s: %s", (double)tl->peak_bytes / GIB,
             e->start_seconds, m);
    fprintf(out,
            "<circle id=\"remat-peak-marker\" cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"#ffffff\" "
            "stroke=\"#000000\" stroke-width=\"2\"/>\n",
            x, y);
    double lx, ly;
    const char *anchor;
    peak_label_place(f, r, x, y, t, &lx, &ly, &anchor);
    remat_i_svg_text(out, lx, ly, anchor, "id=\"remat-peak-label\" font-weight=\"bold\"", t);
}

static void timeline_legend(FILE *out, const char *id, double x, double y,
                            const remat_cat_t *cats, size_t n) {
    char fill[8], hatch[64];
    remat_i_svg_text(out, x, y - 8, "start", "font-weight=\"bold\"", "live bytes by category");
    for (size_t k = n; k-- > 0;) {
        remat_chart_fill(k, n, fill);
        snprintf(hatch, sizeof hatch, "%s-hatch-%c", id, remat_i_dark_fill(k, n) ? 'w' : 'k');
        remat_i_swatch(out, x, y, n - 1 - k, fill, k % 2 ? hatch : NULL, remat_cat_name(cats[k]));
    }
    snprintf(hatch, sizeof hatch, "%s-margin", id);
    remat_i_swatch(out, x, y + 10, n, "#ffffff", hatch, "safety margin");
    fprintf(out,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#b22222\" "
            "stroke-width=\"2\" stroke-dasharray=\"8 4\"/>\n",
            x, y + 17 + 20.0 * (double)(n + 1), x + 14, y + 17 + 20.0 * (double)(n + 1));
    remat_i_svg_text(out, x + 20, y + 21 + 20.0 * (double)(n + 1), "start", NULL, "budget");
}

void remat_chart_timeline(FILE *out, const remat_result_t *r, const remat_timeline_t *tl,
                          bool embedded) {
    const char *id = "remat-timeline";
    char title[512], fill[8], hatch[64];
    snprintf(title, sizeof title, "%s on %s, remat_policy=%s: live HBM over one step (stage %zu of %zu)",
             r->config->model_name, r->hw->name, r->policy->name, tl->stage, tl->nstages);
    remat_i_svg_begin(out, id, TL_W, TL_H, title, embedded);
    remat_i_svg_text(out, TL_W / 2.0, 26, "middle", "font-size=\"15\" font-weight=\"bold\"", title);
    if (tl->nevents == 0) {
        remat_i_svg_end(out);
        return;
    }
    const double top = (double)(tl->peak_bytes > r->budget_bytes ? tl->peak_bytes : r->budget_bytes);
    const remat_i_frame_t f = {78, 56, TL_COLS, 420, 0, tl->seconds > 0 ? tl->seconds : 1, 0,
                       top / GIB * 1.1};
    size_t *best = remat_i_xcalloc(TL_COLS, sizeof *best);
    remat_i_timeline_columns(tl, best, TL_COLS);
    remat_cat_t cats[REMAT_CAT_COUNT];
    const size_t n = remat_i_used_cats(tl, cats);
    remat_i_axes(out, &f, "time in the step (s), one micro-batch", "live HBM per device (GiB)");
    for (size_t k = 0; k < n; k++) {
        remat_chart_fill(k, n, fill);
        snprintf(hatch, sizeof hatch, "url(#%s-hatch-%c)", id, remat_i_dark_fill(k, n) ? 'w' : 'k');
        band(out, &f, tl, best, cats, k, fill, k % 2 ? hatch : NULL);
    }
    remat_i_budget_marks(out, id, &f, r);
    hover_strips(out, &f, tl, best, cats, n);
    peak_mark(out, &f, r, tl);
    timeline_legend(out, id, f.x + f.w + 24, f.y + 10, cats, n);
    free(best);
    remat_i_svg_end(out);
}
