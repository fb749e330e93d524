/* SPDX-License-Identifier: MIT */
/*
 * chart_svg.c: what the SVG charts of remat/view/chart.h share, written by
 * hand: the fill ramp, escaping, the root element and its patterns, frames,
 * axes with round ticks, legend swatches and the budget marks.
 *
 * Invariants:
 *  - every text node and attribute value that comes from the inputs (model,
 *    op and policy names) is XML-escaped, so the output is well-formed;
 *  - every figure drawn is the input's, scaled for display (bytes to GiB,
 *    FLOPs to a power of 1000) and placed; nothing is estimated here;
 *  - ids carry the chart's prefix, so charts can share an HTML page;
 *  - a band's fill lightness rises with its place in the stack (tested), and
 *    every other band is hatched.
 */
#include "remat/view/chart.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "view/chart_internal.h"
#include "view/report_internal.h"
#include "base/util.h"

static const double GIB = 1073741824.0;

bool remat_chart_kind_parse(const char *s, remat_chart_kind_t *out) {
    static const char *const names[] = {"timeline", "layers", "policies"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strcmp(s, names[i]) == 0) {
            *out = (remat_chart_kind_t)i;
            return true;
        }
    }
    return false;
}

/* ---- colour ------------------------------------------------------------- */

/* Anchors of the fill ramp, dark to light: their relative luminance rises
   strictly (test_chart checks the interpolated fills too). */
static const unsigned char ramp[][3] = {{0x1f, 0x1d, 0x4e}, {0x2b, 0x3f, 0x8c}, {0x1f, 0x6f, 0x9f},
                                        {0x1d, 0x93, 0x8f}, {0x4d, 0xb0, 0x6a}, {0xa6, 0xc8, 0x3c},
                                        {0xe8, 0xd8, 0x4a}, {0xfb, 0xf1, 0xb0}};
enum { NRAMP = sizeof ramp / sizeof ramp[0] };

void remat_chart_fill(size_t i, size_t n, char buf[8]) {
    const double t = n > 1 ? (double)i / (double)(n - 1) * (NRAMP - 1) : 0;
    size_t k = (size_t)t;
    if (k >= NRAMP - 1) {
        k = NRAMP - 2;
    }
    const double f = t - (double)k;
    unsigned rgb[3];
    for (int c = 0; c < 3; c++) {
        rgb[c] = (unsigned)lround(ramp[k][c] + f * (ramp[k + 1][c] - ramp[k][c]));
    }
    snprintf(buf, 8, "#%02x%02x%02x", rgb[0] & 0xff, rgb[1] & 0xff, rgb[2] & 0xff);
}

bool remat_i_dark_fill(size_t i, size_t n) {
    return n <= 1 || (double)i / (double)(n - 1) < 0.5;
}

/* ---- SVG primitives ----------------------------------------------------- */

void remat_i_xml_text(FILE *out, const char *s) {
    for (; s && *s; s++) {
        switch (*s) {
            case '&':
                fputs("&amp;", out);
                break;
            case '<':
                fputs("&lt;", out);
                break;
            case '>':
                fputs("&gt;", out);
                break;
            case '"':
                fputs("&quot;", out);
                break;
            case '\'':
                fputs("&#39;", out);
                break;
            default:
                fputc(*s, out);
        }
    }
}

/* The root element, its title and the patterns every chart uses, under
   the id prefix @p id. */
void remat_i_svg_begin(FILE *out, const char *id, int w, int h, const char *title,
                      bool embedded) {
    if (!embedded) {
        fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", out);
    }
    fprintf(out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"%s\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\" role=\"img\" "
            "aria-labelledby=\"%s-title\">\n<title id=\"%s-title\">",
            id, w, h, w, h, id, id);
    remat_i_xml_text(out, title);
    fprintf(out, "</title>\n<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", w, h);
    fprintf(out,
            "<defs>\n"
            "<pattern id=\"%s-hatch-w\" patternUnits=\"userSpaceOnUse\" width=\"6\" height=\"6\" "
            "patternTransform=\"rotate(45)\"><rect width=\"2\" height=\"6\" fill=\"#ffffff\" "
            "fill-opacity=\"0.3\"/></pattern>\n"
            "<pattern id=\"%s-hatch-k\" patternUnits=\"userSpaceOnUse\" width=\"6\" height=\"6\" "
            "patternTransform=\"rotate(45)\"><rect width=\"2\" height=\"6\" fill=\"#000000\" "
            "fill-opacity=\"0.25\"/></pattern>\n"
            "<pattern id=\"%s-margin\" patternUnits=\"userSpaceOnUse\" width=\"8\" height=\"8\" "
            "patternTransform=\"rotate(-45)\"><rect width=\"8\" height=\"8\" fill=\"#f3d0d0\"/>"
            "<rect width=\"2\" height=\"8\" fill=\"#b22222\"/></pattern>\n"
            "</defs>\n",
            id, id, id);
}

void remat_i_svg_end(FILE *out) {
    fputs("</svg>\n", out);
}

/* Text at (x, y), escaped; @p anchor "start", "middle" or "end". */
void remat_i_svg_text(FILE *out, double x, double y, const char *anchor, const char *attrs,
                      const char *text) {
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\"%s%s>", x, y, anchor,
            attrs ? " " : "", attrs ? attrs : "");
    remat_i_xml_text(out, text);
    fputs("</text>\n", out);
}

double remat_i_px(const remat_i_frame_t *f, double v) {
    return f->x + (v - f->x0) / (f->x1 - f->x0) * f->w;
}

double remat_i_py(const remat_i_frame_t *f, double v) {
    return f->y + f->h - (v - f->y0) / (f->y1 - f->y0) * f->h;
}

/* A round step (1, 2, 2.5 or 5 times a power of ten) giving about
   @p target ticks over @p range. */
static double nice_step(double range, int target) {
    if (!(range > 0)) {
        return 1;
    }
    const double raw = range / target, mag = pow(10, floor(log10(raw))), r = raw / mag;
    return (r <= 1 ? 1 : r <= 2 ? 2 : r <= 2.5 ? 2.5 : r <= 5 ? 5 : 10) * mag;
}

/* Decimals that print every multiple of @p step exactly enough. */
static int step_decimals(double step) {
    int d = 0;
    while (d < 9 && fabs(step * pow(10, d) - round(step * pow(10, d))) > 1e-6) {
        d++;
    }
    return d;
}

/* Grid lines and tick labels on both axes, and their titles. */
void remat_i_axes(FILE *out, const remat_i_frame_t *f, const char *xlabel, const char *ylabel) {
    const double xs = nice_step(f->x1 - f->x0, 8), ys = nice_step(f->y1 - f->y0, 6);
    const int xd = step_decimals(xs), yd = step_decimals(ys);
    char t[64];
    for (double v = ceil(f->y0 / ys) * ys; v <= f->y1 + ys * 1e-9; v += ys) {
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#dddddd\"/>\n",
                f->x, remat_i_py(f, v), f->x + f->w, remat_i_py(f, v));
        snprintf(t, sizeof t, "%.*f", yd, v);
        remat_i_svg_text(out, f->x - 6, remat_i_py(f, v) + 4, "end", NULL, t);
    }
    for (double v = ceil(f->x0 / xs) * xs; v <= f->x1 + xs * 1e-9; v += xs) {
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555555\"/>\n",
                remat_i_px(f, v), f->y + f->h, remat_i_px(f, v), f->y + f->h + 4);
        snprintf(t, sizeof t, "%.*f", xd, v);
        remat_i_svg_text(out, remat_i_px(f, v), f->y + f->h + 17, "middle", NULL, t);
    }
    fprintf(out,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
            "stroke=\"#555555\"/>\n",
            f->x, f->y, f->w, f->h);
    remat_i_svg_text(out, f->x + f->w / 2, f->y + f->h + 36, "middle", NULL, xlabel);
    fprintf(out, "<text transform=\"translate(%.1f,%.1f) rotate(-90)\" text-anchor=\"middle\">",
            f->x - 52, f->y + f->h / 2);
    remat_i_xml_text(out, ylabel);
    fputs("</text>\n", out);
}

/* A legend swatch (fill, and the hatch over it when @p hatch is not NULL)
   with its name, at row @p row of the legend at (@p x, @p y). */
void remat_i_swatch(FILE *out, double x, double y, size_t row, const char *fill, const char *hatch,
                   const char *name) {
    const double ry = y + 20.0 * (double)row;
    fprintf(out,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"14\" fill=\"%s\" "
            "stroke=\"#333333\" stroke-width=\"0.5\"/>\n",
            x, ry, fill);
    if (hatch) {
        fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"14\" fill=\"url(#%s)\"/>\n",
                x, ry, hatch);
    }
    remat_i_svg_text(out, x + 20, ry + 11, "start", NULL, name);
}

remat_i_box_t remat_i_text_box(double x, double y, const char *anchor, const char *text,
                               bool bold) {
    /* UTF-8 continuation bytes are not characters */
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        n += (*p & 0xc0) != 0x80;
    }
    const double w = (double)n * 12.0 * (bold ? 0.66 : 0.62);
    const double x0 = strcmp(anchor, "end") == 0      ? x - w
                      : strcmp(anchor, "middle") == 0 ? x - w / 2
                                                      : x;
    return (remat_i_box_t){x0, y - 12.0 * 0.9, x0 + w, y + 12.0 * 0.25};
}

bool remat_i_boxes_overlap(const remat_i_box_t *a, const remat_i_box_t *b) {
    return a->x0 < b->x1 && b->x0 < a->x1 && a->y0 < b->y1 && b->y0 < a->y1;
}

/* The budget labels' texts and places (one spelling for drawing them and
   for the boxes others avoid). */
static void budget_labels(const remat_i_frame_t *f, const remat_result_t *r, char *budget,
                          char *margin, size_t size, double *y) {
    const double b = (double)r->budget_bytes / GIB, u = (double)r->usable_bytes / GIB;
    char assumed[160];
    remat_i_budget_assumed(r, assumed, sizeof assumed);
    snprintf(budget, size, "budget %.2f GiB%s", b, assumed[0] ? " (assumed)" : "");
    snprintf(margin, size, "safety margin %.0f%% (usable %.2f GiB)",
             100 * r->config->safety_margin, u);
    *y = remat_i_py(f, b) - 5;
}

void remat_i_budget_boxes(const remat_i_frame_t *f, const remat_result_t *r,
                          remat_i_box_t boxes[REMAT_I_BUDGET_BOXES]) {
    char budget[256], margin[128];
    double y;
    budget_labels(f, r, budget, margin, sizeof margin, &y);
    const double line = remat_i_py(f, (double)r->budget_bytes / GIB);
    boxes[0] = (remat_i_box_t){f->x, line - 1.5, f->x + f->w, line + 1.5};
    boxes[1] = remat_i_text_box(f->x + f->w - 4, y, "end", budget, false);
    boxes[2] = remat_i_text_box(f->x + 6, y, "start", margin, false);
}

/* The budget line and the safety-margin band under it, in GiB. */
void remat_i_budget_marks(FILE *out, const char *id, const remat_i_frame_t *f, const remat_result_t *r) {
    const double b = (double)r->budget_bytes / GIB, u = (double)r->usable_bytes / GIB;
    char budget[256], margin[128];
    double y;
    budget_labels(f, r, budget, margin, sizeof margin, &y);
    fprintf(out,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"url(#%s-margin)\" "
            "fill-opacity=\"0.6\"/>\n",
            f->x, remat_i_py(f, b), f->w, remat_i_py(f, u) - remat_i_py(f, b), id);
    fprintf(out,
            "<line id=\"%s-budget-line\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
            "stroke=\"#b22222\" stroke-width=\"2\" stroke-dasharray=\"8 4\"/>\n",
            id, f->x, remat_i_py(f, b), f->x + f->w, remat_i_py(f, b));
    remat_i_svg_text(out, f->x + f->w - 4, y, "end", "fill=\"#8b0000\"", budget);
    remat_i_svg_text(out, f->x + 6, y, "start", "fill=\"#8b0000\"", margin);
}

