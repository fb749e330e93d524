/* SPDX-License-Identifier: MIT */
/*
 * json_util.c: see json_util.h. jansson (2.14) reports most of its
 * allocation failures while parsing as a NULL result with no message, and
 * some not at all: a failed string copy becomes "invalid token", a failed
 * growth of the token buffer drops a character. The first kind is told
 * apart by the empty message; the others only when jansson allocates
 * through remat's allocators (json_set_alloc_funcs, as the allocation
 * failure test does), by remat_i_alloc_failures().
 */
#include "base/json_util.h"

#include "base/util.h"

remat_status_t remat_i_json_parse(const char *text, const char *source, json_t **out,
                                  remat_error_t *err) {
    json_error_t jerr;
    const uint64_t failures = remat_i_alloc_failures();
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
    *out = NULL;
    if (remat_i_alloc_failures() != failures || (!root && jerr.text[0] == '\0')) {
        json_decref(root);
        return remat_error_set(err, REMAT_E_NOMEM, source, NULL,
                               "out of memory (parsing JSON)");
    }
    if (!root) {
        remat_error_set(err, REMAT_E_SYNTAX, source, NULL, "%s", jerr.text);
        if (err && err->line == 0) {
            err->line = jerr.line;
            err->column = jerr.column;
        }
        return REMAT_E_SYNTAX;
    }
    *out = root;
    return REMAT_OK;
}

json_t *remat_i_json_load(const char *text, const char *source, remat_error_t *err) {
    json_t *root = NULL;
    remat_i_json_parse(text, source, &root, err);
    return root;
}
