/* SPDX-License-Identifier: MIT */
/*
 * resolve.c: the config's names made into objects: the graph (a built-in
 * graph for the attention kind, or a file), the policy (a preset, "custom",
 * or a file) and the hardware profile.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remat/builtin.h"
#include "remat/sim.h"
#include "config_maxtext.h"
#include "util.h"

static bool ends_with_json(const char *s) {
    size_t n = strlen(s);
    return n > 5 && strcmp(s + n - 5, ".json") == 0;
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
        st = remat_policy_builtin(cfg->remat_policy, policy, err);
    }
    return st;
}

/* The graph's checkpoint name nearest @p name, else the nearest key. */
static const char *nearest_tag(const remat_graph_t *g, const char *name) {
    const char *best = NULL;
    size_t bestd = (size_t)-1;
    for (size_t i = 0; i < g->layer.ntensors; i++) {
        const remat_tensor_t *t = &g->layer.tensors[i];
        best = remat_i_nearest_word(name, (const char *const *)t->tags, t->ntags, best, &bestd);
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
        char name[REMAT_STR_LEN + 48];
        snprintf(name, sizeof name, "%s.%s%s", cfg->graph, cfg->attention,
                 dropout ? ".dropout" : "");
        const char *text = remat_builtin_find(REMAT_BUILTIN_GRAPH, name);
        if (!text) {
            char list[1024];
            remat_builtin_list(REMAT_BUILTIN_GRAPH, list, sizeof list);
            return remat_error_set(err, REMAT_E_CONFIG, NULL, NULL,
                                   "no built-in graph '%s' with attention=%s%s (built-in "
                                   "graph.attention[.dropout]: %s; or a graph .json file)",
                                   cfg->graph, cfg->attention,
                                   dropout ? " and dropout (dropout_rate > 0)" : "", list);
        }
        char source[REMAT_STR_LEN + 128];
        snprintf(source, sizeof source, "<builtin:graphs/%s.json>", name);
        st = remat_graph_load_string(text, source, graph, err);
    }
    if (st) {
        return st;
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
