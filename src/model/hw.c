/* SPDX-License-Identifier: MIT */
/*
 * hw.c: hardware profile loading and lookup (hw.h). A profile is a fixed
 * struct: loading allocates only to read the file and parse the JSON, and
 * either failure is an error status (REMAT_E_NOMEM for memory) with *out
 * left zeroed.
 */
#include "remat/model/hw.h"
#include "data/builtin_cache.h"
#include "data/builtin_data.h"

#include <assert.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/json_util.h"

#include "remat/data/builtin.h"
#include "base/util.h"

static remat_status_t bad(const char *source, const char *key, const char *what,
                          remat_error_t *err) {
    char path[80];
    snprintf(path, sizeof path, "$.%s", key);
    return remat_error_set(err, REMAT_E_SCHEMA, source, path, "'%s' must be %s", key, what);
}

static remat_status_t get_num(json_t *root, const char *source, const char *key, double *out,
                              remat_error_t *err) {
    json_t *v = json_object_get(root, key);
    if (!v) {
        return remat_error_set(err, REMAT_E_SCHEMA, source, "$", "missing required key '%s'", key);
    }
    if (!json_is_number(v) || !(json_number_value(v) > 0) || !isfinite(json_number_value(v))) {
        return bad(source, key, "a positive number", err);
    }
    *out = json_number_value(v);
    return REMAT_OK;
}

static remat_status_t get_u64(json_t *root, const char *source, const char *key, uint64_t *out,
                              remat_error_t *err) {
    json_t *v = json_object_get(root, key);
    if (!v) {
        return remat_error_set(err, REMAT_E_SCHEMA, source, "$", "missing required key '%s'", key);
    }
    if (!json_is_integer(v) || json_integer_value(v) <= 0) {
        return bad(source, key, "a positive integer", err);
    }
    *out = (uint64_t)json_integer_value(v);
    return REMAT_OK;
}

/* The "assumed" list: names of this profile's own fields. */
static remat_status_t load_assumed(json_t *root, const char *source, remat_hw_t *out,
                                   remat_error_t *err) {
    json_t *assumed = json_object_get(root, "assumed");
    if (!assumed) {
        return REMAT_OK;
    }
    if (!json_is_array(assumed)) {
        return bad(source, "assumed", "an array of field names", err);
    }
    size_t len = 0;
    for (size_t i = 0; i < json_array_size(assumed); i++) {
        json_t *s = json_array_get(assumed, i);
        if (!json_is_string(s) || !json_object_get(root, json_string_value(s))) {
            return bad(source, "assumed", "an array of this profile's field names", err);
        }
        int w = snprintf(out->assumed + len, sizeof out->assumed - len, "%s%s", len ? "," : "",
                         json_string_value(s));
        len += w > 0 ? (size_t)w : 0;
        if (len >= sizeof out->assumed) {
            return bad(source, "assumed", "a shorter list", err);
        }
    }
    return REMAT_OK;
}

static remat_status_t check_keys(json_t *root, const char *source, bool v2, remat_error_t *err) {
    static const char *const allowed[] = {
        "format",         "name",       "description",   "hbm_bytes",      "hbm_bw",
        "flops_bf16",     "flops_fp8",  "host_link_bw",  "chips_per_host", "host_ram_bytes",
        "ici_bw",         "assumed",    "sources",       "devices_per_chip",
        "hbm_limit_bytes", "cores_per_chip", "matmul_efficiency", "attention_efficiency",
        "memory_efficiency", "reserve_fraction", "compiler", "mxu_size", NULL};
    const size_t v1_keys = 13; /* the first 13 names are format 1's */
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        bool ok = false;
        for (size_t i = 0; allowed[i] && (v2 || i < v1_keys); i++) {
            ok |= strcmp(allowed[i], key) == 0;
        }
        if (!ok) {
            char path[96];
            snprintf(path, sizeof path, "$.%.80s", key);
            return remat_error_set(err, REMAT_E_SCHEMA, source, path, "unknown key '%s'%s", key,
                                   v2 ? "" : " (format remat-hardware/1)");
        }
    }
    return REMAT_OK;
}

/* Per-chip figures as the file states them. */
static remat_status_t load_chip(json_t *root, const char *source, remat_hw_t *out,
                                remat_error_t *err) {
    remat_status_t st;
    if ((st = get_u64(root, source, "hbm_bytes", &out->chip_hbm_bytes, err)) ||
        (st = get_num(root, source, "hbm_bw", &out->chip_hbm_bw, err)) ||
        (st = get_num(root, source, "flops_bf16", &out->chip_flops_bf16, err)) ||
        (st = get_num(root, source, "flops_fp8", &out->chip_flops_fp8, err)) ||
        (st = get_num(root, source, "host_link_bw", &out->host_link_bw, err)) ||
        (st = get_u64(root, source, "chips_per_host", &out->chips_per_host, err)) ||
        (st = get_u64(root, source, "host_ram_bytes", &out->host_ram_bytes, err)) ||
        (st = get_num(root, source, "ici_bw", &out->ici_bw, err))) {
        return st;
    }
    return REMAT_OK;
}

/* An efficiency: a fraction in (0, 1], 1 when a format 1 profile or the
   file leaves it out. */
static remat_status_t get_efficiency(json_t *root, const char *source, const char *key,
                                     double *out, remat_error_t *err) {
    *out = 1.0;
    if (!json_object_get(root, key)) {
        return REMAT_OK;
    }
    remat_status_t st = get_num(root, source, key, out, err);
    if (st == REMAT_OK && *out > 1.0) {
        return bad(source, key, "a fraction in (0, 1]", err);
    }
    return st;
}

/* A fraction in [0, 1), 0 when the profile leaves it out. */
static remat_status_t get_fraction(json_t *root, const char *source, const char *key,
                                   double *out, remat_error_t *err) {
    json_t *v = json_object_get(root, key);
    *out = 0;
    if (!v) {
        return REMAT_OK;
    }
    if (!json_is_number(v) || !(json_number_value(v) >= 0) || !(json_number_value(v) < 1)) {
        return bad(source, key, "a fraction in [0, 1)", err);
    }
    *out = json_number_value(v);
    return REMAT_OK;
}

/* Devices per chip and the per-device figures derived from the chip's. */
static remat_status_t derive_devices(json_t *root, const char *source, bool v2, remat_hw_t *out,
                                     remat_error_t *err) {
    remat_status_t st;
    out->devices_per_chip = 1;
    if (v2 && json_object_get(root, "devices_per_chip") &&
        (st = get_u64(root, source, "devices_per_chip", &out->devices_per_chip, err))) {
        return st;
    }
    out->cores_per_chip = out->devices_per_chip;
    if (v2 && json_object_get(root, "cores_per_chip") &&
        (st = get_u64(root, source, "cores_per_chip", &out->cores_per_chip, err))) {
        return st;
    }
    if (out->devices_per_chip > REMAT_MAX_DEVICES_PER_CHIP ||
        out->cores_per_chip > REMAT_MAX_DEVICES_PER_CHIP) {
        return bad(source,
                   out->devices_per_chip > REMAT_MAX_DEVICES_PER_CHIP ? "devices_per_chip"
                                                                       : "cores_per_chip",
                   "at most 16 (REMAT_MAX_DEVICES_PER_CHIP)", err);
    }
    const uint64_t d = out->devices_per_chip;
    const double dd = (double)d;
    out->hbm_bytes = out->chip_hbm_bytes / d;
    out->hbm_bw = out->chip_hbm_bw / dd;
    out->flops_bf16 = out->chip_flops_bf16 / dd;
    out->flops_fp8 = out->chip_flops_fp8 / dd;
    out->host_link_bw /= dd;
    out->ici_bw /= dd;
    if (!remat_i_mul(out->chips_per_host, d, &out->devices_per_host)) {
        return bad(source, "chips_per_host", "a smaller integer", err);
    }
    out->hbm_limit_bytes = out->hbm_bytes;
    if (v2) {
        if ((st = get_u64(root, source, "hbm_limit_bytes", &out->hbm_limit_bytes, err))) {
            return st;
        }
        if (out->hbm_limit_bytes > out->hbm_bytes) {
            return bad(source, "hbm_limit_bytes",
                       "at most one device's share of hbm_bytes (it is per device)", err);
        }
    }
    return REMAT_OK;
}

/* The optional compiler: "xla-tpu" (the default) or "xla-gpu". */
static remat_status_t load_compiler(json_t *root, const char *source, remat_hw_t *out,
                                    remat_error_t *err) {
    json_t *v = json_object_get(root, "compiler");
    if (!v) {
        return REMAT_OK;
    }
    const char *c = json_is_string(v) ? json_string_value(v) : "";
    if (strcmp(c, "xla-tpu") != 0 && strcmp(c, "xla-gpu") != 0) {
        return bad(source, "compiler", "\"xla-tpu\" or \"xla-gpu\"", err);
    }
    out->xla_gpu = strcmp(c, "xla-gpu") == 0;
    return REMAT_OK;
}

/* The optional side of the matrix units, a positive integer. */
static remat_status_t load_mxu(json_t *root, const char *source, remat_hw_t *out,
                               remat_error_t *err) {
    return json_object_get(root, "mxu_size") ? get_u64(root, source, "mxu_size", &out->mxu_size, err)
                                             : REMAT_OK;
}

remat_status_t remat_hw_load_string(const char *text, const char *source, remat_hw_t *out,
                                    remat_error_t *err) {
    memset(out, 0, sizeof *out);
    json_t *root;
    remat_status_t st = remat_i_json_parse(text, source, &root, err);
    if (st) {
        return st; /* out stays zeroed: parsing is where loading allocates */
    }
    json_t *format = json_object_get(root, "format");
    const char *fmt = json_is_string(format) ? json_string_value(format) : "";
    const bool v2 = strcmp(fmt, "remat-hardware/2") == 0;
    if (!json_is_object(root)) {
        st = remat_error_set(err, REMAT_E_SCHEMA, source, "$", "a profile must be an object");
        goto out;
    }
    if (!v2 && strcmp(fmt, "remat-hardware/1") != 0) {
        st = bad(source, "format", "\"remat-hardware/2\" (or \"remat-hardware/1\")", err);
        goto out;
    }
    if ((st = check_keys(root, source, v2, err))) {
        goto out;
    }
    json_t *name = json_object_get(root, "name");
    if (!json_is_string(name) || strlen(json_string_value(name)) >= sizeof out->name ||
        !remat_i_printable(json_string_value(name))) {
        st = bad(source, "name", "a string under 64 bytes without control characters", err);
        goto out;
    }
    json_t *d = json_object_get(root, "description");
    if (json_is_string(d) && !remat_i_printable(json_string_value(d))) {
        st = bad(source, "description", "a string without control characters", err);
        goto out;
    }
    snprintf(out->name, sizeof out->name, "%s", json_string_value(name));
    json_t *desc = json_object_get(root, "description");
    snprintf(out->description, sizeof out->description, "%s",
             json_is_string(desc) ? json_string_value(desc) : "");
    if ((st = load_chip(root, source, out, err)) ||
        (st = derive_devices(root, source, v2, out, err)) ||
        (st = get_efficiency(root, source, "matmul_efficiency", &out->matmul_efficiency, err)) ||
        (st = get_efficiency(root, source, "attention_efficiency", &out->attention_efficiency,
                             err)) ||
        (st = get_efficiency(root, source, "memory_efficiency", &out->memory_efficiency, err)) ||
        (st = get_fraction(root, source, "reserve_fraction", &out->reserve_fraction, err)) ||
        (st = load_assumed(root, source, out, err)) ||
        (st = load_compiler(root, source, out, err)) ||
        (st = load_mxu(root, source, out, err))) {
        goto out;
    }
out:
    json_decref(root);
    return st;
}

/* The family names users write for each built-in profile: MaxText's
   accelerator table and Cloud's TPU types (v5litepod, v6e), the marketing
   names (Trillium, Ironwood), and the GPU machine types of the GPU recipes
   (a3 = H100, a3ultra = H200, a4 = B200). Matched without regard to case. */
static const struct family {
    const char *name;
    const char *hardware;
} families[] = {
    {"tpu7x", "tpu7x"},     {"ironwood", "tpu7x"},    {"v6e", "tpu-v6e"},
    {"trillium", "tpu-v6e"}, {"v5p", "tpu-v5p"},      {"v5e", "tpu-v5e"},
    {"v5litepod", "tpu-v5e"}, {"v4", "tpu-v4"},       {"tpu-v6e", "tpu-v6e"},
    {"tpu-v5p", "tpu-v5p"}, {"tpu-v5e", "tpu-v5e"},   {"tpu-v4", "tpu-v4"},
    {"h100", "h100"},       {"a3", "h100"},           {"a3mega", "h100"},
    {"h200", "h200"},       {"a3ultra", "h200"},      {"b200", "b200"},
    {"a4", "b200"},
};

static bool same_ignoring_case(const char *a, const char *b) {
    for (; *a && *b; a++, b++) {
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) {
            return false;
        }
    }
    return *a == *b;
}

const char *remat_hw_family(const char *family) {
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++) {
        if (same_ignoring_case(family, families[i].name)) {
            return families[i].hardware;
        }
    }
    return NULL;
}

/* A profile file, read and parsed on every call: it may change. */
static remat_status_t resolve_file(const char *name, remat_hw_t *out, remat_error_t *err) {
    char *text = NULL;
    remat_status_t st = remat_i_read_file(name, &text, err);
    if (st == REMAT_OK) {
        st = remat_hw_load_string(text, name, out, err);
    }
    free(text);
    return st;
}

/* A cached profile: one block. */
static void drop_hw(void *hw) {
    free(hw);
}

/* Built-in profile @p index parsed from its JSON: what fills the cache. */
static remat_status_t make_hw(size_t index, void **out, remat_error_t *err) {
    assert(remat_i_builtins[index].kind == REMAT_BUILTIN_HARDWARE);
    *out = NULL;
    /* names the profile in errors, a failed allocation's as a parse's */
    char source[REMAT_ERR_SOURCE_LEN + 300];
    snprintf(source, sizeof source, "built-in hardware '%s'", remat_i_builtins[index].name);
    remat_hw_t parsed;
    remat_status_t st = remat_hw_load_string(remat_i_builtins[index].text, source, &parsed, err);
    if (st) {
        return st;
    }
    remat_hw_t *hw = remat_i_try_malloc(sizeof *hw, err);
    if (!hw) {
        remat_error_set_source(err, source);
        return REMAT_E_NOMEM;
    }
    *hw = parsed;
    *out = hw;
    return REMAT_OK;
}

/* Built-in profiles (by name or family) from the process-wide cache
   (builtin_cache.h); files parse every call. Topology names resolve their
   hardware here too, so building a config parses no profile more than
   once per process. */
remat_status_t remat_hw_resolve(const char *name, remat_hw_t *out, remat_error_t *err) {
    if (remat_i_is_json_name(name)) {
        return resolve_file(name, out, err);
    }
    const char *family = remat_hw_family(name);
    size_t i = remat_i_builtin_index(REMAT_BUILTIN_HARDWARE, name);
    if (i == REMAT_NONE && family) {
        i = remat_i_builtin_index(REMAT_BUILTIN_HARDWARE, family);
    }
    if (i == REMAT_NONE) {
        char list[512];
        remat_builtin_list(REMAT_BUILTIN_HARDWARE, list, sizeof list);
        return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                               "unknown hardware '%s' (built-in: %s; family names such as v6e, "
                               "v5litepod, Trillium, a3ultra; or a .json profile)", name,
                               list);
    }
    const void *hw = NULL;
    remat_status_t st = remat_i_cached(i, make_hw, drop_hw, &hw, err);
    if (st) {
        memset(out, 0, sizeof *out);
        return st;
    }
    *out = *(const remat_hw_t *)hw;
    return REMAT_OK;
}

bool remat_hw_is_assumed(const remat_hw_t *hw, const char *field) {
    size_t n = strlen(field);
    for (const char *p = hw->assumed; (p = strstr(p, field)) != NULL; p += n) {
        bool start = p == hw->assumed || p[-1] == ',';
        bool end = p[n] == '\0' || p[n] == ',';
        if (start && end) {
            return true;
        }
    }
    return false;
}
