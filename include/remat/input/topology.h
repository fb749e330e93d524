/* SPDX-License-Identifier: MIT */
/*
 * remat/input/topology.h: slice names as MaxText and Cloud spell them
 * (`compile_topology`, xpk's `--tpu-type`), turned into a hardware profile
 * and a JAX device count.
 *
 * NAME-N counts TensorCores, as MaxText's accelerator table does
 * (src/maxtext/utils/accelerator_to_spec_map.py at e591f30): v4-8 and
 * v5p-8 are 4 chips of one megacore device each, tpu7x-128 is 64 chips of
 * two devices each (128 devices), v6e-8 and v5e-8 are 8 chips. NAME-AxBxC
 * names the chip grid: tpu7x-4x4x4 is 64 chips, 128 devices. A GPU name
 * counts GPUs. The hardware profile's devices_per_chip and cores_per_chip
 * (a TensorCore count that only the name's arithmetic uses) turn the name
 * into devices: devices = N x devices_per_chip / cores_per_chip.
 */
#ifndef REMAT_TOPOLOGY_H
#define REMAT_TOPOLOGY_H

#include <stdbool.h>
#include <stdint.h>

#include "remat/base/error.h"
#include "remat/model/mesh_layout.h"

/* The slice: its profile, chips and devices, and for a TPU slice whose
   grid is known (a NAME-AxBxC name, or a NAME-N in MaxText's accelerator
   table) the chip grid and JAX's handler kind, which remat_mesh_build
   lays the mesh out on (mesh_layout.h). */
typedef struct remat_topology {
    char hardware[64]; /* built-in profile name, e.g. "tpu-v5p" */
    uint64_t chips;
    uint64_t devices;
    bool has_grid;
    remat_layout_slice_t slice; /* when has_grid */
} remat_topology_t;

/**
 * Parses @p name ("v5p-256", "tpu7x-4x4x4", "v6e-8", "h100-16"). Errors
 * (REMAT_E_CONFIG) name the spellings accepted; @p source and @p path locate
 * the setting.
 */
remat_status_t remat_topology_parse(const char *name, const char *source, const char *path,
                                    remat_topology_t *out, remat_error_t *err);

#endif
