/* SPDX-License-Identifier: MIT */
/* json_util.c: see json_util.h. */
#include "json_util.h"

json_t *remat_i_json_load(const char *text, const char *source, remat_error_t *err) {
    json_error_t jerr;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        remat_error_set(err, REMAT_E_SYNTAX, source, NULL, "%s", jerr.text);
        if (err && err->line == 0) {
            err->line = jerr.line;
            err->column = jerr.column;
        }
    }
    return root;
}
