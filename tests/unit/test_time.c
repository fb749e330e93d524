/* SPDX-License-Identifier: MIT */
/*
 * test_time.c: the time model (docs/time-model.md) by hand: one einsum in
 * both roofline regimes, a host transfer that hides behind compute and one
 * that does not, and how steps, MFU and the pipeline bubble follow.
 * tpu7x: 2.307e15 FLOP/s (bf16), 7.38e12 B/s HBM.
 */
#include "fixtures.h"

#include <stdio.h>

#define PEAK 2.307e15
#define HBM 7.38e12

/* y = x + x @ w with x [b,e] bf16, w [e,e] fp32. */
static const char *const mm_graph =
    "{\"format\":\"remat-graph/1\",\"name\":\"mm\",\"dims\":{"
    "\"b\":{\"from\":\"per_device_batch_size\",\"axis\":\"activation_batch\"},"
    "\"e\":{\"from\":\"base_emb_dim\",\"weight_axis\":\"embed\"}},"
    "\"layer\":{\"inputs\":[\"x\"],\"outputs\":[\"y\"],\"tensors\":{"
    "\"x\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"},"
    "\"w\":{\"shape\":[\"e\",\"e\"],\"dtype\":\"weight\",\"param\":true},"
    "\"h\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"},"
    "\"y\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"}},\"ops\":["
    "{\"name\":\"mm\",\"op\":\"einsum\",\"spec\":\"be,ef->bf\",\"in\":[\"x\",\"w\"],\"out\":[\"h\"]},"
    "{\"name\":\"res\",\"op\":\"add\",\"in\":[\"x\",\"h\"],\"out\":[\"y\"]}]}}";

static fx_run_t *mm(const char *batch) {
    const char *args[] = {"model_name=default", batch, "base_emb_dim=4096",
                          "base_num_decoder_layers=1", NULL};
    return fx_analyze_ok(mm_graph, args);
}

static void test_einsum_rooflines(void **state) {
    (void)state;
    /* batch 1: 2*1*4096*4096 FLOPs, 15 ns at peak; it moves x (8 KiB), the
       fp32 weight (64 MiB) and h (8 KiB): 9.1 us at HBM bandwidth.
       Memory-bound. The add moves x, h, y: 3 x 8192 B. */
    fx_run_t *f = mm("per_device_batch_size=1");
    double e = 4096, mm_bytes = 8192 + e * e * 4 + 8192;
    double expect = mm_bytes / HBM + 3 * 8192 / HBM;
    assert_true(2 * e * e / PEAK < mm_bytes / HBM);
    assert_float_equal(f->r.layers[0].forward_compute_seconds, expect, expect * 1e-12);
    fx_free(f);
    /* batch 8192: 2*8192*4096*4096 = 2.75e11 FLOPs, 119 us; it moves
       64 MiB of x, 64 MiB of weight, 64 MiB of h: 27 us. Compute-bound.
       The add: 8192*4096 FLOPs (15 ns) against 3 x 64 MiB (27 us). */
    f = mm("per_device_batch_size=8192");
    double flops = 2 * 8192 * e * e, act = 8192 * e * 2;
    assert_true(flops / PEAK > (2 * act + e * e * 4) / HBM);
    expect = flops / PEAK + 3 * act / HBM;
    assert_float_equal(f->r.layers[0].forward_compute_seconds, expect, expect * 1e-12);
    /* backward: dx and dw, 2 x the forward FLOPs, compute-bound. */
    assert_true(f->r.layers[0].backward_compute_seconds >= 2 * flops / PEAK);
    fx_free(f);
}

/* FSDP over 2 chips (tpu7x ICI 1.2e12 B/s): each chip holds half of the
   64 MiB fp32 weight (its first dim is "embed", sharded over fsdp) and half
   of the batch. The weight is all-gathered for forward and backward, (2-1)/2 of it through each
   chip's ICI: 33,554,432 B, 27.96 us; the fp32 weight gradient is
   reduce-scattered likewise. One sequence per chip: the forward compute
   (x 8 KiB + gathered w 64 MiB + h 8 KiB, memory-bound, plus the add) is
   9.1 us, so the gather sets the forward and the gather plus the scatter
   the backward; what they add beyond compute is exposed collective time. */
static void test_fsdp_collectives(void **state) {
    (void)state;
    const char *args[] = {"model_name=default",  "per_device_batch_size=1", "base_emb_dim=4096",
                          "base_num_decoder_layers=1", "num_devices=2", NULL};
    fx_run_t *f = fx_analyze_ok(mm_graph, args);
    const remat_layer_row_t *row = &f->r.layers[0];
    const double half = 4096.0 * 4096 * 4 / 2, ici = 1.2e12;
    assert_float_equal(row->allgather_seconds, half / ici, 1e-18);
    assert_float_equal(row->reduce_scatter_seconds, half / ici, 1e-18);
    double fc = (8192 + 4096.0 * 4096 * 4 + 8192) / HBM + 3 * 8192 / HBM;
    assert_float_equal(row->forward_compute_seconds, fc, fc * 1e-12);
    assert_float_equal(row->forward_seconds, half / ici, 1e-18);
    assert_float_equal(row->backward_seconds, 2 * half / ici, 1e-18);
    double bc = row->backward_compute_seconds + row->recompute_seconds;
    assert_true(bc < 2 * half / ici);
    double exposed = (half / ici - fc) + (2 * half / ici - bc);
    assert_float_equal(f->r.exposed_collective_seconds, exposed, exposed * 1e-12);
    /* no head: the step is the layer's forward and backward */
    assert_float_equal(f->r.step_seconds, 3 * half / ici, 1e-18);
    fx_free(f);
}

/* Parameters in host RAM come over the host link for each pass: 64 MiB at
   1e9 B/s is 67.1 ms, which sets both passes of this layer. HFU is the
   step's FLOPs at peak over the step: compute_seconds / step_seconds, with
   forward 2*1*4096*4096 + 4096 (the add) and backward twice the matmul. */
static void test_param_fetch_and_hfu(void **state) {
    (void)state;
    const char *args[] = {"model_name=default",    "per_device_batch_size=1",
                          "base_emb_dim=4096",      "base_num_decoder_layers=1",
                          "host_link_bw=1e9",       "parameter_memory_host_offload=true",
                          NULL};
    fx_run_t *f = fx_analyze_ok(mm_graph, args);
    const remat_layer_row_t *row = &f->r.layers[0];
    const double fetch = 4096.0 * 4096 * 4 / 1e9;
    assert_float_equal(row->param_fetch_seconds, fetch, fetch * 1e-12);
    assert_float_equal(row->forward_seconds, fetch, fetch * 1e-12);
    assert_float_equal(row->backward_seconds, fetch, fetch * 1e-12);
    double flops = 2.0 * 4096 * 4096 + 4096 + 2 * (2.0 * 4096 * 4096);
    assert_int_equal(f->r.model_flops, (uint64_t)flops);
    assert_float_equal(f->r.compute_seconds, flops / PEAK, flops / PEAK * 1e-12);
    assert_float_equal(f->r.hfu, f->r.compute_seconds / f->r.step_seconds, 1e-12);
    assert_float_equal(f->r.step_seconds, 2 * fetch, fetch * 1e-12);
    fx_free(f);
}

/* The mini layer of test_sim.c under custom mlpwi=offload: 32 bytes of h go
   to host and back each layer. Its forward moves, by op: fc1 x 16 + w1 128 +
   h 32; silu h 32 + a 32; fc2 a 32 + w2 128 + o 16; add x 16 + o 16 + y 16:
   464 bytes, all memory-bound: 464 / 7.38e12 = 62.9 ps. */
static fx_run_t *offload(const char *bw) {
    const char *args[] = {"model_name=default", "per_device_batch_size=2", "base_emb_dim=4",
                          "base_mlp_dim=8", "base_num_decoder_layers=3", "remat_policy=custom",
                          "mlpwi=offload", bw, NULL};
    fx_run_t *f = fx_analyze_ok(fx_mini_graph, args);
    return f;
}

static void test_transfers_hide_or_not(void **state) {
    (void)state;
    const double fwd = 464 / HBM;
    /* 1e12 B/s: 32 B in 32 ps, inside the 62.9 ps of forward: hidden. */
    fx_run_t *f = offload("host_link_bw=1e12");
    const remat_layer_row_t *row = &f->r.layers[0];
    assert_float_equal(row->forward_compute_seconds, fwd, fwd * 1e-12);
    assert_float_equal(row->d2h_seconds, 32 / 1e12, 1e-24);
    assert_float_equal(row->forward_seconds, fwd, fwd * 1e-12);
    assert_true(f->r.offload_hidden);
    assert_float_equal(f->r.exposed_seconds, 0, 1e-24);
    fx_free(f);
    /* 1e9 B/s: 32 ns each way, far above the layer's compute: the layer
       takes the transfer's time and the excess is exposed. */
    f = offload("host_link_bw=1e9");
    row = &f->r.layers[0];
    assert_float_equal(row->forward_seconds, 32 / 1e9, 1e-21);
    assert_float_equal(row->backward_seconds, 32 / 1e9, 1e-21);
    assert_false(f->r.offload_hidden);
    double exposed = 3 * ((32 / 1e9 - row->forward_compute_seconds) +
                          (32 / 1e9 - row->backward_compute_seconds - row->recompute_seconds));
    assert_float_equal(f->r.exposed_seconds, exposed, exposed * 1e-9);
    /* No head: the step is the three layers' forward and backward. */
    assert_float_equal(f->r.step_seconds, 3 * (32 / 1e9 + 32 / 1e9), 1e-18);
    double mfu = (double)f->r.model_flops / (f->r.step_seconds * PEAK);
    assert_float_equal(f->r.mfu, mfu, mfu * 1e-12);
    fx_free(f);
}

/* Pipeline: m micro-batches over p stages take m + p - 1 slots. */
static void test_pipeline_bubble(void **state) {
    (void)state;
    const char *args[] = {"model_name=default",        "per_device_batch_size=2",
                          "base_emb_dim=4",            "base_mlp_dim=8",
                          "base_num_decoder_layers=4", "num_devices=2",
                          "ici_pipeline_parallelism=2", "num_pipeline_microbatches=4",
                          NULL};
    fx_run_t *f = fx_analyze_ok(fx_mini_graph, args);
    assert_float_equal(f->r.bubble_fraction, 1.0 / 5.0, 1e-15);
    const remat_layer_row_t *l0 = &f->r.layers[0];
    double slot = 2 * (l0->forward_seconds + l0->backward_seconds);
    assert_float_equal(f->r.step_seconds, 5 * slot, slot * 1e-9);
    fx_free(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_einsum_rooflines),
        cmocka_unit_test(test_transfers_hide_or_not),
        cmocka_unit_test(test_fsdp_collectives),
        cmocka_unit_test(test_param_fetch_and_hfu),
        cmocka_unit_test(test_pipeline_bubble),
    };
    return cmocka_run_group_tests_name("time", tests, NULL, NULL);
}
