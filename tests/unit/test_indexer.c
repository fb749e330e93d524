/* SPDX-License-Identifier: MIT */
/*
 * test_indexer.c: DeepSeek-V3.2's sparse-attention indexer (the deepseek
 * graph's .indexer variant): its parameters by hand and against the
 * published total, its forward FLOPs by hand, that no gradient reaches it
 * (no backward FLOPs, nothing kept but the kernel's mask, which every
 * preset policy rebuilds by re-running the indexer), and the flash op's
 * mask input rules.
 */
#include "fixtures.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* DeepSeek-V3.2's dims (MaxText's deepseek3.2-671b.yml at e591f30). */
#define E 7168u    /* base_emb_dim */
#define R 1536u    /* q_lora_rank */
#define H 64u      /* indexer_n_heads */
#define D 128u     /* indexer_head_dim */
#define P 64u      /* qk_rope_head_dim: the indexer's rotated part */
#define LAYERS 61u

/* One layer's indexer: the query projection R x H x D, the key projection
   E x D, the key's LayerNorm scale and bias 2 D, the head weights E x H:
   12,582,912 + 917,504 + 256 + 458,752 = 13,959,424. */
static uint64_t indexer_params(void) {
    return (uint64_t)R * H * D + (uint64_t)E * D + 2u * D + (uint64_t)E * H;
}

/* DeepSeek-V3.2 is DeepSeek-V3 with the indexer in each of its 61 layers
   (the yml: "Identical to deepseek3-671b config, except adding indexer
   config"): V3's count, which test_moe.c checks against the V3 report's
   671B, plus 61 x 13,959,424 = 851,524,864. The published total:
   DeepSeek-V3.2's model card (huggingface.co/deepseek-ai/DeepSeek-V3.2)
   gives 685B parameters, which as for V3 (the V3 report, arXiv
   2412.19437: 671B plus the 14B multi-token prediction module is the
   card's 685B) holds the multi-token prediction module that the yml does
   not run (mtp_num_layers 0): 671B for the model remat counts. */
static void test_param_counts(void **state) {
    (void)state;
    const char *v32[] = {"model_name=deepseek3.2-671b", "per_device_batch_size=1",
                         "max_target_length=4096", NULL};
    const char *v3[] = {"model_name=deepseek3-671b", "per_device_batch_size=1",
                        "max_target_length=4096", NULL};
    fx_run_t *a = fx_analyze_ok(NULL, v32), *b = fx_analyze_ok(NULL, v3);
    assert_int_equal(indexer_params(), 13959424u);
    assert_int_equal(a->r.param_count - b->r.param_count, LAYERS * indexer_params());
    assert_int_equal(a->r.param_count, 671877929216u);
    const double off = fabs((double)a->r.param_count - 671e9) / 671e9;
    if (off > 0.005) {
        fail_msg("deepseek3.2-671b: %.4f off the published 671B", off);
    }
    assert_string_equal(a->graph->name, "deepseek");
    fx_free(a);
    fx_free(b);
}

/* The indexer's forward on one device, batch 1, sequence S 4096 (past
   indexer_topk 2048, where MaxText runs it): the query projection 2 S R H
   D = 103,079,215,104, its RoPE 3 S H P = 50,331,648, the key projection
   2 S E D = 7,516,192,768, its LayerNorm 8 S D = 4,194,304 and RoPE 3 S P
   = 786,432, the head weights 2 S E H = 3,758,096,384 and their scale S H
   = 262,144, the scores' head-weighted sum, one contraction over heads and
   head dims, 2 S S H D = 274,877,906,944, the top-k (a compare per score)
   S S = 16,777,216 and the two block masks 2 S S = 33,554,432:
   389,337,317,376 per layer, on top of V3's layer. */
static void test_indexer_flops(void **state) {
    (void)state;
    static const char *const policies[] = {"remat_policy=full", "remat_policy=minimal",
                                           "remat_policy=save_qkv_proj"};
    const uint64_t S = 4096;
    const uint64_t fwd = 2 * S * R * H * D + 3 * S * H * P + 2 * S * E * D + 8 * S * D +
                         3 * S * P + 2 * S * E * H + S * H + 2 * S * S * H * D + S * S +
                         2 * S * S;
    assert_int_equal(fwd, 389337317376u);
    for (size_t p = 0; p < sizeof policies / sizeof policies[0]; p++) {
        const char *base[] = {"per_device_batch_size=1", "max_target_length=4096",
                              "num_devices=1", "base_num_decoder_layers=4", policies[p], NULL};
        const char *m32[] = {"model_name=deepseek3.2-671b", NULL};
        const char *m3[] = {"model_name=deepseek3-671b", NULL};
        fx_run_t *a = fx_analyze_with(NULL, base, m32), *b = fx_analyze_with(NULL, base, m3);
        for (size_t l = 0; l < 4; l++) { /* 3 dense layers, then an MoE layer */
            const remat_layer_row_t *x = &a->r.layers[l], *y = &b->r.layers[l];
            assert_int_equal(x->forward_flops - y->forward_flops, fwd);
            /* no gradient reaches the indexer: no backward of its own */
            assert_int_equal(x->backward_flops, y->backward_flops);
            /* the kernel's mask is unnamed: every preset re-runs the
               indexer in backward to rebuild it, and keeps nothing more */
            assert_int_equal(x->recompute_flops - y->recompute_flops, fwd);
            assert_int_equal(x->saved_device_bytes, y->saved_device_bytes);
        }
        fx_free(a);
        fx_free(b);
    }
}

/* The built-in graph's attention reads the indexer's two int8 block
   masks (its forward's and its key/value backward's) as its fourth and
   fifth inputs and keeps them for its backward; they need no gradient. */
static void test_flash_mask_input(void **state) {
    (void)state;
    const char *args[] = {"model_name=deepseek3.2-671b", "per_device_batch_size=1",
                          "max_target_length=4096", NULL};
    fx_run_t *f = fx_analyze_ok(NULL, args);
    const remat_block_t *blk = &f->graph->kinds[0].block;
    const size_t masks[] = {fx_tensor(f->graph, "idx_mask"), fx_tensor(f->graph, "idx_mask_dkv")};
    bool found = false;
    for (size_t j = 0; j < blk->nops; j++) {
        const remat_op_t *op = &blk->ops[j];
        if (op->kind != REMAT_OP_FLASH_ATTENTION) {
            continue;
        }
        assert_int_equal(op->nin, 5);
        for (size_t m = 0; m < 2; m++) {
            assert_int_equal(op->in[3 + m], masks[m]);
            bool kept = false;
            for (size_t k = 0; k < op->nsaves; k++) {
                kept = kept || op->saves[k] == masks[m];
            }
            assert_true(kept);
            assert_false(blk->tensors[masks[m]].needs_grad);
        }
        found = true;
    }
    assert_true(found);
    fx_free(f);
}

/* At most indexer_topk keys MaxText skips the indexer: its weights are
   there (the same count), nothing of it runs (V3's FLOPs). */
static void test_skipped_at_short_sequences(void **state) {
    (void)state;
    const char *base[] = {"per_device_batch_size=1", "max_target_length=2048", "num_devices=1",
                          "base_num_decoder_layers=4", NULL};
    const char *m32[] = {"model_name=deepseek3.2-671b", NULL};
    const char *m3[] = {"model_name=deepseek3-671b", NULL};
    fx_run_t *a = fx_analyze_with(NULL, base, m32), *b = fx_analyze_with(NULL, base, m3);
    assert_int_equal(a->r.param_count - b->r.param_count, 4u * indexer_params());
    for (size_t l = 0; l < 4; l++) {
        assert_int_equal(a->r.layers[l].forward_flops, b->r.layers[l].forward_flops);
        assert_int_equal(a->r.layers[l].recompute_flops, b->r.layers[l].recompute_flops);
    }
    fx_free(a);
    fx_free(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_param_counts),
        cmocka_unit_test(test_indexer_flops),
        cmocka_unit_test(test_flash_mask_input),
        cmocka_unit_test(test_skipped_at_short_sequences),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
