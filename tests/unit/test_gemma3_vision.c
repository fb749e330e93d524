/* SPDX-License-Identifier: MIT */
/*
 * test_gemma3_vision.c: Gemma 3 4B, 12B and 27B with their vision encoder
 * (use_multimodal=true on the gemma3 graph runs its multimodal variant,
 * gemma3_vision): the parameter counts by hand and against the published
 * totals, the frozen encoder (no gradient buffer, no backward, no
 * residual) beside the trained projector, the encoder's forward FLOPs by
 * hand, the images an example that image_token_share gives, the text path
 * untouched, and the config checks on the encoder.
 *
 * The encoder's sizes are MaxText's (configs/models/gemma3-*.yml at
 * e591f30, the same for the three models): 27 blocks of width h 1152, MLP
 * m 4304, 16 heads of 72; one 896 x 896 x 3 image an example, cut by the
 * 14 x 14 patch Conv into P = 64^2 = 4,096 patches of 588 pixels, pooled
 * to T = 256 image tokens (windows of 16 patches).
 */
#include "fixtures.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "input/config_maxtext.h"

enum { VIT_H = 1152, VIT_M = 4304, VIT_L = 27, VIT_P = 4096, VIT_PIX = 588, VIT_T = 256 };

/* One encoder block (Encoder1DBlock): two LayerNorms (scale and bias) of
   h, q/k/v/o h x h with biases (use_bias_in_projections), the MLP h x m
   and m x h with biases: 4,608 + 5,313,024 + 4,962,512 + 4,959,360 =
   15,239,504. */
static uint64_t vit_block_params(void) {
    const uint64_t h = VIT_H, m = VIT_M;
    return 4 * h + 4 * (h * h + h) + (h * m + m) + (m * h + h);
}

/* The frozen encoder: the patch Conv 588 x h with its bias (678,528), the
   learned position table P x h (4,718,592), 27 blocks (411,466,608), the
   final LayerNorm (2,304): 416,866,032, the Gemma 3 technical report's
   "417M" vision encoder (SigLIP So400m at 896 pixels, Table 1). */
static uint64_t encoder_params(void) {
    const uint64_t h = VIT_H;
    return VIT_PIX * h + h + (uint64_t)VIT_P * h + VIT_L * vit_block_params() + 2 * h;
}

/* The trained projector (VisionEmbedder): its RMSNorm scale h and the
   h x E projection. */
static uint64_t projector_params(uint64_t E) {
    return VIT_H + VIT_H * E;
}

/* A Gemma 3 decoder layer: q and o E x Hq D, k and v E x Hkv D, the q/k
   norms D each, the GeGLU MLP 3 E M, four norms E (pre and post, around
   the attention and the MLP). */
static uint64_t gemma3_layer(uint64_t E, uint64_t Hq, uint64_t Hkv, uint64_t D, uint64_t M) {
    return 2 * E * Hq * D + 2 * E * Hkv * D + 2 * D + 3 * E * M + 4 * E;
}

/* The text decoders (tied vocabulary 262,144, final norm E): 4B, E 2560,
   34 layers of 94,382,592 (3,209,008,128) and the table 671,088,640:
   3,880,099,328; 12B, E 3840, 48 layers of 224,148,992 (10,759,151,616)
   and 1,006,632,960: 11,765,788,416; 27B, E 5376, head dim 128, 62 layers
   of 412,898,560 (25,599,710,720) and 1,409,286,144: 27,009,002,240. The
   encoder and its projector to E add 419,816,304, 421,290,864 and
   423,060,336: 4,299,915,632, 12,187,079,280 and 27,432,062,576 in all.
   Hugging Face's model pages (huggingface.co/google/gemma-3-4b-it,
   -12b-it, -27b-it) give 4.3B, 12.2B and 27.4B: 0.002%, 0.11% and 0.12%
   off. */
static void test_param_counts(void **state) {
    (void)state;
    static const struct {
        const char *model;
        uint64_t E, layers, Hq, Hkv, D, M, text, total;
        double published;
    } models[] = {
        {"model_name=gemma3-4b", 2560, 34, 8, 4, 256, 10240, 3880099328u, 4299915632u, 4.3e9},
        {"model_name=gemma3-12b", 3840, 48, 16, 8, 256, 15360, 11765788416u, 12187079280u,
         12.2e9},
        {"model_name=gemma3-27b", 5376, 62, 32, 16, 128, 21504, 27009002240u, 27432062576u,
         27.4e9},
    };
    const uint64_t V = 262144;
    assert_int_equal(encoder_params(), 416866032u);
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        const uint64_t E = models[i].E;
        const uint64_t text =
            models[i].layers * gemma3_layer(E, models[i].Hq, models[i].Hkv, models[i].D,
                                            models[i].M) +
            V * E + E;
        assert_int_equal(text + encoder_params() + projector_params(E), models[i].total);
        const char *args[] = {models[i].model, "use_multimodal=true", "per_device_batch_size=1",
                              "max_target_length=1024", "num_devices=8", NULL};
        fx_total_params(args, "gemma3_vision", models[i].total, models[i].published);
        /* the text path is the gemma3 graph's, untouched */
        const char *plain[] = {models[i].model, "per_device_batch_size=1",
                               "max_target_length=1024", "num_devices=8", NULL};
        fx_run_t *f = fx_analyze_ok(NULL, plain);
        assert_string_equal(f->cfg.graph, "gemma3");
        assert_int_equal(f->r.param_count, text);
        assert_int_equal(text, models[i].text);
        fx_free(f);
    }
}

/* On one device every param is whole and fp32 (weight_dtype's default,
   and MaxText's own for the encoder's MLP, norms, Conv and table): the
   encoder's 416,866,032 frozen params hold 1,667,464,128 bytes but no
   gradient; the projector's and the decoder's have theirs, and every
   param its two AdamW moments. The encoder's ops have no backward and
   keep nothing; the projector's do, and keep the pooled tokens (its
   norm's input) and the normed ones (the projection's). */
static void test_frozen_encoder(void **state) {
    (void)state;
    const char *args[] = {"model_name=gemma3-4b", "use_multimodal=true", "per_device_batch_size=1",
                          "max_target_length=1024", "num_devices=1", NULL};
    fx_run_t *f = fx_analyze_ok(NULL, args);
    fx_frozen_fp32(f, encoder_params());
    const remat_graph_t *g = f->graph;
    assert_true(g->head.tensors[fx_head_tensor(g, "vit0_wq")].frozen);
    assert_false(g->head.tensors[fx_head_tensor(g, "vit0_wq")].needs_grad);
    assert_true(g->head.tensors[fx_head_tensor(g, "vit_pos_table")].frozen);
    assert_false(fx_head_maker(g, "vit0_scores")->has_backward);
    assert_false(g->head.tensors[fx_head_tensor(g, "vit0_scores")].residual);
    assert_false(g->head.tensors[fx_head_tensor(g, "vit26_out")].residual);
    assert_false(fx_head_maker(g, "vit_pooled")->has_backward);
    assert_true(fx_head_maker(g, "vit_proj_out")->has_backward);
    assert_false(g->head.tensors[fx_head_tensor(g, "vit_proj_w")].frozen);
    assert_true(g->head.tensors[fx_head_tensor(g, "vit_proj_w")].needs_grad);
    assert_true(g->head.tensors[fx_head_tensor(g, "vit_pooled")].residual);
    assert_true(g->head.tensors[fx_head_tensor(g, "vit_proj_normed")].residual);
    fx_free(f);
}

/* The encoder's forward FLOPs by hand, per image (P 4096 patches of 588
   pixels, width h 1152, MLP m 4304, T 256 tokens), projected to E: the
   patch matmul and the position add; per block the two LayerNorms (8n
   each), q/k/v/o (2 P h^2 each), the scores and the weighted sum
   (2 P^2 h each; no RoPE, and the softmax XLA fuses into the sum is not
   counted), two residual adds, the MLP (2 P h m each way) and its GeLU
   (8n); the final LayerNorm, the pool's sum over its windows (2 P h, a
   one-operand einsum), the projector's RMSNorm (4 T h) and projection. */
static uint64_t image_flops(uint64_t E) {
    const uint64_t P = VIT_P, h = VIT_H, m = VIT_M, T = VIT_T;
    const uint64_t block = 2 * 8 * P * h + 4 * 2 * P * h * h + 2 * 2 * P * P * h + 2 * P * h +
                           2 * 2 * P * h * m + 8 * P * m;
    return 2 * P * VIT_PIX * h + P * h + VIT_L * block + 8 * P * h + 2 * P * h + 4 * T * h +
           2 * T * h * E;
}

/* Gemma 3 4B's multimodal forward less its text one (the same layers and
   head): one image's encoder and projector, and the merge's add of the
   image tokens to the sequence (S E, S 1024, E 2560). */
static void test_encoder_flops(void **state) {
    (void)state;
    const char *mm[] = {"model_name=gemma3-4b", "use_multimodal=true", "per_device_batch_size=1",
                        "max_target_length=1024", "num_devices=1", NULL};
    const char *text[] = {"model_name=gemma3-4b", "per_device_batch_size=1",
                          "max_target_length=1024", "num_devices=1", NULL};
    assert_int_equal(fx_forward_flops_less(mm, text), image_flops(2560) + 1024 * 2560);
}

/* image_token_share on Gemma 3: the whole images of 256 tokens the share
   holds: 0.5 of 2048 is 1024 tokens, 4 images; 0.1 of 2048 is 204 tokens,
   no whole image (refused); unset, one (MaxText's train_compile). */
static void test_image_share(void **state) {
    (void)state;
    remat_config_t c;
    remat_config_defaults(&c);
    snprintf(c.graph, sizeof c.graph, "gemma3_vision");
    c.max_target_length = 2048;
    assert_int_equal(remat_i_config_vit_tokens(&c), 256);
    assert_int_equal(remat_i_config_vit_images(&c), 1);
    c.image_token_share = 0.5;
    assert_int_equal(remat_i_config_vit_images(&c), 4);
    c.image_token_share = 0.1;
    assert_int_equal(remat_i_config_vit_images(&c), 0);
    const char *base[] = {"model_name=gemma3-4b", "use_multimodal=true", "per_device_batch_size=1",
                          "max_target_length=2048", "num_devices=1", NULL};
    const char *two[] = {"image_token_share=0.25", NULL};
    fx_run_t *one = fx_analyze_with(NULL, base, NULL);
    fx_run_t *f2 = fx_analyze_with(NULL, base, two);
    /* one more image's encoder, and its input held the whole step:
       4096 x 588 int32 */
    assert_int_equal(f2->r.forward_flops - one->r.forward_flops, image_flops(2560));
    assert_true(f2->r.peak_bytes >= one->r.peak_bytes + VIT_P * VIT_PIX * 4);
    fx_free(one);
    fx_free(f2);
    const char *bad[] = {"model_name=gemma3-4b", "use_multimodal=true", "max_target_length=2048",
                         "num_devices=1", "image_token_share=0.1", NULL};
    fx_refused(bad, "no whole image of 256 tokens");
}

/* The encoder must be the graph's: MaxText's other settings of it are
   refused, each naming its key; Qwen3-VL's keys are not Gemma 3's and
   change nothing; scanned layers run (no deepstack). */
static void test_encoder_checks(void **state) {
    (void)state;
    static const struct {
        const char *arg, *names;
    } cases[] = {
        {"freeze_vision_encoder_params=false", "freeze_vision_encoder_params=false"},
        {"dtype_mm=bfloat16", "dtype_mm=bf16"},
        {"num_hidden_layers_for_vit=12", "num_hidden_layers_for_vit=12"},
        {"image_size_for_vit=768", "image_size_for_vit=768"},
        {"patch_size_for_vit=16", "patch_size_for_vit=16"},
        {"conv_stride_for_vit=7", "conv_stride_for_vit=7"},
        {"num_attention_heads_for_vit=7", "num_attention_heads_for_vit=7"},
        {"posemb_type_for_vit=sincos2d", "posemb_type_for_vit"},
        {"attention_for_vit=flash", "attention_for_vit"},
        {"graph=gemma3_vision use_multimodal=false", "use_multimodal=false"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char arg[96], *second;
        snprintf(arg, sizeof arg, "%s", cases[i].arg);
        second = strchr(arg, ' ');
        if (second) {
            *second++ = '\0';
        }
        const char *args[] = {"model_name=gemma3-4b", "num_devices=1", "use_multimodal=true", arg,
                              second, NULL};
        fx_refused(args, cases[i].names);
    }
    const char *ok[] = {"model_name=gemma3-4b", "num_devices=1", "use_multimodal=true",
                        "per_device_batch_size=1", "scan_layers=true",
                        "deepstack_visual_indexes_for_vit=[1, 2]", "temporal_patch_size_for_vit=1",
                        "patch_size_for_vit=28", "conv_stride_for_vit=28", NULL};
    fx_run_t *f = fx_analyze_ok(NULL, ok);
    /* 32 x 32 patches of 3 x 28 x 28 pixels, still 256 tokens */
    assert_int_equal(f->r.param_count, 4299915632u - (588 + 4096) * 1152 + (2352 + 1024) * 1152);
    fx_free(f);
}

/* A model of its own (decoder_block gemma3, no model_name) runs the
   multimodal variant too; a text graph without one is refused. */
static void test_variant(void **state) {
    (void)state;
    const char *own[] = {"decoder_block=gemma3", "base_emb_dim=1152", "base_num_query_heads=4",
                         "base_num_kv_heads=1", "head_dim=256", "base_mlp_dim=6912",
                         "base_num_decoder_layers=6", "vocab_size=262144",
                         "mlp_activations=[gelu,linear]", "use_qk_norm=true",
                         "use_post_attn_norm=true", "use_post_ffw_norm=true",
                         "logits_via_embedding=true", "hidden_size_for_vit=1152",
                         "intermediate_size_for_vit=4304", "num_hidden_layers_for_vit=27",
                         "use_multimodal=true", "per_device_batch_size=1", "num_devices=1", NULL};
    fx_run_t *f = fx_analyze_ok(NULL, own);
    assert_string_equal(f->cfg.graph, "gemma3_vision");
    fx_free(f);
    const char *text[] = {"model_name=llama2-7b", "num_devices=1", "use_multimodal=true", NULL};
    fx_refused(text, "the llama graph is built without a vision encoder");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_param_counts),  cmocka_unit_test(test_frozen_encoder),
        cmocka_unit_test(test_encoder_flops), cmocka_unit_test(test_image_share),
        cmocka_unit_test(test_encoder_checks), cmocka_unit_test(test_variant),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
