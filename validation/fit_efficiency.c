/* SPDX-License-Identifier: MIT */
/*
 * fit_efficiency.c: the time model's three efficiencies per profile, fitted
 * to published step times and reported held out (remat_realruns
 * --fit-efficiencies).
 *
 * The fit (docs/time-model.md): a grid over matmul (0.40 to 0.95 by 0.03),
 * attention and memory efficiency (0.30 to 0.90 by 0.10), choosing the
 * point with the least sum of squared log(estimated / published) over the
 * profile's runs (least squares on the log ratio: a typical run's error,
 * not the one run the model cannot express, sets the values), ties broken
 * by the worst case. The runs are the
 * published recipes (`recipe`) whose work remat can express.
 *
 * Held out: leave one run out. For each run the grid is searched again on
 * the profile's other runs and the run is estimated at that point; the
 * held-out errors are the figures to believe. A profile with one run has
 * no held-out figure.
 *
 * Invariant: every estimate is computed once (grid point x run) and the
 * fits only read that matrix, so the held-out search costs no analysis.
 */
#include "fit_efficiency.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runs_common.h"

#define NM 19 /* matmul 0.40 .. 0.94 */
#define NA 7  /* attention 0.30 .. 0.90 */
#define NE 7  /* memory 0.30 .. 0.90 */
#define NGRID (NM * NA * NE)
#define MAX_FIT_RUNS 64
#define TOLERANCE 0.20

static double grid_value(int axis, int k) {
    return axis == 0 ? 0.40 + 0.03 * k : 0.30 + 0.10 * k;
}

static void grid_point(int g, double *m, double *a, double *e) {
    *m = grid_value(0, g / (NA * NE));
    *a = grid_value(1, (g / NE) % NA);
    *e = grid_value(2, g % NE);
}

/* Whether @p run counts for the time fit of profile @p hw. */
static bool timed(json_t *run, const char *hw) {
    const char *h = vr_str(run, "hardware");
    return h && strcmp(h, hw) == 0 && vr_num(run, "step_seconds") > 0 &&
           json_is_true(json_object_get(run, "recipe")) &&
           !json_is_false(json_object_get(run, "expressible")) &&
           !json_is_false(json_object_get(run, "time_expressible"));
}

/* err[g][i] = log(estimate / published) of run i at grid point g; NAN
   when remat cannot analyze it there. */
static void estimate_all(json_t **runs, size_t n, double (*err)[MAX_FIT_RUNS]) {
    for (int g = 0; g < NGRID; g++) {
        double m, a, e;
        grid_point(g, &m, &a, &e);
        char sm[48], sa[48], se[48], hw[96];
        snprintf(sm, sizeof sm, "matmul_efficiency=%.2f", m);
        snprintf(sa, sizeof sa, "attention_efficiency=%.2f", a);
        snprintf(se, sizeof se, "memory_efficiency=%.2f", e);
        for (size_t i = 0; i < n; i++) {
            snprintf(hw, sizeof hw, "hardware=%s", vr_str(runs[i], "hardware"));
            const char *first[4] = {hw, sm, sa, se};
            vr_run_t v;
            vr_run_analyze_with(&v, first, 4, json_object_get(runs[i], "settings"));
            err[g][i] = v.ok ? log(v.result.step_seconds / vr_num(runs[i], "step_seconds")) : NAN;
            vr_run_release(&v);
        }
    }
}

/* The best grid point over the runs but @p skip (SIZE_MAX: none). */
static int best_point(double (*err)[MAX_FIT_RUNS], size_t n, size_t skip) {
    int best = -1;
    double best_worst = 0, best_sq = 0;
    for (int g = 0; g < NGRID; g++) {
        double worst = 0, sq = 0;
        bool ok = true;
        for (size_t i = 0; i < n && ok; i++) {
            if (i == skip) {
                continue;
            }
            ok = !isnan(err[g][i]);
            worst = fmax(worst, fabs(err[g][i]));
            sq += err[g][i] * err[g][i];
        }
        if (ok && (best < 0 || sq < best_sq - 1e-12 ||
                   (fabs(sq - best_sq) <= 1e-12 && worst < best_worst))) {
            best = g;
            best_worst = worst;
            best_sq = sq;
        }
    }
    return best;
}

/* One run's row: its estimate over the published time at the fit on all
   runs and at the fit without it (NAN: none). */
static void print_run(const char *hw, json_t *run, double fitted, double held, bool md) {
    char out[32];
    snprintf(out, sizeof out, isnan(held) ? "-" : "%.3f", held);
    printf(md ? "| %s | %s | %.3f | %s |\n" : "    %-8s %-50s fitted %.3f  held out %s\n", hw,
           vr_str(run, "id"), fitted, out);
}

static void print_profile(const char *hw, json_t **runs, size_t n, double (*err)[MAX_FIT_RUNS],
                          bool md) {
    int g = best_point(err, n, (size_t)-1);
    if (g < 0) {
        return;
    }
    double m, a, e;
    grid_point(g, &m, &a, &e);
    size_t in_ok = 0, out_ok = 0, out_n = 0;
    double in_worst = 0, out_worst = 0;
    for (size_t i = 0; i < n; i++) {
        const double fitted = exp(err[g][i]);
        const int h = n > 1 ? best_point(err, n, i) : -1;
        const double held = h >= 0 ? exp(err[h][i]) : NAN;
        in_ok += fabs(fitted - 1) <= TOLERANCE;
        in_worst = fmax(in_worst, fabs(fitted - 1));
        if (h >= 0) {
            out_n++;
            out_ok += fabs(held - 1) <= TOLERANCE;
            out_worst = fmax(out_worst, fabs(held - 1));
        }
        print_run(hw, runs[i], fitted, held, md);
    }
    printf(md ? "| **%s** | matmul %.2f, attention %.2f, memory %.2f | fitted: %zu of %zu within 20%% "
                "(worst %.1f%%) | held out: %zu of %zu within 20%% (worst %.1f%%) |\n"
              : "  %-8s matmul %.2f attention %.2f memory %.2f: fitted %zu of %zu within 20%% (worst "
                "%.1f%%); held out %zu of %zu within 20%% (worst %.1f%%)\n",
           hw, m, a, e, in_ok, n, 100 * in_worst, out_ok, out_n, 100 * out_worst);
}

int remat_fit_efficiencies(json_t *runs, bool md) {
    static const char *const profiles[] = {"tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu7x",
                                           "h100",   "h200",    "b200"};
    static double err[NGRID][MAX_FIT_RUNS];
    if (md) {
        printf("| profile | run | estimated / published, fitted | held out |\n|---|---|---:|---:|\n");
    }
    for (size_t p = 0; p < sizeof profiles / sizeof *profiles; p++) {
        json_t *mine[MAX_FIT_RUNS];
        size_t n = 0;
        for (size_t i = 0; i < json_array_size(runs) && n < MAX_FIT_RUNS; i++) {
            if (timed(json_array_get(runs, i), profiles[p])) {
                mine[n++] = json_array_get(runs, i);
            }
        }
        if (n) {
            estimate_all(mine, n, err);
            print_profile(profiles[p], mine, n, err, md);
        }
    }
    return 0;
}
