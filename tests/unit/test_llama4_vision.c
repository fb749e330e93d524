/* SPDX-License-Identifier: MIT */
/*
 * test_llama4_vision.c: Llama 4 Scout and Maverick with their vision
 * encoder (use_multimodal=true on the llama4 graphs runs their multimodal
 * variants, llama4_qk_norm_vision and llama4_vision): the parameter counts
 * by hand and against the published totals, the frozen encoder and
 * adapter (no gradient buffer, no backward, no residual) beside the
 * trained projector, the encoder's forward FLOPs by hand, the images an
 * example that image_token_share gives, the text path untouched, and the
 * config checks on the encoder.
 *
 * The encoder's sizes are MaxText's (configs/models/llama4-17b-*.yml and
 * base.yml at e591f30, the same for both models): 34 blocks of width h
 * 1408, MLP m 5632, 16 heads of 88; one image an example of 20 tiles of
 * 336 x 336 x 3 (multimodal/processor_llama4.py), each cut into G = 24^2 =
 * 576 patches of 588 pixels, plus a class token: P = 577 tokens a tile;
 * the pixel shuffle (ratio 0.5) makes T = 144 tokens a tile of q = 4h =
 * 5632, the adapter MLP takes them to a = 4096 and o = 4096.
 */
#include "fixtures.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "input/config_maxtext.h"

enum {
    VIT_H = 1408, VIT_M = 5632, VIT_L = 34, VIT_G = 576, VIT_P = 577, VIT_PIX = 588,
    VIT_T = 144, VIT_Q = 5632, VIT_A = 4096, VIT_O = 4096, TILES = 20
};

/* One encoder block (Llama4VisionEncoderLayer): two LayerNorms (scale and
   bias) of h, q/k/v/o h x h with biases, the MLP h x m and m x h with
   biases: 5,632 + 7,935,488 + 7,935,488 + 7,931,264 = 23,807,872. */
static uint64_t vit_block_params(void) {
    const uint64_t h = VIT_H, m = VIT_M;
    return 4 * h + 4 * (h * h + h) + (h * m + m) + (m * h + h);
}

/* The frozen encoder (Llama4VisionModel): the unfold's 588 x h Dense
   without bias (827,904), the class embedding h, the position table P x h
   (812,416), layernorm_pre and layernorm_post (5,632), 34 blocks
   (809,467,648), the adapter MLP q x a and a x o without biases
   (39,845,888): 850,960,896. */
static uint64_t encoder_params(void) {
    const uint64_t h = VIT_H;
    return (uint64_t)VIT_PIX * h + h + (uint64_t)VIT_P * h + 4 * h + VIT_L * vit_block_params() +
           (uint64_t)VIT_Q * VIT_A + (uint64_t)VIT_A * VIT_O;
}

/* The trained projector (Llama4MultiModalProjector): o x E, no bias. */
static uint64_t projector_params(uint64_t E) {
    return VIT_O * E;
}

/* The text decoders are the llama4 graphs' (their own tests); the encoder
   and its projector to E 5120 add 871,932,416: Scout 107,769,865,728 +
   that = 108,641,798,144 and Maverick 400,711,848,960 + that =
   401,583,781,376. Meta's model cards give 109B and 400B total (both
   with the vision encoder): 0.33% and 0.40% off. */
static void test_param_counts(void **state) {
    (void)state;
    static const struct {
        const char *model, *text_graph, *graph;
        uint64_t text, total;
        double published;
    } models[] = {
        {"model_name=llama4-17b-16e", "llama4_qk_norm", "llama4_qk_norm_vision", 107769865728u,
         108641798144u, 109e9},
        {"model_name=llama4-17b-128e", "llama4", "llama4_vision", 400711848960u, 401583781376u,
         400e9},
    };
    assert_int_equal(vit_block_params(), 23807872u);
    assert_int_equal(encoder_params(), 850960896u);
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        assert_int_equal(models[i].text + encoder_params() + projector_params(5120),
                         models[i].total);
        const char *args[] = {models[i].model, "use_multimodal=true", "per_device_batch_size=1",
                              "max_target_length=1024", "num_devices=8", NULL};
        fx_total_params(args, models[i].graph, models[i].total, models[i].published);
        /* the text path is the llama4 graph's, untouched */
        const char *plain[] = {models[i].model, "per_device_batch_size=1",
                               "max_target_length=1024", "num_devices=8", NULL};
        fx_run_t *f = fx_analyze_ok(NULL, plain);
        assert_string_equal(f->cfg.graph, models[i].text_graph);
        assert_int_equal(f->r.param_count, models[i].text);
        fx_free(f);
    }
}

/* On one device every param is whole and fp32 (weight_dtype's default,
   and MaxText's own for the encoder's MLP, norms, unfold, class token,
   table, adapter and projector): the encoder's 850,960,896 frozen params
   hold their bytes but no gradient; the projector's and the decoder's
   have theirs, and every param its two AdamW moments. The encoder's and
   the adapter's ops have no backward and keep nothing; the projector's
   does, and keeps the adapter's output (its input). */
static void test_frozen_encoder(void **state) {
    (void)state;
    const char *args[] = {"model_name=llama4-17b-16e", "use_multimodal=true",
                          "base_num_decoder_layers=4", "per_device_batch_size=1",
                          "max_target_length=1024", "num_devices=1", NULL};
    fx_run_t *f = fx_analyze_ok(NULL, args);
    fx_frozen_fp32(f, encoder_params());
    const remat_graph_t *g = f->graph;
    static const char *const frozen[] = {"vit0_wq", "vit_pos_table", "vit_class", "vit_ad_w1",
                                         "vit_ad_w2", "vit33_w_fc2"};
    for (size_t i = 0; i < sizeof frozen / sizeof frozen[0]; i++) {
        assert_true(g->head.tensors[fx_head_tensor(g, frozen[i])].frozen);
        assert_false(g->head.tensors[fx_head_tensor(g, frozen[i])].needs_grad);
    }
    assert_false(fx_head_maker(g, "vit0_scores")->has_backward);
    assert_false(g->head.tensors[fx_head_tensor(g, "vit0_scores")].residual);
    assert_false(g->head.tensors[fx_head_tensor(g, "vit33_out")].residual);
    assert_false(fx_head_maker(g, "vit_ad_out")->has_backward);
    assert_true(fx_head_maker(g, "vit_proj_out")->has_backward);
    assert_false(g->head.tensors[fx_head_tensor(g, "vit_proj_w")].frozen);
    assert_true(g->head.tensors[fx_head_tensor(g, "vit_proj_w")].needs_grad);
    assert_true(g->head.tensors[fx_head_tensor(g, "vit_ad_out")].residual);
    fx_free(f);
}

/* The encoder's forward FLOPs by hand, per tile (G 576 patches of 588
   pixels, P 577 tokens, width h, MLP m, T 144 shuffled tokens of q), 20
   tiles an image, projected to E: the unfold's matmul and the position
   add; layernorm_pre (8n); per block the two LayerNorms (8n each) and the
   first again for the value projection (XLA fuses it into each matmul
   that reads it: the graph runs v's after the scores, from the block's
   input normalized again), q/k/v/o
   (2 P h^2 each), the 2D RoPE on q and k (3n each), the scores and the
   weighted sum (2 P^2 h each; the softmax XLA fuses into the sum is not
   counted), two residual adds, the MLP (2 P h m each way) and its GeLU
   (8n); layernorm_post; the adapter (2 T q a, 2 T a o, a GeLU on each);
   the projection. */
static uint64_t image_flops(uint64_t E) {
    const uint64_t P = VIT_P, h = VIT_H, m = VIT_M, T = VIT_T;
    const uint64_t block = 3 * 8 * P * h + 4 * 2 * P * h * h + 2 * 3 * P * h + 2 * 2 * P * P * h +
                           2 * P * h + 2 * 2 * P * h * m + 8 * P * m;
    const uint64_t tile = 2 * (uint64_t)VIT_G * VIT_PIX * h + P * h + 8 * P * h + VIT_L * block +
                          8 * P * h + 2 * T * VIT_Q * VIT_A + 8 * T * VIT_A +
                          2 * T * VIT_A * VIT_O + 8 * T * VIT_O + 2 * T * VIT_O * E;
    return TILES * tile;
}

/* Scout's multimodal forward less its text one (the same layers and
   head): one image's encoder and projector, and the merge's add of the
   image tokens to the sequence (S E, S 1024, E 5120). */
static void test_encoder_flops(void **state) {
    (void)state;
    const char *mm[] = {"model_name=llama4-17b-16e", "use_multimodal=true",
                        "base_num_decoder_layers=4", "per_device_batch_size=1",
                        "max_target_length=1024", "num_devices=1", NULL};
    const char *text[] = {"model_name=llama4-17b-16e", "base_num_decoder_layers=4",
                          "per_device_batch_size=1", "max_target_length=1024", "num_devices=1",
                          NULL};
    assert_int_equal(fx_forward_flops_less(mm, text), image_flops(5120) + 1024 * 5120);
}

/* image_token_share on Llama 4: the whole images of 20 x 144 = 2,880
   tokens the share holds: 0.75 of 8192 is 6,144 tokens, 2 images (40
   tiles); 0.25 of 8192 is 2,048 tokens, no whole image (refused); unset,
   one (MaxText's train_compile). */
static void test_image_share(void **state) {
    (void)state;
    remat_config_t c;
    remat_config_defaults(&c);
    snprintf(c.graph, sizeof c.graph, "llama4_vision");
    c.image_size_for_vit = 336;
    c.max_target_length = 8192;
    assert_int_equal(remat_i_config_vit_shuffle(&c), 2);
    assert_int_equal(remat_i_config_vit_tokens(&c), 2880);
    assert_int_equal(remat_i_config_vit_images(&c), 1);
    c.image_token_share = 0.75;
    assert_int_equal(remat_i_config_vit_images(&c), 2);
    uint64_t tiles = 0;
    remat_error_t err;
    assert_int_equal(remat_config_size(&c, "vit_tiles", &tiles, &err), REMAT_OK);
    assert_int_equal(tiles, 40);
    c.image_token_share = 0.25;
    assert_int_equal(remat_i_config_vit_images(&c), 0);
    const char *base[] = {"model_name=llama4-17b-16e", "use_multimodal=true",
                          "base_num_decoder_layers=4", "per_device_batch_size=1",
                          "max_target_length=8192", "num_devices=1", NULL};
    const char *two[] = {"image_token_share=0.75", NULL};
    fx_run_t *one = fx_analyze_with(NULL, base, NULL);
    fx_run_t *f2 = fx_analyze_with(NULL, base, two);
    assert_int_equal(f2->r.forward_flops - one->r.forward_flops, image_flops(5120));
    fx_free(one);
    fx_free(f2);
    const char *bad[] = {"model_name=llama4-17b-16e", "use_multimodal=true",
                         "max_target_length=8192", "num_devices=1", "image_token_share=0.25",
                         NULL};
    fx_refused(bad, "no whole image of 2880 tokens");
}

/* The encoder must be the graph's: MaxText's other settings of it are
   refused, each naming its key (matmul_precision too: the graph holds
   XLA:TPU's bf16 operands of DEFAULT-precision matmuls); a patch of 28 (12 x 12 patches a tile,
   36 tokens after the shuffle) runs, with the unfold and the table its
   size. */
static void test_encoder_checks(void **state) {
    (void)state;
    static const char *const cases[] = {
        "freeze_vision_encoder_params=false", "dtype_mm=bf16", "num_hidden_layers_for_vit=12",
        "image_size_for_vit=448", "tile_size_for_vit=448", "patch_size_for_vit=15",
        "pixel_shuffle_ratio_for_vit=0.3", "pixel_shuffle_ratio_for_vit=0.2",
        "intermediate_size_for_vit=4096", "vision_output_dim_for_vit=2048",
        "num_attention_heads_for_vit=7", "num_attention_heads_for_vit=128", "attention_for_vit",
        "matmul_precision=highest",
        /* the refusal names the value whole, however long */
        "matmul_precision=bfloat16_3x_and_more_than_sixteen",
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char arg[96];
        snprintf(arg, sizeof arg, "%s", cases[i]);
        if (!strchr(arg, '=')) {
            snprintf(arg, sizeof arg, "%s=flash", cases[i]);
        }
        const char *args[] = {"model_name=llama4-17b-16e", "num_devices=1", "use_multimodal=true",
                              strcmp(arg, "dtype_mm=bf16") == 0 ? "dtype_mm=bfloat16" : arg,
                              NULL};
        fx_refused(args, cases[i]);
    }
    const char *ok[] = {"model_name=llama4-17b-16e", "num_devices=1", "use_multimodal=true",
                        "per_device_batch_size=1", "max_target_length=1024",
                        "patch_size_for_vit=28", NULL};
    fx_run_t *f = fx_analyze_ok(NULL, ok);
    /* 3 x 28 x 28 pixels a patch, 144 + 1 table rows */
    assert_int_equal(f->r.param_count,
                     108641798144u - (VIT_PIX + VIT_P) * VIT_H + (2352 + 145) * VIT_H);
    fx_free(f);
}

/* Expert parallelism runs the multimodal graphs' .ep variants, the
   encoder the same. */
static void test_expert_parallel(void **state) {
    (void)state;
    const char *args[] = {"model_name=llama4-17b-16e", "use_multimodal=true",
                          "base_num_decoder_layers=4", "per_device_batch_size=1",
                          "max_target_length=1024", "num_devices=8",
                          "ici_expert_parallelism=4", NULL};
    fx_run_t *f = fx_analyze_ok(NULL, args);
    assert_true(f->graph->expert_parallel);
    assert_true(f->graph->head.tensors[fx_head_tensor(f->graph, "vit0_wq")].frozen);
    fx_free(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_param_counts),   cmocka_unit_test(test_frozen_encoder),
        cmocka_unit_test(test_encoder_flops),  cmocka_unit_test(test_image_share),
        cmocka_unit_test(test_encoder_checks), cmocka_unit_test(test_expert_parallel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
