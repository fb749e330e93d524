/* SPDX-License-Identifier: MIT */
/*
 * config_maxtext.h: what config.c does with MaxText's own spellings: the
 * keys remat does not model (accepted, listed once), MaxText's names for
 * remat's settings (compile_topology, hardware=tpu|gpu), the checks of
 * MaxText's layer keys against remat's graph (decoder_block, num_experts,
 * mlp_activations, ...), the notes for the user and the nearest-key
 * suggestion. Internal to the library.
 */
#ifndef REMAT_CONFIG_MAXTEXT_H
#define REMAT_CONFIG_MAXTEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "remat/config.h"

/* MaxText's spelling of a remat setting, rewritten in place: @p key and
   @p value may be replaced (static strings); *skip when the setting means
   "unset" (compile_topology='') or changes nothing (hardware=tpu). */
remat_status_t remat_i_config_translate(remat_config_t *c, const char **key, const char **value,
                                        const char *source, const char *path, bool *skip,
                                        remat_error_t *err);

typedef enum remat_other_key {
    REMAT_OTHER_UNUSED,     /* one of MaxText's keys remat does not model: listed */
    REMAT_OTHER_GRAPH_NAME, /* a placement for a name MaxText does not have: the graph's own */
    REMAT_OTHER_UNKNOWN     /* neither: an error is set */
} remat_other_key_t;

/* A key that is not one of remat's. */
remat_other_key_t remat_i_config_other_key(remat_config_t *c, const char *key, const char *value,
                                           const char *source, const char *path,
                                           remat_error_t *err);

/* Once the config is built: MaxText's layer keys against remat's graph. */
remat_status_t remat_i_config_check_maxtext(remat_config_t *c, remat_error_t *err);

/* Appends a note (one line, no '\n') to c->notes; a note that does not fit
   is dropped whole, never cut. */
void remat_i_config_note(remat_config_t *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The known key nearest @p key within a few edits (remat's keys, MaxText's
   and checkpoint names), or NULL. */
const char *remat_i_config_nearest_key(const char *key);

/* The word of @p words nearer @p key than @p best (at distance *bestd),
   updating *bestd; @p best when none is. Start with NULL and SIZE_MAX. */
const char *remat_i_nearest_word(const char *key, const char *const *words, size_t n,
                                 const char *best, size_t *bestd);

/* Whether a word at distance @p d from @p key is worth suggesting. */
bool remat_i_near_enough(const char *key, size_t d);

#endif
