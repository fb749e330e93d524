/* SPDX-License-Identifier: MIT */
/*
 * config_internal.h: what config.c tells the rest of the library about a
 * config beyond the public remat/config.h: where a size key lives, for the
 * graph's index, and the layer-count limit, which the analyzer checks
 * again for a config struct a caller filled by hand. Internal to the
 * library.
 */
#ifndef REMAT_CONFIG_INTERNAL_H
#define REMAT_CONFIG_INTERNAL_H

#include <stddef.h>

#include "remat/config.h"

/* The byte offset in remat_config_t of size key @p key when the key is a
   plain uint64_t field; 0 for a derived key, per_device_batch_size
   (remat_config_size computes those) or no size key at all. */
size_t remat_i_config_size_field(const char *key);

/* REMAT_E_CONFIG, naming the key, when @p c has no layer or more than
   remat supports (REMAT_MAX_LAYERS): the analyzer sizes its arrays by the
   layer count, and every room walks at least one layer. */
remat_status_t remat_i_config_check_layers(const remat_config_t *c, remat_error_t *err);

#endif
