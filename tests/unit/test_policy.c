/* SPDX-License-Identifier: MIT */
/*
 * test_policy.c: every preset on the built-in llama graph at sizes small
 * enough to add up by hand, JAX's residual rule, and the properties the
 * design promises (full keeps least, offload never raises the peak, bytes
 * scale with batch, names are checked against the graph).
 *
 * Tiny llama: batch 1, seq 4, embed 8, 2 query heads, 1 kv head, head_dim 4,
 * mlp 16, vocab 16, 2 layers. The flash graph transposes q, k, v to
 * [b,h,s,d] for the kernel (q_t, k_t, v_t: arrays of their own, which the
 * kernel's backward reads; q, k, v are read by no backward) and its output
 * ctx back to attn_out. bf16 bytes per layer tensor:
 *   x, xn, h1, hn, q_raw, q, q_t, ctx, attn_out, attn (out_proj), mlp_out: 64
 *   k_raw, k, k_t, v, v_t: 32   gate, up, gate_act, mix: 128
 *   fp32: ln1_rstd, ln2_rstd [1,4]: 16   attn_lse [1,2,4]: 32
 */
#include "fixtures.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remat/view/report.h"

static fx_run_t *tiny(const char *policy, const char *extra) {
    const char *args[] = {"model_name=default",      "per_device_batch_size=1",
                          "max_target_length=4",     "base_emb_dim=8",
                          "base_num_query_heads=2",  "base_num_kv_heads=1",
                          "head_dim=4",              "base_mlp_dim=16",
                          "vocab_size=16",           "base_num_decoder_layers=2",
                          policy,                    extra,
                          NULL};
    return fx_analyze_ok(NULL, args);
}

typedef struct expect {
    const char *policy;
    const char *extra;
    uint64_t device, offloaded, recompute;
} expect_t;

/* Recompute FLOPs per layer, by op: q_proj 2*4*8*2*4 = 512, k_proj and
   v_proj 256, rope 3n: 96 (q) and 48 (k), pre-norms 4n = 128 each, flash
   (causal: half of 2*2*1*2*4*4*4) 256, transposes 0, out_proj 512,
   residual add 32, wi_0 and wi_1 1024 each, silu 4*64 = 256, gated mul 64.
   full re-runs all but wo and the last add: 4592.
   minimal keeps q, k, v, out_proj, gate, up; the kernel reads q_t, k_t,
   v_t, so the transposes re-run from the kept q, k, v: norms 256 + flash
   256 + add 32 + silu 256 + mul 64 = 864.
   save_qkv_proj: 864 + out_proj 512 + wi_0/wi_1 2048 = 3424. */
static const expect_t presets[] = {
    {"remat_policy=full", NULL, 64, 0, 4592},
    {"remat_policy=minimal", NULL, 64 + 64 + 32 + 32 + 64 + 128 + 128, 0, 864},
    /* + context: the kernel output ctx (64) and logsumexp (32): no flash
       re-run; context_transpose re-runs from the kept ctx */
    {"remat_policy=minimal_with_context", NULL, 512 + 96, 0, 864 - 256},
    {"remat_policy=minimal_flash", NULL, 512 + 96, 0, 864 - 256},
    /* x, q, k, v, context, out_proj; the MLP is rebuilt from h1 */
    {"remat_policy=save_dot_with_context_except_mlp", NULL, 64 + 128 + 96 + 64, 0,
     128 + 32 + 128 + 2048 + 256 + 64},
    /* mlpwo is unused: same bytes as save_dot_except_mlp */
    {"remat_policy=save_dot_except_mlpwi", NULL, 64 + 128 + 64, 0, 864 + 2048},
    {"remat_policy=save_dot_except_mlp", NULL, 64 + 128 + 64, 0, 864 + 2048},
    {"remat_policy=save_qkv_proj", NULL, 64 + 128, 0, 3424},
    /* out_proj kept; q, k, v rebuilt: 4592 - out_proj 512 */
    {"remat_policy=save_out_proj", NULL, 64 + 64, 0, 4592 - 512},
    {"remat_policy=qkv_proj_offloaded", NULL, 64, 128, 3424},
    {"remat_policy=minimal_offloaded", NULL, 64, 448, 864},
    /* none is full, scanned or not (MaxText checkpoints the layer with no
       policy) */
    {"remat_policy=none", NULL, 64, 0, 4592},
    {"remat_policy=none", "scan_layers=false", 64, 0, 4592},
    /* everything_saveable keeps every residual: x, ln1_rstd, xn, q_t, k_t,
       v_t, ctx, attn_lse, attn_out, h1, ln2_rstd, hn, gate, up, gate_act,
       mix */
    {"remat_policy=everything_saveable", NULL,
     64 + 16 + 64 + 64 + 32 + 32 + 64 + 32 + 64 + 64 + 16 + 64 + 128 + 128 + 128 + 128, 0, 0},
    /* predicate: q_raw, k_raw, v (einsum outputs) instead of q and k, so
       the two ropes are re-run too: 864 + 96 + 48 */
    {"remat_policy=dots_with_no_batch_dims_saveable", NULL, 512, 0, 864 + 144},
    {"remat_policy=offload_dot_with_no_batch_dims", NULL, 64, 448, 864 + 144},
    /* custom defaults to full */
    {"remat_policy=custom", NULL, 64, 0, 4592},
    {"remat_policy=custom", "out_proj=device", 128, 0, 4592 - 512},
};

static void test_every_preset_by_hand(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
        const expect_t *e = &presets[i];
        fx_run_t *f = tiny(e->policy, e->extra);
        const remat_layer_row_t *row = &f->r.layers[1];
        if (row->saved_device_bytes != e->device || row->offloaded_bytes != e->offloaded ||
            row->recompute_flops != e->recompute) {
            fail_msg("%s %s: device %llu offloaded %llu recompute %llu, expected %llu %llu %llu",
                     e->policy, e->extra ? e->extra : "",
                     (unsigned long long)row->saved_device_bytes,
                     (unsigned long long)row->offloaded_bytes,
                     (unsigned long long)row->recompute_flops, (unsigned long long)e->device,
                     (unsigned long long)e->offloaded, (unsigned long long)e->recompute);
        }
        fx_free(f);
    }
}

static void expect_kept(const char *policy, const char *const *names) {
    fx_run_t *f = tiny(policy, NULL);
    const remat_block_t *b = &f->graph->kinds[0].block;
    char kept[512] = "", want[512] = "";
    for (size_t i = 0; i < b->ntensors; i++) {
        remat_fate_t fate = f->r.profiles[0].tensors[i].fate;
        if (fate == REMAT_FATE_DEVICE || fate == REMAT_FATE_OFFLOAD) {
            strcat(kept, b->tensors[i].name);
            strcat(kept, " ");
        }
    }
    for (size_t i = 0; names[i]; i++) {
        strcat(want, names[i]);
        strcat(want, " ");
    }
    assert_string_equal(kept, want);
    fx_free(f);
}

/* reference/maxtext-policies.md: what a Llama layer with flash attention
   keeps per preset (x = decoder_layer_input, in graph order). */
static void test_maxtext_kept_sets(void **state) {
    (void)state;
    expect_kept("remat_policy=full", (const char *[]){"x", NULL});
    expect_kept("remat_policy=minimal",
                (const char *[]){"x", "q", "k", "v", "attn", "gate", "up", NULL});
    expect_kept("remat_policy=save_qkv_proj", (const char *[]){"x", "q", "k", "v", NULL});
    expect_kept("remat_policy=save_out_proj", (const char *[]){"x", "attn", NULL});
}

/* JAX drops a saveable name nothing reads: mlpwo in a Llama layer. */
static void test_unused_reported(void **state) {
    (void)state;
    fx_run_t *f = tiny("remat_policy=save_dot_except_mlpwi", NULL);
    size_t mo = fx_tensor(f->graph, "mlp_out");
    assert_true(f->r.profiles[0].tensors[mo].unused);
    assert_int_equal(f->r.profiles[0].tensors[mo].asked, REMAT_PLACE_DEVICE);
    assert_int_equal(f->r.profiles[0].tensors[mo].fate, REMAT_FATE_TRANSIENT);
    fx_free(f);
}

/* The predicate keeps a tensor that carries no name too, and when backward
   never reads it, it is reported unused like a named one: gpt3's MLP down
   projection before its bias (fc2_mm, an einsum with no batch dimension;
   the bias add keeps nothing). Under minimal, which places by names only,
   the same tensor is not reported. */
static void test_unused_by_predicate(void **state) {
    (void)state;
    const char *args[] = {"model_name=gpt3-175b", "per_device_batch_size=1", "num_devices=64",
                          "base_num_decoder_layers=2",
                          "remat_policy=dots_with_no_batch_dims_saveable", NULL};
    fx_run_t *f = fx_analyze_ok(NULL, args);
    const size_t mm = fx_tensor(f->graph, "fc2_mm");
    assert_int_equal(f->graph->kinds[0].block.tensors[mm].ntags, 0);
    assert_true(f->r.profiles[0].tensors[mm].unused);
    assert_int_equal(f->r.profiles[0].tensors[mm].asked, REMAT_PLACE_DEVICE);
    assert_int_equal(f->r.profiles[0].tensors[mm].fate, REMAT_FATE_TRANSIENT);
    fx_free(f);
    const char *minimal[] = {"model_name=gpt3-175b", "per_device_batch_size=1",
                             "num_devices=64", "base_num_decoder_layers=2",
                             "remat_policy=minimal", NULL};
    f = fx_analyze_ok(NULL, minimal);
    assert_false(f->r.profiles[0].tensors[mm].unused);
    fx_free(f);
}

static void test_unknown_names_rejected(void **state) {
    (void)state;
    /* Custom keys are MaxText's names: another key is not a config key. */
    const char *args[] = {"model_name=llama3-8b", "remat_policy=custom", "mlp_gate=device",
                          "per_device_batch_size=1", NULL};
    fx_run_t *f = fx_analyze(NULL, args);
    assert_int_equal(f->st, REMAT_E_CONFIG);
    assert_non_null(strstr(f->err.text, "unknown config key 'mlp_gate'"));
    fx_free(f);
    /* A MaxText name the graph lacks (MoE names on a dense graph) is
       accepted, as MaxText ignores it: custom moe_mlpwo=device is custom's
       default, full. */
    const char *moe[] = {"remat_policy=custom", "moe_mlpwo=device", "per_device_batch_size=1",
                         "base_num_decoder_layers=2", NULL};
    const char *full[] = {"remat_policy=full", "per_device_batch_size=1",
                          "base_num_decoder_layers=2", NULL};
    f = fx_analyze_ok(NULL, moe);
    fx_run_t *ff = fx_analyze_ok(NULL, full);
    assert_int_equal(f->r.peak_bytes, ff->r.peak_bytes);
    assert_int_equal(f->r.recompute_flops, ff->r.recompute_flops);
    fx_free(ff);
    fx_free(f);
    /* Presets may list names a graph lacks (minimal names kv_proj). */
    const char *ok[] = {"model_name=llama3-8b", "remat_policy=minimal", "per_device_batch_size=1", NULL};
    f = fx_analyze_ok(NULL, ok);
    fx_free(f);
    /* A user's policy file is checked: a name neither the graph nor MaxText
       has is an error, from the file. */
    remat_policy_t *p = NULL;
    remat_error_t err;
    remat_error_init(&err);
    assert_int_equal(remat_policy_load_string("{\"format\":\"remat-policy/1\",\"name\":\"u\","
                                              "\"names\":{\"qkv_projection\":\"device\"}}",
                                              "user.json", false, &p, &err),
                     REMAT_OK);
    f = fx_analyze(NULL, ok);
    remat_status_t st = remat_analyze(f->graph, &f->cfg, p, &f->hw, &f->r, &err);
    assert_int_equal(st, REMAT_E_POLICY);
    assert_string_equal(err.source, "user.json");
    assert_non_null(strstr(err.text, "no checkpoint named 'qkv_projection'"));
    assert_non_null(strstr(err.text, "query_proj"));
    remat_policy_free(p);
    fx_free(f);
    /* A MaxText name the graph does not tag (qkv_proj, on Llama: MaxText's
       Ironwood recipes set it) is accepted and, like MaxText, changes
       nothing: the run equals full. */
    assert_int_equal(remat_policy_load_string("{\"format\":\"remat-policy/1\",\"name\":\"u\","
                                              "\"names\":{\"qkv_proj\":\"device\"}}",
                                              "user.json", false, &p, &err),
                     REMAT_OK);
    const char *tiny_full[] = {"model_name=default",     "per_device_batch_size=1",
                               "max_target_length=4",    "base_emb_dim=8",
                               "base_num_query_heads=2", "base_num_kv_heads=1",
                               "head_dim=4",             "base_mlp_dim=16",
                               "vocab_size=16",          "base_num_decoder_layers=2",
                               NULL};
    f = fx_analyze_ok(NULL, tiny_full);
    assert_false(remat_policy_graph_knows(f->graph, "qkv_proj"));
    assert_true(remat_policy_is_maxtext_name("qkv_proj"));
    remat_result_t r;
    remat_result_init(&r);
    assert_int_equal(remat_analyze(f->graph, &f->cfg, p, &f->hw, &r, &err), REMAT_OK);
    assert_int_equal(r.peak_bytes, f->r.peak_bytes);
    assert_int_equal(r.layers[1].saved_device_bytes, 64);
    assert_int_equal(r.layers[1].recompute_flops, 4592);
    /* and the report notes it */
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    remat_report_analyze(out, &r, REMAT_FMT_TEXT);
    fclose(out);
    assert_non_null(strstr(text, "'qkv_proj' is a MaxText checkpoint name that graph 'llama' "
                                 "does not tag"));
    free(text);
    remat_result_release(&r);
    remat_policy_free(p);
    fx_free(f);
}

/* Properties on llama3-8b (one chip, batch 1) over every preset. */
static const char *const all_presets[] = {
    "full", "minimal", "minimal_with_context", "save_dot_with_context_except_mlp",
    "save_dot_except_mlpwi", "save_dot_except_mlp", "save_qkv_proj", "save_out_proj",
    "qkv_proj_offloaded", "minimal_offloaded", "none", "everything_saveable",
    "dots_with_no_batch_dims_saveable", "offload_dot_with_no_batch_dims"};

static fx_run_t *big(const char *policy, const char *batch) {
    char pol[96];
    snprintf(pol, sizeof pol, "remat_policy=%s", policy);
    const char *args[] = {"model_name=llama3-8b", batch, pol, NULL};
    fx_run_t *f = fx_analyze_ok(NULL, args);
    return f;
}

static void test_full_keeps_least(void **state) {
    (void)state;
    fx_run_t *full = big("full", "per_device_batch_size=1");
    for (size_t i = 0; i < sizeof all_presets / sizeof all_presets[0]; i++) {
        fx_run_t *f = big(all_presets[i], "per_device_batch_size=1");
        assert_true(full->r.layers[0].saved_device_bytes <= f->r.layers[0].saved_device_bytes);
        /* on one slice XLA lays the kept stacks that meet an offloaded
           residual out again (minimal_offloaded's inputs): the copy is the
           only thing above full's peak such a policy may hold */
        assert_true(full->r.peak_bytes <= f->r.peak_bytes + f->r.stages[0].relaid_bytes);
        fx_free(f);
    }
    fx_free(full);
}

static void test_offload_never_raises_peak(void **state) {
    (void)state;
    static const char *const pairs[][2] = {{"save_qkv_proj", "qkv_proj_offloaded"},
                                           {"minimal", "minimal_offloaded"},
                                           {"dots_with_no_batch_dims_saveable",
                                            "offload_dot_with_no_batch_dims"}};
    for (size_t i = 0; i < 3; i++) {
        for (int batch = 1; batch <= 4; batch *= 2) {
            char b[48];
            snprintf(b, sizeof b, "per_device_batch_size=%d", batch);
            fx_run_t *dev = big(pairs[i][0], b), *off = big(pairs[i][1], b);
            assert_true(off->r.peak_bytes <= dev->r.peak_bytes);
            assert_true(off->r.d2h_bytes > 0);
            fx_free(dev);
            fx_free(off);
        }
    }
    /* Offloading one name on top of a policy, via custom keys. */
    const char *a[] = {"model_name=llama3-8b", "per_device_batch_size=2", "remat_policy=custom", "mlpwi_0=device",
                       "mlpwi_1=device", NULL};
    const char *b[] = {"model_name=llama3-8b", "per_device_batch_size=2", "remat_policy=custom", "mlpwi_0=offload",
                       "mlpwi_1=device", NULL};
    fx_run_t *fa = fx_analyze(NULL, a), *fb = fx_analyze(NULL, b);
    assert_true(fb->r.peak_bytes <= fa->r.peak_bytes);
    assert_true(fb->r.layers[0].saved_device_bytes < fa->r.layers[0].saved_device_bytes);
    fx_free(fa);
    fx_free(fb);
}

static void test_batch_doubles_activations(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof all_presets / sizeof all_presets[0]; i++) {
        fx_run_t *one = big(all_presets[i], "per_device_batch_size=2");
        fx_run_t *two = big(all_presets[i], "per_device_batch_size=4");
        assert_int_equal(2 * one->r.layers[3].saved_device_bytes,
                         two->r.layers[3].saved_device_bytes);
        assert_int_equal(2 * one->r.layers[3].offloaded_bytes, two->r.layers[3].offloaded_bytes);
        assert_int_equal(2 * one->r.recompute_flops, two->r.recompute_flops);
        fx_free(one);
        fx_free(two);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_preset_by_hand),
        cmocka_unit_test(test_maxtext_kept_sets),
        cmocka_unit_test(test_unused_reported),
        cmocka_unit_test(test_unused_by_predicate),
        cmocka_unit_test(test_unknown_names_rejected),
        cmocka_unit_test(test_full_keeps_least),
        cmocka_unit_test(test_offload_never_raises_peak),
        cmocka_unit_test(test_batch_doubles_activations),
    };
    return cmocka_run_group_tests_name("policy", tests, NULL, NULL);
}
