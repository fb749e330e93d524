/* SPDX-License-Identifier: MIT */
/*
 * remat/view/chart.h: SVG charts drawn by remat itself (no plotting library):
 * the stacked memory timeline, the per-layer bars and the policy
 * comparison. Every number drawn is a field of the result, the timeline or
 * the solution; the charts scale them (bytes to GiB) and place them.
 *
 * The output is one <svg> element, deterministic for the same inputs, and
 * well-formed XML (text escaped); with embedded set it has no XML
 * declaration and its ids are prefixed so that several charts can share one
 * HTML page. Colours: the categories' fills step through lightness, so
 * that neighbouring bands differ in greyscale too, and every other band is
 * hatched; markers differ by shape as well as fill.
 */
#ifndef REMAT_CHART_H
#define REMAT_CHART_H

#include <stdbool.h>
#include <stdio.h>

#include "remat/sim/sim.h"
#include "remat/solve/solve.h"
#include "remat/sim/timeline.h"

typedef enum remat_chart_kind {
    REMAT_CHART_TIMELINE, /* live HBM over the step, by category */
    REMAT_CHART_LAYERS,   /* per layer: kept and offloaded bytes, recompute FLOPs */
    REMAT_CHART_POLICIES  /* peak against step time for each policy */
} remat_chart_kind_t;

/** "timeline", "layers" or "policies" into @p out; false for anything else. */
bool remat_chart_kind_parse(const char *s, remat_chart_kind_t *out);

/**
 * The stacked memory timeline of @p tl (an unfolded timeline of @p r):
 * live bytes by category over the stage's clock, the budget line, the
 * safety margin band, and the peak labelled with its moment. Each pixel
 * column shows the highest event that falls in it (so the peak is drawn);
 * hovering a column shows that event (an SVG <title>).
 */
void remat_chart_timeline(FILE *out, const remat_result_t *r, const remat_timeline_t *tl,
                          bool embedded);

/** Per layer: bytes kept in HBM and offloaded (GiB), and recompute FLOPs. */
void remat_chart_layers(FILE *out, const remat_result_t *r, bool embedded);

/**
 * Peak HBM against step time for each of @p rs (the same run under each
 * policy), the budget and its margin; with @p frontier (may be NULL, or
 * without points) the solver's Pareto frontier as a staircase. @p note, when
 * not NULL, is printed under the chart (why there is no frontier).
 */
void remat_chart_policies(FILE *out, const remat_result_t *const *rs, size_t n,
                          const remat_solution_t *frontier, const char *note, bool embedded);

/**
 * Live HBM over the step for a terminal: @p height rows of @p width
 * columns of Unicode eighth-blocks (UTF-8), each column the highest event
 * of its slice of the step, a rule at the budget, the peak's column marked,
 * under a line naming the peak's bytes, time and moment. @p tl is unfolded.
 */
void remat_chart_term(FILE *out, const remat_result_t *r, const remat_timeline_t *tl,
                      size_t width, size_t height);

/**
 * remat_chart_term with ANSI colours when @p color: the blocks in one
 * colour, the budget's rule and value in red, the peak's mark in bold
 * (for a colour terminal; remat_chart_term is this without colour).
 */
void remat_chart_term_color(FILE *out, const remat_result_t *r, const remat_timeline_t *tl,
                            size_t width, size_t height, bool color);

/**
 * The fill of band @p i of @p n (0 is the bottom) as "#rrggbb" into @p buf
 * (8 bytes): a ramp whose lightness rises with @p i.
 */
void remat_chart_fill(size_t i, size_t n, char buf[8]);

#endif
