/* SPDX-License-Identifier: MIT */
/*
 * runs_common.c: see runs_common.h. A run is analyzed through the public
 * API in the order the CLI's `check` uses (config, resolve, analyze), so a
 * validation figure is what a user's `remat check` prints.
 */
#include "remat/input/resolve.h"
#include "runs_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remat/base/error.h"
#include "remat/base/limits.h"

#define MAX_SETTINGS 64

void vr_run_analyze(vr_run_t *run, const char *first, json_t *settings) {
    vr_run_analyze_with(run, &first, first ? 1 : 0, settings);
}

void vr_run_analyze_with(vr_run_t *run, const char *const *first, size_t nfirst, json_t *settings) {
    memset(run, 0, sizeof *run);
    remat_result_init(&run->result);
    char *args[MAX_SETTINGS + 1];
    size_t n = 0;
    for (size_t i = 0; i < nfirst && n < MAX_SETTINGS / 2; i++) {
        args[n++] = (char *)first[i];
    }
    for (size_t i = 0; i < json_array_size(settings) && n < MAX_SETTINGS; i++) {
        const char *s = json_string_value(json_array_get(settings, i));
        if (!s) {
            snprintf(run->error, sizeof run->error, "setting %zu is not a string", i);
            return;
        }
        args[n++] = (char *)s;
    }
    remat_error_t err;
    remat_error_init(&err);
    if (remat_config_build(NULL, n, args, &run->cfg, &err) ||
        remat_resolve(&run->cfg, &run->graph, &run->policy, &run->hw, &err) ||
        remat_analyze(run->graph, &run->cfg, run->policy, &run->hw, &run->result, &err)) {
        remat_error_format(&err, run->error, sizeof run->error);
        run->hint = err.hint;
        vr_run_release(run);
        return;
    }
    run->ok = true;
}

void vr_run_release(vr_run_t *run) {
    remat_result_release(&run->result);
    remat_graph_free(run->graph);
    remat_policy_free(run->policy);
    run->graph = NULL;
    run->policy = NULL;
}

const char *vr_str(json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

double vr_num(json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : 0;
}

uint64_t vr_bytes(json_t *o, const char *key) {
    const double v = vr_num(o, key);
    /* the bound first: a double past 2^64 has no uint64_t value */
    return v >= 1 && v <= (double)REMAT_BYTES_MAX ? (uint64_t)v : 0;
}

bool vr_option(const char *arg, const char *name, double *out) {
    size_t n = strlen(name);
    if (strncmp(arg, name, n) != 0 || arg[n] != '=') {
        return false;
    }
    char *end;
    *out = strtod(arg + n + 1, &end);
    return end != arg + n + 1 && *end == '\0' && *out >= 0;
}
