/* SPDX-License-Identifier: MIT */
/*
 * test_mesh.c: the per-device view of a sharded run: Megatron's Table 2 on
 * the gpt3 graph, a pipeline worked by hand, published parameter counts,
 * per-device shapes on an fsdp x tensor x context mesh, FP8 residuals,
 * optimizers, vocabulary tiling, and every mesh error.
 */
#include "fixtures.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static fx_run_t *run(const char *const *args) {
    return fx_analyze_ok(NULL, args);
}

/* Korthikanti et al. 2022, Table 2, bytes per layer per device with t = 8,
   s = 2048, b = 1, h = 12288, a = 96; remat adds the LayerNorms' fp32 mean
   and rstd (16sb, divided by t where sequence parallelism shards them).
   Tensor parallelism: 8 devices on ici_tensor_parallelism, one sequence per
   tensor group (per_device_batch_size 1/8), activation_embed replicated as in
   Megatron (MaxText's default rules shard it over tensor). Sequence
   parallelism: activation_norm_length over tensor too. */
static uint64_t megatron_row(const char *policy, bool sp) {
    const char *args[] = {"model_name=gpt3-175b",
                          "num_devices=8",
                          "ici_tensor_parallelism=8",
                          "per_device_batch_size=0.125",
                          "scan_layers=false",
                          policy,
                          sp ? "logical_axis_rules=activation_embed:,activation_norm_length:tensor"
                             : "logical_axis_rules=activation_embed:",
                          NULL};
    fx_run_t *f = run(args);
    uint64_t v = f->r.layers[7].saved_device_bytes;
    fx_free(f);
    return v;
}

static void test_megatron_table2(void **state) {
    (void)state;
    const uint64_t s = 2048, b = 1, h = 12288, a = 96, t = 8, sbh = s * b * h;
    /* tensor parallel: sbh(10 + 24/t + 5as/(ht)) */
    assert_int_equal(megatron_row("remat_policy=none", false),
                     sbh * 10 + sbh * 24 / t + 5 * a * s * s * b / t + 16 * s * b);
    /* tensor + sequence parallel: sbh(34/t + 5as/(ht)) */
    assert_int_equal(megatron_row("remat_policy=none", true),
                     sbh * 34 / t + 5 * a * s * s * b / t + 16 * s * b / t);
    /* tensor parallel + selective recompute: sbh(10 + 24/t) */
    assert_int_equal(megatron_row("remat_policy=selective", false),
                     sbh * 10 + sbh * 24 / t + 16 * s * b);
    /* tensor + sequence parallel + selective: 34sbh/t */
    assert_int_equal(megatron_row("remat_policy=selective", true), sbh * 34 / t + 16 * s * b / t);
    /* full recompute keeps the layer input: 2sbh, 2sbh/t when sharded */
    assert_int_equal(megatron_row("remat_policy=full", false), 2 * sbh);
    assert_int_equal(megatron_row("remat_policy=full", true), 2 * sbh / t);
    /* the figures themselves, for the record */
    assert_int_equal(megatron_row("remat_policy=none", false), 578846720u);
    assert_int_equal(megatron_row("remat_policy=selective", true), 106958848u);
}

/* The mini layer (fixtures.c) in a 2-stage pipeline of 4 layers, 2
   micro-batches. per_device_batch_size=2 on 2 devices: 4 sequences a step,
   2 a micro-batch, all on each stage (no batch sharding).
   Stage 0 holds micro-batches 1 and 2 (1F1B: stages - 0), stage 1 one.
   Static per stage: 2 layers x 64 params: params 512, grads 512, adamw 1024.
   full keeps x (16 B) a layer: in flight 1 x 2 x 16 = 32 on stage 0.
   Stage 0: 2048 + 32 + x0 16; layer 0: 2096 + 64, then 2112; layer 1:
   2176, then 2128; the output leaves for stage 1, its gradient comes back;
   layer 1 backward peaks at 2128 + 112 = 2240 (test_sim.c's profile).
   Stage 1: 2048 + x 16 = 2064; after forward x2, x3 and y3: 2096; the
   output leaves and its gradient arrives; backward 2096 + 112 = 2208. */
static void test_pipeline_by_hand(void **state) {
    (void)state;
    const char *args[] = {"model_name=default",        "per_device_batch_size=2",
                          "base_emb_dim=4",            "base_mlp_dim=8",
                          "base_num_decoder_layers=4", "num_devices=2",
                          "ici_pipeline_parallelism=2", "remat_policy=full",
                          NULL};
    fx_run_t *f = fx_analyze_ok(fx_mini_graph, args);
    assert_int_equal(f->r.nstages, 2);
    assert_int_equal(f->r.microbatches, 2);
    const remat_stage_row_t *s0 = &f->r.stages[0], *s1 = &f->r.stages[1];
    assert_int_equal(s0->in_flight, 2);
    assert_int_equal(s1->in_flight, 1);
    /* stage 0 holds L = 4 layers' worth: 2 micro-batches x 2 layers x 16 B */
    assert_int_equal(s0->inflight_bytes + 2 * f->r.layers[0].saved_device_bytes, 4 * 16);
    assert_int_equal(s0->static_bytes, 2048);
    assert_int_equal(s0->peak_bytes, 2240);
    assert_int_equal(s1->peak_bytes, 2208);
    assert_int_equal(f->r.worst_stage, 0);
    assert_int_equal(f->r.peak_bytes, 2240);
    assert_int_equal(f->r.peak_at.stage, 0);
    assert_int_equal(f->r.peak_at.layer, 1);
    assert_int_equal(f->r.breakdown[REMAT_CAT_INFLIGHT], 32);
    fx_free(f);
    /* 4 micro-batches: stage 0 still holds at most 2 (stages - 0). */
    const char *more[] = {"model_name=default",        "per_device_batch_size=2",
                          "base_emb_dim=4",            "base_mlp_dim=8",
                          "base_num_decoder_layers=4", "num_devices=2",
                          "ici_pipeline_parallelism=2", "num_pipeline_microbatches=4",
                          NULL};
    f = fx_analyze_ok(fx_mini_graph, more);
    assert_int_equal(f->r.stages[0].in_flight, 2);
    assert_int_equal(f->r.layers[0].saved_device_bytes, 8); /* one sequence a micro-batch */
    fx_free(f);
}

/* Published sizes (MaxText model configs; Llama and GPT-3 papers). */
static void test_param_counts(void **state) {
    (void)state;
    static const struct {
        const char *model;
        double published;
    } models[] = {{"model_name=llama2-7b", 6.74e9},     {"model_name=llama2-70b", 68.98e9},
                  {"model_name=llama3-8b", 8.03e9},     {"model_name=llama3-70b", 70.55e9},
                  {"model_name=llama3.1-405b", 405.85e9}, {"model_name=mistral-7b", 7.24e9},
                  {"model_name=gpt3-175b", 175e9}};
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        const char *args[] = {models[i].model, "per_device_batch_size=1", NULL};
        fx_run_t *f = run(args);
        double err = fabs((double)f->r.param_count - models[i].published) / models[i].published;
        if (err > 0.005) {
            fail_msg("%s: %llu params, %.2f%% from %.4g", models[i].model,
                     (unsigned long long)f->r.param_count, 100 * err, models[i].published);
        }
        /* adamw: mu and nu in fp32, 8 bytes a param; grads fp32. */
        assert_int_equal(f->r.optimizer_bytes, 8 * f->r.param_count);
        assert_int_equal(f->r.grad_bytes, 4 * f->r.param_count);
        fx_free(f);
    }
    const char *exact[] = {"model_name=llama3-70b", "per_device_batch_size=1", NULL};
    fx_run_t *f = run(exact);
    assert_int_equal(f->r.param_count, 70553706496ull);
    fx_free(f);
}

static const remat_tensor_row_t *row(const fx_run_t *f, const char *name) {
    return &f->r.profiles[0].tensors[fx_tensor(f->graph, name)];
}

/* llama3-8b, 16 devices: fsdp=4 x tensor=2 x context=2, per_device_batch 1.
   Global batch 16 over activation_batch (fsdp): 4; seq 2048 over context:
   1024; heads 32/2 = 16, kv heads 8/2 = 4, mlp 14336/2 = 7168, embed over
   activation_embed (tensor): 2048. Weights: embed over fsdp 4096/4 = 1024,
   heads over tensor. */
static void test_shapes_fsdp_tensor_context(void **state) {
    (void)state;
    const char *args[] = {"model_name=llama3-8b",
                          "num_devices=16",
                          "ici_fsdp_parallelism=4",
                          "ici_tensor_parallelism=2",
                          "ici_context_parallelism=2",
                          "per_device_batch_size=1",
                          "remat_policy=minimal",
                          NULL};
    fx_run_t *f = run(args);
    const uint64_t q[] = {4, 1024, 16, 128}, k[] = {4, 1024, 4, 128}, x[] = {4, 1024, 2048},
                   wq[] = {1024, 16, 128}, gate[] = {4, 1024, 7168}, lse[] = {4, 16, 1024};
    assert_memory_equal(row(f, "q")->shape, q, sizeof q);
    assert_memory_equal(row(f, "k")->shape, k, sizeof k);
    assert_memory_equal(row(f, "x")->shape, x, sizeof x);
    assert_memory_equal(row(f, "wq")->shape, wq, sizeof wq);
    assert_memory_equal(row(f, "gate")->shape, gate, sizeof gate);
    assert_memory_equal(row(f, "attn_lse")->shape, lse, sizeof lse);
    assert_int_equal(row(f, "q")->bytes, 4ull * 1024 * 16 * 128 * 2);
    assert_int_equal(row(f, "wq")->bytes, 1024ull * 16 * 128 * 4);
    /* minimal keeps x, q, k, v, out_proj, gate, up per device. */
    uint64_t kept = 4ull * 1024 * (2048 + 16 * 128 + 2 * 4 * 128 + 2048 + 2 * 7168) * 2;
    assert_int_equal(f->r.layers[0].saved_device_bytes, kept);
    /* Flash FLOPs per device: 4 b h s t d with the whole key length t (K
       and V are all-gathered over context): forward of the layer includes
       4 * 4 * 16 * 1024 * 2048 * 128. The re-run kernel is all of minimal's
       attention recompute. */
    uint64_t flash = 4ull * 4 * 16 * 1024 * 2048 * 128;
    assert_true(f->r.layers[0].recompute_flops > flash);
    /* Static: 1/(fsdp x tensor) of the matrices. The device holds
       param_count_device params; 16 devices hold the model once over
       (norm scales replicate over tensor). */
    assert_true(f->r.param_count_device * 8 > f->r.param_count);
    assert_true(f->r.param_count_device * 8 < f->r.param_count + f->r.param_count / 100);
    fx_free(f);
}

/* The collective buffers have their own rows: with fsdp on, the gathered
   weights of the layer (and the next, prefetched) and, in backward, the
   full-size weight gradients; with context on, the K/V gather. */
static void test_collective_rows(void **state) {
    (void)state;
    const char *args[] = {"model_name=llama3-8b",     "num_devices=8",
                          "ici_fsdp_parallelism=4",   "ici_context_parallelism=2",
                          "per_device_batch_size=1",  "fsdp_prefetch=false",
                          NULL};
    fx_run_t *f = run(args);
    /* The peak is the logits' backward, with the [4096, 128256] fp32 logits
       weight gathered over fsdp (no prefetch in the head). */
    assert_int_equal(f->r.peak_at.where, REMAT_AT_HEAD_POST);
    assert_string_equal(f->r.peak_at.op, "logits");
    assert_int_equal(f->r.breakdown[REMAT_CAT_GATHERED], 4096ull * 128256 * 4);
    fx_free(f);
    /* One layer's weights, fsdp removed (no tensor axis): 218,112,000
       params in fp32 (the layer of llama3-8b). */
    uint64_t layer_params = 4096ull * 4096 * 2 + 4096ull * 1024 * 2 + 3 * 4096ull * 14336 + 2 * 4096;
    assert_int_equal(layer_params, 218112000ull);
    /* At a layer moment in backward, the weight-gradient buffer is there. */
    const char *bwd[] = {"model_name=llama3-8b",     "num_devices=8",
                         "ici_fsdp_parallelism=8",   "per_device_batch_size=1",
                         "num_vocab_tiling=16",      "remat_policy=minimal",
                         NULL};
    f = run(bwd);
    assert_int_equal(f->r.peak_at.where, REMAT_AT_LAYER);
    assert_int_equal(f->r.peak_at.step, REMAT_STEP_BACKWARD);
    assert_int_equal(f->r.breakdown[REMAT_CAT_GATHERED], 2 * layer_params * 4); /* + prefetch */
    assert_int_equal(f->r.breakdown[REMAT_CAT_GRAD_BUFFER], layer_params * 4);
    fx_free(f);
}

/* Context parallelism: an attention-only layer, x [b,s,h,d] -> k = 2x,
   v = 2x -> flash(x, k, v) -> y = x + o. b=1 (0.5 x 2 devices), s = 8 over
   context 2 = 4, h=2, d=4: x, k, v, o are 32 elements, 64 B; lse 32 B.
   forward under full: +k 64 | +v 128 | +o +lse 224, and K and V gathered
   to the whole sequence for the kernel: (64 + 64) x (2 - 1) = 128 more,
   352; then k, v, lse go: 64 | +y 128, -o 64. Kernel FLOPs use the whole
   key length: 4 b h s t d = 4 * 1 * 2 * 4 * 8 * 4 = 1024. */
static void test_context_kv_gather(void **state) {
    (void)state;
    static const char *const graph =
        "{\"format\":\"remat-graph/1\",\"name\":\"attn\",\"dims\":{"
        "\"b\":{\"from\":\"per_device_batch_size\",\"axis\":\"activation_batch\"},"
        "\"s\":{\"from\":\"max_target_length\",\"axis\":\"activation_length\"},"
        "\"h\":{\"from\":\"base_num_query_heads\",\"axis\":\"activation_heads\"},"
        "\"d\":{\"from\":\"head_dim\"}},"
        "\"layer\":{\"inputs\":[\"x\"],\"outputs\":[\"y\"],\"tensors\":{"
        "\"x\":{\"shape\":[\"b\",\"s\",\"h\",\"d\"],\"dtype\":\"act\"},"
        "\"k\":{\"shape\":[\"b\",\"s\",\"h\",\"d\"],\"dtype\":\"act\"},"
        "\"v\":{\"shape\":[\"b\",\"s\",\"h\",\"d\"],\"dtype\":\"act\"},"
        "\"o\":{\"shape\":[\"b\",\"s\",\"h\",\"d\"],\"dtype\":\"act\"},"
        "\"lse\":{\"shape\":[\"b\",\"h\",\"s\"],\"dtype\":\"fp32\"},"
        "\"y\":{\"shape\":[\"b\",\"s\",\"h\",\"d\"],\"dtype\":\"act\"}},\"ops\":["
        "{\"name\":\"kk\",\"op\":\"scale\",\"value\":2,\"in\":[\"x\"],\"out\":[\"k\"]},"
        "{\"name\":\"vv\",\"op\":\"scale\",\"value\":2,\"in\":[\"x\"],\"out\":[\"v\"]},"
        "{\"name\":\"fa\",\"op\":\"flash_attention\",\"in\":[\"x\",\"k\",\"v\"],"
        "\"out\":[\"o\",\"lse\"]},"
        "{\"name\":\"res\",\"op\":\"add\",\"in\":[\"x\",\"o\"],\"out\":[\"y\"]}]}}";
    const char *args[] = {"model_name=default",        "per_device_batch_size=0.5",
                          "max_target_length=8",       "base_num_query_heads=2",
                          "head_dim=4",                "base_num_decoder_layers=1",
                          "num_devices=2",             "ici_context_parallelism=2",
                          NULL};
    fx_run_t *f = fx_analyze_ok(graph, args);
    assert_int_equal(f->r.profiles[0].fwd_peak_rel, 352);
    /* 4 b h s t d forward; the two scales (32 each) and the add (32) */
    assert_int_equal(f->r.layers[0].forward_flops, 1024 + 32 + 32 + 32);
    fx_free(f);
}

/* FP8: the residuals that only weight einsums read are kept in 1 byte an
   element plus a 4-byte scale; nothing else changes. Tiny llama under
   none (scan_layers=false): xn (read by the q/k/v projections), hn (wi_0,
   wi_1) and mix (wo) go from 2 to 1 byte an element; x, q, k, v, attn_out
   (also read by flash), gate, up, gate_act (read by silu/mul) stay. */
static void test_fp8_residuals(void **state) {
    (void)state;
    const char *base[] = {"model_name=default",     "per_device_batch_size=1",
                          "max_target_length=4",    "base_emb_dim=8",
                          "base_num_query_heads=2", "base_num_kv_heads=1",
                          "head_dim=4",             "base_mlp_dim=16",
                          "vocab_size=16",          "base_num_decoder_layers=2",
                          "remat_policy=none",      "scan_layers=false",
                          NULL,                     NULL};
    fx_run_t *bf = run(base);
    base[12] = "quantization=fp8";
    fx_run_t *f8 = run(base);
    /* xn: 32 elements, 64 -> 36; hn: 64 -> 36; mix: 64 elements, 128 -> 68 */
    assert_int_equal(bf->r.layers[0].saved_device_bytes - f8->r.layers[0].saved_device_bytes,
                     (64 - 36) + (64 - 36) + (128 - 68));
    assert_int_equal(f8->r.layers[0].saved_device_bytes, 1024 - 116);
    /* activations in flight and FLOPs are unchanged */
    assert_int_equal(bf->r.model_flops, f8->r.model_flops);
    fx_free(bf);
    fx_free(f8);
}

static void test_optimizers_and_host_offload(void **state) {
    (void)state;
    const char *sgd[] = {"model_name=llama3-8b", "per_device_batch_size=1", "opt_type=sgd", NULL};
    fx_run_t *f = run(sgd);
    assert_int_equal(f->r.optimizer_bytes, 0);
    fx_free(f);
    /* adafactor (optax defaults): a param whose two largest dims are both at
       least 128 keeps one fp32 statistic per row and per column of them;
       others keep the full second moment. One llama layer with E=128,
       Hq=2, Hkv=1, D=64, M=256, V=256:
         norms 128 + 128 (rank 1, full)
         wq [128,2,64] 16384, wk and wv [128,1,64] 8192 each, wo [2,64,128]
           16384: second-largest dim 64 < 128, full
         wi_0, wi_1 [128,256], wo [256,128]: 16384/256 + 16384/128 = 384 each
       layer 50560; head: embedding [256,128] 384, final norm 128, logits
       [128,256] 384: 896. (50560 + 896) x 4 bytes = 205824. */
    const char *af[] = {"model_name=default",      "per_device_batch_size=1",
                        "base_emb_dim=128",        "base_num_query_heads=2",
                        "base_num_kv_heads=1",     "head_dim=64",
                        "base_mlp_dim=256",        "vocab_size=256",
                        "base_num_decoder_layers=1", "opt_type=adafactor",
                        NULL};
    f = run(af);
    assert_int_equal(f->r.optimizer_bytes, 205824);
    fx_free(f);
    const char *off[] = {"model_name=llama3-8b", "per_device_batch_size=1",
                         "optimizer_memory_host_offload=true",
                         "parameter_memory_host_offload=true", NULL};
    f = run(off);
    assert_int_equal(f->r.breakdown[REMAT_CAT_OPTIMIZER], 0);
    assert_int_equal(f->r.breakdown[REMAT_CAT_PARAMS], 0);
    assert_int_equal(f->r.host_static_bytes, 8 * f->r.param_count + 4 * f->r.param_count);
    assert_int_equal(f->r.host_bytes_per_host, 4 * f->r.host_static_bytes); /* 4 chips */
    fx_free(f);
}

/* num_vocab_tiling divides the live logits (and their gradient). */
static void test_vocab_tiling(void **state) {
    (void)state;
    const char *one[] = {"model_name=llama3-8b", "per_device_batch_size=2", NULL};
    const char *four[] = {"model_name=llama3-8b", "per_device_batch_size=2",
                          "num_vocab_tiling=4", NULL};
    fx_run_t *a = run(one), *b = run(four);
    /* the peak is the loss backward: dlogits fp32 [2,2048,128256] + 4 B */
    uint64_t logits32 = 2ull * 2048 * 128256 * 4;
    assert_int_equal(a->r.breakdown[REMAT_CAT_ACT_GRADS], logits32 + 4);
    assert_true(b->r.peak_bytes < a->r.peak_bytes);
    assert_int_equal(a->r.peak_bytes - b->r.peak_bytes >= logits32 * 3 / 4, 1);
    fx_free(a);
    fx_free(b);
}

static void expect_error(const char *const *args, const char *needle) {
    fx_run_t *f = fx_analyze(NULL, args);
    assert_int_equal(f->st, REMAT_E_CONFIG);
    if (!strstr(f->err.text, needle)) {
        fail_msg("error '%s' lacks '%s'", f->err.text, needle);
    }
    fx_free(f);
}

static void test_mesh_errors(void **state) {
    (void)state;
    const char *mismatch[] = {"num_devices=8", "ici_fsdp_parallelism=4", "ici_tensor_parallelism=4",
                              "per_device_batch_size=1", NULL};
    expect_error(mismatch, "mesh fsdp=4 x tensor=4 has 16 devices, but num_devices=8");
    const char *fill[] = {"num_devices=12", "ici_tensor_parallelism=8", "per_device_batch_size=1",
                          NULL};
    expect_error(fill, "does not divide num_devices=12");
    const char *uneven[] = {"num_devices=64", "ici_fsdp_parallelism=1", "ici_tensor_parallelism=64",
                            "per_device_batch_size=1", NULL};
    expect_error(uneven, "tensor 'wq' dim 'heads' of 32 does not divide over 64 shards (tensor, "
                         "logical axis heads)");
    const char *axis[] = {"logical_axis_rules=activation_embed:tensr", "per_device_batch_size=1",
                          NULL};
    expect_error(axis, "unknown mesh axis 'tensr'");
    const char *two[] = {"ici_data_parallelism=-1", "per_device_batch_size=1", NULL};
    expect_error(two, "both -1");
    const char *stages[] = {"num_devices=3", "ici_pipeline_parallelism=3", "per_device_batch_size=1",
                            NULL};
    expect_error(stages, "32 layers do not split evenly over 3 pipeline stages");
    const char *cp[] = {"attention=dot_product", "num_devices=2", "ici_context_parallelism=2",
                        "per_device_batch_size=1", NULL};
    expect_error(cp, "context parallelism is modelled for flash attention");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_megatron_table2),
        cmocka_unit_test(test_pipeline_by_hand),
        cmocka_unit_test(test_param_counts),
        cmocka_unit_test(test_shapes_fsdp_tensor_context),
        cmocka_unit_test(test_collective_rows),
        cmocka_unit_test(test_context_kv_gather),
        cmocka_unit_test(test_fp8_residuals),
        cmocka_unit_test(test_optimizers_and_host_offload),
        cmocka_unit_test(test_vocab_tiling),
        cmocka_unit_test(test_mesh_errors),
    };
    return cmocka_run_group_tests_name("mesh", tests, NULL, NULL);
}
