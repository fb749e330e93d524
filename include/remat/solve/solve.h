/* SPDX-License-Identifier: MIT */
/*
 * remat/solve/solve.h: choosing the policy. Finds the placement (device, remat or
 * offload per checkpoint name) that minimizes the estimated step time
 * (docs/time-model.md) subject to peak HBM <= budget x (1 - margin) and host
 * RAM within the host's; lists the Pareto frontier of (peak HBM, step time);
 * finds the largest per_device_batch_size a placement fits; explains each
 * name's placement. Exact: branch and bound with a lower bound that is
 * proved valid in docs/solver.md, checked against exhaustive enumeration.
 */
#ifndef REMAT_SOLVE_H
#define REMAT_SOLVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "remat/input/config.h"
#include "remat/base/error.h"
#include "remat/model/graph.h"
#include "remat/model/hw.h"
#include "remat/model/policy.h"

typedef struct remat_choice {
    char name[REMAT_NAME_LEN];
    remat_place_t place;
} remat_choice_t;

/* One evaluated placement. */
typedef struct remat_point {
    uint64_t peak_bytes;
    double step_seconds;
    bool feasible;  /* fits the budget with the margin, and host RAM */
    size_t first;   /* index of its choices in remat_solution_t.choices */
    uint64_t floor_bytes; /* the largest stage floor (remat_stage_row_t.floor_bytes) */
    bool fits_budget;     /* the peak is within the budget with the margin (usable) */
    bool host_fits;       /* the offloaded bytes fit in the host's RAM */
} remat_point_t;

typedef struct remat_solution {
    size_t nnames;          /* names searched (relevant to the graph) */
    char (*names)[REMAT_NAME_LEN];
    bool found;             /* some placement is feasible */
    remat_point_t best;     /* the optimum, when found */
    size_t npoints;         /* frontier points (with --frontier), peak ascending */
    remat_point_t *points;
    size_t nchoices;        /* choices of best then of each point, nnames each */
    remat_choice_t *choices;
    uint64_t space;         /* placements in the search space */
    uint64_t evaluated;     /* analyses run (distinct layer plans) */
    uint64_t visited;       /* placements or subtrees looked at */
    bool enumerated;        /* searched every placement (asked, or names share buffers) */
    bool pareto;            /* the frontier came from the Pareto branch and bound (false
                               when enumerated, including when that search gave up) */
} remat_solution_t;

typedef enum remat_solve_flags {
    REMAT_SOLVE_EXHAUSTIVE = (1u << 0), /* enumerate every placement (for checking) */
    REMAT_SOLVE_FRONTIER = (1u << 1),   /* also list the Pareto frontier (Pareto branch
                                           and bound; enumerated with EXHAUSTIVE) */
    REMAT_SOLVE_QUICK = (1u << 2)       /* give up after REMAT_SOLVE_QUICK_PLANS layer
                                           plans instead of REMAT_SOLVE_MAX_PLANS */
} remat_solve_flags_t;

/** An empty solution in caller storage; remat_solution_release frees its tables. */
void remat_solution_init(remat_solution_t *s);
void remat_solution_release(remat_solution_t *s);

/**
 * Solves for @p cfg on @p g and @p hw. The names searched are the layer's
 * checkpoint names that can be read by backward (directly or to rebuild a
 * residual; igraph reachability), plus decoder_layer_input (device or
 * offload). Complexity: at worst one analysis per distinct layer plan of the
 * 3^names space; the bound prunes most of it.
 */
remat_status_t remat_solve(const remat_graph_t *g, const remat_config_t *cfg,
                           const remat_hw_t *hw, unsigned flags, remat_solution_t *out,
                           remat_error_t *err);

/** A new custom policy holding @p n choices (free with remat_policy_free). */
remat_policy_t *remat_solve_policy(const remat_choice_t *choices, size_t n, const char *name);

/* Why a name got its placement: what each other placement would give. */
typedef struct remat_alternative {
    remat_place_t place;
    uint64_t peak_bytes;
    double step_seconds;
    bool fits;      /* peak within budget x (1 - margin) */
    bool host_fits; /* offloaded bytes within host RAM */
} remat_alternative_t;

typedef struct remat_explain_row {
    char name[REMAT_NAME_LEN];
    remat_place_t place;
    size_t nalt;
    remat_alternative_t alt[2];
} remat_explain_row_t;

/**
 * For each name of the solution's best placement, re-analyzes the placement
 * with that one name changed to each other option. @p rows must hold
 * s->nnames entries.
 */
remat_status_t remat_solve_explain(const remat_graph_t *g, const remat_config_t *cfg,
                                   const remat_hw_t *hw, const remat_solution_t *s,
                                   remat_explain_row_t *rows, remat_error_t *err);

/**
 * The largest per_device_batch_size at which @p policy fits (binary search
 * over whole micro-batches: multiples of gradient_accumulation_steps x
 * pipeline micro-batches / num_devices). 0 when even the smallest does not.
 */
remat_status_t remat_largest_batch(const remat_graph_t *g, const remat_config_t *cfg,
                                   const remat_policy_t *policy, const remat_hw_t *hw,
                                   double *out, remat_error_t *err);

/* What would make a run pass: the fixes check and analyze end with when
   the verdict is not OK (remat_fixes_find). */
typedef struct remat_fix_batch {
    char policy[REMAT_STR_LEN]; /* a preset, or the run's own remat_policy */
    bool own;                   /* the run's own policy (its placements kept) */
    double batch;               /* the largest per_device_batch_size that passes; 0: none */
    uint64_t peak_bytes;        /* at that batch */
    double step_seconds;        /* at that batch */
} remat_fix_batch_t;

/* The slices remat_fixes_find tries go up to this many devices. */
#define REMAT_FIX_MAX_DEVICES ((uint64_t)1 << 16)

typedef struct remat_fixes {
    bool placement_found;        /* the solver found a placement that passes */
    char placement_note[256];    /* why the solver did not search ("": it did) */
    size_t nchoices;
    remat_choice_t *choices;     /* owned: the placement, as remat_policy=custom keys */
    uint64_t placement_peak_bytes;
    double placement_step_seconds;
    size_t nbatches;             /* the run's own policy and every preset */
    remat_fix_batch_t *batches;  /* owned: largest batch first (then the run's own
                                    policy, then sequences per second) */
    bool slice_found;            /* a slice of the run's chip up to
                                    REMAT_FIX_MAX_DEVICES devices passes */
    char topology[64];           /* the smallest one, as MaxText names it */
    uint64_t slice_devices, slice_chips, slice_peak_bytes;
    double slice_step_seconds;
    bool scan_tried;             /* the run's layers are unrolled (scan_layers false) */
    bool scan_found;             /* the run with scan_layers=true passes */
    char scan_note[256];         /* why the layers cannot be scanned, the analysis's own
                                    refusal ("": they can; gemma4_small runs unscanned) */
    uint64_t scan_peak_bytes;
    double scan_step_seconds;
} remat_fixes_t;

/** Empty fixes in caller storage; remat_fixes_release frees what they hold. */
void remat_fixes_init(remat_fixes_t *f);
void remat_fixes_release(remat_fixes_t *f);

/**
 * Finds what would make the run (@p cfg under @p policy on @p g and @p hw)
 * pass, each change alone: the solver's fastest placement, each policy's
 * largest batch, the smallest slice of the chip (doubling from one chip,
 * num_slices kept), and, for unrolled layers, the layers scanned. Every
 * fix found passes by analysis; a change that does not apply (a mesh that
 * does not divide a slice, a search too large) is left out. Releases @p out first; release it after.
 */
remat_status_t remat_fixes_find(const remat_graph_t *g, const remat_config_t *cfg,
                                const remat_policy_t *policy, const remat_hw_t *hw,
                                remat_fixes_t *out, remat_error_t *err);

#endif
