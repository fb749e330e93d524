/* SPDX-License-Identifier: MIT */
/*
 * builtin_cache.h: the process-wide cache of built-ins made into objects
 * (builtin_cache.c): one slot per entry of the built-in table, filled on
 * first use and borrowed by every later caller until exit. The resolver
 * (resolve.c: graphs and policies) and the hardware resolver (hw.c: every
 * caller of remat_hw_resolve, topology names included) fill it.
 */
#ifndef REMAT_BUILTIN_CACHE_H
#define REMAT_BUILTIN_CACHE_H

#include <stddef.h>

#include "remat/builtin.h"
#include "remat/error.h"
#include "remat/graph.h" /* REMAT_NONE */

/* Makes built-in @p index into a new object (*out): a remat_graph_t, a
   remat_policy_t or a remat_hw_t (one block), by the entry's kind. */
typedef remat_status_t (*remat_i_make_fn)(size_t index, void **out, remat_error_t *err);

/* The cached object of built-in @p index, made by @p make on a miss.
   Borrowed: immutable, valid until exit. An error is never cached. */
remat_status_t remat_i_cached(size_t index, remat_i_make_fn make, const void **out,
                              remat_error_t *err);

/* Drops every cached object; the slots stay, so the next use of each
   built-in makes it again, allocations and all. For the allocation-failure
   tests, which need every load to be a miss: not safe while another
   thread resolves. */
void remat_i_builtin_cache_clear(void);

/* The index of built-in @p name of @p kind in the table, or REMAT_NONE. */
size_t remat_i_builtin_index(remat_builtin_kind_t kind, const char *name);

#endif
