/* SPDX-License-Identifier: MIT */
/*
 * realruns.c: remat against published MaxText runs (validation/runs.json).
 *
 *   remat_realruns [--markdown] [--check] [FILE]
 *
 * Each run is analyzed exactly as `remat check` would analyze its settings
 * (the hardware profile's default budget, the default safety margin), and
 * compared with what happened: the verdict (the run fit, or XLA ran out of
 * memory), remat's figure for XLA's peak (xla_expected_peak_bytes: XLA
 * prints the step after its rematerialization pass) against the bytes XLA
 * printed as used where it printed them, and the estimated step time
 * against the published one. Runs marked
 * not expressible (a block remat lacks) are listed and not counted.
 *
 * The table goes to stdout, as text or Markdown (docs/validation.md is this
 * output). With --check the exit code is 1 when a target is missed:
 * verdict right on at least 90% of the runs, no "fits" for a run that ran
 * out of memory, the peak within 10% of XLA's bytes, the step time within
 * 20% of the published one; the --*-floor/--*-ceiling options relax a
 * target to the floor the suite holds today (the ctest's). Exit 2 on a bad
 * file or argument.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fit_efficiency.h"
#include "runs_common.h"

#define GIB VR_GIB

/* The targets of the real-runs issue. */
#define VERDICT_TARGET 0.90
#define PEAK_TOLERANCE 0.10
#define STEP_TOLERANCE 0.20

typedef struct tally {
    size_t runs, right, fits_for_oom, skipped;
    size_t compiled, compiled_right, compiled_fits_for_oom, compiler_differs;
    size_t peak_cases, peak_ok, step_cases, step_ok, other_steps, other_ok;
    double worst_peak, worst_step;
} tally_t;

typedef struct row {
    const char *id, *hardware, *expected;
    bool ok, passes;
    bool recipe; /* a published recipe whose step time remat can express: the time target */
    uint64_t peak, limit;
    uint64_t xla_expected; /* remat's figure for XLA's peak (xla_expected_peak_bytes) */
    double xla_ratio, step_pred, step_real;
    /* the same configuration compiled at e591f30 (validation/xla_runs.json,
       its published_run): XLA's verdict and peak over its limit, or NULL */
    const char *e591_status;
    double e591_share, e591_ratio; /* XLA's peak / its limit; remat's / XLA's */
    char error[256];
} row_t;

/* The compiled corpus's entry for published run @p id, or NULL. */
static json_t *compiled_for(json_t *corpus, const char *id) {
    for (size_t i = 0; i < json_array_size(corpus); i++) {
        json_t *e = json_array_get(corpus, i);
        const char *pr = vr_str(e, "published_run"), *st = vr_str(e, "status");
        if (pr && strcmp(pr, id) == 0 && st && (strcmp(st, "fits") == 0 || strcmp(st, "oom") == 0)) {
            return e;
        }
    }
    return NULL;
}

static void read_compiled(json_t *corpus, row_t *row) {
    json_t *e = compiled_for(corpus, row->id);
    if (!e || vr_num(e, "xla_limit_bytes") <= 0 || vr_num(e, "xla_peak_bytes") <= 0) {
        return;
    }
    row->e591_status = vr_str(e, "status");
    row->e591_share = vr_num(e, "xla_peak_bytes") / vr_num(e, "xla_limit_bytes");
    row->e591_ratio = row->ok ? (double)row->xla_expected / vr_num(e, "xla_peak_bytes") : 0;
}

/* The run's figures, where given (null is "not known"), must be positive
   numbers, a byte count at most REMAT_BYTES_MAX: the first key that is
   not one, or NULL. A negative or textual figure would otherwise be
   skipped as "not known" or counted as nonsense. */
static const char *bad_figure(json_t *run) {
    static const char *const keys[] = {"xla_used_bytes", "step_seconds", "tflops_per_device",
                                       "devices", "chips"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        json_t *v = json_object_get(run, keys[k]);
        if (!v || json_is_null(v)) {
            continue;
        }
        const double x = json_is_number(v) ? json_number_value(v) : -1;
        if (!(x > 0) || (k == 0 && x > (double)REMAT_BYTES_MAX)) {
            return keys[k];
        }
    }
    return NULL;
}

/* Whether every run of @p runs (from @p path) has its keys and sane
   figures; else one line on stderr naming the first that does not. */
static bool runs_valid(json_t *runs, const char *path) {
    for (size_t i = 0; i < json_array_size(runs); i++) {
        json_t *run = json_array_get(runs, i);
        const char *id = vr_str(run, "id"), *bad = bad_figure(run);
        if (!id || !vr_str(run, "hardware") || !vr_str(run, "expected") ||
            !json_is_array(json_object_get(run, "settings"))) {
            fprintf(stderr, "remat_realruns: %s: $.runs[%zu] needs id, hardware, expected and "
                            "settings\n", path, i);
            return false;
        }
        if (bad) {
            fprintf(stderr, "remat_realruns: %s: $.runs[%zu].%s (%s) must be a positive number%s\n",
                    path, i, bad, id,
                    strcmp(bad, "xla_used_bytes") == 0 ? " of bytes, at most 2^62" : "");
            return false;
        }
    }
    return true;
}

/* Analyzes one run as `remat check` would, on its hardware profile. */
static void analyze_run(json_t *run, row_t *row) {
    char hw_arg[96];
    snprintf(hw_arg, sizeof hw_arg, "hardware=%s", row->hardware);
    vr_run_t v;
    vr_run_analyze(&v, hw_arg, json_object_get(run, "settings"));
    if (!v.ok) {
        snprintf(row->error, sizeof row->error, "%s", v.error);
    } else {
        const remat_result_t *r = &v.result;
        row->ok = true;
        row->passes = remat_result_passes(r);
        row->peak = r->peak_bytes;
        row->limit = r->budget_bytes;
        double used = vr_num(run, "xla_used_bytes");
        /* XLA's printed bytes are the step after its rematerialization
           pass: set against remat's figure for them */
        row->xla_expected = r->xla_expected_peak_bytes;
        row->xla_ratio = used > 0 ? (double)r->xla_expected_peak_bytes / used : 0;
        row->step_pred = r->step_seconds;
        row->step_real = vr_num(run, "step_seconds");
    }
    vr_run_release(&v);
}

static void count(const row_t *row, tally_t *t) {
    t->runs++;
    if (row->e591_status) {
        bool xfits = strcmp(row->e591_status, "fits") == 0;
        t->compiled++;
        t->compiled_right += row->ok && row->passes == xfits;
        t->compiled_fits_for_oom += row->ok && row->passes && !xfits;
        t->compiler_differs += xfits != (strcmp(row->expected, "fits") == 0);
    }
    bool fits = strcmp(row->expected, "fits") == 0;
    t->right += row->ok && row->passes == fits;
    t->fits_for_oom += row->ok && row->passes && !fits;
    if (row->xla_ratio > 0) {
        double dev = fabs(row->xla_ratio - 1);
        t->peak_cases++;
        t->peak_ok += dev <= PEAK_TOLERANCE;
        t->worst_peak = dev > t->worst_peak ? dev : t->worst_peak;
    }
    if (row->ok && row->step_real > 0) {
        double dev = fabs(row->step_pred / row->step_real - 1);
        if (row->recipe) {
            t->step_cases++;
            t->step_ok += dev <= STEP_TOLERANCE;
            t->worst_step = dev > t->worst_step ? dev : t->worst_step;
        } else {
            t->other_steps++;
            t->other_ok += dev <= STEP_TOLERANCE;
        }
    }
}

static void print_row(const row_t *row, bool md) {
    char verdict[16], xla[16], step[300];
    snprintf(verdict, sizeof verdict, "%s", !row->ok ? "error" : row->passes ? "fits" : "oom");
    snprintf(xla, sizeof xla, row->xla_ratio > 0 ? "%.3f" : "-", row->xla_ratio);
    if (row->ok && row->step_real > 0) {
        snprintf(step, sizeof step, "%.2f / %.2f = %.3f%s", row->step_pred, row->step_real,
                 row->step_pred / row->step_real, row->recipe ? "" : " (not a recipe)");
    } else {
        snprintf(step, sizeof step, "%s", row->ok ? "-" : row->error);
    }
    bool right = row->ok && row->passes == (strcmp(row->expected, "fits") == 0);
    char e591[48] = "-";
    if (row->e591_status) {
        snprintf(e591, sizeof e591, "%s %.3f, remat %.3f", row->e591_status, row->e591_share,
                 row->e591_ratio);
    }
    if (md) {
        printf("| %s | %s | %s | %s%s | %.2f | %.2f | %s | %s | %s |\n", row->id, row->hardware,
               row->expected, verdict, right ? "" : " **(wrong)**", (double)row->peak / GIB,
               (double)row->limit / GIB, xla, e591, step);
    } else {
        printf("%-44s %-8s %-5s %-6s%s %8.2f %7.2f %6s  %-24s %s\n", row->id, row->hardware,
               row->expected, verdict, right ? " " : "!", (double)row->peak / GIB,
               (double)row->limit / GIB, xla, e591, step);
    }
}

static void print_header(bool md) {
    if (md) {
        printf("| run | hardware | truth | remat | peak GiB | limit GiB | remat's XLA figure / XLA used | "
               "compiled at e591f30: XLA / limit, remat's XLA figure / XLA | "
               "step s: remat / published = ratio |\n|---|---|---|---|---:|---:|---:|---|---|\n");
    } else {
        printf("%-44s %-8s %-5s %-7s %8s %7s %6s  %-24s %s\n", "run", "hardware", "truth", "remat",
               "peak_GiB", "limit", "xla", "at e591f30: XLA, remat/XLA", "step_s remat / published");
    }
}

/* What --check holds the suite to: the targets by default, or a
   floor the suite is known to hold (the ctest's, with the gap to the
   targets stated in validation/README.md). */
typedef struct floors {
    double verdict;       /* fraction of runs with the verdict right */
    size_t fits_for_oom;  /* at most this many "fits" for runs that ran out of memory */
    size_t peak_misses;   /* at most this many peaks outside the tolerance */
    size_t step_misses;   /* at most this many recipe step times outside it */
} floors_t;

static bool summarize(const tally_t *t, const floors_t *f, bool md) {
    double acc = t->runs ? (double)t->right / (double)t->runs : 0;
    bool ok = acc >= f->verdict && t->fits_for_oom <= f->fits_for_oom &&
              t->peak_cases - t->peak_ok <= f->peak_misses &&
              t->step_cases - t->step_ok <= f->step_misses;
    const char *p = md ? "- " : "";
    printf("\n%sverdict right on %zu of %zu runs (%.1f%%; target %.0f%%), %zu not expressible\n",
           p, t->right, t->runs, 100 * acc, 100 * VERDICT_TARGET, t->skipped);
    printf("%s\"fits\" for a run that ran out of memory: %zu (target 0)\n", p, t->fits_for_oom);
    printf("%speak within %.0f%% of XLA's used bytes: %zu of %zu (worst %.1f%%)\n", p,
           100 * PEAK_TOLERANCE, t->peak_ok, t->peak_cases, 100 * t->worst_peak);
    printf("%sstep time within %.0f%% of the published one, recipes: %zu of %zu (worst %.1f%%); "
           "other published runs: %zu of %zu\n",
           p, 100 * STEP_TOLERANCE, t->step_ok, t->step_cases, 100 * t->worst_step, t->other_ok,
           t->other_steps);
    printf("%scompiled again at e591f30 (validation/xla_runs.json): %zu of %zu runs; remat's "
           "verdict agrees with that compile's on %zu, \"fits\" where it ran out of memory %zu; "
           "the compile's verdict differs from the published outcome on %zu\n",
           p, t->compiled, t->runs, t->compiled_right, t->compiled_fits_for_oom,
           t->compiler_differs);
    return ok;
}

/* The runs remat cannot analyze yet, with what they need. */
static void print_unexpressible(json_t *runs, bool md) {
    printf("\n%snot expressible (not counted):\n", md ? "" : "");
    for (size_t i = 0; i < json_array_size(runs); i++) {
        json_t *run = json_array_get(runs, i);
        if (!json_is_false(json_object_get(run, "expressible"))) {
            continue;
        }
        json_t *why = json_object_get(run, "not_expressible");
        printf("%s%s (%s):", md ? "- " : "  ", vr_str(run, "id"), vr_str(run, "expected"));
        for (size_t k = 0; k < json_array_size(why); k++) {
            const char *w = json_string_value(json_array_get(why, k));
            printf("%s %s", k ? ";" : "", w ? w : "?");
        }
        printf("\n");
    }
}

int main(int argc, char **argv) {
    bool md = false, check = false, fit = false;
    const char *path = NULL;
    floors_t f = {VERDICT_TARGET, 0, 0, 0};
    for (int i = 1; i < argc; i++) {
        double v = 0;
        if (strcmp(argv[i], "--markdown") == 0) {
            md = true;
        } else if (strcmp(argv[i], "--check") == 0) {
            check = true;
        } else if (strcmp(argv[i], "--fit-efficiencies") == 0) {
            fit = true;
        } else if (vr_option(argv[i], "--verdict-floor", &v) && v <= 1) {
            f.verdict = v;
        } else if (vr_option(argv[i], "--fits-for-oom-ceiling", &v)) {
            f.fits_for_oom = (size_t)v;
        } else if (vr_option(argv[i], "--peak-misses-ceiling", &v)) {
            f.peak_misses = (size_t)v;
        } else if (vr_option(argv[i], "--step-misses-ceiling", &v)) {
            f.step_misses = (size_t)v;
        } else if (argv[i][0] != '-' && !path) {
            path = argv[i];
        } else {
            fprintf(stderr, "usage: remat_realruns [--markdown] [--check] [--fit-efficiencies] [--verdict-floor=F] "
                            "[--fits-for-oom-ceiling=N] [--peak-misses-ceiling=N] "
                            "[--step-misses-ceiling=N] [FILE]\n");
            return 2;
        }
    }
    if (!path) {
        path = REMAT_RUNS_FILE;
    }
    /* the same configurations compiled at e591f30, when that file is there */
    json_t *corpus_root = json_load_file(REMAT_XLA_RUNS_FILE, 0, NULL);
    json_t *corpus = json_object_get(corpus_root, "runs");
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    json_t *runs = root ? json_object_get(root, "runs") : NULL;
    if (!json_is_array(runs) || !runs_valid(runs, path)) {
        if (!json_is_array(runs)) {
            fprintf(stderr, "remat_realruns: %s: %s\n", path,
                    root ? "$.runs must be an array" : jerr.text);
        }
        json_decref(root);
        json_decref(corpus_root);
        return 2;
    }
    if (fit) {
        int rc = remat_fit_efficiencies(runs, md);
        json_decref(root);
        json_decref(corpus_root);
        return rc;
    }
    tally_t t = {0};
    print_header(md);
    for (size_t i = 0; i < json_array_size(runs); i++) {
        json_t *run = json_array_get(runs, i);
        row_t row = {.id = vr_str(run, "id"), .hardware = vr_str(run, "hardware"),
                     .expected = vr_str(run, "expected")};
        if (json_is_false(json_object_get(run, "expressible"))) {
            t.skipped++;
            continue; /* listed after the table */
        }
        row.recipe = json_is_true(json_object_get(run, "recipe")) &&
                     !json_is_false(json_object_get(run, "time_expressible"));
        analyze_run(run, &row);
        read_compiled(corpus, &row);
        count(&row, &t);
        print_row(&row, md);
    }
    bool ok = summarize(&t, &f, md);
    print_unexpressible(runs, md);
    json_decref(root);
    json_decref(corpus_root);
    return check && !ok ? 1 : 0;
}
