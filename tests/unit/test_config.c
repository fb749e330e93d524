/* SPDX-License-Identifier: MIT */
/* test_config.c: key parsing, layering, suggestions, byte sizes, dims. */
#include "fixtures.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "remat/data/builtin.h"

static remat_status_t build(const char *const *args, remat_config_t *c, remat_error_t *err) {
    size_t n = 0;
    while (args[n]) {
        n++;
    }
    remat_error_init(err);
    return remat_config_build(NULL, n, (char *const *)args, c, err);
}

/* With no model described, the default run: its model, slice, batch,
   sequence, optimizer and placements, and the note that says so. */
static void test_default_run(void **state) {
    (void)state;
    remat_config_t c;
    remat_error_t err;
    const char *none[] = {NULL};
    assert_int_equal(build(none, &c, &err), REMAT_OK);
    assert_true(c.default_run);
    assert_string_equal(c.model_name, "llama3.1-70b");
    assert_string_equal(c.topology, "tpu7x-128");
    assert_string_equal(c.hardware, "tpu7x");
    assert_int_equal(c.num_devices, 128);
    assert_true(c.per_device_batch_size == 2);
    assert_int_equal(c.max_target_length, 8192);
    assert_int_equal(c.base_emb_dim, 8192); /* from the llama3.1-70b preset */
    assert_string_equal(c.remat_policy, "custom");
    assert_int_equal(c.ncustom, 5);
    assert_int_equal(c.mu_dtype, REMAT_DTYPE_BF16);
    assert_int_equal(c.weight_dtype, REMAT_DTYPE_F32);
    assert_non_null(strstr(c.notes, "default run"));
    /* its settings are the table's */
    assert_int_equal(remat_config_default_run_count(), 12);
    assert_string_equal(remat_config_default_run(0), "model_name=llama3.1-70b");
    assert_null(remat_config_default_run(12));
}

/* Settings that describe no model go on top of the default run; a
   slice replaces its topology; a preset policy replaces its placements,
   a placement adds to them. */
static void test_default_run_under_settings(void **state) {
    (void)state;
    remat_config_t c;
    remat_error_t err;
    const char *minimal[] = {"remat_policy=minimal", "per_device_batch_size=4", NULL};
    assert_int_equal(build(minimal, &c, &err), REMAT_OK);
    assert_true(c.default_run);
    assert_string_equal(c.remat_policy, "minimal");
    assert_int_equal(c.ncustom, 0);
    assert_true(c.per_device_batch_size == 4);
    assert_int_equal(c.num_devices, 128);
    const char *more[] = {"mlpwo=offload", NULL};
    assert_int_equal(build(more, &c, &err), REMAT_OK);
    assert_int_equal(c.ncustom, 6);
    const char *slice[] = {"num_devices=256", NULL};
    assert_int_equal(build(slice, &c, &err), REMAT_OK);
    assert_string_equal(c.topology, "");
    assert_int_equal(c.num_devices, 256);
    const char *v5p[] = {"topology=v5p-256", NULL};
    assert_int_equal(build(v5p, &c, &err), REMAT_OK);
    assert_string_equal(c.hardware, "tpu-v5p");
    assert_int_equal(c.num_devices, 128);
    /* within one layer a placement and a preset stay an error */
    const char *clash[] = {"remat_policy=full", "mlpwo=offload", NULL};
    assert_int_equal(build(clash, &c, &err), REMAT_E_CONFIG);
    assert_non_null(strstr(err.text, "applies only with remat_policy=custom"));
}

/* A model (its name, its graph, a size of it) replaces the default run
   whole: MaxText's base.yml defaults under it, on one device. */
static void test_model_replaces_default_run(void **state) {
    (void)state;
    remat_config_t c;
    remat_error_t err;
    const char *named[] = {"model_name=llama3-8b", NULL};
    assert_int_equal(build(named, &c, &err), REMAT_OK);
    assert_false(c.default_run);
    assert_string_equal(c.remat_policy, "full");
    assert_true(c.per_device_batch_size == 12);
    assert_int_equal(c.max_target_length, 2048);
    assert_true(c.num_devices_assumed);
    assert_int_equal(c.mu_dtype, REMAT_DTYPE_F32); /* follows weight_dtype */
    const char *sized[] = {"base_num_decoder_layers=4", NULL};
    assert_int_equal(build(sized, &c, &err), REMAT_OK);
    assert_false(c.default_run);
    assert_string_equal(c.model_name, "default"); /* MaxText's base.yml model */
    assert_int_equal(c.base_emb_dim, 2048);
    assert_int_equal(c.base_num_decoder_layers, 4);
}

/* A model of its own (model_name=default) runs its decoder block's graph
   that fits its layer keys: qwen2 with a tied head is llama_tied, not the
   default llama; without one it stays llama; a graph it was given stays
   and is refused where the keys differ. */
static void test_default_model_block_picks_its_graph(void **state) {
    (void)state;
    remat_config_t c;
    remat_error_t err;
    const char *tied[] = {"decoder_block=qwen2", "logits_via_embedding=true", NULL};
    assert_int_equal(build(tied, &c, &err), REMAT_OK);
    assert_string_equal(c.graph, "llama_tied");
    const char *untied[] = {"decoder_block=qwen2", NULL};
    assert_int_equal(build(untied, &c, &err), REMAT_OK);
    assert_string_equal(c.graph, "llama");
    const char *given[] = {"graph=llama", "decoder_block=qwen2", "logits_via_embedding=true",
                           NULL};
    assert_int_equal(build(given, &c, &err), REMAT_E_CONFIG);
    assert_non_null(strstr(err.text, "logits_via_embedding=true"));
}

static void test_arguments_override_preset(void **state) {
    (void)state;
    remat_config_t c;
    remat_error_t err;
    /* The preset applies under the user's keys wherever model_name stands. */
    const char *args[] = {"base_emb_dim=1024", "model_name=llama2-7b", "weight_dtype=bfloat16",
                          NULL};
    assert_int_equal(build(args, &c, &err), REMAT_OK);
    assert_int_equal(c.base_emb_dim, 1024);
    assert_int_equal(c.base_mlp_dim, 11008);
    assert_int_equal(c.mu_dtype, REMAT_DTYPE_BF16);
}

static void test_unknown_key_suggests(void **state) {
    (void)state;
    remat_config_t c;
    remat_error_t err;
    const char *args[] = {"per_device_batch=4", NULL};
    assert_int_equal(build(args, &c, &err), REMAT_E_CONFIG);
    assert_string_equal(err.text,
                        "unknown config key 'per_device_batch' (did you mean "
                        "'per_device_batch_size'?)");
    assert_string_equal(err.source, "<command line>");
    const char *args2[] = {"remat_polcy=full", NULL};
    assert_int_equal(build(args2, &c, &err), REMAT_E_CONFIG);
    assert_non_null(strstr(err.text, "'remat_policy'"));
}

static void test_values_are_checked(void **state) {
    (void)state;
    remat_config_t c;
    remat_error_t err;
    const char *bad[][2] = {{"base_emb_dim=0", NULL},     {"base_emb_dim=-3", NULL},
                            {"base_emb_dim=4.5", NULL},   {"dtype=int8", NULL},
                            {"scan_layers=maybe", NULL},  {"safety_margin=1.5", NULL},
                            {"opt_type=lion", NULL},      {"attention=ring", NULL},
                            {"hbm_budget=lots", NULL},
                            {"remat_policy=full query_proj=device", NULL},
                            {"model_name=gpt5", NULL},    {"noequals", NULL}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char copy[128];
        snprintf(copy, sizeof copy, "%s", bad[i][0]);
        const char *args[4] = {copy, NULL, NULL, NULL};
        char *space = strchr(copy, ' ');
        if (space) { /* two settings */
            *space = '\0';
            args[1] = space + 1;
        }
        remat_status_t st = build(args, &c, &err);
        if (st == REMAT_OK) {
            fail_msg("'%s' was accepted", bad[i][0]);
        }
    }
}

/* MaxText's base.yml sets capacity_factor and ragged_buffer_factor to -1
   (none: the worst case); a config that repeats those values builds. */
static void test_moe_factors_take_maxtext_defaults(void **state) {
    (void)state;
    remat_config_t c;
    remat_error_t err;
    const char *args[] = {"capacity_factor=-1", "ragged_buffer_factor=-1.0", NULL};
    assert_int_equal(build(args, &c, &err), REMAT_OK);
    assert_true(c.capacity_factor == -1.0 && c.ragged_buffer_factor == -1.0);
    const char *bad[] = {"capacity_factor=lots", NULL};
    assert_int_equal(build(bad, &c, &err), REMAT_E_CONFIG);
    assert_string_equal(err.text, "'capacity_factor' must be a number, not 'lots'");
}

static void test_byte_sizes(void **state) {
    (void)state;
    remat_config_t c;
    remat_error_t err;
    const char *gib[] = {"hbm_budget=96GiB", "hbm_reserve=1.5GB", NULL};
    assert_int_equal(build(gib, &c, &err), REMAT_OK);
    assert_int_equal(c.hbm_budget, 96ull << 30);
    assert_int_equal(c.hbm_reserve, 1500000000ull);
    const char *raw[] = {"hbm_budget=123456789", NULL};
    assert_int_equal(build(raw, &c, &err), REMAT_OK);
    assert_int_equal(c.hbm_budget, 123456789ull);
}

static void test_micro_batch(void **state) {
    (void)state;
    remat_config_t c;
    remat_error_t err;
    uint64_t b = 0;
    const char *ga[] = {"per_device_batch_size=8", "gradient_accumulation_steps=4",
                        "num_devices=1", NULL};
    assert_int_equal(build(ga, &c, &err), REMAT_OK);
    assert_int_equal(remat_config_size(&c, "per_device_batch_size", &b, &err), REMAT_OK);
    assert_int_equal(b, 8); /* accumulation repeats the micro-batch */
    const char *frac[] = {"per_device_batch_size=0.5", "num_devices=1", NULL};
    assert_int_equal(build(frac, &c, &err), REMAT_OK);
    assert_int_equal(remat_config_size(&c, "per_device_batch_size", &b, &err), REMAT_E_CONFIG);
}

static void test_config_file(void **state) {
    (void)state;
    char path[] = "/tmp/remat_cfg_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *text = "{\"model_name\": \"mistral-7b\", \"per_device_batch_size\": 2,\n"
                       " \"scan_layers\": false, \"remat_policy\": \"minimal\"}";
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
    remat_config_t c;
    remat_error_t err;
    remat_error_init(&err);
    char *args[] = {"per_device_batch_size=3"};
    assert_int_equal(remat_config_build(path, 1, args, &c, &err), REMAT_OK);
    assert_true(c.per_device_batch_size == 3); /* the argument wins over the file */
    assert_false(c.scan_layers);
    assert_int_equal(c.vocab_size, 32000);
    assert_string_equal(c.remat_policy, "minimal");
    /* A bad key in the file names the file and the JSON path. */
    f = fopen(path, "w");
    fputs("{\"remat_policy\": \"full\", \"vocab\": 5}", f);
    fclose(f);
    remat_error_init(&err);
    assert_int_equal(remat_config_build(path, 0, NULL, &c, &err), REMAT_E_CONFIG);
    assert_string_equal(err.source, path);
    assert_string_equal(err.json_path, "$.vocab");
    remove(path);
}

/* Every built-in's description, read at build time, is the JSON's. */
static void test_builtin_descriptions(void **state) {
    (void)state;
    const remat_builtin_kind_t kinds[] = {REMAT_BUILTIN_GRAPH, REMAT_BUILTIN_POLICY,
                                          REMAT_BUILTIN_MODEL, REMAT_BUILTIN_HARDWARE};
    size_t described = 0;
    for (size_t k = 0; k < 4; k++) {
        const size_t n = remat_builtin_count(kinds[k]);
        assert_true(n > 0);
        for (size_t i = 0; i < n; i++) {
            json_t *root = json_loads(remat_builtin_find(kinds[k], remat_builtin_name(kinds[k], i)),
                                      0, NULL);
            assert_non_null(root);
            json_t *d = json_object_get(root, "description");
            assert_string_equal(remat_builtin_description(kinds[k], i),
                                json_is_string(d) ? json_string_value(d) : "");
            described += json_is_string(d) && json_string_length(d) > 0;
            json_decref(root);
        }
        assert_null(remat_builtin_description(kinds[k], n));
    }
    assert_true(described > 20);
}

/* Every model of the zoo either analyzes, on one device at batch 1 (at
   its batch_split_factor, whose parts the batch-split schedule splits the
   device's batch into), or is refused with the block it needs named (its
   preset's "requires"). */
static void test_every_model_analyzes_or_names_its_block(void **state) {
    (void)state;
    size_t analyzed = 0, refused = 0;
    for (size_t i = 0; i < remat_builtin_count(REMAT_BUILTIN_MODEL); i++) {
        const char *name = remat_builtin_name(REMAT_BUILTIN_MODEL, i);
        char model[128], batch[64];
        json_t *root = json_loads(remat_builtin_find(REMAT_BUILTIN_MODEL, name), 0, NULL);
        json_t *parts = json_object_get(json_object_get(root, "config"), "batch_split_factor");
        snprintf(model, sizeof model, "model_name=%s", name);
        snprintf(batch, sizeof batch, "per_device_batch_size=%lld",
                 json_is_integer(parts) ? (long long)json_integer_value(parts) : 1LL);
        const char *args[] = {model, batch, "max_target_length=1024", NULL};
        fx_run_t *f = fx_analyze(NULL, args);
        json_t *req = json_object_get(root, "requires");
        assert_int_equal(remat_builtin_refused(REMAT_BUILTIN_MODEL, i), req != NULL);
        if (req) {
            assert_int_equal(f->st, REMAT_E_CONFIG);
            if (!strstr(f->err.text, json_string_value(req))) {
                fail_msg("%s: '%s' does not name '%s'", name, f->err.text, json_string_value(req));
            }
            refused++;
        } else {
            if (f->st != REMAT_OK) {
                fail_msg("%s: %s", name, f->err.text);
            }
            assert_true(f->r.peak_bytes > 0);
            analyzed++;
        }
        json_decref(root);
        fx_free(f);
    }
    assert_int_equal(analyzed + refused, remat_builtin_count(REMAT_BUILTIN_MODEL));
    /* the dense models and at least the three MoE presets of the first
       MoE graphs (mixtral-8x7b, mixtral-8x22b, deepseek3-671b) */
    assert_true(analyzed >= 19);
}

/* num_slices and dcn axes multiply as in MaxText: a topology's devices
   times its slices, and a dcn axis of -1 takes the slices. */
static void test_slices_multiply(void **state) {
    (void)state;
    remat_config_t c;
    remat_error_t err;
    const char *topo[] = {"topology=v6e-256", "num_slices=4", "dcn_data_parallelism=4", NULL};
    assert_int_equal(build(topo, &c, &err), REMAT_OK);
    assert_int_equal(c.num_devices, 1024);
    const char *mesh[] = {"model_name=llama3-8b", "ici_fsdp_parallelism=8",
                          "dcn_data_parallelism=-1", "num_slices=2",
                          NULL};
    assert_int_equal(build(mesh, &c, &err), REMAT_OK);
    assert_int_equal(c.num_devices, 16);
    assert_false(c.num_devices_assumed);
    const char *whole[] = {"model_name=llama3-8b", "ici_fsdp_parallelism=8",
                           "dcn_data_parallelism=2", NULL};
    assert_int_equal(build(whole, &c, &err), REMAT_OK);
    assert_int_equal(c.num_devices, 16);
    const char *clash[] = {"model_name=llama3-8b", "ici_fsdp_parallelism=8",
                           "dcn_data_parallelism=2", "num_slices=4",
                           NULL};
    assert_int_equal(build(clash, &c, &err), REMAT_E_CONFIG);
    assert_non_null(strstr(err.text, "num_slices=4"));
    const char *none[] = {"model_name=llama3-8b", "per_device_batch_size=1", NULL};
    assert_int_equal(build(none, &c, &err), REMAT_OK);
    assert_true(c.num_devices_assumed);
    assert_int_equal(c.num_devices, 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_run),
        cmocka_unit_test(test_default_run_under_settings),
        cmocka_unit_test(test_model_replaces_default_run),
        cmocka_unit_test(test_default_model_block_picks_its_graph),
        cmocka_unit_test(test_arguments_override_preset),
        cmocka_unit_test(test_unknown_key_suggests),
        cmocka_unit_test(test_values_are_checked),
        cmocka_unit_test(test_byte_sizes),
        cmocka_unit_test(test_micro_batch),
        cmocka_unit_test(test_config_file),
        cmocka_unit_test(test_builtin_descriptions),
        cmocka_unit_test(test_every_model_analyzes_or_names_its_block),
        cmocka_unit_test(test_slices_multiply),
        cmocka_unit_test(test_moe_factors_take_maxtext_defaults),
    };
    return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
