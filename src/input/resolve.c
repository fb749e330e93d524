/* SPDX-License-Identifier: MIT */
/*
 * resolve.c: the config's names made into objects: the graph (a built-in
 * graph for the attention kind, or a file), the policy (a preset, "custom",
 * or a file) and the hardware profile.
 *
 * Built-ins are made once per process, in the process-wide cache of
 * builtin_cache.h (one slot per entry of the built-in table; its threading
 * rules are there). The first resolve of a built-in preset parses and
 * validates its JSON (a hardware profile: remat_hw_resolve, hw.c), and
 * that of a built-in graph unpacks the graph the build generated from its
 * JSON (builtin_graphs.h: loaded and validated at build time, so no parse
 * and no igraph analysis at run time); every resolve copies the cached
 * object. So ownership is what it always was: the caller owns what
 * remat_resolve returns, frees it with remat_graph_free /
 * remat_policy_free and may change it, while the cached objects are never
 * handed out and never change. A built-in graph is one allocation
 * (one_block, graph.h): the cached one is unpacked into a block sized
 * first, and a copy is one malloc, one memcpy and a walk that moves its
 * pointers into the new block; one free releases it. A policy copy is a
 * few small allocations (its strings and rule arrays, which
 * remat_policy_set grows). Either is cheap against a JSON parse and
 * validation, twenty times an analysis. Files (names ending in .json) are
 * read and parsed every time: they may change between calls.
 *
 * Invariants (asserted): a cached policy is allocated like a loaded one
 * (its strings and arrays are its own, so the cache frees it as it would a
 * parsed one); a cached graph is one block that holds none of the
 * generated data's bytes; a graph copy's pointers all point into its own
 * block.
 */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remat/input/resolve.h"
#include "remat/input/graph_file.h"
#include "remat/data/builtin.h"
#include "remat/model/graph.h"
#include "remat/model/hw.h"
#include "remat/model/mesh.h"
#include "remat/model/policy.h"
#include "data/builtin_data.h"
#include "input/builtin_graphs.h"
#include "input/config_internal.h"
#include "input/config_maxtext.h"
#include "data/builtin_cache.h"
#include "model/graph_index.h"
#include "base/util.h"

const remat_i_static_graph_t *remat_i_static_graph_find(const char *name) {
    for (size_t i = 0; i < remat_i_nstatic_graphs; i++) {
        if (strcmp(remat_i_static_str(remat_i_static_graphs[i].builtin), name) == 0) {
            return &remat_i_static_graphs[i];
        }
    }
    return NULL;
}

/* The graph the build generated from the entry's JSON, unpacked into one
   block (builtin_graph checked that the entry has its generated data). */
static remat_status_t make_graph(size_t index, void **out, remat_error_t *err) {
    assert(remat_i_builtins[index].kind == REMAT_BUILTIN_GRAPH);
    const remat_i_static_graph_t *s = remat_i_static_graph_find(remat_i_builtins[index].name);
    assert(s);
    remat_graph_t *g = NULL;
    remat_status_t st = remat_i_graph_from_static(s, &g, err);
    *out = g;
    return st;
}

static void drop_graph(void *g) {
    remat_graph_free(g);
}

static remat_status_t make_policy(size_t index, void **out, remat_error_t *err) {
    assert(remat_i_builtins[index].kind == REMAT_BUILTIN_POLICY);
    remat_policy_t *p = NULL;
    remat_status_t st = remat_policy_builtin(remat_i_builtins[index].name, &p, err);
    *out = p;
    return st;
}

static void drop_policy(void *p) {
    remat_policy_free(p);
}

/* ---- copies ------------------------------------------------------------ */

/* A policy copy, made with the loaders' allocators (util.h): on a failure
   they set *ok false and stop allocating, and what the copy holds is freed
   by remat_policy_free like a half-loaded policy. Every pointer a copy
   holds is its own: no string or array is shared with the cache or the
   generated data. A pointer field added to the graph struct needs its line
   in the unpacking (layout_*, carve_*) and in the copy's move_* below
   (test_builtin_graphs.c compares an unpacked graph with a fresh parse,
   and two resolves with each other), one added to the policy struct in
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

/* A built-in graph is unpacked into one allocation (one_block, graph.h):
   the graph struct, then every array, then every string, so that a resolve
   is one malloc and remat_graph_free one free, against a few hundred of
   each for a graph allocated piece by piece. A first walk of the entry
   sizes the block (layout_*), a second carves it (carve_*) in any order:
   each array's share is rounded up to GRAPH_ALIGN, so every array starts
   aligned wherever it falls, and the strings, which need no alignment,
   come after all arrays. An empty array still gets one zeroed element, as
   the piecewise allocation did, so that no array pointer is NULL. The
   sizes are bounded by the generated data (32-bit counts, strings from the
   build's pool), yet every sum is checked: one that would wrap is reported
   as REMAT_E_NOMEM, as the allocation it sizes could not be made. */
#define GRAPH_ALIGN _Alignof(max_align_t)

typedef struct layout {
    size_t arrays, strings; /* bytes of each part */
    bool ok;                /* false once a sum would have wrapped */
} layout_t;

/* Adds @p count elements of @p size (at least one) to the arrays. */
static void layout_array(layout_t *l, size_t count, size_t size) {
    const size_t n = count ? count : 1;
    const size_t limit = SIZE_MAX / 4; /* a block size that leaves room for rounding */
    if (!l->ok || size == 0 || l->arrays > limit || n > (limit - l->arrays) / size) {
        l->ok = false;
        return;
    }
    l->arrays = remat_i_round_up(l->arrays + n * size, GRAPH_ALIGN);
}

static void layout_str(layout_t *l, remat_i_str_t s) {
    const char *str = remat_i_static_str(s);
    const size_t n = str ? strlen(str) + 1 : 0;
    if (!l->ok || n > SIZE_MAX / 4 - l->strings) {
        l->ok = false;
        return;
    }
    l->strings += n;
}

static void layout_block(layout_t *l, const remat_i_static_block_t *s) {
    layout_array(l, s->ntensors, sizeof(remat_tensor_t));
    layout_array(l, s->nops, sizeof(remat_op_t));
    layout_array(l, s->nops, sizeof(size_t));
    layout_array(l, s->ninputs, sizeof(size_t));
    layout_array(l, s->noutputs, sizeof(size_t));
    for (size_t i = 0; i < s->ntensors; i++) {
        const remat_tensor_t *t = &remat_i_static_tensors[s->tensors + i];
        const remat_i_tensor_strs_t *str = &remat_i_static_tensor_strs[s->tensors + i];
        layout_str(l, str->name);
        layout_str(l, str->gather_group);
        for (size_t k = 0; k < t->ntags && k < REMAT_MAX_TAGS; k++) {
            layout_str(l, str->tags[k]);
        }
        for (size_t k = 0; k < REMAT_MAX_RANK; k++) {
            layout_str(l, str->axes[k]);
        }
    }
    for (size_t i = 0; i < s->nops; i++) {
        layout_str(l, remat_i_static_op_names[s->ops + i]);
    }
}

/* The parts of @p s's block (ok false when a sum would wrap). */
static layout_t layout_graph(const remat_i_static_graph_t *s) {
    layout_t l = {0, 0, true};
    layout_array(&l, 1, sizeof(remat_graph_t));
    layout_str(&l, s->name);
    layout_str(&l, s->description);
    layout_str(&l, s->source);
    layout_array(&l, s->ndims, sizeof(remat_dim_t));
    for (size_t i = 0; i < s->ndims; i++) {
        const remat_i_static_dim_t *a = &remat_i_static_dims[s->dims + i];
        layout_str(&l, a->name);
        layout_str(&l, a->from);
        layout_str(&l, a->div);
        layout_str(&l, a->axis);
        layout_str(&l, a->weight_axis);
    }
    layout_array(&l, s->nkinds, sizeof(remat_kind_t));
    for (size_t k = 0; k < s->nkinds; k++) {
        const remat_i_static_kind_t *a = &remat_i_static_kinds[s->kinds + k];
        layout_str(&l, a->name);
        layout_str(&l, a->block_name);
        layout_str(&l, a->first);
        layout_str(&l, a->every);
        layout_str(&l, a->window);
        layout_block(&l, &a->block);
    }
    if (s->has_head) {
        layout_block(&l, &s->head);
    }
    return l;
}

/* The block being filled: the next array and the next string. */
typedef struct carver {
    char *arrays, *strings;
} carver_t;

/* Bytes of @p count elements of @p size (at least one) in the arrays. */
static size_t array_share(size_t count, size_t size) {
    return remat_i_round_up((count ? count : 1) * size, GRAPH_ALIGN);
}

/* The next array, as layout_array counted it: @p count elements of @p size
   copied from @p src, or zeroed without one (the fields are then set one
   by one, and a field added to the struct starts zeroed, as calloc had
   it); an empty array's one element is zeroed. */
static void *carve_array(carver_t *c, const void *src, size_t count, size_t size) {
    void *d = c->arrays;
    if (src && count) {
        memcpy(d, src, count * size);
    } else {
        memset(d, 0, (count ? count : 1) * size);
    }
    c->arrays += array_share(count, size);
    return d;
}

static char *carve_str(carver_t *c, remat_i_str_t s) {
    const char *str = remat_i_static_str(s);
    if (!str) {
        return NULL;
    }
    const size_t n = strlen(str) + 1;
    char *d = memcpy(c->strings, str, n);
    c->strings += n;
    return d;
}

/* The tensors and ops are the entry's structs, whose pointers are all NULL
   (builtin_graphs.h): copied whole, then given their strings. */
static void carve_block(carver_t *c, remat_block_t *d, const remat_i_static_block_t *s) {
    d->ntensors = s->ntensors;
    d->nops = s->nops;
    d->ninputs = s->ninputs;
    d->noutputs = s->noutputs;
    d->tensors = carve_array(c, &remat_i_static_tensors[s->tensors], s->ntensors,
                             sizeof *d->tensors);
    d->ops = carve_array(c, &remat_i_static_ops[s->ops], s->nops, sizeof *d->ops);
    d->order = carve_array(c, &remat_i_static_sizes[s->order], s->nops, sizeof *d->order);
    d->inputs = carve_array(c, &remat_i_static_sizes[s->inputs], s->ninputs, sizeof *d->inputs);
    d->outputs = carve_array(c, &remat_i_static_sizes[s->outputs], s->noutputs,
                             sizeof *d->outputs);
    for (size_t i = 0; i < s->ntensors; i++) {
        remat_tensor_t *t = &d->tensors[i];
        const remat_i_tensor_strs_t *str = &remat_i_static_tensor_strs[s->tensors + i];
        t->name = carve_str(c, str->name);
        t->gather_group = carve_str(c, str->gather_group);
        for (size_t k = 0; k < t->ntags && k < REMAT_MAX_TAGS; k++) {
            t->tags[k] = carve_str(c, str->tags[k]);
        }
        for (size_t k = 0; k < REMAT_MAX_RANK; k++) {
            t->axes[k] = carve_str(c, str->axes[k]);
        }
    }
    for (size_t i = 0; i < s->nops; i++) {
        d->ops[i].name = carve_str(c, remat_i_static_op_names[s->ops + i]);
    }
}

static void carve_dims(carver_t *c, remat_graph_t *d, const remat_i_static_graph_t *s) {
    d->ndims = s->ndims;
    d->dims = carve_array(c, NULL, s->ndims, sizeof *d->dims);
    for (size_t i = 0; i < s->ndims; i++) {
        const remat_i_static_dim_t *a = &remat_i_static_dims[s->dims + i];
        remat_dim_t *b = &d->dims[i];
        b->value = a->value;
        b->name = carve_str(c, a->name);
        b->from = carve_str(c, a->from);
        b->div = carve_str(c, a->div);
        b->axis = carve_str(c, a->axis);
        b->weight_axis = carve_str(c, a->weight_axis);
    }
}

static void carve_kinds(carver_t *c, remat_graph_t *d, const remat_i_static_graph_t *s) {
    d->nkinds = s->nkinds;
    d->kinds = carve_array(c, NULL, s->nkinds, sizeof *d->kinds);
    for (size_t k = 0; k < s->nkinds; k++) {
        const remat_i_static_kind_t *a = &remat_i_static_kinds[s->kinds + k];
        remat_kind_t *b = &d->kinds[k];
        b->name = carve_str(c, a->name);
        b->block_name = carve_str(c, a->block_name);
        b->first = carve_str(c, a->first);
        b->every = carve_str(c, a->every);
        b->window = carve_str(c, a->window);
        b->first_n = a->first_n;
        b->every_n = a->every_n;
        b->keeps_offloads = a->keeps_offloads;
        b->own_residuals = a->own_residuals;
        b->gathers_ahead = a->gathers_ahead;
        carve_block(c, &b->block, &a->block);
    }
}

/* ---- copies of a cached graph ------------------------------------------ */

/* A copy of a one-block graph is its block copied whole, with every pointer
   then moved from the cached block (from) to the same offset in the copy
   (to). The walk below visits every pointer field of the graph struct: a
   pointer field added to it needs its line here as in carve_*, or the copy
   would point into the cache (test_builtin_graphs.c compares two resolves,
   which share no string or array). */
typedef struct mover {
    const char *from;
    char *to;
} mover_t;

static void move_graph(const mover_t *m, remat_graph_t *g);

/* One-block graph @p d (its index not made yet) copied into a new block
   *@p out that ends with its index: the index, a position-free array, is
   then copied with the block (copy_graph). */
static remat_status_t with_index(const remat_graph_t *d, remat_graph_t **out,
                                 remat_error_t *err) {
    remat_graph_index_t *index = NULL;
    remat_status_t st = remat_i_graph_index(d, remat_i_config_size_field, &index, err);
    if (st) {
        return st;
    }
    const size_t at = remat_i_round_up(d->one_block, GRAPH_ALIGN);
    /* zeroed: the padding before the index is then defined bytes, which
       every copy of the block copies */
    char *block = remat_i_try_calloc(1, at + index->size, err);
    if (!block) {
        free(index);
        return REMAT_E_NOMEM;
    }
    memcpy(block, d, d->one_block);
    memcpy(block + at, index, index->size);
    const mover_t m = {(const char *)d, block};
    remat_graph_t *g = (remat_graph_t *)block;
    move_graph(&m, g);
    g->index = (const remat_graph_index_t *)(void *)(block + at);
    g->one_block = at + index->size;
    free(index);
    *out = g;
    return REMAT_OK;
}

remat_status_t remat_i_graph_from_static(const remat_i_static_graph_t *s, remat_graph_t **out,
                                         remat_error_t *err) {
    *out = NULL;
    const layout_t l = layout_graph(s);
    if (!l.ok) { /* a size that would wrap: a block no allocator could make */
        return remat_error_set(err, REMAT_E_NOMEM, NULL, NULL,
                               "out of memory (built-in graph too large to allocate)");
    }
    /* arrays end within GRAPH_ALIGN of SIZE_MAX / 4, strings under it */
    const size_t size = l.arrays + l.strings;
    /* zeroed: the padding the carving skips is then defined bytes, which
       every copy of this graph (copy_graph) copies whole */
    char *block = remat_i_try_calloc(1, size, err);
    if (!block) {
        return REMAT_E_NOMEM;
    }
    carver_t c = {block, block + l.arrays};
    remat_graph_t *d = carve_array(&c, NULL, 1, sizeof *d);
    d->one_block = size;
    d->expert_parallel = s->expert_parallel;
    d->has_head = s->has_head;
    d->head_feeds = s->head_feeds;
    d->head_takes = s->head_takes;
    d->head_npre = s->head_npre;
    d->name = carve_str(&c, s->name);
    d->description = carve_str(&c, s->description);
    d->source = carve_str(&c, s->source);
    carve_dims(&c, d, s);
    carve_kinds(&c, d, s);
    if (s->has_head) {
        carve_block(&c, &d->head, &s->head);
    }
    assert(c.arrays == block + l.arrays && c.strings == block + size);
    remat_status_t st = with_index(d, out, err);
    free(block);
    return st;
}

static void *moved(const mover_t *m, const void *p) {
    return p ? m->to + ((const char *)p - m->from) : NULL;
}

static void move_block(const mover_t *m, remat_block_t *b) {
    b->tensors = moved(m, b->tensors);
    b->ops = moved(m, b->ops);
    b->order = moved(m, b->order);
    b->inputs = moved(m, b->inputs);
    b->outputs = moved(m, b->outputs);
    for (size_t i = 0; i < b->ntensors; i++) {
        remat_tensor_t *t = &b->tensors[i];
        t->name = moved(m, t->name);
        t->gather_group = moved(m, t->gather_group);
        for (size_t k = 0; k < t->ntags && k < REMAT_MAX_TAGS; k++) {
            t->tags[k] = moved(m, t->tags[k]);
        }
        for (size_t k = 0; k < REMAT_MAX_RANK; k++) {
            t->axes[k] = moved(m, t->axes[k]);
        }
    }
    for (size_t i = 0; i < b->nops; i++) {
        b->ops[i].name = moved(m, b->ops[i].name);
    }
}

static void move_graph(const mover_t *m, remat_graph_t *g) {
    g->name = moved(m, g->name);
    g->description = moved(m, g->description);
    g->source = moved(m, g->source);
    g->dims = moved(m, g->dims);
    for (size_t i = 0; i < g->ndims; i++) {
        remat_dim_t *d = &g->dims[i];
        d->name = moved(m, d->name);
        d->from = moved(m, d->from);
        d->div = moved(m, d->div);
        d->axis = moved(m, d->axis);
        d->weight_axis = moved(m, d->weight_axis);
    }
    g->kinds = moved(m, g->kinds);
    for (size_t k = 0; k < g->nkinds; k++) {
        remat_kind_t *d = &g->kinds[k];
        d->name = moved(m, d->name);
        d->block_name = moved(m, d->block_name);
        d->first = moved(m, d->first);
        d->every = moved(m, d->every);
        d->window = moved(m, d->window);
        move_block(m, &d->block);
    }
    if (g->has_head) {
        move_block(m, &g->head);
    }
    g->index = moved(m, g->index);
}

/* A new graph equal to cached one-block graph @p c, one block itself. */
static remat_status_t copy_graph(const remat_graph_t *c, remat_graph_t **out,
                                 remat_error_t *err) {
    assert(c->one_block >= sizeof *c);
    char *block = remat_i_try_malloc(c->one_block, err);
    *out = NULL;
    if (!block) {
        return REMAT_E_NOMEM;
    }
    memcpy(block, c, c->one_block);
    const mover_t m = {(const char *)c, block};
    move_graph(&m, (remat_graph_t *)block);
    *out = (remat_graph_t *)block;
    return REMAT_OK;
}

/* Built-in graph @p index: a copy of the cached one. The generator runs on
   every built-in graph and fails the build on one that does not load, so
   each has its generated data; the parse below is for a table that holds a
   graph the generator did not see, and reports what a load reports. */
static remat_status_t builtin_graph(size_t index, remat_graph_t **out, remat_error_t *err) {
    *out = NULL;
    if (!remat_i_static_graph_find(remat_i_builtins[index].name)) {
        char source[REMAT_STR_LEN + 128];
        snprintf(source, sizeof source, REMAT_I_BUILTIN_GRAPH_SOURCE,
                 remat_i_builtins[index].name);
        return remat_graph_load_string(remat_i_builtins[index].text, source, out, err);
    }
    const void *g = NULL;
    remat_status_t st = remat_i_cached(index, make_graph, drop_graph, &g, err);
    return st ? st : copy_graph(g, out, err);
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
    const size_t i = remat_i_builtin_index(REMAT_BUILTIN_POLICY, name);
    const void *p = NULL;
    *out = NULL;
    if (i == REMAT_NONE) {
        return remat_policy_builtin(name, out, err);
    }
    remat_status_t st = remat_i_cached(i, make_policy, drop_policy, &p, err);
    return st ? st : copy_policy(p, out, err);
}

remat_status_t remat_resolve_policy(const remat_config_t *cfg, remat_policy_t **policy,
                                    remat_error_t *err) {
    remat_status_t st;
    *policy = NULL;
    if (remat_i_is_json_name(cfg->remat_policy)) {
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

/* Whether the config's mesh shards the expert axis: MaxText then runs
   its MoE layers' expert-parallel path (the graphs' .ep variant). A mesh
   that does not build is the analysis's error to report, not this one's. */
static bool expert_sharded(const remat_config_t *cfg) {
    remat_mesh_t m;
    remat_error_t ignored;
    remat_error_init(&ignored);
    return remat_mesh_build(cfg, &m, &ignored) == REMAT_OK && m.shards[REMAT_AXIS_EXPERT] > 1;
}

/* Which parts of the step select a built-in graph's variant: dropout ops
   only when dropout is on, the dense MoE path, the multi-token prediction
   head (the expert-parallel path asks the mesh: expert_sharded). */
typedef struct variant {
    bool dropout, dense_moe, mtp, indexer;
} variant_t;

static variant_t variant_of(const remat_config_t *cfg) {
    return (variant_t){.dropout = cfg->enable_dropout && cfg->dropout_rate > 0,
                       .dense_moe = cfg->num_experts > 1 && !cfg->sparse_matmul,
                       .mtp = cfg->mtp_num_layers > 0,
                       .indexer = cfg->use_indexer};
}

/* The built-in variant MaxText runs, its name into @p name (@p size bytes):
   the attention kernel, variant_t's parts, and the expert-parallel path
   where the graph has one and the expert axis is sharded. Its index, or
   REMAT_NONE. */
static size_t builtin_variant(const remat_config_t *cfg, char *name, size_t size) {
    const variant_t v = variant_of(cfg);
    /* MaxText runs the indexer past indexer_topk keys only; shorter, its
       weights are all there is of it (attention_mla.py, Indexer.__call__) */
    const char *indexer = !v.indexer                                      ? ""
                          : cfg->max_target_length > cfg->indexer_topk ? ".indexer"
                                                                        : ".indexer_skipped";
    int n = snprintf(name, size, "%s.%s%s%s%s%s%s", cfg->graph, cfg->attention, indexer,
                     v.dropout ? ".dropout" : "",
                     v.dense_moe ? ".dense_moe" : "", v.mtp ? ".mtp" : "",
                     cfg->use_batch_split_schedule ? ".batchsplit" : "");
    assert(n > 0 && (size_t)n < size);
    /* the batch-split schedule has its own expert-parallel path (tokens
       all-gathered over the expert axis): one variant either way */
    if (!v.dense_moe && !cfg->use_batch_split_schedule && expert_sharded(cfg) &&
        (size_t)n + sizeof ".ep" <= size) {
        memcpy(name + n, ".ep", sizeof ".ep");
        const size_t ep = remat_i_builtin_index(REMAT_BUILTIN_GRAPH, name);
        if (ep != REMAT_NONE) {
            return ep;
        }
        name[n] = '\0'; /* a graph without experts: one path */
    }
    return remat_i_builtin_index(REMAT_BUILTIN_GRAPH, name);
}

static remat_status_t no_variant(const remat_config_t *cfg, remat_error_t *err) {
    const variant_t v = variant_of(cfg);
    char list[1024];
    remat_builtin_list(REMAT_BUILTIN_GRAPH, list, sizeof list);
    return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                           "no built-in graph '%s' with attention=%s%s%s%s%s (built-in "
                           "graph.attention[.indexer|.indexer_skipped][.dropout][.dense_moe][.mtp]"
                           "[.batchsplit|.ep]: %s; or "
                           "a graph .json file)",
                           cfg->graph, cfg->attention,
                           v.indexer ? " and the sparse-attention indexer (use_indexer)" : "",
                           v.dropout ? " and dropout (dropout_rate > 0)" : "",
                           v.dense_moe ? " on the dense MoE path (sparse_matmul=false)" : "",
                           v.mtp ? " and multi-token prediction (mtp_num_layers)" : "", list);
}

remat_status_t remat_resolve(const remat_config_t *cfg, remat_graph_t **graph,
                             remat_policy_t **policy, remat_hw_t *hw, remat_error_t *err) {
    *graph = NULL;
    *policy = NULL;
    remat_status_t st;
    if (remat_i_is_json_name(cfg->graph)) {
        st = remat_graph_load_file(cfg->graph, graph, err);
    } else {
        char name[REMAT_STR_LEN + 96];
        const size_t index = builtin_variant(cfg, name, sizeof name);
        if (index == REMAT_NONE) {
            return no_variant(cfg, err);
        }
        /* a new graph each time: the caller owns and may change it */
        st = builtin_graph(index, graph, err);
    }
    if (st) {
        return st;
    }
    /* A kind's own policy is its scanned block's (Gemma4ScannableBlock);
       unscanned, MaxText runs every layer under the config's policy. */
    for (size_t k = 0; !cfg->scan_layers && k < (*graph)->nkinds; k++) {
        (*graph)->kinds[k].keeps_offloads = false;
    }
    st = check_graph_names(cfg, *graph, err);
    if (st == REMAT_OK) {
        st = remat_resolve_policy(cfg, policy, err);
    }
    if (st == REMAT_OK) {
        st = remat_hw_resolve(cfg->hardware, hw, err);
    }
    if (st) {
        remat_graph_free(*graph);
        remat_policy_free(*policy);
        *graph = NULL;
        *policy = NULL;
    }
    return st;
}
