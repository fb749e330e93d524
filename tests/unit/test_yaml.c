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
 *    a duplicate key, two documents, a cycle, a missing base.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "yaml_config.h"

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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
