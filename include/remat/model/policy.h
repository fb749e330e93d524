/* SPDX-License-Identifier: MIT */
/*
 * remat/model/policy.h: remat policies (MaxText's remat_policy) and their plan on a
 * graph. A policy maps checkpoint names to a placement; planning applies
 * JAX's residual rule (DESIGN §3) to decide, per tensor of one layer, what is
 * kept in HBM, offloaded, recomputed, or dropped because nothing reads it.
 */
#ifndef REMAT_POLICY_H
#define REMAT_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "remat/base/error.h"
#include "remat/base/limits.h"
#include "remat/model/graph.h"

typedef enum remat_place {
    REMAT_PLACE_REMAT = 0, /* dropped after forward, recomputed in backward */
    REMAT_PLACE_DEVICE,    /* kept in HBM until backward reads it */
    REMAT_PLACE_OFFLOAD    /* copied to host memory, fetched back for backward */
} remat_place_t;

typedef enum remat_predicate {
    REMAT_PRED_NONE = 0,
    REMAT_PRED_DOTS_NO_BATCH /* every einsum output without batch dims */
} remat_predicate_t;


typedef struct remat_policy_rule {
    char name[REMAT_NAME_LEN];
    remat_place_t place;
} remat_policy_rule_t;

typedef struct remat_policy_range {
    size_t first, last; /* inclusive layer indices */
    size_t nrules;
    remat_policy_rule_t *rules;
} remat_policy_range_t;

typedef struct remat_policy {
    char *name;
    char *description;
    char *source;
    bool preset;                 /* built-in: may name tensors a graph lacks */
    /* MaxText's `none`. It asks nothing and plans as `full`: MaxText's
       config reads "none" as null (pyconfig), and its decoder checkpoints
       every layer, scanned or not, with that null policy, under which JAX
       keeps only the layer's inputs. Kept for the note that says so. */
    bool none_policy;
    remat_place_t fallback;      /* tensors no name or predicate places ("default") */
    remat_predicate_t predicate; /* JAX predicate policies */
    remat_place_t predicate_place;
    size_t nrules;
    remat_policy_rule_t *rules;
    size_t nranges;
    remat_policy_range_t *ranges;
} remat_policy_t;

/** Parses a policy (format "remat-policy/1"). New policy in *out. */
remat_status_t remat_policy_load_string(const char *text, const char *source, bool preset,
                                        remat_policy_t **out, remat_error_t *err);

/** Loads a built-in preset by name ("minimal"); error lists the presets. */
remat_status_t remat_policy_builtin(const char *name, remat_policy_t **out, remat_error_t *err);

/** Frees a policy. NULL is a no-op. */
void remat_policy_free(remat_policy_t *p);

/** Sets (or replaces) the placement of checkpoint @p name. */
void remat_policy_set(remat_policy_t *p, const char *name, remat_place_t place);

/**
 * The placement @p p gives checkpoint @p name at @p layer (ranges first,
 * then names). False when the policy does not name it.
 */
bool remat_policy_lookup(const remat_policy_t *p, const char *name, size_t layer,
                         remat_place_t *out);

/* Where a kind that saves its own residuals (own_residuals) places a
   tensor of `kept` @p kept (REMAT_KEPT_*): none re-runs it. */
remat_place_t remat_kept_place(unsigned char kept);

/** Parses "remat" | "device" | "offload". */
bool remat_place_parse(const char *s, remat_place_t *out);
const char *remat_place_name(remat_place_t p);

/** MaxText's checkpoint names (the custom-policy keys of configs/types.py at
    e591f30), in MaxText's order; @p i past the end gives NULL. */
const char *remat_policy_maxtext_name(size_t i);

/** Whether @p name is one of MaxText's checkpoint names. */
bool remat_policy_is_maxtext_name(const char *name);

/** Whether @p name places something in graph @p g: one of its layer's
    checkpoint names, or decoder_layer_input. */
bool remat_policy_graph_knows(const remat_graph_t *g, const char *name);

/**
 * Checks that every name the policy places is a checkpoint of @p g or one of
 * MaxText's names (MaxText ignores a name its model does not tag; reports
 * note it). Skipped for presets, which list names of other model families as
 * MaxText's do. The error lists the graph's names.
 */
remat_status_t remat_policy_check(const remat_policy_t *p, const remat_graph_t *g,
                                  remat_error_t *err);

/** What happens to one layer tensor under a plan. */
typedef enum remat_fate {
    REMAT_FATE_PARAM,     /* a weight: static memory */
    REMAT_FATE_TRANSIENT, /* not read by backward: freed after its last forward use */
    REMAT_FATE_DEVICE,    /* residual kept in HBM */
    REMAT_FATE_OFFLOAD,   /* residual copied to host and fetched back */
    REMAT_FATE_RECOMPUTE  /* residual rebuilt by re-running its producer */
} remat_fate_t;

const char *remat_fate_name(remat_fate_t f);

/**
 * A plan of one layer under a policy: per tensor, the placement asked and the
 * fate that JAX's residual rule gives it; per op, whether it is re-run.
 * Caller-owned storage: remat_plan_init / remat_plan_release.
 */
typedef struct remat_plan {
    size_t ntensors, nops;
    remat_place_t *asked;  /* placement the policy asks for each tensor */
    remat_fate_t *fate;    /* what happens to it */
    bool *unused;          /* a saveable placement on a tensor backward never reads */
    bool *needed;          /* read in backward (directly or by recompute) */
    bool *recompute_op;    /* op re-run in backward (a dropout also to regenerate its mask) */
    size_t *stack;         /* private: scratch of the reachability walk (ntensors + nops) */
} remat_plan_t;

/** An empty plan in caller storage; remat_plan_release frees what it then holds. */
void remat_plan_init(remat_plan_t *plan);
void remat_plan_release(remat_plan_t *plan);
/** Makes @p dst (initialized or released; the caller releases it) a copy of @p src. */
void remat_plan_copy(remat_plan_t *dst, const remat_plan_t *src);

/**
 * Plans layer @p layer of @p g, which runs layer kind @p kind (its block),
 * under @p p (`none` plans as `full`, as MaxText runs it).
 * Complexity: O(tensors + ops + edges) for the walk, plus the placement's
 * name lookups; the walk visits each tensor and op at most once.
 */
remat_status_t remat_plan_layer(const remat_graph_t *g, size_t kind, const remat_policy_t *p,
                                size_t layer, remat_plan_t *plan, remat_error_t *err);

/** Whether two plans place every tensor the same way (layers can share a profile). */
bool remat_plan_equal(const remat_plan_t *a, const remat_plan_t *b);

#endif
