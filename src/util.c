/* SPDX-License-Identifier: MIT */
/* util.c: allocation wrappers, JSON paths, edit distance (see util.h). */
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void oom(size_t n) {
    fprintf(stderr, "remat: out of memory (tried to allocate %zu bytes)\n", n);
    abort();
}

void *remat_i_xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        oom(n);
    }
    return p;
}

void *remat_i_xcalloc(size_t count, size_t size) {
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) {
        oom(count * size);
    }
    return p;
}

void *remat_i_xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        oom(n);
    }
    return q;
}

char *remat_i_xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = remat_i_xmalloc(n);
    memcpy(d, s, n);
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
    char *buf = remat_i_xmalloc(cap);
    bool big = false;
    for (;;) {
        if (len + 1 >= cap) {
            cap *= 2;
            buf = remat_i_xrealloc(buf, cap);
        }
        size_t n = fread(buf + len, 1, cap - len - 1, f);
        len += n;
        if (n == 0 || (big = len > REMAT_MAX_INPUT_BYTES)) {
            break;
        }
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
