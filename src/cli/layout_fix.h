/* SPDX-License-Identifier: MIT */
/*
 * cli/layout_fix.h: the nearest ICI mesh of a run's slice that JAX can lay
 * out (layout_fix.c), for the line remat prints when it cannot.
 */
#ifndef REMAT_CLI_LAYOUT_FIX_H
#define REMAT_CLI_LAYOUT_FIX_H

#include <stdbool.h>
#include <stddef.h>

#include "cli/cli.h"

/* Whether the run of @p o with @p extra (settings separated by spaces)
   added analyzes: the caller's (fix.c), which knows how a command is
   changed. */
typedef bool (*remat_cli_analyzes_fn)(const remat_cli_opts_t *o, const char *extra);

/* The settings that give the run of @p o the nearest ICI mesh JAX lays
   out on its topology's chip grid and with which the whole run analyzes
   (@p analyzes says), "ici_tensor_parallelism=4 ici_fsdp_parallelism=4",
   into @p buf; false (and "") when there is none to name. */
bool remat_cli_nearest_layout(const remat_cli_opts_t *o, remat_cli_analyzes_fn analyzes,
                              char *buf, size_t size);

#endif
