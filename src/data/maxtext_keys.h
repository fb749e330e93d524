/* SPDX-License-Identifier: MIT */
/*
 * maxtext_keys.h: MaxText's configuration keys (maxtext/keys.txt, from
 * base.yml and types.py at the commit the file names), generated into a
 * sorted array at build time (cmake/keys.cmake). config.c accepts every one
 * of them and reports those it does not model as not used for memory.
 */
#ifndef REMAT_MAXTEXT_KEYS_H
#define REMAT_MAXTEXT_KEYS_H

#include <stdbool.h>
#include <stddef.h>

/* Sorted by strcmp, unique (cmake/keys.cmake checks). */
extern const char *const remat_i_maxtext_keys[];
extern const size_t remat_i_nmaxtext_keys;

/* Whether @p key is one of MaxText's keys (binary search). */
bool remat_i_is_maxtext_key(const char *key);

#endif
