/* SPDX-License-Identifier: MIT */
/*
 * fit_efficiency.h: the time model's efficiencies fitted to the published
 * step times of validation/runs.json, and their leave-one-run-out held-out
 * errors (remat_realruns --fit-efficiencies; fit_efficiency.c says how).
 */
#ifndef REMAT_VALIDATION_FIT_EFFICIENCY_H
#define REMAT_VALIDATION_FIT_EFFICIENCY_H

#include <stdbool.h>

#include <jansson.h>

/** Prints, per profile, the fit on all its timed runs and each run held out.
    @p runs is the file's $.runs (borrowed). Returns 0. */
int remat_fit_efficiencies(json_t *runs, bool md);

#endif
