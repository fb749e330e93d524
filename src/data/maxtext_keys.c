/* SPDX-License-Identifier: MIT */
/* maxtext_keys.c: lookup in MaxText's key list (maxtext_keys.h). */
#include "data/maxtext_keys.h"

#include <stdlib.h>
#include <string.h>

static int by_name(const void *key, const void *elem) {
    return strcmp(key, *(const char *const *)elem);
}

bool remat_i_is_maxtext_key(const char *key) {
    return bsearch(key, remat_i_maxtext_keys, remat_i_nmaxtext_keys, sizeof remat_i_maxtext_keys[0],
                   by_name) != NULL;
}
