/* SPDX-License-Identifier: MIT */
/*
 * test_qwen3_5_vision.c: Qwen3.5 35B-A3B and 397B-A17B with their vision
 * encoder (use_multimodal=true on the qwen3_next graph with decoder_block
 * qwen3_5 runs its multimodal variant, qwen3_5_vision): the parameter
 * counts by hand and against the published totals, the frozen encoder
 * (no gradient buffer, no backward, no residual) beside the trained
 * projector and no deepstack merger, the encoder's forward FLOPs by hand,
 * the residual stream left in the compute dtype, the expert-parallel
 * variant, and the config checks on the encoder.
 *
 * The encoder's sizes are MaxText's (configs/models/qwen3.5-*.yml at
 * e591f30, the same in both but the projector's output width): Qwen3-VL's
 * encoder of 27 blocks of width h 1152, MLP m 4304, 16 heads of 72; one
 * 768 x 768 image of 2 frames an example, P = 48^2 = 2,304 patches of
 * 3 x 2 x 16 x 16 = 1,536 pixels, merged 2 x 2 into T = 576 tokens of
 * q = 4 h = 4,608.
 */
#include "fixtures.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { VIT_H = 1152, VIT_M = 4304, VIT_L = 27, VIT_P = 2304, VIT_PIX = 1536, VIT_T = 576 };

/* One encoder block (Qwen3OmniMoeVisionBlock): two LayerNorms (scale and
   bias) of h, q/k/v/o h x h with biases, the MLP h x m and m x h with
   biases: 15,239,504. */
static uint64_t block_params(void) {
    const uint64_t h = VIT_H, m = VIT_M;
    return 4 * h + 4 * (h * h + h) + (h * m + m) + (m * h + h);
}

/* The frozen encoder: the patch embedding with its bias, the 2,304-row
   position table, 27 blocks: 415,891,440. */
static uint64_t encoder_params(void) {
    const uint64_t h = VIT_H;
    return VIT_PIX * h + h + 2304 * h + VIT_L * block_params();
}

/* The trained projector (Qwen3OmniMoeVisionPatchMerger before the
   shuffle): its LayerNorm over h, q x q and q x E with biases. */
static uint64_t projector_params(uint64_t E) {
    const uint64_t h = VIT_H, q = 4 * VIT_H;
    return 2 * h + (q * q + q) + (q * E + E);
}

/* The text decoders' counts are test_qwen3_next.c's (34,660,610,688 and
   396,346,350,336); the encoder adds 415,891,440 and the projector
   30,679,808 (E 2048) or 40,119,040 (E 4096): 35,107,181,936 and
   396,802,360,816, against the model cards' 35B and 397B
   (huggingface.co/Qwen/Qwen3.5-35B-A3B, -397B-A17B), which include the
   vision encoder: 0.31% and 0.05% off. The encoder alone is Qwen3-VL
   30B-A3B's less its three deepstack mergers (test_qwen3_vl.c). */
static void test_param_counts(void **state) {
    (void)state;
    static const struct {
        const char *model;
        uint64_t E, text, total;
        double published;
    } models[] = {
        {"model_name=qwen3.5-35b-a3b", 2048, 34660610688u, 35107181936u, 35e9},
        {"model_name=qwen3.5-397b-a17b", 4096, 396346350336u, 396802360816u, 397e9},
    };
    assert_int_equal(block_params(), 15239504u);
    assert_int_equal(encoder_params(), 415891440u);
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        const char *args[] = {models[i].model, "use_multimodal=true", "per_device_batch_size=1",
                              "max_target_length=1024", "num_devices=64", NULL};
        const uint64_t total = models[i].text + encoder_params() + projector_params(models[i].E);
        assert_int_equal(total, models[i].total);
        fx_total_params(args, "qwen3_5_vision", models[i].total, models[i].published);
    }
}

/* On one device every param is whole and fp32 (weight_dtype's default):
   the encoder's 415,891,440 frozen params hold no gradient; the
   projector's and the decoder's have theirs, and every param its two
   AdamW moments. The encoder's ops have no backward and keep nothing, and
   there is no deepstack merger; the projector's ops keep the last block's
   output (its norm's input), the norm's statistics and the MLP's
   operands. */
static void test_frozen_encoder(void **state) {
    (void)state;
    const char *args[] = {"model_name=qwen3.5-35b-a3b", "use_multimodal=true",
                          "base_num_decoder_layers=4", "per_device_batch_size=1",
                          "max_target_length=1024", "num_devices=1", NULL};
    fx_run_t *f = fx_analyze_ok(NULL, args);
    fx_frozen_fp32(f, encoder_params());
    const remat_graph_t *g = f->graph;
    assert_true(g->head.tensors[fx_head_tensor(g, "vit0_wq")].frozen);
    assert_false(g->head.tensors[fx_head_tensor(g, "vit0_wq")].needs_grad);
    assert_false(fx_head_maker(g, "vit0_scores")->has_backward);
    assert_false(g->head.tensors[fx_head_tensor(g, "vit0_scores")].residual);
    assert_int_equal(remat_block_find_tensor(&g->head, "vit_deepstack0_out"), REMAT_NONE);
    assert_true(fx_head_maker(g, "vit_proj_out")->has_backward);
    assert_true(g->head.tensors[fx_head_tensor(g, "vit_proj_w_fc1")].needs_grad);
    /* JAX's residuals of MaxText's encoder and projector
       (validation/xla/vision_residuals.py, docs/validation.md): the
       norm's input and statistics, and the MLP's operands */
    static const char *const kept[] = {"vit26_out", "vit_proj_ln_rstd", "vit_proj_shuffled",
                                       "vit_proj_fc1", "vit_proj_gelu"};
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++) {
        assert_true(g->head.tensors[fx_head_tensor(g, kept[i])].residual);
    }
    assert_false(g->head.tensors[fx_head_tensor(g, "vit26_mid")].residual);
    fx_free(f);
}

/* The encoder's forward FLOPs by hand, per image (P 2304 patches, width h
   1152, MLP m 4304, 16 heads of 72, T 576 tokens of q 4608), projected to
   E: the patch matmul and the position add; per block the LayerNorms (8n
   each), q/k/v/o, RoPE on q and k (3n each), the scores and the weighted
   sum (the softmax XLA fuses into it is not counted), two residual adds,
   the MLP and its GeLU (8n); the projector's LayerNorm over the patches,
   its two matmuls and GeLU. No deepstack merger. */
static uint64_t image_flops(uint64_t E) {
    const uint64_t P = VIT_P, h = VIT_H, m = VIT_M, T = VIT_T, q = 4 * VIT_H;
    const uint64_t block = 2 * 8 * P * h + 4 * 2 * P * h * h + 2 * 3 * P * h +
                           2 * 2 * P * P * h + 2 * P * h + 2 * 2 * P * h * m + 8 * P * m;
    return 2 * P * VIT_PIX * h + P * h + VIT_L * block + 8 * P * h + 2 * T * q * q +
           8 * T * q + 2 * T * q * E;
}

/* Qwen3.5 35B-A3B's multimodal forward less its text one (the same layers
   and head): one image's encoder and projector, and the merge's add of
   the image tokens to the sequence (S E, S 1024, E 2048). */
static void test_encoder_flops(void **state) {
    (void)state;
    const char *mm[] = {"model_name=qwen3.5-35b-a3b", "use_multimodal=true",
                        "base_num_decoder_layers=4", "per_device_batch_size=1",
                        "max_target_length=1024", "num_devices=1", NULL};
    const char *text[] = {"model_name=qwen3.5-35b-a3b", "base_num_decoder_layers=4",
                          "per_device_batch_size=1", "max_target_length=1024", "num_devices=1",
                          NULL};
    assert_int_equal(fx_forward_flops_less(mm, text), image_flops(2048) + 1024 * 2048);
}

/* No deepstack feature reaches the stream, so it stays bf16: under full
   each scanned block of 4 layers keeps the same input as the text model's
   (Qwen3-VL's stream turns fp32, test_qwen3_vl.c), 1 x 1024 x 2048 x 2
   bytes; and MaxText scans these layers (no deepstack to refuse it). */
static void test_bf16_stream(void **state) {
    (void)state;
    const char *mm[] = {"model_name=qwen3.5-35b-a3b", "use_multimodal=true",
                        "base_num_decoder_layers=8", "per_device_batch_size=1",
                        "max_target_length=1024", "num_devices=1", "remat_policy=full", NULL};
    const char *text[] = {"model_name=qwen3.5-35b-a3b", "base_num_decoder_layers=8",
                          "per_device_batch_size=1", "max_target_length=1024", "num_devices=1",
                          "remat_policy=full", NULL};
    fx_run_t *a = fx_analyze_ok(NULL, mm);
    fx_run_t *b = fx_analyze_ok(NULL, text);
    assert_true(a->cfg.scan_layers);
    uint64_t kept = 0;
    for (size_t l = 0; l < 8; l++) {
        assert_int_equal(a->r.layers[l].saved_device_bytes, b->r.layers[l].saved_device_bytes);
        kept += a->r.layers[l].saved_device_bytes;
    }
    assert_int_equal(kept, 2 * 1024 * 2048 * 2);
    fx_free(a);
    fx_free(b);
}

/* With the expert axis sharded the variant's expert-parallel twin runs
   (graphs/qwen3_5_vision.flash.ep.json), the encoder in its head. */
static void test_expert_parallel(void **state) {
    (void)state;
    const char *args[] = {"model_name=qwen3.5-35b-a3b", "use_multimodal=true",
                          "base_num_decoder_layers=4", "per_device_batch_size=1",
                          "max_target_length=1024", "num_devices=4",
                          "ici_expert_parallelism=4", NULL};
    fx_run_t *f = fx_analyze_ok(NULL, args);
    assert_true(f->graph->expert_parallel);
    assert_string_equal(f->graph->name, "qwen3_5_vision");
    assert_true(fx_head_tensor(f->graph, "vit26_out") != REMAT_NONE);
    fx_free(f);
}

/* The encoder must be the graph's: MaxText's other settings of it are
   refused, each naming its key. Deepstack layers with the default
   scanned layers meet MaxText's own refusal first. */
static void test_encoder_checks(void **state) {
    (void)state;
    static const struct {
        const char *arg, *second, *names;
    } cases[] = {
        {"freeze_vision_encoder_params=false", NULL, "freeze_vision_encoder_params=false"},
        {"dtype_mm=bfloat16", NULL, "dtype_mm=bf16"},
        {"num_hidden_layers_for_vit=24", NULL, "num_hidden_layers_for_vit=24"},
        {"deepstack_visual_indexes_for_vit=[8, 16, 24]", NULL, "scan_layers=true"},
        {"deepstack_visual_indexes_for_vit=[8, 16, 24]", "scan_layers=false",
         "deepstack_visual_indexes_for_vit"},
        {"out_hidden_size_for_vit=1024", NULL, "out_hidden_size_for_vit=1024"},
        {"patch_size_for_vit=14", NULL, "image_size_for_vit=768"},
        {"gdn_chunk_size=96", NULL, "gdn_chunk_size=96"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *args[] = {"model_name=qwen3.5-35b-a3b", "use_multimodal=true",
                              "num_devices=1", cases[i].arg, cases[i].second, NULL};
        fx_refused(args, cases[i].names);
    }
}

/* A model of its own (decoder_block qwen3_5, no model_name) runs the
   multimodal variant too; Qwen3-Next (decoder_block qwen3_next, the same
   text graph) has no vision encoder in MaxText and is refused. */
static void test_variant(void **state) {
    (void)state;
    const char *own[] = {"decoder_block=qwen3_5", "base_emb_dim=1024", "base_num_query_heads=8",
                         "base_num_kv_heads=2", "head_dim=128", "base_mlp_dim=256",
                         "base_moe_mlp_dim=256", "num_experts=16", "num_experts_per_tok=2",
                         "shared_experts=1", "base_num_decoder_layers=4",
                         "inhomogeneous_layer_cycle_interval=4", "vocab_size=32768",
                         "hidden_size_for_vit=1152", "intermediate_size_for_vit=4304",
                         "num_hidden_layers_for_vit=27", "out_hidden_size_for_vit=1024",
                         "use_multimodal=true", "per_device_batch_size=1", "num_devices=1", NULL};
    fx_run_t *f = fx_analyze_ok(NULL, own);
    assert_string_equal(f->cfg.graph, "qwen3_5_vision");
    fx_free(f);
    const char *next[] = {"model_name=qwen3-next-80b-a3b", "num_devices=1", "use_multimodal=true",
                          NULL};
    fx_refused(next, "the qwen3_next graph is built without a vision encoder");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_param_counts),    cmocka_unit_test(test_frozen_encoder),
        cmocka_unit_test(test_encoder_flops),   cmocka_unit_test(test_bf16_stream),
        cmocka_unit_test(test_expert_parallel), cmocka_unit_test(test_encoder_checks),
        cmocka_unit_test(test_variant),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
