/* SPDX-License-Identifier: MIT */
/*
 * dtype.c: element types by name and size (graph.h: remat_dtype_name,
 * remat_dtype_bytes, remat_dtype_parse). Its own room because every layer
 * above reads dtypes (the ops' rules, the config's dtype keys, the tables)
 * and none of them needs the graph checks for it.
 *
 * Invariants: one name and one size per dtype in the enum's order (the
 * tables' length is the enum's count); the two config-relative dtypes
 * (act, weight) have no size of their own: 0 until a config gives it.
 */
#include <string.h>

#include "remat/model/graph.h"

static const char *const dtype_names[REMAT_DTYPE_COUNT] = {
    "act", "weight", "fp32", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2", "int32", "int8", "bool"};
static const unsigned dtype_bytes[REMAT_DTYPE_COUNT] = {0, 0, 4, 2, 2, 1, 1, 4, 1, 1};

const char *remat_dtype_name(remat_dtype_t d) {
    return d < REMAT_DTYPE_COUNT ? dtype_names[d] : "?";
}

unsigned remat_dtype_bytes(remat_dtype_t d) {
    return d < REMAT_DTYPE_COUNT ? dtype_bytes[d] : 0;
}

bool remat_dtype_parse(const char *s, remat_dtype_t *out) {
    static const struct {
        const char *alias;
        remat_dtype_t d;
    } aliases[] = {{"float32", REMAT_DTYPE_F32},   {"bfloat16", REMAT_DTYPE_BF16},
                   {"float16", REMAT_DTYPE_F16},   {"float8_e4m3fn", REMAT_DTYPE_F8E4M3},
                   {"fp8", REMAT_DTYPE_F8E4M3},    {"float8_e5m2", REMAT_DTYPE_F8E5M2},
                   {"int32", REMAT_DTYPE_I32},     {"f32", REMAT_DTYPE_F32}};
    for (int i = 0; i < REMAT_DTYPE_COUNT; i++) {
        if (strcmp(s, dtype_names[i]) == 0) {
            *out = (remat_dtype_t)i;
            return true;
        }
    }
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++) {
        if (strcmp(s, aliases[i].alias) == 0) {
            *out = aliases[i].d;
            return true;
        }
    }
    return false;
}
