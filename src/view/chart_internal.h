/* SPDX-License-Identifier: MIT */
/*
 * chart_internal.h: the SVG primitives the chart modules share (not
 * public): chart_svg.c draws frames, axes, legends and the budget marks;
 * chart_timeline.c and chart_bars.c draw the charts of remat/view/chart.h with
 * them, and view/html.c reuses the escaping and the timeline's columns.
 *
 * Invariants: every string from the inputs passes remat_i_xml_text before
 * it reaches the output; a frame's data range is never empty (x1 > x0,
 * y1 > y0: the callers widen a degenerate one).
 */
#ifndef REMAT_CHART_INTERNAL_H
#define REMAT_CHART_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "remat/sim/sim.h"
#include "remat/sim/timeline.h"

/* A plot area in pixels and the data range it shows. */
typedef struct remat_i_frame {
    double x, y, w, h;
    double x0, x1, y0, y1;
} remat_i_frame_t;

/* Data to pixels. */
double remat_i_px(const remat_i_frame_t *f, double v);
double remat_i_py(const remat_i_frame_t *f, double v);

/* @p s with &, <, >, " and ' escaped (text and attribute values alike). */
void remat_i_xml_text(FILE *out, const char *s);

/* The root <svg> (ids prefixed @p id), its <title>, a white background and
   the hatch and margin patterns; no XML declaration when @p embedded. */
void remat_i_svg_begin(FILE *out, const char *id, int w, int h, const char *title,
                       bool embedded);
void remat_i_svg_end(FILE *out);

/* <text> at (x, y) with @p anchor and extra attributes @p attrs (trusted,
   may be NULL); @p text is escaped. */
void remat_i_svg_text(FILE *out, double x, double y, const char *anchor, const char *attrs,
                      const char *text);

/* Grid, round ticks with their labels, the frame and the axis titles. */
void remat_i_axes(FILE *out, const remat_i_frame_t *f, const char *xlabel, const char *ylabel);

/* Legend row @p row at (x, y): a swatch of @p fill, hatched with pattern id
   @p hatch when not NULL, and its name. */
void remat_i_swatch(FILE *out, double x, double y, size_t row, const char *fill,
                    const char *hatch, const char *name);

/* The box a line of text takes at (@p x, @p y) (the baseline) with
   @p anchor ("start", "middle", "end"), in the charts' 12 px sans-serif:
   an upper bound of its glyphs' extent (0.62 em a character, 0.66 bold; a
   cap height of 0.9 em above the baseline, 0.25 em below), so that a box
   that does not overlap another's leaves the texts apart. */
typedef struct remat_i_box {
    double x0, y0, x1, y1;
} remat_i_box_t;
remat_i_box_t remat_i_text_box(double x, double y, const char *anchor, const char *text,
                               bool bold);
bool remat_i_boxes_overlap(const remat_i_box_t *a, const remat_i_box_t *b);

/* What the budget marks occupy: the budget line's box (its stroke), and
   the boxes of its two labels ("budget ...", "safety margin ..."). */
enum { REMAT_I_BUDGET_BOXES = 3 };
void remat_i_budget_boxes(const remat_i_frame_t *f, const remat_result_t *r,
                          remat_i_box_t boxes[REMAT_I_BUDGET_BOXES]);

/* The budget line and the safety-margin band below it (a frame in GiB). */
void remat_i_budget_marks(FILE *out, const char *id, const remat_i_frame_t *f,
                          const remat_result_t *r);

/* Whether band @p i of @p n is dark (hatched in white, else in black). */
bool remat_i_dark_fill(size_t i, size_t n);

/* The categories the timeline ever holds, bottom of the stack first, into
   @p cats (REMAT_CAT_COUNT entries); returns how many. */
size_t remat_i_used_cats(const remat_timeline_t *tl, remat_cat_t *cats);

/* The timeline chart's pixel columns. */
enum { REMAT_I_TL_COLS = 700 };

/* For each of @p ncols columns over the timeline's clock the index of the
   highest event falling in it (an event falls in the columns its time
   covers, one that takes no time in its start's); a column no event reaches
   holds the previous one's. @p tl has at least one event. */
void remat_i_timeline_columns(const remat_timeline_t *tl, size_t *best, size_t ncols);

/* The column of @p ncols over [0, @p T] that time @p t falls in. */
size_t remat_i_column_of(double t, double T, size_t ncols);

/* An event's moment as analyze writes one ("layer 3 backward, op 'wo'"). */
void remat_i_event_text(const remat_event_t *e, size_t nstages, char *buf, size_t size);

#endif
