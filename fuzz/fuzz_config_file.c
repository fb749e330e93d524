/* SPDX-License-Identifier: MIT */
/*
 * fuzz_config_file.c: libFuzzer target for the config builder fed a JSON
 * config file (remat_config_build's file argument; the library reads
 * configs only from files). Each input is written to config.json in a
 * private temporary directory made at start-up and removed at exit. A
 * config that builds is resolved against the built-ins, analyzed and
 * printed to /dev/null.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_common.h"

static const fuzz_fixtures_t *fx;
static char dir[256];
static char path[300];

static void remove_dir(void) {
    unlink(path);
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fx = fuzz_fixtures_init();
    fuzz_make_dir("remat-fuzz-config", dir, sizeof dir);
    snprintf(path, sizeof path, "%s/config.json", dir);
    atexit(remove_dir);
    return 0;
}

/* Mutations that keep the input JSON (json_mutate.c). */
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed) {
    return fuzz_json_mutate(data, size, max_size, seed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_write_file(path, data, size);
    fuzz_build_file_and_run(fx, path);
    return 0;
}
