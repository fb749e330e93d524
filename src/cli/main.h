/* SPDX-License-Identifier: MIT */
/*
 * main.h: the command line as functions (main.c): the whole program for a
 * fuzzer, and one command run in process for a binding (the Python
 * package), whose output and messages go to memory instead of the
 * standard streams. Internal to remat's own programs and bindings.
 *
 * getopt keeps its state in globals, so commands parse their options one
 * at a time: a caller running them from several threads serializes the
 * calls (the Python package holds a lock around each).
 */
#ifndef REMAT_CLI_MAIN_H
#define REMAT_CLI_MAIN_H

#include <stdio.h>

#include "cli/job.h"
#include "input/config_internal.h"

/* The program: argv as main's, output on standard output. */
int remat_cli_main(int argc, char **argv);

/* One command line (argv[0] the program, argv[1] the command) run as the
   program runs it, with its output into @p out and what it would write on
   standard error into @p sink (its error structured there too); when
   @p config is given, its text is the run's config file (then argv gives
   none). argv is permuted as getopt does. Returns the exit code. */
int remat_cli_call(int argc, char **argv, FILE *out, const remat_i_config_file_t *config,
                   remat_cli_sink_t *sink);

/* As remat_cli_call for `remat analyze ARGS` (argv[1] "analyze"), its
   analysis kept in @p j (zeroed) instead of printed: the config notes go
   to @p sink. Release @p j either way. Returns the exit code (0, 2, 3). */
int remat_cli_call_job(int argc, char **argv, const remat_i_config_file_t *config,
                       remat_cli_job_t *j, remat_cli_sink_t *sink);

#endif
