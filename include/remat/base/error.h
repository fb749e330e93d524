/* SPDX-License-Identifier: MIT */
/*
 * remat/base/error.h: the error value every fallible remat call fills.
 *
 * Modelled on jansson's json_error_t: fixed buffers so that reporting never
 * allocates, the first error set wins so the most specific message survives,
 * and the location is a file plus a JSON path (parsed JSON values carry no
 * position, so the loaders build the path themselves).
 */
#ifndef REMAT_ERROR_H
#define REMAT_ERROR_H

#include <stddef.h>

typedef enum remat_status {
    REMAT_OK = 0,
    REMAT_E_NOMEM,    /* allocation failed */
    REMAT_E_IO,       /* a file could not be read */
    REMAT_E_SYNTAX,   /* JSON not well-formed; line and column are set */
    REMAT_E_SCHEMA,   /* well-formed JSON of the wrong shape; json_path is set */
    REMAT_E_GRAPH,    /* graph semantics: cycle, shape mismatch, bad einsum */
    REMAT_E_POLICY,   /* policy names what the graph lacks, bad placement */
    REMAT_E_CONFIG,   /* unknown key, bad value, dims that do not bind */
    REMAT_E_OVERFLOW, /* a byte or FLOP count does not fit in 64 bits */
    REMAT_E_USAGE,    /* bad command line (set by the CLI only) */
    REMAT_E_INTERNAL  /* an invariant broke or igraph failed unexpectedly */
} remat_status_t;

#define REMAT_ERR_SOURCE_LEN 160
#define REMAT_ERR_PATH_LEN 160
#define REMAT_ERR_TEXT_LEN 768

/* What a caller can do about an error beyond reading it. */
typedef enum remat_error_hint {
    REMAT_HINT_NONE = 0,
    /* a tensor dim does not divide over its mesh shards: another mesh of
       the same devices may (the CLI names the nearest that does) */
    REMAT_HINT_MESH_DIVIDE,
    /* JAX cannot lay the ICI mesh out on the slice's chip grid: another
       split of the slice's devices may (the CLI names the nearest that
       does) */
    REMAT_HINT_MESH_LAYOUT
} remat_error_hint_t;

typedef struct remat_error {
    remat_status_t code;
    remat_error_hint_t hint;
    int line, column;                   /* 1-based; 0 when unknown */
    char source[REMAT_ERR_SOURCE_LEN];  /* file name, "built-in graph 'llama.flash'", "<command line>" */
    char json_path[REMAT_ERR_PATH_LEN]; /* "$.layer.ops[3].in[1]" or "" */
    char text[REMAT_ERR_TEXT_LEN];      /* lowercase, no trailing period */
} remat_error_t;

/** Clears @p err to "no error". @p err may be NULL. */
void remat_error_init(remat_error_t *err);

/**
 * Records an error unless one is already recorded (the first error wins).
 * @p source and @p json_path may be NULL. @p err may be NULL.
 * @return @p code, so callers can write `return remat_error_set(...)`.
 */
remat_status_t remat_error_set(remat_error_t *err, remat_status_t code, const char *source,
                               const char *json_path, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

/** Fills in the source of an already recorded error if it has none. */
void remat_error_set_source(remat_error_t *err, const char *source);

/**
 * Formats the error as one line: "SOURCE: PATH: TEXT" (syntax errors as
 * "SOURCE:LINE:COL: TEXT"). Writes at most @p size bytes including the NUL.
 */
void remat_error_format(const remat_error_t *err, char *buf, size_t size);

/** Stable lowercase name of a status, e.g. "schema". Static storage. */
const char *remat_status_name(remat_status_t code);

#endif
