/* SPDX-License-Identifier: MIT */
/*
 * policy.c: policy files (format "remat-policy/1"), built-in presets, and the
 * per-layer plan. The plan reproduces JAX's residual rule: start from the
 * tensors some op's backward reads; keep those the policy makes saveable;
 * rebuild the others by re-running their producers, whose inputs are then
 * needed in turn. The reachability is one igraph BFS over the op graph with
 * the producer edges of saveable tensors cut (a kept tensor ends the walk).
 */
#include "remat/policy.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <igraph.h>
#include <jansson.h>

#include "json_util.h"

#include "remat/builtin.h"
#include "util.h"

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
    for (size_t i = 0; i < p->nranges; i++) {
        free(p->ranges[i].rules);
    }
    free(p->ranges);
    free(p->rules);
    free(p->name);
    free(p->description);
    free(p->source);
    free(p);
}

static void rules_set(remat_policy_rule_t **rules, size_t *n, const char *name,
                      remat_place_t place) {
    for (size_t i = 0; i < *n; i++) {
        if (strcmp((*rules)[i].name, name) == 0) {
            (*rules)[i].place = place;
            return;
        }
    }
    *rules = remat_i_xrealloc(*rules, (*n + 1) * sizeof **rules);
    snprintf((*rules)[*n].name, REMAT_NAME_LEN, "%s", name);
    (*rules)[*n].place = place;
    (*n)++;
}

void remat_policy_set(remat_policy_t *p, const char *name, remat_place_t place) {
    rules_set(&p->rules, &p->nrules, name, place);
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
        rules_set(rules, n, key, place);
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

static remat_status_t load_policy(ploader_t *L, json_t *root, remat_policy_t *p) {
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
    p->name = remat_i_xstrdup(json_string_value(name));
    json_t *desc = json_object_get(root, "description");
    if (json_is_string(desc) && !remat_i_printable(json_string_value(desc))) {
        remat_i_jpath_key(&L->path, "description");
        return pfail(L, "'description' must not hold control characters");
    }
    p->description = remat_i_xstrdup(json_is_string(desc) ? json_string_value(desc) : "");
    json_t *names = json_object_get(root, "names");
    if (names) {
        remat_i_jpath_key(&L->path, "names");
        remat_status_t st = load_names(L, names, &p->rules, &p->nrules);
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
    json_t *none = json_object_get(root, "none");
    if (none) {
        if (!json_is_boolean(none)) {
            remat_i_jpath_key(&L->path, "none");
            return pfail(L, "'none' must be true or false");
        }
        p->none_policy = json_is_true(none);
    }
    json_t *layers = json_object_get(root, "layers");
    if (layers) {
        remat_i_jpath_key(&L->path, "layers");
        if (!json_is_array(layers)) {
            return pfail(L, "'layers' must be an array of {\"range\": \"A-B\", \"names\": {...}}");
        }
        p->nranges = json_array_size(layers);
        p->ranges = remat_i_xcalloc(p->nranges, sizeof *p->ranges);
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
    }
    return REMAT_OK;
}

remat_status_t remat_policy_load_string(const char *text, const char *source, bool preset,
                                        remat_policy_t **out, remat_error_t *err) {
    *out = NULL;
    json_t *root = remat_i_json_load(text, source, err);
    if (!root) {
        return REMAT_E_SYNTAX;
    }
    ploader_t L = {.source = source, .err = err};
    remat_i_jpath_init(&L.path);
    remat_policy_t *p = remat_i_xcalloc(1, sizeof *p);
    p->preset = preset;
    p->source = remat_i_xstrdup(source);
    remat_status_t st = load_policy(&L, root, p);
    json_decref(root);
    if (st) {
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
    snprintf(source, sizeof source, "<builtin:policies/%s.json>", name);
    return remat_policy_load_string(text, source, true, out, err);
}

static remat_status_t unknown_name(const remat_policy_t *p, const remat_graph_t *g,
                                   const char *name, size_t range, remat_error_t *err) {
    char list[768];
    size_t len = 0;
    list[0] = '\0';
    /* The graph's checkpoint names, each once, in tensor order. */
    for (size_t i = 0; i < g->layer.ntensors; i++) {
        const remat_tensor_t *t = &g->layer.tensors[i];
        for (size_t j = 0; j < t->ntags; j++) {
            bool dup = false;
            for (size_t k = 0; k <= i && !dup; k++) {
                const remat_tensor_t *u = &g->layer.tensors[k];
                for (size_t m = 0; m < u->ntags && !(k == i && m >= j); m++) {
                    dup |= strcmp(u->tags[m], t->tags[j]) == 0;
                }
            }
            if (!dup && len + strlen(t->tags[j]) + 3 < sizeof list) {
                len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", len ? ", " : "",
                                        t->tags[j]);
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

/* Placement of one checkpoint name at @p layer: the last range covering the
   layer wins, then the policy's own names, then `remat` (MaxText's default). */
bool remat_policy_lookup(const remat_policy_t *p, const char *name, size_t layer,
                         remat_place_t *out) {
    for (size_t r = p->nranges; r-- > 0;) {
        const remat_policy_range_t *R = &p->ranges[r];
        if (layer < R->first || layer > R->last) {
            continue;
        }
        for (size_t i = 0; i < R->nrules; i++) {
            if (strcmp(R->rules[i].name, name) == 0) {
                *out = R->rules[i].place;
                return true;
            }
        }
    }
    for (size_t i = 0; i < p->nrules; i++) {
        if (strcmp(p->rules[i].name, name) == 0) {
            *out = p->rules[i].place;
            return true;
        }
    }
    return false;
}

/* Stronger placement wins when a tensor carries two names: HBM over host
   over recompute (JAX saves a value if any of its names is saveable). */
static remat_place_t stronger(remat_place_t a, remat_place_t b) {
    static const int rank[] = {0, 2, 1};
    return rank[b] > rank[a] ? b : a;
}

/* The layer's reverse graph for planning, kept with the plan storage:
   vertices are tensors [0, nt), ops [nt, nt + no) and the ops' RNG
   vertices [nt + no, nt + 2no); edges run from an op to each input and from
   a tensor to its producer (a dropout mask to its op's RNG vertex: a mask is
   regenerated from the key alone). */
typedef struct plan_cache {
    const remat_graph_t *g;
    igraph_t ig;
    igraph_vector_int_t roots, allowed, order;
} plan_cache_t;

static void plan_cache_free(plan_cache_t *c) {
    if (!c) {
        return;
    }
    igraph_destroy(&c->ig);
    igraph_vector_int_destroy(&c->roots);
    igraph_vector_int_destroy(&c->allowed);
    igraph_vector_int_destroy(&c->order);
    free(c);
}

static igraph_error_t plan_cache(const remat_graph_t *g, remat_plan_t *plan) {
    plan_cache_t *c = plan->cache;
    if (c && c->g == g) {
        return IGRAPH_SUCCESS;
    }
    plan_cache_free(c);
    plan->cache = NULL;
    const remat_block_t *b = &g->layer;
    size_t nt = b->ntensors, no = b->nops;
    igraph_vector_int_t edges;
    igraph_error_t ist = igraph_vector_int_init(&edges, 0);
    if (ist) {
        return ist;
    }
    for (size_t j = 0; j < no && !ist; j++) {
        const remat_op_t *op = &b->ops[j];
        for (size_t i = 0; i < op->nin && !ist; i++) {
            ist = igraph_vector_int_push_back(&edges, (igraph_integer_t)(nt + j));
            ist = ist ? ist : igraph_vector_int_push_back(&edges, (igraph_integer_t)op->in[i]);
        }
        for (size_t i = 0; i < op->nout && !ist; i++) {
            size_t producer = op->kind == REMAT_OP_DROPOUT && i == 1 ? nt + no + j : nt + j;
            ist = igraph_vector_int_push_back(&edges, (igraph_integer_t)op->out[i]);
            ist = ist ? ist : igraph_vector_int_push_back(&edges, (igraph_integer_t)producer);
        }
    }
    c = remat_i_xcalloc(1, sizeof *c);
    if (!ist && !(ist = igraph_create(&c->ig, &edges, (igraph_integer_t)(nt + 2 * no),
                                      IGRAPH_DIRECTED))) {
        igraph_vector_int_init(&c->roots, 0);
        igraph_vector_int_init(&c->allowed, 0);
        igraph_vector_int_init(&c->order, 0);
        c->g = g;
        plan->cache = c;
    } else {
        free(c);
    }
    igraph_vector_int_destroy(&edges);
    return ist;
}

void remat_plan_init(remat_plan_t *plan) {
    memset(plan, 0, sizeof *plan);
}

void remat_plan_release(remat_plan_t *plan) {
    plan_cache_free(plan->cache);
    free(plan->asked);
    free(plan->fate);
    free(plan->unused);
    free(plan->needed);
    free(plan->recompute_op);
    remat_plan_init(plan);
}

bool remat_plan_equal(const remat_plan_t *a, const remat_plan_t *b) {
    return a->ntensors == b->ntensors &&
           memcmp(a->fate, b->fate, a->ntensors * sizeof *a->fate) == 0 &&
           memcmp(a->asked, b->asked, a->ntensors * sizeof *a->asked) == 0;
}

remat_status_t remat_plan_layer(const remat_graph_t *g, const remat_policy_t *p, size_t layer,
                                bool scan_layers, remat_plan_t *plan, remat_error_t *err) {
    const remat_block_t *b = &g->layer;
    size_t nt = b->ntensors, no = b->nops;
    if (plan->ntensors != nt || plan->nops != no) {
        remat_plan_release(plan);
        plan->ntensors = nt;
        plan->nops = no;
        plan->asked = remat_i_xcalloc(nt, sizeof *plan->asked);
        plan->fate = remat_i_xcalloc(nt, sizeof *plan->fate);
        plan->unused = remat_i_xcalloc(nt, sizeof *plan->unused);
        plan->needed = remat_i_xcalloc(nt + no, sizeof *plan->needed);
        plan->recompute_op = remat_i_xcalloc(no, sizeof *plan->recompute_op);
    }
    /* MaxText's `none` without scan keeps every residual; scanned, the layer
       is still checkpointed and `none` behaves as `full`. */
    bool keep_all = p->none_policy && !scan_layers;
    const size_t x = b->inputs[0];
    for (size_t i = 0; i < nt; i++) {
        const remat_tensor_t *t = &b->tensors[i];
        remat_place_t place = keep_all ? REMAT_PLACE_DEVICE : p->fallback;
        bool chosen = false; /* placed by a name or a predicate, not a default */
        remat_place_t named;
        if (i == x) {
            /* The scan carry is saved under every policy; only custom's
               decoder_layer_input=offload moves it to host. */
            place = REMAT_PLACE_DEVICE;
            if (remat_policy_lookup(p, "decoder_layer_input", layer, &named) && named == REMAT_PLACE_OFFLOAD) {
                place = REMAT_PLACE_OFFLOAD;
            }
        } else if (!keep_all && p->predicate != REMAT_PRED_NONE && t->producer != REMAT_NONE &&
                   remat_op_einsum_no_batch_dims(&b->ops[t->producer])) {
            place = p->predicate_place;
            chosen = true;
        } else if (t->ntags > 0 && !keep_all) {
            /* Names the policy places decide; a tensor none of whose names
               is placed takes the default (remat, as in MaxText). */
            bool placed = false;
            remat_place_t best = REMAT_PLACE_REMAT;
            for (size_t j = 0; j < t->ntags; j++) {
                if (remat_policy_lookup(p, t->tags[j], layer, &named)) {
                    best = placed ? stronger(best, named) : named;
                    placed = true;
                }
            }
            place = placed ? best : p->fallback;
            chosen = placed;
        }
        plan->asked[i] = t->param ? REMAT_PLACE_DEVICE : place;
        plan->unused[i] = chosen; /* refined once the needed set is known */
    }
    /* BFS against the forward edges from the residuals backward reads, on
       the layer's reverse graph (built once per plan storage, cached),
       restricted to ops and to tensors that are not saveable: a saveable
       tensor ends the walk. It is needed when it is a residual or an input
       of an op the walk reaches. */
    igraph_error_handler_t *old = igraph_set_error_handler(igraph_error_handler_ignore);
    remat_status_t st = REMAT_OK;
    igraph_error_t ist = plan_cache(g, plan);
    if (!ist) {
        plan_cache_t *c = plan->cache;
        igraph_vector_int_clear(&c->roots);
        igraph_vector_int_clear(&c->allowed);
        for (size_t i = 0; i < nt && !ist; i++) {
            if (b->tensors[i].param || plan->asked[i] != REMAT_PLACE_REMAT) {
                continue;
            }
            ist = igraph_vector_int_push_back(&c->allowed, (igraph_integer_t)i);
            if (!ist && b->tensors[i].residual) {
                ist = igraph_vector_int_push_back(&c->roots, (igraph_integer_t)i);
            }
        }
        for (size_t v = nt; v < nt + 2 * no && !ist; v++) {
            ist = igraph_vector_int_push_back(&c->allowed, (igraph_integer_t)v);
        }
        igraph_vector_int_clear(&c->order);
        if (!ist && igraph_vector_int_size(&c->roots) > 0) {
            ist = igraph_bfs(&c->ig, 0, &c->roots, IGRAPH_OUT, false, &c->allowed, &c->order,
                             NULL, NULL, NULL, NULL, NULL, NULL, NULL);
        }
    }
    if (!ist) {
        plan_cache_t *c = plan->cache;
        memset(plan->needed, 0, (nt + no) * sizeof *plan->needed);
        memset(plan->recompute_op, 0, no * sizeof *plan->recompute_op);
        for (igraph_integer_t i = 0; i < igraph_vector_int_size(&c->order); i++) {
            igraph_integer_t v = VECTOR(c->order)[i];
            if (v >= 0 && (size_t)v < nt + no) {
                plan->needed[v] = true;
            } else if (v >= 0) {
                plan->recompute_op[(size_t)v - nt - no] = true; /* mask regeneration */
            }
        }
        for (size_t i = 0; i < nt; i++) {
            if (!b->tensors[i].param && plan->asked[i] != REMAT_PLACE_REMAT &&
                (b->tensors[i].residual || i == x)) {
                plan->needed[i] = true; /* kept: read by backward, or the scan carry */
            }
        }
        for (size_t j = 0; j < no; j++) {
            if (!plan->needed[nt + j]) {
                continue;
            }
            for (size_t i = 0; i < b->ops[j].nin; i++) {
                size_t t = b->ops[j].in[i];
                if (!b->tensors[t].param && plan->asked[t] != REMAT_PLACE_REMAT) {
                    plan->needed[t] = true; /* read to re-run a needed op */
                }
            }
        }
        for (size_t j = 0; j < no; j++) {
            plan->recompute_op[j] |= plan->needed[nt + j];
        }
        for (size_t i = 0; i < nt; i++) {
            const remat_tensor_t *t = &b->tensors[i];
            remat_fate_t f = REMAT_FATE_TRANSIENT;
            if (t->param) {
                f = REMAT_FATE_PARAM;
            } else if (plan->needed[i]) {
                f = plan->asked[i] == REMAT_PLACE_DEVICE    ? REMAT_FATE_DEVICE
                    : plan->asked[i] == REMAT_PLACE_OFFLOAD ? REMAT_FATE_OFFLOAD
                                                            : REMAT_FATE_RECOMPUTE;
            }
            plan->fate[i] = f;
            plan->unused[i] = plan->unused[i] && !t->param && !plan->needed[i] &&
                              t->ntags > 0 && plan->asked[i] != REMAT_PLACE_REMAT;
        }
        /* A name whose buffer stays alive through a kept view (gpt3's
           qkv_proj under its q/k/v views) is not dropped: not unused. */
        for (size_t i = 0; i < nt; i++) {
            for (size_t j = 0; j < nt && plan->unused[i]; j++) {
                if (b->tensors[j].storage == b->tensors[i].storage &&
                    (plan->fate[j] == REMAT_FATE_DEVICE || plan->fate[j] == REMAT_FATE_OFFLOAD)) {
                    plan->unused[i] = false;
                }
            }
        }
    } else {
        st = remat_error_set(err, ist == IGRAPH_ENOMEM ? REMAT_E_NOMEM : REMAT_E_INTERNAL, NULL,
                             NULL, "igraph error while planning: %s", igraph_strerror(ist));
    }
    igraph_set_error_handler(old);
    return st;
}
