/* SPDX-License-Identifier: MIT */
/*
 * remat/model/mesh_layout.h: whether JAX can lay an ICI mesh out on a TPU
 * slice's chip grid.
 *
 * MaxText builds its device mesh with jax.experimental.mesh_utils
 * (maxtext_utils.create_device_mesh at e591f30; create_hybrid_device_mesh
 * per slice when there are several). Unless allow_split_physical_axes is
 * set (MaxText's default: false), JAX (mesh_utils at jax 0.10.2) first asks
 * a per-chip handler, which lays out some small slices whatever the shape,
 * and otherwise gives each logical axis, from the last of mesh_axes to the
 * first, the first set of whole physical axes still free whose sizes
 * multiply to the axis's size, trying the most axes first; a logical axis
 * above 1 that finds none stops MaxText before it compiles ("Failed to find
 * assignment for logical_axis_index I of size S with remaining assignable
 * mesh [...]"). This header states that rule on plain numbers; the input
 * layer knows the slice's grid from its topology name.
 */
#ifndef REMAT_MESH_LAYOUT_H
#define REMAT_MESH_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>

#include "remat/model/mesh.h"

/** MaxText's mesh_axes (base.yml at e591f30): diloco, data, stage, fsdp,
    fsdp_transpose, context, context_usp_ulysses, context_autoregressive,
    tensor, tensor_sequence, expert, autoregressive. */
#define REMAT_LAYOUT_AXES 12

/** JAX's per-chip handlers (mesh_utils.device_kind_handler_dict): which of
    them the slice's chip gets. */
typedef enum remat_layout_kind {
    REMAT_LAYOUT_GENERIC, /* TPU v4: no handler */
    REMAT_LAYOUT_V5E,     /* TPU v5 lite and v6 lite */
    REMAT_LAYOUT_V5P,     /* TPU v5 */
    REMAT_LAYOUT_7X       /* TPU7x: two devices per chip */
} remat_layout_kind_t;

/** A slice: its chip kind and chip grid (x, y, z; z 1 on 2-D slices). */
typedef struct remat_layout_slice {
    remat_layout_kind_t kind;
    uint64_t grid[3];
} remat_layout_slice_t;

/** The answer. When !lays_out, `axis` is the mesh_axes index JAX failed
    on, `size` its size, and remaining[0..ndim) the physical axes JAX had
    left (0: taken), as its message prints them. */
typedef struct remat_layout {
    bool lays_out;
    unsigned axis;
    uint64_t size;
    unsigned ndim;
    uint64_t remaining[4];
} remat_layout_t;

/** MaxText's name of mesh_axes[@p i] ("tensor"); "?" past the end. */
const char *remat_layout_axis_name(unsigned i);

/** The remat axis of mesh_axes[@p i], or REMAT_AXIS_COUNT for the two
    axes remat keeps at 1 (diloco, context_autoregressive). */
remat_axis_t remat_layout_axis_of(unsigned i);

/** @p mesh's ICI sizes in mesh_axes order (the axes remat has not: 1). */
void remat_layout_shape(const remat_mesh_t *mesh, uint64_t shape[REMAT_LAYOUT_AXES]);

/**
 * JAX's layout of @p shape (REMAT_LAYOUT_AXES sizes, multiplying to the
 * slice's devices) on @p slice, into @p out. Pure; no allocation.
 */
void remat_layout_assign(const remat_layout_slice_t *slice, const uint64_t *shape,
                         remat_layout_t *out);

#endif
