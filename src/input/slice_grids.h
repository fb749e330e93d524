/* SPDX-License-Identifier: MIT */
/*
 * slice_grids.h (input, internal): the chip grid of each TPU slice name in
 * MaxText's accelerator table, for the topology parser (topology.c).
 */
#ifndef REMAT_INPUT_SLICE_GRIDS_H
#define REMAT_INPUT_SLICE_GRIDS_H

#include <stdbool.h>
#include <stdint.h>

/**
 * The chip grid (x, y, z; z 1 for a 2-D slice) of the slice of built-in
 * hardware profile @p hardware ("tpu-v5p") named with @p cores TensorCores
 * (v5p-256: 256), into @p grid; false when MaxText's table has no such name
 * (a GPU, or a count it does not list).
 */
bool remat_i_slice_grid(const char *hardware, uint64_t cores, uint64_t grid[3]);

#endif
