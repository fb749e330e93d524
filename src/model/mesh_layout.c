/* SPDX-License-Identifier: MIT */
/*
 * mesh_layout.c: JAX's assignment of an ICI mesh to a TPU slice's physical
 * axes (mesh_layout.h), as jax/_src/mesh_utils.py does it at jax 0.10.2:
 * the per-chip handler first, then _create_device_mesh_for_nd_torus.
 *
 * Invariants: the physical mesh has 3 axes (x, y, z), or 4 on TPU7x (x, y,
 * z and the chip's two cores), as _get_physical_tpu_mesh builds it; an
 * axis taken by a logical axis is 0 in `left` (as JAX zeroes it, so a set
 * that holds it multiplies to 0 and never matches); sets are tried in
 * itertools.combinations order, most axes first, so the first match is
 * JAX's.
 */
#include "remat/model/mesh_layout.h"

#include <assert.h>
#include <stddef.h>

static const char *const layout_names[REMAT_LAYOUT_AXES] = {
    "diloco", "data",   "stage",           "fsdp",   "fsdp_transpose", "context",
    "context_usp_ulysses", "context_autoregressive", "tensor", "tensor_sequence", "expert",
    "autoregressive"};
static const remat_axis_t layout_axes[REMAT_LAYOUT_AXES] = {
    REMAT_AXIS_COUNT,       REMAT_AXIS_DATA,   REMAT_AXIS_STAGE,
    REMAT_AXIS_FSDP,        REMAT_AXIS_FSDP_TRANSPOSE, REMAT_AXIS_CONTEXT,
    REMAT_AXIS_CONTEXT_USP, REMAT_AXIS_COUNT,  REMAT_AXIS_TENSOR,
    REMAT_AXIS_TENSOR_SEQUENCE, REMAT_AXIS_EXPERT, REMAT_AXIS_AUTOREGRESSIVE};

const char *remat_layout_axis_name(unsigned i) {
    return i < REMAT_LAYOUT_AXES ? layout_names[i] : "?";
}

remat_axis_t remat_layout_axis_of(unsigned i) {
    return i < REMAT_LAYOUT_AXES ? layout_axes[i] : REMAT_AXIS_COUNT;
}

void remat_layout_shape(const remat_mesh_t *m, uint64_t shape[REMAT_LAYOUT_AXES]) {
    for (unsigned i = 0; i < REMAT_LAYOUT_AXES; i++) {
        shape[i] = layout_axes[i] < REMAT_AXIS_COUNT ? m->ici[layout_axes[i]] : 1;
    }
}

static uint64_t devices_of(const remat_layout_slice_t *s) {
    return s->grid[0] * s->grid[1] * s->grid[2] * (s->kind == REMAT_LAYOUT_7X ? 2u : 1u);
}

/* The per-chip handlers that lay out any shape (device_kind_handler_dict):
   they return a mesh for these slices without the search below. */
static bool handled(const remat_layout_slice_t *s, const uint64_t *shape) {
    const uint64_t n = devices_of(s), x = s->grid[0], y = s->grid[1], z = s->grid[2];
    uint64_t widest = 0;
    for (unsigned i = 0; i < REMAT_LAYOUT_AXES; i++) {
        widest = shape[i] > widest ? shape[i] : widest;
    }
    switch (s->kind) {
    case REMAT_LAYOUT_V5E: /* _v5e_create_device_mesh: 2x2, any 8 chips, 4x4 as one ring */
        return (n == 4 && x == 2 && y == 2 && z == 1) || n == 8 ||
               (n == 16 && x == 4 && y == 4 && z == 1 && widest == 16);
    case REMAT_LAYOUT_V5P: /* _v5p_create_device_mesh: the 2x2x2 cube */
        return n == 8 && x == 2 && y == 2 && z == 2;
    case REMAT_LAYOUT_7X: /* _7x_create_device_mesh: rings of 2x2 trays, up to 32 devices */
        return n % 8 == 0 && n <= 32 && x <= 2 && y <= 2;
    case REMAT_LAYOUT_GENERIC:
        return false;
    }
    return false;
}

/* The first set of k of the ndim axes, in combinations order, whose sizes
   in @p left multiply to @p size, as a bit set; 0 when none does. */
static unsigned first_set(const uint64_t *left, unsigned ndim, unsigned k, uint64_t size) {
    unsigned idx[4];
    for (unsigned j = 0; j < k; j++) {
        idx[j] = j;
    }
    for (;;) {
        uint64_t p = 1;
        unsigned bits = 0;
        for (unsigned j = 0; j < k; j++) {
            p *= left[idx[j]]; /* at most four grid sides: no overflow */
            bits |= 1u << idx[j];
        }
        if (p == size) {
            return bits;
        }
        int j = (int)k - 1; /* the next combination: bump the last index that can move */
        while (j >= 0 && idx[j] == ndim - k + (unsigned)j) {
            j--;
        }
        if (j < 0) {
            return 0;
        }
        idx[j]++;
        for (unsigned t = (unsigned)j + 1; t < k; t++) {
            idx[t] = idx[t - 1] + 1;
        }
    }
}

void remat_layout_assign(const remat_layout_slice_t *s, const uint64_t *shape,
                         remat_layout_t *out) {
    uint64_t n = 1;
    for (unsigned i = 0; i < REMAT_LAYOUT_AXES; i++) {
        n *= shape[i];
    }
    assert(n == devices_of(s) && "the mesh multiplies to the slice's devices");
    (void)n;
    *out = (remat_layout_t){.lays_out = true, .ndim = s->kind == REMAT_LAYOUT_7X ? 4u : 3u};
    uint64_t *left = out->remaining;
    left[0] = s->grid[0], left[1] = s->grid[1], left[2] = s->grid[2];
    left[3] = out->ndim == 4 ? 2u : 0u; /* the chip's cores, TPU7x only */
    if (handled(s, shape)) {
        return;
    }
    for (unsigned i = REMAT_LAYOUT_AXES; i-- > 0;) {
        unsigned bits = 0;
        for (unsigned k = out->ndim; k >= 1 && !bits; k--) {
            bits = first_set(left, out->ndim, k, shape[i]);
        }
        if (!bits && shape[i] > 1) {
            out->lays_out = false, out->axis = i, out->size = shape[i];
            return;
        }
        for (unsigned d = 0; d < out->ndim; d++) {
            left[d] = bits >> d & 1u ? 0 : left[d];
        }
    }
}
