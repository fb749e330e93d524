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

#include "remat/base/error.h"
#include "remat/data/builtin.h"

/* Makes built-in @p index into a new object (*out): a remat_graph_t, a
   remat_policy_t or a remat_hw_t (one block), by the entry's kind. */
typedef remat_status_t (*remat_i_make_fn)(size_t index, void **out, remat_error_t *err);

/* Frees an object @p make made (at exit, or when another thread's copy
   won the race to the slot). */
typedef void (*remat_i_drop_fn)(void *obj);

/* The cached object of built-in @p index, made by @p make on a miss and
   freed by @p drop, the same function for every object of the entry's
   kind. Borrowed: immutable, valid until exit. An error is never cached. */
remat_status_t remat_i_cached(size_t index, remat_i_make_fn make, remat_i_drop_fn drop,
                              const void **out, remat_error_t *err);

/* Drops every cached object; the slots stay, so the next use of each
   built-in makes it again, allocations and all. For the allocation-failure
   tests, which need every load to be a miss: not safe while another
   thread resolves. */
void remat_i_builtin_cache_clear(void);


#endif
