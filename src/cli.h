/* SPDX-License-Identifier: MIT */
/*
 * cli.h: the command line's tables, shared by cli.c (which runs commands)
 * and cli_help.c (which describes them). Internal to the remat program; not
 * part of the library.
 *
 * Invariants: every command's options are a subset of CLI_OPT_ALL; a
 * command that parses its own arguments (list, validate, help, version)
 * takes no options (opts == 0); formats is non-zero exactly when the
 * command takes --format, and always holds text.
 */
#ifndef REMAT_CLI_H
#define REMAT_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "remat/report.h"

/* The options, as bits of a command's opts. */
enum {
    CLI_OPT_CONFIG = 1u << 0,
    CLI_OPT_FORMAT = 1u << 1,
    CLI_OPT_POLICIES = 1u << 2,
    CLI_OPT_KIND = 1u << 3,
    CLI_OPT_FRONTIER = 1u << 4,
    CLI_OPT_EXHAUSTIVE = 1u << 5,
    CLI_OPT_EMIT_POLICY = 1u << 6,
    CLI_OPT_ALL = (1u << 7) - 1
};

/* A format's bit in a command's formats. */
#define CLI_FMT(f) (1u << (f))

/* One option: how it is spelled, what it takes, what it does. */
typedef struct remat_cli_option {
    unsigned bit;     /* CLI_OPT_* */
    const char *name; /* "--config" */
    const char *arg;  /* "FILE", or NULL for a flag */
    const char *help; /* one line, without the command's name */
} remat_cli_option_t;

extern const remat_cli_option_t remat_cli_options[];
extern const size_t remat_cli_noptions;

typedef struct remat_cli_opts remat_cli_opts_t;

/* One command, as git's builtin table lists them. */
typedef struct remat_cli_command {
    const char *name;
    const char *label;    /* the overview's first column: the name and its arguments */
    const char *synopsis; /* a usage line, after "remat " */
    const char *summary;  /* one line for the overview */
    const char *help;     /* what 'remat help NAME' adds to the summary */
    unsigned opts;        /* CLI_OPT_* it takes; 0 when it parses its own arguments */
    unsigned formats;     /* CLI_FMT(...) --format accepts; 0 without --format */
    int (*run)(const struct remat_cli_command *cmd, const remat_cli_opts_t *o, int argc,
               char **argv);
} remat_cli_command_t;

/* The overview: every command and option ('remat help'). */
void remat_cli_overview(FILE *out, const remat_cli_command_t *cmds, size_t n);

/* One command's help ('remat help NAME', 'remat NAME --help'). */
void remat_cli_command_help(FILE *out, const remat_cli_command_t *cmd);

/* "text, json, csv" for a formats mask, "text (default), ..." with
   @p mark_default. */
void remat_cli_formats_text(unsigned formats, bool mark_default, char *buf, size_t size);

#endif
