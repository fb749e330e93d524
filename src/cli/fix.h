/* SPDX-License-Identifier: MIT */
/*
 * fix.h: the lines check and analyze end with when a run does not pass,
 * and the nearest mesh for a dim that does not divide (fix.c). Internal to
 * the remat program.
 */
#ifndef REMAT_CLI_FIX_H
#define REMAT_CLI_FIX_H

#include <stddef.h>

#include "cli/cli.h"
#include "remat/solve/solve.h"
#include "remat/view/report.h"

/* The most fix lines a run has: placement, batch, slice, and the scan
   where the layers run unrolled. */
#define REMAT_CLI_FIX_LINES 4

/* The fixes of job @p j, which does not pass, as check and analyze end
   with them (fix.c): remat_fixes_find into @p f, then one line each
   (placement, batch, slice; the scan where the run's layers are
   unrolled) into @p lines (room for REMAT_CLI_FIX_LINES), each the command
   @p cmd as given with the change, printed only once the changed run was
   built and passed. Release @p f either way. */
remat_status_t remat_cli_fixes(const remat_cli_opts_t *o, const char *cmd,
                               const remat_cli_job_t *j, remat_fixes_t *f,
                               remat_fix_line_t *lines, size_t *nlines, remat_error_t *err);

/* An analysis error's line (remat_cli_report_error), and, when a dim did
   not divide over its mesh shards (REMAT_HINT_MESH_DIVIDE), the nearest
   mesh of the same devices on which the run binds, as settings to give;
   when JAX cannot lay the mesh out on the slice (REMAT_HINT_MESH_LAYOUT),
   the nearest that it can (layout_fix.h). @p o may be NULL (no
   suggestion). Its exit code. */
int remat_cli_report_run_error(const remat_cli_opts_t *o, const remat_error_t *err);

#endif
