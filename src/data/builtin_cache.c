/* SPDX-License-Identifier: MIT */
/*
 * builtin_cache.c: the process-wide cache of built-ins made into objects
 * (builtin_cache.h). Callers copy what it holds: the cached objects are
 * never handed out to be changed.
 *
 * Threads: the slots are atomic pointers. A miss makes its object without
 * a lock and installs it with a compare-and-swap; a thread that loses the
 * race frees its own and takes the winner's. So any number of threads may
 * resolve at once, each built-in being made at most once per thread that
 * races for it. The cache is freed at exit (atexit); resolving from
 * another thread while the process exits is not supported.
 *
 * Invariants (asserted): a slot is NULL or holds the object made from its
 * own entry, of the entry's kind; an error is never cached; every kind
 * with an object cached has its one drop function registered.
 *
 * The cache knows no object type: whoever makes an object says how to
 * free it (remat_i_cached's drop), so the data layer needs nothing from
 * the model layer above it (src/layers.txt).
 */
#include <assert.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "data/builtin_cache.h"
#include "data/builtin_data.h"
#include "base/util.h"

/* One atomic slot per entry of the built-in table, allocated on first use:
   NULL, or the entry's object (a remat_graph_t, remat_policy_t or
   remat_hw_t, by the entry's kind), which nothing changes once installed. */
static _Atomic(_Atomic(void *) *) cache_slots;

/* Each kind's drop function, registered by the first object of the kind
   made (before it is installed); every maker of a kind passes the same. */
#define NKINDS ((size_t)REMAT_BUILTIN_HARDWARE + 1)
static _Atomic(remat_i_drop_fn) drops[NKINDS];

static void drop(size_t index, void *obj) {
    const size_t kind = (size_t)remat_i_builtins[index].kind;
    assert(kind < NKINDS);
    remat_i_drop_fn fn = atomic_load_explicit(&drops[kind], memory_order_acquire);
    assert(fn); /* registered before any object of the kind was installed */
    fn(obj);
}

/* At exit: every parsed built-in and the slots. */
static void cache_release(void) {
    _Atomic(void *) *s = atomic_exchange(&cache_slots, NULL);
    for (size_t i = 0; s && i < remat_i_nbuiltins; i++) {
        void *obj = atomic_load(&s[i]);
        if (obj) {
            drop(i, obj);
        }
    }
    free((void *)s);
}

void remat_i_builtin_cache_clear(void) {
    _Atomic(void *) *s = atomic_load(&cache_slots);
    for (size_t i = 0; s && i < remat_i_nbuiltins; i++) {
        void *obj = atomic_exchange(&s[i], NULL);
        if (obj) {
            drop(i, obj);
        }
    }
}

/* The slots, allocated by the first caller that gets here (a racing loser
   frees its array); NULL with REMAT_E_NOMEM when they cannot be. */
static _Atomic(void *) *slots(remat_error_t *err) {
    _Atomic(void *) *s = atomic_load_explicit(&cache_slots, memory_order_acquire);
    if (s) {
        return s;
    }
    _Atomic(void *) *mine = remat_i_try_calloc(remat_i_nbuiltins + 1, sizeof *mine, err);
    if (!mine) {
        return NULL;
    }
    for (size_t i = 0; i <= remat_i_nbuiltins; i++) {
        atomic_init(&mine[i], NULL);
    }
    if (!atomic_compare_exchange_strong_explicit(&cache_slots, &s, mine, memory_order_acq_rel,
                                                 memory_order_acquire)) {
        free((void *)mine);
        return s;
    }
    /* Registered once, by the thread that installed the slots. If atexit
       cannot take it, the cache stays reachable until the end. */
    (void)atexit(cache_release);
    return mine;
}

remat_status_t remat_i_cached(size_t index, remat_i_make_fn make, remat_i_drop_fn drop_fn,
                              const void **out, remat_error_t *err) {
    assert(index < remat_i_nbuiltins && drop_fn);
    const size_t kind = (size_t)remat_i_builtins[index].kind;
    assert(kind < NKINDS);
    remat_i_drop_fn none_fn = NULL;
    if (!atomic_compare_exchange_strong_explicit(&drops[kind], &none_fn, drop_fn,
                                                 memory_order_acq_rel, memory_order_acquire)) {
        assert(none_fn == drop_fn); /* one drop function per kind */
    }
    *out = NULL;
    _Atomic(void *) *s = slots(err);
    if (!s) {
        return REMAT_E_NOMEM;
    }
    void *obj = atomic_load_explicit(&s[index], memory_order_acquire);
    if (!obj) {
        remat_status_t st = make(index, &obj, err);
        if (st) {
            return st; /* errors are not cached: the next call reports them again */
        }
        void *none = NULL;
        if (!atomic_compare_exchange_strong_explicit(&s[index], &none, obj, memory_order_acq_rel,
                                                     memory_order_acquire)) {
            drop(index, obj); /* another thread installed it first */
            obj = none;
        }
    }
    *out = obj;
    return REMAT_OK;
}
