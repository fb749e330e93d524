/* SPDX-License-Identifier: MIT */
/*
 * help.h: the command line's help drawn from its tables (help.c).
 * Internal to the remat program.
 */
#ifndef REMAT_CLI_HELP_H
#define REMAT_CLI_HELP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "cli/cli.h"

/* The overview: every command and option ('remat help'). */
void remat_cli_overview(FILE *out, const remat_cli_command_t *cmds, size_t n);

/* One command's help ('remat help NAME', 'remat NAME --help'). */
void remat_cli_command_help(FILE *out, const remat_cli_command_t *cmd);

/* "text, json, csv" for a formats mask, "text (default), ..." with
   @p mark_default. */
void remat_cli_formats_text(unsigned formats, bool mark_default, char *buf, size_t size);

#endif
