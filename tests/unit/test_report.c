/* SPDX-License-Identifier: MIT */
/*
 * test_report.c: the reports (report.c) on the mini layer of fixtures.c,
 * written to memory streams and read back:
 *  - the analyze JSON parses and carries the peak, budget, verdict and a
 *    breakdown that sums to the peak, and the per-layer, per-tensor and
 *    per-name tables; `table` JSON holds only the tables asked for;
 *  - the CSV and Markdown tables: a header row, one row per layer and per
 *    tensor, the same figures as the result;
 *  - the text and check reports: the verdict line and the peak in bytes,
 *    for a step that fits, one inside the safety margin and one that does
 *    not fit;
 *  - the solve report on a budget where the optimum is worked by hand.
 *
 * The mini layer, as in test_sim.c: per_device_batch_size=2,
 * base_emb_dim=4, base_mlp_dim=8, 3 layers, bf16 activations, fp32
 * weights, adamw, one tpu7x device, reserve_fraction=0:
 *   x [2,4] 16 B   h [2,8] 32 B   a [2,8] 32 B   o [2,4] 16 B   y [2,4] 16 B
 *   w1, w2: 32 params each a layer, 192 in all: params 768 B, adamw
 *   1536 B, weight gradients 768 B.
 * Under `full` (test_sim.c's test_full_by_hand): layer 2's backward peaks
 * at fc2 with x0..x2 saved (48), h and a rebuilt (64), gradients dy2, do,
 * da in flight (64): 48 + 64 + 64 + 768 + 1536 + 768 = 3248 bytes.
 * Per layer: 16 B saved (x); forward FLOPs 328 (fc1 128, silu 64, fc2
 * 128, add 8), backward 608, re-run 192 (fc1 and silu).
 * `minimal` (x and h kept) peaks at 3312 (test_sim.c's
 * test_minimal_by_hand).
 */
#include "fixtures.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "remat/view/report.h"
#include "remat/solve/solve.h"
#include "view/report_internal.h"

enum { PEAK_FULL = 48 + 64 + 64 + 768 + 1536 + 768, PEAK_MINIMAL = 3312 };

/* ---- helpers ------------------------------------------------------------ */

/* The mini layer under `full` with the given budget and up to two more
   settings (NULL ends the list). */
static fx_run_t *mini(const char *budget, const char *extra1, const char *extra2) {
    const char *args[] = {"model_name=default",        "per_device_batch_size=2",
                          "base_emb_dim=4",            "base_mlp_dim=8",
                          "base_num_decoder_layers=3", "reserve_fraction=0", "scan_layers=false",
                          "remat_policy=full",         budget,
                          extra1,                      extra1 ? extra2 : NULL,
                          NULL};
    return fx_analyze_ok(fx_mini_graph, args);
}

/* A memory stream to write a report into. */
typedef struct mem {
    char *text;
    size_t len;
    FILE *f;
} mem_t;

static FILE *mem_open(mem_t *m) {
    m->text = NULL;
    m->len = 0;
    m->f = open_memstream(&m->text, &m->len);
    assert_non_null(m->f);
    return m->f;
}

/* Closes the stream; the text stays in m->text (free it). */
static char *mem_close(mem_t *m) {
    assert_int_equal(fclose(m->f), 0);
    assert_non_null(m->text);
    return m->text;
}

static json_t *parse(const char *text) {
    json_error_t jerr;
    json_t *o = json_loads(text, 0, &jerr);
    if (!o) {
        fail_msg("report is not JSON: %s (line %d)\n%s", jerr.text, jerr.line, text);
    }
    return o;
}

static json_int_t jint(json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v)) {
        fail_msg("'%s' is not an integer", key);
    }
    return json_integer_value(v);
}

static const char *jstr(json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    if (!json_is_string(v)) {
        fail_msg("'%s' is not a string", key);
    }
    return json_string_value(v);
}

static json_t *analyze_json(const remat_result_t *r) {
    mem_t m;
    remat_report_analyze(mem_open(&m), r, REMAT_FMT_JSON);
    json_t *o = parse(mem_close(&m));
    free(m.text);
    return o;
}

/* Splits @p text in place at newlines; returns the line count. */
static size_t split_lines(char *text, char **lines, size_t max) {
    size_t n = 0;
    for (char *p = text; *p && n < max;) {
        lines[n++] = p;
        char *nl = strchr(p, '\n');
        if (!nl) {
            break;
        }
        *nl = '\0';
        p = nl + 1;
    }
    return n;
}

/* Splits one CSV row in place: fields separated by commas, a field in
   double quotes may hold commas (shapes). */
static size_t split_csv(char *line, char **fields, size_t max) {
    size_t n = 0;
    char *p = line;
    while (n < max) {
        if (*p == '"') {
            fields[n++] = ++p;
            p = strchr(p, '"');
            assert_non_null(p);
            *p++ = '\0';
        } else {
            fields[n++] = p;
            p += strcspn(p, ",");
        }
        if (*p != ',') {
            *p = '\0';
            break;
        }
        *p++ = '\0';
    }
    return n;
}

/* Splits one Markdown row "| a | b |" in place. */
static size_t split_md(char *line, char **fields, size_t max) {
    size_t len = strlen(line);
    assert_true(len >= 4);
    assert_memory_equal(line, "| ", 2);
    assert_string_equal(line + len - 2, " |");
    line[len - 2] = '\0';
    size_t n = 0;
    for (char *p = line + 2; n < max;) {
        fields[n++] = p;
        char *bar = strstr(p, " | ");
        if (!bar) {
            break;
        }
        *bar = '\0';
        p = bar + 3;
    }
    return n;
}

static void assert_u64_text(const char *text, uint64_t want) {
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRIu64, want);
    assert_string_equal(text, buf);
}

/* "[2,8]" from a tensor row's per-device dims. */
static void shape_of(const remat_tensor_row_t *row, size_t rank, char *buf, size_t size) {
    size_t len = (size_t)snprintf(buf, size, "[");
    for (size_t k = 0; k < rank; k++) {
        len += (size_t)snprintf(buf + len, size - len, "%s%" PRIu64, k ? "," : "", row->shape[k]);
    }
    snprintf(buf + len, size - len, "]");
}

/* ---- JSON --------------------------------------------------------------- */

/* hbm_budget=4096 with the default 5% margin: usable 4096 x 0.95 = 3891.2,
   floored to 3891; the peak 3248 fits both. */
static void test_json_verdict_and_breakdown(void **state) {
    (void)state;
    fx_run_t *f = mini("hbm_budget=4096", NULL, NULL);
    const remat_result_t *r = &f->r;
    assert_int_equal(r->peak_bytes, PEAK_FULL);
    json_t *o = analyze_json(r);
    assert_string_equal(jstr(o, "schema"), "remat-result/1");
    assert_string_equal(jstr(o, "graph"), "mini");
    assert_string_equal(jstr(o, "model"), f->cfg.model_name);
    assert_string_equal(jstr(o, "remat_policy"), "full");
    assert_int_equal(jint(o, "layers_count"), 3);
    assert_int_equal(jint(o, "peak_hbm_bytes"), PEAK_FULL);
    assert_int_equal(jint(o, "budget_bytes"), 4096);
    assert_string_equal(jstr(o, "budget_source"), "hbm_budget");
    assert_int_equal(jint(o, "usable_bytes"), 3891);
    assert_int_equal(jint(o, "usable_bytes"), r->usable_bytes);
    assert_true(json_is_true(json_object_get(o, "fits")));
    assert_true(json_is_true(json_object_get(o, "fits_with_margin")));
    /* Every category once, as in the result, summing to the peak. */
    json_t *bd = json_object_get(o, "breakdown");
    assert_int_equal(json_object_size(bd), REMAT_CAT_COUNT);
    json_int_t sum = 0;
    for (int c = 0; c < REMAT_CAT_COUNT; c++) {
        json_int_t v = jint(bd, remat_cat_name((remat_cat_t)c));
        assert_int_equal(v, r->breakdown[c]);
        sum += v;
    }
    assert_int_equal(sum, PEAK_FULL);
    assert_int_equal(jint(bd, "saved_activations"), 48);
    assert_int_equal(jint(bd, "recompute"), 64);
    assert_int_equal(jint(bd, "act_grads"), 64);
    assert_int_equal(jint(bd, "optimizer"), 1536);
    /* The moment: layer 2's backward at fc2. */
    json_t *at = json_object_get(o, "peak_at");
    assert_string_equal(jstr(at, "step"), "backward");
    assert_string_equal(jstr(at, "where"), "layer");
    assert_int_equal(jint(at, "layer"), 2);
    assert_string_equal(jstr(at, "op"), "fc2");
    json_t *st = json_object_get(o, "static");
    assert_int_equal(jint(st, "param_count"), 192);
    assert_int_equal(jint(st, "param_bytes"), 768);
    assert_int_equal(jint(st, "optimizer_bytes"), 1536);
    assert_int_equal(jint(st, "grad_bytes"), 768);
    /* 3 layers of 328 forward and 608 backward FLOPs. */
    assert_int_equal(jint(o, "forward_flops"), 3 * 328);
    assert_int_equal(jint(o, "model_flops"), 3 * (328 + 608));
    assert_int_equal(jint(o, "recompute_flops"), r->recompute_flops);
    json_decref(o);
    fx_free(f);
}

/* The per-layer rows of the analyze JSON against the result and by hand. */
static void check_layers_json(json_t *layers, const remat_result_t *r) {
    assert_int_equal(json_array_size(layers), 3);
    for (size_t l = 0; l < 3; l++) {
        json_t *row = json_array_get(layers, l);
        const remat_layer_row_t *want = &r->layers[l];
        assert_int_equal(jint(row, "index"), l);
        assert_int_equal(jint(row, "profile"), want->profile);
        assert_int_equal(jint(row, "saved_device_bytes"), 16);
        assert_int_equal(jint(row, "offloaded_bytes"), 0);
        assert_int_equal(jint(row, "recompute_flops"), 192);
        assert_int_equal(jint(row, "forward_flops"), 328);
        assert_int_equal(jint(row, "backward_flops"), 608);
        /* Reals are printed to 10 significant digits (integers exactly). */
        assert_true(want->forward_seconds > 0);
        assert_float_equal(json_real_value(json_object_get(row, "forward_seconds")),
                           want->forward_seconds, want->forward_seconds * 1e-9);
    }
}

/* The per-tensor rows: every layer tensor in the graph's order, with the
   result's bytes, shape and fate. By hand: x is kept (the layer input),
   h and a are rebuilt, o is read by no backward op. */
static void check_tensors_json(json_t *tensors, const remat_result_t *r) {
    const remat_block_t *b = &r->graph->kinds[0].block;
    assert_int_equal(json_array_size(tensors), b->ntensors);
    for (size_t i = 0; i < b->ntensors; i++) {
        json_t *row = json_array_get(tensors, i);
        const remat_tensor_row_t *want = &r->profiles[0].tensors[i];
        char shape[64];
        assert_string_equal(jstr(row, "name"), b->tensors[i].name);
        assert_int_equal(jint(row, "bytes"), want->bytes);
        assert_string_equal(jstr(row, "fate"), remat_fate_name(want->fate));
        assert_string_equal(jstr(row, "placement"), remat_place_name(want->asked));
        assert_true(json_is_null(json_object_get(row, "view_of")));
        shape_of(want, b->tensors[i].rank, shape, sizeof shape);
        char *dumped = json_dumps(json_object_get(row, "shape"), JSON_COMPACT);
        assert_string_equal(dumped, shape);
        free(dumped);
    }
    json_t *x = json_array_get(tensors, fx_tensor(r->graph, "x"));
    json_t *h = json_array_get(tensors, fx_tensor(r->graph, "h"));
    json_t *w1 = json_array_get(tensors, fx_tensor(r->graph, "w1"));
    assert_int_equal(jint(x, "bytes"), 16);
    assert_string_equal(jstr(x, "dtype"), "bf16");
    assert_string_equal(jstr(x, "fate"), "device");
    assert_string_equal(json_string_value(json_array_get(json_object_get(x, "checkpoint"), 0)),
                        "decoder_layer_input");
    assert_int_equal(jint(h, "bytes"), 32);
    assert_string_equal(jstr(h, "fate"), "recompute");
    assert_string_equal(jstr(w1, "dtype"), "fp32");
    assert_string_equal(jstr(json_array_get(tensors, fx_tensor(r->graph, "a")), "fate"),
                        "recompute");
    assert_string_equal(jstr(json_array_get(tensors, fx_tensor(r->graph, "o")), "fate"),
                        "transient");
}

/* analyze's JSON holds the tables: one profile (every layer has full's
   plan), its tensors also at the top level, and the per-name rows. */
static void test_json_tables(void **state) {
    (void)state;
    fx_run_t *f = mini("hbm_budget=4096", NULL, NULL);
    const remat_result_t *r = &f->r;
    json_t *o = analyze_json(r);
    check_layers_json(json_object_get(o, "layers"), r);
    json_t *profiles = json_object_get(o, "profiles");
    assert_int_equal(json_array_size(profiles), 1);
    assert_int_equal(r->nprofiles, 1);
    json_t *p0 = json_array_get(profiles, 0);
    assert_int_equal(jint(p0, "first_layer"), 0);
    assert_int_equal(jint(p0, "last_layer"), 2);
    assert_int_equal(jint(p0, "layers"), 3);
    check_tensors_json(json_object_get(p0, "tensors"), r);
    assert_true(json_equal(json_object_get(p0, "tensors"), json_object_get(o, "tensors")));
    json_t *names = json_object_get(o, "names");
    assert_int_equal(json_array_size(names), r->nnames);
    assert_true(r->nnames > 0);
    for (size_t i = 0; i < r->nnames; i++) {
        json_t *row = json_array_get(names, i);
        assert_string_equal(jstr(row, "name"), r->names[i].name);
        assert_int_equal(jint(row, "saved_bytes"), r->names[i].saved_bytes);
        assert_int_equal(jint(row, "recompute_flops"), r->names[i].recompute_flops);
    }
    json_decref(o);
    fx_free(f);
}

/* `table` in JSON holds exactly the tables asked for. */
static void test_table_json_kinds(void **state) {
    (void)state;
    fx_run_t *f = mini("hbm_budget=4096", NULL, NULL);
    static const struct {
        unsigned kinds;
        const char *key;
    } table[] = {{REMAT_TABLE_LAYERS, "layers"},
                 {REMAT_TABLE_TENSORS, "profiles"},
                 {REMAT_TABLE_NAMES, "names"},
                 {REMAT_TABLE_STAGES, "stages"}};
    for (size_t k = 0; k < 4; k++) {
        mem_t m;
        remat_report_table(mem_open(&m), &f->r, REMAT_FMT_JSON, table[k].kinds);
        json_t *o = parse(mem_close(&m));
        free(m.text);
        assert_string_equal(jstr(o, "schema"), "remat-table/1");
        for (size_t j = 0; j < 4; j++) {
            assert_int_equal(json_object_get(o, table[j].key) != NULL, j == k);
        }
        if (table[k].kinds == REMAT_TABLE_LAYERS) {
            check_layers_json(json_object_get(o, "layers"), &f->r);
        }
        if (table[k].kinds == REMAT_TABLE_TENSORS) {
            json_t *p0 = json_array_get(json_object_get(o, "profiles"), 0);
            check_tensors_json(json_object_get(p0, "tensors"), &f->r);
        }
        if (table[k].kinds == REMAT_TABLE_STAGES) {
            /* No pipeline: one stage, the whole model, at the step's peak. */
            json_t *s0 = json_array_get(json_object_get(o, "stages"), 0);
            assert_int_equal(json_array_size(json_object_get(o, "stages")), 1);
            assert_int_equal(jint(s0, "peak_hbm_bytes"), PEAK_FULL);
            assert_int_equal(jint(s0, "static_bytes"), 768 + 1536);
        }
        json_decref(o);
    }
    fx_free(f);
}

/* ---- CSV and Markdown tables -------------------------------------------- */

static const char *const layer_cols[] = {"layer",           "profile",       "saved_device_bytes",
                                         "offloaded_bytes", "recompute_flops", "forward_flops",
                                         "backward_flops"};
static const char *const tensor_cols[] = {"profile", "tensor",    "checkpoint", "shape",
                                          "dtype",   "bytes",     "placement",  "fate",
                                          "unused",  "recompute_flops"};

static void check_header(char **v, size_t n, const char *const *cols, size_t ncols) {
    assert_int_equal(n, ncols);
    for (size_t i = 0; i < ncols; i++) {
        assert_string_equal(v[i], cols[i]);
    }
}

/* One per-layer row against the result (and test_sim.c's hand figures). */
static void check_layer_cells(char **v, size_t n, const remat_result_t *r, size_t l) {
    const remat_layer_row_t *row = &r->layers[l];
    assert_int_equal(n, 7);
    assert_u64_text(v[0], l);
    assert_u64_text(v[1], row->profile);
    assert_u64_text(v[2], row->saved_device_bytes);
    assert_u64_text(v[3], row->offloaded_bytes);
    assert_u64_text(v[4], row->recompute_flops);
    assert_u64_text(v[5], row->forward_flops);
    assert_u64_text(v[6], row->backward_flops);
    assert_string_equal(v[2], "16");
    assert_string_equal(v[4], "192");
}

/* One per-tensor row (profile 0, tensor @p i) against the result. */
static void check_tensor_cells(char **v, size_t n, const remat_result_t *r, size_t i) {
    const remat_tensor_t *t = &r->graph->kinds[0].block.tensors[i];
    const remat_tensor_row_t *row = &r->profiles[0].tensors[i];
    char shape[64];
    shape_of(row, t->rank, shape, sizeof shape);
    assert_int_equal(n, 10);
    assert_string_equal(v[0], "0");
    assert_string_equal(v[1], t->name);
    assert_string_equal(v[2], t->ntags ? t->tags[0] : "-");
    assert_string_equal(v[3], shape);
    /* act is the config's bf16, weight its fp32 */
    assert_string_equal(v[4], t->dtype == REMAT_DTYPE_ACT ? "bf16" : "fp32");
    assert_u64_text(v[5], row->bytes);
    assert_string_equal(v[6], t->param ? "-" : remat_place_name(row->asked));
    assert_string_equal(v[7], remat_fate_name(row->fate));
    assert_string_equal(v[8], row->unused ? "yes" : "no");
    assert_u64_text(v[9], row->recompute_flops);
}

/* CSV: the layer table (header, 3 rows), a blank line, the tensor table
   (header, 7 rows: one profile). */
static void test_csv_tables(void **state) {
    (void)state;
    fx_run_t *f = mini("hbm_budget=4096", NULL, NULL);
    const remat_result_t *r = &f->r;
    mem_t m;
    remat_report_table(mem_open(&m), r, REMAT_FMT_CSV, REMAT_TABLE_LAYERS | REMAT_TABLE_TENSORS);
    char *lines[32] = {0}, *v[16] = {0};
    size_t nl = split_lines(mem_close(&m), lines, 32);
    const size_t nt = r->graph->kinds[0].block.ntensors;
    assert_int_equal(nt, 7);
    assert_int_equal(nl, 1 + 3 + 1 + 1 + nt);
    check_header(v, split_csv(lines[0], v, 16), layer_cols, 7);
    for (size_t l = 0; l < 3; l++) {
        check_layer_cells(v, split_csv(lines[1 + l], v, 16), r, l);
    }
    assert_string_equal(lines[4], "");
    check_header(v, split_csv(lines[5], v, 16), tensor_cols, 10);
    for (size_t i = 0; i < nt; i++) {
        check_tensor_cells(v, split_csv(lines[6 + i], v, 16), r, i);
        if (i == fx_tensor(f->graph, "h")) {
            /* by hand: [2,8] of bf16, 32 bytes; the shape's comma was quoted */
            assert_string_equal(v[3], "[2,8]");
            assert_string_equal(v[5], "32");
        }
    }
    free(m.text);
    fx_free(f);
}

/* Markdown: each table's header row, then its separator row, then rows. */
static void test_md_tables(void **state) {
    (void)state;
    fx_run_t *f = mini("hbm_budget=4096", NULL, NULL);
    const remat_result_t *r = &f->r;
    mem_t m;
    remat_report_table(mem_open(&m), r, REMAT_FMT_MD, REMAT_TABLE_LAYERS | REMAT_TABLE_TENSORS);
    char *lines[32] = {0}, *v[16] = {0};
    size_t nl = split_lines(mem_close(&m), lines, 32);
    const size_t nt = r->graph->kinds[0].block.ntensors;
    assert_int_equal(nl, 2 + 3 + 1 + 2 + nt);
    check_header(v, split_md(lines[0], v, 16), layer_cols, 7);
    assert_string_equal(lines[1], "|---|---|---|---|---|---|---|");
    for (size_t l = 0; l < 3; l++) {
        check_layer_cells(v, split_md(lines[2 + l], v, 16), r, l);
    }
    assert_string_equal(lines[5], "");
    check_header(v, split_md(lines[6], v, 16), tensor_cols, 10);
    assert_string_equal(lines[7], "|---|---|---|---|---|---|---|---|---|---|");
    for (size_t i = 0; i < nt; i++) {
        check_tensor_cells(v, split_md(lines[8 + i], v, 16), r, i);
        if (i == fx_tensor(f->graph, "x")) {
            /* by hand: [2,4] of bf16, 16 bytes, kept in HBM */
            assert_string_equal(v[3], "[2,4]");
            assert_string_equal(v[5], "16");
            assert_string_equal(v[7], "device");
        }
    }
    free(m.text);
    fx_free(f);
}

/* analyze as CSV (field,value) and Markdown (a breakdown table with a
   total row): the same peak, budget and breakdown as the result. */
static void test_analyze_csv_and_md(void **state) {
    (void)state;
    fx_run_t *f = mini("hbm_budget=4096", NULL, NULL);
    const remat_result_t *r = &f->r;
    mem_t m;
    remat_report_analyze(mem_open(&m), r, REMAT_FMT_CSV);
    char *lines[64] = {0}, *v[4] = {0};
    size_t nl = split_lines(mem_close(&m), lines, 64);
    assert_string_equal(lines[0], "field,value");
    int64_t sum = 0;
    size_t seen = 0;
    for (size_t i = 1; i < nl; i++) {
        assert_int_equal(split_csv(lines[i], v, 4), 2);
        if (strncmp(v[0], "breakdown.", 10) == 0) {
            int64_t b = strtoll(v[1], NULL, 10);
            assert_int_equal(b, r->breakdown[seen]);
            assert_string_equal(v[0] + 10, remat_cat_name((remat_cat_t)seen++));
            sum += b;
        } else if (strcmp(v[0], "peak_hbm_bytes") == 0) {
            assert_u64_text(v[1], PEAK_FULL);
        } else if (strcmp(v[0], "budget_bytes") == 0) {
            assert_string_equal(v[1], "4096");
        } else if (strcmp(v[0], "fits_with_margin") == 0) {
            assert_string_equal(v[1], "true");
        } else if (strcmp(v[0], "peak_at") == 0) {
            assert_string_equal(v[1], "layer 2 backward, op 'fc2'");
        }
    }
    assert_int_equal(seen, REMAT_CAT_COUNT);
    assert_int_equal(sum, PEAK_FULL);
    free(m.text);

    remat_report_analyze(mem_open(&m), r, REMAT_FMT_MD);
    nl = split_lines(mem_close(&m), lines, 64);
    /* heading, blank, verdict, blank, header, separator, categories, total */
    assert_int_equal(nl, 6 + REMAT_CAT_COUNT + 1);
    assert_non_null(strstr(lines[2], "(fits), at layer 2 backward, op 'fc2'"));
    sum = 0;
    for (size_t c = 0; c < REMAT_CAT_COUNT; c++) {
        assert_int_equal(split_md(lines[6 + c], v, 4), 3);
        assert_string_equal(v[0], remat_cat_name((remat_cat_t)c));
        sum += strtoll(v[1], NULL, 10);
    }
    assert_int_equal(split_md(lines[6 + REMAT_CAT_COUNT], v, 4), 3);
    assert_string_equal(v[0], "**total**");
    assert_u64_text(v[1], PEAK_FULL);
    assert_int_equal(sum, PEAK_FULL);
    free(m.text);
    fx_free(f);
}

/* ---- text and check ----------------------------------------------------- */

/* The breakdown rows of the text report ("  name  bytes  GiB", zero
   categories left out) up to "total": each is the result's, and they sum
   to the total, which is the peak. */
static void check_text_breakdown(char **lines, size_t nl, const remat_result_t *r) {
    size_t i = 0;
    while (i < nl && strncmp(lines[i], "breakdown at the peak", 21) != 0) {
        i++;
    }
    assert_true(i < nl);
    int64_t sum = 0;
    for (i++; i < nl; i++) {
        char name[64];
        long long bytes = 0;
        assert_int_equal(sscanf(lines[i], " %63s %lld", name, &bytes), 2);
        if (strcmp(name, "total") == 0) {
            assert_int_equal(bytes, r->peak_bytes);
            assert_int_equal(sum, r->peak_bytes);
            return;
        }
        int c = 0;
        while (c < REMAT_CAT_COUNT && strcmp(remat_cat_name((remat_cat_t)c), name) != 0) {
            c++;
        }
        assert_true(c < REMAT_CAT_COUNT);
        assert_int_equal(bytes, r->breakdown[c]);
        assert_true(bytes != 0);
        sum += bytes;
    }
    fail_msg("no total row");
}

/* The verdict at three budgets around the peak of 3248 (5% margin):
   4096 (usable 3891): fits; 3333 (usable 3333 x 0.95 = 3166.35 -> 3166):
   fits, inside the margin; 3000: does not fit. */
static const struct {
    const char *budget;
    bool fits, margin;
    const char *check, *json, *text;
} verdicts[] = {{"hbm_budget=4096", true, true, "OK: ", "ok", "fits"},
                {"hbm_budget=3333", true, false, "RISK: ", "risk",
                 "fits, but inside the safety margin"},
                {"hbm_budget=3000", false, false, "OOM: ", "oom", "DOES NOT FIT"}};

/* analyze as text: the peak line with the verdict, the moment, and the
   breakdown with its total in bytes. */
static void test_text_report(void **state) {
    (void)state;
    for (size_t k = 0; k < sizeof verdicts / sizeof verdicts[0]; k++) {
        fx_run_t *f = mini(verdicts[k].budget, NULL, NULL);
        const remat_result_t *r = &f->r;
        assert_int_equal(r->fits, verdicts[k].fits);
        assert_int_equal(r->fits_margin, verdicts[k].margin);
        mem_t m;
        remat_report_analyze(mem_open(&m), r, REMAT_FMT_TEXT);
        char *lines[64] = {0};
        size_t nl = split_lines(mem_close(&m), lines, 64);
        assert_string_equal(lines[0], "remat analyze: default on tpu7x, remat_policy=full");
        /* the peak line, its figures from the result */
        char peak[64], budget[64], share[64], want[256];
        remat_i_budget_bytes(r->peak_bytes, peak, sizeof peak);
        remat_i_budget_bytes(r->budget_bytes, budget, sizeof budget);
        remat_i_share_text(r->peak_bytes, r->budget_bytes, share, sizeof share);
        snprintf(want, sizeof want, "peak HBM     %s of %s per device (%s): %s", peak, budget,
                 share, verdicts[k].text);
        size_t i = 0;
        while (i < nl && strncmp(lines[i], "peak HBM", 8) != 0) {
            i++;
        }
        assert_true(i < nl);
        assert_string_equal(lines[i], want);
        /* the margin, then the budget's source, then the moment */
        assert_int_equal(strncmp(lines[i + 1], "margin       ", 13), 0);
        assert_string_equal(lines[i + 3], "peak at      layer 2 backward, op 'fc2'");
        check_text_breakdown(lines, nl, r);
        free(m.text);
        fx_free(f);
    }
}

/* check: one line starting with the verdict and holding the peak in
   bytes; as JSON, the verdict word and pass. */
static void test_check_report(void **state) {
    (void)state;
    for (size_t k = 0; k < sizeof verdicts / sizeof verdicts[0]; k++) {
        fx_run_t *f = mini(verdicts[k].budget, NULL, NULL);
        const remat_result_t *r = &f->r;
        mem_t m;
        remat_report_check(mem_open(&m), r, REMAT_FMT_TEXT);
        char *text = mem_close(&m);
        char bytes[64];
        snprintf(bytes, sizeof bytes, "(%" PRIu64 " bytes)", r->peak_bytes);
        assert_int_equal(strncmp(text, verdicts[k].check, strlen(verdicts[k].check)), 0);
        assert_non_null(strstr(text, "(3248 bytes)"));
        assert_non_null(strstr(text, bytes));
        assert_non_null(strstr(text, "remat_policy=full"));
        assert_non_null(strstr(text, "at layer 2 backward, op 'fc2'\n"));
        assert_int_equal(strchr(text, '\n') - text + 1, (long)strlen(text)); /* one line */
        assert_int_equal(strstr(text, "inside the safety margin") != NULL,
                         verdicts[k].fits && !verdicts[k].margin);
        free(text);

        remat_report_check(mem_open(&m), r, REMAT_FMT_JSON);
        json_t *o = parse(mem_close(&m));
        free(m.text);
        assert_string_equal(jstr(o, "schema"), "remat-check/1");
        assert_string_equal(jstr(o, "verdict"), verdicts[k].json);
        assert_int_equal(json_is_true(json_object_get(o, "pass")), verdicts[k].margin);
        assert_int_equal(json_is_true(json_object_get(o, "fits")), verdicts[k].fits);
        assert_int_equal(jint(o, "peak_hbm_bytes"), PEAK_FULL);
        assert_int_equal(jint(o, "budget_bytes"), r->budget_bytes);
        assert_int_equal(jint(o, "usable_bytes"), r->usable_bytes);
        json_decref(o);
        fx_free(f);
    }
}

/* The unrolled bound, by hand: the mini layer under `full` re-runs fc1
   and act, and holds h and a (2 x 8 bf16 each, 32 + 32 = 64 B) until
   its backward. Held from the top layer's first backward op, the two
   lower layers' re-runs add 2 x 64 to the layer-by-layer peak 3248:
   3376. Under a 3350 budget, no margin, the step fits by its figures but
   not by the bound: RISK, saying why; scanned, or on XLA:GPU, no bound. */
static void test_unrolled_bound(void **state) {
    (void)state;
    fx_run_t *f = mini("hbm_budget=3350", "safety_margin=0", NULL);
    const remat_result_t *r = &f->r;
    assert_int_equal(r->peak_bytes, PEAK_FULL);
    assert_int_equal(r->unrolled_held_peak_bytes, PEAK_FULL + 2 * 64);
    assert_true(r->fits);
    assert_false(r->fits_margin);
    assert_int_equal(remat_result_verdict(r), REMAT_VERDICT_RISK);
    assert_string_equal(remat_result_risk_reason(r),
                        "only if XLA re-runs the unrolled layers one at a time");
    /* and its fix line: scanned, the mini adds the scan's bf16 copy of the
       weights, 3 layers x (4 x 8 + 8 x 4) elements x 2 B = 384: 3632 >
       3350, so scanning is tried and does not fix it */
    remat_fixes_t fx;
    remat_fixes_init(&fx);
    fx_find_fixes(f, &fx);
    assert_true(fx.scan_tried);
    assert_false(fx.scan_found);
    remat_fixes_release(&fx);
    fx_free(f);
    f = mini("hbm_budget=3376", "safety_margin=0", NULL);
    assert_true(f->r.fits_margin);
    fx_free(f);
    f = mini("hbm_budget=3350", "safety_margin=0", "scan_layers=true");
    assert_int_equal(f->r.unrolled_held_peak_bytes, 0);
    assert_int_equal(f->r.peak_bytes, PEAK_FULL + 3 * (4 * 8 + 8 * 4) * 2);
    fx_free(f);
    f = mini("hbm_budget=3350", "safety_margin=0", "hardware=h100");
    assert_int_equal(f->r.unrolled_held_peak_bytes, 0);
    assert_int_equal(f->r.peak_bytes, PEAK_FULL);
    assert_true(f->r.fits_margin);
    fx_free(f);
}

/* A layer under a head whose loss dominates the step: x -> fc1 -> h ->
   transpose -> h2 -> silu -> a -> fc2 -> o, y = x + o; head as
   fixtures.c's fx_head_graph. */
static const char *const hoist_graph =
    "{\"format\":\"remat-graph/1\",\"name\":\"hoist\",\"dims\":{"
    "\"b\":{\"from\":\"per_device_batch_size\"},\"e\":{\"from\":\"base_emb_dim\"},"
    "\"v\":{\"from\":\"vocab_size\"}},"
    "\"layer\":{\"inputs\":[\"x\"],\"outputs\":[\"y\"],\"tensors\":{"
    "\"x\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"},"
    "\"w1\":{\"shape\":[\"e\",\"e\"],\"dtype\":\"weight\",\"param\":true},"
    "\"w2\":{\"shape\":[\"e\",\"e\"],\"dtype\":\"weight\",\"param\":true},"
    "\"h\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"},"
    "\"h2\":{\"shape\":[\"e\",\"b\"],\"dtype\":\"act\"},"
    "\"a\":{\"shape\":[\"e\",\"b\"],\"dtype\":\"act\"},"
    "\"o\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"},"
    "\"y\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"}},\"ops\":["
    "{\"name\":\"fc1\",\"op\":\"einsum\",\"spec\":\"be,ef->bf\",\"in\":[\"x\",\"w1\"],\"out\":[\"h\"]},"
    "{\"name\":\"tr\",\"op\":\"transpose\",\"in\":[\"h\"],\"out\":[\"h2\"]},"
    "{\"name\":\"act\",\"op\":\"silu\",\"in\":[\"h2\"],\"out\":[\"a\"]},"
    "{\"name\":\"fc2\",\"op\":\"einsum\",\"spec\":\"eb,ef->bf\",\"in\":[\"a\",\"w2\"],\"out\":[\"o\"]},"
    "{\"name\":\"res\",\"op\":\"add\",\"in\":[\"x\",\"o\"],\"out\":[\"y\"]}]},"
    FX_HEAD_JSON "}";

/* The unrolled bound holds each layer's re-run from before the loss's
   backward (the E2B recipe's compile peaks there with all its layers'
   re-runs live). Under `full` each layer re-runs fc1 and act: h (bf16
   [64, 4], 512 B), which act's backward reads through the fused
   transpose, and a (512 B), which fc2's weight gradient reads: 1,024 B a
   layer. With a 4,096-row vocabulary and 64 rows the layer-by-layer step
   peaks in the loss's backward, so the bound is that peak plus all three
   layers' re-runs, 3 x 1,024 B (held only from the layers' first backward
   op it would be the peak itself). Scanned, no bound. */
static void test_unrolled_bound_hoisted(void **state) {
    (void)state;
    const char *args[] = {"model_name=default", "per_device_batch_size=64", "base_emb_dim=4",
                          "vocab_size=4096", "base_num_decoder_layers=3", "reserve_fraction=0",
                          "scan_layers=false", "remat_policy=full", "hbm_budget=10000000", NULL};
    fx_run_t *f = fx_analyze_ok(hoist_graph, args);
    const remat_result_t *r = &f->r;
    assert_int_equal(r->peak_at.where, REMAT_AT_HEAD_POST);
    assert_int_equal(r->peak_at.step, REMAT_STEP_BACKWARD);
    assert_int_equal(r->unrolled_held_peak_bytes, r->peak_bytes + 3 * 1024);
    fx_free(f);
    args[6] = "scan_layers=true";
    f = fx_analyze_ok(hoist_graph, args);
    assert_int_equal(f->r.unrolled_held_peak_bytes, 0);
    fx_free(f);
}

/* XLA's figure after its rematerialization pass, by hand, with XLA's
   usable HBM 4000 B: the pass's limit is 4000 / 100 x 95 = 3800 B. A step
   of 3800 is reported as it is; 3801 and 4000 are brought to 3800; 4001
   is over the usable HBM and stays (an upper bound). Blocks held at 4500
   whose layer-by-layer step is 3800 come apart to the pass's limit, 3800;
   at 3801 they do not, and the held 4500 stands. Over the usable HBM, a
   step of 4500 whose prefetched gathers made again leave 3900 is
   reported at 3900; one they leave at 3700 at the pass's limit, 3800; a
   regathered step of 4600 (not lower) or none known leaves 4500. */
static void test_xla_expected(void **state) {
    (void)state;
    /* step, held, regathered, XLA's figure; XLA's usable HBM 4000 B */
    static const uint64_t cases[][4] = {
        {3800, 0, 0, 3800},    {3801, 0, 0, 3800},       {4000, 0, 0, 3800},
        {4001, 0, 0, 4001},    {3800, 4500, 0, 3800},    {3801, 4500, 0, 4500},
        {100, 3900, 0, 3800},  {4500, 0, 3900, 3900},    {4500, 0, 3700, 3800},
        {4500, 0, 4600, 4500}, {4500, 0, 0, 4500},       {3801, 4500, 4100, 4100},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const uint64_t *c = cases[i];
        assert_int_equal(remat_xla_expected_peak(c[0], c[1], c[2], 4000), c[3]);
    }
    assert_int_equal(remat_xla_pass_limit(4000), 3800);
}

/* A TPU step over XLA's usable HBM (gemma-7b on v5e-16 at batch 4, whose
   tied table is gathered ahead of the logits' backward) carries its
   regathered step, which is the step analyzed with fsdp_prefetch=false,
   and XLA's figure is that step
   (over the pass's limit here, under the step); with fsdp_prefetch=false
   the regathered step is the step itself. On XLA:GPU's H100 XLA's figure
   is the step. */
static void test_regathered(void **state) {
    (void)state;
    const char *const base[] = {"model_name=gemma-7b", "topology=v5e-16", "remat_policy=full",
                                "per_device_batch_size=4", NULL};
    const char *const off[] = {"fsdp_prefetch=false", NULL};
    fx_run_t *a = fx_analyze_with(NULL, base, NULL);
    fx_run_t *b = fx_analyze_with(NULL, base, off);
    const uint64_t limit = a->hw.hbm_limit_bytes;
    assert_true(remat_result_scheduled_peak(&a->r) > limit);
    assert_int_equal(a->r.regathered_peak_bytes, remat_result_scheduled_peak(&b->r));
    assert_true(a->r.regathered_peak_bytes < remat_result_scheduled_peak(&a->r));
    assert_true(a->r.regathered_peak_bytes > remat_xla_pass_limit(limit));
    assert_int_equal(a->r.xla_expected_peak_bytes, a->r.regathered_peak_bytes);
    assert_int_equal(b->r.regathered_peak_bytes, remat_result_scheduled_peak(&b->r));
    assert_int_equal(b->r.xla_expected_peak_bytes, remat_result_scheduled_peak(&b->r));
    fx_free(a);
    fx_free(b);
    const char *const gpu[] = {"model_name=gemma-7b", "hardware=h100", "num_devices=8",
                               "remat_policy=full", "per_device_batch_size=32", NULL};
    fx_run_t *c = fx_analyze_with(NULL, gpu, NULL);
    assert_true(c->r.peak_bytes > c->hw.hbm_limit_bytes);
    assert_true(c->r.regathered_peak_bytes <= c->r.peak_bytes);
    assert_int_equal(c->r.xla_expected_peak_bytes, c->r.peak_bytes);
    fx_free(c);
}

/* The pass's note: with XLA's usable HBM 4000 B, a step of 3800 B gets no
   note; 3801 gets one naming the pass's limit, 3800 B (3.71 KiB), and the
   expected figure; none on XLA:GPU. */
typedef struct pass_count {
    int n;
    const char *expect; /* what a pass note must say */
} pass_count_t;

static void count_pass_note(void *ctx, const char *text) {
    pass_count_t *c = ctx;
    if (strstr(text, "rematerialization pass starts")) {
        assert_non_null(strstr(text, "over 95% of XLA's usable HBM (3.71 KiB)"));
        assert_non_null(strstr(text, c->expect));
        c->n++;
    }
}

static int pass_notes(const remat_result_t *r, const char *expect) {
    pass_count_t c = {0, expect};
    remat_i_for_each_note(r, count_pass_note, &c);
    return c.n;
}

static void test_pass_note(void **state) {
    (void)state;
    fx_run_t *f = mini("hbm_budget=4000", "safety_margin=0", NULL);
    assert_ptr_equal(f->r.hw, &f->hw);
    f->hw.hbm_limit_bytes = 4000;
    f->r.unit_held_peak_bytes = 0;
    f->r.peak_bytes = 3800;
    assert_int_equal(pass_notes(&f->r, NULL), 0);
    f->r.peak_bytes = 3801;
    f->r.xla_expected_peak_bytes = remat_xla_expected_peak(3801, 0, 0, 4000);
    assert_int_equal(pass_notes(&f->r, "expected at 3.71 KiB (the pass's limit"), 1);
    f->r.peak_bytes = 4001;
    f->r.xla_expected_peak_bytes = remat_xla_expected_peak(4001, 0, 0, 4000);
    assert_int_equal(pass_notes(&f->r, "expected at 3.91 KiB (at most this step's peak"), 1);
    f->r.peak_bytes = 4500;
    f->r.xla_expected_peak_bytes = remat_xla_expected_peak(4500, 0, 3900, 4000);
    assert_int_equal(pass_notes(&f->r, "expected at 3.81 KiB (at most the step with each weight "
                                       "gathered again"), 1);
    f->hw.xla_gpu = true;
    assert_int_equal(pass_notes(&f->r, NULL), 0);
    fx_free(f);
}

/* ---- solve -------------------------------------------------------------- */

/* A solve worked by hand: budget 3300, no margin, a 1 B/s host link.
   The names searched are decoder_layer_input (always) and mlpwi (h, which
   a and the residual h itself are rebuilt from); o (mlpwo) feeds no
   residual. Keeping h is `minimal`'s plan, 3312 > 3300: over. Offloading
   h or x moves 16 to 32 B a layer each way at 1 B/s, seconds against the
   nanoseconds of re-running fc1. So the optimum keeps x and re-runs h:
   full's plan, peak 3248.
   The largest batch for full: the static 768 + 1536 + 768 = 3072 bytes do
   not grow with the batch; the rest at the peak (48 + 64 + 64 = 176 at
   batch 2, every tensor [b,...]) grows 88 a sample: batch 2 gives 3248 <=
   3300, batch 3 gives 3072 + 264 = 3336 > 3300; so 2. On XLA:GPU (h100):
   on XLA:TPU the unrolled layers' bound would count every layer's re-run
   at once (test_unrolled_bound), which this solve is not about. */
typedef struct solved {
    fx_run_t *f;
    remat_solution_t s;
    remat_explain_row_t rows[2];
    remat_policy_t *policy;
    remat_result_t best;
    remat_batch_row_t batch;
} solved_t;

static void solve_setup(solved_t *x) {
    const char *args[] = {"model_name=default",        "per_device_batch_size=2",
                          "base_emb_dim=4",            "base_mlp_dim=8",
                          "base_num_decoder_layers=3", "reserve_fraction=0", "scan_layers=false",
                          "remat_policy=full",         "hbm_budget=3300", "safety_margin=0",
                          "host_link_bw=1",            "hardware=h100", NULL};
    x->f = fx_analyze_ok(fx_mini_graph, args);
    fx_run_t *f = x->f;
    remat_error_t err;
    remat_error_init(&err);
    remat_solution_init(&x->s);
    assert_int_equal(remat_solve(f->graph, &f->cfg, &f->hw, 0, &x->s, &err), REMAT_OK);
    assert_true(x->s.found);
    assert_int_equal(x->s.nnames, 2);
    assert_int_equal(remat_solve_explain(f->graph, &f->cfg, &f->hw, &x->s, x->rows, &err),
                     REMAT_OK);
    x->policy = remat_solve_policy(x->s.choices + x->s.best.first, x->s.nnames, "solved");
    remat_result_init(&x->best);
    assert_int_equal(remat_analyze(f->graph, &f->cfg, x->policy, &f->hw, &x->best, &err),
                     REMAT_OK);
    double batch = 0;
    assert_int_equal(remat_largest_batch(f->graph, &f->cfg, f->policy, &f->hw, &batch, &err),
                     REMAT_OK);
    assert_true(batch == 2);
    x->batch = (remat_batch_row_t){"full", batch};
}

static void solve_teardown(solved_t *x) {
    remat_result_release(&x->best);
    remat_policy_free(x->policy);
    remat_solution_release(&x->s);
    fx_free(x->f);
}

/* The explain entry for mlpwi: kept by re-running; keeping it on the
   device is `minimal`'s 3312 bytes, over the budget. */
static void check_explain_mlpwi(json_t *e) {
    assert_string_equal(jstr(e, "name"), "mlpwi");
    assert_string_equal(jstr(e, "placement"), "remat");
    json_t *alts = json_object_get(e, "alternatives");
    assert_int_equal(json_array_size(alts), 2); /* device and offload */
    bool device_seen = false;
    for (size_t k = 0; k < 2; k++) {
        json_t *a = json_array_get(alts, k);
        if (strcmp(jstr(a, "placement"), "device") == 0) {
            device_seen = true;
            assert_int_equal(jint(a, "peak_hbm_bytes"), PEAK_MINIMAL);
            assert_true(json_is_false(json_object_get(a, "fits")));
            assert_non_null(strstr(jstr(a, "reason"), "over the usable budget"));
        } else {
            assert_string_equal(jstr(a, "placement"), "offload");
            assert_non_null(strstr(jstr(a, "reason"), "slower by"));
        }
    }
    assert_true(device_seen);
}

static void test_solve_report_json(void **state) {
    (void)state;
    solved_t x;
    solve_setup(&x);
    const remat_result_t *presets[] = {&x.f->r};
    mem_t m;
    remat_report_solve(mem_open(&m), &x.s, x.rows, &x.best, presets, 1, &x.batch, 1,
                       REMAT_FMT_JSON);
    json_t *o = parse(mem_close(&m));
    free(m.text);
    assert_string_equal(jstr(o, "schema"), "remat-solve/1");
    assert_true(json_is_true(json_object_get(o, "found")));
    json_t *names = json_object_get(o, "names");
    assert_int_equal(json_array_size(names), 2);
    assert_string_equal(json_string_value(json_array_get(names, 0)), "decoder_layer_input");
    assert_string_equal(json_string_value(json_array_get(names, 1)), "mlpwi");
    json_t *placement = json_object_get(o, "placement");
    assert_int_equal(json_object_size(placement), 2);
    assert_string_equal(jstr(placement, "decoder_layer_input"), "device");
    assert_string_equal(jstr(placement, "mlpwi"), "remat");
    assert_string_equal(jstr(o, "maxtext_overrides"),
                        "remat_policy=custom decoder_layer_input=device mlpwi=remat");
    /* The optimum's analysis, without the tables. */
    json_t *res = json_object_get(o, "result");
    assert_int_equal(jint(res, "peak_hbm_bytes"), PEAK_FULL);
    assert_int_equal(jint(res, "peak_hbm_bytes"), x.s.best.peak_bytes);
    assert_string_equal(jstr(res, "remat_policy"), "solved");
    assert_null(json_object_get(res, "layers"));
    json_t *ex = json_object_get(o, "explain");
    assert_int_equal(json_array_size(ex), 2);
    json_t *e0 = json_array_get(ex, 0);
    assert_string_equal(jstr(e0, "name"), "decoder_layer_input");
    assert_string_equal(jstr(e0, "placement"), "device");
    /* the layer input is never re-run: offload is its only alternative */
    assert_int_equal(json_array_size(json_object_get(e0, "alternatives")), 1);
    /* x kept in 3 layers: 3 x 16 bytes */
    assert_int_equal(jint(e0, "saved_bytes"), 48);
    check_explain_mlpwi(json_array_get(ex, 1));
    json_t *lb = json_array_get(json_object_get(o, "largest_batch"), 0);
    assert_string_equal(jstr(lb, "remat_policy"), "full");
    assert_true(json_real_value(json_object_get(lb, "per_device_batch_size")) == 2);
    /* No frontier was asked for. */
    assert_null(json_object_get(o, "frontier"));
    json_decref(o);
    solve_teardown(&x);
}

/* As text: the summary with the optimum's peak, the overrides to paste,
   and one explain line per name. */
static void test_solve_report_text(void **state) {
    (void)state;
    solved_t x;
    solve_setup(&x);
    mem_t m;
    remat_report_solve(mem_open(&m), &x.s, x.rows, &x.best, NULL, 0, &x.batch, 1,
                       REMAT_FMT_TEXT);
    char *text = mem_close(&m);
    char peak[64], want[256];
    remat_format_bytes(x.best.peak_bytes, peak, sizeof peak);
    snprintf(want, sizeof want, "peak %s of ", peak);
    assert_int_equal(strncmp(text, "remat solve: default on h100: step ", 35), 0);
    assert_non_null(strstr(text, want));
    assert_non_null(strstr(text, "searched 2 names, "));
    assert_non_null(strstr(text, "\nMaxText overrides:\n"
                                 "  remat_policy=custom decoder_layer_input=device mlpwi=remat\n"));
    char *line = strstr(text, "\n  mlpwi ");
    assert_non_null(line);
    assert_non_null(strstr(line, "remat"));
    assert_non_null(strstr(line, "device: peak"));
    assert_non_null(strstr(text, "\n  full"));
    free(text);
    solve_teardown(&x);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_verdict_and_breakdown),
        cmocka_unit_test(test_json_tables),
        cmocka_unit_test(test_table_json_kinds),
        cmocka_unit_test(test_csv_tables),
        cmocka_unit_test(test_md_tables),
        cmocka_unit_test(test_analyze_csv_and_md),
        cmocka_unit_test(test_text_report),
        cmocka_unit_test(test_check_report),
        cmocka_unit_test(test_unrolled_bound),
        cmocka_unit_test(test_unrolled_bound_hoisted),
        cmocka_unit_test(test_xla_expected),
        cmocka_unit_test(test_pass_note),
        cmocka_unit_test(test_regathered),
        cmocka_unit_test(test_solve_report_json),
        cmocka_unit_test(test_solve_report_text),
    };
    return cmocka_run_group_tests_name("report", tests, NULL, NULL);
}
