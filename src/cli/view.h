/* SPDX-License-Identifier: MIT */
/*
 * view.h: the commands that draw the step (view.c): timeline, chart,
 * report, analyze's terminal chart, and the policies' comparison with the
 * solver's frontier. Internal to the remat program.
 */
#ifndef REMAT_CLI_VIEW_H
#define REMAT_CLI_VIEW_H

#include <stddef.h>

#include "cli/cli.h"
#include "cli/job.h"
#include "remat/solve/solve.h"

/* The drawing commands (view.c). */
int remat_cli_timeline(const remat_cli_opts_t *o);
int remat_cli_chart(const remat_cli_opts_t *o);
int remat_cli_report(const remat_cli_opts_t *o);
/* analyze's text report followed by the terminal chart of live HBM. */
int remat_cli_analyze_chart(const remat_cli_opts_t *o);

/* compare's analyses (remat_cli_compare_run, exit code in *rc) and the
   solver's Pareto frontier of the run into @p sol, or, when there is none,
   why into @p note (else note is ""). Release @p c and @p sol either way. */
remat_status_t remat_cli_policies(const remat_cli_opts_t *o, remat_cli_compare_t *c,
                                  remat_solution_t *sol, char *note, size_t size, int *rc,
                                  remat_error_t *err);

#endif
