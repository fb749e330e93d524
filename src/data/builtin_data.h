/* SPDX-License-Identifier: MIT */
/* builtin_data.h: the generated table of embedded data files (builtin.c). */
#ifndef REMAT_BUILTIN_DATA_H
#define REMAT_BUILTIN_DATA_H

#include <stddef.h>

#include "remat/data/builtin.h"

typedef struct remat_i_builtin {
    remat_builtin_kind_t kind;
    const char *name;
    const char *text;
    const char *description; /* the JSON's "description", "" if none */
    int requires;            /* a model preset with a "requires" key (one remat refuses) */
} remat_i_builtin_t;

extern const remat_i_builtin_t remat_i_builtins[];
extern const size_t remat_i_nbuiltins;

/* The index of built-in @p name of @p kind in the table, or REMAT_NONE
   (builtin.c). */
size_t remat_i_builtin_index(remat_builtin_kind_t kind, const char *name);

#endif
