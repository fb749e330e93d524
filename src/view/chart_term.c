/* SPDX-License-Identifier: MIT */
/*
 * chart_term.c: live HBM over the step as a few lines of Unicode for a
 * terminal (remat_chart_term), under `remat analyze`'s text report: one
 * character column per slice of the step's clock showing the highest event
 * in it (as the SVG timeline does), eighth-blocks for heights, a rule at
 * the budget, the peak's column marked under the axis.
 *
 * Invariants: a column's height is its event's live bytes rounded to the
 * nearest eighth of a row; the scale's top is 5% above the larger of the
 * peak and the budget, so both are inside the chart; the peak's column is
 * the highest column and is marked; output is only these lines (the caller
 * decides when a chart is wanted, how wide, and whether in colour); with
 * colour every escape sequence is closed on its line, so a line cut by the
 * terminal leaves no colour behind.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "remat/view/chart.h"
#include "view/chart_internal.h"
#include "view/report_internal.h"
#include "base/util.h"

static const double GIB = 1073741824.0;

/* The eighths of a cell, from one eighth to a full block (UTF-8). */
static const char *const eighths[9] = {" ", "\u2581", "\u2582", "\u2583", "\u2584",
                                       "\u2585", "\u2586", "\u2587", "\u2588"};

/* ANSI SGR sequences: the blocks, the budget, the peak's mark, reset. */
typedef struct style {
    const char *bar, *budget, *peak, *reset;
} style_t;

static const style_t plain = {"", "", "", ""};
static const style_t colored = {"\033[36m", "\033[31m", "\033[1;33m", "\033[0m"};

/* Row @p row (0 at the bottom) of the chart: each column's block, or the
   budget's rule in the row that holds the budget. */
static void chart_row(FILE *out, const long *level, size_t width, long row, long budget_level,
                      const style_t *st) {
    const bool budget_row = budget_level / 8 == row;
    if (!budget_row) { /* no trailing blanks: the row ends at its last block */
        while (width > 0 && level[width - 1] <= row * 8) {
            width--;
        }
    }
    const char *now = "";
    for (size_t c = 0; c < width; c++) {
        const long fill = level[c] - row * 8;
        const char *want = fill > 0 ? st->bar : st->budget;
        if (fill <= 0 && !budget_row) {
            want = "";
        }
        if (strcmp(want, now) != 0) {
            fputs(*now ? st->reset : "", out);
            fputs(want, out);
            now = want;
        }
        if (fill >= 8) {
            fputs(eighths[8], out);
        } else if (fill > 0) {
            fputs(eighths[fill], out);
        } else {
            fputs(budget_row ? "\u2500" : " ", out);
        }
    }
    fputs(*now ? st->reset : "", out);
}

void remat_chart_term(FILE *out, const remat_result_t *r, const remat_timeline_t *tl,
                      size_t width, size_t height) {
    remat_chart_term_color(out, r, tl, width, height, false);
}

void remat_chart_term_color(FILE *out, const remat_result_t *r, const remat_timeline_t *tl,
                            size_t width, size_t height, bool color) {
    if (tl->nevents == 0 || width == 0 || height == 0) {
        return;
    }
    const style_t *st = color ? &colored : &plain;
    size_t *best = remat_i_xcalloc(width, sizeof *best);
    long *level = remat_i_xcalloc(width, sizeof *level);
    remat_i_timeline_columns(tl, best, width);
    const double budget = (double)r->budget_bytes, peak = (double)tl->peak_bytes;
    const double top = (peak > budget ? peak : budget) * 1.05, eighths_total = (double)height * 8;
    for (size_t c = 0; c < width; c++) {
        level[c] = lround((double)tl->events[best[c]].live_bytes / top * eighths_total);
    }
    const long budget_level = lround(budget / top * eighths_total);
    char m[256], assumed[160];
    remat_i_budget_assumed(r, assumed, sizeof assumed);
    remat_i_event_text(&tl->events[tl->peak], tl->nstages, m, sizeof m);
    fprintf(out, "live HBM per device over one micro-batch (stage %zu of %zu): peak %.2f GiB at "
                 "%.4f s, %s\n",
            tl->stage, tl->nstages, peak / GIB, tl->events[tl->peak].start_seconds, m);
    for (long row = (long)height - 1; row >= 0; row--) {
        if (row == (long)height - 1) {
            fprintf(out, "%4.0f GiB \u2524", top / GIB);
        } else {
            fputs("         \u2502", out);
        }
        chart_row(out, level, width, row, budget_level, st);
        if (budget_level / 8 == row) {
            fprintf(out, " %sbudget %.2f GiB%s%s", st->budget, budget / GIB,
                    assumed[0] ? " (assumed)" : "", st->reset);
        }
        fputc('\n', out);
    }
    fprintf(out, "%8s \u2514", "0 GiB");
    for (size_t c = 0; c < width; c++) {
        fputs("\u2500", out);
    }
    const size_t pc = remat_i_column_of(tl->events[tl->peak].start_seconds, tl->seconds, width);
    fprintf(out, "\n          %*s%s\u25b2 peak%s\n", (int)pc, "", st->peak, st->reset);
    char end[32];
    const int n = snprintf(end, sizeof end, "%.4f s", tl->seconds);
    const int pad = (int)width - 3 - n;
    fprintf(out, "          0 s%*s%s\n", pad > 1 ? pad : 1, "", end);
    free(best);
    free(level);
}
