/* SPDX-License-Identifier: MIT */
/*
 * test_builtin_graphs.c: the built-in graphs the build generated as C data
 * (src/input/builtin_graphs.h, tools/gen_graphs.c) are the graphs a load of their
 * JSON makes.
 *
 * For every built-in graph: the generated entry exists, the graph made from
 * it (remat_i_graph_from_static) equals a fresh remat_graph_load_string of
 * the embedded text field by field, every field of every struct, and shares
 * no string or array with the load or with the generated data; the graph
 * remat_resolve returns for the config that selects it is equal too. The
 * graph made from an entry is one allocation (one_block), its arrays
 * aligned; a load is not. A failed allocation while making one is a clean
 * REMAT_E_NOMEM (LeakSanitizer checks nothing is left in the sanitizer
 * build).
 *
 * The comparisons extend test_solve.c's (a copy of the cache against a
 * fresh parse) with the fields it leaves out. A field added to remat_graph_t
 * needs its line here.
 */
#include "remat/input/resolve.h"
#include "remat/input/graph_file.h"
#include "fixtures.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/builtin_data.h"
#include "input/builtin_graphs.h"
#include "remat/data/builtin.h"
#include "remat/input/config.h"
#include "base/util.h"

/* A fresh load of built-in graph @p name's embedded text, as the generator
   and the run time's fallback load it. */
static remat_graph_t *load_builtin(const char *name) {
    char source[REMAT_STR_LEN + 128];
    snprintf(source, sizeof source, REMAT_I_BUILTIN_GRAPH_SOURCE, name);
    remat_graph_t *g = NULL;
    remat_error_t err;
    remat_error_init(&err);
    assert_int_equal(remat_graph_load_string(remat_builtin_find(REMAT_BUILTIN_GRAPH, name), source,
                                             &g, &err),
                     REMAT_OK);
    assert_int_equal(g->one_block, 0);
    return g;
}

static remat_graph_t *from_static(const char *name) {
    const remat_i_static_graph_t *s = remat_i_static_graph_find(name);
    assert_non_null(s);
    remat_graph_t *g = NULL;
    remat_error_t err;
    remat_error_init(&err);
    assert_int_equal(remat_i_graph_from_static(s, &g, &err), REMAT_OK);
    assert_non_null(g);
    assert_true(g->one_block > sizeof *g);
    const size_t align = _Alignof(max_align_t);
    for (size_t k = 0; k < g->nkinds; k++) {
        const remat_block_t *kb = &g->kinds[k].block;
        assert_true((uintptr_t)kb->tensors % align == 0 && (uintptr_t)kb->ops % align == 0 &&
                    (uintptr_t)kb->order % align == 0 && (uintptr_t)kb->inputs % align == 0 &&
                    (uintptr_t)kb->outputs % align == 0);
    }
    assert_true((uintptr_t)g->dims % align == 0 && (uintptr_t)g->kinds % align == 0);
    /* its strings are its own, not the generated pool's */
    assert_true(g->name != remat_i_static_str(s->name));
    const remat_i_static_block_t *b = &remat_i_static_kinds[s->kinds].block;
    assert_true(g->kinds[0].block.tensors[0].name !=
                remat_i_static_str(remat_i_static_tensor_strs[b->tensors].name));
    return g;
}

/* One entry per built-in graph, in the table's order, and none for a name
   that is not one. */
static void test_every_builtin_graph_has_its_entry(void **state) {
    (void)state;
    size_t n = 0;
    for (size_t i = 0; i < remat_i_nbuiltins; i++) {
        if (remat_i_builtins[i].kind == REMAT_BUILTIN_GRAPH) {
            const remat_i_static_graph_t *s = remat_i_static_graph_find(remat_i_builtins[i].name);
            assert_non_null(s);
            assert_ptr_equal(s, &remat_i_static_graphs[n]);
            n++;
        }
    }
    assert_true(n > 0);
    assert_int_equal(n, remat_i_nstatic_graphs);
    assert_int_equal(n, remat_builtin_count(REMAT_BUILTIN_GRAPH));
    assert_null(remat_i_static_graph_find("minimal")); /* a policy */
    assert_null(remat_i_static_graph_find("llama"));
    assert_null(remat_i_static_graph_find(""));
}

static void test_static_graphs_equal_a_load(void **state) {
    (void)state;
    for (size_t i = 0; i < remat_builtin_count(REMAT_BUILTIN_GRAPH); i++) {
        const char *name = remat_builtin_name(REMAT_BUILTIN_GRAPH, i);
        remat_graph_t *fresh = load_builtin(name), *g = from_static(name);
        fx_graphs_equal(fresh, g);
        remat_graph_free(fresh);
        remat_graph_free(g);
    }
}

/* The config that selects built-in graph @p name
   (graph.attention[.indexer|.indexer_skipped][.dropout][.dense_moe][.mtp][.batchsplit|.ep],
   resolve.c). */
static void config_for(const char *name, remat_config_t *cfg) {
    remat_config_defaults(cfg);
    char parts[REMAT_STR_LEN];
    snprintf(parts, sizeof parts, "%s", name);
    char *save = NULL;
    snprintf(cfg->graph, sizeof cfg->graph, "%s", strtok_r(parts, ".", &save));
    snprintf(cfg->attention, sizeof cfg->attention, "%s", strtok_r(NULL, ".", &save));
    for (const char *p = strtok_r(NULL, ".", &save); p; p = strtok_r(NULL, ".", &save)) {
        if (strcmp(p, "dropout") == 0) {
            cfg->enable_dropout = true;
            cfg->dropout_rate = 0.1;
        } else if (strcmp(p, "dense_moe") == 0) {
            cfg->num_experts = 8;
            cfg->sparse_matmul = false;
        } else if (strcmp(p, "indexer") == 0 || strcmp(p, "indexer_skipped") == 0) {
            /* the indexer runs past indexer_topk keys (2048) only */
            cfg->use_indexer = true;
            cfg->max_target_length = strcmp(p, "indexer") == 0 ? 4096 : 2048;
        } else if (strcmp(p, "batchsplit") == 0) {
            cfg->use_batch_split_schedule = true;
            cfg->batch_split_factor = 2;
        } else if (strcmp(p, "ep") == 0) { /* the expert axis sharded */
            cfg->num_devices = 4;
            cfg->ici[REMAT_AXIS_EXPERT] = 4;
        } else {
            assert_string_equal(p, "mtp");
            cfg->mtp_num_layers = 1;
        }
    }
}

/* What remat_resolve returns for each built-in graph: equal to a load, and
   a copy of its own each time. */
static void test_resolve_returns_the_static_graphs(void **state) {
    (void)state;
    for (size_t i = 0; i < remat_builtin_count(REMAT_BUILTIN_GRAPH); i++) {
        const char *name = remat_builtin_name(REMAT_BUILTIN_GRAPH, i);
        remat_config_t cfg;
        config_for(name, &cfg);
        remat_graph_t *fresh = load_builtin(name), *g[2] = {NULL, NULL};
        for (size_t k = 0; k < 2; k++) {
            remat_policy_t *p = NULL;
            remat_hw_t hw;
            remat_error_t err;
            remat_error_init(&err);
            assert_int_equal(remat_resolve(&cfg, &g[k], &p, &hw, &err), REMAT_OK);
            fx_graphs_equal(fresh, g[k]);
            remat_policy_free(p);
        }
        fx_graphs_equal(g[0], g[1]);
        remat_graph_free(fresh);
        remat_graph_free(g[0]);
        remat_graph_free(g[1]);
    }
}

/* Making a graph from its entry allocates three times (the carved block,
   its index, the block with the index at its end), each failed is a clean
   REMAT_E_NOMEM, no graph, and the next try succeeds. The smallest uniform graph and the largest mixed stack (with a
   head both). */
static void test_from_static_allocation_failures(void **state) {
    (void)state;
    static const char *const names[] = {"llama.flash", "deepseek.flash.mtp"};
    static remat_graph_t not_made;
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        const remat_i_static_graph_t *s = remat_i_static_graph_find(names[k]);
        assert_non_null(s);
        remat_graph_t *g = NULL;
        remat_error_t err;
        remat_error_init(&err);
        remat_i_alloc_fail_at(0);
        assert_int_equal(remat_i_graph_from_static(s, &g, &err), REMAT_OK);
        const uint64_t count = remat_i_alloc_count();
        remat_graph_free(g);
        assert_int_equal(count, 3);
        for (uint64_t i = 1; i <= count; i++) {
            remat_error_init(&err);
            remat_i_alloc_fail_at(i);
            g = &not_made; /* overwritten with NULL */
            assert_int_equal(remat_i_graph_from_static(s, &g, &err), REMAT_E_NOMEM);
            assert_null(g);
            assert_int_equal(err.code, REMAT_E_NOMEM);
        }
        remat_i_alloc_fail_at(0);
        assert_int_equal(remat_i_graph_from_static(s, &g, &err), REMAT_OK);
        remat_graph_free(g);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_builtin_graph_has_its_entry),
        cmocka_unit_test(test_static_graphs_equal_a_load),
        cmocka_unit_test(test_resolve_returns_the_static_graphs),
        cmocka_unit_test(test_from_static_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
