/* SPDX-License-Identifier: MIT */
/*
 * test_chart.c: the SVG charts (remat/chart.h). The fills' lightness rises
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

#include "remat/chart.h"
#include "remat/report.h"
#include "remat/timeline.h"
#include "chart_internal.h"

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

/* A chart drawn into a string. */
static char *draw(void (*fn)(FILE *, const void *), const void *ctx) {
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
        cmocka_unit_test(test_names_escaped),
        cmocka_unit_test(test_kind_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
