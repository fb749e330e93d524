/* SPDX-License-Identifier: MIT */
/*
 * test_alloc_fail.c: allocation failures in the loaders are clean errors.
 *
 * For each loader and input, a first load counts the allocations a
 * successful load makes (remat's and, routed through remat's allocators
 * below, jansson's); then, for i = 1..count, allocation i is made to fail
 * (util.h's injection hook) and the load must:
 *  - return REMAT_E_NOMEM with a one-line "out of memory" message naming
 *    its source;
 *  - leave its output NULL (graph, policy) or zeroed (hardware);
 *  - free everything it allocated: LeakSanitizer checks at exit in the
 *    sanitizer build, and ASan any use of a half-built object;
 *  - not abort: an aborting allocator left on a loader's path takes the
 *    injected failure and kills the test;
 * and the same load with the hook off must succeed again.
 *
 * Invariants of the harness: jansson allocates only through jmalloc and
 * jfree (installed before any JSON is made), so the count of a load is the
 * same in every run up to the injected allocation; allocations that jansson
 * 2.14 cannot survive failing are found by the counting run and left alone
 * (see jfree). To keep the runtime down (about 3 s under ASan), one
 * built-in graph (llama.flash) has every allocation failed, the others
 * every 7th, at most MAX_POINTS of them spread over the load (a failed load
 * costs the allocations before its failure, so a graph's time grows with
 * the square of its allocations: the vision graphs write out 27 to 34
 * encoder blocks, and the loader's paths are the same in every block), and
 * a built-in graph is reloaded after every 8th failure; the other inputs
 * have every allocation failed and are reloaded after each.
 */
#include "remat/input/graph_file.h"
#include "fixtures.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "remat/data/builtin.h"
#include "data/builtin_cache.h"
#include "base/util.h"

/* ---- jansson through the hook ------------------------------------------ */

/* Each jansson block carries its size in a header, so that jfree knows what
   it releases; 16 bytes keep malloc's alignment. */
#define HDR 16

/* The counting run's trace: the last jansson allocation (its index in the
   hook's count and its size), and the indices not to fail. */
static bool tracing;
static uint64_t last_index;
static size_t last_size;
static uint64_t *unsafe;
static size_t nunsafe, unsafe_cap;

static void *jmalloc(size_t n) {
    char *p = remat_i_try_malloc(n + HDR, NULL);
    if (!p) {
        return NULL;
    }
    memcpy(p, &n, sizeof n);
    if (tracing) {
        last_index = remat_i_alloc_count();
        last_size = n;
    }
    return p + HDR;
}

/* jansson grows a buffer by allocating one twice the size, copying and
   freeing the old one at once. For its lexer's token buffer it ignores a
   failed growth (lex_save drops strbuffer_append_byte's result): the token
   loses a character, and when that is the closing quote the string scan
   reads and writes past the buffer (a crash, found by this test). So an
   allocation followed, with no allocation between, by the free of a block
   of half its size is not failed. That also spares jansson's hash table and
   array growth, which are safe: a few allocations fewer under test. */
static void jfree(void *q) {
    if (!q) {
        return;
    }
    char *p = (char *)q - HDR;
    size_t n;
    memcpy(&n, p, sizeof n);
    if (tracing && last_index == remat_i_alloc_count() && last_size == 2 * n && n > 0) {
        if (nunsafe == unsafe_cap) {
            unsafe_cap = unsafe_cap ? 2 * unsafe_cap : 64;
            unsafe = realloc(unsafe, unsafe_cap * sizeof *unsafe);
            assert_non_null(unsafe);
        }
        unsafe[nunsafe++] = last_index;
        last_index = 0;
    }
    free(p);
}

static bool is_unsafe(uint64_t i) {
    for (size_t k = 0; k < nunsafe; k++) {
        if (unsafe[k] == i) {
            return true;
        }
    }
    return false;
}

/* ---- the driver --------------------------------------------------------- */

/* One load of one input: frees what it made on success, checks its output
   is NULL or zeroed on failure, and returns the status. */
typedef remat_status_t (*load_fn)(const void *arg, remat_error_t *err);

/* What the injections came to, for the summary line. */
static uint64_t total_allocs, total_injected, total_skipped;

static void check_nomem(const char *what, uint64_t i, uint64_t count, remat_status_t st,
                        const remat_error_t *err) {
    char line[2048];
    remat_error_format(err, line, sizeof line);
    if (st != REMAT_E_NOMEM || err->code != REMAT_E_NOMEM) {
        fail_msg("%s: allocation %llu of %llu failed: got %s (%s), expected nomem", what,
                 (unsigned long long)i, (unsigned long long)count, remat_status_name(st), line);
    }
    if (!strstr(err->text, "out of memory") || strchr(line, '\n') || !err->source[0]) {
        fail_msg("%s: allocation %llu: not one line naming its source and out of memory: '%s'",
                 what, (unsigned long long)i, line);
    }
}

/* The most failures a built-in graph other than llama.flash has injected. */
enum { MAX_POINTS = 1000 };

/* Counts the allocations of a good load of @p arg, then fails every
   @p stride-th of them in turn (1: each), or every (count / @p points)-th
   where that is wider (@p points 0: no cap); after every @p recheck-th
   failure, the load must succeed again with the hook off. */
static void inject_each(const char *what, load_fn load, const void *arg, uint64_t stride,
                        uint64_t recheck, uint64_t points) {
    remat_error_t err;
    remat_error_init(&err);
    nunsafe = 0;
    tracing = true;
    remat_i_alloc_fail_at(0);
    remat_status_t st = load(arg, &err);
    const uint64_t count = remat_i_alloc_count();
    tracing = false;
    if (st != REMAT_OK) {
        char line[2048];
        remat_error_format(&err, line, sizeof line);
        fail_msg("%s: does not load: %s", what, line);
    }
    const uint64_t injected_before = total_injected, skipped_before = total_skipped;
    total_allocs += count;
    if (points && count / points > stride) {
        stride = count / points;
    }
    for (uint64_t i = 1; i <= count; i += stride) {
        if (is_unsafe(i)) {
            total_skipped++;
            continue;
        }
        remat_error_init(&err);
        remat_i_alloc_fail_at(i);
        st = load(arg, &err);
        const uint64_t reached = remat_i_alloc_count();
        remat_i_alloc_fail_at(0);
        if (reached < i) {
            fail_msg("%s: made %llu allocations, not the %llu counted", what,
                     (unsigned long long)reached, (unsigned long long)count);
        }
        check_nomem(what, i, count, st, &err);
        total_injected++;
        /* Nothing global was left behind (igraph's handlers, the hook): with
           the hook off, the load succeeds again. */
        remat_error_init(&err);
        if (total_injected % recheck == 0 && load(arg, &err) != REMAT_OK) {
            fail_msg("%s: does not load after allocation %llu failed: %s", what,
                     (unsigned long long)i, err.text);
        }
    }
    printf("[ alloc ] %s: %llu allocations, %llu failed in turn, %llu left alone\n", what,
           (unsigned long long)count, (unsigned long long)(total_injected - injected_before),
           (unsigned long long)(total_skipped - skipped_before));
}

/* ---- the loaders -------------------------------------------------------- */

static remat_status_t graph_text(const void *arg, remat_error_t *err) {
    remat_graph_t *g = (remat_graph_t *)&g; /* the loader must clear it */
    remat_status_t st = remat_graph_load_string(arg, "<test>", &g, err);
    if (st) {
        assert_null(g);
    }
    remat_graph_free(g);
    return st;
}

static remat_status_t graph_file(const void *arg, remat_error_t *err) {
    remat_graph_t *g = (remat_graph_t *)&g;
    remat_status_t st = remat_graph_load_file(arg, &g, err);
    if (st) {
        assert_null(g);
    }
    remat_graph_free(g);
    return st;
}

static remat_status_t policy_text(const void *arg, remat_error_t *err) {
    remat_policy_t *p = (remat_policy_t *)&p;
    remat_status_t st = remat_policy_load_string(arg, "<test>", false, &p, err);
    if (st) {
        assert_null(p);
    }
    remat_policy_free(p);
    return st;
}

static void assert_zeroed(const remat_hw_t *hw) {
    static const remat_hw_t zero;
    assert_memory_equal(hw, &zero, sizeof zero);
}

static remat_status_t hw_text(const void *arg, remat_error_t *err) {
    remat_hw_t hw;
    memset(&hw, 0xa5, sizeof hw);
    remat_status_t st = remat_hw_load_string(arg, "<test>", &hw, err);
    if (st) {
        assert_zeroed(&hw);
    }
    return st;
}

/* A name or a .json path, as `hardware=` takes it. */
/* Built-in profiles are cached once made (remat_hw_resolve): each load
   here starts from an empty cache, so that it makes the profile, and every
   load makes the same allocations. */
static remat_status_t hw_resolve(const void *arg, remat_error_t *err) {
    remat_hw_t hw;
    memset(&hw, 0, sizeof hw);
    remat_i_builtin_cache_clear();
    remat_status_t st = remat_hw_resolve(arg, &hw, err);
    if (st) {
        assert_zeroed(&hw);
    }
    return st;
}

/* A config: an optional file and key=value arguments. The config is a
   value the builder fills in layers; after an error its contents are
   unspecified, so only the status is checked. */
typedef struct config_input {
    const char *file;
    const char *const *args;
} config_input_t;

static remat_status_t config_build(const void *arg, remat_error_t *err) {
    const config_input_t *in = arg;
    size_t n = 0;
    while (in->args && in->args[n]) {
        n++;
    }
    remat_config_t c;
    remat_i_builtin_cache_clear(); /* a topology resolves its hardware: a miss each time */
    return remat_config_build(in->file, n, (char *const *)in->args, &c, err);
}

/* ---- the tests ---------------------------------------------------------- */

/* The built-in cache's slots are made by its first use, once per process:
   a use before counting keeps them out of every count. */
static void warm_cache(void) {
    remat_hw_t warm;
    remat_error_t err;
    remat_error_init(&err);
    assert_int_equal(remat_hw_resolve("tpu7x", &warm, &err), REMAT_OK);
}

static void test_builtin_graphs(void **state) {
    (void)state;
    size_t n = remat_builtin_count(REMAT_BUILTIN_GRAPH);
    assert_true(n >= 5);
    for (size_t k = 0; k < n; k++) {
        const char *name = remat_builtin_name(REMAT_BUILTIN_GRAPH, k);
        char what[128];
        snprintf(what, sizeof what, "graph %s", name);
        /* Every allocation of one graph (llama.flash: the default), every
           7th of the others, at most MAX_POINTS; a reload after every 8th
           failure. */
        const bool all = strcmp(name, "llama.flash") == 0;
        inject_each(what, graph_text, remat_builtin_find(REMAT_BUILTIN_GRAPH, name), all ? 1 : 7,
                    8, all ? 0 : MAX_POINTS);
    }
}

static void test_small_graphs(void **state) {
    (void)state;
    inject_each("graph fx_mini", graph_text, fx_mini_graph, 1, 1, 0);
    inject_each("graph fx_head", graph_text, fx_head_graph, 1, 1, 0);
    inject_each("graph file", graph_file,
                REMAT_SOURCE_DIR "/tests/cli/analyze_tiny_graph_file/graph.json", 1, 1, 0);
}

static const char *const ranged_policy =
    "{\"format\": \"remat-policy/1\", \"name\": \"ranged\", \"description\": \"per-range rules\","
    " \"default\": \"remat\", \"predicate\": \"dots_with_no_batch_dims\","
    " \"predicate_placement\": \"offload\","
    " \"names\": {\"query_proj\": \"device\", \"key_proj\": \"offload\","
    "             \"value_proj\": \"offload\", \"mlpwi_0\": \"remat\"},"
    " \"layers\": [{\"range\": \"0-3\", \"names\": {\"out_proj\": \"device\","
    "                                              \"mlpwi_1\": \"offload\"}},"
    "              {\"range\": \"4-7\", \"names\": {\"query_proj\": \"remat\"}},"
    "              {\"range\": \"8\", \"names\": {}}]}";

static void test_policies(void **state) {
    (void)state;
    inject_each("policy with rules and ranges", policy_text, ranged_policy, 1, 1, 0);
    for (size_t k = 0; k < remat_builtin_count(REMAT_BUILTIN_POLICY); k++) {
        const char *name = remat_builtin_name(REMAT_BUILTIN_POLICY, k);
        char what[128];
        snprintf(what, sizeof what, "policy %s", name);
        inject_each(what, policy_text, remat_builtin_find(REMAT_BUILTIN_POLICY, name), 1, 1, 0);
    }
}

static const char *const hw_format1 =
    "{\"format\": \"remat-hardware/1\", \"name\": \"old\", \"description\": \"format 1\","
    " \"hbm_bytes\": 103079215104, \"hbm_bw\": 2.8e12, \"flops_bf16\": 4.59e14,"
    " \"flops_fp8\": 4.59e14, \"host_link_bw\": 1.0e11, \"chips_per_host\": 4,"
    " \"host_ram_bytes\": 481036337152, \"ici_bw\": 9.0e11, \"assumed\": [\"host_link_bw\"],"
    " \"sources\": [\"a test\"]}";

static void test_hardware(void **state) {
    (void)state;
    inject_each("hardware format 1", hw_text, hw_format1, 1, 1, 0);
    for (size_t k = 0; k < remat_builtin_count(REMAT_BUILTIN_HARDWARE); k++) {
        const char *name = remat_builtin_name(REMAT_BUILTIN_HARDWARE, k);
        char what[128];
        snprintf(what, sizeof what, "hardware %s", name);
        inject_each(what, hw_text, remat_builtin_find(REMAT_BUILTIN_HARDWARE, name), 1, 1, 0);
    }
    warm_cache();
    inject_each("hardware by family name", hw_resolve, "Trillium", 1, 1, 0);
    inject_each("hardware file", hw_resolve, REMAT_SOURCE_DIR "/hardware/tpu7x.json", 1, 1, 0);
}

static void test_configs(void **state) {
    (void)state;
    static const char *const args[] = {"model_name=llama3-70b", "per_device_batch_size=2",
                                       "remat_policy=custom",   "query_proj=device",
                                       "mlpwi_0=offload",       "hbm_budget=90GiB",
                                       "topology=tpu7x-128",    "ici_tensor_parallelism=4",
                                       NULL};
    static const char *const over[] = {"per_device_batch_size=1", "model=llama2-7b", NULL};
    const config_input_t cases[] = {
        {NULL, args},
        {REMAT_SOURCE_DIR "/tests/cli/analyze_config_file/config.json", NULL},
        {REMAT_SOURCE_DIR "/tests/cli/analyze_config_file/config.json", over},
        {NULL, NULL}, /* defaults: the default model's preset alone */
        /* a YAML chain of three files (libyaml's own allocations are not
           counted: it calls malloc itself) */
        {REMAT_SOURCE_DIR "/tests/cli/yaml_chain/run.yml", over},
    };
    static const char *const names[] = {"key=value with a model", "config file",
                                        "config file and key=value", "config defaults",
                                        "YAML chain and key=value"};
    warm_cache();
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        inject_each(names[k], config_build, &cases[k], 1, 1, 0);
    }
}

/* Without remat's allocators under it (a program that did not route
   jansson, as the CLI does not), jansson's failures still read as out of
   memory: it reports them with no message. */
static void *jfail(size_t n) {
    (void)n;
    return NULL;
}

static void test_jansson_unrouted(void **state) {
    (void)state;
    json_set_alloc_funcs(jfail, jfree); /* no JSON is alive between tests */
    remat_policy_t *p = (remat_policy_t *)&p;
    remat_error_t err;
    remat_error_init(&err);
    remat_status_t st = remat_policy_load_string(ranged_policy, "<test>", false, &p, &err);
    json_set_alloc_funcs(jmalloc, jfree);
    check_nomem("policy, jansson unrouted", 1, 1, st, &err);
    assert_null(p);
}

static void test_summary(void **state) {
    (void)state;
    /* Every case above injected at least one failure; the figures go to
       docs/fuzzing.md ("Allocation failures"). */
    assert_true(total_injected > 0);
    printf("[ alloc ] %llu allocations counted, %llu failures injected, %llu jansson "
           "growths left alone\n",
           (unsigned long long)total_allocs, (unsigned long long)total_injected,
           (unsigned long long)total_skipped);
}

static int teardown(void **state) {
    (void)state;
    free(unsafe);
    unsafe = NULL;
    nunsafe = unsafe_cap = 0;
    return 0;
}

int main(void) {
    /* Before any JSON exists: every jansson block is then jmalloc's. */
    json_set_alloc_funcs(jmalloc, jfree);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_graphs),
        cmocka_unit_test(test_builtin_graphs),
        cmocka_unit_test(test_policies),
        cmocka_unit_test(test_hardware),
        cmocka_unit_test(test_configs),
        cmocka_unit_test(test_jansson_unrouted),
        cmocka_unit_test(test_summary),
    };
    return cmocka_run_group_tests_name("alloc_fail", tests, NULL, teardown);
}
