/* SPDX-License-Identifier: MIT */
/*
 * analyze.c: the simulator's orchestrator (DESIGN §3; docs/memory-model.md
 * has the long form). An analyzer binds a (graph, config, hardware) once;
 * each run plans a policy, profiles its distinct layer plans, composes the
 * step stage by stage, times it and gives the verdict.
 *
 * Invariants:
 *  - a run depends only on the analyzer and the policy: the analyzer's
 *    scratch is reset by each room before it is read, so runs in any order
 *    give the results a fresh analyzer would;
 *  - a failed run leaves the result released (all zero), never half filled;
 *  - errors surface in pipeline order: policy names, mesh, dims and
 *    binding, params, then plans, tables, stages, time and host RAM.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "input/config_internal.h"
#include "model/policy_internal.h"
#include "sim/sim_rooms.h"
#include "base/util.h"

static const char *const cat_names[REMAT_CAT_COUNT] = {
    "params",    "optimizer", "grads",   "grad_accum", "saved_activations", "activations",
    "recompute", "fetched",   "act_grads", "head",     "reserve", "gathered_weights",
    "weight_grad_buffer", "context_kv_gather", "pipeline_inflight",
    "scan_weights"};

const char *remat_cat_name(remat_cat_t c) {
    return c < REMAT_CAT_COUNT ? cat_names[c] : "?";
}

/* The analyzer's arrays, in one allocation: each kind's bound slab, the
   head's, binding's shapes and names, the scratch (for the largest
   block), the kinds' preparation, kind_of, the runs, the head's memo
   (step.c, stage_begin) and prefetches (head_pf), then each kind's
   planning scratch (remat_i_plan_in), each part from
   a 16-byte boundary. Their sizes follow from the graph and the layer
   count alone, so the arena is made before binding. The counts are a
   graph's and a config's layer count (at most REMAT_MAX_LAYERS): no
   overflow. */
#define ARENA_UP(x) remat_i_round_up((x), 16)

static void analyzer_arena(remat_analyzer_t *an, size_t nlayers) {
    const remat_graph_t *g = an->g;
    size_t nt = g->has_head ? g->head.ntensors : 0, no = g->has_head ? g->head.nops : 0;
    size_t at[REMAT_MAX_KINDS + 1], plan_at[REMAT_MAX_KINDS], size = 0, plans = 0;
    for (size_t k = 0; k < g->nkinds + g->has_head; k++) {
        const remat_block_t *b = remat_i_block_at(g, k);
        at[k] = size;
        size += ARENA_UP(remat_i_bound_bytes(b));
        nt = b->ntensors > nt ? b->ntensors : nt;
        no = b->nops > no ? b->nops : no;
        if (k < g->nkinds) {
            plan_at[k] = plans;
            plans += ARENA_UP(remat_i_plan_bytes(b->ntensors, b->nops));
        }
    }
    const size_t binding = size, scratch = binding + ARENA_UP(remat_i_bind_bytes(g));
    const size_t prep = scratch + ARENA_UP(remat_i_scratch_bytes(nt, no));
    const size_t kinds = prep + ARENA_UP(remat_i_prep_bytes(g));
    const size_t runs = kinds + ARENA_UP(nlayers ? nlayers : 1);
    const size_t memo = runs + ARENA_UP((nlayers ? nlayers : 1) * sizeof *an->runs);
    const size_t hn = g->has_head ? g->head.ntensors : 0;
    const size_t pf = memo + ARENA_UP(hn * (sizeof(uint64_t) + 2));
    const size_t plan = pf + ARENA_UP((g->has_head ? g->head.nops : 0) * sizeof(uint64_t));
    char *arena = remat_i_xmalloc(plan + plans);
    an->arena = arena;
    for (size_t k = 0; k < g->nkinds + g->has_head; k++) {
        (k < g->nkinds ? &an->kb[k] : &an->hb)->slab = arena + at[k];
    }
    an->bind_mem = arena + binding;
    remat_i_scratch_init(&an->s, nt, no, arena + scratch);
    an->s.prep = (void *)(arena + prep); /* remat_i_layer_prepare fills it, once bound */
    an->kind_of = (unsigned char *)(arena + kinds);
    an->runs = (layer_run_t *)(void *)(arena + runs); /* at most a run a layer */
    an->pre_memo.cur = (uint64_t *)(void *)(arena + memo);
    an->pre_memo.live = (unsigned char *)(an->pre_memo.cur + hn);
    an->pre_memo.cat = an->pre_memo.live + hn;
    an->head_pf = (uint64_t *)(void *)(arena + pf);
    for (size_t k = 0; k < g->nkinds; k++) {
        const remat_block_t *b = &g->kinds[k].block;
        remat_i_plan_in(&an->kplan[k], arena + plan + plan_at[k], b->ntensors, b->nops);
    }
}

/* Binds into @p an, which the caller zeroed (analyzer_zero); on error it
   still needs analyzer_release. The public remat_analyze keeps its
   analyzer on the stack: one allocation less per analysis. */
static remat_status_t analyzer_init(remat_analyzer_t *an, const remat_graph_t *g,
                                    const remat_config_t *cfg, const remat_hw_t *hw,
                                    remat_error_t *err) {
    an->g = g;
    an->cfg = cfg;
    an->hw = hw;
    an->reserve_fraction = cfg->reserve_fraction_set ? cfg->reserve_fraction
                                                     : hw->reserve_fraction;
    if (!g->index) { /* a graph the library did not make (graph.h) */
        return remat_error_set(err, REMAT_E_GRAPH, g->source, NULL,
                               "the graph has no index: make graphs with remat_graph_load_string, "
                               "remat_graph_load_file or remat_resolve");
    }
    /* the arena is sized by the layer count: a config struct filled by
       hand, not by remat_config_build, may pass the limit */
    remat_status_t st = remat_i_config_check_layers(cfg, err);
    if (st) {
        return st;
    }
    analyzer_arena(an, (size_t)cfg->base_num_decoder_layers);
    if ((st = remat_mesh_build(cfg, &an->mesh, err))) {
        return st;
    }
    /* the expert-parallel path's sorts around its all-to-alls are copies
       MaxText makes only with the expert axis sharded (graph-format.md) */
    if (g->expert_parallel && an->mesh.shards[REMAT_AXIS_EXPERT] <= 1) {
        return remat_error_set(err, REMAT_E_CONFIG, g->source, NULL,
                               "graph '%s' is MaxText's expert-parallel MoE path, but the expert "
                               "mesh axis has 1 shard (set ici_expert_parallelism or "
                               "dcn_expert_parallelism above 1, or use the graph without it)",
                               g->name);
    }
    if ((st = remat_i_bind(an, err))) {
        return st;
    }
    for (size_t k = 0; k < g->nkinds; k++) {
        const remat_block_t *b = &g->kinds[k].block;
        remat_i_op_times(b, cfg, hw, b->nops, &an->kb[k]);
    }
    if (g->has_head) {
        remat_i_op_times(&g->head, cfg, hw, g->head_npre, &an->hb);
    }
    if ((st = remat_i_static_parts(an, err))) {
        return st;
    }
    remat_i_layer_prepare(an); /* once here, for every run of the analyzer */
    remat_i_step_prepare(an);
    return REMAT_OK;
}

/* A fresh analyzer's state: all zero but the bound blocks and the mesh,
   which binding writes whole before reading (the struct's last members;
   most of its bytes). */
static void analyzer_zero(remat_analyzer_t *an) {
    memset(an, 0, offsetof(remat_analyzer_t, kb));
}

static void analyzer_release(remat_analyzer_t *an) {
    free(an->arena);
    free(an->tpls);
}

void remat_analyzer_free(remat_analyzer_t *an) {
    if (an) {
        analyzer_release(an);
        free(an);
    }
}

remat_status_t remat_analyzer_new(const remat_graph_t *g, const remat_config_t *cfg,
                                  const remat_hw_t *hw, remat_analyzer_t **out,
                                  remat_error_t *err) {
    remat_analyzer_t *an = remat_i_xmalloc(sizeof *an);
    analyzer_zero(an);
    remat_status_t st = analyzer_init(an, g, cfg, hw, err);
    if (st) {
        remat_analyzer_free(an);
        an = NULL;
    }
    *out = an;
    return st;
}

/* An emptied result (its memory kept for the tables) that names its inputs
   and holds what binding found. */
static void result_begin(const remat_analyzer_t *an, const remat_policy_t *policy,
                         remat_result_t *r) {
    remat_i_result_reuse(r);
    r->graph = an->g;
    r->policy = policy;
    r->config = an->cfg;
    r->hw = an->hw;
    r->none_as_full = policy->none_policy;
    r->mesh.devices = an->mesh.devices;
    memcpy(r->mesh.shards, an->mesh.shards, sizeof r->mesh.shards);
    memcpy(r->dim_size, an->dim_size, sizeof r->dim_size);
    r->microbatches = an->microbatches;
    r->pipeline_repeats = an->repeats;
    r->pipeline_iterations = an->microbatches * an->repeats + an->bubble; /* < 2^63: L, M bound */
    r->param_count = an->param_count;
    r->active_param_count = an->active_param_count;
}

/* The rooms in pipeline order, into @p r begun by result_begin. */
static remat_status_t run_rooms(remat_analyzer_t *an, const remat_policy_t *policy,
                                const remat_run_opts_t *opts, remat_result_t *r,
                                remat_error_t *err) {
    remat_status_t st;
    if ((!opts->policy_checked && (st = remat_policy_check(policy, an->g, err))) ||
        (st = remat_i_plan_profiles(an, policy, opts->plan, r, err)) ||
        (st = remat_i_profile_layers(an, policy, opts->lite, r, err))) {
        remat_result_release(r);
        return st;
    }
    remat_i_layer_rows(an, r);
    if ((st = remat_i_run_stages(an, r, err)) || (st = remat_i_step_time(an, r, err)) ||
        (st = remat_i_verdict(an, r, err))) {
        remat_result_release(r);
    }
    return st;
}

remat_status_t remat_analyzer_run(remat_analyzer_t *an, const remat_policy_t *policy,
                                  const remat_run_opts_t *opts, remat_result_t *r,
                                  remat_error_t *err) {
    const remat_run_opts_t full = {0};
    opts = opts ? opts : &full;
    result_begin(an, policy, r);
    an->trace = opts->trace; /* read by the layer and step rooms, for this run only */
    remat_status_t st = run_rooms(an, policy, opts, r, err);
    an->trace = NULL;
    return st;
}

remat_status_t remat_analyze(const remat_graph_t *g, const remat_config_t *cfg,
                             const remat_policy_t *policy, const remat_hw_t *hw,
                             remat_result_t *r, remat_error_t *err) {
    remat_i_result_reuse(r);
    /* The policy's names first: an unknown name is reported ahead of any
       error in the config. */
    remat_status_t st = remat_policy_check(policy, g, err);
    if (st) {
        remat_result_release(r);
        return st;
    }
    remat_analyzer_t an;
    analyzer_zero(&an);
    if ((st = analyzer_init(&an, g, cfg, hw, err)) == REMAT_OK) {
        const remat_run_opts_t checked = {.policy_checked = true};
        st = remat_analyzer_run(&an, policy, &checked, r, err);
    } else {
        remat_result_release(r); /* a failed analysis leaves it released */
    }
    analyzer_release(&an);
    return st;
}
