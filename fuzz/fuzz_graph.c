/* SPDX-License-Identifier: MIT */
/*
 * fuzz_graph.c: libFuzzer target for the graph loader
 * (remat_graph_load_string, format remat-graph/1). A graph that loads is
 * also analyzed under three presets (full, minimal_offloaded, none) with the
 * default config and hardware, and every report is printed to /dev/null:
 * a graph's names and dims reach the simulator and the tables.
 */
#include <stdlib.h>

#include "remat/input/graph_file.h"
#include "fuzz_common.h"

static const fuzz_fixtures_t *fx;
static remat_policy_t *presets[3];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fx = fuzz_fixtures_init();
    static const char *const names[] = {"full", "minimal_offloaded", "none"};
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
        remat_error_t err;
        remat_error_init(&err);
        if (remat_policy_builtin(names[i], &presets[i], &err)) {
            abort();
        }
    }
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
    remat_graph_t *g = NULL;
    if (remat_graph_load_string(text, "<fuzz>", &g, &err) == REMAT_OK) {
        for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
            fuzz_analyze_and_report(fx, g, &fx->cfg, presets[i], &fx->hw);
        }
    }
    remat_graph_free(g);
    free(text);
    return 0;
}
