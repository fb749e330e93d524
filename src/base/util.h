/* SPDX-License-Identifier: MIT */
/*
 * util.h: helpers private to remat's sources: the allocators, checked 64-bit
 * arithmetic, and the JSON-path builder the loaders use to point at a bad
 * value.
 *
 * Allocation policy. Two families, one counter:
 *  - remat_i_try_*: NULL on failure, with REMAT_E_NOMEM and "out of memory
 *    (tried to allocate N bytes)" in @p err (which may be NULL). The loaders
 *    use only these (graph, policy, hardware, config file and key=value
 *    arguments, file reading, JSON parsing): they read untrusted input and
 *    are called by programs that link the library, so an allocation failure
 *    there is an error that frees what was built, never an abort.
 *  - remat_i_x*: print "out of memory" and abort(). The analysis (simulator,
 *    solver, reports, CLI) keeps these: its allocations are bounded by the
 *    documented input limits (REMAT_MAX_LAYERS, REMAT_MAX_INPUT_BYTES, the
 *    solver's bounds), so a failure there is the machine's, not the input's,
 *    and no failure branch is worth its weight.
 * Every call of either family is counted per thread, and the injection hook
 * makes the n-th one fail: a try_ allocator returns NULL, an x allocator
 * aborts, so a test that fails each allocation of a loader in turn also
 * catches a loader path still on an aborting allocator.
 */
#ifndef REMAT_UTIL_H
#define REMAT_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "remat/base/error.h"
#include "remat/base/limits.h"

void *remat_i_xmalloc(size_t n);
void *remat_i_xcalloc(size_t count, size_t size);
void *remat_i_xrealloc(void *p, size_t n);
char *remat_i_xstrdup(const char *s);

/* As malloc, calloc, realloc (p is left alone on failure) and strdup;
   remat_i_try_realloc_array is realloc of count * size bytes, failing on
   overflow. A size of 0 allocates 1 byte, so NULL always means failure. */
void *remat_i_try_malloc(size_t n, remat_error_t *err);
void *remat_i_try_calloc(size_t count, size_t size, remat_error_t *err);
void *remat_i_try_realloc(void *p, size_t n, remat_error_t *err);
void *remat_i_try_realloc_array(void *p, size_t count, size_t size, remat_error_t *err);
char *remat_i_try_strdup(const char *s, remat_error_t *err);

/* Prints "remat: out of memory (tried to allocate N bytes)" and aborts: for
   an analysis-side caller whose fallible step failed. */
_Noreturn void remat_i_oom(size_t n);

/* Allocation-failure injection, for tests (tests/unit/test_alloc_fail.c).
   The count restarts at each call; the @p n-th allocation after it fails,
   once (0: none fails). State is per thread. */
void remat_i_alloc_fail_at(uint64_t n);
/* Allocations (either family) since the last remat_i_alloc_fail_at. */
uint64_t remat_i_alloc_count(void);
/* Allocations that failed in this thread so far, injected or real. The
   JSON parser reads it: jansson drops some of its own allocation failures
   (a token character, a string), which would otherwise look like a syntax
   error or a different document when jansson allocates through remat. */
uint64_t remat_i_alloc_failures(void);

/* @p n rounded up to a multiple of @p a (not 0): where an array of an
   allocation carved into several starts. The sizes are a graph's or a
   layer count's, far below SIZE_MAX: no overflow. */
static inline size_t remat_i_round_up(size_t n, size_t a) {
    return (n + a - 1) / a * a;
}

/* a * b and a + b into *out; false (and *out untouched) on overflow. The
   builtin tests the multiply's overflow flag: the portable test divides,
   tens of cycles on the hot paths (every bound dim, FLOP count and sum). */
static inline bool remat_i_mul(uint64_t a, uint64_t b, uint64_t *out) {
#if defined(__GNUC__) || defined(__clang__)
    uint64_t p;
    if (__builtin_mul_overflow(a, b, &p)) {
        return false;
    }
    *out = p;
    return true;
#else
    if (a != 0 && b > UINT64_MAX / a) {
        return false;
    }
    *out = a * b;
    return true;
#endif
}
static inline bool remat_i_add(uint64_t a, uint64_t b, uint64_t *out) {
    if (b > UINT64_MAX - a) {
        return false;
    }
    *out = a + b;
    return true;
}

/* The accumulator every sum and product of bytes, FLOPs, elements and mesh
   shards goes through: exact below REMAT_ACC_MAX (2^62, so that any two
   such values add without wrapping and signed deltas stay in range). Once
   an operation passes the limit the overflow flag stays set and the value
   means nothing; the caller turns the flag into an input error that names
   what overflowed, never a wrapped number. */
#define REMAT_ACC_MAX ((uint64_t)1 << 62)

typedef struct remat_acc {
    uint64_t value;
    bool overflow;
} remat_acc_t;

static inline void remat_acc_add(remat_acc_t *a, uint64_t x) {
    a->overflow = a->overflow || !remat_i_add(a->value, x, &a->value) || a->value > REMAT_ACC_MAX;
}
static inline void remat_acc_mul(remat_acc_t *a, uint64_t x) {
    a->overflow = a->overflow || !remat_i_mul(a->value, x, &a->value) || a->value > REMAT_ACC_MAX;
}
/* a += x * y */
static inline void remat_acc_add_product(remat_acc_t *a, uint64_t x, uint64_t y) {
    uint64_t p = 0;
    a->overflow = a->overflow || !remat_i_mul(x, y, &p);
    remat_acc_add(a, p);
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

/* How remat_i_read_path reads. */
enum remat_i_read_flags {
    REMAT_I_READ_REGULAR = 1u << 0, /* a regular file only (base_config): no pipe, no device */
    REMAT_I_READ_STDIN = 1u << 1    /* "-" is standard input (a config given as "-") */
};

/* Reads a whole file into a new NUL-terminated buffer (free() it), its
   length into *@p len when @p len is not NULL. A regular file is read to
   its end; a pipe (a FIFO, /dev/fd/N of `<(...)`) as its writer writes,
   waiting at most REMAT_PIPE_WAIT_MS for data, and a FIFO no writer opens
   within REMAT_FIFO_GRACE_MS is an error; a directory or a device is an
   error; so is anything past REMAT_MAX_INPUT_BYTES or holding a NUL byte.
   Errors are REMAT_E_IO or REMAT_E_SYNTAX naming the path ("<stdin>" for
   standard input), or REMAT_E_NOMEM. */
remat_status_t remat_i_read_path(const char *path, unsigned flags, char **out, size_t *len,
                                 remat_error_t *err);

/* remat_i_read_path(path, 0, out, NULL, err): graph, policy, hardware and
   config files. */
remat_status_t remat_i_read_file(const char *path, char **out, remat_error_t *err);

/* REMAT_MAX_INPUT_BYTES: remat/base/limits.h */

/* Whether @p s holds no control character, ASCII or Unicode (C1, line
   and paragraph separators): a newline in a name would break the one-line
   reports. */
bool remat_i_printable(const char *s);

/* Whether @p name names a file rather than a built-in: it ends in
   ".json" after at least one character. */
bool remat_i_is_json_name(const char *name);

/* Levenshtein distance, for "did you mean" suggestions. */
size_t remat_i_edit_distance(const char *a, const char *b);

/* The word of @p words nearer @p key than @p best (at distance *bestd),
   updating *bestd; @p best when none is. Start with NULL and SIZE_MAX. */
const char *remat_i_nearest_word(const char *key, const char *const *words, size_t n,
                                 const char *best, size_t *bestd);

/* Whether a word at distance @p d from @p key is worth suggesting. */
bool remat_i_near_enough(const char *key, size_t d);

#endif
