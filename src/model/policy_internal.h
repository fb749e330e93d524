/* SPDX-License-Identifier: MIT */
/*
 * policy_internal.h: plans in memory their caller owns: the analyzer's
 * planning scratch, one plan a layer kind in its arena, and the result's
 * tables (src/sim/result.c), which hold each profile's plan in the
 * result's own blocks; neither makes an allocation a plan. Not public.
 */
#ifndef REMAT_POLICY_INTERNAL_H
#define REMAT_POLICY_INTERNAL_H

#include <stddef.h>

#include "remat/model/policy.h"

/* The bytes of a plan of a block of @p nt tensors and @p no ops, its
   stack included. */
size_t remat_i_plan_bytes(size_t nt, size_t no);

/* Makes @p plan one for such a block in @p mem (remat_i_plan_bytes of it,
   16-byte aligned), which the caller owns: remat_plan_layer of that block
   then fills it without allocating. It must not be released. */
void remat_i_plan_in(remat_plan_t *plan, void *mem, size_t nt, size_t no);

/* The bytes remat_i_plan_copy_in needs for a copy of @p src. */
size_t remat_i_plan_copy_bytes(const remat_plan_t *src);

/* Makes @p dst a copy of @p src in @p mem (remat_i_plan_copy_bytes of it,
   16-byte aligned), which the caller owns: the copy has no stack (only
   planning reads it), and remat_plan_release of it frees nothing. */
void remat_i_plan_copy_in(remat_plan_t *dst, const remat_plan_t *src, void *mem);

#endif
