/* SPDX-License-Identifier: MIT */
/*
 * report_internal.h: what the report modules share (not public): report.c
 * defines these for its own tables and JSON; the timeline, chart and HTML
 * modules use them so that a moment or a CSV cell is written one way.
 *
 * Invariants: remat_i_emit_json takes the reference it is given (the
 * object is freed after printing); the names returned are static strings.
 */
#ifndef REMAT_REPORT_INTERNAL_H
#define REMAT_REPORT_INTERNAL_H

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

#include "remat/view/report.h"
#include "remat/sim/sim.h"

/* "forward", "fetch", "recompute", "backward". */
const char *remat_i_step_name(remat_step_t s);

/* "head_pre", "layer", "head_post". */
const char *remat_i_where_name(remat_where_t w);

/* A moment as remat-result/1 writes it (stage, step, where, layer, op). */
json_t *remat_i_moment_json(const remat_moment_t *m);

/* Prints @p o indented with 10 significant digits and a newline; frees it. */
void remat_i_emit_json(FILE *out, json_t *o);

/* One CSV cell (RFC 4180), quoted when it must be or when @p quoted. */
void remat_i_csv_cell(FILE *out, const char *text, bool quoted);

/* Calls @p fn with each of the result's notes for people, in order. */
typedef void (*remat_i_note_fn)(void *ctx, const char *text);
void remat_i_for_each_note(const remat_result_t *r, remat_i_note_fn fn, void *ctx);

/* A budget for a line of text: "94.75 GiB", or in MiB, KiB or bytes when
   under a hundredth of a GiB (hbm_budget=1 was "0.00 GiB"). */
void remat_i_budget_bytes(uint64_t bytes, char *buf, size_t size);

/* @p part of @p whole as "89.2%", or "3.24e+10 times the budget" from
   1000% up (hbm_budget=1 printed 14263588618200.0%). */
void remat_i_share_text(uint64_t part, uint64_t whole, char *buf, size_t size);

/* Why the budget is what it is when it rests on an assumption (the
   profile's hbm_limit_bytes marked assumed, no hbm_budget set): "assumed:
   XLA_PYTHON_CLIENT_MEM_FRACTION=0.9 of the device's HBM"; else "". Every
   place that prints the budget prints this beside it. */
void remat_i_budget_assumed(const remat_result_t *r, char *buf, size_t size);

/* The fixes as check's and analyze's JSON carry them (report_fixes.c). */
json_t *remat_i_fixes_json(const remat_fix_report_t *fx);

/* "OK", "RISK", "HOST-OOM" or "OOM", as check prints it. */
const char *remat_i_verdict_word(remat_verdict_t v);

#endif
