/* SPDX-License-Identifier: MIT */
/*
 * config_maxtext.h: what config.c does with MaxText's own spellings: the
 * keys remat does not model (accepted, listed once), MaxText's names for
 * remat's settings (compile_topology, hardware=tpu|gpu), the checks of
 * MaxText's layer keys against remat's graph (decoder_block, num_experts,
 * mlp_activations, ...) and the notes for the user. Internal to the
 * library.
 */
#ifndef REMAT_CONFIG_MAXTEXT_H
#define REMAT_CONFIG_MAXTEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "remat/input/config.h"

/* MaxText's spelling of a remat setting, rewritten in place: @p key and
   @p value may be replaced (static strings); *skip when the setting means
   "unset" (compile_topology='') or changes nothing (hardware=tpu). */
remat_status_t remat_i_config_translate(remat_config_t *c, const char **key, const char **value,
                                        const char *source, const char *path, bool *skip,
                                        remat_error_t *err);

/* A boolean as MaxText's configs spell it (true, True, 1; false, False,
   0) into *@p out; false when @p text is none of them. */
bool remat_i_config_bool_text(const char *text, bool *out);

typedef enum remat_other_key {
    REMAT_OTHER_UNUSED,     /* one of MaxText's keys remat does not model: listed */
    REMAT_OTHER_REFUSED,    /* one of those, off its default in a way that changes the step */
    REMAT_OTHER_GRAPH_NAME, /* a placement for a name MaxText does not have: the graph's own */
    REMAT_OTHER_UNKNOWN     /* neither */
} remat_other_key_t;

/* A key that is not one of remat's: one of MaxText's (listed in
   c->unused_keys), one of those set off MaxText's default in a way that
   changes the step (refused: *why says how), a placement for a graph's
   own name, or unknown (the caller's error: it knows remat's keys, the
   nearest of which it names). */
remat_other_key_t remat_i_config_other_key(remat_config_t *c, const char *key,
                                           const char *value, const char **why);

/* Once the config is built: MaxText's layer keys against remat's graph. */
remat_status_t remat_i_config_check_maxtext(remat_config_t *c, remat_error_t *err);

/* Whether c->graph is a built-in graph with Gemma 3's vision encoder
   (gemma3_vision): its vit_* sizes follow Gemma 3's rules, every other
   graph's (a graph file's too) Qwen3-VL's. */
bool remat_i_config_vit_gemma3(const remat_config_t *c);

/* Whether c->graph is a built-in graph with Llama 4's vision encoder
   (llama4_vision, llama4_qk_norm_vision): its vit_* sizes follow Llama 4's
   tiles and pixel shuffle. */
bool remat_i_config_vit_llama4(const remat_config_t *c);

/* Llama 4's pixel shuffle as patches merged a side: 1 /
   pixel_shuffle_ratio_for_vit when that is a whole number from 1 to 64,
   else 0 (the config check refuses it). */
uint64_t remat_i_config_vit_shuffle(const remat_config_t *c);

/* The tiles MaxText's Llama 4 processor pads every image to
   (multimodal/processor_llama4.py LLAMA4_TILES_PAD_TO at e591f30): the
   dummy image train_compile feeds has this many. */
enum { REMAT_LLAMA4_TILES = 20 };

/* The image tokens per image (derived size vit_tokens): Qwen3-VL's, the
   patches of MaxText's 2-frame dummy image over
   spatial_merge_size_for_vit^2; Gemma 3's, the 256 its VisionExit pools
   the patch grid to (models/gemma3.py); Llama 4's, 20 tiles of the tile's
   patches over the pixel shuffle's merge^2; 0 when a size is 0 (the config
   check refuses it). */
uint64_t remat_i_config_vit_tokens(const remat_config_t *c);

/* The images of one example the vision encoder runs (derived size
   vit_images): 1 when image_token_share < 0 (MaxText's train_compile),
   else the whole images the share of max_target_length holds (0: none). */
uint64_t remat_i_config_vit_images(const remat_config_t *c);

/* Appends a note (one line, no '\n') to c->notes; a note that does not fit
   is dropped whole, never cut. */
void remat_i_config_note(remat_config_t *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif
