/* SPDX-License-Identifier: MIT */
/*
 * graph.c: whole-graph checks and derived facts, computed once at load for
 * each layer kind's block and the head (every block's residual stream has
 * the first kind's shape and dtype; remat_graph_kind_of gives each layer
 * exactly one kind):
 * unique producers, the DAG check and topological order, reachability of the
 * outputs, which tensors carry gradients, which are residuals (read by some
 * op's backward), buffer aliasing of views, and each tensor's last forward
 * use. igraph does the graph algorithms; this file is its only user besides
 * the policy planner.
 *
 * The analysis runs inside the loader, so its allocations are fallible like
 * the loader's (util.h): REMAT_E_NOMEM, and the caller frees the graph.
 * igraph allocates with its own malloc, which remat cannot hook; its
 * IGRAPH_ENOMEM becomes REMAT_E_NOMEM too (from_igraph), and every igraph
 * object made here is destroyed on every path.
 *
 * remat_graph_free releases a one-block graph (graph.h; resolve.c makes
 * them) with one free of the block that starts at the graph, and any
 * other graph, loaded or half-loaded, string by string and array by array.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <igraph.h>

#include "model/graph_igraph.h"
#include "model/graph_internal.h"
#include "base/util.h"

size_t remat_block_find_tensor(const remat_block_t *b, const char *name) {
    for (size_t i = 0; i < b->ntensors; i++) {
        if (b->tensors[i].name && strcmp(b->tensors[i].name, name) == 0) {
            return i;
        }
    }
    return REMAT_NONE;
}

bool remat_tensor_has_tag(const remat_tensor_t *t, const char *tag) {
    for (size_t j = 0; j < t->ntags; j++) {
        if (strcmp(t->tags[j], tag) == 0) {
            return true;
        }
    }
    return false;
}

bool remat_graph_has_tag(const remat_graph_t *g, const char *tag) {
    for (size_t k = 0; k < g->nkinds; k++) {
        const remat_block_t *b = &g->kinds[k].block;
        for (size_t i = 0; i < b->ntensors; i++) {
            if (remat_tensor_has_tag(&b->tensors[i], tag)) {
                return true;
            }
        }
    }
    return false;
}

size_t remat_graph_kind_of(const remat_graph_t *g, size_t l, const uint64_t *first,
                           const uint64_t *every) {
    for (size_t k = 0; k + 1 < g->nkinds; k++) {
        if (l < first[k] && every[k] && (l + 1) % every[k] == 0) {
            return k;
        }
    }
    return g->nkinds - 1;
}

static void block_release(remat_block_t *b) {
    for (size_t i = 0; i < b->ntensors; i++) {
        free(b->tensors[i].name);
        free(b->tensors[i].gather_group);
        for (size_t j = 0; j < b->tensors[i].ntags; j++) {
            free(b->tensors[i].tags[j]);
        }
        for (size_t j = 0; j < REMAT_MAX_RANK; j++) {
            free(b->tensors[i].axes[j]);
        }
    }
    for (size_t i = 0; i < b->nops; i++) {
        free(b->ops[i].name);
    }
    free(b->tensors);
    free(b->ops);
    free(b->order);
    free(b->inputs);
    free(b->outputs);
}

void remat_graph_free(remat_graph_t *g) {
    if (!g) {
        return;
    }
    if (g->one_block) {
        free(g); /* the block starts at the graph and holds everything it owns */
        return;
    }
    free((void *)g->index);
    for (size_t i = 0; i < g->ndims; i++) {
        free(g->dims[i].name);
        free(g->dims[i].from);
        free(g->dims[i].div);
        free(g->dims[i].axis);
        free(g->dims[i].weight_axis);
    }
    free(g->dims);
    for (size_t k = 0; g->kinds && k < g->nkinds; k++) {
        block_release(&g->kinds[k].block);
        free(g->kinds[k].name);
        free(g->kinds[k].block_name);
        free(g->kinds[k].first);
        free(g->kinds[k].every);
        free(g->kinds[k].window);
    }
    free(g->kinds);
    if (g->has_head) {
        block_release(&g->head);
    }
    free(g->name);
    free(g->description);
    free(g->source);
    free(g);
}

static bool is_float(remat_dtype_t d) {
    return d != REMAT_DTYPE_I32 && d != REMAT_DTYPE_I8 && d != REMAT_DTYPE_BOOL;
}

/* The bipartite tensor/op digraph: tensors are vertices [0, nt), ops
   [nt, nt + nops); edges run tensor -> reading op -> written tensor. */
igraph_error_t remat_i_block_igraph(const remat_block_t *b, igraph_t *ig) {
    igraph_vector_int_t edges;
    igraph_error_t ist = igraph_vector_int_init(&edges, 0);
    if (ist) {
        return ist;
    }
    for (size_t j = 0; j < b->nops && !ist; j++) {
        const remat_op_t *op = &b->ops[j];
        for (size_t i = 0; i < op->nin && !ist; i++) {
            ist = igraph_vector_int_push_back(&edges, (igraph_integer_t)op->in[i]);
            ist = ist ? ist : igraph_vector_int_push_back(&edges, (igraph_integer_t)(b->ntensors + j));
        }
        for (size_t i = 0; i < op->nout && !ist; i++) {
            ist = igraph_vector_int_push_back(&edges, (igraph_integer_t)(b->ntensors + j));
            ist = ist ? ist : igraph_vector_int_push_back(&edges, (igraph_integer_t)op->out[i]);
        }
    }
    if (!ist) {
        ist = igraph_create(ig, &edges, (igraph_integer_t)(b->ntensors + b->nops), IGRAPH_DIRECTED);
    }
    igraph_vector_int_destroy(&edges);
    return ist;
}

/* Marks in @p hit every vertex reachable from @p roots (following @p mode)
   through vertices allowed by @p allowed (NULL: all). */
igraph_error_t remat_i_reach(const igraph_t *ig, const igraph_vector_int_t *roots,
                             igraph_neimode_t mode, const igraph_vector_int_t *allowed, bool *hit) {
    igraph_vector_int_t order;
    igraph_error_t ist = igraph_vector_int_init(&order, 0);
    if (ist) {
        return ist;
    }
    if (igraph_vector_int_size(roots) > 0) {
        ist = igraph_bfs(ig, 0, roots, mode, false, allowed, &order, NULL, NULL, NULL, NULL, NULL,
                         NULL, NULL);
    }
    for (igraph_integer_t i = 0; !ist && i < igraph_vector_int_size(&order); i++) {
        igraph_integer_t v = VECTOR(order)[i];
        if (v >= 0) {
            hit[v] = true;
        }
    }
    igraph_vector_int_destroy(&order);
    return ist;
}

typedef struct ctx {
    remat_graph_t *g;
    const char *source;
    remat_error_t *err;
    remat_jpath_t path;
} ctx_t;

static remat_status_t fail_at(ctx_t *c, const char *section, const char *key, size_t index,
                              remat_status_t code, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

static remat_status_t fail_at(ctx_t *c, const char *section, const char *key, size_t index,
                              remat_status_t code, const char *fmt, ...) {
    char text[REMAT_ERR_TEXT_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    remat_i_jpath_init(&c->path);
    remat_i_jpath_key(&c->path, section);
    if (key) {
        remat_i_jpath_key(&c->path, key);
        if (index != REMAT_NONE) {
            remat_i_jpath_index(&c->path, index);
        }
    }
    return remat_error_set(c->err, code, c->source, c->path.buf, "%s", text);
}

static remat_status_t from_igraph(ctx_t *c, igraph_error_t ist) {
    if (ist == IGRAPH_ENOMEM) {
        return remat_error_set(c->err, REMAT_E_NOMEM, c->source, NULL, "out of memory in igraph");
    }
    return remat_error_set(c->err, REMAT_E_INTERNAL, c->source, NULL, "igraph error %d: %s",
                           (int)ist, igraph_strerror(ist));
}

/* Every tensor has exactly one origin: input, param, or one op. Sets each
   tensor's producer. */
static remat_status_t check_origins(ctx_t *c, remat_block_t *b, const char *section,
                                    size_t takes) {
    for (size_t j = 0; j < b->nops; j++) {
        for (size_t i = 0; i < b->ops[j].nout; i++) {
            remat_tensor_t *t = &b->tensors[b->ops[j].out[i]];
            if (t->input || t->param || b->ops[j].out[i] == takes) {
                return fail_at(c, section, "ops", j, REMAT_E_GRAPH,
                               "op '%s' writes '%s', which is a block input, a param or the "
                               "head's takes_layer",
                               b->ops[j].name, t->name);
            }
            if (t->producer != REMAT_NONE) {
                return fail_at(c, section, "ops", j, REMAT_E_GRAPH,
                               "tensor '%s' is produced twice (also by '%s')", t->name,
                               b->ops[t->producer].name);
            }
            t->producer = j;
        }
    }
    for (size_t i = 0; i < b->ntensors; i++) {
        remat_tensor_t *t = &b->tensors[i];
        if (t->producer == REMAT_NONE && !t->input && !t->param && i != takes) {
            remat_i_jpath_init(&c->path);
            remat_i_jpath_key(&c->path, section);
            remat_i_jpath_key(&c->path, "tensors");
            remat_i_jpath_key(&c->path, t->name);
            return remat_error_set(c->err, REMAT_E_GRAPH, c->source, c->path.buf,
                                   "tensor '%s' is not an input or a param and no op produces it",
                                   t->name);
        }
        if (t->input && t->param) {
            return fail_at(c, section, "inputs", REMAT_NONE, REMAT_E_GRAPH,
                           "param '%s' cannot be a block input", t->name);
        }
    }
    return REMAT_OK;
}

/* Each op obeys its kind's rule; a view keeps its input's dtype. */
static remat_status_t check_ops(ctx_t *c, remat_block_t *b, const char *section) {
    for (size_t j = 0; j < b->nops; j++) {
        remat_i_jpath_init(&c->path);
        remat_i_jpath_key(&c->path, section);
        remat_i_jpath_key(&c->path, "ops");
        remat_i_jpath_index(&c->path, j);
        remat_status_t st = remat_i_op_check(c->g, b, &b->ops[j], c->source, c->path.buf, c->err);
        if (st) {
            return st;
        }
        if (remat_i_opkind_is_view(b->ops[j].kind)) {
            for (size_t i = 0; i < b->ops[j].nout; i++) {
                if (b->tensors[b->ops[j].out[i]].dtype != b->tensors[b->ops[j].in[0]].dtype) {
                    return fail_at(c, section, "ops", j, REMAT_E_GRAPH,
                                   "view op '%s' cannot change the dtype (use cast) of '%s'",
                                   b->ops[j].name, b->tensors[b->ops[j].out[i]].name);
                }
            }
        }
    }
    return REMAT_OK;
}

/* `outer` and `outside` place an op against the layer's checkpoint: the
   head has none, and an op outside runs before it, so it reads only the
   layer input, params and what other ops outside make, is no `outer` op,
   and does not make the layer's output (the next layer's input). Needs
   the producers (check_origins). */
static remat_status_t check_scope(ctx_t *c, const remat_block_t *b, const char *section,
                                  bool head) {
    /* a frozen param has no gradient buffer (static.c counts the head's);
       a layer's params all train */
    for (size_t i = 0; !head && i < b->ntensors; i++) {
        if (b->tensors[i].frozen) {
            return fail_at(c, section, "tensors", REMAT_NONE, REMAT_E_GRAPH,
                           "param '%s': 'frozen' is for head params (a layer's params train)",
                           b->tensors[i].name);
        }
    }
    for (size_t j = 0; j < b->nops; j++) {
        const remat_op_t *op = &b->ops[j];
        if (head && (op->outer || op->outside)) {
            return fail_at(c, section, "ops", j, REMAT_E_GRAPH,
                           "op '%s': 'outer' and 'outside' are for layer ops (the head runs "
                           "outside every layer)",
                           op->name);
        }
        if (!op->outside) {
            continue;
        }
        bool makes_output = false;
        for (size_t i = 0; i < op->nout; i++) {
            makes_output |= op->out[i] == b->outputs[0];
        }
        if (op->outer || makes_output) {
            return fail_at(c, section, "ops", j, REMAT_E_GRAPH,
                           "op '%s' runs outside the layer's checkpoint: it cannot be 'outer' "
                           "or make the layer's output",
                           op->name);
        }
        for (size_t i = 0; i < op->nin; i++) {
            const remat_tensor_t *t = &b->tensors[op->in[i]];
            if (!t->input && !t->param &&
                (t->producer == REMAT_NONE || !b->ops[t->producer].outside)) {
                return fail_at(c, section, "ops", j, REMAT_E_GRAPH,
                               "op '%s' runs outside the layer's checkpoint, before it: it may "
                               "read the layer input, params and outputs of ops outside, not "
                               "'%s'",
                               op->name, t->name);
            }
        }
    }
    return REMAT_OK;
}

/* Fails unless the ops form a DAG, naming an op on a cycle when there is
   one. @p v1 and @p v2 are scratch. */
static remat_status_t check_acyclic(ctx_t *c, const remat_block_t *b, const char *section,
                                    const igraph_t *ig, igraph_vector_int_t *v1,
                                    igraph_vector_int_t *v2) {
    igraph_bool_t dag = false;
    igraph_error_t ist = igraph_is_dag(ig, &dag);
    if (ist) {
        return from_igraph(c, ist);
    }
    if (dag) {
        return REMAT_OK;
    }
    /* An op sits on a cycle when its strong component has more than one vertex. */
    igraph_integer_t ncomp = 0;
    if ((ist = igraph_connected_components(ig, v1, v2, &ncomp, IGRAPH_STRONG))) {
        return from_igraph(c, ist);
    }
    for (size_t j = 0; j < b->nops; j++) {
        if (VECTOR(*v2)[VECTOR(*v1)[b->ntensors + j]] > 1) {
            return fail_at(c, section, "ops", j, REMAT_E_GRAPH,
                           "the ops form a cycle through '%s'", b->ops[j].name);
        }
    }
    return fail_at(c, section, "ops", REMAT_NONE, REMAT_E_GRAPH, "the ops form a cycle");
}

/* Sets b->order: the file's order when it is a topological order (the
   author's schedule, which the memory profile follows); igraph's otherwise.
   @p v1 is scratch. */
static remat_status_t order_ops(ctx_t *c, remat_block_t *b, const igraph_t *ig,
                                igraph_vector_int_t *v1) {
    igraph_error_t ist = igraph_topological_sorting(ig, v1, IGRAPH_OUT);
    if (ist) {
        return from_igraph(c, ist);
    }
    b->order = remat_i_try_calloc(b->nops, sizeof *b->order, c->err);
    if (!b->order) {
        return REMAT_E_NOMEM;
    }
    size_t n = 0;
    bool file_order = true;
    for (size_t j = 0; j < b->nops && file_order; j++) {
        for (size_t i = 0; i < b->ops[j].nin; i++) {
            size_t p = b->tensors[b->ops[j].in[i]].producer;
            file_order &= p == REMAT_NONE || p < j;
        }
    }
    for (igraph_integer_t i = 0; i < igraph_vector_int_size(v1); i++) {
        igraph_integer_t v = VECTOR(*v1)[i];
        if ((size_t)v >= b->ntensors) {
            b->order[n] = file_order ? n : (size_t)v - b->ntensors;
            n++;
        }
    }
    return REMAT_OK;
}

/* Marks in @p fwd what the block's differentiable sources (inputs, params,
   the head's takes_layer) reach, and in @p bwd what reaches its float
   outputs (and the head's feed), through float tensors only: an int tensor
   stops gradients. @p roots and @p allowed are scratch. */
static igraph_error_t reach_gradients(const remat_block_t *b, const igraph_t *ig, size_t takes,
                                      size_t feeds, igraph_vector_int_t *roots,
                                      igraph_vector_int_t *allowed, bool *fwd, bool *bwd) {
    igraph_error_t ist = IGRAPH_SUCCESS;
    igraph_vector_int_clear(roots);
    igraph_vector_int_clear(allowed);
    for (size_t i = 0; i < b->ntensors && !ist; i++) {
        const remat_tensor_t *t = &b->tensors[i];
        if (is_float(t->dtype)) {
            ist = igraph_vector_int_push_back(allowed, (igraph_integer_t)i);
            /* a frozen param is no source: its gradient is stopped */
            if (!ist && (t->input || (t->param && !t->frozen) || i == takes)) {
                ist = igraph_vector_int_push_back(roots, (igraph_integer_t)i);
            }
        }
    }
    for (size_t j = 0; j < b->nops && !ist; j++) {
        ist = igraph_vector_int_push_back(allowed, (igraph_integer_t)(b->ntensors + j));
    }
    if (ist || (ist = remat_i_reach(ig, roots, IGRAPH_OUT, allowed, fwd))) {
        return ist;
    }
    igraph_vector_int_clear(roots);
    for (size_t i = 0; i < b->noutputs && !ist; i++) {
        if (is_float(b->tensors[b->outputs[i]].dtype)) {
            ist = igraph_vector_int_push_back(roots, (igraph_integer_t)b->outputs[i]);
        }
    }
    if (feeds != REMAT_NONE && !ist) {
        /* The head's feed to layer 0 receives its gradient from the layers. */
        ist = igraph_vector_int_push_back(roots, (igraph_integer_t)feeds);
    }
    return ist ? ist : remat_i_reach(ig, roots, IGRAPH_IN, allowed, bwd);
}

/* DAG check, order and which tensors need gradients, on igraph. */
static remat_status_t analyze_flow(ctx_t *c, remat_block_t *b, const char *section, size_t takes,
                                   size_t feeds) {
    igraph_t ig;
    igraph_error_t ist = remat_i_block_igraph(b, &ig);
    if (ist) {
        return from_igraph(c, ist);
    }
    size_t nv = b->ntensors + b->nops;
    bool *fwd = remat_i_try_calloc(nv, sizeof *fwd, c->err);
    bool *bwd = fwd ? remat_i_try_calloc(nv, sizeof *bwd, c->err) : NULL;
    /* A vector whose init failed holds no storage, so destroying it is safe. */
    igraph_vector_int_t v1 = {0}, v2 = {0};
    remat_status_t st = REMAT_E_NOMEM;
    if (fwd && bwd) {
        ist = igraph_vector_int_init(&v1, 0);
        ist = ist ? ist : igraph_vector_int_init(&v2, 0);
        st = ist ? from_igraph(c, ist) : check_acyclic(c, b, section, &ig, &v1, &v2);
    }
    if (st == REMAT_OK) {
        st = order_ops(c, b, &ig, &v1);
    }
    if (st == REMAT_OK && (ist = reach_gradients(b, &ig, takes, feeds, &v1, &v2, fwd, bwd))) {
        st = from_igraph(c, ist);
    }
    for (size_t i = 0; st == REMAT_OK && i < b->noutputs; i++) {
        const remat_tensor_t *t = &b->tensors[b->outputs[i]];
        if (t->producer == REMAT_NONE) {
            st = fail_at(c, section, "outputs", i, REMAT_E_GRAPH,
                         "output '%s' is not produced by any op", t->name);
        }
    }
    for (size_t i = 0; st == REMAT_OK && i < b->ntensors; i++) {
        b->tensors[i].needs_grad = fwd[i] && bwd[i];
    }
    igraph_vector_int_destroy(&v1);
    igraph_vector_int_destroy(&v2);
    igraph_destroy(&ig);
    free(fwd);
    free(bwd);
    return st;
}

static remat_status_t analyze_block(ctx_t *c, remat_block_t *b, const char *section,
                                    size_t takes, size_t feeds) {
    remat_status_t st = check_origins(c, b, section, takes);
    if (st == REMAT_OK) {
        st = check_ops(c, b, section);
    }
    if (st == REMAT_OK) {
        st = analyze_flow(c, b, section, takes, feeds);
    }
    return st;
}

/* Derived per-op and per-tensor facts that depend on the final op order. */
static remat_status_t derive(ctx_t *c, remat_block_t *b, const char *section) {
    for (size_t i = 0; i < b->ntensors; i++) {
        b->tensors[i].storage = i;
        b->tensors[i].last_use = REMAT_NONE;
        b->tensors[i].residual = false;
    }
    for (size_t p = 0; p < b->nops; p++) {
        remat_op_t *op = &b->ops[b->order[p]];
        for (size_t i = 0; i < op->nin; i++) {
            b->tensors[op->in[i]].last_use = p;
        }
        if (remat_i_opkind_is_view(op->kind)) {
            for (size_t i = 0; i < op->nout; i++) {
                b->tensors[op->out[i]].storage = b->tensors[op->in[0]].storage;
            }
        }
        op->has_backward = false;
        for (size_t i = 0; i < op->nout; i++) {
            op->has_backward |= b->tensors[op->out[i]].needs_grad;
        }
        remat_i_op_default_saves(b, op);
        if (op->has_backward) {
            for (size_t i = 0; i < op->nsaves; i++) {
                remat_tensor_t *t = &b->tensors[op->saves[i]];
                if (!t->param) {
                    t->residual = true;
                }
            }
        }
    }
    (void)section;
    (void)c;
    return REMAT_OK;
}

static bool same_shape(const remat_tensor_t *a, const remat_tensor_t *b) {
    return a->rank == b->rank && memcmp(a->dim, b->dim, a->rank * sizeof a->dim[0]) == 0 &&
           a->dtype == b->dtype;
}

/* A layer kind's block: one input and one output of the same shape as
   the first kind's (the residual stream), a valid block, and an output its
   own backward does not read. */
static remat_status_t analyze_layer(ctx_t *c, size_t k) {
    remat_block_t *L = &c->g->kinds[k].block, *L0 = &c->g->kinds[0].block;
    char section[REMAT_NAME_LEN + 8] = "layer";
    if (c->g->kinds[k].block_name) {
        snprintf(section, sizeof section, "blocks.%s", c->g->kinds[k].block_name);
    }
    if (L->ninputs != 1 || L->noutputs != 1) {
        return fail_at(c, section, "inputs", REMAT_NONE, REMAT_E_GRAPH,
                       "a layer has one input and one output (the residual stream)");
    }
    if (!same_shape(&L->tensors[L->inputs[0]], &L->tensors[L->outputs[0]]) ||
        !same_shape(&L->tensors[L->inputs[0]], &L0->tensors[L0->inputs[0]])) {
        return fail_at(c, section, "outputs", 0, REMAT_E_GRAPH,
                       "layer output '%s' must have the shape and dtype of input '%s'%s",
                       L->tensors[L->outputs[0]].name, L->tensors[L->inputs[0]].name,
                       k ? ", and both those of the first kind's input" : "");
    }
    remat_status_t st = analyze_block(c, L, section, REMAT_NONE, REMAT_NONE);
    if (st || (st = check_scope(c, L, section, false)) || (st = derive(c, L, section))) {
        return st;
    }
    if (L->tensors[L->outputs[0]].residual) {
        return fail_at(c, section, "outputs", 0, REMAT_E_GRAPH,
                       "layer output '%s' is read by its own layer's backward, which the layer "
                       "stack does not support (it is the next layer's input)",
                       L->tensors[L->outputs[0]].name);
    }
    return REMAT_OK;
}

/* The head ops that do not depend on the last layer's output run before
   the layers; order them first, keeping topological order. Sets
   g->head_npre, and *feeds_after when feeds_layer depends on that output. */
static remat_status_t order_head(ctx_t *c, bool *feeds_after) {
    remat_graph_t *g = c->g;
    remat_block_t *H = &g->head;
    igraph_t ig;
    igraph_error_t ist = remat_i_block_igraph(H, &ig);
    if (ist) {
        return from_igraph(c, ist);
    }
    bool *after = remat_i_try_calloc(H->ntensors + H->nops, sizeof *after, c->err);
    if (!after) {
        igraph_destroy(&ig);
        return REMAT_E_NOMEM;
    }
    igraph_vector_int_t roots;
    ist = igraph_vector_int_init(&roots, 1);
    if (!ist) {
        VECTOR(roots)[0] = (igraph_integer_t)g->head_takes;
        ist = remat_i_reach(&ig, &roots, IGRAPH_OUT, NULL, after);
        igraph_vector_int_destroy(&roots);
    }
    igraph_destroy(&ig);
    size_t *order = ist ? NULL : remat_i_try_calloc(H->nops, sizeof *order, c->err), n = 0;
    if (!order) {
        free(after);
        return ist ? from_igraph(c, ist) : REMAT_E_NOMEM;
    }
    for (int pass = 0; pass < 2; pass++) {
        for (size_t p = 0; p < H->nops; p++) {
            if (after[H->ntensors + H->order[p]] == (pass == 1)) {
                order[n++] = H->order[p];
            }
        }
        if (pass == 0) {
            g->head_npre = n;
        }
    }
    *feeds_after = after[g->head_feeds];
    free(H->order);
    H->order = order;
    free(after);
    return REMAT_OK;
}

/* The head: feeds_layer and takes_layer shaped like the layer input, a
   valid block, and feeds_layer computed before the layers run. */
static remat_status_t analyze_head(ctx_t *c) {
    remat_graph_t *g = c->g;
    remat_block_t *L = &g->kinds[0].block, *H = &g->head;
    const remat_tensor_t *feeds = &H->tensors[g->head_feeds];
    const remat_tensor_t *takes = &H->tensors[g->head_takes];
    if (!same_shape(feeds, &L->tensors[L->inputs[0]]) ||
        !same_shape(takes, &L->tensors[L->inputs[0]])) {
        return fail_at(c, "head", "feeds_layer", REMAT_NONE, REMAT_E_GRAPH,
                       "'%s' and '%s' must have the layer input's shape and dtype",
                       feeds->name, takes->name);
    }
    remat_status_t st = analyze_block(c, H, "head", g->head_takes, g->head_feeds);
    if (st == REMAT_OK) {
        st = check_scope(c, H, "head", true);
    }
    if (st) {
        return st;
    }
    bool feeds_after = false;
    if ((st = order_head(c, &feeds_after))) {
        return st;
    }
    if (feeds_after || feeds->producer == REMAT_NONE) {
        return fail_at(c, "head", "feeds_layer", REMAT_NONE, REMAT_E_GRAPH,
                       "'%s' must be produced by head ops that run before the layers",
                       feeds->name);
    }
    return derive(c, H, "head");
}

remat_status_t remat_i_graph_analyze(remat_graph_t *g, const char *source, remat_error_t *err) {
    ctx_t c = {.g = g, .source = source, .err = err};
    igraph_error_handler_t *old = igraph_set_error_handler(igraph_error_handler_ignore);
    igraph_warning_handler_t *oldw = igraph_set_warning_handler(igraph_warning_handler_ignore);
    remat_status_t st = REMAT_OK;
    for (size_t k = 0; k < g->nkinds && st == REMAT_OK; k++) {
        st = analyze_layer(&c, k);
    }
    if (st == REMAT_OK && g->has_head) {
        st = analyze_head(&c);
    }
    igraph_set_error_handler(old);
    igraph_set_warning_handler(oldw);
    return st;
}
