/* SPDX-License-Identifier: MIT */
/*
 * solve.c: exact placement search (solve.h).
 *
 * Design notes (docs/solver.md has the proof).
 * (1) Only names that backward can read matter: a tagged tensor that is not
 *     an ancestor of any residual is never needed under any placement
 *     (igraph reachability against the forward edges), so it stays remat.
 * (2) Many placements give the same layer plan (same fate for every
 *     tensor); results are memoized by plan, so each plan is analyzed once.
 * (3) Branch and bound over the names: the completion of a partial
 *     placement that puts every undecided name in HBM is never slower than
 *     any other completion. Saving more shrinks the recompute set and the
 *     needed (so offloaded) set, and a layer's time is a max of terms each
 *     monotone in those. A subtree whose bound is slower than the incumbent
 *     is pruned; ties are explored, so the result equals exhaustive
 *     enumeration's, (step time, peak, first in enumeration order).
 * (4) The argument in (3) assumes a buffer's class follows its own names;
 *     graphs where views share a buffer under different names, one of them
 *     kept only for a re-run, are searched exhaustively instead.
 * (5) Feasibility: the completion that offloads every undecided name keeps
 *     the fewest bytes in HBM of all completions (its saveable set is the
 *     largest, so it re-runs the fewest ops and needs the fewest inputs
 *     kept, and it asks HBM for no undecided name). Every stage's peak is at
 *     least its floor (static, in flight, the residuals kept in HBM), so a
 *     subtree whose all-offload floor exceeds the usable budget holds no
 *     feasible placement and is pruned. Same (4) caveat.
 * (6) The work is bounded: a search stops with an error once it has made
 *     REMAT_SOLVE_MAX_PLANS layer plans, and an enumeration of more
 *     placements than that is refused up front. Branch and bound prunes
 *     little when placements tie: a chain of 20 named silu outputs took
 *     790,000 plans and 5 s, and the count grows about 1.7-fold per name,
 *     so 40 names, the most accepted, would take days while the memo grew
 *     past any memory.
 */
#include "remat/solve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <igraph.h>

#include "graph_igraph.h"
#include "graph_internal.h"
#include "remat/sim.h"
#include "sim_internal.h"
#include "util.h"

/* REMAT_SOLVE_MAX_PLANS and REMAT_SOLVE_MAX_NAMES (remat/limits.h) bound
   the work (see (6)); the fuzz build lowers the first so that one input
   stays within libFuzzer's timeout under its instrumentation. */

void remat_solution_init(remat_solution_t *s) {
    memset(s, 0, sizeof *s);
}

void remat_solution_release(remat_solution_t *s) {
    free(s->names);
    free(s->points);
    free(s->choices);
    remat_solution_init(s);
}

remat_policy_t *remat_solve_policy(const remat_choice_t *choices, size_t n, const char *name) {
    remat_policy_t *p = remat_i_xcalloc(1, sizeof *p);
    p->name = remat_i_xstrdup(name);
    p->description = remat_i_xstrdup("placement chosen by remat solve");
    p->source = remat_i_xstrdup("<solve>");
    remat_policy_set(p, "decoder_layer_input", REMAT_PLACE_DEVICE);
    for (size_t i = 0; i < n; i++) {
        remat_policy_set(p, choices[i].name, choices[i].place);
    }
    return p;
}

/* (1) The names worth searching, decoder_layer_input first. */
static remat_status_t relevant_names(const remat_graph_t *g, remat_solution_t *s,
                                     remat_error_t *err) {
    const remat_block_t *b = &g->layer;
    size_t nt = b->ntensors, no = b->nops;
    bool *hit = remat_i_xcalloc(nt + no, sizeof *hit);
    igraph_error_handler_t *old = igraph_set_error_handler(igraph_error_handler_ignore);
    igraph_vector_int_t roots;
    igraph_t ig;
    igraph_error_t ist = igraph_vector_int_init(&roots, 0);
    for (size_t i = 0; i < nt && !ist; i++) {
        if (b->tensors[i].residual) {
            ist = igraph_vector_int_push_back(&roots, (igraph_integer_t)i);
        }
    }
    if (!ist && !(ist = remat_i_block_igraph(b, &ig))) {
        ist = remat_i_reach(&ig, &roots, IGRAPH_IN, NULL, hit);
        igraph_destroy(&ig);
    }
    igraph_vector_int_destroy(&roots);
    igraph_set_error_handler(old);
    if (ist) {
        free(hit);
        return remat_error_set(err, ist == IGRAPH_ENOMEM ? REMAT_E_NOMEM : REMAT_E_INTERNAL, NULL,
                               NULL, "igraph error while solving: %s", igraph_strerror(ist));
    }
    s->names = remat_i_xcalloc(2 * nt + 1, sizeof *s->names);
    snprintf(s->names[s->nnames++], REMAT_NAME_LEN, "decoder_layer_input");
    for (size_t i = 0; i < nt; i++) {
        const remat_tensor_t *t = &b->tensors[i];
        if (!hit[i] || t->param || t->input) {
            continue;
        }
        for (size_t k = 0; k < t->ntags; k++) {
            bool dup = false;
            for (size_t m = 0; m < s->nnames; m++) {
                dup |= strcmp(s->names[m], t->tags[k]) == 0;
            }
            if (!dup) {
                snprintf(s->names[s->nnames++], REMAT_NAME_LEN, "%s", t->tags[k]);
            }
        }
    }
    free(hit);
    return REMAT_OK;
}

/* (4) The bound's argument needs each buffer's class to follow its names:
   when two named tensors share one buffer (views) and one of them is kept
   only to re-run an op, saving more can turn the buffer from kept to
   offloaded and the bound fails. Such graphs are enumerated instead. */
static bool shared_buffers(const remat_graph_t *g) {
    const remat_block_t *b = &g->layer;
    for (size_t o = 0; o < b->ntensors; o++) {
        size_t tagged = 0;
        bool conditional = false;
        for (size_t i = 0; i < b->ntensors; i++) {
            const remat_tensor_t *t = &b->tensors[i];
            if (t->storage == o && t->ntags && !t->param) {
                tagged++;
                conditional |= !t->residual;
            }
        }
        if (tagged >= 2 && conditional) {
            return true;
        }
    }
    return false;
}

/* (2) Results memoized by layer plan. */
typedef struct memo_entry {
    uint64_t hash;
    unsigned char *key; /* the plan's fates, nt bytes; NULL when empty */
    remat_point_t point;
} memo_entry_t;

typedef struct ctx {
    const remat_graph_t *g;
    const remat_config_t *cfg;
    const remat_hw_t *hw;
    remat_policy_t *policy; /* rules[i] mirrors names[i] */
    remat_plan_t plan;
    remat_result_t r;
    remat_solution_t *s;
    size_t n;                /* names */
    memo_entry_t *memo;
    size_t cap, used;
    remat_place_t *assigns;  /* arena of evaluated placements, n each */
    size_t nassigns, assigns_cap;
    uint64_t plans;          /* layer plans made, bounded by REMAT_SOLVE_MAX_PLANS */
    remat_place_t *cur, *tmp;
    unsigned char *key;      /* the plan's fates, as the memo key */
    remat_point_t best;
    bool found;
    remat_analyzer_t *an; /* bound on the first analysis */
    uint64_t usable;      /* the usable budget, from the first analysis */
    remat_error_t *err;
} ctx_t;

static uint64_t fnv(const unsigned char *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ p[i]) * 1099511628211ull;
    }
    return h;
}

static void memo_grow(ctx_t *c) {
    size_t cap = c->cap ? c->cap * 2 : 1024;
    memo_entry_t *m = remat_i_xcalloc(cap, sizeof *m);
    for (size_t i = 0; i < c->cap; i++) {
        if (c->memo[i].key) {
            size_t k = c->memo[i].hash & (cap - 1);
            while (m[k].key) {
                k = (k + 1) & (cap - 1);
            }
            m[k] = c->memo[i];
        }
    }
    free(c->memo);
    c->memo = m;
    c->cap = cap;
}

static size_t save_assign(ctx_t *c, const remat_place_t *a) {
    if (c->nassigns == c->assigns_cap) {
        c->assigns_cap = c->assigns_cap ? 2 * c->assigns_cap : 256;
        c->assigns = remat_i_xrealloc(c->assigns, c->assigns_cap * c->n * sizeof *a);
    }
    memcpy(c->assigns + c->nassigns * c->n, a, c->n * sizeof *a);
    return c->nassigns++;
}

static remat_status_t evaluate(ctx_t *c, const remat_place_t *a, remat_point_t *out) {
    if (++c->plans > REMAT_SOLVE_MAX_PLANS) {
        return remat_error_set(c->err, REMAT_E_GRAPH, c->g->source, NULL,
                               "the search over %zu checkpoint names (%llu placements) did "
                               "not finish within %llu layer plans; search fewer names",
                               c->n, (unsigned long long)c->s->space,
                               (unsigned long long)REMAT_SOLVE_MAX_PLANS);
    }
    for (size_t i = 0; i < c->n; i++) {
        c->policy->rules[i].place = a[i];
    }
    remat_status_t st = remat_plan_layer(c->g, c->policy, 0, c->cfg->scan_layers, &c->plan, c->err);
    if (st) {
        return st;
    }
    const size_t klen = c->plan.ntensors;
    unsigned char *key = c->key;
    for (size_t i = 0; i < klen; i++) {
        key[i] = (unsigned char)c->plan.fate[i];
    }
    uint64_t h = fnv(key, klen);
    if (2 * (c->used + 1) > c->cap) {
        memo_grow(c);
    }
    size_t k = h & (c->cap - 1);
    while (c->memo[k].key) {
        if (c->memo[k].hash == h && memcmp(c->memo[k].key, key, klen) == 0) {
            *out = c->memo[k].point;
            return REMAT_OK;
        }
        k = (k + 1) & (c->cap - 1);
    }
    /* Bound only once a plan is made, so that a planning error is reported
       ahead of a binding one. The solver reads only the verdict and the
       times: no tables. */
    const remat_run_opts_t opts = {.plan = &c->plan, .lite = true};
    if ((!c->an && (st = remat_analyzer_new(c->g, c->cfg, c->hw, &c->an, c->err))) ||
        (st = remat_analyzer_run(c->an, c->policy, &opts, &c->r, c->err))) {
        return st;
    }
    c->s->evaluated++;
    remat_point_t p = {c->r.peak_bytes, c->r.step_seconds, remat_result_passes(&c->r),
                       save_assign(c, a), 0};
    for (size_t sk = 0; sk < c->r.nstages; sk++) {
        p.floor_bytes = c->r.stages[sk].floor_bytes > p.floor_bytes ? c->r.stages[sk].floor_bytes
                                                                   : p.floor_bytes;
    }
    c->usable = c->r.usable_bytes;
    c->memo[k].hash = h;
    c->memo[k].key = remat_i_xmalloc(klen);
    memcpy(c->memo[k].key, key, klen);
    c->memo[k].point = p;
    c->used++;
    *out = p;
    return REMAT_OK;
}

/* Strictly better: faster, then lower peak. Ties keep the earlier. */
static bool better(const remat_point_t *a, const remat_point_t *b) {
    return a->step_seconds < b->step_seconds ||
           (a->step_seconds == b->step_seconds && a->peak_bytes < b->peak_bytes);
}

static void consider(ctx_t *c, const remat_point_t *p) {
    if (p->feasible && (!c->found || better(p, &c->best))) {
        c->best = *p;
        c->found = true;
    }
}

/* Options per name, in search order: HBM first (the bound's completion). */
static size_t options(size_t i, remat_place_t *o) {
    o[0] = REMAT_PLACE_DEVICE;
    o[1] = REMAT_PLACE_OFFLOAD;
    o[2] = REMAT_PLACE_REMAT;
    return i == 0 ? 2 : 3; /* the layer input is always kept somewhere */
}

/* The completion of cur[0..i) that puts every undecided name in @p place. */
static remat_status_t complete(ctx_t *c, size_t i, remat_place_t place, remat_point_t *out) {
    memcpy(c->tmp, c->cur, i * sizeof *c->cur);
    for (size_t k = i; k < c->n; k++) {
        c->tmp[k] = place;
    }
    return evaluate(c, c->tmp, out);
}

/* (3) Branch and bound over names i.. with cur[0..i) decided. */
static remat_status_t bnb(ctx_t *c, size_t i) {
    c->s->visited++;
    remat_point_t bound;
    remat_status_t st = complete(c, i, REMAT_PLACE_DEVICE, &bound);
    if (st) {
        return st;
    }
    if (c->found && bound.step_seconds > c->best.step_seconds) {
        return REMAT_OK; /* no completion beats the incumbent */
    }
    if (i == c->n) {
        consider(c, &bound);
        return REMAT_OK;
    }
    /* (5) When keeping everything undecided does not fit, ask whether
       anything can: the all-offload completion keeps the least in HBM. */
    remat_point_t lean;
    if (!bound.feasible) {
        if ((st = complete(c, i, REMAT_PLACE_OFFLOAD, &lean))) {
            return st;
        }
        if (lean.floor_bytes > c->usable) {
            return REMAT_OK; /* no completion fits */
        }
    }
    remat_place_t o[3];
    size_t no = options(i, o);
    for (size_t k = 0; k < no; k++) {
        c->cur[i] = o[k];
        if ((st = bnb(c, i + 1))) {
            return st;
        }
    }
    return REMAT_OK;
}

static remat_status_t exhaustive(ctx_t *c) {
    size_t digit[64] = {0};
    for (;;) {
        remat_place_t o[3];
        for (size_t i = 0; i < c->n; i++) {
            options(i, o);
            c->cur[i] = o[digit[i]];
        }
        remat_point_t p;
        remat_status_t st = evaluate(c, c->cur, &p);
        if (st) {
            return st;
        }
        c->s->visited++;
        consider(c, &p);
        size_t i = c->n;
        while (i-- > 0) {
            if (++digit[i] < options(i, o)) {
                break;
            }
            digit[i] = 0;
        }
        if (i == (size_t)-1) {
            return REMAT_OK;
        }
    }
}

static int point_cmp(const void *pa, const void *pb) {
    const remat_point_t *a = pa, *b = pb;
    if (a->peak_bytes != b->peak_bytes) {
        return a->peak_bytes < b->peak_bytes ? -1 : 1;
    }
    if (a->step_seconds != b->step_seconds) {
        return a->step_seconds < b->step_seconds ? -1 : 1;
    }
    return a->first < b->first ? -1 : a->first > b->first;
}

static void copy_choices(const ctx_t *c, remat_solution_t *s, remat_point_t *p) {
    const remat_place_t *a = c->assigns + p->first * c->n;
    s->choices = remat_i_xrealloc(s->choices, (s->nchoices + c->n) * sizeof *s->choices);
    for (size_t i = 0; i < c->n; i++) {
        remat_choice_t *ch = &s->choices[s->nchoices + i];
        snprintf(ch->name, sizeof ch->name, "%s", s->names[i]);
        ch->place = a[i];
    }
    p->first = s->nchoices;
    s->nchoices += c->n;
}

remat_status_t remat_solve(const remat_graph_t *g, const remat_config_t *cfg,
                           const remat_hw_t *hw, unsigned flags, remat_solution_t *s,
                           remat_error_t *err) {
    remat_solution_release(s);
    remat_status_t st = relevant_names(g, s, err);
    if (st) {
        return st;
    }
    if (s->nnames > REMAT_SOLVE_MAX_NAMES) {
        return remat_error_set(err, REMAT_E_GRAPH, g->source, NULL,
                               "%zu checkpoint names are too many to search (at most %d)",
                               s->nnames, REMAT_SOLVE_MAX_NAMES);
    }
    uint64_t space = 2;
    for (size_t i = 1; i < s->nnames; i++) {
        space *= 3;
    }
    const bool shared = shared_buffers(g);
    const bool enumerate = (flags & (REMAT_SOLVE_EXHAUSTIVE | REMAT_SOLVE_FRONTIER)) || shared;
    if (enumerate && space > REMAT_SOLVE_MAX_PLANS) {
        return remat_error_set(err, REMAT_E_GRAPH, g->source, NULL,
                               "%zu checkpoint names make %llu placements, too many to "
                               "enumerate (at most %llu; %s)",
                               s->nnames, (unsigned long long)space,
                               (unsigned long long)REMAT_SOLVE_MAX_PLANS,
                               shared ? "this graph's views share buffers under different "
                                        "names, so every placement is enumerated"
                                      : "--frontier and --exhaustive enumerate every placement");
    }
    ctx_t c = {.g = g, .cfg = cfg, .hw = hw, .s = s, .n = s->nnames, .err = err};
    c.policy = remat_i_xcalloc(1, sizeof *c.policy);
    c.policy->name = remat_i_xstrdup("solve");
    c.policy->description = remat_i_xstrdup("");
    c.policy->source = remat_i_xstrdup("<solve>");
    for (size_t i = 0; i < c.n; i++) {
        remat_policy_set(c.policy, s->names[i], REMAT_PLACE_DEVICE);
    }
    remat_plan_init(&c.plan);
    remat_result_init(&c.r);
    c.key = remat_i_xcalloc(g->layer.ntensors + 1, 1);
    c.cur = remat_i_xcalloc(c.n + 1, sizeof *c.cur);
    c.tmp = remat_i_xcalloc(c.n + 1, sizeof *c.tmp);
    s->space = space;
    s->enumerated = enumerate;
    st = enumerate ? exhaustive(&c) : bnb(&c, 0);
    if (st == REMAT_OK && c.found) {
        s->found = true;
        s->best = c.best;
        copy_choices(&c, s, &s->best);
    }
    if (st == REMAT_OK && (flags & REMAT_SOLVE_FRONTIER)) {
        remat_point_t *all = remat_i_xcalloc(c.used + 1, sizeof *all);
        size_t n = 0;
        for (size_t i = 0; i < c.cap; i++) {
            if (c.memo[i].key) {
                all[n++] = c.memo[i].point;
            }
        }
        qsort(all, n, sizeof *all, point_cmp);
        s->points = remat_i_xcalloc(n + 1, sizeof *s->points);
        for (size_t i = 0; i < n; i++) {
            /* Non-dominated: faster than every point of lower or equal peak. */
            if (s->npoints == 0 || all[i].step_seconds < s->points[s->npoints - 1].step_seconds) {
                s->points[s->npoints] = all[i];
                copy_choices(&c, s, &s->points[s->npoints]);
                s->npoints++;
            }
        }
        free(all);
    }
    for (size_t i = 0; i < c.cap; i++) {
        free(c.memo[i].key);
    }
    free(c.memo);
    free(c.assigns);
    free(c.cur);
    free(c.tmp);
    free(c.key);
    remat_plan_release(&c.plan);
    remat_result_release(&c.r);
    remat_analyzer_free(c.an);
    remat_policy_free(c.policy);
    return st;
}

remat_status_t remat_solve_explain(const remat_graph_t *g, const remat_config_t *cfg,
                                   const remat_hw_t *hw, const remat_solution_t *s,
                                   remat_explain_row_t *rows, remat_error_t *err) {
    const remat_choice_t *best = s->choices + s->best.first;
    remat_choice_t *alt = remat_i_xcalloc(s->nnames, sizeof *alt);
    remat_result_t r;
    remat_result_init(&r);
    remat_status_t st = REMAT_OK;
    for (size_t i = 0; i < s->nnames && st == REMAT_OK; i++) {
        remat_explain_row_t *row = &rows[i];
        memset(row, 0, sizeof *row);
        snprintf(row->name, sizeof row->name, "%s", best[i].name);
        row->place = best[i].place;
        for (int o = 0; o < 3 && st == REMAT_OK; o++) {
            remat_place_t p = (remat_place_t)o;
            if (p == best[i].place || (i == 0 && p == REMAT_PLACE_REMAT)) {
                continue;
            }
            memcpy(alt, best, s->nnames * sizeof *alt);
            alt[i].place = p;
            remat_policy_t *pol = remat_solve_policy(alt, s->nnames, "alternative");
            st = remat_analyze(g, cfg, pol, hw, &r, err);
            if (st == REMAT_OK) {
                row->alt[row->nalt++] = (remat_alternative_t){p, r.peak_bytes, r.step_seconds,
                                                              r.fits_margin, r.host_fits};
            }
            remat_policy_free(pol);
        }
    }
    remat_result_release(&r);
    free(alt);
    return st;
}

/* Whether the run fits at @p batch. A batch the dims cannot take (or whose
   bytes overflow) does not fit; any other error is returned. */
static remat_status_t fits_at(const remat_graph_t *g, remat_config_t *c,
                              const remat_policy_t *policy, const remat_hw_t *hw, double batch,
                              remat_result_t *r, bool *fits, remat_error_t *err) {
    c->per_device_batch_size = batch;
    remat_error_t e;
    remat_error_init(&e);
    remat_status_t st = remat_analyze(g, c, policy, hw, r, &e);
    *fits = st == REMAT_OK && remat_result_passes(r);
    if (st == REMAT_E_CONFIG || st == REMAT_E_OVERFLOW) {
        return REMAT_OK;
    }
    if (st && err) {
        *err = e;
    }
    return st;
}

remat_status_t remat_largest_batch(const remat_graph_t *g, const remat_config_t *cfg,
                                   const remat_policy_t *policy, const remat_hw_t *hw,
                                   double *out, remat_error_t *err) {
    /* A per-device batch is valid when the global micro-batch is whole and
       splits over the batch's mesh axes: per_device_batch_size = k x unit
       for k >= 1, unit = accumulation x micro-batches x batch shards /
       devices. */
    remat_mesh_t mesh;
    remat_status_t st = remat_mesh_build(cfg, &mesh, err);
    if (st) {
        return st;
    }
    uint64_t micro = remat_mesh_microbatches(&mesh, cfg);
    uint64_t shards = remat_mesh_product(&mesh, remat_mesh_axes(&mesh, "activation_batch"));
    double unit = (double)(cfg->gradient_accumulation_steps * micro * shards) /
                  (double)cfg->num_devices;
    remat_config_t c = *cfg;
    remat_result_t r;
    remat_result_init(&r);
    uint64_t lo = 0, hi = 1;
    bool fits = true;
    /* fits(k) is monotone in k: every activation byte grows with the batch.
       Double until it fails, then bisect between the last fit and it. */
    while (st == REMAT_OK && fits && hi <= ((uint64_t)1 << 40)) {
        st = fits_at(g, &c, policy, hw, unit * (double)hi, &r, &fits, err);
        if (fits) {
            lo = hi;
            hi *= 2;
        }
    }
    while (st == REMAT_OK && hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        st = fits_at(g, &c, policy, hw, unit * (double)mid, &r, &fits, err);
        *(fits ? &lo : &hi) = mid;
    }
    *out = st == REMAT_OK ? unit * (double)lo : 0;
    remat_result_release(&r);
    return st;
}
