/* SPDX-License-Identifier: MIT */
/*
 * policy.c: policy files (format "remat-policy/1"), built-in presets, and the
 * per-layer plan. The plan reproduces JAX's residual rule: start from the
 * tensors some op's backward reads; keep those the policy makes saveable;
 * rebuild the others by re-running their producers, whose inputs are then
 * needed in turn. The reachability is a walk over the layer's arrays (each
 * tensor and op visited at most once) with the producer edges of saveable
 * tensors cut (a kept tensor ends the walk); igraph validated the graph and
 * ordered it at load, so the per-plan walk needs no graph library.
 *
 * Loading allocates fallibly (util.h): a failure is REMAT_E_NOMEM and the
 * partial policy is freed, so nranges is set only once ranges exists. The
 * plan, an analysis step, keeps the aborting allocators.
 */
#include "remat/model/policy.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/json_util.h"
#include "model/policy_internal.h"

#include "remat/data/builtin.h"
#include "base/util.h"

static const char *const place_names[] = {"remat", "device", "offload"};

bool remat_place_parse(const char *s, remat_place_t *out) {
    for (int i = 0; i < 3; i++) {
        if (strcmp(s, place_names[i]) == 0) {
            *out = (remat_place_t)i;
            return true;
        }
    }
    return false;
}

const char *remat_place_name(remat_place_t p) {
    return (unsigned)p < 3 ? place_names[p] : "?";
}

const char *remat_fate_name(remat_fate_t f) {
    static const char *const names[] = {"param", "transient", "device", "offload", "recompute"};
    return (unsigned)f < 5 ? names[f] : "?";
}

void remat_policy_free(remat_policy_t *p) {
    if (!p) {
        return;
    }
    for (size_t i = 0; p->ranges && i < p->nranges; i++) {
        free(p->ranges[i].rules);
    }
    free(p->ranges);
    free(p->rules);
    free(p->name);
    free(p->description);
    free(p->source);
    free(p);
}

/* Sets @p name's placement in the rule list, adding a rule if it has none;
   REMAT_E_NOMEM (the list unchanged) when it cannot grow. */
static remat_status_t rules_set(remat_policy_rule_t **rules, size_t *n, const char *name,
                                remat_place_t place, remat_error_t *err) {
    for (size_t i = 0; i < *n; i++) {
        if (strcmp((*rules)[i].name, name) == 0) {
            (*rules)[i].place = place;
            return REMAT_OK;
        }
    }
    remat_policy_rule_t *grown = remat_i_try_realloc_array(*rules, *n + 1, sizeof **rules, err);
    if (!grown) {
        return REMAT_E_NOMEM;
    }
    *rules = grown;
    snprintf((*rules)[*n].name, REMAT_NAME_LEN, "%s", name);
    (*rules)[*n].place = place;
    (*n)++;
    return REMAT_OK;
}

/* Public and void: its callers build policies for an analysis (custom,
   solve), which aborts on allocation failure like the rest of it (util.h). */
void remat_policy_set(remat_policy_t *p, const char *name, remat_place_t place) {
    if (rules_set(&p->rules, &p->nrules, name, place, NULL)) {
        remat_i_oom((p->nrules + 1) * sizeof *p->rules);
    }
}

typedef struct ploader {
    const char *source;
    remat_jpath_t path;
    remat_error_t *err;
} ploader_t;

static remat_status_t pfail(ploader_t *L, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static remat_status_t pfail(ploader_t *L, const char *fmt, ...) {
    char text[REMAT_ERR_TEXT_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    return remat_error_set(L->err, REMAT_E_SCHEMA, L->source, L->path.buf, "%s", text);
}

static remat_status_t load_names(ploader_t *L, json_t *names, remat_policy_rule_t **rules,
                                 size_t *n) {
    if (!json_is_object(names)) {
        return pfail(L, "'names' must be an object of name: placement");
    }
    const char *key;
    json_t *v;
    json_object_foreach(names, key, v) {
        remat_i_jpath_key(&L->path, key);
        remat_place_t place;
        if (strlen(key) >= REMAT_NAME_LEN) {
            return pfail(L, "checkpoint name '%s' is too long", key);
        }
        if (!json_is_string(v) || !remat_place_parse(json_string_value(v), &place)) {
            return pfail(L, "placement of '%s' must be \"remat\", \"device\" or \"offload\"", key);
        }
        if (rules_set(rules, n, key, place, L->err)) {
            return REMAT_E_NOMEM;
        }
        remat_i_jpath_pop(&L->path);
    }
    return REMAT_OK;
}

static bool parse_range(const char *s, size_t *first, size_t *last) {
    char *end;
    if (*s < '0' || *s > '9') {
        return false;
    }
    unsigned long a = strtoul(s, &end, 10), b = a;
    if (*end == '-') {
        const char *t = end + 1;
        if (*t < '0' || *t > '9') {
            return false;
        }
        b = strtoul(t, &end, 10);
    }
    if (*end || b < a || b > 1000000) {
        return false;
    }
    *first = a;
    *last = b;
    return true;
}

static remat_status_t check_policy_keys(ploader_t *L, json_t *root) {
    static const char *const keys[] = {"format", "name",      "description",         "names",
                                       "default", "predicate", "predicate_placement", "none",
                                       "layers",  NULL};
    if (!json_is_object(root)) {
        return pfail(L, "a policy must be a JSON object");
    }
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        bool ok = false;
        for (size_t i = 0; keys[i]; i++) {
            ok |= strcmp(key, keys[i]) == 0;
        }
        if (!ok) {
            remat_i_jpath_key(&L->path, key);
            return pfail(L, "unknown key '%s'", key);
        }
    }
    return REMAT_OK;
}

/* "format", "name" and "description": what the file is and what it calls itself. */
static remat_status_t load_header(ploader_t *L, json_t *root, remat_policy_t *p) {
    json_t *format = json_object_get(root, "format");
    if (!json_is_string(format) || strcmp(json_string_value(format), "remat-policy/1") != 0) {
        remat_i_jpath_key(&L->path, "format");
        return pfail(L, "'format' must be \"remat-policy/1\"");
    }
    json_t *name = json_object_get(root, "name");
    if (!json_is_string(name) || !remat_i_printable(json_string_value(name))) {
        remat_i_jpath_key(&L->path, "name");
        return pfail(L, "'name' must be a string without control characters");
    }
    if (!(p->name = remat_i_try_strdup(json_string_value(name), L->err))) {
        return REMAT_E_NOMEM;
    }
    json_t *desc = json_object_get(root, "description");
    if (json_is_string(desc) && !remat_i_printable(json_string_value(desc))) {
        remat_i_jpath_key(&L->path, "description");
        return pfail(L, "'description' must not hold control characters");
    }
    p->description =
        remat_i_try_strdup(json_is_string(desc) ? json_string_value(desc) : "", L->err);
    return p->description ? REMAT_OK : REMAT_E_NOMEM;
}

/* "predicate" and the "predicate_placement" that only it allows. */
static remat_status_t load_predicate(ploader_t *L, json_t *root, remat_policy_t *p) {
    json_t *pred = json_object_get(root, "predicate");
    if (pred) {
        remat_i_jpath_key(&L->path, "predicate");
        if (!json_is_string(pred) ||
            strcmp(json_string_value(pred), "dots_with_no_batch_dims") != 0) {
            return pfail(L, "'predicate' must be \"dots_with_no_batch_dims\"");
        }
        p->predicate = REMAT_PRED_DOTS_NO_BATCH;
        p->predicate_place = REMAT_PLACE_DEVICE;
        remat_i_jpath_pop(&L->path);
        json_t *pp = json_object_get(root, "predicate_placement");
        if (pp && (!json_is_string(pp) ||
                   !remat_place_parse(json_string_value(pp), &p->predicate_place) ||
                   p->predicate_place == REMAT_PLACE_REMAT)) {
            remat_i_jpath_key(&L->path, "predicate_placement");
            return pfail(L, "'predicate_placement' must be \"device\" or \"offload\"");
        }
    }
    if (!pred && json_object_get(root, "predicate_placement")) {
        remat_i_jpath_key(&L->path, "predicate_placement");
        return pfail(L, "'predicate_placement' needs a 'predicate'");
    }
    return REMAT_OK;
}

/* "layers": per-range name rules, each entry {"range": "A-B", "names": {...}}. */
static remat_status_t load_layers(ploader_t *L, json_t *layers, remat_policy_t *p) {
    remat_i_jpath_key(&L->path, "layers");
    if (!json_is_array(layers)) {
        return pfail(L, "'layers' must be an array of {\"range\": \"A-B\", \"names\": {...}}");
    }
    p->ranges = remat_i_try_calloc(json_array_size(layers), sizeof *p->ranges, L->err);
    if (!p->ranges) {
        return REMAT_E_NOMEM;
    }
    p->nranges = json_array_size(layers);
    for (size_t i = 0; i < p->nranges; i++) {
        json_t *r = json_array_get(layers, i);
        remat_i_jpath_index(&L->path, i);
        json_t *range = json_object_get(r, "range");
        if (!json_is_object(r) || !json_is_string(range) ||
            !parse_range(json_string_value(range), &p->ranges[i].first, &p->ranges[i].last)) {
            return pfail(L, "each entry needs \"range\": \"FIRST-LAST\" (layer indices, "
                            "FIRST <= LAST)");
        }
        json_t *rn = json_object_get(r, "names");
        if (!rn || json_object_size(r) != 2) {
            return pfail(L, "each entry holds exactly \"range\" and \"names\"");
        }
        remat_i_jpath_key(&L->path, "names");
        remat_status_t st = load_names(L, rn, &p->ranges[i].rules, &p->ranges[i].nrules);
        if (st) {
            return st;
        }
        remat_i_jpath_pop(&L->path);
        remat_i_jpath_pop(&L->path);
    }
    remat_i_jpath_pop(&L->path);
    return REMAT_OK;
}

static remat_status_t load_policy(ploader_t *L, json_t *root, remat_policy_t *p) {
    remat_status_t st = check_policy_keys(L, root);
    if (st == REMAT_OK) {
        st = load_header(L, root, p);
    }
    if (st) {
        return st;
    }
    json_t *names = json_object_get(root, "names");
    if (names) {
        remat_i_jpath_key(&L->path, "names");
        st = load_names(L, names, &p->rules, &p->nrules);
        if (st) {
            return st;
        }
        remat_i_jpath_pop(&L->path);
    }
    json_t *fallback = json_object_get(root, "default");
    if (fallback && (!json_is_string(fallback) ||
                     !remat_place_parse(json_string_value(fallback), &p->fallback))) {
        remat_i_jpath_key(&L->path, "default");
        return pfail(L, "'default' must be \"remat\", \"device\" or \"offload\"");
    }
    st = load_predicate(L, root, p);
    if (st) {
        return st;
    }
    json_t *none = json_object_get(root, "none");
    if (none) {
        if (!json_is_boolean(none)) {
            remat_i_jpath_key(&L->path, "none");
            return pfail(L, "'none' must be true or false");
        }
        p->none_policy = json_is_true(none);
    }
    json_t *layers = json_object_get(root, "layers");
    return layers ? load_layers(L, layers, p) : REMAT_OK;
}

remat_status_t remat_policy_load_string(const char *text, const char *source, bool preset,
                                        remat_policy_t **out, remat_error_t *err) {
    *out = NULL;
    json_t *root;
    remat_status_t st = remat_i_json_parse(text, source, &root, err);
    if (st) {
        return st;
    }
    ploader_t L = {.source = source, .err = err};
    remat_i_jpath_init(&L.path);
    remat_policy_t *p = remat_i_try_calloc(1, sizeof *p, err);
    if (p && (p->source = remat_i_try_strdup(source, err))) {
        p->preset = preset;
        st = load_policy(&L, root, p);
    } else {
        st = REMAT_E_NOMEM;
    }
    json_decref(root);
    if (st) {
        /* The allocators leave the source empty: name the file. */
        remat_error_set_source(err, source);
        remat_policy_free(p);
        return st;
    }
    *out = p;
    return REMAT_OK;
}

remat_status_t remat_policy_builtin(const char *name, remat_policy_t **out, remat_error_t *err) {
    const char *text = remat_builtin_find(REMAT_BUILTIN_POLICY, name);
    *out = NULL;
    if (!text) {
        char list[1024];
        remat_builtin_list(REMAT_BUILTIN_POLICY, list, sizeof list);
        return remat_error_set(err, REMAT_E_POLICY, NULL, NULL,
                               "unknown remat_policy '%s' (presets: %s; or a policy file)", name,
                               list);
    }
    char source[REMAT_ERR_SOURCE_LEN + 300];
    snprintf(source, sizeof source, "built-in policy '%s'", name);
    return remat_policy_load_string(text, source, true, out, err);
}

/* Whether @p word is one of the ", "-separated words of @p list. */
static bool strstr_word(const char *list, const char *word) {
    const size_t n = strlen(word);
    for (const char *p = list; (p = strstr(p, word)) != NULL; p += n) {
        if ((p == list || p[-1] == ' ') && (p[n] == ',' || p[n] == '\0')) {
            return true;
        }
    }
    return false;
}

static remat_status_t unknown_name(const remat_policy_t *p, const remat_graph_t *g,
                                   const char *name, size_t range, remat_error_t *err) {
    char list[768];
    size_t len = 0;
    list[0] = '\0';
    /* The graph's checkpoint names, each once, in kind and tensor order. */
    for (size_t k = 0; k < g->nkinds; k++) {
        const remat_block_t *b = &g->kinds[k].block;
        for (size_t i = 0; i < b->ntensors; i++) {
            const remat_tensor_t *t = &b->tensors[i];
            for (size_t j = 0; j < t->ntags; j++) {
                if (!strstr_word(list, t->tags[j]) && len + strlen(t->tags[j]) + 3 < sizeof list) {
                    len += (size_t)snprintf(list + len, sizeof list - len, "%s%s",
                                            len ? ", " : "", t->tags[j]);
                }
            }
        }
    }
    if (!remat_graph_has_tag(g, "decoder_layer_input") && len + 24 < sizeof list) {
        snprintf(list + len, sizeof list - len, "%sdecoder_layer_input", len ? ", " : "");
    }
    char path[REMAT_NAME_LEN + 48];
    if (range == REMAT_NONE) {
        snprintf(path, sizeof path, "$.names.%s", name);
    } else {
        snprintf(path, sizeof path, "$.layers[%zu].names.%s", range, name);
    }
    return remat_error_set(err, REMAT_E_POLICY, p->source,
                           strcmp(p->name, "custom") == 0 ? NULL : path,
                           "graph '%s' has no checkpoint named '%s' (its names: %s)", g->name,
                           name, list);
}

/* MaxText's custom-policy keys (configs/types.py at e591f30). */
static const char *const maxtext_names[] = {
    "decoder_layer_input", "context",       "mlpwi",      "mlpwi_0",     "mlpwi_1",
    "mlpwo",               "moe_mlpwi_0",   "moe_mlpwi_1", "moe_mlpwo",  "query_proj",
    "key_proj",            "value_proj",    "kv_proj",    "qkv_proj",    "attention_out",
    "out_proj",            "query_wa_proj", "kv_wa_proj", "mla_q",       "mla_kv",
    "indexer_cutoff_threshold"};

const char *remat_policy_maxtext_name(size_t i) {
    return i < sizeof maxtext_names / sizeof maxtext_names[0] ? maxtext_names[i] : NULL;
}

bool remat_policy_is_maxtext_name(const char *name) {
    for (size_t i = 0; i < sizeof maxtext_names / sizeof maxtext_names[0]; i++) {
        if (strcmp(name, maxtext_names[i]) == 0) {
            return true;
        }
    }
    return false;
}

bool remat_policy_graph_knows(const remat_graph_t *g, const char *name) {
    return strcmp(name, "decoder_layer_input") == 0 || remat_graph_has_tag(g, name);
}

/* A name the graph does not tag is an error unless MaxText has it: MaxText
   ignores a name its model does not tag (the Ironwood recipes set qkv_proj
   on Llama), and reports note it. */
static bool known_name(const remat_graph_t *g, const char *name) {
    return remat_policy_graph_knows(g, name) || remat_policy_is_maxtext_name(name);
}

remat_status_t remat_policy_check(const remat_policy_t *p, const remat_graph_t *g,
                                  remat_error_t *err) {
    if (p->preset) {
        return REMAT_OK;
    }
    for (size_t i = 0; i < p->nrules; i++) {
        if (!known_name(g, p->rules[i].name)) {
            return unknown_name(p, g, p->rules[i].name, REMAT_NONE, err);
        }
    }
    for (size_t r = 0; r < p->nranges; r++) {
        for (size_t i = 0; i < p->ranges[r].nrules; i++) {
            if (!known_name(g, p->ranges[r].rules[i].name)) {
                return unknown_name(p, g, p->ranges[r].rules[i].name, r, err);
            }
        }
    }
    return REMAT_OK;
}

/* The names of a rule and a tensor tag: equal strings (the first bytes
   compared inline: most pairs differ there, and this runs per tag). */
static bool same_name(const char *a, const char *b) {
    return a[0] == b[0] && strcmp(a, b) == 0;
}

static inline bool rules_find(const remat_policy_rule_t *rules, size_t n, const char *name,
                              remat_place_t *out) {
    for (size_t i = 0; i < n; i++) {
        if (same_name(rules[i].name, name)) {
            *out = rules[i].place;
            return true;
        }
    }
    return false;
}

/* Placement of one checkpoint name at @p layer: the last range covering the
   layer wins, then the policy's own names, then `remat` (MaxText's default).
   Inline: planning looks up every tag of a layer. */
static inline bool lookup(const remat_policy_t *p, const char *name, size_t layer,
                          remat_place_t *out) {
    for (size_t r = p->nranges; r-- > 0;) {
        const remat_policy_range_t *R = &p->ranges[r];
        if (layer >= R->first && layer <= R->last && rules_find(R->rules, R->nrules, name, out)) {
            return true;
        }
    }
    return rules_find(p->rules, p->nrules, name, out);
}

bool remat_policy_lookup(const remat_policy_t *p, const char *name, size_t layer,
                         remat_place_t *out) {
    return lookup(p, name, layer, out);
}

/* Stronger placement wins when a tensor carries two names: HBM over host
   over recompute (JAX saves a value if any of its names is saveable). */
static remat_place_t stronger(remat_place_t a, remat_place_t b) {
    static const int rank[] = {0, 2, 1};
    return rank[b] > rank[a] ? b : a;
}

void remat_plan_init(remat_plan_t *plan) {
    memset(plan, 0, sizeof *plan);
}

/* A plan's arrays live in one allocation that starts with the stack (the
   widest element): plan_alloc carves it, release frees it whole. A copy
   made in its caller's memory (remat_i_plan_copy_in) has no stack and
   frees nothing. */
void remat_plan_release(remat_plan_t *plan) {
    free(plan->stack);
    remat_plan_init(plan);
}

bool remat_plan_equal(const remat_plan_t *a, const remat_plan_t *b) {
    return a->ntensors == b->ntensors &&
           memcmp(a->fate, b->fate, a->ntensors * sizeof *a->fate) == 0 &&
           memcmp(a->asked, b->asked, a->ntensors * sizeof *a->asked) == 0;
}

/* The bytes of a plan's arrays, the stack included or not; the counts
   are a graph's (no overflow). */
static size_t plan_bytes(size_t nt, size_t no, bool stack) {
    _Static_assert(sizeof(remat_place_t) == sizeof(remat_fate_t), "enum arrays align alike");
    return (stack ? (nt + no) * sizeof(size_t) : 0) + 2 * nt * sizeof(remat_place_t) +
           (nt + (nt + no) + no) * sizeof(bool);
}

/* The arrays carved from @p slab (plan_bytes of them), the stack first
   when there is one: stack, asked and fate have the widest elements, so
   every array starts aligned. */
static void plan_carve(remat_plan_t *plan, char *slab, size_t nt, size_t no, bool stack) {
    plan->ntensors = nt;
    plan->nops = no;
    plan->stack = stack ? (size_t *)(void *)slab : NULL;
    plan->asked = (remat_place_t *)(void *)(slab + (stack ? (nt + no) * sizeof(size_t) : 0));
    plan->fate = (remat_fate_t *)(void *)(plan->asked + nt);
    plan->unused = (bool *)(void *)(plan->fate + nt);
    plan->needed = plan->unused + nt;
    plan->recompute_op = plan->needed + nt + no;
}

static void plan_alloc(remat_plan_t *plan, size_t nt, size_t no) {
    if (plan->ntensors == nt && plan->nops == no && plan->asked) {
        return;
    }
    remat_plan_release(plan);
    /* Not zeroed: planning and copying write every array but the stack. */
    plan_carve(plan, remat_i_xmalloc(plan_bytes(nt, no, true)), nt, no, true);
}

/* Every array but the stack, which only planning reads. */
static void plan_fill(remat_plan_t *dst, const remat_plan_t *src) {
    const size_t nt = src->ntensors, no = src->nops;
    memcpy(dst->asked, src->asked, nt * sizeof *dst->asked);
    memcpy(dst->fate, src->fate, nt * sizeof *dst->fate);
    memcpy(dst->unused, src->unused, nt * sizeof *dst->unused);
    memcpy(dst->needed, src->needed, (nt + no) * sizeof *dst->needed);
    memcpy(dst->recompute_op, src->recompute_op, no * sizeof *dst->recompute_op);
}

void remat_plan_copy(remat_plan_t *dst, const remat_plan_t *src) {
    plan_alloc(dst, src->ntensors, src->nops);
    plan_fill(dst, src);
}

size_t remat_i_plan_bytes(size_t nt, size_t no) {
    return plan_bytes(nt, no, true);
}

void remat_i_plan_in(remat_plan_t *plan, void *mem, size_t nt, size_t no) {
    plan_carve(plan, mem, nt, no, true);
}

size_t remat_i_plan_copy_bytes(const remat_plan_t *src) {
    return plan_bytes(src->ntensors, src->nops, false);
}

void remat_i_plan_copy_in(remat_plan_t *dst, const remat_plan_t *src, void *mem) {
    plan_carve(dst, mem, src->ntensors, src->nops, false);
    plan_fill(dst, src);
}

/* Whether JAX's predicate, not a name, places tensor @p i of @p b under
   @p p (asked_place's second rule). */
static bool by_predicate(const remat_block_t *b, const remat_policy_t *p, size_t i) {
    const remat_tensor_t *t = &b->tensors[i];
    return i != b->inputs[0] && p->predicate != REMAT_PRED_NONE && t->producer != REMAT_NONE &&
           remat_op_einsum_no_batch_dims(&b->ops[t->producer]);
}

/* The placement the policy asks for non-param tensor @p i of the layer, and
   whether a name or a predicate chose it (rather than a default). */
static remat_place_t asked_place(const remat_block_t *b, const remat_policy_t *p, size_t layer,
                                 size_t i, bool *chosen) {
    const remat_tensor_t *t = &b->tensors[i];
    remat_place_t named;
    *chosen = false;
    if (i == b->inputs[0]) {
        /* The scan carry is saved under every policy; only custom's
           decoder_layer_input=offload moves it to host, and only where the
           layer tags its input so (MaxText's policy matches the checkpoint
           name: qwen3_next's layer does not tag it, and JAX keeps it on the
           device). */
        return remat_tensor_has_tag(t, "decoder_layer_input") &&
                       lookup(p, "decoder_layer_input", layer, &named) &&
                       named == REMAT_PLACE_OFFLOAD
                   ? REMAT_PLACE_OFFLOAD
                   : REMAT_PLACE_DEVICE;
    }
    if (by_predicate(b, p, i)) {
        *chosen = true;
        return p->predicate_place;
    }
    /* Names the policy places decide; a tensor none of whose names is
       placed takes the default (remat, as in MaxText). */
    remat_place_t best = p->fallback;
    for (size_t j = 0; j < t->ntags; j++) {
        if (lookup(p, t->tags[j], layer, &named)) {
            best = *chosen ? stronger(best, named) : named;
            *chosen = true;
        }
    }
    return best;
}

/* The placement of tensor @p i in a kind that saves its own residuals
   (own_residuals): its `kept` one, no policy's; the layer input, the
   carry, is kept on the device when it says nothing (*@p chosen stays
   false: no name asked for it). */
remat_place_t remat_kept_place(unsigned char kept) {
    return kept == REMAT_KEPT_OFFLOAD  ? REMAT_PLACE_OFFLOAD
           : kept == REMAT_KEPT_DEVICE ? REMAT_PLACE_DEVICE
                                       : REMAT_PLACE_REMAT;
}

static remat_place_t own_place(const remat_block_t *b, size_t i, bool *chosen) {
    const unsigned char kept = b->tensors[i].kept;
    *chosen = false;
    if (i == b->inputs[0] && kept == REMAT_KEPT_NONE) {
        return REMAT_PLACE_DEVICE;
    }
    return remat_kept_place(kept);
}

/* Marks tensor @p t needed: its fate follows from its placement, and a
   needed tensor's placement is never unused (*@p nunused counts those
   left). */
static inline void mark_needed(remat_plan_t *plan, size_t t, size_t *nunused) {
    static const remat_fate_t fate_of[] = {REMAT_FATE_RECOMPUTE, REMAT_FATE_DEVICE,
                                           REMAT_FATE_OFFLOAD};
    plan->needed[t] = true;
    plan->fate[t] = fate_of[plan->asked[t]];
    *nunused -= plan->unused[t];
    plan->unused[t] = false;
}

/* Every tensor's asked placement (a param's is `device`) and its fate as if
   nothing needed it (param or transient); unused[i] where a name or the
   predicate placed it saveable; and the needed set's start: a residual, or
   the scan carry, that is saveable is kept; a residual that is not starts
   the walk (pushed on the stack, whose height it returns). */
static size_t plan_asked(const remat_kind_t *kind, const remat_policy_t *p, size_t layer,
                         remat_plan_t *plan, size_t *nunused) {
    const remat_block_t *b = &kind->block;
    const size_t nt = b->ntensors, x = b->inputs[0];
    size_t top = 0;
    memset(plan->needed, 0, (nt + b->nops) * sizeof *plan->needed);
    memset(plan->recompute_op, 0, b->nops * sizeof *plan->recompute_op);
    for (size_t i = 0; i < nt; i++) {
        const remat_tensor_t *t = &b->tensors[i];
        if (t->param) {
            plan->asked[i] = REMAT_PLACE_DEVICE;
            plan->fate[i] = REMAT_FATE_PARAM;
            plan->unused[i] = false;
            continue;
        }
        bool chosen;
        remat_place_t place = kind->own_residuals ? own_place(b, i, &chosen)
                                                  : asked_place(b, p, layer, i, &chosen);
        if (kind->keeps_offloads && place == REMAT_PLACE_OFFLOAD && !by_predicate(b, p, i)) {
            place = REMAT_PLACE_DEVICE; /* the kind's own policy saves the offloaded names */
        }
        if (t->producer != REMAT_NONE && b->ops[t->producer].outside) {
            /* made outside the checkpoint: JAX keeps what the backward reads
               of it (an op outside reads only such tensors, the input and
               params: graph.c), whatever the policy asks */
            place = REMAT_PLACE_DEVICE;
            chosen = false;
        }
        plan->asked[i] = place;
        plan->fate[i] = REMAT_FATE_TRANSIENT;
        /* a name or the predicate asked to keep it: if backward never
           reads it, that ask is reported (a predicate keeps tensors that
           carry no name too) */
        plan->unused[i] = chosen && place != REMAT_PLACE_REMAT;
        *nunused += plan->unused[i];
        if (place != REMAT_PLACE_REMAT) {
            if (t->residual || i == x) {
                mark_needed(plan, i, nunused); /* kept: read by backward, or the scan carry */
            }
        } else if (t->residual) {
            mark_needed(plan, i, nunused);
            plan->stack[top++] = i;
        }
    }
    return top;
}

/* JAX's residual rule as a walk against the forward edges, from the
   residuals backward reads that are not saved (plan_asked's stack): a
   tensor that is not saved needs its producer re-run, and a re-run op needs
   its inputs: a saved one is kept (needed), one that is not is rebuilt in
   turn; a saved tensor (or a param) ends the walk. A dropout's mask only
   needs its op's RNG key, not the op's inputs (recompute_op marks the
   regeneration). The walk visits each tensor and op at most once: linear in
   the layer. */
static void plan_walk(const remat_block_t *b, remat_plan_t *plan, size_t top, size_t *nunused) {
    const size_t nt = b->ntensors;
    while (top > 0) {
        const size_t v = plan->stack[--top];
        if (v >= nt) {
            const remat_op_t *op = &b->ops[v - nt];
            for (size_t k = 0; k < op->nin; k++) {
                const size_t t = op->in[k];
                if (b->tensors[t].param || plan->needed[t]) {
                    continue;
                }
                mark_needed(plan, t, nunused);
                if (plan->asked[t] == REMAT_PLACE_REMAT) {
                    plan->stack[top++] = t; /* rebuilt in turn */
                }
            }
            continue;
        }
        const size_t j = b->tensors[v].producer;
        if (j == REMAT_NONE) {
            continue;
        }
        if (b->ops[j].kind == REMAT_OP_DROPOUT && b->ops[j].nout > 1 && b->ops[j].out[1] == v) {
            plan->recompute_op[j] = true; /* mask regeneration */
        } else if (!plan->needed[nt + j]) {
            plan->needed[nt + j] = true;
            plan->recompute_op[j] = true;
            plan->stack[top++] = nt + j;
        }
        assert(top <= nt + b->nops);
    }
}

/* A name whose buffer stays alive through a kept view is not dropped: not
   unused. The walk is over, so its stack marks the kept buffers. */
static void unused_views(const remat_block_t *b, remat_plan_t *plan) {
    const size_t nt = b->ntensors;
    size_t *kept = plan->stack;
    for (size_t i = 0; i < nt; i++) {
        kept[b->tensors[i].storage] = 0;
    }
    for (size_t i = 0; i < nt; i++) {
        if (plan->fate[i] == REMAT_FATE_DEVICE || plan->fate[i] == REMAT_FATE_OFFLOAD) {
            kept[b->tensors[i].storage] = 1;
        }
    }
    for (size_t i = 0; i < nt; i++) {
        plan->unused[i] = plan->unused[i] && !kept[b->tensors[i].storage];
    }
}

remat_status_t remat_plan_layer(const remat_graph_t *g, size_t kind, const remat_policy_t *p,
                                size_t layer, remat_plan_t *plan, remat_error_t *err) {
    (void)err; /* planning cannot fail: storage allocation aborts */
    assert(kind < g->nkinds);
    const remat_block_t *b = &g->kinds[kind].block;
    plan_alloc(plan, b->ntensors, b->nops);
    /* `none` (p->none_policy) needs nothing here: it asks nothing, as
       `full` does, because MaxText checkpoints it so (remat_policy_t). */
    size_t nunused = 0;
    plan_walk(b, plan, plan_asked(&g->kinds[kind], p, layer, plan, &nunused), &nunused);
    if (nunused) {
        unused_views(b, plan);
    }
    return REMAT_OK;
}
