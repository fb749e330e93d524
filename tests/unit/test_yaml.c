/* SPDX-License-Identifier: MIT */
/*
 * test_yaml.c: MaxText YAML configs (yaml_config.c):
 *  - plain scalars resolve as YAML 1.1 (PyYAML) does: True/yes/on are true,
 *    500_000 is 500000, ~ and an empty value are empty; quoted ones stay;
 *  - lists and mappings become flow text, and are marked not scalar;
 *  - logical_axis_rules become remat's override syntax, a name's first
 *    rule kept;
 *  - a base_config chain of three files in temporary directories: the root
 *    first, so that later settings override; base.yml ends a chain;
 *  - errors: syntax (with line and column), a root that is not a mapping,
 *    a duplicate key, two documents, a cycle, a missing base;
 *  - anchors, aliases and merge keys, as PyYAML reads them; an alias bomb
 *    and nesting past the limit are errors, not work;
 *  - a base_config that is a FIFO is an error at once, never a wait;
 *  - a 1 MiB config of any of a dozen shapes (many keys, many anchors, an
 *    alias bomb, deep nesting, a long list, a long scalar, axis rules)
 *    builds or fails within a second.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "remat/input/config.h"
#include "input/yaml_config.h"

static remat_yaml_config_t parse_ok(const char *text) {
    remat_yaml_config_t c = {0};
    remat_error_t err;
    remat_error_init(&err);
    char *base = NULL;
    assert_int_equal(remat_i_yaml_parse(text, strlen(text), "t.yml", &c, &base, &err), REMAT_OK);
    free(base);
    return c;
}

static const remat_yaml_setting_t *get(const remat_yaml_config_t *c, const char *key) {
    const remat_yaml_setting_t *found = NULL;
    for (size_t i = 0; i < c->n; i++) {
        if (strcmp(c->settings[i].key, key) == 0) {
            found = &c->settings[i]; /* the last one wins, as config.c applies them */
        }
    }
    assert_non_null(found);
    return found;
}

static void test_scalars(void **state) {
    (void)state;
    remat_yaml_config_t c = parse_ok("a: True\nb: no\nc: 500_000\nd: ~\ne:\nf: 'yes'\n"
                                     "g: 1.e-06\nh: \"1_000\"\ni: llama3-8b # comment\n"
                                     "j: 1_000.5\n");
    assert_string_equal(get(&c, "a")->value, "true");
    assert_string_equal(get(&c, "b")->value, "false");
    assert_string_equal(get(&c, "c")->value, "500000");
    assert_string_equal(get(&c, "d")->value, "");
    assert_string_equal(get(&c, "e")->value, "");
    assert_string_equal(get(&c, "f")->value, "yes");
    assert_string_equal(get(&c, "g")->value, "1.e-06");
    assert_string_equal(get(&c, "h")->value, "1_000");
    assert_string_equal(get(&c, "i")->value, "llama3-8b");
    assert_string_equal(get(&c, "j")->value, "1000.5");
    assert_int_equal(get(&c, "c")->line, 3);
    assert_true(get(&c, "a")->scalar);
    remat_i_yaml_release(&c);
}

static void test_structures(void **state) {
    (void)state;
    remat_yaml_config_t c = parse_ok("mlp_activations: [\"silu\", linear]\n"
                                     "mesh:\n  - data\n  - fsdp\nm: {k: 1, j: [a]}\n");
    assert_string_equal(get(&c, "mlp_activations")->value, "['silu', linear]");
    assert_false(get(&c, "mlp_activations")->scalar);
    assert_string_equal(get(&c, "mesh")->value, "[data, fsdp]");
    assert_string_equal(get(&c, "m")->value, "{k: 1, j: [a]}");
    remat_i_yaml_release(&c);
    /* An empty list that closes before any item exists (the fuzzer's find). */
    c = parse_ok("r: [[a, [b, []]]]\ne: {}\n");
    assert_string_equal(get(&c, "r")->value, "[[a, [b, []]]]");
    assert_string_equal(get(&c, "e")->value, "{}");
    remat_i_yaml_release(&c);
}

static void test_axis_rules(void **state) {
    (void)state;
    remat_yaml_config_t c = parse_ok("logical_axis_rules: [\n"
                                     "  ['activation_batch', ['data', 'fsdp']],\n"
                                     "  ['activation_embed', 'tensor'],\n"
                                     "  ['activation_batch', ['fsdp']],\n"
                                     "  ['qkv', []],\n"
                                     "]\n");
    const remat_yaml_setting_t *r = get(&c, "logical_axis_rules");
    assert_true(r->scalar);
    assert_string_equal(r->value, "activation_batch:data+fsdp,activation_embed:tensor,qkv:");
    remat_i_yaml_release(&c);
}

static void expect_error(const char *text, remat_status_t code, const char *fragment) {
    remat_yaml_config_t c = {0};
    remat_error_t err;
    remat_error_init(&err);
    char *base = NULL;
    assert_int_equal(remat_i_yaml_parse(text, strlen(text), "t.yml", &c, &base, &err), code);
    assert_null(base);
    if (!strstr(err.text, fragment)) {
        fail_msg("'%s' lacks '%s'", err.text, fragment);
    }
    remat_i_yaml_release(&c);
}

static void test_errors(void **state) {
    (void)state;
    expect_error("a: [1, 2\n", REMAT_E_SYNTAX, "");
    expect_error("- a\n- b\n", REMAT_E_SCHEMA, "mapping");
    expect_error("a: 1\nb: 2\na: 3\n", REMAT_E_SCHEMA, "duplicate key 'a' (first on line 1)");
    expect_error("a: 1\n---\nb: 2\n", REMAT_E_SCHEMA, "one YAML document");
    expect_error("? [a]\n: 1\n", REMAT_E_SCHEMA, "non-empty string");
    expect_error("logical_axis_rules: [[a, b, c]]\n", REMAT_E_SCHEMA, "[name, axis]");
    expect_error("base_config: [a]\n", REMAT_E_SCHEMA, "must name a file");
    /* found by fuzzing: the second one leaked the first */
    expect_error("base_config: a.yml\nbase_config: b.yml\n", REMAT_E_SCHEMA,
                 "duplicate key 'base_config'");
    /* the syntax error's position */
    remat_yaml_config_t c = {0};
    remat_error_t err;
    remat_error_init(&err);
    char *base = NULL;
    const char *bad = "a: 1\nb: [1,\n";
    assert_int_equal(remat_i_yaml_parse(bad, strlen(bad), "t.yml", &c, &base, &err),
                     REMAT_E_SYNTAX);
    assert_int_equal(err.line, 3);
    remat_i_yaml_release(&c);
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_chain(void **state) {
    (void)state;
    char dir[] = "/tmp/remat-yaml-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char top[128], mid[128], sub[128], root[128];
    snprintf(sub, sizeof sub, "%s/sub", dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    snprintf(top, sizeof top, "%s/sub/run.yml", dir);
    snprintf(mid, sizeof mid, "%s/mid.yml", dir);
    snprintf(root, sizeof root, "%s/root.yml", dir);
    write_file(top, "base_config: ../mid.yml\nper_device_batch_size: 4\n");
    write_file(mid, "base_config: root.yml\nper_device_batch_size: 2\nsteps: 10\n");
    write_file(root, "base_config: base.yml\nper_device_batch_size: 1\nmodel_name: llama2-7b\n");
    remat_yaml_config_t c;
    remat_error_t err;
    remat_error_init(&err);
    assert_int_equal(remat_i_yaml_load(top, &c, &err), REMAT_OK);
    assert_true(c.maxtext_base); /* base.yml is not in the directory */
    assert_int_equal(c.nsources, 3);
    assert_int_equal(c.n, 5);
    assert_string_equal(c.settings[0].key, "per_device_batch_size");
    assert_string_equal(c.settings[0].value, "1"); /* root first */
    assert_string_equal(get(&c, "per_device_batch_size")->value, "4"); /* the file's wins */
    assert_string_equal(get(&c, "steps")->value, "10");
    assert_string_equal(get(&c, "model_name")->source, root);
    remat_i_yaml_release(&c);

    /* a cycle */
    write_file(root, "base_config: sub/run.yml\n");
    assert_int_equal(remat_i_yaml_load(top, &c, &err), REMAT_E_SCHEMA);
    assert_non_null(strstr(err.text, "comes back"));
    /* a missing base that is not base.yml */
    remat_error_init(&err);
    write_file(root, "base_config: nowhere.yml\n");
    assert_int_equal(remat_i_yaml_load(top, &c, &err), REMAT_E_IO);
    /* MaxText's base.yml named directly: not read */
    char base[128];
    snprintf(base, sizeof base, "%s/base.yml", dir);
    write_file(base, "per_device_batch_size: 12.0\nrun_name: ''\n");
    remat_error_init(&err);
    assert_int_equal(remat_i_yaml_load(base, &c, &err), REMAT_OK);
    assert_true(c.maxtext_base);
    assert_int_equal(c.n, 0);
    remat_i_yaml_release(&c);
    unlink(top), unlink(mid), unlink(root), unlink(base), rmdir(sub), rmdir(dir);
}


/* Anchors and aliases: an alias is its anchor's value; a merge key brings
   a mapping's keys in under the explicit ones, the first mapping listed
   winning (PyYAML). */
static void test_anchors_and_merge(void **state) {
    (void)state;
    remat_yaml_config_t c = parse_ok("base: &b {per_device_batch_size: 2, steps: 5}\n"
                                     "acts: &a [silu, linear]\n"
                                     "mlp_activations: *a\n"
                                     "x: &s 7\n"
                                     "y: *s\n");
    assert_string_equal(get(&c, "mlp_activations")->value, "[silu, linear]");
    assert_string_equal(get(&c, "y")->value, "7");
    remat_i_yaml_release(&c);
    c = parse_ok("defaults: &d {per_device_batch_size: 2, steps: 5, run_name: a}\n"
                 "more: &m {steps: 9, dataset_type: synthetic}\n"
                 "<<: [*d, *m]\n"
                 "steps: 7\n");
    assert_string_equal(get(&c, "per_device_batch_size")->value, "2");
    assert_string_equal(get(&c, "steps")->value, "7");        /* explicit wins */
    assert_string_equal(get(&c, "dataset_type")->value, "synthetic");
    size_t steps = 0;
    for (size_t i = 0; i < c.n; i++) {
        steps += strcmp(c.settings[i].key, "steps") == 0;
    }
    assert_int_equal(steps, 1); /* merged keys the file sets are not taken */
    remat_i_yaml_release(&c);
    c = parse_ok("a: &d {run_name: x}\n<<: *d\n");
    assert_string_equal(get(&c, "run_name")->value, "x");
    remat_i_yaml_release(&c);
    /* an empty document, and "~", set nothing */
    c = parse_ok("# nothing\n");
    assert_int_equal(c.n, 0);
    remat_i_yaml_release(&c);
    c = parse_ok("~\n");
    assert_int_equal(c.n, 0);
    remat_i_yaml_release(&c);
    expect_error("a: *nowhere\n", REMAT_E_SCHEMA, "alias '*nowhere' names no anchor");
    expect_error("<<: 3\n", REMAT_E_SCHEMA, "merge key");
    /* a value that refers to itself is written, cut, not followed forever */
    c = parse_ok("a: &r [1, *r]\n");
    assert_non_null(strstr(get(&c, "a")->value, "[1, [1, [1"));
    remat_i_yaml_release(&c);
}

/* The alias bomb of the issue (a few hundred bytes that expand to 10^9
   nodes) is refused by the budget, quickly; so is nesting past the limit. */
static void test_alias_budget(void **state) {
    (void)state;
    char text[4096];
    size_t len = (size_t)snprintf(text, sizeof text, "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for (int i = 1; i < 10; i++) {
        len += (size_t)snprintf(text + len, sizeof text - len, "a%d: &a%d [", i, i);
        for (int k = 0; k < 10; k++) {
            len += (size_t)snprintf(text + len, sizeof text - len, "%s*a%d", k ? ", " : "", i - 1);
        }
        len += (size_t)snprintf(text + len, sizeof text - len, "]\n");
    }
    /* each key's text is cut at 4 KiB: the walks stop there, and the many
       keys that alias the largest run into the budget */
    for (int i = 0; i < 5000; i++) {
        if (len + 32 < sizeof text) {
            len += (size_t)snprintf(text + len, sizeof text - len, "k%d: *a9\n", i);
        }
    }
    remat_yaml_config_t c = {0};
    remat_error_t err;
    remat_error_init(&err);
    char *base = NULL;
    remat_status_t st = remat_i_yaml_parse(text, len, "t.yml", &c, &base, &err);
    assert_true(st == REMAT_OK || st == REMAT_E_SCHEMA);
    for (size_t i = 0; i < c.n; i++) {
        assert_true(strlen(c.settings[i].value) < 4096);
    }
    remat_i_yaml_release(&c);
    char deep[300];
    memset(deep, '[', 200);
    strcpy(deep + 200, "\n");
    char doc[320];
    snprintf(doc, sizeof doc, "a: %s", deep);
    expect_error(doc, REMAT_E_SCHEMA, "nest deeper than 64");
}

/* The process's CPU time: the work a shape costs, not the wall clock of a
   machine that may be running other jobs beside the test. */
static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One 1 MiB shape, written to @p path by @p line(i) repeated (after
   @p head), then built as a config file: under a second, error or not. */
typedef void (*line_fn)(char *buf, size_t size, size_t i);

static void shape(const char *name, const char *path, const char *head, line_fn line,
                  const char *tail) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(head, f);
    size_t bytes = strlen(head);
    char buf[256];
    for (size_t i = 0; bytes < (1u << 20); i++) {
        line(buf, sizeof buf, i);
        fputs(buf, f);
        bytes += strlen(buf);
    }
    fputs(tail, f);
    fclose(f);
    remat_config_t cfg;
    remat_error_t err;
    remat_error_init(&err);
    double t0 = now();
    remat_status_t st = remat_config_build(path, 0, NULL, &cfg, &err);
    double dt = now() - t0;
    printf("[ yaml ] 1 MiB of %-28s %.3f s: %s\n", name, dt, st ? err.text : "ok");
    if (dt >= 1.0) {
        fail_msg("%s took %.3f s", name, dt);
    }
}

static void keys(char *b, size_t n, size_t i) { snprintf(b, n, "k%zu: %zu\n", i, i); }
static void anchors(char *b, size_t n, size_t i) {
    snprintf(b, n, i % 2 ? "b%zu: *a%zu\n" : "a%zu: &a%zu x\n", i, i / 2 * 2);
}
static void aliases(char *b, size_t n, size_t i) { snprintf(b, n, "k%zu: *big\n", i); }
static void items(char *b, size_t n, size_t i) { snprintf(b, n, "%s%zu", i ? ", " : "", i); }
static void block_items(char *b, size_t n, size_t i) { snprintf(b, n, "  - item%zu\n", i); }
static void chars(char *b, size_t n, size_t i) { (void)i; snprintf(b, n, "xxxxxxxxxxxxxxxx"); }
static void opens(char *b, size_t n, size_t i) { (void)i; snprintf(b, n, "[[[[[[[["); }
static void rules(char *b, size_t n, size_t i) {
    snprintf(b, n, "  [name%zu, [data, fsdp]],\n", i % 4000);
}
static void merged(char *b, size_t n, size_t i) { snprintf(b, n, "*m%zu, ", i % 16); }
static void nested(char *b, size_t n, size_t i) { snprintf(b, n, "  k%zu: {a: [1, 2]}\n", i); }
static void dupes(char *b, size_t n, size_t i) { snprintf(b, n, "k%zu: 1\n", i % 50000); }
static void docs(char *b, size_t n, size_t i) { snprintf(b, n, "---\nk%zu: 1\n", i); }

static void test_one_mib_shapes(void **state) {
    (void)state;
    char dir[] = "/tmp/remat-yaml-big-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/big.yml", dir);
    char head[8192] = "big: &big [";
    for (int i = 0; i < 600; i++) {
        strcat(head, "xxxxxxxx, ");
    }
    strcat(head, "x]\n");
    char mheads[4096] = "";
    for (int i = 0; i < 16; i++) {
        char m[128];
        snprintf(m, sizeof m, "m%d: &m%d {run_name: r%d, steps: %d}\n", i, i, i, i);
        strcat(mheads, m);
    }
    strcat(mheads, "<<: [");
    shape("top-level keys", path, "", keys, "");
    shape("anchors and aliases", path, "", anchors, "");
    shape("aliases of a 6 KB list", path, head, aliases, "");
    shape("one flow list", path, "k: [", items, "]\n");
    shape("one block list", path, "k:\n", block_items, "");
    shape("one scalar", path, "k: ", chars, "\n");
    shape("open brackets", path, "k: ", opens, "\n");
    shape("axis rules", path, "logical_axis_rules: [\n", rules, "]\n");
    shape("merge keys", path, mheads, merged, "*m0]\n");
    shape("nested mappings", path, "k:\n", nested, "");
    shape("duplicate keys", path, "", dupes, "");
    shape("documents", path, "", docs, "");
    unlink(path);
    rmdir(dir);
}

/* A base_config that is a FIFO is refused on the descriptor it was
   opened with, at once: no writer ever comes. */
static void test_base_config_fifo(void **state) {
    (void)state;
    char dir[] = "/tmp/remat-yaml-fifo-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char top[128], fifo[128];
    snprintf(top, sizeof top, "%s/run.yml", dir);
    snprintf(fifo, sizeof fifo, "%s/team.yml", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    write_file(top, "base_config: team.yml\nper_device_batch_size: 4\n");
    remat_yaml_config_t c;
    remat_error_t err;
    remat_error_init(&err);
    double t0 = now();
    assert_int_equal(remat_i_yaml_load(top, &c, &err), REMAT_E_IO);
    assert_true(now() - t0 < 1.0);
    assert_non_null(strstr(err.text, "a FIFO (named pipe), not a regular file"));
    assert_string_equal(err.source, fifo);
    unlink(top), unlink(fifo), rmdir(dir);
}

static void test_is_yaml_path(void **state) {
    (void)state;
    assert_true(remat_i_is_yaml_path("MaxText/configs/base.yml"));
    assert_true(remat_i_is_yaml_path("a.yaml"));
    assert_false(remat_i_is_yaml_path(".yml"));
    assert_false(remat_i_is_yaml_path("a.json"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scalars),    cmocka_unit_test(test_structures),
        cmocka_unit_test(test_axis_rules), cmocka_unit_test(test_errors),
        cmocka_unit_test(test_chain),      cmocka_unit_test(test_is_yaml_path),
        cmocka_unit_test(test_anchors_and_merge), cmocka_unit_test(test_alias_budget),
        cmocka_unit_test(test_one_mib_shapes),    cmocka_unit_test(test_base_config_fifo),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
