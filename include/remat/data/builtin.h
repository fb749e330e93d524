/* SPDX-License-Identifier: MIT */
/*
 * remat/data/builtin.h: the graphs, policies, model presets and hardware profiles
 * compiled into the binary (generated at build time from graphs/, policies/,
 * models/ and hardware/), so the tool runs from any directory.
 */
#ifndef REMAT_BUILTIN_H
#define REMAT_BUILTIN_H

#include <stdbool.h>
#include <stddef.h>

typedef enum remat_builtin_kind {
    REMAT_BUILTIN_GRAPH,
    REMAT_BUILTIN_POLICY,
    REMAT_BUILTIN_MODEL,
    REMAT_BUILTIN_HARDWARE
} remat_builtin_kind_t;

/** The JSON text of built-in @p name of @p kind, or NULL. Static storage. */
const char *remat_builtin_find(remat_builtin_kind_t kind, const char *name);

/** Number of built-ins of @p kind, and the name of the i-th (sorted). */
size_t remat_builtin_count(remat_builtin_kind_t kind);
const char *remat_builtin_name(remat_builtin_kind_t kind, size_t i);

/** The description of the i-th built-in of @p kind ("" if it has none),
    read at build time: listing parses nothing. Static storage; NULL when
    @p i is out of range. */
const char *remat_builtin_description(remat_builtin_kind_t kind, size_t i);

/** Whether the i-th built-in of @p kind is a model preset remat refuses
    (its JSON has a "requires" key naming the block it needs), read at build
    time like the description. */
bool remat_builtin_refused(remat_builtin_kind_t kind, size_t i);

/** Comma-separated names of @p kind into @p buf (for error messages). */
void remat_builtin_list(remat_builtin_kind_t kind, char *buf, size_t size);

#endif
