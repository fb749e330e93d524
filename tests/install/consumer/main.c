/* SPDX-License-Identifier: MIT */
/*
 * The install test's consumer: the default analysis (llama3-8b on TPU7x,
 * MaxText's defaults) through the installed library only, printing the
 * version it was compiled against and the peak, which the test compares
 * with the installed CLI's.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "remat/remat.h" /* the whole public API, as a program outside the tree takes it */

int main(void) {
    remat_error_t err;
    remat_error_init(&err);
    /* Static: the config holds fixed-size buffers (a few KiB). */
    static remat_config_t cfg;
    remat_graph_t *graph = NULL;
    remat_policy_t *policy = NULL;
    remat_hw_t hw;
    remat_result_t result;
    remat_result_init(&result);

    remat_status_t st = remat_config_build(NULL, 0, NULL, &cfg, &err);
    if (st == REMAT_OK) {
        st = remat_resolve(&cfg, &graph, &policy, &hw, &err);
    }
    if (st == REMAT_OK) {
        st = remat_analyze(graph, &cfg, policy, &hw, &result, &err);
    }
    int rc = EXIT_SUCCESS;
    if (st != REMAT_OK) {
        char line[1024];
        remat_error_format(&err, line, sizeof line);
        fprintf(stderr, "consumer: %s\n", line);
        rc = EXIT_FAILURE;
    } else {
        printf("remat %s peak_hbm_bytes %" PRIu64 "\n", REMAT_VERSION_STRING, result.peak_bytes);
    }
    remat_result_release(&result);
    remat_graph_free(graph);
    remat_policy_free(policy);
    return rc;
}
