/* SPDX-License-Identifier: MIT */
/*
 * cli.h: the command line's types, shared by its rooms: the options and
 * the command table (main.c runs commands, help.c describes them), a job
 * (one analysis's inputs and result) and the exit codes. Declares no
 * function: each room's header declares its own (job.h, fix.h, view.h,
 * help.h), so that the includes show who calls whom. Internal to the
 * remat program; not part of the library.
 *
 * Invariants: every command's options are a subset of CLI_OPT_ALL; a
 * command that parses its own arguments (list, validate, help, version)
 * takes no options (opts == 0); formats is non-zero exactly when the
 * command takes --format, and always holds text (the default); a command
 * without --format writes one kind of file (chart: SVG, report: HTML).
 */
#ifndef REMAT_CLI_H
#define REMAT_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "remat/input/config.h"
#include "remat/base/error.h"
#include "remat/model/graph.h"
#include "remat/model/hw.h"
#include "remat/model/policy.h"
#include "remat/view/report.h"
#include "remat/sim/sim.h"
#include "remat/solve/solve.h"
#include "input/config_internal.h"

/* The options, as bits of a command's opts. */
enum {
    CLI_OPT_CONFIG = 1u << 0,
    CLI_OPT_FORMAT = 1u << 1,
    CLI_OPT_POLICIES = 1u << 2,
    CLI_OPT_KIND = 1u << 3,
    CLI_OPT_FRONTIER = 1u << 4,
    CLI_OPT_EXHAUSTIVE = 1u << 5,
    CLI_OPT_EMIT_POLICY = 1u << 6,
    CLI_OPT_UNFOLD = 1u << 7,
    CLI_OPT_STAGE = 1u << 8,
    CLI_OPT_OUTPUT = 1u << 9,
    CLI_OPT_HTML = 1u << 10,
    CLI_OPT_CHART = 1u << 11,
    CLI_OPT_NO_CHART = 1u << 12,
    CLI_OPT_ALL = (1u << 13) - 1
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

/* The options given, parsed. */
typedef struct remat_cli_opts {
    unsigned given; /* CLI_OPT_* bits of the options on the command line */
    bool help;      /* --help or -h */
    const char *config;
    const char *emit_policy;
    unsigned solve_flags;
    remat_format_t fmt;
    const char *policies;
    const char *kind;  /* --kind as given: each command reads its own kinds */
    unsigned kinds;    /* table's, from kind (REMAT_TABLE_ALL without one) */
    bool unfold;
    size_t stage;      /* REMAT_NONE: the worst */
    const char *output; /* NULL or "-": standard output */
    const char *html;
    int chart;         /* analyze's chart: 1 --chart, 0 --no-chart, -1 on a terminal */
    int nargs;
    char **args;
    /* The config file's text, read once before the command runs (every
       build reads this copy: standard input and a pipe read only once). */
    remat_i_config_file_t *file;
    /* Where a report goes: standard output, or memory that reaches -o's
       file once the command ran (cli/main.c, run_to_output). */
    FILE *out;
} remat_cli_opts_t;

/* Everything one analysis needs, owned together. */
typedef struct remat_cli_job {
    remat_config_t cfg;
    remat_graph_t *graph;
    remat_policy_t *policy;
    remat_hw_t hw;
    remat_result_t result;
} remat_cli_job_t;

/* Exit codes. */
enum { REMAT_EXIT_OK = 0, REMAT_EXIT_NO = 1, REMAT_EXIT_INPUT = 2, REMAT_EXIT_INTERNAL = 3 };

/* One command, as git's builtin table lists them. */
typedef struct remat_cli_command {
    const char *name;
    const char *label;    /* the overview's first column: the name and its arguments */
    const char *synopsis; /* a usage line, after "remat " */
    const char *summary;  /* one line for the overview */
    const char *help;     /* what 'remat help NAME' adds to the summary */
    const char *exits;    /* its exit codes, as its help lists them */
    unsigned opts;        /* CLI_OPT_* it takes; 0 when it parses its own arguments */
    unsigned formats;     /* CLI_FMT(...) --format accepts; 0 without --format */
    int (*run)(const struct remat_cli_command *cmd, const remat_cli_opts_t *o, int argc,
               char **argv);
} remat_cli_command_t;

#endif
