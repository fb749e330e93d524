/* SPDX-License-Identifier: MIT */
/*
 * util.c: allocators, JSON paths, edit distance, file reading (see util.h).
 * Every allocation goes through injected(), which counts it in this thread
 * and says whether it is the one the hook fails; the x allocators are the
 * try_ allocators plus an abort, so the two families count alike.
 */
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Per thread, so that a test's injection cannot hit another thread. */
static _Thread_local uint64_t alloc_count, alloc_fail_at, alloc_failures;

void remat_i_alloc_fail_at(uint64_t n) {
    alloc_count = 0;
    alloc_fail_at = n;
}

uint64_t remat_i_alloc_count(void) {
    return alloc_count;
}

uint64_t remat_i_alloc_failures(void) {
    return alloc_failures;
}

/* Whether this allocation is the one to fail (one branch when the hook is
   off: alloc_fail_at is 0 and the count is never 0 after the increment). */
static bool injected(void) {
    return ++alloc_count == alloc_fail_at;
}

static void *nomem(size_t count, size_t size, remat_error_t *err) {
    alloc_failures++;
    if (size > 1 && count > SIZE_MAX / size) {
        remat_error_set(err, REMAT_E_NOMEM, NULL, NULL,
                        "out of memory (tried to allocate %zu x %zu bytes)", count, size);
    } else {
        remat_error_set(err, REMAT_E_NOMEM, NULL, NULL,
                        "out of memory (tried to allocate %zu bytes)", count * size);
    }
    return NULL;
}

_Noreturn void remat_i_oom(size_t n) {
    fprintf(stderr, "remat: out of memory (tried to allocate %zu bytes)\n", n);
    abort();
}

void *remat_i_try_malloc(size_t n, remat_error_t *err) {
    void *p = injected() ? NULL : malloc(n ? n : 1);
    return p ? p : nomem(n, 1, err);
}

void *remat_i_try_calloc(size_t count, size_t size, remat_error_t *err) {
    void *p = injected() ? NULL : calloc(count ? count : 1, size ? size : 1);
    return p ? p : nomem(count, size, err);
}

void *remat_i_try_realloc(void *p, size_t n, remat_error_t *err) {
    void *q = injected() ? NULL : realloc(p, n ? n : 1);
    return q ? q : nomem(n, 1, err);
}

void *remat_i_try_realloc_array(void *p, size_t count, size_t size, remat_error_t *err) {
    if (size != 0 && count > SIZE_MAX / size) {
        injected(); /* counted like any other call, so that the count stays a call count */
        return nomem(count, size, err);
    }
    return remat_i_try_realloc(p, count * size, err);
}

char *remat_i_try_strdup(const char *s, remat_error_t *err) {
    size_t n = strlen(s) + 1;
    char *d = remat_i_try_malloc(n, err);
    if (d) {
        memcpy(d, s, n);
    }
    return d;
}

void *remat_i_xmalloc(size_t n) {
    void *p = remat_i_try_malloc(n, NULL);
    if (!p) {
        remat_i_oom(n);
    }
    return p;
}

void *remat_i_xcalloc(size_t count, size_t size) {
    void *p = remat_i_try_calloc(count, size, NULL);
    if (!p) {
        remat_i_oom(count * size);
    }
    return p;
}

void *remat_i_xrealloc(void *p, size_t n) {
    void *q = remat_i_try_realloc(p, n, NULL);
    if (!q) {
        remat_i_oom(n);
    }
    return q;
}

char *remat_i_xstrdup(const char *s) {
    char *d = remat_i_try_strdup(s, NULL);
    if (!d) {
        remat_i_oom(strlen(s) + 1);
    }
    return d;
}

void remat_i_jpath_init(remat_jpath_t *p) {
    strcpy(p->buf, "$");
    p->depth = 0;
}

static void push(remat_jpath_t *p, const char *key, size_t i) {
    size_t cur = strlen(p->buf);
    if (p->depth < sizeof p->len / sizeof p->len[0]) {
        p->len[p->depth] = cur;
    }
    p->depth++;
    if (key) {
        snprintf(p->buf + cur, sizeof p->buf - cur, ".%s", key);
    } else {
        snprintf(p->buf + cur, sizeof p->buf - cur, "[%zu]", i);
    }
}

void remat_i_jpath_key(remat_jpath_t *p, const char *key) {
    push(p, key, 0);
}

void remat_i_jpath_index(remat_jpath_t *p, size_t i) {
    push(p, NULL, i);
}

void remat_i_jpath_pop(remat_jpath_t *p) {
    if (p->depth == 0) {
        return;
    }
    p->depth--;
    if (p->depth < sizeof p->len / sizeof p->len[0]) {
        p->buf[p->len[p->depth]] = '\0';
    }
}

size_t remat_i_edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64) {
        return (size_t)-1;
    }
    size_t row[65];
    for (size_t j = 0; j <= lb; j++) {
        row[j] = j;
    }
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (row[j] + 1 < best) {
                best = row[j] + 1;
            }
            if (row[j - 1] + 1 < best) {
                best = row[j - 1] + 1;
            }
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

remat_status_t remat_i_read_file(const char *path, char **out, remat_error_t *err) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        return remat_error_set(err, REMAT_E_IO, path, NULL, "cannot open file");
    }
    size_t cap = 4096, len = 0;
    char *buf = remat_i_try_malloc(cap, err);
    bool big = false;
    while (buf) {
        if (len + 1 >= cap) {
            char *grown = remat_i_try_realloc(buf, cap * 2, err);
            if (!grown) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = grown;
            cap *= 2;
        }
        size_t n = fread(buf + len, 1, cap - len - 1, f);
        len += n;
        if (n == 0 || (big = len > REMAT_MAX_INPUT_BYTES)) {
            break;
        }
    }
    if (!buf) {
        fclose(f);
        remat_error_set_source(err, path);
        return REMAT_E_NOMEM;
    }
    if (big) {
        fclose(f);
        free(buf);
        return remat_error_set(err, REMAT_E_IO, path, NULL, "larger than %zu MiB",
                               REMAT_MAX_INPUT_BYTES >> 20);
    }
    bool bad = ferror(f) != 0;
    fclose(f);
    if (bad) {
        free(buf);
        return remat_error_set(err, REMAT_E_IO, path, NULL, "read error");
    }
    buf[len] = '\0';
    if (strlen(buf) != len) {
        free(buf);
        return remat_error_set(err, REMAT_E_SYNTAX, path, NULL, "file contains a NUL byte");
    }
    *out = buf;
    return REMAT_OK;
}

bool remat_i_is_json_name(const char *name) {
    const size_t n = strlen(name);
    return n > 5 && strcmp(name + n - 5, ".json") == 0;
}

bool remat_i_printable(const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        /* ASCII controls; UTF-8 C1 controls (U+0080-U+009F: C2 80-9F, among
           them NEL, which some readers take as a line break); the line and
           paragraph separators U+2028, U+2029 (E2 80 A8, E2 80 A9) */
        if (p[0] < 0x20 || p[0] == 0x7f || (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) ||
            (p[0] == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9))) {
            return false;
        }
    }
    return true;
}
