/* SPDX-License-Identifier: MIT */
/*
 * graph_load.c: JSON -> remat_graph_t. Owns the schema of docs/graph-format.md
 * (format "remat-graph/1"): types, required keys, names that must resolve.
 * Semantic checks that need the whole graph (DAG, shapes, einsum specs) live
 * in graph.c; no json_t survives a call into this file.
 *
 * Every allocation is fallible (util.h): a failure returns REMAT_E_NOMEM up
 * the same path as a schema error, and remat_graph_free releases the
 * partial graph. So that it can, a count (ndims, ntensors, nops) is set only
 * once its array exists, and an array's entries start zeroed.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "remat/input/graph_file.h"
#include "base/json_util.h"

#include "model/graph_index.h"
#include "model/graph_internal.h"
#include "input/config_internal.h"
#include "base/util.h"

/* While a block loads, its tensor names map to their indices and its op
   names are collected in jansson objects (hash tables), so that loading is
   linear in the graph's size. */
typedef struct loader {
    const char *source;
    remat_jpath_t path;
    remat_error_t *err;
    remat_graph_t *g;
    json_t *tensor_index; /* name -> index in the block being loaded */
    json_t *op_names;     /* names of the block's ops loaded so far */
} loader_t;

static size_t find_tensor(const loader_t *L, const char *name) {
    json_t *v = json_object_get(L->tensor_index, name);
    return v ? (size_t)json_integer_value(v) : REMAT_NONE;
}

static remat_status_t fail(loader_t *L, remat_status_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static remat_status_t fail(loader_t *L, remat_status_t code, const char *fmt, ...) {
    char text[REMAT_ERR_TEXT_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    return remat_error_set(L->err, code, L->source, L->path.buf, "%s", text);
}

/* A copy of @p s into *out; REMAT_E_NOMEM (err set) when it cannot be made. */
static remat_status_t dup(loader_t *L, const char *s, char **out) {
    *out = remat_i_try_strdup(s, L->err);
    return *out ? REMAT_OK : REMAT_E_NOMEM;
}

/* jansson could not grow one of the loader's hash tables. */
static remat_status_t json_nomem(loader_t *L) {
    return fail(L, REMAT_E_NOMEM, "out of memory (in jansson)");
}

/* Object keys that a section may hold; anything else is a typo to report. */
static remat_status_t check_keys(loader_t *L, json_t *obj, const char *const *allowed) {
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        bool ok = false;
        for (size_t i = 0; allowed[i]; i++) {
            if (strcmp(key, allowed[i]) == 0) {
                ok = true;
                break;
            }
        }
        if (!ok) {
            remat_i_jpath_key(&L->path, key);
            remat_status_t st = fail(L, REMAT_E_SCHEMA, "unknown key '%s'", key);
            remat_i_jpath_pop(&L->path);
            return st;
        }
    }
    (void)v;
    return REMAT_OK;
}

#define NAME_RULE "(1 to 47 characters from A-Z a-z 0-9 _ - .)"
_Static_assert(REMAT_NAME_LEN == 48, "NAME_RULE states the name length");

/* Names are as long as a policy's (REMAT_NAME_LEN - 1): a checkpoint name a
   graph accepts is one a policy, the solver and the tables can hold. */
static bool valid_name(const char *s) {
    if (!*s || strlen(s) >= REMAT_NAME_LEN) {
        return false;
    }
    for (const char *p = s; *p; p++) {
        char c = *p;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.')) {
            return false;
        }
    }
    return true;
}

static remat_status_t get_string(loader_t *L, json_t *obj, const char *key, bool required,
                                 const char **out) {
    json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (!v) {
        return required ? fail(L, REMAT_E_SCHEMA, "missing required key '%s'", key)
                        : REMAT_OK;
    }
    if (!json_is_string(v)) {
        remat_i_jpath_key(&L->path, key);
        remat_status_t st = fail(L, REMAT_E_SCHEMA, "'%s' must be a string", key);
        remat_i_jpath_pop(&L->path);
        return st;
    }
    *out = json_string_value(v);
    return REMAT_OK;
}

static remat_status_t load_dims(loader_t *L, json_t *dims) {
    remat_graph_t *g = L->g;
    if (!json_is_object(dims) || json_object_size(dims) == 0) {
        return fail(L, REMAT_E_SCHEMA, "'dims' must be a non-empty object");
    }
    if (json_object_size(dims) > REMAT_MAX_DIMS) {
        return fail(L, REMAT_E_SCHEMA, "at most 64 dims");
    }
    g->dims = remat_i_try_calloc(json_object_size(dims), sizeof *g->dims, L->err);
    if (!g->dims) {
        return REMAT_E_NOMEM;
    }
    g->ndims = json_object_size(dims);
    size_t i = 0;
    const char *key;
    json_t *d;
    json_object_foreach(dims, key, d) {
        remat_dim_t *dim = &g->dims[i++];
        if (dup(L, key, &dim->name)) {
            return REMAT_E_NOMEM;
        }
        remat_i_jpath_key(&L->path, key);
        static const char *const allowed[] = {"from", "div", "value", "axis", "weight_axis", NULL};
        if (!valid_name(key)) {
            return fail(L, REMAT_E_SCHEMA, "invalid dim name '%s' " NAME_RULE, key);
        }
        if (!json_is_object(d)) {
            return fail(L, REMAT_E_SCHEMA, "dim '%s' must be an object with 'from' or 'value'", key);
        }
        remat_status_t st = check_keys(L, d, allowed);
        if (st) {
            return st;
        }
        const char *from, *axis, *div;
        if ((st = get_string(L, d, "from", false, &from)) ||
            (st = get_string(L, d, "div", false, &div)) ||
            (st = get_string(L, d, "axis", false, &axis))) {
            return st;
        }
        if (div && (!from || !remat_config_is_size_key(div))) {
            return fail(L, REMAT_E_SCHEMA,
                        "dim '%s': 'div' needs 'from' and must name an integer config key", key);
        }
        if (div && (st = dup(L, div, &dim->div))) {
            return st;
        }
        json_t *value = json_object_get(d, "value");
        if ((from == NULL) == (value == NULL)) {
            return fail(L, REMAT_E_SCHEMA, "dim '%s' needs exactly one of 'from' and 'value'", key);
        }
        if (from) {
            if (!remat_config_is_size_key(from)) {
                return fail(L, REMAT_E_SCHEMA,
                            "dim '%s' binds to '%s', which is not an integer config key", key,
                            from);
            }
            if ((st = dup(L, from, &dim->from))) {
                return st;
            }
        } else {
            if (!json_is_integer(value) || json_integer_value(value) <= 0) {
                return fail(L, REMAT_E_SCHEMA, "dim '%s': 'value' must be a positive integer", key);
            }
            dim->value = (uint64_t)json_integer_value(value);
        }
        const char *waxis;
        if ((axis && (st = dup(L, axis, &dim->axis))) ||
            (st = get_string(L, d, "weight_axis", false, &waxis)) ||
            (waxis && (st = dup(L, waxis, &dim->weight_axis)))) {
            return st;
        }
        remat_i_jpath_pop(&L->path);
    }
    return REMAT_OK;
}

static size_t find_dim(const remat_graph_t *g, const char *name) {
    for (size_t i = 0; i < g->ndims; i++) {
        if (strcmp(g->dims[i].name, name) == 0) {
            return i;
        }
    }
    return REMAT_NONE;
}

/* "axes": one logical axis name (or null) per dim, overriding the dims'
   `axis`/`weight_axis` for this tensor (MaxText names some tensors' axes
   apart from their dims: the vocabulary weights' embed dim is embed_vocab). */
static remat_status_t load_axes(loader_t *L, json_t *t, remat_tensor_t *out) {
    json_t *axes = json_object_get(t, "axes");
    if (!axes) {
        return REMAT_OK;
    }
    remat_i_jpath_key(&L->path, "axes");
    if (!json_is_array(axes) || json_array_size(axes) != out->rank) {
        return fail(L, REMAT_E_SCHEMA, "'axes' must list one logical axis (or null) per dim of "
                                       "the shape's %zu", out->rank);
    }
    out->has_axes = true;
    for (size_t i = 0; i < out->rank; i++) {
        json_t *a = json_array_get(axes, i);
        if (json_is_null(a)) {
            continue;
        }
        if (!json_is_string(a) || !valid_name(json_string_value(a))) {
            remat_i_jpath_index(&L->path, i);
            return fail(L, REMAT_E_SCHEMA, "a logical axis must be a name or null");
        }
        if (dup(L, json_string_value(a), &out->axes[i])) {
            return REMAT_E_NOMEM;
        }
    }
    remat_i_jpath_pop(&L->path);
    return REMAT_OK;
}

/* "checkpoint": one name or 1 to 4 of them, never on a param. */
static remat_status_t load_tags(loader_t *L, json_t *t, remat_tensor_t *out) {
    json_t *ck = json_object_get(t, "checkpoint");
    if (ck) {
        remat_i_jpath_key(&L->path, "checkpoint");
        if (json_is_string(ck)) {
            if (dup(L, json_string_value(ck), &out->tags[0])) {
                return REMAT_E_NOMEM;
            }
            out->ntags = 1;
        } else if (json_is_array(ck) && json_array_size(ck) >= 1 &&
                   json_array_size(ck) <= REMAT_MAX_TAGS) {
            for (size_t i = 0; i < json_array_size(ck); i++) {
                json_t *s = json_array_get(ck, i);
                if (!json_is_string(s)) {
                    return fail(L, REMAT_E_SCHEMA, "checkpoint names must be strings");
                }
                if (dup(L, json_string_value(s), &out->tags[out->ntags])) {
                    return REMAT_E_NOMEM;
                }
                out->ntags++;
            }
        } else {
            return fail(L, REMAT_E_SCHEMA,
                        "'checkpoint' must be a name or an array of 1 to 4 names");
        }
        for (size_t i = 0; i < out->ntags; i++) {
            if (!valid_name(out->tags[i])) {
                return fail(L, REMAT_E_SCHEMA, "invalid checkpoint name '%s' " NAME_RULE, out->tags[i]);
            }
        }
        if (out->param) {
            return fail(L, REMAT_E_SCHEMA,
                        "a param cannot carry a checkpoint name (params are always kept)");
        }
        remat_i_jpath_pop(&L->path);
    }
    return REMAT_OK;
}

/* A tensor's `shape`: a list of at most REMAT_MAX_RANK known dim names. */
static remat_status_t load_shape(loader_t *L, const char *name, json_t *t, remat_tensor_t *out) {
    json_t *shape = json_object_get(t, "shape");
    if (!shape) {
        return fail(L, REMAT_E_SCHEMA, "tensor '%s' has no 'shape'", name);
    }
    remat_i_jpath_key(&L->path, "shape");
    if (!json_is_array(shape)) {
        return fail(L, REMAT_E_SCHEMA, "'shape' must be an array of dim names");
    }
    if (json_array_size(shape) > REMAT_MAX_RANK) {
        return fail(L, REMAT_E_SCHEMA, "rank above the maximum of 8");
    }
    out->rank = json_array_size(shape);
    for (size_t i = 0; i < out->rank; i++) {
        json_t *d = json_array_get(shape, i);
        remat_i_jpath_index(&L->path, i);
        if (!json_is_string(d)) {
            return fail(L, REMAT_E_SCHEMA, "a shape entry must be a dim name");
        }
        size_t di = find_dim(L->g, json_string_value(d));
        if (di == REMAT_NONE) {
            return fail(L, REMAT_E_SCHEMA, "unknown dim '%s'", json_string_value(d));
        }
        out->dim[i] = di;
        remat_i_jpath_pop(&L->path);
    }
    remat_i_jpath_pop(&L->path);
    return REMAT_OK;
}

/* A tensor's `param` and `frozen` flags; frozen only on a param (a vision
   encoder's weights under freeze_vision_encoder_params). */
static remat_status_t load_flags(loader_t *L, json_t *t, remat_tensor_t *out) {
    json_t *param = json_object_get(t, "param");
    if (param) {
        if (!json_is_boolean(param)) {
            remat_i_jpath_key(&L->path, "param");
            return fail(L, REMAT_E_SCHEMA, "'param' must be true or false");
        }
        out->param = json_is_true(param);
    }
    json_t *frozen = json_object_get(t, "frozen");
    if (frozen) {
        if (!json_is_boolean(frozen) || (json_is_true(frozen) && !out->param)) {
            remat_i_jpath_key(&L->path, "frozen");
            return fail(L, REMAT_E_SCHEMA, "'frozen' is true or false, and true only on a param");
        }
        out->frozen = json_is_true(frozen);
    }
    return REMAT_OK;
}

/* A tensor's `kept`: where a kind with its own residuals saves it, device
   or offload; not on a param (params are always there). */
static remat_status_t load_kept(loader_t *L, json_t *t, remat_tensor_t *out) {
    const char *kept;
    remat_status_t st = get_string(L, t, "kept", false, &kept);
    if (st || !kept) {
        return st;
    }
    const bool device = strcmp(kept, "device") == 0, offload = strcmp(kept, "offload") == 0;
    if (out->param || (!device && !offload)) {
        remat_i_jpath_key(&L->path, "kept");
        return fail(L, REMAT_E_SCHEMA, "'kept' is device or offload, and not on a param");
    }
    out->kept = device ? REMAT_KEPT_DEVICE : REMAT_KEPT_OFFLOAD;
    return REMAT_OK;
}

static remat_status_t load_tensor(loader_t *L, const char *name, json_t *t, remat_tensor_t *out) {
    static const char *const allowed[] = {"shape",        "dtype",  "param", "checkpoint", "axes",
                                          "gather_group", "frozen", "kept",  NULL};
    remat_status_t st;
    out->producer = REMAT_NONE;
    out->last_use = REMAT_NONE;
    if ((st = dup(L, name, &out->name))) {
        return st;
    }
    if (!valid_name(name)) {
        return fail(L, REMAT_E_SCHEMA, "invalid tensor name '%s' " NAME_RULE, name);
    }
    if (!json_is_object(t)) {
        return fail(L, REMAT_E_SCHEMA, "tensor '%s' must be an object", name);
    }
    if ((st = check_keys(L, t, allowed))) {
        return st;
    }
    if ((st = load_shape(L, name, t, out))) {
        return st;
    }
    const char *dtype;
    if ((st = get_string(L, t, "dtype", true, &dtype))) {
        return st;
    }
    if (!remat_dtype_parse(dtype, &out->dtype)) {
        remat_i_jpath_key(&L->path, "dtype");
        return fail(L, REMAT_E_SCHEMA,
                    "unknown dtype '%s' (act, weight, fp32, bf16, fp16, fp8_e4m3, fp8_e5m2, "
                    "int32, int8, bool)", dtype);
    }
    if ((st = load_flags(L, t, out))) {
        return st;
    }
    const char *group;
    if ((st = load_axes(L, t, out)) || (st = get_string(L, t, "gather_group", false, &group))) {
        return st;
    }
    if (group && (!out->param || !valid_name(group))) {
        remat_i_jpath_key(&L->path, "gather_group");
        return fail(L, REMAT_E_SCHEMA,
                    "'gather_group' belongs on a param and is a name " NAME_RULE);
    }
    if (group && (st = dup(L, group, &out->gather_group))) {
        return st;
    }
    if ((st = load_kept(L, t, out))) {
        return st;
    }
    return load_tags(L, t, out);
}

static remat_status_t load_name_list(loader_t *L, json_t *arr, const char *key,
                                     size_t **out, size_t *n, size_t max) {
    remat_i_jpath_key(&L->path, key);
    if (!json_is_array(arr) || json_array_size(arr) == 0 || json_array_size(arr) > max) {
        return max == REMAT_MAX_IO
                   ? fail(L, REMAT_E_SCHEMA, "'%s' must be an array of 1 to 8 tensor names", key)
                   : fail(L, REMAT_E_SCHEMA, "'%s' must be a non-empty array of tensor names", key);
    }
    if (!*out && !(*out = remat_i_try_calloc(json_array_size(arr), sizeof **out, L->err))) {
        return REMAT_E_NOMEM;
    }
    *n = json_array_size(arr);
    for (size_t i = 0; i < *n; i++) {
        json_t *s = json_array_get(arr, i);
        remat_i_jpath_index(&L->path, i);
        if (!json_is_string(s)) {
            return fail(L, REMAT_E_SCHEMA, "a tensor reference must be a string");
        }
        size_t ti = find_tensor(L, json_string_value(s));
        if (ti == REMAT_NONE) {
            return fail(L, REMAT_E_SCHEMA, "unknown tensor '%s'", json_string_value(s));
        }
        for (size_t j = 0; j < i; j++) {
            if ((*out)[j] == ti) {
                return fail(L, REMAT_E_SCHEMA, "tensor '%s' is listed twice", json_string_value(s));
            }
        }
        (*out)[i] = ti;
        remat_i_jpath_pop(&L->path);
    }
    remat_i_jpath_pop(&L->path);
    return REMAT_OK;
}

/* The attributes some op kinds take: `causal`, `layout` and `value`. */
/* A grouped matmul's ragged indices (einsum), an all-to-all's mesh axis
   (gather) and an attention op's own window (flash_attention). The ragged
   indices are checked against the spec in graph.c's op checks (they must
   be the spec's own letters). */
static remat_status_t load_moe_attrs(loader_t *L, json_t *o, remat_op_t *op) {
    json_t *ragged = json_object_get(o, "ragged"), *over = json_object_get(o, "over");
    if (ragged) {
        const char *rv = json_is_string(ragged) ? json_string_value(ragged) : "";
        if (op->kind != REMAT_OP_EINSUM || !*rv || strlen(rv) > REMAT_MAX_RANK) {
            remat_i_jpath_key(&L->path, "ragged");
            return fail(L, REMAT_E_SCHEMA,
                        "'ragged' must be 1 to %d einsum index letters on an einsum op",
                        REMAT_MAX_RANK);
        }
        snprintf(op->ragged, sizeof op->ragged, "%s", rv);
    }
    json_t *window = json_object_get(o, "window");
    if (window) {
        const char *wv = json_is_string(window) ? json_string_value(window) : "";
        if (op->kind != REMAT_OP_FLASH_ATTENTION || !remat_config_is_size_key(wv) ||
            strlen(wv) >= sizeof op->window) {
            remat_i_jpath_key(&L->path, "window");
            return fail(L, REMAT_E_SCHEMA,
                        "'window' must be an integer config key on a flash_attention op");
        }
        snprintf(op->window, sizeof op->window, "%s", wv);
    }
    if (over) {
        const char *ov = json_is_string(over) ? json_string_value(over) : "";
        if (op->kind != REMAT_OP_GATHER || strcmp(ov, "expert") != 0) {
            remat_i_jpath_key(&L->path, "over");
            return fail(L, REMAT_E_SCHEMA, "'over' must be \"expert\" on a gather op");
        }
        snprintf(op->over, sizeof op->over, "%s", ov);
    }
    return REMAT_OK;
}

/* `outer`: a one-input mul (times an operand of the output's shape that
   the head holds: Gemma 4's per-layer input) or a one-input
   flash_attention (keys and values an earlier layer holds: KV sharing).
   `outside`: the op runs before the layer's checkpoint. Which block may
   have them is checked with the graph (graph.c). */
static remat_status_t load_layer_attrs(loader_t *L, json_t *o, remat_op_t *op) {
    json_t *outer = json_object_get(o, "outer"), *outside = json_object_get(o, "outside");
    if (outer) {
        const bool one_in = op->nin == 1;
        if (!json_is_true(outer) || !one_in ||
            (op->kind != REMAT_OP_MUL && op->kind != REMAT_OP_FLASH_ATTENTION)) {
            remat_i_jpath_key(&L->path, "outer");
            return fail(L, REMAT_E_SCHEMA,
                        "'outer' must be true, on a mul or flash_attention op with one input");
        }
        op->outer = op->kind == REMAT_OP_MUL ? 1 : 2;
    }
    if (outside) {
        if (!json_is_boolean(outside)) {
            remat_i_jpath_key(&L->path, "outside");
            return fail(L, REMAT_E_SCHEMA, "'outside' must be true or false");
        }
        op->outside = json_is_true(outside);
    }
    return REMAT_OK;
}

static remat_status_t load_op_attrs(loader_t *L, json_t *o, remat_op_t *op) {
    json_t *causal = json_object_get(o, "causal");
    if (causal) {
        if (!json_is_boolean(causal) ||
            (op->kind != REMAT_OP_SOFTMAX && op->kind != REMAT_OP_FLASH_ATTENTION)) {
            remat_i_jpath_key(&L->path, "causal");
            return fail(L, REMAT_E_SCHEMA,
                        "'causal' must be a boolean on a softmax or flash_attention op");
        }
        op->causal = json_is_true(causal);
    }
    json_t *layout = json_object_get(o, "layout");
    if (layout) {
        const char *lv = json_is_string(layout) ? json_string_value(layout) : "";
        if (op->kind != REMAT_OP_FLASH_ATTENTION || (strcmp(lv, "bshd") && strcmp(lv, "bhsd"))) {
            remat_i_jpath_key(&L->path, "layout");
            return fail(L, REMAT_E_SCHEMA,
                        "'layout' must be \"bshd\" or \"bhsd\" on a flash_attention op");
        }
        op->bhsd = strcmp(lv, "bhsd") == 0;
    }
    remat_status_t st = load_moe_attrs(L, o, op);
    if (st) {
        return st;
    }
    if ((st = load_layer_attrs(L, o, op))) {
        return st;
    }
    json_t *value = json_object_get(o, "value");
    if (value) {
        if (!json_is_number(value) ||
            (op->kind != REMAT_OP_SCALE && op->kind != REMAT_OP_DROPOUT)) {
            remat_i_jpath_key(&L->path, "value");
            return fail(L, REMAT_E_SCHEMA, "'value' must be a number on a scale or dropout op");
        }
        op->value = json_number_value(value);
    }
    return REMAT_OK;
}

static remat_status_t load_op(loader_t *L, json_t *o, remat_op_t *op) {
    static const char *const allowed[] = {"name",   "op",     "in",     "out",   "spec",
                                          "saves",  "causal", "value",  "layout", "ragged",
                                          "over",   "window", "outer",  "outside", NULL};
    remat_status_t st;
    if (!json_is_object(o)) {
        return fail(L, REMAT_E_SCHEMA, "an op must be an object");
    }
    if ((st = check_keys(L, o, allowed))) {
        return st;
    }
    const char *name, *kind, *spec;
    if ((st = get_string(L, o, "name", true, &name)) ||
        (st = get_string(L, o, "op", true, &kind)) ||
        (st = get_string(L, o, "spec", false, &spec)) || (st = dup(L, name, &op->name))) {
        return st;
    }
    if (!valid_name(name)) {
        return fail(L, REMAT_E_SCHEMA, "invalid op name '%s' " NAME_RULE, name);
    }
    if (!remat_i_opkind_parse(kind, &op->kind)) {
        remat_i_jpath_key(&L->path, "op");
        return fail(L, REMAT_E_SCHEMA, "unknown op kind '%s' (see docs/graph-format.md)", kind);
    }
    size_t *p = op->in;
    if ((st = load_name_list(L, json_object_get(o, "in"), "in", &p, &op->nin, REMAT_MAX_IO))) {
        return st;
    }
    p = op->out;
    if ((st = load_name_list(L, json_object_get(o, "out"), "out", &p, &op->nout,
                             REMAT_MAX_IO))) {
        return st;
    }
    if (spec) {
        if (op->kind != REMAT_OP_EINSUM) {
            remat_i_jpath_key(&L->path, "spec");
            return fail(L, REMAT_E_SCHEMA, "'spec' is only for einsum ops");
        }
        remat_i_jpath_key(&L->path, "spec");
        if ((st = remat_i_einsum_parse(spec, op, L->source, L->path.buf, L->err))) {
            return st;
        }
        remat_i_jpath_pop(&L->path);
    } else if (op->kind == REMAT_OP_EINSUM) {
        return fail(L, REMAT_E_SCHEMA, "einsum op '%s' needs a 'spec'", name);
    }
    if ((st = load_op_attrs(L, o, op))) {
        return st;
    }
    json_t *saves = json_object_get(o, "saves");
    if (saves) {
        remat_i_jpath_key(&L->path, "saves");
        if (!json_is_array(saves) || json_array_size(saves) > 2 * REMAT_MAX_IO) {
            return fail(L, REMAT_E_SCHEMA, "'saves' must be an array of the op's tensors");
        }
        op->saves_override = true;
        for (size_t i = 0; i < json_array_size(saves); i++) {
            json_t *s = json_array_get(saves, i);
            remat_i_jpath_index(&L->path, i);
            size_t ti = json_is_string(s) ? find_tensor(L, json_string_value(s))
                                          : REMAT_NONE;
            bool mine = false;
            for (size_t j = 0; ti != REMAT_NONE && j < op->nin; j++) {
                mine |= op->in[j] == ti;
            }
            for (size_t j = 0; ti != REMAT_NONE && j < op->nout; j++) {
                mine |= op->out[j] == ti;
            }
            if (!mine) {
                return fail(L, REMAT_E_SCHEMA, "'saves' may name only the op's own inputs and "
                                               "outputs");
            }
            op->saves[op->nsaves++] = ti;
            remat_i_jpath_pop(&L->path);
        }
        remat_i_jpath_pop(&L->path);
    }
    return REMAT_OK;
}

static remat_status_t load_block_body(loader_t *L, json_t *obj, remat_block_t *b, bool head) {
    static const char *const layer_keys[] = {"inputs", "outputs", "tensors", "ops", NULL};
    static const char *const head_keys[] = {"inputs",      "outputs",     "tensors", "ops",
                                            "feeds_layer", "takes_layer", NULL};
    remat_status_t st;
    if (!json_is_object(obj)) {
        return fail(L, REMAT_E_SCHEMA, "'%s' must be an object", head ? "head" : "layer");
    }
    if ((st = check_keys(L, obj, head ? head_keys : layer_keys))) {
        return st;
    }
    json_t *tensors = json_object_get(obj, "tensors");
    json_t *ops = json_object_get(obj, "ops");
    if (!json_is_object(tensors) || json_object_size(tensors) == 0) {
        return fail(L, REMAT_E_SCHEMA, "'tensors' must be a non-empty object");
    }
    if (!json_is_array(ops) || json_array_size(ops) == 0) {
        return fail(L, REMAT_E_SCHEMA, "'ops' must be a non-empty array");
    }
    b->tensors = remat_i_try_calloc(json_object_size(tensors), sizeof *b->tensors, L->err);
    if (!b->tensors) {
        return REMAT_E_NOMEM;
    }
    b->ntensors = json_object_size(tensors);
    remat_i_jpath_key(&L->path, "tensors");
    size_t i = 0;
    const char *key;
    json_t *t;
    json_object_foreach(tensors, key, t) {
        remat_i_jpath_key(&L->path, key);
        if ((st = load_tensor(L, key, t, &b->tensors[i]))) {
            return st;
        }
        if (json_object_set_new(L->tensor_index, key, json_integer((json_int_t)i++))) {
            return json_nomem(L);
        }
        remat_i_jpath_pop(&L->path);
    }
    remat_i_jpath_pop(&L->path);
    if ((st = load_name_list(L, json_object_get(obj, "inputs"), "inputs", &b->inputs,
                             &b->ninputs, SIZE_MAX)) ||
        (st = load_name_list(L, json_object_get(obj, "outputs"), "outputs", &b->outputs,
                             &b->noutputs, SIZE_MAX))) {
        return st;
    }
    for (size_t k = 0; k < b->ninputs; k++) {
        b->tensors[b->inputs[k]].input = true;
    }
    b->ops = remat_i_try_calloc(json_array_size(ops), sizeof *b->ops, L->err);
    if (!b->ops) {
        return REMAT_E_NOMEM;
    }
    b->nops = json_array_size(ops);
    remat_i_jpath_key(&L->path, "ops");
    for (size_t k = 0; k < b->nops; k++) {
        remat_i_jpath_index(&L->path, k);
        if ((st = load_op(L, json_array_get(ops, k), &b->ops[k]))) {
            return st;
        }
        if (json_object_get(L->op_names, b->ops[k].name)) {
            remat_i_jpath_key(&L->path, "name");
            return fail(L, REMAT_E_GRAPH, "duplicate op name '%s'", b->ops[k].name);
        }
        if (json_object_set_new(L->op_names, b->ops[k].name, json_true())) {
            return json_nomem(L);
        }
        remat_i_jpath_pop(&L->path);
    }
    remat_i_jpath_pop(&L->path);
    return REMAT_OK;
}

static remat_status_t load_block(loader_t *L, json_t *obj, remat_block_t *b, bool head) {
    L->tensor_index = json_object();
    L->op_names = json_object();
    remat_status_t st = L->tensor_index && L->op_names
                             ? load_block_body(L, obj, b, head)
                             : json_nomem(L);
    json_decref(L->tensor_index);
    json_decref(L->op_names);
    L->tensor_index = L->op_names = NULL;
    return st;
}

/* A stack rule's optional value @p key of entry @p e: an integer config
   key (the rule binds to its value) into *out, or, where @p n is given, a
   positive integer constant into *n. */
static remat_status_t load_rule_key(loader_t *L, json_t *e, const char *key, char **out,
                                    uint64_t *n) {
    json_t *jv = json_object_get(e, key);
    if (n && json_is_number(jv)) {
        if (!json_is_integer(jv) || json_integer_value(jv) <= 0) {
            remat_i_jpath_key(&L->path, key);
            return fail(L, REMAT_E_SCHEMA, "'%s' must be a positive integer or a config key",
                        key);
        }
        *n = (uint64_t)json_integer_value(jv);
        return REMAT_OK;
    }
    const char *v;
    remat_status_t st = get_string(L, e, key, false, &v);
    if (st || !v) {
        return st;
    }
    if (!remat_config_is_size_key(v)) {
        remat_i_jpath_key(&L->path, key);
        return fail(L, REMAT_E_SCHEMA, "'%s' is not an integer config key", v);
    }
    return dup(L, v, out);
}

/* A stack entry's optional boolean @p key into *@p out (false when absent). */
static remat_status_t load_kind_flag(loader_t *L, json_t *e, const char *key, bool *out) {
    json_t *v = json_object_get(e, key);
    if (v && !json_is_boolean(v)) {
        remat_i_jpath_key(&L->path, key);
        return fail(L, REMAT_E_SCHEMA, "'%s' must be true or false", key);
    }
    *out = json_is_true(v);
    return REMAT_OK;
}

/* Stack entry @p e: a kind named `name` running block `block` of @p blocks
   under its rule. */
static remat_status_t load_kind(loader_t *L, json_t *blocks, json_t *e, remat_kind_t *k) {
    static const char *const allowed[] = {"name",           "block",         "first",
                                          "every",          "window",        "keeps_offloads",
                                          "own_residuals",  "gathers_ahead", NULL};
    const char *name, *block;
    remat_status_t st;
    if (!json_is_object(e)) {
        return fail(L, REMAT_E_SCHEMA, "a stack entry must be an object");
    }
    if ((st = check_keys(L, e, allowed)) || (st = get_string(L, e, "name", true, &name)) ||
        (st = get_string(L, e, "block", true, &block))) {
        return st;
    }
    if (!valid_name(name)) {
        remat_i_jpath_key(&L->path, "name");
        return fail(L, REMAT_E_SCHEMA, "invalid kind name '%s' " NAME_RULE, name);
    }
    json_t *obj = json_object_get(blocks, block);
    if (!obj) {
        remat_i_jpath_key(&L->path, "block");
        return fail(L, REMAT_E_SCHEMA, "no block '%s' in 'blocks'", block);
    }
    if ((st = dup(L, name, &k->name)) || (st = dup(L, block, &k->block_name)) ||
        (st = load_rule_key(L, e, "first", &k->first, &k->first_n)) ||
        (st = load_rule_key(L, e, "every", &k->every, &k->every_n)) ||
        (st = load_rule_key(L, e, "window", &k->window, NULL))) {
        return st;
    }
    if ((st = load_kind_flag(L, e, "keeps_offloads", &k->keeps_offloads)) ||
        (st = load_kind_flag(L, e, "own_residuals", &k->own_residuals)) ||
        (st = load_kind_flag(L, e, "gathers_ahead", &k->gathers_ahead))) {
        return st;
    }
    remat_jpath_t at = L->path;
    remat_i_jpath_init(&L->path);
    remat_i_jpath_key(&L->path, "blocks");
    remat_i_jpath_key(&L->path, block);
    st = load_block(L, obj, &k->block, false);
    L->path = at;
    return st;
}

/* Every block of @p blocks is run by a kind: a block no kind names is
   most likely a misspelt stack entry, not something to skip in silence. */
static remat_status_t check_blocks_used(loader_t *L, json_t *blocks) {
    const char *name;
    json_t *v;
    json_object_foreach(blocks, name, v) {
        bool used = false;
        for (size_t i = 0; i < L->g->nkinds && !used; i++) {
            used = strcmp(L->g->kinds[i].block_name, name) == 0;
        }
        if (!used) {
            remat_i_jpath_init(&L->path);
            remat_i_jpath_key(&L->path, "blocks");
            remat_i_jpath_key(&L->path, name);
            return fail(L, REMAT_E_SCHEMA, "block '%s' is run by no kind of the 'stack'", name);
        }
    }
    return REMAT_OK;
}

/* The stack's kinds, in order: unique names, and a last kind that takes
   every layer left (no rule). */
static remat_status_t load_stack(loader_t *L, json_t *blocks, json_t *stack) {
    remat_graph_t *g = L->g;
    if (!json_is_object(blocks) || json_object_size(blocks) == 0) {
        remat_i_jpath_key(&L->path, "blocks");
        return fail(L, REMAT_E_SCHEMA, "'blocks' must be a non-empty object of layer blocks");
    }
    if (!json_is_array(stack) || json_array_size(stack) == 0 ||
        json_array_size(stack) > REMAT_MAX_KINDS) {
        remat_i_jpath_key(&L->path, "stack");
        return fail(L, REMAT_E_SCHEMA, "'stack' must be an array of 1 to %d layer kinds",
                    REMAT_MAX_KINDS);
    }
    g->kinds = remat_i_try_calloc(json_array_size(stack), sizeof *g->kinds, L->err);
    if (!g->kinds) {
        return REMAT_E_NOMEM;
    }
    g->nkinds = json_array_size(stack);
    remat_i_jpath_key(&L->path, "stack");
    for (size_t i = 0; i < g->nkinds; i++) {
        remat_i_jpath_index(&L->path, i);
        remat_kind_t *k = &g->kinds[i];
        remat_status_t st = load_kind(L, blocks, json_array_get(stack, i), k);
        if (st) {
            return st;
        }
        for (size_t j = 0; j < i; j++) {
            if (strcmp(g->kinds[j].name, k->name) == 0) {
                return fail(L, REMAT_E_SCHEMA, "duplicate kind name '%s'", k->name);
            }
        }
        if (i + 1 == g->nkinds && (k->first || k->every || k->first_n || k->every_n)) {
            return fail(L, REMAT_E_SCHEMA,
                        "the last kind takes every layer left: it has no 'first' or 'every'");
        }
        remat_i_jpath_pop(&L->path);
    }
    remat_i_jpath_pop(&L->path);
    return check_blocks_used(L, blocks);
}

/* The layer stack: one block (`layer`, a uniform stack) or `blocks` and the
   `stack` of kinds that run them. */
static remat_status_t load_layers(loader_t *L, json_t *root) {
    remat_graph_t *g = L->g;
    json_t *layer = json_object_get(root, "layer"), *blocks = json_object_get(root, "blocks"),
           *stack = json_object_get(root, "stack");
    if ((layer != NULL) == (blocks != NULL || stack != NULL) || (!blocks != !stack)) {
        return fail(L, REMAT_E_SCHEMA,
                    "a graph has either 'layer' or both 'blocks' and 'stack'");
    }
    if (blocks) {
        return load_stack(L, blocks, stack);
    }
    g->kinds = remat_i_try_calloc(1, sizeof *g->kinds, L->err);
    if (!g->kinds) {
        return REMAT_E_NOMEM;
    }
    g->nkinds = 1;
    remat_status_t st = dup(L, "layer", &g->kinds[0].name);
    if (st) {
        return st;
    }
    remat_i_jpath_key(&L->path, "layer");
    if ((st = load_block(L, layer, &g->kinds[0].block, false))) {
        return st;
    }
    remat_i_jpath_pop(&L->path);
    return REMAT_OK;
}

/* The head block @p head and the two tensors it shares with the layers. */
static remat_status_t load_head(loader_t *L, json_t *head) {
    remat_graph_t *g = L->g;
    remat_status_t st;
    remat_i_jpath_key(&L->path, "head");
    g->has_head = true;
    if ((st = load_block(L, head, &g->head, true))) {
        return st;
    }
    const char *feeds, *takes;
    if ((st = get_string(L, head, "feeds_layer", true, &feeds)) ||
        (st = get_string(L, head, "takes_layer", true, &takes))) {
        return st;
    }
    g->head_feeds = remat_block_find_tensor(&g->head, feeds);
    g->head_takes = remat_block_find_tensor(&g->head, takes);
    if (g->head_feeds == REMAT_NONE || g->head_takes == REMAT_NONE) {
        remat_i_jpath_key(&L->path, g->head_feeds == REMAT_NONE ? "feeds_layer" : "takes_layer");
        return fail(L, REMAT_E_SCHEMA, "unknown tensor '%s'",
                    g->head_feeds == REMAT_NONE ? feeds : takes);
    }
    remat_i_jpath_pop(&L->path);
    return REMAT_OK;
}

static remat_status_t load_root(loader_t *L, json_t *root) {
    static const char *const allowed[] = {"format", "name",  "description", "dims",
                                          "layer",  "blocks", "stack",     "head",
                                          "expert_parallel", NULL};
    remat_graph_t *g = L->g;
    remat_status_t st;
    if (!json_is_object(root)) {
        return fail(L, REMAT_E_SCHEMA, "a graph must be a JSON object");
    }
    if ((st = check_keys(L, root, allowed))) {
        return st;
    }
    const char *format, *name, *desc;
    if ((st = get_string(L, root, "format", true, &format))) {
        return st;
    }
    if (strcmp(format, "remat-graph/1") != 0) {
        remat_i_jpath_key(&L->path, "format");
        return fail(L, REMAT_E_SCHEMA, "unsupported format '%s' (expected 'remat-graph/1')", format);
    }
    if ((st = get_string(L, root, "name", true, &name)) ||
        (st = get_string(L, root, "description", false, &desc))) {
        return st;
    }
    if (!*name) {
        remat_i_jpath_key(&L->path, "name");
        return fail(L, REMAT_E_SCHEMA, "must not be empty");
    }
    if (!remat_i_printable(name) || (desc && !remat_i_printable(desc))) {
        remat_i_jpath_key(&L->path, remat_i_printable(name) ? "description" : "name");
        return fail(L, REMAT_E_SCHEMA, "must not hold control characters (newlines, tabs)");
    }
    if ((st = dup(L, name, &g->name)) || (st = dup(L, desc ? desc : "", &g->description))) {
        return st;
    }
    json_t *dims = json_object_get(root, "dims");
    if (!dims) {
        return fail(L, REMAT_E_SCHEMA, "missing required key 'dims'");
    }
    remat_i_jpath_key(&L->path, "dims");
    if ((st = load_dims(L, dims))) {
        return st;
    }
    remat_i_jpath_pop(&L->path);
    if ((st = load_layers(L, root))) {
        return st;
    }
    json_t *ep = json_object_get(root, "expert_parallel");
    if (ep && !json_is_boolean(ep)) {
        remat_i_jpath_key(&L->path, "expert_parallel");
        return fail(L, REMAT_E_SCHEMA, "'expert_parallel' must be true or false");
    }
    g->expert_parallel = json_is_true(ep);
    json_t *head = json_object_get(root, "head");
    if (head && (st = load_head(L, head))) {
        return st;
    }
    remat_graph_index_t *index = NULL;
    if ((st = remat_i_graph_analyze(g, L->source, L->err)) == REMAT_OK &&
        (st = remat_i_graph_index(g, remat_i_config_size_field, &index, L->err)) == REMAT_OK) {
        g->index = index;
    }
    return st;
}

remat_status_t remat_graph_load_string(const char *text, const char *source, remat_graph_t **out,
                                       remat_error_t *err) {
    *out = NULL;
    json_t *root;
    remat_status_t st = remat_i_json_parse(text, source, &root, err);
    if (st) {
        return st;
    }
    loader_t L = {.source = source, .err = err};
    remat_i_jpath_init(&L.path);
    L.g = remat_i_try_calloc(1, sizeof *L.g, err);
    if (L.g && (L.g->source = remat_i_try_strdup(source, err))) {
        st = load_root(&L, root);
    } else {
        st = REMAT_E_NOMEM;
    }
    json_decref(root);
    if (st != REMAT_OK) {
        /* The allocators leave the source empty: name the file. */
        remat_error_set_source(err, source);
        remat_graph_free(L.g);
        return st;
    }
    *out = L.g;
    return REMAT_OK;
}

remat_status_t remat_graph_load_file(const char *path, remat_graph_t **out, remat_error_t *err) {
    char *text = NULL;
    remat_status_t st = remat_i_read_file(path, &text, err);
    if (st != REMAT_OK) {
        *out = NULL;
        return st;
    }
    st = remat_graph_load_string(text, path, out, err);
    free(text);
    return st;
}
