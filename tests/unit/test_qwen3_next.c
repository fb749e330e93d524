/* SPDX-License-Identifier: MIT */
/*
 * test_qwen3_next.c: Qwen3-Next 80B-A3B and Qwen3.5's text decoders (the
 * qwen3_next graph): the parameter counts by hand and against the
 * published totals, the layer pattern (a gated full-attention layer every
 * inhomogeneous_layer_cycle_interval, gated DeltaNet layers between),
 * the scanned block of four as one remat unit, and the config checks on
 * the gated DeltaNet's heads and chunks.
 */
#include "fixtures.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The MoE block, every layer: the experts X x 3 E M (wi_0, wi_1, wo), the
   router E x X, the shared expert 3 E M, its gate E, and the two norms of
   E around the attention. */
static uint64_t moe_params(uint64_t E, uint64_t X, uint64_t M) {
    return X * 3 * E * M + E * X + 3 * E * M + E + 2 * E;
}

/* A gated DeltaNet layer (models/qwen3.py, Qwen3NextGatedDeltaNet): the
   qkvz projection E x (2 Hk Dk + 2 Hv Dv), ba E x 2 Hv, the depthwise conv
   4 x (2 Hk Dk + Hv Dv), A_log and dt_bias Hv each, the gated norm Dv,
   out_proj Hv Dv x E; head dims Dk = Dv = 128, Hk 16. */
static uint64_t gdn_params(uint64_t E, uint64_t Hv) {
    const uint64_t Hk = 16, D = 128, kd = Hk * D, vd = Hv * D;
    return E * (2 * kd + 2 * vd) + E * 2 * Hv + 4 * (2 * kd + vd) + 2 * Hv + D + vd * E;
}

/* A gated full-attention layer: the query and its gate E x Hq 2 D, k and v
   E x Hkv D each, the query and key norms D each, out_proj Hq D x E; head
   dim D 256, Hkv 2. */
static uint64_t attention_params(uint64_t E, uint64_t Hq) {
    const uint64_t D = 256, Hkv = 2;
    return E * Hq * 2 * D + 2 * E * Hkv * D + 2 * D + Hq * D * E;
}

/* Qwen3-Next 80B-A3B: E 2048, 48 layers (36 DeltaNet, 12 attention), 512
   experts of M 512, Hq 16, Hv 32, vocabulary 151,936, untied:
     36 x 33,718,464 + 12 x 27,263,488 + 48 x 1,614,813,184
     + 2 x 311,164,928 + 2,048 = 79,674,391,296
   Qwen's model card (huggingface.co/Qwen/Qwen3-Next-80B-A3B-Instruct) gives
   80B in total: 0.41% off. Qwen3.5 35B-A3B: E 2048, 40 layers (30, 10),
   256 experts of 512, Hv 32, vocabulary 248,320: 34,660,610,688; 397B-A17B:
   E 4096, 60 layers (45, 15), 512 experts of 1024, Hq 32, Hv 64:
   396,346,350,336. Their cards give 35B and 397B with the vision encoder,
   which the text decoder leaves out: 446,571,248 and 456,010,480 by
   MaxText's vision config (configs/models/qwen3.5-*.yml) (27 blocks of width 1152, MLP 4304: 411,466,608;
   the patch and position embeddings 4,424,832; the merger 4608 x 4608 plus
   4608 x the decoder's width, and their biases): with it the two are
   0.31% and 0.05% off their cards. */
static void test_param_counts(void **state) {
    (void)state;
    static const struct {
        const char *model;
        uint64_t E, Hq, Hv, M, X, L, V;
        uint64_t total;
        double published, vision;
    } models[] = {
        {"model_name=qwen3-next-80b-a3b", 2048, 16, 32, 512, 512, 48, 151936, 79674391296u, 80e9,
         0},
        {"model_name=qwen3.5-35b-a3b", 2048, 16, 32, 512, 256, 40, 248320, 34660610688u, 35e9,
         446571248},
        {"model_name=qwen3.5-397b-a17b", 4096, 32, 64, 1024, 512, 60, 248320, 396346350336u,
         397e9, 456010480},
    };
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        const char *args[] = {models[i].model, "per_device_batch_size=1", "max_target_length=1024",
                              "num_devices=64", NULL};
        fx_run_t *f = fx_analyze_ok(NULL, args);
        const uint64_t E = models[i].E, L = models[i].L;
        const uint64_t layers = (L - L / 4) * gdn_params(E, models[i].Hv) +
                                L / 4 * attention_params(E, models[i].Hq) +
                                L * moe_params(E, models[i].X, models[i].M);
        const uint64_t head = 2 * models[i].V * E + E;
        assert_int_equal(layers + head, models[i].total);
        assert_int_equal(f->r.param_count, models[i].total);
        assert_string_equal(f->graph->name, "qwen3_next");
        const double with_vision = (double)f->r.param_count + models[i].vision;
        const double off = fabs(with_vision - models[i].published) / models[i].published;
        if (off > 0.005) {
            fail_msg("%s: %.4f off the published total", models[i].model, off);
        }
        fx_free(f);
    }
}

/* Layer i is the gated full-attention layer when (i + 1) is a multiple of
   inhomogeneous_layer_cycle_interval (Qwen3NextDecoderLayer), a gated
   DeltaNet layer otherwise; MaxText scans blocks of that many layers, one
   remat unit each (one per layer unscanned). */
static void test_layer_pattern(void **state) {
    (void)state;
    const char *args[] = {"model_name=qwen3-next-80b-a3b", "per_device_batch_size=1",
                          "max_target_length=1024", "base_num_decoder_layers=8",
                          "num_devices=8", NULL};
    fx_run_t *f = fx_analyze_ok(NULL, args);
    assert_int_equal(f->r.nlayers, 8);
    assert_int_equal(f->r.remat_unit, 4);
    for (size_t l = 0; l < 8; l++) {
        const size_t kind = f->r.profiles[f->r.layers[l].profile].kind;
        assert_string_equal(f->graph->kinds[kind].name, (l + 1) % 4 ? "linear" : "full");
    }
    fx_free(f);
    const char *unscanned[] = {"model_name=qwen3.5-35b-a3b", "per_device_batch_size=1",
                               "max_target_length=1024", "base_num_decoder_layers=4",
                               "scan_layers=false", "num_devices=8", NULL};
    f = fx_analyze_ok(NULL, unscanned);
    assert_int_equal(f->r.remat_unit, 1);
    fx_free(f);
}

/* A gated DeltaNet layer's saved bytes under full are its input alone,
   whatever its chunked recurrence makes: 1 x 1024 x 2048 bf16 =
   4,194,304 bytes, as JAX keeps (validation/xla_residuals.json); its
   backward re-runs the forward ops whose outputs it reads, the delta
   rule's among them (the residual adds' outputs it does not read). */
static void test_full_keeps_the_input(void **state) {
    (void)state;
    const char *args[] = {"model_name=qwen3-next-80b-a3b", "per_device_batch_size=1",
                          "max_target_length=1024", "base_num_decoder_layers=4",
                          "num_devices=1", "remat_policy=full", "scan_layers=false", NULL};
    fx_run_t *f = fx_analyze_ok(NULL, args);
    for (size_t l = 0; l < 4; l++) {
        assert_int_equal(f->r.layers[l].saved_device_bytes, 1024 * 2048 * 2);
        assert_true(f->r.layers[l].recompute_flops > f->r.layers[l].forward_flops * 9 / 10);
        assert_true(f->r.layers[l].recompute_flops < f->r.layers[l].forward_flops);
    }
    fx_free(f);
}

/* Under tensor parallelism the DeltaNet's activations split by heads, as
   MaxText's mixed_qkvz and delta rule do: the projections' flat widths and
   the [heads, head_dim] views divide alike, so the reshapes between them
   hold: the delta rule's state with the batch of 2 whole and its 32 heads
   over tensor 2 is as large as with the batch over fsdp 2 and every head. */
static void test_tensor_parallel(void **state) {
    (void)state;
    const char *one[] = {"model_name=qwen3-next-80b-a3b", "per_device_batch_size=1",
                         "max_target_length=1024", "base_num_decoder_layers=4",
                         "num_devices=2", "ici_fsdp_parallelism=2", NULL};
    const char *two[] = {"model_name=qwen3-next-80b-a3b", "per_device_batch_size=1",
                         "max_target_length=1024", "base_num_decoder_layers=4",
                         "num_devices=2", "ici_fsdp_parallelism=1", "ici_tensor_parallelism=2",
                         NULL};
    fx_run_t *f1 = fx_analyze_ok(NULL, one);
    fx_run_t *f2 = fx_analyze_ok(NULL, two);
    const remat_block_t *b = &f1->graph->kinds[f1->r.profiles[f1->r.layers[0].profile].kind].block;
    bool seen = false;
    for (size_t i = 0; i < b->ntensors; i++) {
        if (strcmp(b->tensors[i].name, "state") == 0) {
            const size_t p1 = f1->r.layers[0].profile, p2 = f2->r.layers[0].profile;
            /* batch 2 over fsdp 2 against batch 2 whole over heads split in two */
            assert_int_equal(f1->r.profiles[p1].tensors[i].bytes,
                             f2->r.profiles[p2].tensors[i].bytes);
            seen = true;
        }
    }
    assert_true(seen);
    fx_free(f1);
    fx_free(f2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_param_counts),
        cmocka_unit_test(test_layer_pattern),
        cmocka_unit_test(test_full_keeps_the_input),
        cmocka_unit_test(test_tensor_parallel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
