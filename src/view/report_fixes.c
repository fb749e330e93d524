/* SPDX-License-Identifier: MIT */
/*
 * report_fixes.c: what would make a run pass, as check and analyze end
 * with it (remat_report_fixes) and as their JSON carries it ("fixes",
 * docs/json-output.md). The lines are the CLI's (each the whole command
 * with the change, checked by running it); this file only prints them.
 *
 * Invariants: one line a fix kind, in the order placement, batch, slice,
 * then the scan where the run's layers are unrolled (else no such line,
 * and JSON's scan_layers is null);
 * a kind with no fix still has its line, a comment saying why, so that
 * nothing reads as a fix that is not one; the JSON lists every policy's
 * largest batch, the text the best of them.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "remat/view/report.h"
#include "view/report_internal.h"

void remat_report_fixes(FILE *out, const remat_fix_report_t *fx) {
    if (!fx || fx->nlines == 0) {
        return;
    }
    fputs("\nwhat would make it fit (each line is the command with one change; paste one):\n",
          out);
    for (size_t i = 0; i < fx->nlines; i++) {
        const remat_fix_line_t *l = &fx->lines[i];
        if (l->command[0]) {
            fprintf(out, "  %s   # %s\n", l->command, l->comment);
        } else {
            fprintf(out, "  # %s\n", l->comment);
        }
    }
}

static json_t *jint(uint64_t v) {
    return json_integer((json_int_t)v);
}

static json_t *line_json(const remat_fix_line_t *l) {
    json_t *o = json_object();
    json_object_set_new(o, "settings", l->settings[0] ? json_string(l->settings) : json_null());
    json_object_set_new(o, "command", l->command[0] ? json_string(l->command) : json_null());
    json_object_set_new(o, "comment", json_string(l->comment));
    return o;
}

/* The line of kind @p kind, or NULL. */
static const remat_fix_line_t *line_of(const remat_fix_report_t *fx, const char *kind) {
    for (size_t i = 0; i < fx->nlines; i++) {
        if (strcmp(fx->lines[i].kind, kind) == 0) {
            return &fx->lines[i];
        }
    }
    return NULL;
}

static json_t *placement_json(const remat_fix_report_t *fx) {
    const remat_fixes_t *f = fx->fixes;
    const remat_fix_line_t *l = line_of(fx, "placement");
    json_t *o = l ? line_json(l) : json_object();
    json_object_set_new(o, "found", json_boolean(f->placement_found));
    if (f->placement_found) {
        json_t *names = json_object();
        for (size_t i = 0; i < f->nchoices; i++) {
            json_object_set_new(names, f->choices[i].name,
                                json_string(remat_place_name(f->choices[i].place)));
        }
        json_object_set_new(o, "placement", names);
        json_object_set_new(o, "peak_hbm_bytes", jint(f->placement_peak_bytes));
        json_object_set_new(o, "step_seconds", json_real(f->placement_step_seconds));
    }
    return o;
}

static json_t *batches_json(const remat_fix_report_t *fx) {
    const remat_fixes_t *f = fx->fixes;
    const remat_fix_line_t *l = line_of(fx, "batch");
    json_t *o = l ? line_json(l) : json_object();
    json_t *rows = json_array();
    for (size_t i = 0; i < f->nbatches; i++) {
        const remat_fix_batch_t *b = &f->batches[i];
        json_t *row = json_object();
        json_object_set_new(row, "remat_policy", json_string(b->policy));
        json_object_set_new(row, "own", json_boolean(b->own));
        json_object_set_new(row, "per_device_batch_size", json_real(b->batch));
        if (b->batch > 0) {
            json_object_set_new(row, "peak_hbm_bytes", jint(b->peak_bytes));
            json_object_set_new(row, "step_seconds", json_real(b->step_seconds));
        }
        json_array_append_new(rows, row);
    }
    json_object_set_new(o, "per_policy", rows);
    return o;
}

static json_t *slice_json(const remat_fix_report_t *fx) {
    const remat_fixes_t *f = fx->fixes;
    const remat_fix_line_t *l = line_of(fx, "slice");
    json_t *o = l ? line_json(l) : json_object();
    json_object_set_new(o, "found", json_boolean(f->slice_found));
    if (f->slice_found) {
        json_object_set_new(o, "topology", json_string(f->topology));
        json_object_set_new(o, "num_devices", jint(f->slice_devices));
        json_object_set_new(o, "chips", jint(f->slice_chips));
        json_object_set_new(o, "peak_hbm_bytes", jint(f->slice_peak_bytes));
        json_object_set_new(o, "step_seconds", json_real(f->slice_step_seconds));
    }
    return o;
}

/* null where the layers are scanned already (no line of that kind). */
static json_t *scan_json(const remat_fix_report_t *fx) {
    const remat_fixes_t *f = fx->fixes;
    const remat_fix_line_t *l = line_of(fx, "scan");
    if (!f->scan_tried || !l) {
        return json_null();
    }
    json_t *o = line_json(l);
    json_object_set_new(o, "found", json_boolean(f->scan_found));
    if (f->scan_note[0]) {
        json_object_set_new(o, "refused", json_string(f->scan_note)); /* MaxText's own */
    }
    if (f->scan_found) {
        json_object_set_new(o, "peak_hbm_bytes", jint(f->scan_peak_bytes));
        json_object_set_new(o, "step_seconds", json_real(f->scan_step_seconds));
    }
    return o;
}

json_t *remat_i_fixes_json(const remat_fix_report_t *fx) {
    json_t *o = json_object();
    json_object_set_new(o, "placement", placement_json(fx));
    json_object_set_new(o, "largest_batch", batches_json(fx));
    json_object_set_new(o, "smallest_slice", slice_json(fx));
    json_object_set_new(o, "scan_layers", scan_json(fx));
    return o;
}
