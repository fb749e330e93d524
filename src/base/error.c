/* SPDX-License-Identifier: MIT */
/*
 * error.c: filling and formatting remat_error_t. No allocation anywhere, so
 * an out-of-memory error can still be reported.
 */
#include "remat/base/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void remat_error_init(remat_error_t *err) {
    if (err) {
        memset(err, 0, sizeof *err);
    }
}

/* Copies a possibly long string, keeping its tail: "...ong/path/file.json". */
static void copy_tail(char *dst, size_t size, const char *src) {
    size_t n = strlen(src);
    if (n < size) {
        memcpy(dst, src, n + 1);
        return;
    }
    const char *tail = src + n - (size - 4);
    memcpy(dst, "...", 3);
    memcpy(dst + 3, tail, size - 4);
    dst[size - 1] = '\0';
}

remat_status_t remat_error_set(remat_error_t *err, remat_status_t code, const char *source,
                               const char *json_path, const char *fmt, ...) {
    if (!err || err->code != REMAT_OK) {
        return code;
    }
    err->code = code;
    if (source) {
        copy_tail(err->source, sizeof err->source, source);
    }
    if (json_path) {
        copy_tail(err->json_path, sizeof err->json_path, json_path);
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->text, sizeof err->text, fmt, ap);
    va_end(ap);
    return code;
}

void remat_error_set_source(remat_error_t *err, const char *source) {
    if (err && err->code != REMAT_OK && err->source[0] == '\0' && source) {
        copy_tail(err->source, sizeof err->source, source);
    }
}

void remat_error_format(const remat_error_t *err, char *buf, size_t size) {
    const char *src = err->source;
    if (!src[0]) {
        snprintf(buf, size, "%s%s%s", err->json_path, err->json_path[0] ? ": " : "", err->text);
    } else if (err->line > 0) {
        snprintf(buf, size, "%s:%d:%d: %s", src, err->line, err->column, err->text);
    } else if (err->json_path[0]) {
        snprintf(buf, size, "%s: %s: %s", src, err->json_path, err->text);
    } else {
        snprintf(buf, size, "%s: %s", src, err->text);
    }
}

const char *remat_status_name(remat_status_t code) {
    switch (code) {
        case REMAT_OK: return "ok";
        case REMAT_E_NOMEM: return "nomem";
        case REMAT_E_IO: return "io";
        case REMAT_E_SYNTAX: return "syntax";
        case REMAT_E_SCHEMA: return "schema";
        case REMAT_E_GRAPH: return "graph";
        case REMAT_E_POLICY: return "policy";
        case REMAT_E_CONFIG: return "config";
        case REMAT_E_OVERFLOW: return "overflow";
        case REMAT_E_USAGE: return "usage";
        case REMAT_E_INTERNAL: return "internal";
    }
    return "unknown";
}
