/* SPDX-License-Identifier: MIT */
/*
 * util.h: helpers private to remat's sources: aborting allocation wrappers
 * (remat is a short-lived tool; an OOM abort removes every failure branch),
 * checked 64-bit arithmetic, and the JSON-path builder the loaders use to
 * point at a bad value.
 */
#ifndef REMAT_UTIL_H
#define REMAT_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

void *remat_i_xmalloc(size_t n);
void *remat_i_xcalloc(size_t count, size_t size);
void *remat_i_xrealloc(void *p, size_t n);
char *remat_i_xstrdup(const char *s);

/* a * b and a + b into *out; false (and *out untouched) on overflow. */
static inline bool remat_i_mul(uint64_t a, uint64_t b, uint64_t *out) {
    if (a != 0 && b > UINT64_MAX / a) {
        return false;
    }
    *out = a * b;
    return true;
}
static inline bool remat_i_add(uint64_t a, uint64_t b, uint64_t *out) {
    if (b > UINT64_MAX - a) {
        return false;
    }
    *out = a + b;
    return true;
}

/* A JSON path under construction: "$.layer.ops[3].in[1]". */
typedef struct remat_jpath {
    char buf[256];
    size_t len[32];
    size_t depth;
} remat_jpath_t;

void remat_i_jpath_init(remat_jpath_t *p);
void remat_i_jpath_key(remat_jpath_t *p, const char *key);
void remat_i_jpath_index(remat_jpath_t *p, size_t i);
void remat_i_jpath_pop(remat_jpath_t *p);

/* Reads a whole file into a new NUL-terminated buffer (free() it).
   Errors are REMAT_E_IO naming the path. */
#include "remat/error.h"
remat_status_t remat_i_read_file(const char *path, char **out, remat_error_t *err);

/* The most bytes an input file may hold (64 MiB: the largest built-in graph
   is under 100 KB); a larger one, or an endless one (/dev/zero), is an
   error rather than a read until memory runs out. */
#define REMAT_MAX_INPUT_BYTES ((size_t)64 << 20)

/* Whether @p s holds no control character (a newline in a name would
   break the one-line reports). */
bool remat_i_printable(const char *s);

/* Levenshtein distance, for "did you mean" suggestions. */
size_t remat_i_edit_distance(const char *a, const char *b);

#endif
