/* SPDX-License-Identifier: MIT */
/*
 * fuzz_policy.c: libFuzzer target for the policy loader
 * (remat_policy_load_string, format remat-policy/1). A policy that loads is
 * checked against the built-in llama graph (remat_policy_check) and, when it
 * passes, analyzed with the default config and printed to /dev/null, so
 * its names, predicate and layer ranges reach the planner.
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
    remat_policy_t *p = NULL;
    if (remat_policy_load_string(text, "<fuzz>", false, &p, &err) == REMAT_OK &&
        remat_policy_check(p, fx->graph, &err) == REMAT_OK) {
        fuzz_analyze_and_report(fx, fx->graph, &fx->cfg, p, &fx->hw);
    }
    remat_policy_free(p);
    free(text);
    return 0;
}
