/* SPDX-License-Identifier: MIT */
/*
 * test_qwen3_omni.c: Qwen3-Omni 30B-A3B (the qwen3_omni graph): the audio
 * encoder's parameter count by hand and the whole model's against the
 * published totals, the audio params' bytes on one device of an fsdp
 * mesh by hand (sharded kernels, replicated convs, norms and projector),
 * their frozen state (params and optimizer state, no gradient, no op),
 * use_audio=false's vision-and-text step, and the config checks on the
 * audio keys.
 *
 * Why no op's FLOPs: MaxText e591f30's train step passes the model no
 * audio (trainers/pre_train/train.py loss_fn passes encoder_images alone),
 * so the compiled step runs none of the audio encoder; its params exist
 * because init calls the model with a dummy audio. The graph holds them
 * with no op (graphs/tools/omni_family.py), and the tests check that the
 * step's FLOPs are Qwen3-VL's.
 */
#include "fixtures.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The audio encoder and projector (models/qwen3.py at e591f30) of width
   d, L layers, MLP m, c conv channels, mel bins in, o out: conv2d1 3x3x1xc
   and conv2d2/3 3x3xcxc with biases c; conv_out f x d, no bias, f = c x
   the bins after three stride-2 convs (128 -> 64 -> 32 -> 16); per layer
   two LayerNorms (2d each), q/k/v/o d x d with biases d, the MLP d x m
   with bias m and m x d with bias d; layernorm_post 2d; proj1 d x d + d,
   proj2 d x o + o. */
static uint64_t audio_params(uint64_t d, uint64_t L, uint64_t m, uint64_t c, uint64_t bins,
                             uint64_t o) {
    const uint64_t f = c * ((((bins + 1) / 2 + 1) / 2 + 1) / 2);
    const uint64_t convs = (9 * c + c) + 2 * (9 * c * c + c) + f * d;
    const uint64_t layer = 4 * d + 4 * (d * d + d) + (d * m + m) + (m * d + d);
    return convs + L * layer + 2 * d + (d * d + d) + (d * o + o);
}

/* Qwen3-Omni 30B-A3B's audio encoder: d 1280, 32 layers, MLP 5120, 480
   channels, 128 bins, out 2048: convs 4,800 + 2 x 2,074,080 + conv_out
   7,680 x 1,280 = 9,830,400; 32 layers of 19,677,440 = 629,678,080;
   2,560; projector 1,639,680 + 2,623,488: 647,927,168 in all, against
   the Qwen3-Omni technical report's 650M audio encoder (AuT, its Table 1):
   0.32% off. The model is Qwen3-VL 30B-A3B's (31,070,754,032,
   test_qwen3_vl.c: the same decoder and vision encoder) with 128 more
   vocabulary rows (152,064 against 151,936) in the embedding and the
   untied head (2 x 128 x 2,048 = 524,288) and the audio encoder:
   31,719,205,488. That is the Thinker, all MaxText builds (the Talker,
   its MTP module and Code2Wav are no part of its model); published, Qwen3-VL
   30B-A3B's 31.1B (Hugging Face) and the report's 650M audio encoder make
   31.75B: 0.10% off. */
static void test_param_counts(void **state) {
    (void)state;
    const uint64_t audio = audio_params(1280, 32, 5120, 480, 128, 2048);
    assert_int_equal(audio, 647927168u);
    const double off_audio = fabs((double)audio - 650e6) / 650e6;
    assert_true(off_audio < 0.005);
    const char *args[] = {"model_name=qwen3-omni-30b-a3b", "per_device_batch_size=1",
                          "max_target_length=1024", "num_devices=8", NULL};
    fx_run_t *f = fx_analyze_ok(NULL, args);
    const uint64_t total = 31070754032u + 2 * 128 * 2048 + audio;
    assert_int_equal(total, 31719205488u);
    assert_int_equal(f->r.param_count, total);
    const double published = 31.1e9 + 650e6;
    const double off = fabs((double)f->r.param_count - published) / published;
    if (off > 0.005) {
        fail_msg("%.4f off the published total", off);
    }
    fx_free(f);
}

/* On v6e-8 (fsdp 8) the audio params on one device, by MaxText's logical
   axes (layers/attentions.py, layers/linears.py at e591f30): the q/k/v/o
   and MLP kernels and the o and MLP-out biases are sharded 8 ways on
   `embed` (per layer 4 x 1280^2 + 2 x 1280 x 5120 + 2 x 1280 =
   19,663,360; x 32 / 8 = 78,653,440); the q/k/v biases (q_heads, kv_heads:
   the tensor axis, 1 here), the MLP-in bias (mlp: tensor), the norms, the
   convs, conv_out and the projector whole (per layer 3 x 1280 + 5120 + 4 x
   1280 = 14,080, x 32 = 450,560; convs 4,152,960; conv_out 9,830,400;
   2,560; projector 4,263,168): 97,353,088. With use_audio=false the same
   model has none of them (its vocabulary rows are the same). Each is
   fp32 with its two AdamW moments and no gradient: 12 bytes, not 16. */
static void test_audio_on_device(void **state) {
    (void)state;
    const char *on[] = {"model_name=qwen3-omni-30b-a3b", "topology=v6e-8",
                        "base_num_decoder_layers=2", "per_device_batch_size=1",
                        "max_target_length=1024", NULL};
    const char *off[] = {"model_name=qwen3-omni-30b-a3b", "topology=v6e-8", "use_audio=false",
                         "base_num_decoder_layers=2", "per_device_batch_size=1",
                         "max_target_length=1024", NULL};
    fx_run_t *a = fx_analyze_ok(NULL, on);
    fx_run_t *b = fx_analyze_ok(NULL, off);
    const uint64_t sharded = 32 * (4 * 1280 * 1280 + 2 * 1280 * 5120 + 2 * 1280) / 8;
    const uint64_t whole = 32 * (3 * 1280 + 5120 + 4 * 1280) + (9 * 480 + 480) +
                           2 * (9 * 480 * 480 + 480) + 7680 * 1280 + 2 * 1280 +
                           (1280 * 1280 + 1280) + (1280 * 2048 + 2048);
    assert_int_equal(sharded + whole, 97353088u);
    assert_int_equal(a->r.param_count_device - b->r.param_count_device, sharded + whole);
    assert_int_equal(a->r.param_bytes - b->r.param_bytes, 4 * (sharded + whole));
    assert_int_equal(a->r.optimizer_bytes - b->r.optimizer_bytes, 8 * (sharded + whole));
    assert_int_equal(a->r.grad_bytes, b->r.grad_bytes);
    /* nothing of the encoder runs: the same FLOPs */
    assert_int_equal(a->r.forward_flops, b->r.forward_flops);
    const remat_graph_t *g = a->graph;
    for (size_t i = 0; i < g->head.ntensors; i++) {
        const remat_tensor_t *t = &g->head.tensors[i];
        if (strncmp(t->name, "aud_", 4) == 0) {
            assert_true(t->param && t->frozen && !t->needs_grad);
        }
    }
    for (size_t j = 0; j < g->head.nops; j++) {
        for (size_t k = 0; k < g->head.ops[j].nin; k++) {
            assert_false(strncmp(g->head.tensors[g->head.ops[j].in[k]].name, "aud_", 4) == 0);
        }
    }
    fx_free(a);
    fx_free(b);
}

/* use_audio=false: MaxText builds no audio encoder, and the step is
   Qwen3-VL's graph (the 30B-A3B's with Omni's 128 more vocabulary rows),
   as a note says. */
static void test_without_audio(void **state) {
    (void)state;
    const char *args[] = {"model_name=qwen3-omni-30b-a3b", "use_audio=false",
                          "per_device_batch_size=1", "max_target_length=1024", "num_devices=8",
                          NULL};
    fx_run_t *f = fx_analyze_ok(NULL, args);
    assert_string_equal(f->cfg.graph, "qwen3_vl_moe");
    assert_int_equal(f->r.param_count, 31070754032u + 2 * 128 * 2048);
    assert_non_null(strstr(f->cfg.notes, "use_audio=false"));
    fx_free(f);
}

/* The audio settings MaxText's encoder cannot take, or a graph without
   the encoder, are refused, each naming its key. */
static void test_audio_checks(void **state) {
    (void)state;
    static const struct {
        const char *model, *arg, *names;
    } cases[] = {
        {"model_name=qwen3-omni-30b-a3b", "num_conv_layers_for_audio=2",
         "num_conv_layers_for_audio=2"},
        {"model_name=qwen3-omni-30b-a3b", "encoder_attention_heads_for_audio=7",
         "encoder_attention_heads_for_audio=7"},
        {"model_name=qwen3-omni-30b-a3b", "output_dim_for_audio=1024", "output_dim_for_audio=1024"},
        {"model_name=qwen3-omni-30b-a3b", "d_model_for_audio=0", "d_model_for_audio"},
        {"model_name=qwen3-vl-30b-a3b", "use_audio=true", "without an audio encoder"},
        {"model_name=qwen3-vl-30b-a3b", "graph=qwen3_omni", "model_name=qwen3-vl-30b-a3b"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *args[] = {cases[i].model, "num_devices=8", "use_audio=true", cases[i].arg,
                              NULL};
        fx_refused(args, cases[i].names);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_param_counts),
        cmocka_unit_test(test_audio_on_device),
        cmocka_unit_test(test_without_audio),
        cmocka_unit_test(test_audio_checks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
