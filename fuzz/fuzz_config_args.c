/* SPDX-License-Identifier: MIT */
/*
 * fuzz_config_args.c: libFuzzer target for the config builder fed key=value
 * arguments (remat_config_build with no file): the input is split at '\n'
 * into at most 64 arguments. A config that builds is resolved against the
 * built-ins and analyzed, and every report is printed to /dev/null: the
 * values reach the mesh, the binding of dims and the simulator.
 */
#include <stdlib.h>

#include "fuzz_common.h"

static const fuzz_fixtures_t *fx;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fx = fuzz_fixtures_init();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_text(data, size);
    char *args[FUZZ_MAX_LINES];
    size_t n = fuzz_lines(text, args);
    remat_error_t err;
    remat_error_init(&err);
    /* Heap-allocated so that ASan sees reads past its end. */
    remat_config_t *cfg = malloc(sizeof *cfg);
    if (!cfg) {
        abort();
    }
    if (remat_config_build(NULL, n, args, cfg, &err) == REMAT_OK) {
        fuzz_config_run(fx, cfg);
    }
    free(cfg);
    free(text);
    return 0;
}
