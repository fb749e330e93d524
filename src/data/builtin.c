/* SPDX-License-Identifier: MIT */
/* builtin.c: lookup in the generated table of embedded data (builtin.h). */
#include "remat/data/builtin.h"

#include <stdio.h>
#include <string.h>

#include "remat/base/limits.h"
#include "data/builtin_data.h"

size_t remat_i_builtin_index(remat_builtin_kind_t kind, const char *name) {
    for (size_t i = 0; i < remat_i_nbuiltins; i++) {
        if (remat_i_builtins[i].kind == kind && strcmp(remat_i_builtins[i].name, name) == 0) {
            return i;
        }
    }
    return REMAT_NONE;
}

const char *remat_builtin_find(remat_builtin_kind_t kind, const char *name) {
    const size_t i = remat_i_builtin_index(kind, name);
    return i == REMAT_NONE ? NULL : remat_i_builtins[i].text;
}

size_t remat_builtin_count(remat_builtin_kind_t kind) {
    size_t n = 0;
    for (size_t i = 0; i < remat_i_nbuiltins; i++) {
        n += remat_i_builtins[i].kind == kind;
    }
    return n;
}

const char *remat_builtin_name(remat_builtin_kind_t kind, size_t i) {
    for (size_t k = 0; k < remat_i_nbuiltins; k++) {
        if (remat_i_builtins[k].kind == kind && i-- == 0) {
            return remat_i_builtins[k].name;
        }
    }
    return NULL;
}

const char *remat_builtin_description(remat_builtin_kind_t kind, size_t i) {
    for (size_t k = 0; k < remat_i_nbuiltins; k++) {
        if (remat_i_builtins[k].kind == kind && i-- == 0) {
            return remat_i_builtins[k].description;
        }
    }
    return NULL;
}

void remat_builtin_list(remat_builtin_kind_t kind, char *buf, size_t size) {
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < remat_builtin_count(kind) && len < size; i++) {
        int n = snprintf(buf + len, size - len, "%s%s", i ? ", " : "", remat_builtin_name(kind, i));
        if (n < 0) {
            break;
        }
        len += (size_t)n;
    }
}

bool remat_builtin_refused(remat_builtin_kind_t kind, size_t i) {
    for (size_t k = 0; k < remat_i_nbuiltins; k++) {
        if (remat_i_builtins[k].kind == kind && i-- == 0) {
            return remat_i_builtins[k].requires != 0;
        }
    }
    return false;
}
