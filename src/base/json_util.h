/* SPDX-License-Identifier: MIT */
/*
 * json_util.h: the one place a JSON text becomes a jansson tree, so that
 * every loader reports syntax errors the same way (file:line:column) and an
 * allocation failure inside jansson as REMAT_E_NOMEM, never as a syntax
 * error or a tree that silently lost a character.
 */
#ifndef REMAT_JSON_UTIL_H
#define REMAT_JSON_UTIL_H

#include <jansson.h>

#include "remat/base/error.h"

/* Parses @p text, rejecting duplicate keys, into a new reference in *out.
   Errors: REMAT_E_SYNTAX naming @p source, line and column; REMAT_E_NOMEM
   when jansson ran out of memory. *out is NULL on error. */
remat_status_t remat_i_json_parse(const char *text, const char *source, json_t **out,
                                  remat_error_t *err);

/* remat_i_json_parse returning the tree, or NULL with @p err filled. */
json_t *remat_i_json_load(const char *text, const char *source, remat_error_t *err);

#endif
