/* SPDX-License-Identifier: MIT */
/*
 * result.c: a result's memory. Its tables (the layer and stage rows, the
 * profiles with their plans and tensor rows, the name rows) are carved
 * from blocks the result owns (remat_result_t's `mem`), not allocated one
 * by one: an analysis made some eight allocations for them, a tenth of its
 * time. An analysis into a result that already holds blocks empties the
 * result and reuses them, so a caller that analyzes many configurations
 * into one result (a sweep, the bench) allocates nothing for the tables
 * once the blocks have grown to fit.
 *
 * Invariants:
 *  - every carved array starts on a 16-byte boundary, and lies within one
 *    block: a carve never moves what was carved before it;
 *  - the blocks form a chain, newest first; only the newest has room left;
 *  - a reused result holds at most one block, as large as all it held.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/policy_internal.h"
#include "sim/sim_rooms.h"
#include "base/util.h"

/* A block's header; its bytes follow. The padding keeps them aligned. */
struct remat_result_mem {
    struct remat_result_mem *next;
    size_t size, used;
    size_t pad;
};
typedef struct remat_result_mem mem_t;

/* The first block's bytes: a dense model's tables of one profile (126
   layer rows, the largest table, are 17 KB) fit, so most results hold one
   block. */
#define MEM_FIRST ((size_t)32 << 10)
#define MEM_ALIGN ((size_t)16)

static mem_t *mem_new(size_t size, mem_t *next) {
    _Static_assert(sizeof(mem_t) % MEM_ALIGN == 0, "a block's bytes start aligned");
    mem_t *m = remat_i_xmalloc(sizeof *m + size);
    *m = (mem_t){.next = next, .size = size};
    return m;
}

static void mem_free(mem_t *m) {
    while (m) {
        mem_t *next = m->next;
        free(m);
        m = next;
    }
}

void remat_result_init(remat_result_t *r) {
    memset(r, 0, sizeof *r);
}

void remat_result_release(remat_result_t *r) {
    mem_free(r->mem);
    remat_result_init(r);
}

void remat_i_result_reuse(remat_result_t *r) {
    mem_t *m = r->mem;
    if (m && m->next) { /* grown by the last analysis: one block that fits it */
        size_t total = 0;
        for (const mem_t *b = m; b; b = b->next) {
            total += b->size; /* each below what malloc gave: no overflow */
        }
        mem_free(m);
        m = mem_new(total, NULL);
    }
    remat_result_init(r);
    if (m) {
        m->used = 0;
        r->mem = m;
    }
}

void *remat_i_result_alloc(remat_result_t *r, size_t bytes) {
    assert(bytes <= SIZE_MAX / 4 && "table sizes follow from bounded counts");
    const size_t need = remat_i_round_up(bytes ? bytes : 1, MEM_ALIGN);
    mem_t *m = r->mem;
    if (!m || m->size - m->used < need) {
        size_t size = m ? 2 * m->size : MEM_FIRST;
        m = r->mem = mem_new(size > need ? size : need, m);
    }
    void *p = (char *)(m + 1) + m->used;
    m->used += need;
    assert(m->used <= m->size);
    return p;
}

void *remat_i_result_grow(remat_result_t *r, void *array, size_t n, size_t size,
                          size_t first) {
    void *p = remat_i_result_alloc(r, (n ? 2 * n : first) * size);
    if (n) {
        memcpy(p, array, n * size); /* the old room stays in the block, unused */
    }
    return p;
}

void remat_i_result_plan(remat_result_t *r, remat_plan_t *dst, const remat_plan_t *src) {
    remat_i_plan_copy_in(dst, src, remat_i_result_alloc(r, remat_i_plan_copy_bytes(src)));
}
