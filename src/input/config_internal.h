/* SPDX-License-Identifier: MIT */
/*
 * config_internal.h: what config.c and config_build.c tell the rest of
 * remat about a config beyond the public remat/input/config.h: where a size key
 * lives, for the graph's index; the layer-count limit, which the analyzer
 * checks again for a config struct a caller filled by hand; and the
 * builder's entry points for a config file read once (the CLI builds from
 * one text several times: standard input and a pipe can be read only
 * once). Internal to remat (the library and its program).
 */
#ifndef REMAT_CONFIG_INTERNAL_H
#define REMAT_CONFIG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "remat/input/config.h"

/* A config file as the builder takes it: its name (in errors, and where a
   YAML base_config is looked up from) and its whole text. text is NULL for
   a YAML path the YAML reader reads itself (MaxText's base.yml that is not
   there). owned is what remat_i_config_file_release frees. */
typedef struct remat_i_config_file {
    const char *name;
    const char *text;
    size_t len;
    char *owned;
} remat_i_config_file_t;

/* Reads the config file @p path ("-": standard input, named "<stdin>")
   into @p f; release it either way. Errors as remat_i_read_path's. */
remat_status_t remat_i_config_file_read(const char *path, remat_i_config_file_t *f,
                                        remat_error_t *err);
void remat_i_config_file_release(remat_i_config_file_t *f);

/* remat_config_build from a file already read (@p f may be NULL: no file). */
remat_status_t remat_i_config_build_file(const remat_i_config_file_t *f, size_t nargs,
                                         char *const *args, remat_config_t *c,
                                         remat_error_t *err);

/* Whether the config file @p name holding @p text is YAML: a .yml or
   .yaml name; else not a .json name and not opening with '{'. */
bool remat_i_config_text_is_yaml(const char *name, const char *text);

/* Applies built-in model preset @p name ("default": none) to @p c. A preset
   with a "requires" field names a MaxText model whose layer needs a block
   remat's graphs lack (models/NAME.json; docs/config.md, "Models"): it is
   refused, not run as the nearest graph, unless the user brings a graph
   file (@p own_graph), which then runs with the preset's dims. */
remat_status_t remat_i_config_apply_model(remat_config_t *c, const char *name, bool own_graph,
                                          remat_error_t *err);

/* The checks of a config once every layer is applied (MaxText's layer
   keys, the device count, the layer limit, GQA, MoE, quantization, custom
   placements without remat_policy=custom); sets mu_dtype from
   weight_dtype unless it was set. */
remat_status_t remat_i_config_check_built(remat_config_t *c, remat_error_t *err);

/* The byte offset in remat_config_t of size key @p key when the key is a
   plain uint64_t field; 0 for a derived key, per_device_batch_size
   (remat_config_size computes those) or no size key at all. */
size_t remat_i_config_size_field(const char *key);

/* How a derived size key is computed from the settings ("shared_experts
   x base_moe_mlp_dim" for shared_mlp_dim), for errors; NULL for a key
   that is set directly. */
const char *remat_i_config_size_formula(const char *key);

/* Iterations a stage's output takes to reach the next stage in MaxText's
   pipeline: 2 with pipeline_delay_activation_forwarding, else 1 (its
   default micro-batches, the bubble and the loop state scale by it). */
unsigned remat_i_config_pipeline_delay(const remat_config_t *cfg);

/* The known key nearest @p key within a few edits (remat's keys and
   MaxText's), or NULL. */
const char *remat_i_config_nearest_key(const char *key);

/* REMAT_E_CONFIG, naming the key, when @p c has no layer or more than
   remat supports (REMAT_MAX_LAYERS), or layers that do not scan in whole
   blocks of inhomogeneous_layer_cycle_interval: the analyzer sizes its
   arrays by the layer count, every room walks at least one layer, and the
   step walks the blocks (a block of 0 layers would divide by zero). */
remat_status_t remat_i_config_check_layers(const remat_config_t *c, remat_error_t *err);

#endif
