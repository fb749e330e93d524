/* SPDX-License-Identifier: MIT */
/*
 * test_batch_split.c: DeepSeek-V3's batch-split schedule (the deepseek
 * graph's .batchsplit variant, model deepseek3-671b-batchsplit): the same
 * parameters as deepseek3-671b; the MoE layers' residuals are the
 * schedule's whatever remat_policy says, while the dense layers follow the
 * policy; the halves' buffers are half the batch's; each MoE layer holds
 * its weights gathered together and the next layer's beside them.
 *
 * Invariants: every figure is worked from the model's dims (MaxText's
 * deepseek3-671b-batchsplit.yml at e591f30) and the run's mesh, in the
 * comments beside it.
 */
#include "fixtures.h"

#include <string.h>

#define E 7168u /* base_emb_dim */
#define S 1024u /* max_target_length of these runs */

/* The batch-split model holds DeepSeek-V3's parameters: the schedule
   changes how the layers run, not what they hold (the expert weights'
   sharding differs, their count does not). */
static void test_param_count_unchanged(void **state) {
    (void)state;
    const char *split[] = {"model_name=deepseek3-671b-batchsplit", "per_device_batch_size=2",
                           "max_target_length=1024", NULL};
    const char *plain[] = {"model_name=deepseek3-671b", "per_device_batch_size=2",
                           "max_target_length=1024", NULL};
    fx_run_t *a = fx_analyze_ok(NULL, split), *b = fx_analyze_ok(NULL, plain);
    assert_int_equal(a->r.param_count, b->r.param_count);
    assert_int_equal(a->r.active_param_count, b->r.active_param_count);
    assert_string_equal(a->graph->name, "deepseek");
    assert_non_null(strstr(a->graph->description, "batch-split"));
    fx_free(a);
    fx_free(b);
}

/* The profile of the run's first layer of kind @p kind. */
static const remat_profile_t *profile_of(const fx_run_t *f, const char *kind) {
    for (size_t p = 0; p < f->r.nprofiles; p++) {
        if (strcmp(f->graph->kinds[f->r.profiles[p].kind].name, kind) == 0) {
            return &f->r.profiles[p];
        }
    }
    fail_msg("no profile of kind %s", kind);
    return NULL;
}

/* The fate of tensor @p name in profile @p p of run @p f. */
static remat_fate_t fate_of(const fx_run_t *f, const remat_profile_t *p, const char *name) {
    const remat_block_t *b = &f->graph->kinds[p->kind].block;
    for (size_t i = 0; i < b->ntensors; i++) {
        if (strcmp(b->tensors[i].name, name) == 0) {
            return p->tensors[i].fate;
        }
    }
    fail_msg("no tensor %s", name);
    return REMAT_FATE_TRANSIENT;
}

/* One device, batch 2 (a half of 1), 5 layers (1 dense, 4 MoE: the
   fewest the schedule runs). Per half the MoE layer keeps on the device
   the kernel's logsumexp [1, 128 heads, S] fp32 (524,288 bytes), the
   attention block's output [1, S, E] bf16 (14,680,064), and the second
   half's choices [1, S, 1 expert shard, 8] int32 (32,768): 2 x 524,288
   + 2 x 14,680,064 + 32,768 = 30,441,472, plus its input, offloaded.
   Offloaded: the input [2, S, E] bf16 (29,360,128) once (its halves are
   re-split from it), and per half the kernel's output [1, 128, S, 128]
   bf16 (33,554,432) and the two gating outputs [1, S, 1, 8, 2048] bf16
   (33,554,432 each): 29,360,128 + 2 x 3 x 33,554,432 = 230,686,720.
   The same under every policy; the dense layer follows the policy. */
static void test_residuals_whatever_the_policy(void **state) {
    (void)state;
    static const char *const policies[] = {"remat_policy=full", "remat_policy=minimal",
                                           "remat_policy=save_qkv_proj"};
    const char *base[] = {"model_name=deepseek3-671b-batchsplit", "per_device_batch_size=2",
                          "max_target_length=1024", "num_devices=1",
                          "base_num_decoder_layers=5", "first_num_dense_layers=1", NULL};
    uint64_t dense_saved[3];
    for (size_t k = 0; k < 3; k++) {
        const char *extra[] = {policies[k], NULL};
        fx_run_t *f = fx_analyze_with(NULL, base, extra);
        assert_int_equal(f->st, REMAT_OK);
        const remat_profile_t *moe = profile_of(f, "moe");
        const remat_layer_row_t *row = &f->r.layers[moe->first];
        assert_int_equal(row->saved_device_bytes, 2u * 524288u + 2u * 14680064u + 32768u);
        assert_int_equal(row->offloaded_bytes, 29360128u + 6u * 33554432u);
        assert_int_equal(fate_of(f, moe, "x"), REMAT_FATE_OFFLOAD);
        assert_int_equal(fate_of(f, moe, "a_ctx"), REMAT_FATE_OFFLOAD);
        assert_int_equal(fate_of(f, moe, "b_h1"), REMAT_FATE_DEVICE);
        assert_int_equal(fate_of(f, moe, "a_experts_ag"), REMAT_FATE_RECOMPUTE);
        assert_int_equal(fate_of(f, moe, "b_experts_ag"), REMAT_FATE_DEVICE);
        assert_int_equal(fate_of(f, moe, "a_q"), REMAT_FATE_RECOMPUTE);
        dense_saved[k] = f->r.layers[profile_of(f, "dense")->first].saved_device_bytes;
        fx_free(f);
    }
    /* full keeps the dense layer's input alone; minimal and
       save_qkv_proj keep more */
    assert_int_equal(dense_saved[0], 2u * S * E * 2u);
    assert_true(dense_saved[1] > dense_saved[0] && dense_saved[2] > dense_saved[0]);
}

/* Index of tensor @p name of block @p b. */
static size_t tensor_in(const remat_block_t *b, const char *name) {
    for (size_t i = 0; i < b->ntensors; i++) {
        if (strcmp(b->tensors[i].name, name) == 0) {
            return i;
        }
    }
    fail_msg("no tensor %s", name);
    return 0;
}

/* Expert parallelism 8 on 16 devices (fsdp 2), batch 2 a device. Each
   half's routed buffers hold its tokens all-gathered over the expert axis,
   k copies of each: [1, S, 8, 8, E] bf16, 939,524,096 bytes. An MoE layer's
   weights gathered over fsdp in bf16, the experts staying on their expert
   shard: the routed experts 256 x 3 x E x 2048 / 8 = 1,409,286,144, the
   MLA's 11,010,048 + 37,748,736 + 4,128,768 + 16,777,216 + 117,440,512,
   the gate's 1,835,008 and the shared expert's 44,040,192 elements
   (the norms' scales are not sharded: no copy), 1,642,266,624 x 2 bytes =
   3,284,533,248; at an MoE op the layer's and the next layer's. */
static void test_all_gathered_tokens_and_weights_ahead(void **state) {
    (void)state;
    const char *args[] = {"model_name=deepseek3-671b-batchsplit", "per_device_batch_size=2",
                          "max_target_length=1024", "topology=tpu7x-16",
                          "ici_expert_parallelism=8", "base_num_decoder_layers=5",
                          "first_num_dense_layers=1", NULL};
    fx_run_t *f = fx_analyze_ok(NULL, args);
    const remat_profile_t *moe = profile_of(f, "moe");
    const remat_block_t *b = &f->graph->kinds[moe->kind].block;
    assert_int_equal(moe->tensors[tensor_in(b, "a_tokens")].bytes, 939524096u);
    assert_int_equal(moe->tensors[tensor_in(b, "b_moe_out")].bytes, 939524096u);
    assert_int_equal(f->r.peak_at.where, REMAT_AT_LAYER);
    assert_true(f->r.peak_at.layer >= 1); /* an MoE layer */
    assert_int_equal(f->r.breakdown[REMAT_CAT_GATHERED], 2 * 3284533248LL);
    fx_free(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_param_count_unchanged),
        cmocka_unit_test(test_residuals_whatever_the_policy),
        cmocka_unit_test(test_all_gathered_tokens_and_weights_ahead),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
