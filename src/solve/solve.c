/* SPDX-License-Identifier: MIT */
/*
 * solve.c: exact placement search (solve.h).
 *
 * Design notes (docs/solver.md has the proofs).
 * (1) Only names that backward can read matter: a tagged tensor that is not
 *     an ancestor of any residual is never needed under any placement
 *     (igraph reachability against the forward edges), so it stays remat.
 * (2) Many placements give the same layer plan (same fate for every
 *     tensor); results are memoized by plan, so each plan is analyzed once.
 * (3) Branch and bound. A node decides some names; its bound completion
 *     keeps every undecided name in HBM and is never slower than any other
 *     completion (keeping more shrinks the recompute set and the offloaded
 *     set, and a layer's time is a max of terms monotone in those). A
 *     subtree whose bound is slower than the incumbent is pruned; ties are
 *     explored.
 * (4) The arguments assume a buffer's class follows its own names; graphs
 *     where views share a buffer under different names, one of them kept
 *     only for a re-run, are searched exhaustively instead.
 * (5) Feasibility: the completion that offloads every undecided name has
 *     the least floor (static, in flight, the residuals kept in HBM) of all
 *     completions, and every stage's peak is at least its floor: when that
 *     floor is over the usable budget nothing below fits.
 * (6) The work is bounded: a search stops with an error once it has made
 *     REMAT_SOLVE_MAX_PLANS layer plans, and an enumeration of more
 *     placements than that is refused up front. Branch and bound prunes
 *     little when placements tie or when names weigh alike on the budget: a
 *     chain of 20 equal named tensors at a budget half way between `full`
 *     and `selective` takes 440,000 analyses (5 s), and the count about
 *     doubles per name, so such a chain of 22 names stops at the bound.
 * (7) Host RAM: the bound completion offloads least of all completions
 *     (only decided names offload), so when even its offloaded bytes break
 *     the host's RAM nothing below fits.
 * (8) Every placement analyzed is a candidate, wherever the search meets
 *     it (bounds, seed, leaves), and the incumbent is the least feasible one
 *     by (step time, peak, enumeration order): the answer is exhaustive
 *     enumeration's whatever the order of the search, which is therefore
 *     free to seed, to pick the next name and to order the children.
 * (9) Forcing: (5) and (7) applied to one undecided name at a time rule
 *     options out (`device` when keeping just that name in HBM already
 *     breaks the budget, `offload` when offloading just that name breaks
 *     the host's RAM); the name with the most options ruled out is decided
 *     next.
 * (10) A child that keeps its name in HBM has its parent's bound
 *     completion: it is not planned again.
 * (11) The frontier (unless enumerating): a Pareto branch and bound after
 *     the optimum's search, sharing its memo. Every completion of a node has
 *     a step of at least its bound completion's (3) and a peak of at least
 *     the floor of its lean completion (5); when an analyzed plan strictly
 *     dominates that pair, every completion is strictly dominated and none
 *     is on the frontier. Only strict domination prunes, so every placement
 *     whose pair is on the frontier is analyzed; the memo keeps for each
 *     plan the first placement in enumeration order it met, so each point
 *     carries enumeration's placement. Budget and host RAM prune nothing
 *     here: the frontier is drawn over all plans.
 *
 * Invariants (asserted): a node's decided, ruled-out and picked names are
 * names of the search (fewer than 64, so one bit each), the name picked is
 * undecided and has an option left; the incumbent is feasible; the
 * archive's peaks strictly ascend and its steps strictly descend (11).
 */
#include "remat/solve/solve.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <igraph.h>

#include "model/graph_igraph.h"
#include "model/graph_internal.h"
#include "remat/sim/sim.h"
#include "sim/sim_internal.h"
#include "base/util.h"

/* A quick search never goes further than a full one: a build that lowers
   the full bound (the fuzz targets do) lowers the quick one with it. */
#define QUICK_PLANS                                                                            \
    (REMAT_SOLVE_QUICK_PLANS < REMAT_SOLVE_MAX_PLANS ? REMAT_SOLVE_QUICK_PLANS                 \
                                                     : REMAT_SOLVE_MAX_PLANS)

/* REMAT_SOLVE_MAX_PLANS and REMAT_SOLVE_MAX_NAMES (remat/base/limits.h) bound
   the work (see (6)); the fuzz build lowers the first so that one input
   stays within libFuzzer's timeout under its instrumentation. A node keeps
   one bit a name. */
_Static_assert(REMAT_SOLVE_MAX_NAMES < 64, "a node holds the names as bits of a uint64_t");

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

/* Marks in @p hit what the residuals of block @p b are reached from. */
static remat_status_t residual_sources(const remat_block_t *b, bool *hit, remat_error_t *err) {
    const size_t nt = b->ntensors;
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
        return remat_error_set(err, ist == IGRAPH_ENOMEM ? REMAT_E_NOMEM : REMAT_E_INTERNAL, NULL,
                               NULL, "igraph error while solving: %s", igraph_strerror(ist));
    }
    return REMAT_OK;
}

/* (1) The names worth searching, decoder_layer_input first: the names of
   every kind's tensors that a residual is computed from, each once (one
   placement per name holds for every layer kind, as MaxText's policy does). */
static remat_status_t relevant_names(const remat_graph_t *g, remat_solution_t *s,
                                     remat_error_t *err) {
    size_t cap = 1;
    for (size_t k = 0; k < g->nkinds; k++) {
        cap += 2 * g->kinds[k].block.ntensors;
    }
    s->names = remat_i_xcalloc(cap, sizeof *s->names);
    snprintf(s->names[s->nnames++], REMAT_NAME_LEN, "decoder_layer_input");
    for (size_t kind = 0; kind < g->nkinds; kind++) {
        const remat_block_t *b = &g->kinds[kind].block;
        bool *hit = remat_i_xcalloc(b->ntensors + b->nops, sizeof *hit);
        remat_status_t st = residual_sources(b, hit, err);
        for (size_t i = 0; st == REMAT_OK && i < b->ntensors; i++) {
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
        if (st) {
            return st;
        }
    }
    return REMAT_OK;
}

/* (4) The bound's argument needs each buffer's class to follow its names:
   when two named tensors share one buffer (views) and one of them is kept
   only to re-run an op, saving more can turn the buffer from kept to
   offloaded and the bound fails. Such graphs are enumerated instead. */
static bool shared_buffers_in(const remat_block_t *b) {
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

static bool shared_buffers(const remat_graph_t *g) {
    for (size_t k = 0; k < g->nkinds; k++) {
        if (shared_buffers_in(&g->kinds[k].block)) {
            return true;
        }
    }
    return false;
}

/* (2) Results memoized by layer plan. What the search reads of an
   analysis: the public point, and whether the placement's offloaded bytes
   alone break the host's RAM (7). */
typedef struct eval {
    remat_point_t point;
    bool host_over;
    uint64_t order; /* the enumeration index of the placement point.first holds */
} eval_t;

/* (11) A (peak, step) pair of an analyzed plan. */
typedef struct pair {
    uint64_t peak;
    double step;
} pair_t;

typedef struct memo_entry {
    uint64_t hash;
    unsigned char *key; /* the plan's fates, nt bytes; NULL when empty */
    eval_t e;
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
    uint64_t plans;          /* layer plans made, bounded by max_plans */
    uint64_t max_plans;      /* REMAT_SOLVE_MAX_PLANS, or _QUICK_PLANS (REMAT_SOLVE_QUICK) */
    remat_place_t *cur, *tmp;
    unsigned char *key;      /* the plan's fates, as the memo key */
    remat_point_t best;      /* the incumbent, when found */
    remat_place_t *best_at;  /* its placement, n entries */
    bool found;
    bool checked;            /* the policy's names were checked (the first run): its
                                placements change between runs, never its names */
    remat_analyzer_t *an; /* bound on the first analysis */
    uint64_t usable;      /* the usable budget, from the first analysis */
    uint64_t tried, ruled; /* (9) forcing analyses run, and options they ruled out */
    pair_t *arch;          /* (11) the non-dominated pairs of the plans analyzed */
    size_t narch, arch_cap;
    uint64_t pareto_cap; /* (11) analyses past which the Pareto search gives up */
    bool gave_up;
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

static uint64_t mul_sat(uint64_t a, uint64_t b) {
    return a && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}

/* (7) A lower bound on the host bytes of every placement that offloads at
   least what this one does: each stage's offloaded residuals times the
   micro-batches it holds, the least over the stages (the host counts the
   worst stage, which may differ), plus the host-resident params and
   optimizer when there is one stage (with more, only the worst stage's
   are known, and 0 is a bound). Saturating: past 2^64 nothing fits. */
static bool host_over(const remat_result_t *r, const remat_hw_t *hw) {
    uint64_t least = UINT64_MAX;
    for (size_t k = 0; k < r->nstages; k++) {
        const remat_stage_row_t *w = &r->stages[k];
        uint64_t off = 0;
        for (size_t l = w->first_layer; l <= w->last_layer; l++) {
            off = off + r->layers[l].offloaded_bytes < off ? UINT64_MAX
                                                           : off + r->layers[l].offloaded_bytes;
        }
        off = mul_sat(off, w->in_flight);
        least = off < least ? off : least;
    }
    if (r->nstages == 1) {
        least = least + r->host_static_bytes < least ? UINT64_MAX : least + r->host_static_bytes;
    }
    return mul_sat(least, hw->devices_per_host) > r->host_ram_bytes;
}

/* The memo's slot for the plan in c->key (@p klen bytes): its entry, or
   the empty slot to fill. */
static size_t memo_slot(ctx_t *c, size_t klen, uint64_t h) {
    if (2 * (c->used + 1) > c->cap) {
        memo_grow(c);
    }
    size_t k = h & (c->cap - 1);
    while (c->memo[k].key &&
           !(c->memo[k].hash == h && memcmp(c->memo[k].key, c->key, klen) == 0)) {
        k = (k + 1) & (c->cap - 1);
    }
    return k;
}

/* An option's position in enumeration order: device, offload, remat. */
static int rank(remat_place_t p) {
    return p == REMAT_PLACE_DEVICE ? 0 : p == REMAT_PLACE_OFFLOAD ? 1 : 2;
}

/* The index of placement @p a in enumeration order: mixed radix, the first
   name (two options) the most significant digit. Below 2 x 3^39 < 2^64. */
_Static_assert(REMAT_SOLVE_MAX_NAMES <= 40, "an enumeration index fits a uint64_t");
static uint64_t order_of(const remat_place_t *a, size_t n) {
    uint64_t k = 0;
    for (size_t i = 0; i < n; i++) {
        k = k * (i == 0 ? 2 : 3) + (uint64_t)rank(a[i]);
    }
    return k;
}

/* (11) The archive's last pair with a peak of at most @p peak, or
   REMAT_NONE. Peaks ascend, so steps strictly descend: it is the fastest of
   those pairs. */
static size_t archive_below(const ctx_t *c, uint64_t peak) {
    size_t lo = 0, hi = c->narch;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->arch[mid].peak <= peak) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo ? lo - 1 : REMAT_NONE;
}

/* (11) Whether some analyzed plan strictly dominates every pair (p, t)
   with p >= @p peak and t >= @p step: a pair no greater in both, smaller
   in one. */
static bool archive_dominates(const ctx_t *c, uint64_t peak, double step) {
    size_t q = archive_below(c, peak);
    return q != REMAT_NONE &&
           (c->arch[q].step < step || (c->arch[q].step == step && c->arch[q].peak < peak));
}

/* (11) Adds an analyzed plan's pair, dropping the pairs it dominates or
   equals; a pair dominated or equalled by one already there is dropped. */
static void archive_add(ctx_t *c, uint64_t peak, double step) {
    size_t q = archive_below(c, peak);
    if (q != REMAT_NONE && c->arch[q].step <= step) {
        return;
    }
    /* from the first pair with a peak of at least this one's */
    size_t at = q == REMAT_NONE ? 0 : c->arch[q].peak == peak ? q : q + 1, end = at;
    while (end < c->narch && c->arch[end].step >= step) {
        end++; /* peak no smaller, step no smaller, one of them larger: dominated */
    }
    if (end == at && c->narch == c->arch_cap) {
        c->arch_cap = c->arch_cap ? 2 * c->arch_cap : 64;
        c->arch = remat_i_xrealloc(c->arch, c->arch_cap * sizeof *c->arch);
    }
    memmove(c->arch + at + 1, c->arch + end, (c->narch - end) * sizeof *c->arch);
    c->narch = c->narch + 1 - (end - at);
    c->arch[at] = (pair_t){peak, step};
    assert(at == 0 || (c->arch[at - 1].peak < peak && c->arch[at - 1].step > step));
    assert(at + 1 == c->narch || (c->arch[at + 1].peak > peak && c->arch[at + 1].step < step));
}

static remat_status_t evaluate(ctx_t *c, const remat_place_t *a, eval_t *out) {
    if (++c->plans > c->max_plans) {
        return remat_error_set(c->err, REMAT_E_GRAPH, c->g->source, NULL,
                               "the search over %zu checkpoint names (%llu placements) did "
                               "not finish within %llu layer plans; %s",
                               c->n, (unsigned long long)c->s->space,
                               (unsigned long long)c->max_plans,
                               c->max_plans < REMAT_SOLVE_MAX_PLANS
                                   ? "remat solve searches further"
                                   : "search fewer names");
    }
    for (size_t i = 0; i < c->n; i++) {
        c->policy->rules[i].place = a[i];
    }
    /* The memo's key: every kind's fates, the kinds in stack order. A
       uniform graph's one plan is handed to the analyzer as it is. */
    size_t klen = 0;
    remat_status_t st = REMAT_OK;
    for (size_t kind = c->g->nkinds; kind-- > 0 && st == REMAT_OK;) {
        st = remat_plan_layer(c->g, kind, c->policy, 0, &c->plan, c->err);
        for (size_t i = 0; st == REMAT_OK && i < c->plan.ntensors; i++) {
            c->key[klen++] = (unsigned char)c->plan.fate[i];
        }
    }
    if (st) {
        return st;
    }
    uint64_t h = fnv(c->key, klen);
    size_t k = memo_slot(c, klen, h);
    const uint64_t order = order_of(a, c->n);
    if (c->memo[k].key) {
        /* (11) the plan's placement is the first in enumeration order met */
        if (order < c->memo[k].e.order) {
            c->memo[k].e.point.first = save_assign(c, a);
            c->memo[k].e.order = order;
        }
        *out = c->memo[k].e;
        return REMAT_OK;
    }
    /* Bound only once a plan is made, so that a planning error is reported
       ahead of a binding one. The solver reads only the verdict and the
       times: no tables. */
    const remat_run_opts_t opts = {.plan = c->g->nkinds == 1 ? &c->plan : NULL,
                                   .lite = true,
                                   .policy_checked = c->checked};
    if ((!c->an && (st = remat_analyzer_new(c->g, c->cfg, c->hw, &c->an, c->err))) ||
        (st = remat_analyzer_run(c->an, c->policy, &opts, &c->r, c->err))) {
        return st;
    }
    c->checked = true;
    c->s->evaluated++;
    eval_t e = {{c->r.peak_bytes, c->r.step_seconds, remat_result_passes(&c->r),
                 save_assign(c, a), 0, c->r.fits_margin, c->r.host_fits},
                host_over(&c->r, c->hw), order};
    for (size_t sk = 0; sk < c->r.nstages; sk++) {
        uint64_t f = c->r.stages[sk].floor_bytes;
        e.point.floor_bytes = f > e.point.floor_bytes ? f : e.point.floor_bytes;
    }
    c->usable = c->r.usable_bytes;
    archive_add(c, e.point.peak_bytes, e.point.step_seconds);
    c->memo[k].hash = h;
    c->memo[k].key = remat_i_xmalloc(klen);
    memcpy(c->memo[k].key, c->key, klen);
    c->memo[k].e = e;
    c->used++;
    *out = e;
    return REMAT_OK;
}

/* Strictly better: faster, then lower peak. */
static bool better(const remat_point_t *a, const remat_point_t *b) {
    return a->step_seconds < b->step_seconds ||
           (a->step_seconds == b->step_seconds && a->peak_bytes < b->peak_bytes);
}

/* Whether placement @p a comes before @p b in enumeration order (the first
   name varies slowest). */
static bool earlier(const remat_place_t *a, const remat_place_t *b, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (a[i] != b[i]) {
            return rank(a[i]) < rank(b[i]);
        }
    }
    return false;
}

/* (8) Every placement analyzed is a candidate, wherever the search met it:
   the incumbent is the least feasible one by (step, peak, enumeration
   order), so the answer does not depend on the order of the search. */
static void consider(ctx_t *c, const remat_point_t *p, const remat_place_t *a) {
    if (p->feasible &&
        (!c->found || better(p, &c->best) ||
         (!better(&c->best, p) && earlier(a, c->best_at, c->n)))) {
        c->best = *p;
        memcpy(c->best_at, a, c->n * sizeof *a);
        c->found = true;
        assert(c->best.feasible);
    }
}

/* Options per name, in search order: HBM first (the bound's completion). */
static size_t options(size_t i, remat_place_t *o) {
    o[0] = REMAT_PLACE_DEVICE;
    o[1] = REMAT_PLACE_OFFLOAD;
    o[2] = REMAT_PLACE_REMAT;
    return i == 0 ? 2 : 3; /* the layer input is always kept somewhere */
}

/* Analyzes placement @p a and makes it a candidate. */
static remat_status_t visit(ctx_t *c, const remat_place_t *a, eval_t *out) {
    remat_status_t st = evaluate(c, a, out);
    if (st == REMAT_OK) {
        consider(c, &out->point, a);
    }
    return st;
}

/* A node of the search: the names decided (their placements in cur[]),
   and the placements that no feasible completion gives a name (9). */
typedef struct node {
    uint64_t decided;
    uint64_t no_device;
    uint64_t no_offload;
} node_t;

static uint64_t bit(size_t i) {
    return (uint64_t)1 << i;
}

/* The completion of the node that puts every undecided name in @p fill,
   except name @p j (when not REMAT_NONE), which gets @p place. */
static remat_status_t complete(ctx_t *c, const node_t *nd, remat_place_t fill, size_t j,
                               remat_place_t place, eval_t *out) {
    for (size_t k = 0; k < c->n; k++) {
        c->tmp[k] = nd->decided & bit(k) ? c->cur[k] : fill;
    }
    if (j != REMAT_NONE) {
        c->tmp[j] = place;
    }
    return visit(c, c->tmp, out);
}

/* The options of name @p j that a feasible completion of @p nd may give it. */
static size_t allowed(const node_t *nd, size_t j, remat_place_t *o) {
    remat_place_t all[3];
    size_t m = options(j, all), n = 0;
    for (size_t k = 0; k < m; k++) {
        if (!(all[k] == REMAT_PLACE_DEVICE && (nd->no_device & bit(j))) &&
            !(all[k] == REMAT_PLACE_OFFLOAD && (nd->no_offload & bit(j)))) {
            o[n++] = all[k];
        }
    }
    return n;
}

/* Forcing runs while at least one of its analyses in FORCE_TRIAL rules an
   option out (and for the first FORCE_TRIAL): on the built-in models one
   option ruled out removes a subtree of hundreds of placements, while on
   layers whose names weigh alike on the budget (a chain of equal tensors)
   it rules out nothing and would only add analyses. Either way the answer
   is the same. */
#define FORCE_TRIAL 64

/* (9) Rules options out of the undecided names. Keeping name j in HBM and
   offloading the other undecided names gives the least floor of every
   completion that keeps j in HBM: above the budget, none of them fits.
   Offloading j and keeping the others in HBM gives the least host bytes of
   every completion that offloads j: over the host's RAM, none fits (asked
   only when the all-offload completion breaks the host's RAM, the sign
   that host RAM binds). @p floor gets each name's first figure. */
static remat_status_t force(ctx_t *c, node_t *nd, bool host_binds, uint64_t *floor) {
    for (size_t j = 0; j < c->n; j++) {
        eval_t e;
        remat_status_t st;
        if (nd->decided & bit(j)) {
            continue;
        }
        if (!(nd->no_device & bit(j))) {
            if ((st = complete(c, nd, REMAT_PLACE_OFFLOAD, j, REMAT_PLACE_DEVICE, &e))) {
                return st;
            }
            floor[j] = e.point.floor_bytes;
            nd->no_device |= e.point.floor_bytes > c->usable ? bit(j) : 0;
            c->tried++;
            c->ruled += e.point.floor_bytes > c->usable;
        }
        if (host_binds && !(nd->no_offload & bit(j))) {
            if ((st = complete(c, nd, REMAT_PLACE_DEVICE, j, REMAT_PLACE_OFFLOAD, &e))) {
                return st;
            }
            nd->no_offload |= e.host_over ? bit(j) : 0;
            c->tried++;
            c->ruled += e.host_over;
        }
    }
    return REMAT_OK;
}

/* The name to branch on (REMAT_NONE when some name has no option left):
   the one with the most options ruled out, then the largest floor when
   kept in HBM (the name that weighs most on the budget), then the first.
   Which name is chosen changes the work, never the answer. */
static size_t pick(const ctx_t *c, const node_t *nd, const uint64_t *floor) {
    size_t best = REMAT_NONE;
    int best_out = -1;
    for (size_t j = 0; j < c->n; j++) {
        remat_place_t o[3];
        if (nd->decided & bit(j)) {
            continue;
        }
        if (allowed(nd, j, o) == 0) {
            return REMAT_NONE;
        }
        int out = ((nd->no_device & bit(j)) != 0) + ((nd->no_offload & bit(j)) != 0);
        if (out > best_out || (out == best_out && floor[j] > floor[best])) {
            best = j;
            best_out = out;
        }
    }
    return best;
}

/* Whether the subtree of @p nd, whose bound completion is @p up, can hold
   the answer; narrows @p nd's options and fills @p floor. */
static remat_status_t promising(ctx_t *c, node_t *nd, const eval_t *up, uint64_t *floor,
                                bool *keep) {
    *keep = false;
    if ((c->found && up->point.step_seconds > c->best.step_seconds) || up->host_over ||
        nd->decided == bit(c->n) - 1) {
        return REMAT_OK; /* (3) slower than the incumbent, (7) host RAM, or a leaf */
    }
    if (!up->point.feasible) {
        eval_t down;
        remat_status_t st = complete(c, nd, REMAT_PLACE_OFFLOAD, REMAT_NONE, 0, &down);
        if (st || down.point.floor_bytes > c->usable) {
            return st; /* (5) nothing fits */
        }
        /* (9) while it pays: it costs an analysis a name */
        const bool pays = c->tried < FORCE_TRIAL || c->ruled * FORCE_TRIAL >= c->tried;
        if (pays && (st = force(c, nd, down.host_over, floor))) {
            return st;
        }
    }
    *keep = true;
    return REMAT_OK;
}

/* A child of a node: its name's placement and its bound completion. */
typedef struct child {
    remat_place_t place;
    eval_t up;
} child_t;

/* Feasible bounds first, then the faster, then enumeration order: the
   first descent is a greedy dive that finds a good incumbent early. */
static bool child_before(const child_t *a, const child_t *b) {
    if (a->up.point.feasible != b->up.point.feasible) {
        return a->up.point.feasible;
    }
    if (a->up.point.step_seconds != b->up.point.step_seconds) {
        return a->up.point.step_seconds < b->up.point.step_seconds;
    }
    return rank(a->place) < rank(b->place);
}

/* (3) Branch and bound below @p nd, whose bound completion is @p up. */
static remat_status_t bnb(ctx_t *c, node_t nd, const eval_t *up) {
    c->s->visited++;
    uint64_t floor[64] = {0};
    bool keep;
    remat_status_t st = promising(c, &nd, up, floor, &keep);
    size_t i = keep ? pick(c, &nd, floor) : REMAT_NONE;
    if (st || i == REMAT_NONE) {
        return st;
    }
    assert(i < c->n && !(nd.decided & bit(i)));
    assert(((nd.decided | nd.no_device | nd.no_offload) >> c->n) == 0);
    remat_place_t o[3];
    child_t kid[3];
    size_t nk = allowed(&nd, i, o);
    for (size_t k = 0; k < nk; k++) {
        kid[k].place = c->cur[i] = o[k];
        node_t sub = {nd.decided | bit(i), nd.no_device, nd.no_offload};
        /* (10) keeping name i in HBM leaves the bound completion as it was */
        if (o[k] == REMAT_PLACE_DEVICE) {
            kid[k].up = *up;
        } else if ((st = complete(c, &sub, REMAT_PLACE_DEVICE, REMAT_NONE, 0, &kid[k].up))) {
            return st;
        }
        for (size_t m = k; m > 0 && child_before(&kid[m], &kid[m - 1]); m--) {
            child_t t = kid[m];
            kid[m] = kid[m - 1];
            kid[m - 1] = t;
        }
    }
    for (size_t k = 0; k < nk; k++) {
        c->cur[i] = kid[k].place;
        node_t sub = {nd.decided | bit(i), nd.no_device, nd.no_offload};
        if ((st = bnb(c, sub, &kid[k].up))) {
            return st;
        }
    }
    return REMAT_OK;
}

/* The start of the seed's sweep: the layer input in HBM (else offloaded)
   and every other name re-run, MaxText's `full`, which keeps least. In
   @p a, its analysis in @p e; *ok false when neither fits. */
static remat_status_t seed_start(ctx_t *c, remat_place_t *a, eval_t *e, bool *ok) {
    for (size_t k = 0; k < c->n; k++) {
        a[k] = k == 0 ? REMAT_PLACE_DEVICE : REMAT_PLACE_REMAT;
    }
    remat_status_t st = visit(c, a, e);
    if (st == REMAT_OK && !e->point.feasible) {
        a[0] = REMAT_PLACE_OFFLOAD;
        st = visit(c, a, e);
    }
    *ok = st == REMAT_OK && e->point.feasible;
    return st;
}

/* (8) An incumbent before the search: one upward sweep from `full`, trying
   each name in HBM, then offloaded, and keeping the first change that
   fits and is better. At most 2n analyses, which the search mostly meets
   again (memoized); with a good incumbent the time bound prunes from the
   first node. Every placement it analyzes is a candidate, so it cannot
   change the answer. */
static remat_status_t seed(ctx_t *c) {
    static const remat_place_t raise[2] = {REMAT_PLACE_DEVICE, REMAT_PLACE_OFFLOAD};
    remat_place_t *a = c->cur; /* scratch until the search starts */
    eval_t e;
    bool ok;
    remat_status_t st = seed_start(c, a, &e, &ok);
    for (size_t k = 0; ok && k < c->n; k++) {
        for (size_t u = 0; u < 2 && a[k] != raise[u]; u++) {
            memcpy(c->tmp, a, c->n * sizeof *a);
            c->tmp[k] = raise[u];
            eval_t f;
            if ((st = visit(c, c->tmp, &f))) {
                return st;
            }
            if (f.point.feasible && better(&f.point, &e.point)) {
                a[k] = raise[u];
                e = f;
                break;
            }
        }
    }
    return st;
}

/* Searches from the root (no name decided). Seeded first, unless keeping
   every name in HBM fits (that placement is then the fastest of all and
   the search only breaks ties) or nothing can fit (5). */
static remat_status_t search(ctx_t *c) {
    node_t root = {0, 0, 0};
    eval_t up, down;
    remat_status_t st = complete(c, &root, REMAT_PLACE_DEVICE, REMAT_NONE, 0, &up);
    if (st || up.point.feasible) {
        return st ? st : bnb(c, root, &up);
    }
    if ((st = complete(c, &root, REMAT_PLACE_OFFLOAD, REMAT_NONE, 0, &down)) ||
        down.point.floor_bytes > c->usable || (st = seed(c))) {
        return st;
    }
    return bnb(c, root, &up);
}

/* (11) The children's order: remat, offload, device. Any order gives the
   same frontier; this one measured fewest analyses on the built-in models
   (the lean children first find the low peaks that prune). */
static const remat_place_t pareto_kids[3] = {REMAT_PLACE_REMAT, REMAT_PLACE_OFFLOAD,
                                             REMAT_PLACE_DEVICE};

/* (11) Pareto branch and bound below the node deciding @p decided (the
   first @p depth names of @p seq): @p up keeps every undecided name in HBM,
   @p down offloads every one. A node is pruned when an analyzed plan
   strictly dominates (floor of @p down, step of @p up), a lower bound of
   every completion's (peak, step); so is a child, before its second bound,
   on its own bound completion's step and the parent's floor. */
static remat_status_t pareto(ctx_t *c, const size_t *seq, size_t depth, uint64_t decided,
                             const eval_t *up, const eval_t *down) {
    c->s->visited++;
    if (c->s->evaluated > c->pareto_cap) {
        c->gave_up = true; /* enumeration finishes (below) */
        return REMAT_OK;
    }
    if (depth == c->n || archive_dominates(c, down->point.floor_bytes, up->point.step_seconds)) {
        return REMAT_OK; /* a leaf (analyzed as its parent's bound), or dominated */
    }
    const size_t i = seq[depth];
    const node_t sub = {decided | bit(i), 0, 0};
    for (size_t k = 0; k < 3; k++) {
        const remat_place_t place = pareto_kids[k];
        if (i == 0 && place == REMAT_PLACE_REMAT) {
            continue; /* the layer input is always kept somewhere */
        }
        c->cur[i] = place;
        /* keeping name i in HBM keeps the bound completion, offloading it
           the lean one (10) */
        eval_t cup = *up, cdown = *down;
        remat_status_t st = REMAT_OK;
        if (place != REMAT_PLACE_DEVICE &&
            (st = complete(c, &sub, REMAT_PLACE_DEVICE, REMAT_NONE, 0, &cup))) {
            return st;
        }
        if (archive_dominates(c, down->point.floor_bytes, cup.point.step_seconds)) {
            continue;
        }
        if (place != REMAT_PLACE_OFFLOAD) {
            if (depth + 1 == c->n) {
                cdown = cup; /* a leaf: one placement */
            } else if ((st = complete(c, &sub, REMAT_PLACE_OFFLOAD, REMAT_NONE, 0, &cdown))) {
                return st;
            }
        }
        if ((st = pareto(c, seq, depth + 1, sub.decided, &cup, &cdown)) || c->gave_up) {
            return st;
        }
    }
    return REMAT_OK;
}

/* (11) The frontier's search, after the optimum's (the memo and the archive
   are shared). Names are decided heaviest first: by the floor of keeping
   the name alone in HBM and offloading the others (ties in the listed
   order), so that the names left undecided deep in the tree move the
   bounds little and the bounds are close to the completions' pairs. */
static remat_status_t pareto_search(ctx_t *c) {
    const node_t root = {0, 0, 0};
    size_t seq[64];
    uint64_t w[64];
    eval_t up, down, e;
    remat_status_t st = complete(c, &root, REMAT_PLACE_DEVICE, REMAT_NONE, 0, &up);
    if (st == REMAT_OK) {
        st = complete(c, &root, REMAT_PLACE_OFFLOAD, REMAT_NONE, 0, &down);
    }
    for (size_t i = 0; i < c->n && st == REMAT_OK; i++) {
        st = complete(c, &root, REMAT_PLACE_OFFLOAD, i, REMAT_PLACE_DEVICE, &e);
        w[i] = e.point.floor_bytes;
        size_t m = i;
        for (; m > 0 && w[seq[m - 1]] < w[i]; m--) {
            seq[m] = seq[m - 1]; /* insertion, stable */
        }
        seq[m] = i;
    }
    return st ? st : pareto(c, seq, 0, 0, &up, &down);
}

static remat_status_t exhaustive(ctx_t *c) {
    size_t digit[64] = {0};
    for (;;) {
        remat_place_t o[3];
        for (size_t i = 0; i < c->n; i++) {
            options(i, o);
            c->cur[i] = o[digit[i]];
        }
        eval_t e;
        remat_status_t st = visit(c, c->cur, &e);
        if (st) {
            return st;
        }
        c->s->visited++;
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

/* By peak, then step, then the enumeration order of the placements. */
static int eval_cmp(const void *pa, const void *pb) {
    const eval_t *a = pa, *b = pb;
    if (a->point.peak_bytes != b->point.peak_bytes) {
        return a->point.peak_bytes < b->point.peak_bytes ? -1 : 1;
    }
    if (a->point.step_seconds != b->point.step_seconds) {
        return a->point.step_seconds < b->point.step_seconds ? -1 : 1;
    }
    return a->order < b->order ? -1 : a->order > b->order;
}

/* Appends placement @p a as the choices of point @p p. */
static void copy_choices(const ctx_t *c, remat_solution_t *s, const remat_place_t *a,
                         remat_point_t *p) {
    s->choices = remat_i_xrealloc(s->choices, (s->nchoices + c->n) * sizeof *s->choices);
    for (size_t i = 0; i < c->n; i++) {
        remat_choice_t *ch = &s->choices[s->nchoices + i];
        snprintf(ch->name, sizeof ch->name, "%s", s->names[i]);
        ch->place = a[i];
    }
    p->first = s->nchoices;
    s->nchoices += c->n;
}

/* The Pareto frontier over every memoized plan (the enumeration's, or the
   Pareto search's, which holds every plan on it (11)), each point with the
   first placement in enumeration order that made it. */
static void frontier(const ctx_t *c, remat_solution_t *s) {
    eval_t *all = remat_i_xcalloc(c->used + 1, sizeof *all);
    size_t n = 0;
    for (size_t i = 0; i < c->cap; i++) {
        if (c->memo[i].key) {
            all[n++] = c->memo[i].e;
        }
    }
    qsort(all, n, sizeof *all, eval_cmp);
    s->points = remat_i_xcalloc(n + 1, sizeof *s->points);
    for (size_t i = 0; i < n; i++) {
        /* Non-dominated: faster than every point of lower or equal peak. */
        const remat_point_t *p = &all[i].point;
        if (s->npoints == 0 || p->step_seconds < s->points[s->npoints - 1].step_seconds) {
            s->points[s->npoints] = *p;
            copy_choices(c, s, c->assigns + p->first * c->n, &s->points[s->npoints]);
            s->npoints++;
        }
    }
    free(all);
}

static void ctx_release(ctx_t *c) {
    for (size_t i = 0; i < c->cap; i++) {
        free(c->memo[i].key);
    }
    free(c->memo);
    free(c->assigns);
    free(c->arch);
    free(c->cur);
    free(c->tmp);
    free(c->best_at);
    free(c->key);
    remat_plan_release(&c->plan);
    remat_result_release(&c->r);
    remat_analyzer_free(c->an);
    remat_policy_free(c->policy);
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
    const bool enumerate = (flags & REMAT_SOLVE_EXHAUSTIVE) || shared;
    if (enumerate && space > REMAT_SOLVE_MAX_PLANS) {
        return remat_error_set(err, REMAT_E_GRAPH, g->source, NULL,
                               "%zu checkpoint names make %llu placements, too many to "
                               "enumerate (at most %llu; %s)",
                               s->nnames, (unsigned long long)space,
                               (unsigned long long)REMAT_SOLVE_MAX_PLANS,
                               shared ? "this graph's views share buffers under different "
                                        "names, so every placement is enumerated"
                                      : "--exhaustive enumerates every placement");
    }
    ctx_t c = {.g = g, .cfg = cfg, .hw = hw, .s = s, .n = s->nnames, .err = err,
               .max_plans = (flags & REMAT_SOLVE_QUICK) ? QUICK_PLANS : REMAT_SOLVE_MAX_PLANS};
    c.policy = remat_i_xcalloc(1, sizeof *c.policy);
    c.policy->name = remat_i_xstrdup("solve");
    c.policy->description = remat_i_xstrdup("");
    c.policy->source = remat_i_xstrdup("<solve>");
    for (size_t i = 0; i < c.n; i++) {
        remat_policy_set(c.policy, s->names[i], REMAT_PLACE_DEVICE);
    }
    remat_plan_init(&c.plan);
    remat_result_init(&c.r);
    size_t keylen = 1;
    for (size_t k = 0; k < g->nkinds; k++) {
        keylen += g->kinds[k].block.ntensors;
    }
    c.key = remat_i_xcalloc(keylen, 1);
    c.cur = remat_i_xcalloc(c.n + 1, sizeof *c.cur);
    c.tmp = remat_i_xcalloc(c.n + 1, sizeof *c.tmp);
    c.best_at = remat_i_xcalloc(c.n + 1, sizeof *c.best_at);
    s->space = space;
    s->enumerated = enumerate;
    st = enumerate ? exhaustive(&c) : search(&c);
    if (st == REMAT_OK && !enumerate && (flags & REMAT_SOLVE_FRONTIER)) {
        /* (11) Where the bounds prune little (the floor far below the
           peaks, as where the head's transients make the peak), the search
           costs more than enumeration: past half the space it gives up and
           enumeration, whose memo hits cost a plan each, finishes (where
           enumeration is allowed (6); elsewhere the plan bound stops it). */
        c.pareto_cap = space > REMAT_SOLVE_MAX_PLANS ? UINT64_MAX : s->evaluated + space / 2;
        st = pareto_search(&c);
        s->pareto = !c.gave_up;
        s->enumerated = c.gave_up;
        if (st == REMAT_OK && c.gave_up) {
            st = exhaustive(&c);
        }
    }
    if (st == REMAT_OK && c.found) {
        s->found = true;
        s->best = c.best;
        copy_choices(&c, s, c.best_at, &s->best);
    }
    if (st == REMAT_OK && (flags & REMAT_SOLVE_FRONTIER)) {
        frontier(&c, s);
    }
    ctx_release(&c);
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
       for k >= 1, unit = pipeline micro-batches x batch shards / devices
       (accumulation repeats the micro-batch; it does not divide it). */
    remat_mesh_t mesh;
    remat_status_t st = remat_mesh_build(cfg, &mesh, err);
    if (st) {
        return st;
    }
    uint64_t micro = remat_mesh_microbatches(&mesh, cfg);
    uint64_t shards = remat_mesh_product(&mesh, remat_mesh_axes(&mesh, "activation_batch"));
    double unit = (double)(micro * shards) / (double)cfg->num_devices;
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
