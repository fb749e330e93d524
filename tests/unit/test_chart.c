/* SPDX-License-Identifier: MIT */
/*
 * test_chart.c: the SVG charts (remat/view/chart.h). The fills' lightness rises
 * along the stack for every band count (so that neighbouring bands differ
 * in greyscale); names from the inputs are escaped; the timeline's peak is
 * drawn in its column and labelled with its bytes and moment; each chart is
 * one <svg> element. Well-formedness itself is checked by xmllint in the
 * svg test (tests/view/check_svg.sh).
 */
#include "fixtures.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remat/view/chart.h"
#include "remat/view/report.h"
#include "remat/solve/solve.h"
#include "remat/sim/timeline.h"
#include "view/chart_internal.h"

/* WCAG's relative luminance of "#rrggbb". */
static double luminance(const char *hex) {
    unsigned v[3];
    assert_int_equal(sscanf(hex, "#%02x%02x%02x", &v[0], &v[1], &v[2]), 3);
    double l[3];
    for (int c = 0; c < 3; c++) {
        const double s = v[c] / 255.0;
        l[c] = s <= 0.03928 ? s / 12.92 : pow((s + 0.055) / 1.055, 2.4);
    }
    return 0.2126 * l[0] + 0.7152 * l[1] + 0.0722 * l[2];
}

static void test_fill_lightness_rises(void **state) {
    (void)state;
    for (size_t n = 2; n <= REMAT_CAT_COUNT; n++) {
        char a[8], b[8];
        for (size_t i = 0; i + 1 < n; i++) {
            remat_chart_fill(i, n, a);
            remat_chart_fill(i + 1, n, b);
            if (!(luminance(b) > luminance(a) * 1.05)) {
                fail_msg("band %zu of %zu: %s then %s", i, n, a, b);
            }
        }
    }
}

/* A chart drawn into a string (kept out of line: GCC's dangling-pointer
   check mistakes the stream's buffer, returned, for a local). */
__attribute__((noinline)) static char *draw(void (*fn)(FILE *, const void *), const void *ctx) {
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    assert_non_null(mem);
    fn(mem, ctx);
    fclose(mem);
    return buf;
}

typedef struct tl_ctx {
    const remat_result_t *r;
    const remat_timeline_t *tl;
} tl_ctx_t;

static void draw_timeline(FILE *f, const void *ctx) {
    const tl_ctx_t *c = ctx;
    remat_chart_timeline(f, c->r, c->tl, false);
}

static void draw_layers(FILE *f, const void *ctx) {
    remat_chart_layers(f, ctx, true);
}

static void timeline_of(fx_run_t *f, remat_result_t *r, remat_timeline_t *tl) {
    remat_error_t err;
    remat_error_init(&err);
    remat_result_init(r);
    remat_timeline_init(tl);
    const remat_timeline_opts_t o = {.stage = REMAT_NONE, .unfold = true};
    assert_int_equal(remat_timeline_analyze(f->graph, &f->cfg, f->policy, &f->hw, &o, r, tl, &err),
                     REMAT_OK);
}

static void test_timeline_peak_drawn(void **state) {
    (void)state;
    const char *args[] = {"model_name=llama3-8b", "topology=tpu7x-8", "per_device_batch_size=2",
                          NULL};
    fx_run_t *f = fx_analyze_ok(NULL, args);
    remat_result_t r;
    remat_timeline_t tl;
    timeline_of(f, &r, &tl);
    size_t best[REMAT_I_TL_COLS];
    remat_i_timeline_columns(&tl, best, REMAT_I_TL_COLS);
    size_t shown = 0;
    for (size_t c = 0; c < REMAT_I_TL_COLS; c++) {
        shown += best[c] == tl.peak;
    }
    assert_true(shown >= 1);
    const tl_ctx_t ctx = {&r, &tl};
    char *svg = draw(draw_timeline, &ctx);
    char label[512], moment[256];
    remat_format_moment(&r.peak_at, moment, sizeof moment);
    snprintf(label, sizeof label, "peak %.2f GiB at %.4f s: ", (double)r.peak_bytes / 1073741824.0,
             tl.events[tl.peak].start_seconds);
    assert_non_null(strstr(svg, label));
    assert_non_null(strstr(svg, "budget 94.75 GiB"));
    assert_true(strncmp(svg, "<?xml", 5) == 0);
    assert_non_null(strstr(svg, "</svg>\n"));
    free(svg);
    svg = draw(draw_layers, &r);
    assert_true(strncmp(svg, "<svg", 4) == 0); /* embedded: no declaration */
    assert_non_null(strstr(svg, "layer 31 (profile 0)"));
    free(svg);
    remat_timeline_release(&tl);
    remat_result_release(&r);
    fx_free(f);
}


/* A text element of @p svg found by @p key (an attribute it carries, or the
   start of its text): its x, y, anchor and text, entities undone. */
static bool find_text(const char *svg, const char *key, double *x, double *y, char *anchor,
                      char *text, size_t size) {
    const char *p = strstr(svg, key);
    if (!p) {
        return false;
    }
    while (p > svg && strncmp(p, "<text ", 6) != 0) {
        p--;
    }
    char a[16];
    if (sscanf(p, "<text x=\"%lf\" y=\"%lf\" text-anchor=\"%15[a-z]\"", x, y, a) != 3) {
        return false;
    }
    snprintf(anchor, 16, "%s", a);
    const char *t = strchr(p, '>') + 1, *e = strstr(t, "</text>");
    size_t n = 0;
    for (const char *c = t; c < e && n + 1 < size; n++) {
        static const char *const ent[][2] = {{"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"},
                                              {"&quot;", "\""}, {"&#39;", "'"}};
        bool done = false;
        for (size_t k = 0; k < 5 && !done; k++) {
            if (strncmp(c, ent[k][0], strlen(ent[k][0])) == 0) {
                text[n] = ent[k][1][0];
                c += strlen(ent[k][0]);
                done = true;
            }
        }
        if (!done) {
            text[n] = *c++;
        }
    }
    text[n] = '\0';
    return true;
}

/* The peak's label never meets the budget line or the budget's labels,
   whether the peak is far under the budget, just under it, at it or just
   over it: positions read back from the SVG drawn, boxes from the
   glyphs' upper-bound extent. */
static void test_peak_label_clear_of_budget(void **state) {
    (void)state;
    const char *args[] = {"model_name=llama3-8b", "topology=tpu7x-8", "per_device_batch_size=2",
                          NULL};
    fx_run_t *f = fx_analyze_ok(NULL, args);
    const double shares[] = {0.3, 0.9, 0.95, 0.98, 0.99, 1.0, 1.01, 1.02, 1.05, 1.2, 2.0};
    for (size_t k = 0; k < sizeof shares / sizeof shares[0]; k++) {
        f->cfg.hbm_budget = (uint64_t)((double)f->r.peak_bytes / shares[k]);
        remat_result_t r;
        remat_timeline_t tl;
        timeline_of(f, &r, &tl);
        const tl_ctx_t ctx = {&r, &tl};
        char *svg = draw(draw_timeline, &ctx);
        double x, y, line;
        char anchor[16], text[512];
        assert_true(find_text(svg, "id=\"remat-peak-label\"", &x, &y, anchor, text, sizeof text));
        const remat_i_box_t label = remat_i_text_box(x, y, anchor, text, true);
        const char *l = strstr(svg, "id=\"remat-timeline-budget-line\"");
        assert_non_null(l);
        assert_int_equal(sscanf(strstr(l, "y1=\""), "y1=\"%lf\"", &line), 1);
        const remat_i_box_t stroke = {0, line - 1.5, 2000, line + 1.5};
        if (remat_i_boxes_overlap(&label, &stroke)) {
            fail_msg("peak at %.0f%% of the budget: label [%.1f, %.1f] crosses the line at %.1f",
                     100 * shares[k], label.y0, label.y1, line);
        }
        const char *keys[] = {"budget ", "safety margin "};
        for (size_t i = 0; i < 2; i++) {
            double bx, by;
            char ba[16], bt[256];
            char key[32];
            snprintf(key, sizeof key, ">%s", keys[i]);
            assert_true(find_text(svg, key, &bx, &by, ba, bt, sizeof bt));
            const remat_i_box_t b = remat_i_text_box(bx, by, ba, bt, false);
            if (remat_i_boxes_overlap(&label, &b)) {
                fail_msg("peak at %.0f%% of the budget: its label meets '%s'", 100 * shares[k],
                         bt);
            }
        }
        free(svg);
        remat_timeline_release(&tl);
        remat_result_release(&r);
    }
    fx_free(f);
}


typedef struct pol_ctx {
    const remat_result_t *const *rs;
    size_t n;
    const remat_solution_t *sol;
} pol_ctx_t;

static void draw_policies(FILE *f, const void *ctx) {
    const pol_ctx_t *c = ctx;
    remat_chart_policies(f, c->rs, c->n, c->sol, NULL, false);
}

/* The policies chart zooms on the budget's neighbourhood: a policy whose
   peak is far over the budget (selective, minimal: 7 and 14 times it) is
   drawn off the scale with its peak in its label, one near the budget is
   not; the solver's placement has its own marker and label. */
static void test_policies_zoom_and_solved(void **state) {
    (void)state;
    const char *names[] = {"full", "save_out_proj", "minimal", "selective"};
    fx_run_t *runs[4];
    const remat_result_t *rs[4];
    for (size_t i = 0; i < 4; i++) {
        char pol[64];
        snprintf(pol, sizeof pol, "remat_policy=%s", names[i]);
        const char *args[] = {"model_name=llama3.1-70b", "topology=tpu7x-128",
                              "per_device_batch_size=6", "max_target_length=8192", pol, NULL};
        runs[i] = fx_analyze_ok(NULL, args);
        rs[i] = &runs[i]->r;
    }
    remat_solution_t sol;
    remat_solution_init(&sol);
    remat_error_t err;
    remat_error_init(&err);
    assert_int_equal(remat_solve(runs[0]->graph, &runs[0]->cfg, &runs[0]->hw,
                                 REMAT_SOLVE_FRONTIER, &sol, &err),
                     REMAT_OK);
    assert_true(sol.found);
    const pol_ctx_t ctx = {rs, 4, &sol};
    char *svg = draw(draw_policies, &ctx);
    const double budget = (double)rs[0]->budget_bytes;
    for (size_t i = 0; i < 4; i++) {
        char label[128];
        snprintf(label, sizeof label, ">%s (%.0f GiB, off the scale)<", names[i],
                 (double)rs[i]->peak_bytes / 1073741824.0);
        /* within the budget: on the scale; past the zoom's reach: off it */
        const double share = (double)rs[i]->peak_bytes / budget;
        const bool off = strstr(svg, label) != NULL;
        if ((share <= 1 && off) || (share > 1.6 * 1.1 && !off)) {
            fail_msg("%s at %.2f of the budget: %s the scale", names[i], share,
                     off ? "off" : "on");
        }
    }
    assert_non_null(strstr(svg, "id=\"remat-solved-marker\""));
    char solved[128];
    snprintf(solved, sizeof solved, ">remat solve: %.2f GiB, %.3f s<",
             (double)sol.best.peak_bytes / 1073741824.0, sol.best.step_seconds);
    assert_non_null(strstr(svg, solved));
    free(svg);
    remat_solution_release(&sol);
    for (size_t i = 0; i < 4; i++) {
        fx_free(runs[i]);
    }
}

static void write_escaped(FILE *f, const void *ctx) {
    remat_i_xml_text(f, ctx);
}

/* Names reach the charts through one escape (op and graph names are
   restricted, a policy file's name and a model's are not). */
static void test_names_escaped(void **state) {
    (void)state;
    char *s = draw(write_escaped, "a<b & \"c\" 'd'>");
    assert_string_equal(s, "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;");
    free(s);
}

static void test_kind_parse(void **state) {
    (void)state;
    remat_chart_kind_t k;
    assert_true(remat_chart_kind_parse("policies", &k));
    assert_int_equal(k, REMAT_CHART_POLICIES);
    assert_false(remat_chart_kind_parse("bars", &k));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fill_lightness_rises),
        cmocka_unit_test(test_timeline_peak_drawn),
        cmocka_unit_test(test_peak_label_clear_of_budget),
        cmocka_unit_test(test_policies_zoom_and_solved),
        cmocka_unit_test(test_names_escaped),
        cmocka_unit_test(test_kind_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
