/* SPDX-License-Identifier: MIT */
/*
 * test_mesh.c: the per-device view of a sharded run: Megatron's Table 2 on
 * the gpt3 graph, a pipeline worked by hand, published parameter counts,
 * MaxText's logical axis rules as flax resolves them, per-device shapes on
 * an fsdp x tensor x context mesh, FLOPs of ops on gathered params, FSDP
 * gathers op by op, FP8 residuals, optimizers, the chunked loss
 * (num_vocab_tiling), chips and devices of the hardware profiles, slice
 * names, and every mesh error.
 */
#include "fixtures.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "remat/model/mesh.h"
#include "remat/input/topology.h"

static fx_run_t *run(const char *const *args) {
    return fx_analyze_ok(NULL, args);
}

/* Korthikanti et al. 2022, Table 2, bytes per layer per device with t = 8,
   s = 2048, b = 1, h = 12288, a = 96; remat adds the LayerNorms' fp32 mean
   and rstd (16sb, divided by t where sequence parallelism shards them).
   Tensor parallelism: 8 devices on ici_tensor_parallelism, one sequence per
   tensor group (per_device_batch_size 1/8), activation_embed replicated as in
   Megatron (MaxText's default rules shard it over tensor). Sequence
   parallelism: activation_norm_length over tensor too. Megatron's layer is
   gpt3.dot_product.dropout (test_sim.c). */
static uint64_t megatron_row(const char *policy, bool sp) {
    const char *args[] = {"model_name=gpt3-175b",
                          "attention=dot_product",
                          "dropout_rate=0.1",
                          "enable_dropout=true",
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
    assert_int_equal(megatron_row("remat_policy=everything_saveable", false),
                     sbh * 10 + sbh * 24 / t + 5 * a * s * s * b / t + 16 * s * b);
    /* tensor + sequence parallel: sbh(34/t + 5as/(ht)) */
    assert_int_equal(megatron_row("remat_policy=everything_saveable", true),
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
    assert_int_equal(megatron_row("remat_policy=everything_saveable", false), 578846720u);
    assert_int_equal(megatron_row("remat_policy=selective", true), 106958848u);
}

/* The mini layer (fixtures.c) in a 2-stage pipeline of 4 layers, 2
   micro-batches. per_device_batch_size=2 on 2 devices: 4 sequences a step,
   2 a micro-batch, all on each stage (no batch sharding).
   MaxText's circular pipeline: each stage's 2 layers repeat R = 4 / 2 = 2
   times, one layer an iteration; 2 x 2 + 1 = 5 iterations (1 of bubble),
   each keeping its layer's residuals to the backward.
   Static per stage: 2 layers x 64 params: params 512, adamw 1024 (the
   gradients, 512, come at the stage's turn to backward). Reserve 0.
   full keeps x (16 B) a layer: one micro-batch through the stage keeps
   32, the 5 iterations 5 x 16 = 80 = 2 x 32 + 32 / 2; the simulated
   micro-batch's 32 aside, 48 in flight on every stage; and the loop
   state's shift buffer, one micro-batch's layer input (16; 2 micro-batches
   do not outnumber 2 stages: no circular storage): 64.
   Stage 1 without in-flight bytes: 1536 + x 16 = 1552; after forward x2,
   x3 and y3: 1584; the output leaves, its gradient and the gradients
   arrive: 2096; backward 2096 + 112 = 2208 (test_sim.c's profile); with
   them 2272. Stage 0 walks the same bytes: 2272 at its layer 1, and it is
   the worst stage (the first of equals). */
static void test_pipeline_by_hand(void **state) {
    (void)state;
    const char *args[] = {"model_name=default",        "per_device_batch_size=2",
                          "base_emb_dim=4",            "base_mlp_dim=8",
                          "base_num_decoder_layers=4", "num_devices=2",
                          "ici_pipeline_parallelism=2", "remat_policy=full",
                          "reserve_fraction=0", "scan_layers=false",        NULL};
    fx_run_t *f = fx_analyze_ok(fx_mini_graph, args);
    assert_int_equal(f->r.nstages, 2);
    assert_int_equal(f->r.microbatches, 2);
    const remat_stage_row_t *s0 = &f->r.stages[0], *s1 = &f->r.stages[1];
    assert_int_equal(s0->in_flight, 2);
    assert_int_equal(s1->in_flight, 2);
    assert_int_equal(f->r.pipeline_repeats, 2);
    assert_int_equal(f->r.pipeline_iterations, 5);
    assert_int_equal(f->r.layers[0].saved_device_bytes, 16);
    assert_int_equal(s0->inflight_bytes, 64);
    assert_int_equal(s1->inflight_bytes, 64);
    assert_int_equal(s0->static_bytes, 1536);
    assert_int_equal(s0->peak_bytes, 2272);
    assert_int_equal(s1->peak_bytes, 2272);
    assert_int_equal(f->r.worst_stage, 0);
    assert_int_equal(f->r.peak_bytes, 2272);
    assert_int_equal(f->r.peak_at.stage, 0);
    assert_int_equal(f->r.peak_at.layer, 1);
    assert_int_equal(f->r.breakdown[REMAT_CAT_INFLIGHT], 64);
    fx_free(f);
    /* 4 micro-batches of one sequence: 4 x 2 + 1 = 9 iterations of 8 B,
       72, less the simulated micro-batch's 16; the loop state: shift, 4
       micro-batches of circular storage (4 outnumber 2 stages, the layers
       repeat) and its mover, 6 x 8 */
    const char *more[] = {"model_name=default",        "per_device_batch_size=2",
                          "base_emb_dim=4",            "base_mlp_dim=8",
                          "base_num_decoder_layers=4", "num_devices=2",
                          "ici_pipeline_parallelism=2", "num_pipeline_microbatches=4",
                          "remat_policy=full",          NULL};
    f = fx_analyze_ok(fx_mini_graph, more);
    assert_int_equal(f->r.stages[0].in_flight, 4);
    assert_int_equal(f->r.pipeline_iterations, 9);
    assert_int_equal(f->r.layers[0].saved_device_bytes, 8); /* one sequence a micro-batch */
    assert_int_equal(f->r.stages[0].inflight_bytes, 56 + 48);
    fx_free(f);
    /* 2 layers a stage per iteration (R = 1) and delayed forwarding (a
       bubble of 2 (S - 1) = 2 iterations, and MaxText's default of 2 x S =
       4 micro-batches of one sequence): 4 + 2 = 6 iterations of both
       layers, 6 x 16 = 96, less 16; the loop state: shift and the previous
       outputs, 2 x 8 */
    const char *two[] = {"model_name=default",          "per_device_batch_size=2",
                         "base_emb_dim=4",              "base_mlp_dim=8",
                         "base_num_decoder_layers=4",   "num_devices=2",
                         "ici_pipeline_parallelism=2",  "num_layers_per_pipeline_stage=2",
                         "pipeline_delay_activation_forwarding=true", "remat_policy=full",
                         NULL};
    f = fx_analyze_ok(fx_mini_graph, two);
    assert_int_equal(f->r.pipeline_repeats, 1);
    assert_int_equal(f->r.microbatches, 4);
    assert_int_equal(f->r.pipeline_iterations, 6);
    assert_int_equal(f->r.stages[0].inflight_bytes, 80 + 16);
    fx_free(f);
}

/* Published sizes of every built-in model remat analyzes, within 0.5%
   (docs/config.md, "Models"). Sources: Llama 2 paper (Touvron et al.
   2023, Table 1: 7B, 13B, 70B) with the exact counts of Meta's checkpoints
   as the Hugging Face model pages give them (6.74B, 13.0B, 69.0B); Llama 3,
   3.1 and 3.3 model pages on Hugging Face (8.03B, 70.6B, 406B: the 405B
   checkpoint has 405.85B); Mistral 7B model page (7.24B); Qwen2.5 model
   cards (7.61B, 14.7B); GPT-3 paper (Brown et al. 2020, Table 2.1: 175.0B).
   gpt3-6b, gpt3-22b and gpt3-52k are MaxText's configs with no published
   count: the count is MaxText's gpt3 block at the yml's dims (MaxText
   e591f30, configs/models/gpt3-6b.yml, gpt3-22b.yml and gpt3-52k.yml),
   L(12E^2 + 13E) + VE + PE + 2E with a position table of P =
   trainable_position_size rows: 16384 for gpt3-6b (E 3072, 48 layers,
   V 32768: 5,588,736,000) and gpt3-22b, 2048 for gpt3-52k. */
static void test_param_counts(void **state) {
    (void)state;
    static const struct {
        const char *model;
        double published;
    } models[] = {{"model_name=llama2-7b", 6.74e9},       {"model_name=llama2-13b", 13.0e9},
                  {"model_name=llama2-70b", 68.98e9},     {"model_name=llama3-8b", 8.03e9},
                  {"model_name=llama3.1-8b", 8.03e9},     {"model_name=llama3-70b", 70.55e9},
                  {"model_name=llama3.1-70b", 70.55e9},   {"model_name=llama3.3-70b", 70.55e9},
                  {"model_name=llama3-405b", 405.85e9},   {"model_name=llama3.1-405b", 405.85e9},
                  {"model_name=mistral-7b", 7.24e9},      {"model_name=qwen2.5-7b", 7.61e9},
                  {"model_name=qwen2.5-14b", 14.7e9},     {"model_name=gpt3-175b", 175e9},
                  {"model_name=gpt3-22b", 22049107968.0}, {"model_name=gpt3-52k", 52464.0},
                  {"model_name=gpt3-6b", 5588736000.0}};
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        const char *args[] = {models[i].model, "per_device_batch_size=1", NULL};
        fx_run_t *f = run(args);
        double err = fabs((double)f->r.param_count - models[i].published) / models[i].published;
        if (err > 0.005) {
            fail_msg("%s: %llu params, %.2f%% from %.4g", models[i].model,
                     (unsigned long long)f->r.param_count, 100 * err, models[i].published);
        }
        /* adamw (adam_pax for the gpt3 models): mu and nu in fp32, 8 bytes
           a param; grads fp32. */
        assert_int_equal(f->r.optimizer_bytes, 8 * f->r.param_count);
        assert_int_equal(f->r.grad_bytes, 4 * f->r.param_count);
        fx_free(f);
    }
    const char *exact[] = {"model_name=llama3-70b", "per_device_batch_size=1", NULL};
    fx_run_t *f = run(exact);
    assert_int_equal(f->r.param_count, 70553706496ull);
    fx_free(f);
    /* the gpt3 counts to the parameter, the position table's 16384 rows
       among them (not the sequence's 1024) */
    static const struct {
        const char *model;
        unsigned long long count;
    } gpt3[] = {{"model_name=gpt3-6b", 5588736000ull}, {"model_name=gpt3-22b", 22049107968ull}};
    for (size_t i = 0; i < 2; i++) {
        const char *args[] = {gpt3[i].model, "per_device_batch_size=1", NULL};
        f = run(args);
        assert_int_equal(f->r.param_count, gpt3[i].count);
        fx_free(f);
    }
}

static const remat_tensor_row_t *row(const fx_run_t *f, const char *name) {
    return &f->r.profiles[0].tensors[fx_tensor(f->graph, name)];
}

#define AX(x) (1u << REMAT_AXIS_##x)

/* MaxText's logical axis rules (base.yml at e591f30) with flax's
   resolution per tensor: rules in order; a rule applies to the first dim
   with its logical name if that dim is unassigned and none of the rule's
   mesh axes is used by another dim. Mesh: fsdp 2, fsdp_transpose 2,
   tensor 2 (8 devices). */
static void test_logical_axis_rules(void **state) {
    (void)state;
    const char *args[] = {"num_devices=8", "ici_fsdp_parallelism=2",
                          "ici_fsdp_transpose_parallelism=2", "ici_tensor_parallelism=2", NULL};
    remat_config_t cfg;
    remat_error_t err;
    remat_error_init(&err);
    assert_int_equal(remat_config_build(NULL, 4, (char *const *)args, &cfg, &err), REMAT_OK);
    remat_mesh_t m;
    assert_int_equal(remat_mesh_build(&cfg, &m, &err), REMAT_OK);
    const unsigned embed1 = AX(FSDP) | AX(FSDP_TRANSPOSE) | AX(CONTEXT) | AX(CONTEXT_USP) |
                            AX(EXPERT),
                   embed2 = AX(FSDP) | AX(CONTEXT) | AX(CONTEXT_USP) | AX(EXPERT),
                   mlp = AX(FSDP_TRANSPOSE) | AX(TENSOR) | AX(TENSOR_SEQUENCE) |
                         AX(AUTOREGRESSIVE),
                   tp = AX(TENSOR) | AX(TENSOR_SEQUENCE) | AX(AUTOREGRESSIVE);
    unsigned out[3];
    /* [embed, mlp]: the mlp rule comes first in base.yml and takes
       fsdp_transpose (with tensor...); embed's first rule (fsdp +
       fsdp_transpose + context + expert) clashes, so its second applies:
       fsdp + context + expert. 2 and 4 shards. */
    remat_mesh_tensor_axes(&m, (const char *[]){"embed", "mlp"}, 2, out);
    assert_int_equal(out[0], embed2);
    assert_int_equal(out[1], mlp);
    assert_int_equal(remat_mesh_product(&m, out[0]), 2);
    assert_int_equal(remat_mesh_product(&m, out[1]), 4);
    /* the dims' order does not matter, the rules' does */
    remat_mesh_tensor_axes(&m, (const char *[]){"mlp", "embed"}, 2, out);
    assert_int_equal(out[0], mlp);
    assert_int_equal(out[1], embed2);
    /* [embed, heads, kv]: no clash, embed keeps fsdp x fsdp_transpose (4);
       heads takes tensor...; "kv" maps to nothing */
    remat_mesh_tensor_axes(&m, (const char *[]){"embed", "heads", "kv"}, 3, out);
    assert_int_equal(out[0], embed1);
    assert_int_equal(out[1], tp);
    assert_int_equal(out[2], 0);
    assert_int_equal(remat_mesh_product(&m, out[0]), 4);
    /* a square [embed, embed] weight: each rule applies to the first dim
       with the name only, so the second dim stays whole */
    remat_mesh_tensor_axes(&m, (const char *[]){"embed", "embed"}, 2, out);
    assert_int_equal(out[0], embed1);
    assert_int_equal(out[1], 0);
    /* the logits as the head names them: batch over data + fsdp +
       fsdp_transpose + expert (MaxText adds stage; remat runs the head per
       micro-batch, so not), vocab over tensor + tensor_sequence (its
       first rule), length over context + context_usp_ulysses */
    remat_mesh_tensor_axes(&m,
                           (const char *[]){"activation_embed_and_logits_batch",
                                            "activation_length", "activation_vocab"},
                           3, out);
    assert_int_equal(out[0], AX(DATA) | AX(FSDP) | AX(FSDP_TRANSPOSE) | AX(EXPERT));
    assert_int_equal(out[1], AX(CONTEXT) | AX(CONTEXT_USP));
    assert_int_equal(out[2], AX(TENSOR) | AX(TENSOR_SEQUENCE));
    /* a rule given in the config replaces the name's default rules */
    const char *over[] = {"num_devices=8", "ici_fsdp_parallelism=8",
                          "logical_axis_rules=embed:tensor", NULL};
    assert_int_equal(remat_config_build(NULL, 3, (char *const *)over, &cfg, &err), REMAT_OK);
    assert_int_equal(remat_mesh_build(&cfg, &m, &err), REMAT_OK);
    remat_mesh_tensor_axes(&m, (const char *[]){"embed", "kv"}, 2, out);
    assert_int_equal(out[0], AX(TENSOR));
    assert_int_equal(out[1], 0);
    /* and keeps the first one's place in the order: mlp's rule comes
       before it and takes tensor, so embed gets nothing */
    remat_mesh_tensor_axes(&m, (const char *[]){"embed", "mlp"}, 2, out);
    assert_int_equal(out[0], 0);
    assert_int_equal(out[1], mlp);
}

/* The same rules on the built-in llama graph, tiny (batch 1, seq 4, embed 8,
   heads 2, kv heads 2, head_dim 4, mlp 16) on fsdp 2 x fsdp_transpose 2 x
   tensor 2:
     wi_0 [embed, mlp]: mlp / (fsdp_transpose x tensor) = 4, embed / fsdp = 4
     wq [embed, heads, head_dim]: embed / (fsdp x fsdp_transpose) = 2,
       heads / tensor = 1
     ln1_scale: its `axes` name it "norm" (over tensor), not its dim's
       weight axis "embed": 8 / 2 = 4
     x [batch, seq, embed]: global batch 8 / (fsdp x fsdp_transpose) = 2,
       embed (activation_embed) / tensor = 4. */
static void test_axis_rules_on_llama(void **state) {
    (void)state;
    const char *args[] = {"model_name=default",      "per_device_batch_size=1",
                          "max_target_length=4",     "base_emb_dim=8",
                          "base_num_query_heads=2",  "base_num_kv_heads=2",
                          "head_dim=4",              "base_mlp_dim=16",
                          "vocab_size=16",           "base_num_decoder_layers=2",
                          "num_devices=8",           "ici_fsdp_parallelism=2",
                          "ici_fsdp_transpose_parallelism=2", "ici_tensor_parallelism=2",
                          NULL};
    fx_run_t *f = run(args);
    const uint64_t wi0[] = {4, 4}, wq[] = {2, 1, 4}, scale[] = {4}, x[] = {2, 4, 4};
    assert_memory_equal(row(f, "wi_0")->shape, wi0, sizeof wi0);
    assert_memory_equal(row(f, "wq")->shape, wq, sizeof wq);
    assert_memory_equal(row(f, "ln1_scale")->shape, scale, sizeof scale);
    assert_memory_equal(row(f, "x")->shape, x, sizeof x);
    fx_free(f);
}

/* llama3-8b, 16 devices: fsdp=4 x tensor=2 x context=2, per_device_batch 1.
   Global batch 16 over activation_batch (fsdp): 4; seq 2048 over context:
   1024; heads 32/2 = 16, kv heads 8/2 = 4, mlp 14336/2 = 7168, embed over
   activation_embed (tensor): 2048. Weights: embed over fsdp x context
   (MaxText's embed rule has context) 4096/8 = 512, heads over tensor. */
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
                   wq[] = {512, 16, 128}, gate[] = {4, 1024, 7168}, lse[] = {4, 16, 1024},
                   q_t[] = {4, 16, 1024, 128};
    assert_memory_equal(row(f, "q")->shape, q, sizeof q);
    assert_memory_equal(row(f, "q_t")->shape, q_t, sizeof q_t);
    assert_memory_equal(row(f, "k")->shape, k, sizeof k);
    assert_memory_equal(row(f, "x")->shape, x, sizeof x);
    assert_memory_equal(row(f, "wq")->shape, wq, sizeof wq);
    assert_memory_equal(row(f, "gate")->shape, gate, sizeof gate);
    assert_memory_equal(row(f, "attn_lse")->shape, lse, sizeof lse);
    assert_int_equal(row(f, "q")->bytes, 4ull * 1024 * 16 * 128 * 2);
    assert_int_equal(row(f, "wq")->bytes, 512ull * 16 * 128 * 4);
    /* minimal keeps x, q, k, v, out_proj, gate, up per device. */
    uint64_t kept = 4ull * 1024 * (2048 + 16 * 128 + 2 * 4 * 128 + 2048 + 2 * 7168) * 2;
    assert_int_equal(f->r.layers[0].saved_device_bytes, kept);
    /* Flash FLOPs per device: 2 x 2 b h s t d with the whole key length t
       (K and V are all-gathered over context), halved for the causal
       kernel: 2 * 4 * 16 * 1024 * 2048 * 128. The re-run kernel is in
       minimal's attention recompute. */
    uint64_t flash = 2ull * 4 * 16 * 1024 * 2048 * 128;
    assert_true(f->r.layers[0].recompute_flops > flash);
    /* Static: every matrix is 1/16 per device (embed / (fsdp x context),
       heads, kv heads, mlp, vocab / tensor; wi's embed falls back to fsdp x
       context as its mlp dim took the fsdp_transpose rule); the norm scales
       ("norm") only / tensor. 65 norms of 4096 (2 a layer, the final one):
       266240 elements. (8030261248 - 266240) / 16 + 266240 / 2. */
    assert_int_equal(f->r.param_count, 8030261248ull);
    assert_int_equal(f->r.param_count_device, (8030261248ull - 266240) / 16 + 266240 / 2);
    fx_free(f);
}

/* Ops compute on params as gathered: the gathered axes (data, fsdp,
   fsdp_transpose, context, expert) undone, tensor kept. gpt3-175b on 512
   devices (fsdp 64 x tensor 8), per_device_batch_size 4, seq 2048:
   per device b = 2048 / 64 = 32, s = 2048, activation embed 12288 / 8 =
   1536, heads 96 / 8 = 12, d = 128, mlp 49152 / 8 = 6144, vocab (logits'
   activation_vocab over tensor) 50304 / 8 = 6288; n = b s 1536.
   Weight einsums contract the whole embed E = 12288 (the weight's embed dim
   is gathered over fsdp; the activation's 1536 is smaller):
     qkv 2 b s E 3 12 128; out_proj 2 b s 12 128 E; fc1, fc2 2 b s E 6144,
     each 2x in backward (activation and weight gradients).
   flash (causal, halved): c = 2 b 12 s s 128 forward, 2c backward.
   Per layer forward: layernorms 8n x 2, qkv, bias add b s 3 12 128, flash
   c, out_proj, bias add n, residual n, fc1, bias add b s 6144, gelu
   8 b s 6144, fc2, bias add n, residual n; backward: layernorms 12n x 2,
   2 qkv, bias b s 3 12 128, 2c, 2 out_proj, bias n, 2 fc1, bias b s 6144,
   gelu 12 b s 6144, 2 fc2, bias n.
   Head: embedding 0 / n, position add n / n, final layernorm 8n / 12n,
   logits 2 b s E 6288 / 2x, loss 4 b s 6288 / 2 b s 6288.
   96 layers + head = 8,700,289,974,534,144 FLOPs a device and step.
   attention=dot_product instead materializes QK^T and PV (2c forward, 4c
   backward, not halved: a softmax is not a kernel that skips blocks), a
   scale (n_s / n_s) and a softmax (5 n_s / 4 n_s) on n_s = b 12 s s
   scores: 96 x (3c + 11 n_s) more, 8,820,738,037,383,168: the 8.8207e15
   of the docs' example (recipe log: 397.246 TFLOP/s x 22.197 s =
   8.818e15). */
static void test_gathered_param_flops(void **state) {
    (void)state;
    const uint64_t b = 32, s = 2048, E = 12288, e = 1536, H = 12, d = 128, m = 6144, v = 6288;
    const uint64_t n = b * s * e, qkv = 2 * b * s * E * 3 * H * d, proj = 2 * b * s * H * d * E,
                   fc = 2 * b * s * E * m, c = 2 * b * H * s * s * d, ns = b * H * s * s;
    const uint64_t fwd = 8 * n + qkv + b * s * 3 * H * d + c + proj + n + n + 8 * n + fc +
                         b * s * m + 8 * b * s * m + fc + n + n;
    const uint64_t bwd = 12 * n + 2 * qkv + b * s * 3 * H * d + 2 * c + 2 * proj + n + 12 * n +
                         2 * fc + b * s * m + 12 * b * s * m + 2 * fc + n;
    const uint64_t head = (n + 8 * n + 2 * b * s * E * v + 4 * b * s * v) +
                          (n + n + 12 * n + 4 * b * s * E * v + 2 * b * s * v);
    const uint64_t flash_model = 96 * (fwd + bwd) + head;
    assert_int_equal(flash_model, 8700289974534144ull);
    const char *args[] = {"model_name=gpt3-175b", "num_devices=512", "ici_fsdp_parallelism=64",
                          "ici_tensor_parallelism=8", "per_device_batch_size=4", NULL, NULL};
    fx_run_t *f = run(args);
    assert_int_equal(f->r.model_flops, flash_model);
    fx_free(f);
    args[5] = "attention=dot_product";
    f = run(args);
    assert_int_equal(f->r.model_flops, flash_model + 96 * (3 * c + 11 * ns));
    assert_int_equal(f->r.model_flops, 8820738037383168ull);
    fx_free(f);
}

/* FSDP, op by op. The mini layer with MaxText's axes: batch over
   activation_batch, w1 [embed, mlp] and w2 [mlp, embed] (embed falls back
   to fsdp as mlp took fsdp_transpose). 2 devices, fsdp 2,
   per_device_batch_size 2 (4 sequences, 2 a device), 3 layers, full,
   reserve 0. Activations as test_sim.c's mini; each weight is stored
   [2,8] (16 params, 64 B fp32), gathered to 32 elements in the compute
   dtype (bf16) for its op, 64 B, and its gradient whole in bf16, 64 B.
   Static: params 3 x 32 x 4 = 384, adamw 768; grads 384 at the turn.
   While an op runs: its gather, and the next gathering op's (prefetch;
   fc2's next is the next layer's fc1), in backward the previous one's and
   its weight gradients:
     forward  fc1 64 + 64 | silu 0 + 64 | fc2 64 + 64 | add 0 + 64
     backward add 0 + 64 | fc2 64 + 64 + 64 | silu 0 + 64 | fc1 64+64+64
   forward (test_sim.c's 32, 64, 48, 32 working set): 160, 128, 176, 96:
     peak 176 at fc2.
   backward: re-run fc1 32 + 128, silu 64 + 64; add 80 + 64; fc2 112 +
     192 = 304; silu 64 + 64; fc1 32 + 192: peak 304 at fc2.
   step: 1152 + x 16 = 1168; forward ends at 1216; the turn: 1216 - 16 +
   16 + 384 = 1600; layer 2 backward 1600 + 304 = 1904. */
static const char *const sharded_mini =
    "{\"format\":\"remat-graph/1\",\"name\":\"mini_fsdp\","
    "\"dims\":{\"b\":{\"from\":\"per_device_batch_size\",\"axis\":\"activation_batch\"},"
    "\"e\":{\"from\":\"base_emb_dim\",\"weight_axis\":\"embed\"},"
    "\"m\":{\"from\":\"base_mlp_dim\",\"weight_axis\":\"mlp\"}},"
    "\"layer\":{\"inputs\":[\"x\"],\"outputs\":[\"y\"],\"tensors\":{"
    "\"x\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"},"
    "\"w1\":{\"shape\":[\"e\",\"m\"],\"dtype\":\"weight\",\"param\":true},"
    "\"h\":{\"shape\":[\"b\",\"m\"],\"dtype\":\"act\",\"checkpoint\":\"mlpwi\"},"
    "\"a\":{\"shape\":[\"b\",\"m\"],\"dtype\":\"act\"},"
    "\"w2\":{\"shape\":[\"m\",\"e\"],\"dtype\":\"weight\",\"param\":true},"
    "\"o\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\",\"checkpoint\":\"mlpwo\"},"
    "\"y\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"}},"
    "\"ops\":["
    "{\"name\":\"fc1\",\"op\":\"einsum\",\"spec\":\"be,em->bm\",\"in\":[\"x\",\"w1\"],\"out\":[\"h\"]},"
    "{\"name\":\"act\",\"op\":\"silu\",\"in\":[\"h\"],\"out\":[\"a\"]},"
    "{\"name\":\"fc2\",\"op\":\"einsum\",\"spec\":\"bm,me->be\",\"in\":[\"a\",\"w2\"],\"out\":[\"o\"]},"
    "{\"name\":\"res\",\"op\":\"add\",\"in\":[\"x\",\"o\"],\"out\":[\"y\"]}]}}";

/* On a GPU profile: XLA:GPU gathers every sharded weight whole (its
   windowed-einsum threshold is off by default); test_weights_streamed has
   XLA:TPU's windowed einsums. */
static const char *const fsdp_base[] = {"model_name=default",        "per_device_batch_size=2",
                                        "base_emb_dim=4",            "base_mlp_dim=8",
                                        "base_num_decoder_layers=3", "num_devices=2",
                                        "reserve_fraction=0",        "scan_layers=false",
                                        "hardware=h100",             NULL};

static void test_fsdp_gathers_by_hand(void **state) {
    (void)state;
    fx_run_t *f = fx_analyze_with(sharded_mini, fsdp_base, NULL);
    const uint64_t w1[] = {2, 8};
    assert_memory_equal(row(f, "w1")->shape, w1, sizeof w1);
    assert_int_equal(f->r.param_bytes, 384);
    assert_int_equal(f->r.profiles[0].fwd_peak_rel, 176);
    assert_int_equal(f->r.profiles[0].bwd_peak_rel, 304);
    assert_int_equal(f->r.peak_bytes, 1904);
    assert_int_equal(f->r.peak_at.layer, 2);
    assert_int_equal(f->r.peak_at.step, REMAT_STEP_BACKWARD);
    assert_string_equal(f->r.peak_at.op, "fc2");
    /* fc2's gather and fc1's (prefetched for backward), fc2's weight
       gradients whole before their reduce-scatter */
    assert_int_equal(f->r.breakdown[REMAT_CAT_GATHERED], 64 + 64);
    assert_int_equal(f->r.breakdown[REMAT_CAT_GRAD_BUFFER], 64);
    assert_int_equal(f->r.breakdown[REMAT_CAT_GRADS], 384);
    assert_int_equal(f->r.breakdown[REMAT_CAT_PARAMS], 384);
    assert_int_equal(f->r.breakdown[REMAT_CAT_OPTIMIZER], 768);
    assert_int_equal(f->r.breakdown[REMAT_CAT_SAVED], 48);
    assert_int_equal(f->r.breakdown[REMAT_CAT_RECOMPUTE], 64);
    assert_int_equal(f->r.breakdown[REMAT_CAT_ACT_GRADS], 64);
    /* An op computes on the whole w1: 2 b e m = 2*2*4*8 = 128, as unsharded. */
    assert_int_equal(f->r.layers[0].forward_flops, 328);
    fx_free(f);
    /* Without prefetch only the op's own gather: backward fc2 112 + 64 +
       64 = 240: 1600 + 240. */
    const char *noprefetch[] = {"fsdp_prefetch=false", NULL};
    f = fx_analyze_with(sharded_mini, fsdp_base, noprefetch);
    assert_int_equal(f->r.profiles[0].bwd_peak_rel, 240);
    assert_int_equal(f->r.peak_bytes, 1840);
    assert_int_equal(f->r.breakdown[REMAT_CAT_GATHERED], 64);
    fx_free(f);
    /* Parameters in host RAM between steps: MaxText moves them all to the
       device before the forward, so the step is the one above, 1904, with
       the 384 B of params in host RAM too. */
    /* fp8 quantization gathers the weights cast to 1 byte: 32 B an op; the
       whole gradients stay in the compute dtype (bf16), 64 B. forward fc1
       32 + 32 + 32 | silu 64 + 32 | fc2 48 + 64 = 112 | add 32 + 32;
       backward fc2 112 + 32 + 32 + 64 = 240 (the profile's peaks do not
       involve x, which fp8 keeps as a 1-byte copy). */
    const char *fp8[] = {"quantization=fp8", NULL};
    f = fx_analyze_with(sharded_mini, fsdp_base, fp8);
    assert_int_equal(f->r.profiles[0].fwd_peak_rel, 112);
    assert_int_equal(f->r.profiles[0].bwd_peak_rel, 240);
    assert_string_equal(f->r.peak_at.op, "fc2");
    assert_int_equal(f->r.breakdown[REMAT_CAT_GATHERED], 32 + 32);
    assert_int_equal(f->r.breakdown[REMAT_CAT_GRAD_BUFFER], 64);
    fx_free(f);
    const char *host[] = {"parameter_memory_host_offload=true", NULL};
    f = fx_analyze_with(sharded_mini, fsdp_base, host);
    assert_int_equal(f->r.host_static_bytes, 384);
    assert_int_equal(f->r.profiles[0].fwd_peak_rel, 176);
    assert_int_equal(f->r.profiles[0].bwd_peak_rel, 304);
    assert_int_equal(f->r.peak_bytes, 1904);
    assert_int_equal(f->r.breakdown[REMAT_CAT_PARAMS], 384);
    assert_int_equal(f->r.breakdown[REMAT_CAT_GATHERED], 64 + 64);
    assert_int_equal(f->r.breakdown[REMAT_CAT_GRAD_BUFFER], 64);
    fx_free(f);
}

/* XLA:TPU's windowed einsums (remat_i_windowed_einsums): the same step on
   a TPU profile, fsdp 2 on one slice, streams each weight shard by shard,
   so no op holds a gathered copy or a whole gradient. By hand from
   test_fsdp_gathers_by_hand without them: forward 32, 64, 48, 32: 64 at
   silu; backward re-run fc1 32, silu 64; add 80; fc2 112; silu 64; fc1
   32: 112 at fc2; the step 1600 + 112 = 1712. With data parallelism
   beside fsdp (2 x 2 devices, the same shards a device) XLA gathers them
   whole again: the 1904 above. */
static void test_weights_streamed(void **state) {
    (void)state;
    const char *tpu[] = {"hardware=tpu-v5e", NULL};
    fx_run_t *f = fx_analyze_with(sharded_mini, fsdp_base, tpu);
    assert_int_equal(f->r.profiles[0].fwd_peak_rel, 64);
    assert_int_equal(f->r.profiles[0].bwd_peak_rel, 112);
    assert_int_equal(f->r.peak_bytes, 1712);
    assert_string_equal(f->r.peak_at.op, "fc2");
    assert_int_equal(f->r.breakdown[REMAT_CAT_GATHERED], 0);
    assert_int_equal(f->r.breakdown[REMAT_CAT_GRAD_BUFFER], 0);
    assert_true(f->r.weights_streamed);
    /* the FLOPs and the bytes moved are the gathered matmul's */
    assert_int_equal(f->r.layers[0].forward_flops, 328);
    fx_free(f);
    const char *dp[] = {"hardware=tpu-v5e", "num_devices=4", "ici_data_parallelism=2",
                        "ici_fsdp_parallelism=2", NULL};
    f = fx_analyze_with(sharded_mini, fsdp_base, dp);
    assert_int_equal(f->r.peak_bytes, 1904);
    assert_int_equal(f->r.breakdown[REMAT_CAT_GATHERED], 64 + 64);
    assert_false(f->r.weights_streamed);
    fx_free(f);
    /* XLA's windowed loop runs at most 32 iterations: llama2-7b's layers
       stream on 32 v5p chips and are gathered on 64, where the peak, the
       last layer's MLP output backward, holds wo [11008, 4096] gathered in
       bf16 (90,177,536 B), wi_1's prefetched (as many) and wo's gradient */
    const int64_t wo = 11008 * 4096 * 2;
    static const char *const chips[] = {"topology=v5p-64", "topology=v5p-128"};
    for (size_t k = 0; k < 2; k++) {
        const char *a[] = {"model_name=llama2-7b", "per_device_batch_size=4", chips[k], NULL};
        f = run(a);
        assert_string_equal(f->r.peak_at.op, "wo");
        assert_int_equal(f->r.breakdown[REMAT_CAT_GATHERED], k ? 2 * wo : 0);
        assert_int_equal(f->r.breakdown[REMAT_CAT_GRAD_BUFFER], k ? wo : 0);
        assert_int_equal(f->r.weights_streamed, k == 0);
        fx_free(f);
    }
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
                          "base_num_kv_heads=2",       "head_dim=4",
                          "base_num_decoder_layers=1", "num_devices=2",
                          "ici_context_parallelism=2", NULL};
    fx_run_t *f = fx_analyze_ok(graph, args);
    assert_int_equal(f->r.profiles[0].fwd_peak_rel, 352);
    /* 4 b h s t d forward; the two scales (32 each) and the add (32) */
    assert_int_equal(f->r.layers[0].forward_flops, 1024 + 32 + 32 + 32);
    fx_free(f);
}

/* FP8: the residuals that only weight einsums read are kept in 1 byte an
   element plus a 4-byte scale; nothing else changes. Tiny llama under
   everything_saveable: xn (read by the q/k/v projections), hn (wi_0,
   wi_1), mix (wo) and attn_out (out_proj: the kernel reads its own output
   ctx, and attn_out is ctx transposed back) go from 2 to 1 byte an
   element; x, q_t, k_t, v_t, ctx, lse (read by flash), h1, gate, up,
   gate_act (norm, silu, mul) stay. Kept bf16 (test_policy.c): 1088. */
static void test_fp8_residuals(void **state) {
    (void)state;
    const char *base[] = {"model_name=default",     "per_device_batch_size=1",
                          "max_target_length=4",    "base_emb_dim=8",
                          "base_num_query_heads=2", "base_num_kv_heads=1",
                          "head_dim=4",             "base_mlp_dim=16",
                          "vocab_size=16",          "base_num_decoder_layers=2",
                          "remat_policy=everything_saveable", "scan_layers=false",
                          NULL,                     NULL};
    fx_run_t *bf = run(base);
    base[12] = "quantization=fp8";
    fx_run_t *f8 = run(base);
    /* xn, hn, attn_out: 32 elements, 64 -> 36; mix: 64 elements, 128 -> 68 */
    assert_int_equal(bf->r.layers[0].saved_device_bytes, 1088);
    assert_int_equal(bf->r.layers[0].saved_device_bytes - f8->r.layers[0].saved_device_bytes,
                     3 * (64 - 36) + (128 - 68));
    assert_int_equal(f8->r.layers[0].saved_device_bytes, 1088 - 144);
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
    /* the params are on the device for the step too (static.c) */
    assert_int_equal(f->r.breakdown[REMAT_CAT_PARAMS], f->r.param_bytes);
    assert_int_equal(f->r.host_static_bytes, 8 * f->r.param_count + 4 * f->r.param_count);
    /* tpu7x: 4 chips of 2 devices a host, each device's share on it */
    assert_int_equal(f->r.host_bytes_per_host, 8 * f->r.host_static_bytes);
    fx_free(f);
}

/* The chunked loss (num_vocab_tiling, MaxText's vocabulary_tiling.py) on
   the headed graph (fixtures.c): b 2 a device, e 4, v 64, one layer, full,
   reserve 0, on 2 devices (fsdp 2):
     x, o, y, h0, hL [2,4] 16 B; logits [2,64] bf16 256 B; lse [2] fp32 8;
     loss 4; tokens, targets [2] int32 8 each.
     params per device: w [4,4] -> [2,4] 8; table [64,4] -> [64,2] 128
     (embed_vocab over fsdp); wl [4,64] -> [2,64] 128: 264 x 4 = 1056 B,
     adamw 2112, grads 1056.
     gathers for an op, bf16: w 16 el 32 B; table, wl 256 el 512 B; their
     gradients whole in bf16 the same.
   The layer (prefetch: fc's next and previous gathering op is fc): forward
   fc 16 + 32 + 32 = 80, res 32 + 32; backward res 16 + 32, fc 16 + 32 + 32
   + 32 = 112.
   T = 1: 3168 static; tokens, targets 3184; emb: h0 3200, measured with
   table's 512: 3712; layer 0 3200 + 80, leaves y (hL): 3216; lg +logits
   3472 (+512 gather: 3984); ce +loss +lse 3484, -loss 3480; dloss +4
   3484; ce backward: dlogits is a buffer of its own (the compiler holds
   the logits and their gradient at once), 3740, measured with lg's gather
   prefetched: 4252; -dloss, -targets, -lse, -logits 3464; lg: +dhL 3480,
   measured with wl's gather (its gradient is reduce-scattered shard by
   shard, never whole): 3992; -dlogits -hL 3208; the weight gradients as
   the layers' backward begins +1056: 4264; layer backward 4264 + 112; emb
   backward 4248 + 1024: 5272 (the peak: the table's gather and its whole
   gradient).
   T = 2: every head tensor made after the layers but the loss is one
   chunk's: logits 128, lse 4. The loss's params are gathered whole in
   their dtype for the whole loss (wl: 256 x 4 = 1024) and its ops gather
   nothing themselves: 3216 + 1024 = 4240; forward keeping nothing: lg
   4368, ce 4376, all freed: 4240; accumulator of wl's gradient
   (zeros_like of the gathered copy) +1024: 5264; the chunk's forward
   again (recompute): lg 5392, ce 5400, -loss 5396; dloss 5400; ce
   backward: the chunk's dlogits beside its re-run logits, 5528 (the
   peak); lg backward 5400; -dlogits -hL, and the gather and accumulator
   go: 3208, and the gradients come: 4264, as with T = 1. */
static const char *const headed_base[] = {"model_name=default",      "per_device_batch_size=2",
                                          "base_emb_dim=4",          "vocab_size=64",
                                          "base_num_decoder_layers=1", "num_devices=2",
                                          "reserve_fraction=0", "scan_layers=false",      NULL};

static void test_vocab_tiling(void **state) {
    (void)state;
    fx_run_t *f = fx_analyze_with(fx_head_graph, headed_base, NULL);
    assert_int_equal(f->r.param_bytes, 1056);
    assert_int_equal(f->r.peak_bytes, 5272);
    assert_int_equal(f->r.peak_at.where, REMAT_AT_HEAD_PRE);
    assert_int_equal(f->r.peak_at.step, REMAT_STEP_BACKWARD);
    assert_string_equal(f->r.peak_at.op, "emb");
    assert_int_equal(f->r.breakdown[REMAT_CAT_GATHERED], 512);
    assert_int_equal(f->r.breakdown[REMAT_CAT_GRAD_BUFFER], 512);
    assert_int_equal(f->r.breakdown[REMAT_CAT_ACT_GRADS], 16); /* dh0 */
    assert_int_equal(f->r.breakdown[REMAT_CAT_HEAD], 8);       /* tokens */
    assert_int_equal(f->r.breakdown[REMAT_CAT_SAVED], 0);
    assert_int_equal(f->r.breakdown[REMAT_CAT_GRADS], 1056);
    assert_int_equal(f->r.recompute_flops, 0);
    fx_free(f);
    const char *two[] = {"model_name=llama3-8b", "num_vocab_tiling=2", NULL};
    f = fx_analyze_with(fx_head_graph, headed_base, two);
    assert_int_equal(f->r.peak_bytes, 5528);
    assert_int_equal(f->r.peak_at.where, REMAT_AT_HEAD_POST);
    assert_int_equal(f->r.peak_at.step, REMAT_STEP_BACKWARD);
    assert_string_equal(f->r.peak_at.op, "ce");
    assert_int_equal(f->r.breakdown[REMAT_CAT_GATHERED], 1024);
    assert_int_equal(f->r.breakdown[REMAT_CAT_GRAD_BUFFER], 1024);
    assert_int_equal(f->r.breakdown[REMAT_CAT_RECOMPUTE], 128 + 4); /* logits, lse */
    assert_int_equal(f->r.breakdown[REMAT_CAT_HEAD], 16);           /* tokens, targets */
    assert_int_equal(f->r.breakdown[REMAT_CAT_ACT_GRADS], 128 + 4); /* dlogits, dloss */
    assert_int_equal(f->r.breakdown[REMAT_CAT_GRADS], 0);
    /* The re-run is recompute: lg 2 b e v = 2*2*4*64 = 1024 (whole e, as
       gathered), ce 4 x 128 logits = 512. */
    assert_int_equal(f->r.recompute_flops, 1024 + 512);
    fx_free(f);
    /* One device: nothing to gather, but the accumulator (wl's whole
       gradient, 1024 B fp32) still comes. Params 528 x 4 = 2112, adamw
       4224: 6336; + tokens, targets, h0 6368; layer 6384; forward chunk
       and free; accumulator 7408; re-run lg +128, ce +8 7544; ce backward
       +128 7672; the accumulator goes; the layer's and wl's gradients (the
       chunked loss makes wl's), 2112 - 1024, as the layer's backward
       begins: 7480; the table's 1024 come with the embedding's backward:
       params 2112 + adamw 4224 + gradients 2112 + dh0 16 + tokens 8 = 8472
       (the peak). */
    const char *one[] = {"num_vocab_tiling=2", "num_devices=1", NULL};
    f = fx_analyze_with(fx_head_graph, headed_base, one);
    assert_int_equal(f->r.peak_bytes, 8472);
    assert_int_equal(f->r.peak_at.where, REMAT_AT_HEAD_PRE);
    assert_int_equal(f->r.breakdown[REMAT_CAT_GATHERED], 0);
    assert_int_equal(f->r.breakdown[REMAT_CAT_GRAD_BUFFER], 0);
    assert_int_equal(f->r.breakdown[REMAT_CAT_GRADS], 2112);
    fx_free(f);
}

/* A profile states a chip; remat works per JAX device: each per-chip
   figure over devices_per_chip (TPU7x: 2). The default budget is XLA's
   per-device limit, hbm_limit_bytes: TPUs as libtpu measures it (the
   largest program that compiles, validation/xla/limits.py; a few MiB under
   what its OOM message prints, rounded), GPUs 0.9 of the memory
   (floored). */
static void test_chips_and_devices(void **state) {
    (void)state;
    remat_hw_t hw;
    remat_error_t err;
    remat_error_init(&err);
    assert_int_equal(remat_hw_resolve("tpu7x", &hw, &err), REMAT_OK);
    assert_int_equal(hw.devices_per_chip, 2);
    assert_int_equal(hw.chip_hbm_bytes, 192ull << 30);
    assert_int_equal(hw.hbm_bytes, 96ull << 30);
    /* XLA's limit as libtpu measures it (validation/xla/limits.py): 94.75
       GiB less 4 MiB */
    assert_int_equal(hw.hbm_limit_bytes, 101732836352ull);
    assert_float_equal(hw.hbm_bw, 7.38e12 / 2, 1);
    assert_float_equal(hw.flops_bf16, 2.307e15 / 2, 1);
    assert_float_equal(hw.flops_fp8, 4.614e15 / 2, 1);
    assert_float_equal(hw.host_link_bw, 3.2e10 / 2, 1e-3);
    assert_float_equal(hw.ici_bw, 1.2e12 / 2, 1e-3);
    assert_int_equal(hw.devices_per_host, 4 * 2); /* 4 chips a host */
    static const struct {
        const char *name;
        uint64_t devices_per_chip, limit;
    } limits[] = {
        {"tpu-v5p", 1, 102803435008ull}, /* printed 95.74 GiB */
        {"tpu-v6e", 1, 33550232064ull},  /* printed 31.25 GiB */
        {"tpu-v5e", 1, 16909330432ull},  /* printed 15.75 GiB */
        {"tpu-v4", 1, 33014411264ull},   /* printed 30.75 GiB */
        {"h100", 1, 76968728985ull},     /* 0.9 x 85520809984 */
        {"h200", 1, 135679338086ull},    /* 0.9 x 150754820096 */
        {"b200", 1, 173039262105ull},    /* 0.9 x 192265846784 */
    };
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        assert_int_equal(remat_hw_resolve(limits[i].name, &hw, &err), REMAT_OK);
        assert_int_equal(hw.devices_per_chip, limits[i].devices_per_chip);
        assert_int_equal(hw.hbm_bytes, hw.chip_hbm_bytes);
        if (hw.hbm_limit_bytes != limits[i].limit) {
            fail_msg("%s: hbm_limit_bytes %llu, expected %llu", limits[i].name,
                     (unsigned long long)hw.hbm_limit_bytes,
                     (unsigned long long)limits[i].limit);
        }
    }
    /* A run's default budget is that limit; hbm_budget overrides it. */
    const char *args[] = {"model_name=default", "per_device_batch_size=2", "base_emb_dim=4",
                          "base_mlp_dim=8", "base_num_decoder_layers=1", "hardware=tpu-v6e",
                          NULL, NULL};
    fx_run_t *f = fx_analyze_ok(fx_mini_graph, args);
    assert_int_equal(f->r.budget_bytes, 33550232064ull);
    fx_free(f);
    args[6] = "hbm_budget=1000000";
    f = fx_analyze_ok(fx_mini_graph, args);
    assert_int_equal(f->r.budget_bytes, 1000000);
    assert_int_equal(f->r.usable_bytes, 950000);
    fx_free(f);
}

/* Slice names as MaxText spells them: NAME-N counts TensorCores (v5p and v4
   chips have 2 in one megacore device; a TPU7x chip is 2 devices of one
   core each), NAME-AxBxC the chip grid. */
static void test_topology_names(void **state) {
    (void)state;
    static const struct {
        const char *name, *hardware;
        uint64_t chips, devices;
    } names[] = {
        {"v5p-256", "tpu-v5p", 128, 128},  {"tpu7x-128", "tpu7x", 64, 128},
        {"tpu7x-4x4x4", "tpu7x", 64, 128}, {"v6e-8", "tpu-v6e", 8, 8},
        {"v4-8", "tpu-v4", 4, 4},          {"v5litepod-256", "tpu-v5e", 256, 256},
        {"h100-16", "h100", 16, 16},
    };
    remat_error_t err;
    remat_error_init(&err);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        remat_topology_t t;
        assert_int_equal(remat_topology_parse(names[i].name, NULL, NULL, &t, &err), REMAT_OK);
        assert_string_equal(t.hardware, names[i].hardware);
        if (t.chips != names[i].chips || t.devices != names[i].devices) {
            fail_msg("%s: %llu chips %llu devices, expected %llu %llu", names[i].name,
                     (unsigned long long)t.chips, (unsigned long long)t.devices,
                     (unsigned long long)names[i].chips, (unsigned long long)names[i].devices);
        }
    }
    remat_topology_t t;
    assert_int_equal(remat_topology_parse("v5p-3", NULL, NULL, &t, &err), REMAT_E_CONFIG);
    assert_int_equal(remat_topology_parse("Trillium-16", NULL, NULL, &t, &err), REMAT_OK);
    assert_string_equal(t.hardware, "tpu-v6e");
    /* hardware= takes the family names too, in any case */
    static const char *const family[][2] = {{"v6e", "tpu-v6e"},      {"V5P", "tpu-v5p"},
                                            {"v5litepod", "tpu-v5e"}, {"Ironwood", "tpu7x"},
                                            {"a3ultra", "h200"},      {"tpu-v4", "tpu-v4"}};
    for (size_t i = 0; i < sizeof family / sizeof family[0]; i++) {
        remat_hw_t hw;
        assert_string_equal(remat_hw_family(family[i][0]), family[i][1]);
        assert_int_equal(remat_hw_resolve(family[i][0], &hw, &err), REMAT_OK);
        assert_string_equal(hw.name, family[i][1]);
    }
    assert_null(remat_hw_family("v7"));
    assert_int_equal(remat_hw_resolve("v7", &(remat_hw_t){0}, &err), REMAT_E_CONFIG);
    /* topology sets the hardware and the device count of a run */
    const char *args[] = {"topology=tpu7x-128", "per_device_batch_size=1", NULL};
    remat_config_t cfg;
    assert_int_equal(remat_config_build(NULL, 2, (char *const *)args, &cfg, &err), REMAT_OK);
    assert_int_equal(cfg.num_devices, 128);
    assert_string_equal(cfg.hardware, "tpu7x");
}

static void expect_error(const char *const *args, const char *needle) {
    fx_run_t *f = fx_analyze(NULL, args);
    assert_int_equal(f->st, REMAT_E_CONFIG);
    if (!strstr(f->err.text, needle)) {
        fail_msg("error '%s' lacks '%s'", f->err.text, needle);
    }
    /* a dim that does not divide over its shards says so to the caller */
    assert_int_equal(f->err.hint == REMAT_HINT_MESH_DIVIDE,
                     strstr(needle, "does not divide over its") != NULL);
    fx_free(f);
}

static void test_mesh_errors(void **state) {
    (void)state;
    const char *mismatch[] = {"model_name=llama3-8b", "num_devices=8", "ici_fsdp_parallelism=4", "ici_tensor_parallelism=4",
                              "per_device_batch_size=1", NULL};
    expect_error(mismatch, "mesh fsdp=4 x tensor=4 has 16 devices, but num_devices=8");
    const char *fill[] = {"model_name=llama3-8b", "num_devices=12", "ici_tensor_parallelism=8", "per_device_batch_size=1",
                          NULL};
    expect_error(fill, "does not divide num_devices=12");
    /* heads shard over MaxText's heads rule: tensor + tensor_sequence +
       autoregressive, 64 x 1 x 1 */
    const char *uneven[] = {"model_name=llama3-8b", "num_devices=64", "ici_fsdp_parallelism=1", "ici_tensor_parallelism=64",
                            "per_device_batch_size=1", NULL};
    expect_error(uneven, "base_num_query_heads=32 (dim 'heads' of tensor 'wq') does not divide "
                         "over its 64 shards (logical axis heads over mesh tensor=64)");
    const char *axis[] = {"model_name=llama3-8b", "logical_axis_rules=activation_embed:tensr", "per_device_batch_size=1",
                          NULL};
    expect_error(axis, "unknown mesh axis 'tensr'");
    const char *two[] = {"ici_data_parallelism=-1", "per_device_batch_size=1", NULL};
    expect_error(two, "both -1");
    const char *stages[] = {"model_name=llama3-8b", "num_devices=3", "ici_pipeline_parallelism=3", "per_device_batch_size=1",
                            NULL};
    expect_error(stages, "32 layers do not split evenly over 3 pipeline stages");
    const char *cp[] = {"model_name=llama3-8b", "attention=dot_product", "num_devices=2", "ici_context_parallelism=2",
                        "per_device_batch_size=1", NULL};
    expect_error(cp, "context parallelism is modelled for flash attention");
    /* MaxText's mesh has no sequence axis any more */
    const char *seq[] = {"model_name=llama3-8b", "num_devices=2", "ici_sequence_parallelism=2", "per_device_batch_size=1",
                         NULL};
    expect_error(seq, "MaxText's mesh has no 'sequence' axis");
    const char *dseq[] = {"model_name=llama3-8b", "dcn_sequence_parallelism=2", "per_device_batch_size=1", NULL};
    expect_error(dseq, "no 'sequence' axis");
}

/* override_logical_axis_rules: the config's rules replace MaxText's. With
   none left, nothing is sharded: every device holds the whole model; with
   only `embed:fsdp`, a weight shards over fsdp along its embed dim, and
   the embedding and logits tables ("vocab", "embed_vocab") do not; the
   norms ("norm") shard over tensor by default, 1 here, so neither way. */
static void test_override_axis_rules(void **state) {
    (void)state;
    const char *none[] = {"model_name=llama3-8b", "per_device_batch_size=1", "num_devices=8",
                          "override_logical_axis_rules=true", NULL};
    fx_run_t *f = run(none);
    assert_int_equal(f->r.param_count_device, f->r.param_count);
    fx_free(f);
    const char *embed[] = {"model_name=llama3-8b", "per_device_batch_size=1", "num_devices=8",
                           "override_logical_axis_rules=true", "logical_axis_rules=embed:fsdp",
                           NULL};
    const char *dflt[] = {"model_name=llama3-8b", "per_device_batch_size=1", "num_devices=8",
                          NULL};
    fx_run_t *e = run(embed), *d = run(dflt);
    /* the layers' matmul weights shard 8 ways either way; the embedding and
       logits tables (2 x 128256 x 4096) only by default */
    const uint64_t tables = 2ull * 128256 * 4096;
    assert_int_equal(e->r.param_count_device - d->r.param_count_device, tables - tables / 8);
    fx_free(e);
    fx_free(d);
}

/* JAX's layout rule by hand (mesh_layout.h). Shapes are in MaxText's
   mesh_axes order: diloco, data, stage, fsdp, fsdp_transpose, context,
   context_usp_ulysses, context_autoregressive, tensor, tensor_sequence,
   expert, autoregressive. */
enum { L_DATA = 1, L_STAGE = 2, L_FSDP = 3, L_TENSOR = 8, L_EXPERT = 10 };

static remat_layout_t lay(remat_layout_kind_t kind, uint64_t x, uint64_t y, uint64_t z,
                          const unsigned *axes, const uint64_t *sizes, size_t n) {
    uint64_t shape[REMAT_LAYOUT_AXES];
    for (unsigned i = 0; i < REMAT_LAYOUT_AXES; i++) {
        shape[i] = 1;
    }
    for (size_t i = 0; i < n; i++) {
        shape[axes[i]] = sizes[i];
    }
    const remat_layout_slice_t s = {.kind = kind, .grid = {x, y, z}};
    remat_layout_t l;
    remat_layout_assign(&s, shape, &l);
    return l;
}

static void test_layout_by_hand(void **state) {
    (void)state;
    const unsigned ft[] = {L_FSDP, L_TENSOR}, dft[] = {L_DATA, L_FSDP, L_TENSOR};
    /* v5e-16, 4x4: the size-1 axes take the z side of 1 (a set of product
       1) first; tensor 2 then finds no side or pair of sides making 2 */
    remat_layout_t l = lay(REMAT_LAYOUT_V5E, 4, 4, 1, ft, (const uint64_t[]){8, 2}, 2);
    assert_false(l.lays_out);
    assert_int_equal(l.axis, L_TENSOR);
    assert_int_equal(l.size, 2);
    assert_int_equal(l.ndim, 3);
    assert_int_equal(l.remaining[0], 4);
    assert_int_equal(l.remaining[1], 4);
    assert_int_equal(l.remaining[2], 0);
    /* tensor 4 takes x (no pair of what is left makes 4), fsdp 4 takes y */
    assert_true(lay(REMAT_LAYOUT_V5E, 4, 4, 1, ft, (const uint64_t[]){4, 4}, 2).lays_out);
    /* the handler lays out 16 on one axis whatever; 8 chips any shape */
    assert_true(lay(REMAT_LAYOUT_V5E, 4, 4, 1, ft, (const uint64_t[]){16, 1}, 2).lays_out);
    assert_true(lay(REMAT_LAYOUT_V5E, 2, 4, 1, ft, (const uint64_t[]){4, 2}, 2).lays_out);
    /* v4-16 (2x2x2) has no handler: data 2, fsdp 2, tensor 2, one side each;
       the v5p cube's handler takes fsdp 8 whole as well as 2 x 4 */
    assert_true(lay(REMAT_LAYOUT_GENERIC, 2, 2, 2, dft, (const uint64_t[]){2, 2, 2}, 3).lays_out);
    assert_true(lay(REMAT_LAYOUT_V5P, 2, 2, 2, ft, (const uint64_t[]){2, 4}, 2).lays_out);
    /* v4-128, 4x4x4: tensor 8 is no product of sides of 4 */
    l = lay(REMAT_LAYOUT_GENERIC, 4, 4, 4, ft, (const uint64_t[]){8, 8}, 2);
    assert_false(l.lays_out);
    assert_int_equal(l.axis, L_TENSOR);
    /* tpu7x-64: 2x4x4 chips and the chip's 2 devices (64 > 32: no handler).
       Tensor 4 takes the first pair making 4, x with the cores, and fsdp 8
       then has sides 4 and 4 left */
    l = lay(REMAT_LAYOUT_7X, 2, 4, 4, ft, (const uint64_t[]){16, 4}, 2);
    assert_true(l.lays_out);
    l = lay(REMAT_LAYOUT_7X, 2, 4, 4, (const unsigned[]){L_STAGE, L_FSDP, L_TENSOR},
            (const uint64_t[]){2, 8, 4}, 3);
    assert_false(l.lays_out);
    assert_int_equal(l.axis, L_FSDP);
    assert_int_equal(l.ndim, 4);
    const uint64_t left[4] = {0, 4, 4, 0};
    assert_memory_equal(l.remaining, left, sizeof left);
    /* tpu7x-32 (2x2x4, 32 devices): the handler's rings, any shape */
    assert_true(lay(REMAT_LAYOUT_7X, 2, 2, 4, (const unsigned[]){L_EXPERT, L_FSDP},
                    (const uint64_t[]){2, 16}, 2).lays_out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_megatron_table2),
        cmocka_unit_test(test_pipeline_by_hand),
        cmocka_unit_test(test_param_counts),
        cmocka_unit_test(test_override_axis_rules),
        cmocka_unit_test(test_logical_axis_rules),
        cmocka_unit_test(test_axis_rules_on_llama),
        cmocka_unit_test(test_shapes_fsdp_tensor_context),
        cmocka_unit_test(test_gathered_param_flops),
        cmocka_unit_test(test_weights_streamed),
        cmocka_unit_test(test_fsdp_gathers_by_hand),
        cmocka_unit_test(test_context_kv_gather),
        cmocka_unit_test(test_fp8_residuals),
        cmocka_unit_test(test_optimizers_and_host_offload),
        cmocka_unit_test(test_vocab_tiling),
        cmocka_unit_test(test_chips_and_devices),
        cmocka_unit_test(test_topology_names),
        cmocka_unit_test(test_mesh_errors),
        cmocka_unit_test(test_layout_by_hand),
    };
    return cmocka_run_group_tests_name("mesh", tests, NULL, NULL);
}
