/* SPDX-License-Identifier: MIT */
/*
 * fuzz_common.h: what the libFuzzer targets share: the input as a C string
 * or as lines, read-only fixtures built once (the default config's graph,
 * policy and hardware), and a run of the analysis and every report on a
 * loaded input so that a fuzzed value reaches the simulator and the printers,
 * not only the loader.
 */
#ifndef REMAT_FUZZ_COMMON_H
#define REMAT_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "remat/input/config.h"
#include "remat/model/graph.h"
#include "remat/model/hw.h"
#include "remat/model/policy.h"

/* libFuzzer's entry points (declared here for -Wmissing-prototypes). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);

/* The most lines (arguments) a target splits its input into. */
#define FUZZ_MAX_LINES 64

/* Fixtures: the default analysis (llama3-8b, flash, remat_policy=full,
   tpu7x), built once by fuzz_fixtures_init and never changed by a run. */
typedef struct fuzz_fixtures {
    remat_config_t cfg;
    remat_graph_t *graph;
    remat_policy_t *policy;
    remat_hw_t hw;
    FILE *devnull; /* where reports go */
} fuzz_fixtures_t;

/* Builds the fixtures; aborts if the built-ins do not load (a broken build,
   not a finding). */
const fuzz_fixtures_t *fuzz_fixtures_init(void);

/* The input as a NUL-terminated copy (freed by the caller). An embedded NUL
   ends the text early, as it would for a C string read from a file. */
char *fuzz_text(const uint8_t *data, size_t size);

/* Splits a NUL-terminated @p text in place at each '\n' into at most
   FUZZ_MAX_LINES pointers; returns the count. A trailing empty line is not
   counted. */
size_t fuzz_lines(char *text, char **lines);

/* Analyzes @p cfg with @p g, @p p and @p hw, and on success writes every
   report in every format to the fixtures' /dev/null. Errors are fine. */
void fuzz_analyze_and_report(const fuzz_fixtures_t *fx, const remat_graph_t *g,
                             const remat_config_t *cfg, const remat_policy_t *p,
                             const remat_hw_t *hw);

/* One mutation of the JSON text in @p data (json_mutate.c): structural when
   it parses, else libFuzzer's byte mutation. Returns the new size, at most
   @p max_size. The JSON targets' LLVMFuzzerCustomMutator. */
size_t fuzz_json_mutate(uint8_t *data, size_t size, size_t max_size, unsigned int seed);

/* Resolves a built config's graph, policy and hardware and runs
   fuzz_analyze_and_report on them. A config that names a file for any of
   them is left there: the config targets do not read files they did not
   write. */
void fuzz_config_run(const fuzz_fixtures_t *fx, const remat_config_t *cfg);

/* A private directory $TMPDIR/<prefix>.XXXXXX (or under /tmp) into @p dir;
   aborts when it cannot be made. The caller removes it at exit. */
void fuzz_make_dir(const char *prefix, char *dir, size_t size);

/* Writes the input to @p path, replacing it; aborts when it cannot. */
void fuzz_write_file(const char *path, const uint8_t *data, size_t size);

/* Builds a config from the file @p path (remat_config_build) and, when it
   builds, runs fuzz_config_run on it. */
void fuzz_build_file_and_run(const fuzz_fixtures_t *fx, const char *path);

#endif
