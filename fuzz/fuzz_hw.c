/* SPDX-License-Identifier: MIT */
/*
 * fuzz_hw.c: libFuzzer target for the hardware profile loader
 * (remat_hw_load_string, formats remat-hardware/2 and /1). A profile that
 * loads runs the default analysis (and is printed to /dev/null), so its
 * bandwidths, FLOP rates and limits reach the time model and the verdict.
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

/* Mutations that keep the input JSON (json_mutate.c). */
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed) {
    return fuzz_json_mutate(data, size, max_size, seed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_text(data, size);
    remat_error_t err;
    remat_error_init(&err);
    remat_hw_t hw;
    if (remat_hw_load_string(text, "<fuzz>", &hw, &err) == REMAT_OK) {
        fuzz_analyze_and_report(fx, fx->graph, &fx->cfg, fx->policy, &hw);
    }
    free(text);
    return 0;
}
