/* SPDX-License-Identifier: MIT */
/*
 * resolve.c: the config's names made into objects: the graph (a built-in
 * graph for the attention kind, or a file), the policy (a preset, "custom",
 * or a file) and the hardware profile.
 *
 * Built-ins are made once per process. The first resolve of a built-in
 * preset or hardware profile parses and validates its JSON, and that of a
 * built-in graph copies the graph the build generated from its JSON
 * (builtin_graphs.h: loaded and validated at build time, so no parse and
 * no igraph analysis at run time); either keeps the object in a
 * process-wide cache, one slot per entry of the built-in table, and every
 * resolve copies the cached object. So ownership is what it always was:
 * the caller owns what remat_resolve returns, frees it with
 * remat_graph_free / remat_policy_free and may change it, while the cached
 * objects are never handed out and never change. A copy is a few hundred
 * small allocations (the graph's strings and arrays), against a JSON parse
 * and validation twenty times an analysis. Files (names ending in .json)
 * are read and parsed every time: they may change between calls.
 *
 * Threads: the slots are atomic pointers. A miss parses without a lock and
 * installs its object with a compare-and-swap; a thread that loses the race
 * frees its own and copies the winner's. So any number of threads may
 * resolve at once, each built-in being parsed at most once per thread that
 * races for it. The cache is freed at exit (atexit); resolving from another
 * thread while the process exits is not supported.
 *
 * Invariants (asserted): a slot is NULL or holds the object made from its
 * own entry, of the entry's kind, allocated like a loaded one (a graph's
 * strings and arrays are its own, never the generated data's, so drop
 * frees it as it would a parsed one); an error is never cached.
 */
#include <assert.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remat/builtin.h"
#include "remat/graph.h"
#include "remat/hw.h"
#include "remat/policy.h"
#include "remat/sim.h"
#include "builtin_data.h"
#include "builtin_graphs.h"
#include "config_maxtext.h"
#include "util.h"

static bool ends_with_json(const char *s) {
    size_t n = strlen(s);
    return n > 5 && strcmp(s + n - 5, ".json") == 0;
}

/* ---- the process-wide cache of parsed built-ins ------------------------ */

/* One atomic slot per entry of the built-in table, allocated on first use:
   NULL, or the entry's parsed object (a remat_policy_t or remat_hw_t, by
   the entry's kind), which nothing changes once installed. Graphs are not
   cached: each resolve unpacks the build's generated data (make_graph). */
static _Atomic(_Atomic(void *) *) cache_slots;

static void drop(size_t index, void *obj) {
    switch (remat_i_builtins[index].kind) {
        case REMAT_BUILTIN_POLICY:
            remat_policy_free(obj);
            break;
        default:
            free(obj); /* a hardware profile: one block */
            break;
    }
}

/* At exit: every parsed built-in and the slots. */
static void cache_release(void) {
    _Atomic(void *) *s = atomic_exchange(&cache_slots, NULL);
    for (size_t i = 0; s && i < remat_i_nbuiltins; i++) {
        void *obj = atomic_load(&s[i]);
        if (obj) {
            drop(i, obj);
        }
    }
    free((void *)s);
}

/* The slots, allocated by the first caller that gets here (a racing loser
   frees its array); NULL with REMAT_E_NOMEM when they cannot be. */
static _Atomic(void *) *slots(remat_error_t *err) {
    _Atomic(void *) *s = atomic_load_explicit(&cache_slots, memory_order_acquire);
    if (s) {
        return s;
    }
    _Atomic(void *) *mine = remat_i_try_calloc(remat_i_nbuiltins + 1, sizeof *mine, err);
    if (!mine) {
        return NULL;
    }
    for (size_t i = 0; i <= remat_i_nbuiltins; i++) {
        atomic_init(&mine[i], NULL);
    }
    if (!atomic_compare_exchange_strong_explicit(&cache_slots, &s, mine, memory_order_acq_rel,
                                                 memory_order_acquire)) {
        free((void *)mine);
        return s;
    }
    /* Registered once, by the thread that installed the slots. If atexit
       cannot take it, the cache stays reachable until the end. */
    (void)atexit(cache_release);
    return mine;
}

/* Parses built-in @p index into a new object (*out). */
typedef remat_status_t (*make_fn)(size_t index, void **out, remat_error_t *err);

/* The cached object of built-in @p index, made by @p make on a miss.
   Borrowed: immutable, valid until exit. */
static remat_status_t cached(size_t index, make_fn make, const void **out, remat_error_t *err) {
    assert(index < remat_i_nbuiltins);
    *out = NULL;
    _Atomic(void *) *s = slots(err);
    if (!s) {
        return REMAT_E_NOMEM;
    }
    void *obj = atomic_load_explicit(&s[index], memory_order_acquire);
    if (!obj) {
        remat_status_t st = make(index, &obj, err);
        if (st) {
            return st; /* errors are not cached: the next call reports them again */
        }
        void *none = NULL;
        if (!atomic_compare_exchange_strong_explicit(&s[index], &none, obj, memory_order_acq_rel,
                                                     memory_order_acquire)) {
            drop(index, obj); /* another thread installed it first */
            obj = none;
        }
    }
    *out = obj;
    return REMAT_OK;
}

/* The index of built-in @p name of @p kind, or REMAT_NONE. */
static size_t builtin_index(remat_builtin_kind_t kind, const char *name) {
    for (size_t i = 0; i < remat_i_nbuiltins; i++) {
        if (remat_i_builtins[i].kind == kind && strcmp(remat_i_builtins[i].name, name) == 0) {
            return i;
        }
    }
    return REMAT_NONE;
}

const remat_i_static_graph_t *remat_i_static_graph_find(const char *name) {
    for (size_t i = 0; i < remat_i_nstatic_graphs; i++) {
        if (strcmp(remat_i_static_str(remat_i_static_graphs[i].builtin), name) == 0) {
            return &remat_i_static_graphs[i];
        }
    }
    return NULL;
}

/* The graph the build generated from the entry's JSON. The generator runs
   on every built-in graph and fails the build on one that does not load,
   so each has its entry; the parse below is for a table that holds a graph
   the generator did not see, and reports what a load reports. */
static remat_status_t make_graph(size_t index, void **out, remat_error_t *err) {
    assert(remat_i_builtins[index].kind == REMAT_BUILTIN_GRAPH);
    const remat_i_static_graph_t *s = remat_i_static_graph_find(remat_i_builtins[index].name);
    remat_graph_t *g = NULL;
    remat_status_t st;
    if (s) {
        st = remat_i_graph_from_static(s, &g, err);
    } else {
        char source[REMAT_STR_LEN + 128];
        snprintf(source, sizeof source, REMAT_I_BUILTIN_GRAPH_SOURCE,
                 remat_i_builtins[index].name);
        st = remat_graph_load_string(remat_i_builtins[index].text, source, &g, err);
    }
    *out = g;
    return st;
}

static remat_status_t make_policy(size_t index, void **out, remat_error_t *err) {
    assert(remat_i_builtins[index].kind == REMAT_BUILTIN_POLICY);
    remat_policy_t *p = NULL;
    remat_status_t st = remat_policy_builtin(remat_i_builtins[index].name, &p, err);
    *out = p;
    return st;
}

static remat_status_t make_hw(size_t index, void **out, remat_error_t *err) {
    assert(remat_i_builtins[index].kind == REMAT_BUILTIN_HARDWARE);
    remat_hw_t *hw = remat_i_try_malloc(sizeof *hw, err);
    remat_status_t st = hw ? remat_hw_resolve(remat_i_builtins[index].name, hw, err)
                           : REMAT_E_NOMEM;
    if (st) {
        free(hw);
        hw = NULL;
    }
    *out = hw;
    return st;
}

/* ---- copies ------------------------------------------------------------ */

/* Copies made with the loaders' allocators (util.h): on a failure they set
   *ok false and stop allocating, and what they hold is freed by
   remat_graph_free / remat_policy_free like a half-loaded object. Every
   pointer a copy holds is its own: no string or array is shared with the
   cache or the generated data. A pointer field added to the graph struct
   needs its line in the unpacking below (test_builtin_graphs.c compares an
   unpacked graph with a fresh parse), one added to the policy struct in
   copy_policy (test_solve.c). */
static char *dup_str(const char *s, bool *ok, remat_error_t *err) {
    char *d = s && *ok ? remat_i_try_strdup(s, err) : NULL;
    *ok = *ok && (d || !s);
    return d;
}

static void *dup_array(const void *p, size_t count, size_t size, bool *ok, remat_error_t *err) {
    void *d = p && *ok ? remat_i_try_calloc(count ? count : 1, size, err) : NULL;
    if (d) {
        memcpy(d, p, count * size);
    }
    *ok = *ok && (d || !p);
    return d;
}

/* ---- the generated graphs (builtin_graphs.h) into graphs of their own ---- */

/* As the policy copy below: @p d starts empty, counts follow their arrays,
   and every string and array is the graph's own. */
static char *static_str(remat_i_str_t s, bool *ok, remat_error_t *err) {
    return dup_str(remat_i_static_str(s), ok, err);
}

static void unpack_tensors(remat_tensor_t *d, const remat_i_static_block_t *s, bool *ok,
                           remat_error_t *err) {
    for (size_t i = 0; i < s->ntensors; i++) {
        const remat_tensor_t *t = &remat_i_static_tensors[s->tensors + i];
        const remat_i_tensor_strs_t *str = &remat_i_static_tensor_strs[s->tensors + i];
        d[i] = *t; /* every pointer NULL: the strings are in str */
        d[i].name = static_str(str->name, ok, err);
        d[i].gather_group = static_str(str->gather_group, ok, err);
        for (size_t k = 0; k < REMAT_MAX_TAGS; k++) {
            d[i].tags[k] = k < t->ntags ? static_str(str->tags[k], ok, err) : NULL;
        }
        for (size_t k = 0; k < REMAT_MAX_RANK; k++) {
            d[i].axes[k] = static_str(str->axes[k], ok, err);
        }
    }
}

static void unpack_block(remat_block_t *d, const remat_i_static_block_t *s, bool *ok,
                         remat_error_t *err) {
    d->ninputs = s->ninputs;
    d->noutputs = s->noutputs;
    d->tensors = *ok ? remat_i_try_calloc(s->ntensors + 1, sizeof *d->tensors, err) : NULL;
    d->ops = d->tensors ? remat_i_try_calloc(s->nops + 1, sizeof *d->ops, err) : NULL;
    *ok = *ok && d->ops;
    if (!*ok) {
        return;
    }
    d->ntensors = s->ntensors;
    d->nops = s->nops;
    unpack_tensors(d->tensors, s, ok, err);
    for (size_t i = 0; i < s->nops; i++) {
        d->ops[i] = remat_i_static_ops[s->ops + i];
        d->ops[i].name = static_str(remat_i_static_op_names[s->ops + i], ok, err);
    }
    const size_t *sizes = remat_i_static_sizes;
    d->order = dup_array(sizes + s->order, s->nops, sizeof *sizes, ok, err);
    d->inputs = dup_array(sizes + s->inputs, s->ninputs, sizeof *sizes, ok, err);
    d->outputs = dup_array(sizes + s->outputs, s->noutputs, sizeof *sizes, ok, err);
}

static void unpack_dims(remat_graph_t *d, const remat_i_static_graph_t *s, bool *ok,
                        remat_error_t *err) {
    d->dims = *ok ? remat_i_try_calloc(s->ndims + 1, sizeof *d->dims, err) : NULL;
    *ok = *ok && d->dims;
    d->ndims = d->dims ? s->ndims : 0;
    for (size_t i = 0; i < d->ndims; i++) {
        const remat_i_static_dim_t *a = &remat_i_static_dims[s->dims + i];
        remat_dim_t *b = &d->dims[i];
        b->value = a->value;
        b->name = static_str(a->name, ok, err);
        b->from = static_str(a->from, ok, err);
        b->div = static_str(a->div, ok, err);
        b->axis = static_str(a->axis, ok, err);
        b->weight_axis = static_str(a->weight_axis, ok, err);
    }
}

static void unpack_kinds(remat_graph_t *d, const remat_i_static_graph_t *s, bool *ok,
                         remat_error_t *err) {
    d->kinds = *ok ? remat_i_try_calloc(s->nkinds, sizeof *d->kinds, err) : NULL;
    *ok = *ok && d->kinds;
    d->nkinds = d->kinds ? s->nkinds : 0;
    for (size_t k = 0; k < d->nkinds; k++) {
        const remat_i_static_kind_t *a = &remat_i_static_kinds[s->kinds + k];
        remat_kind_t *b = &d->kinds[k];
        b->name = static_str(a->name, ok, err);
        b->block_name = static_str(a->block_name, ok, err);
        b->first = static_str(a->first, ok, err);
        b->every = static_str(a->every, ok, err);
        b->window = static_str(a->window, ok, err);
        b->first_n = a->first_n;
        b->every_n = a->every_n;
        unpack_block(&b->block, &a->block, ok, err);
    }
}

remat_status_t remat_i_graph_from_static(const remat_i_static_graph_t *s, remat_graph_t **out,
                                         remat_error_t *err) {
    remat_graph_t *d = remat_i_try_calloc(1, sizeof *d, err);
    *out = NULL;
    if (!d) {
        return REMAT_E_NOMEM;
    }
    d->has_head = s->has_head;
    d->head_feeds = s->head_feeds;
    d->head_takes = s->head_takes;
    d->head_npre = s->head_npre;
    bool ok = true;
    d->name = static_str(s->name, &ok, err);
    d->description = static_str(s->description, &ok, err);
    d->source = static_str(s->source, &ok, err);
    unpack_dims(d, s, &ok, err);
    unpack_kinds(d, s, &ok, err);
    if (s->has_head) {
        unpack_block(&d->head, &s->head, &ok, err);
    }
    if (!ok) {
        remat_graph_free(d);
        return REMAT_E_NOMEM;
    }
    *out = d;
    return REMAT_OK;
}

/* A new policy equal to @p s (free with remat_policy_free). */
static remat_status_t copy_policy(const remat_policy_t *s, remat_policy_t **out,
                                  remat_error_t *err) {
    remat_policy_t *d = remat_i_try_calloc(1, sizeof *d, err);
    *out = NULL;
    if (!d) {
        return REMAT_E_NOMEM;
    }
    *d = *s;
    d->name = d->description = d->source = NULL;
    d->nrules = d->nranges = 0;
    d->rules = NULL;
    d->ranges = NULL;
    bool ok = true;
    d->name = dup_str(s->name, &ok, err);
    d->description = dup_str(s->description, &ok, err);
    d->source = dup_str(s->source, &ok, err);
    d->rules = dup_array(s->rules, s->nrules, sizeof *s->rules, &ok, err);
    d->nrules = d->rules ? s->nrules : 0;
    d->ranges = s->nranges && ok ? remat_i_try_calloc(s->nranges, sizeof *d->ranges, err) : NULL;
    ok = ok && (d->ranges || !s->nranges);
    d->nranges = d->ranges ? s->nranges : 0;
    for (size_t i = 0; i < d->nranges; i++) {
        d->ranges[i] = s->ranges[i];
        d->ranges[i].rules = dup_array(s->ranges[i].rules, s->ranges[i].nrules,
                                       sizeof *s->ranges[i].rules, &ok, err);
        d->ranges[i].nrules = d->ranges[i].rules ? s->ranges[i].nrules : 0;
    }
    if (!ok) {
        remat_policy_free(d);
        return REMAT_E_NOMEM;
    }
    *out = d;
    return REMAT_OK;
}

/* ---- resolving ----------------------------------------------------------- */

/* A preset by name: a copy of the cached one. An unknown name gets
   remat_policy_builtin's error. */
static remat_status_t builtin_policy(const char *name, remat_policy_t **out,
                                     remat_error_t *err) {
    const size_t i = builtin_index(REMAT_BUILTIN_POLICY, name);
    const void *p = NULL;
    *out = NULL;
    if (i == REMAT_NONE) {
        return remat_policy_builtin(name, out, err);
    }
    remat_status_t st = cached(i, make_policy, &p, err);
    return st ? st : copy_policy(p, out, err);
}

/* remat_hw_resolve, with built-in profiles (by name or family) from the
   cache; files and unknown names go to remat_hw_resolve itself. */
static remat_status_t resolve_hw(const char *name, remat_hw_t *out, remat_error_t *err) {
    size_t i = REMAT_NONE;
    if (!ends_with_json(name)) {
        const char *family = remat_hw_family(name);
        i = builtin_index(REMAT_BUILTIN_HARDWARE, name);
        if (i == REMAT_NONE && family) {
            i = builtin_index(REMAT_BUILTIN_HARDWARE, family);
        }
    }
    if (i == REMAT_NONE) {
        return remat_hw_resolve(name, out, err);
    }
    const void *hw = NULL;
    remat_status_t st = cached(i, make_hw, &hw, err);
    if (st) {
        memset(out, 0, sizeof *out);
        return st;
    }
    *out = *(const remat_hw_t *)hw;
    return REMAT_OK;
}

remat_status_t remat_resolve_policy(const remat_config_t *cfg, remat_policy_t **policy,
                                    remat_error_t *err) {
    remat_status_t st;
    *policy = NULL;
    if (ends_with_json(cfg->remat_policy)) {
        char *text = NULL;
        if ((st = remat_i_read_file(cfg->remat_policy, &text, err)) == REMAT_OK) {
            st = remat_policy_load_string(text, cfg->remat_policy, false, policy, err);
        }
        free(text);
    } else if (strcmp(cfg->remat_policy, "custom") == 0) {
        /* MaxText's custom: every name remat except the layer input. */
        remat_policy_t *p = remat_i_xcalloc(1, sizeof *p);
        p->name = remat_i_xstrdup("custom");
        p->description = remat_i_xstrdup("remat_policy=custom with per-name keys");
        p->source = remat_i_xstrdup(cfg->custom_source[0] ? cfg->custom_source : "<config>");
        remat_policy_set(p, "decoder_layer_input", REMAT_PLACE_DEVICE);
        for (size_t i = 0; i < cfg->ncustom; i++) {
            remat_policy_set(p, cfg->custom[i].name, cfg->custom[i].place);
        }
        *policy = p;
        st = REMAT_OK;
    } else {
        st = builtin_policy(cfg->remat_policy, policy, err);
    }
    return st;
}

/* The graph's checkpoint name nearest @p name, else the nearest key. */
static const char *nearest_tag(const remat_graph_t *g, const char *name) {
    const char *best = NULL;
    size_t bestd = (size_t)-1;
    for (size_t k = 0; k < g->nkinds; k++) {
        const remat_block_t *b = &g->kinds[k].block;
        for (size_t i = 0; i < b->ntensors; i++) {
            const remat_tensor_t *t = &b->tensors[i];
            best = remat_i_nearest_word(name, (const char *const *)t->tags, t->ntags, best,
                                        &bestd);
        }
    }
    return best && remat_i_near_enough(name, bestd) ? best : remat_i_config_nearest_key(name);
}

/* A custom placement for a name MaxText does not have is the graph's own
   checkpoint name (config.c lets it through for this check): a name the
   graph does not tag either is an unknown key, reported as config.c would. */
static remat_status_t check_graph_names(const remat_config_t *cfg, const remat_graph_t *g,
                                        remat_error_t *err) {
    for (size_t i = 0; i < cfg->ncustom; i++) {
        const char *name = cfg->custom[i].name;
        if (!cfg->custom_graph_name[i] || remat_policy_graph_knows(g, name)) {
            continue;
        }
        const char *near = nearest_tag(g, name);
        return remat_error_set(err, REMAT_E_CONFIG, cfg->custom_source, NULL,
                               "unknown config key '%s': not one of remat's or MaxText's keys, "
                               "nor a checkpoint name of graph '%s'%s%s%s",
                               name, g->name, near ? " (did you mean '" : "", near ? near : "",
                               near ? "'?)" : "");
    }
    return REMAT_OK;
}

remat_status_t remat_resolve(const remat_config_t *cfg, remat_graph_t **graph,
                             remat_policy_t **policy, remat_hw_t *hw, remat_error_t *err) {
    *graph = NULL;
    *policy = NULL;
    remat_status_t st;
    if (ends_with_json(cfg->graph)) {
        st = remat_graph_load_file(cfg->graph, graph, err);
    } else {
        /* The variant MaxText runs: the attention kernel, and the layer
           with its dropout ops only when dropout is on. */
        const bool dropout = cfg->enable_dropout && cfg->dropout_rate > 0;
        const bool dense_moe = cfg->num_experts > 1 && !cfg->sparse_matmul;
        const bool mtp = cfg->mtp_num_layers > 0;
        char name[REMAT_STR_LEN + 64];
        snprintf(name, sizeof name, "%s.%s%s%s%s", cfg->graph, cfg->attention,
                 dropout ? ".dropout" : "", dense_moe ? ".dense_moe" : "", mtp ? ".mtp" : "");
        const size_t index = builtin_index(REMAT_BUILTIN_GRAPH, name);
        if (index == REMAT_NONE) {
            char list[1024];
            remat_builtin_list(REMAT_BUILTIN_GRAPH, list, sizeof list);
            return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                                   "no built-in graph '%s' with attention=%s%s%s%s (built-in "
                                   "graph.attention[.dropout][.dense_moe][.mtp]: %s; or a graph "
                                   ".json file)",
                                   cfg->graph, cfg->attention,
                                   dropout ? " and dropout (dropout_rate > 0)" : "",
                                   dense_moe ? " on the dense MoE path (sparse_matmul=false)" : "",
                                   mtp ? " and multi-token prediction (mtp_num_layers)" : "",
                                   list);
        }
        /* a new graph each time, unpacked from the generated data: the
           caller owns and may change it */
        void *g = NULL;
        st = make_graph(index, &g, err);
        *graph = g;
    }
    if (st) {
        return st;
    }
    st = check_graph_names(cfg, *graph, err);
    if (st == REMAT_OK) {
        st = remat_resolve_policy(cfg, policy, err);
    }
    if (st == REMAT_OK) {
        st = resolve_hw(cfg->hardware, hw, err);
    }
    if (st) {
        remat_graph_free(*graph);
        remat_policy_free(*policy);
        *graph = NULL;
        *policy = NULL;
    }
    return st;
}
