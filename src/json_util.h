/* SPDX-License-Identifier: MIT */
/*
 * json_util.h: the one place a JSON text becomes a jansson tree, so that
 * every loader reports syntax errors the same way (file:line:column).
 */
#ifndef REMAT_JSON_UTIL_H
#define REMAT_JSON_UTIL_H

#include <jansson.h>

#include "remat/error.h"

/* Parses @p text, rejecting duplicate keys. New reference, or NULL with a
   REMAT_E_SYNTAX error naming @p source, line and column. */
json_t *remat_i_json_load(const char *text, const char *source, remat_error_t *err);

#endif
