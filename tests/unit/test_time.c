/* SPDX-License-Identifier: MIT */
/*
 * test_time.c: the time model (docs/time-model.md) by hand: one einsum in
 * both roofline regimes, the efficiencies that scale the rooflines, a
 * causal flash kernel, fused ops, a host transfer that hides behind compute
 * and one that does not, FSDP collectives, the chunked loss, and how steps,
 * MFU (against the run's dtype's peak) and the pipeline bubble follow.
 * tpu7x, per JAX device (half the chip's figures): 1.1535e15 FLOP/s bf16,
 * 2.307e15 fp8, 3.69e12 B/s HBM, 6e11 B/s ICI, 1.6e10 B/s host link.
 * Efficiencies are 1 unless a test says otherwise, for exact rooflines.
 */
#include "fixtures.h"

#include <stdio.h>

#define PEAK 1.1535e15
#define PEAK8 2.307e15
#define HBM 3.69e12
#define ICI 6e11

#define EXACT "matmul_efficiency=1", "attention_efficiency=1", "memory_efficiency=1"

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

static const char *const mm_base[] = {"model_name=default", "base_emb_dim=4096",
                                      "base_num_decoder_layers=1", NULL};

static fx_run_t *mm(const char *batch, const char *const *extra) {
    const char *args[16];
    size_t n = 0;
    args[n++] = batch;
    for (size_t i = 0; extra && extra[i]; i++) {
        args[n++] = extra[i];
    }
    args[n] = NULL;
    return fx_analyze_with(mm_graph, mm_base, args);
}

static const char *const exact[] = {EXACT, NULL};

static void test_einsum_rooflines(void **state) {
    (void)state;
    /* batch 1: 2*1*4096*4096 FLOPs, 29 ns at peak; it moves x (8 KiB), the
       fp32 weight (64 MiB, not sharded: read in its own dtype) and h
       (8 KiB): 9.1 us at HBM bandwidth. Memory-bound. The add moves x, h,
       y: 3 x 8192 B. */
    fx_run_t *f = mm("per_device_batch_size=1", exact);
    double e = 4096, mm_bytes = 8192 + e * e * 4 + 8192;
    double expect = mm_bytes / HBM + 3 * 8192 / HBM;
    assert_true(2 * e * e / PEAK < mm_bytes / HBM);
    assert_float_equal(f->r.layers[0].forward_compute_seconds, expect, expect * 1e-12);
    fx_free(f);
    /* batch 8192: 2*8192*4096*4096 = 2.75e11 FLOPs, 238 us; it moves
       64 MiB of x, 64 MiB of weight, 64 MiB of h: 55 us. Compute-bound.
       The add: 8192*4096 FLOPs (29 ns) against 3 x 64 MiB (55 us). */
    f = mm("per_device_batch_size=8192", exact);
    double flops = 2 * 8192 * e * e, act = 8192 * e * 2;
    assert_true(flops / PEAK > (2 * act + e * e * 4) / HBM);
    expect = flops / PEAK + 3 * act / HBM;
    assert_float_equal(f->r.layers[0].forward_compute_seconds, expect, expect * 1e-12);
    /* backward: dx and dw, 2 x the forward FLOPs, compute-bound. */
    assert_true(f->r.layers[0].backward_compute_seconds >= 2 * flops / PEAK);
    fx_free(f);
}

/* An op's roofline is max(FLOPs / (peak x efficiency), bytes / (HBM
   bandwidth x memory_efficiency)), the efficiency being
   attention_efficiency for flash kernels and matmul_efficiency for every
   other op. */
static void test_efficiencies(void **state) {
    (void)state;
    const double e = 4096, act = 8192 * e * 2, flops = 2 * 8192 * e * e;
    /* The profile's: tpu7x sustains 0.4 of its HBM bandwidth. Batch 1 is
       memory-bound: (mm 8192 + 64 MiB + 8192, add 3 x 8192) / (HBM x 0.4). */
    fx_run_t *f = mm("per_device_batch_size=1", NULL);
    double expect = (8192 + e * e * 4 + 8192 + 3 * 8192) / (HBM * 0.4);
    assert_float_equal(f->r.layers[0].forward_compute_seconds, expect, expect * 1e-12);
    fx_free(f);
    /* matmul_efficiency=0.5 halves the einsum's FLOP rate (still
       compute-bound: 477 us against 55 us of traffic); the attention
       efficiency, 0.1 here, is not an einsum's; the add stays memory-bound. */
    const char *half[] = {"matmul_efficiency=0.5", "attention_efficiency=0.1",
                          "memory_efficiency=1", NULL};
    f = mm("per_device_batch_size=8192", half);
    expect = flops / (PEAK * 0.5) + 3 * act / HBM;
    assert_float_equal(f->r.layers[0].forward_compute_seconds, expect, expect * 1e-12);
    fx_free(f);
    /* memory_efficiency=0.5 doubles the add's time, not the einsum's. */
    const char *mem[] = {"matmul_efficiency=1", "attention_efficiency=1", "memory_efficiency=0.5",
                         NULL};
    f = mm("per_device_batch_size=8192", mem);
    expect = flops / PEAK + 3 * act / (HBM * 0.5);
    assert_float_equal(f->r.layers[0].forward_compute_seconds, expect, expect * 1e-12);
    fx_free(f);
}

/* A causal flash kernel: x [b,s,h,d] -> k = 2x, v = 2x (scales) -> flash
   (causal) -> o, lse -> y = x + o. b=1, s=t=4096, h=1, d=128: x, k, v, o, y
   1 MiB each (524288 bf16 elements), lse 4096 fp32 16 KiB.
   Model FLOPs: c = 2 b h s t d = 4,294,967,296; the kernel's 2 x 2 b h s t
   d forward and 4 contractions backward, halved for causal: c forward, 2c
   backward. Its backward executes 5/4 of them (QK^T again): 2.5c.
   attention_efficiency 0.5: forward c / (PEAK x 0.5) = 7.4 us, above its
   4,210,688 B (x, k, v, o, lse) at HBM (1.1 us); backward 2.5c / (PEAK x
   0.5) = 18.6 us, above 8 MiB + 16 KiB (dx, dk, dv, do; x, k, v, o, lse
   read) = 2.3 us. The scales move 2 MiB forward (x, k) and backward (dx,
   dk); the add 3 MiB each way. */
static void test_flash_causal(void **state) {
    (void)state;
    static const char *const graph =
        "{\"format\":\"remat-graph/1\",\"name\":\"attn\",\"dims\":{"
        "\"b\":{\"from\":\"per_device_batch_size\"},\"s\":{\"from\":\"max_target_length\"},"
        "\"h\":{\"from\":\"base_num_query_heads\"},\"d\":{\"from\":\"head_dim\"}},"
        "\"layer\":{\"inputs\":[\"x\"],\"outputs\":[\"y\"],\"tensors\":{"
        "\"x\":{\"shape\":[\"b\",\"s\",\"h\",\"d\"],\"dtype\":\"act\"},"
        "\"k\":{\"shape\":[\"b\",\"s\",\"h\",\"d\"],\"dtype\":\"act\"},"
        "\"v\":{\"shape\":[\"b\",\"s\",\"h\",\"d\"],\"dtype\":\"act\"},"
        "\"o\":{\"shape\":[\"b\",\"s\",\"h\",\"d\"],\"dtype\":\"act\"},"
        "\"lse\":{\"shape\":[\"b\",\"h\",\"s\"],\"dtype\":\"fp32\"},"
        "\"y\":{\"shape\":[\"b\",\"s\",\"h\",\"d\"],\"dtype\":\"act\"}},\"ops\":["
        "{\"name\":\"kk\",\"op\":\"scale\",\"value\":2,\"in\":[\"x\"],\"out\":[\"k\"]},"
        "{\"name\":\"vv\",\"op\":\"scale\",\"value\":2,\"in\":[\"x\"],\"out\":[\"v\"]},"
        "{\"name\":\"fa\",\"op\":\"flash_attention\",\"causal\":true,\"in\":[\"x\",\"k\",\"v\"],"
        "\"out\":[\"o\",\"lse\"]},"
        "{\"name\":\"res\",\"op\":\"add\",\"in\":[\"x\",\"o\"],\"out\":[\"y\"]}]}}";
    const char *args[] = {"model_name=default",        "per_device_batch_size=1",
                          "max_target_length=4096",    "base_num_query_heads=1",
                          "base_num_kv_heads=1",       "head_dim=128",
                          "base_num_decoder_layers=1",
                          "attention_efficiency=0.5",  "matmul_efficiency=1",
                          "memory_efficiency=1",       NULL};
    fx_run_t *f = fx_analyze_ok(graph, args);
    const remat_layer_row_t *row = &f->r.layers[0];
    const double c = 2.0 * 4096 * 4096 * 128, n = 524288, mib = 1048576;
    assert_int_equal(row->forward_flops, (uint64_t)(c + 3 * n));
    assert_int_equal(row->backward_flops, (uint64_t)(2 * c + 2 * n));
    const double fa_fwd = c / (PEAK * 0.5), fa_bwd = 2.5 * c / (PEAK * 0.5);
    assert_true(fa_fwd > (4 * mib + 16384) / HBM && fa_bwd > (8 * mib + 16384) / HBM);
    double fwd = 2 * (2 * mib) / HBM + fa_fwd + 3 * mib / HBM;
    double bwd = 3 * mib / HBM + fa_bwd + 2 * (2 * mib) / HBM;
    assert_float_equal(row->forward_compute_seconds, fwd, fwd * 1e-12);
    assert_float_equal(row->backward_compute_seconds, bwd, bwd * 1e-12);
    /* full keeps x: k, v, o and lse are rebuilt by re-running kk, vv, fa */
    double rec = 2 * (2 * mib) / HBM + fa_fwd;
    assert_float_equal(row->recompute_seconds, rec, rec * 1e-12);
    fx_free(f);
}

/* An op whose outputs XLA fuses into their readers moves no bytes of its
   own: only its FLOPs take time (silu: 4 x 16 = 64 forward, 6 x 16 = 96
   backward, at the bf16 peak), so no op runs faster than its FLOPs. The
   gated layer (fixtures.c), b=2, e=4, m=8: s = silu(g) is fused
   into the mul. Forward bytes: gp x 16 + w0 128 + g 32 = 176; up 176;
   act nothing; gate s 32 + u 32 + p 32 = 96; down p 32 + w2 128 + o 16 =
   176; res 48: 672, all memory-bound. Backward: gp w0 128 + dw0 (fp32) 128
   + dx 16 + dg 32 + x 16 = 320; up 320; act nothing; gate ds, du, dp, s, u
   160; down 128 + 128 + dp 32 + do 16 + p 32 = 336; res 48: 1184. full
   re-runs gp, up, act, gate: 448 bytes and act's 64 FLOPs. */
static void test_fused_ops_move_no_bytes(void **state) {
    (void)state;
    const char *args[] = {"model_name=default", "per_device_batch_size=2", "base_emb_dim=4",
                          "base_mlp_dim=8", "base_num_decoder_layers=1", EXACT, NULL};
    fx_run_t *f = fx_analyze_ok(fx_gated_graph, args);
    const remat_layer_row_t *row = &f->r.layers[0];
    const double fwd = 672 / HBM + 64 / PEAK, bwd = 1184 / HBM + 96 / PEAK;
    const double rec = 448 / HBM + 64 / PEAK;
    assert_float_equal(row->forward_compute_seconds, fwd, fwd * 1e-12);
    assert_float_equal(row->backward_compute_seconds, bwd, bwd * 1e-12);
    assert_float_equal(row->recompute_seconds, rec, rec * 1e-12);
    /* its FLOPs still count: silu 4 x 16 of the layer's forward */
    assert_int_equal(row->forward_flops, 128 + 128 + 64 + 16 + 128 + 8);
    fx_free(f);
}

/* FSDP over 2 devices (ICI 6e11 B/s a device): each holds half of the
   4096 x 4096 weight (its first dim is "embed", sharded over fsdp) and half
   of the batch. The weight is gathered in the compute dtype (bf16,
   32 MiB) for forward and backward, (2-1)/2 of it through each device's
   ICI: 16,777,216 B, 27.96 us; its bf16 gradient (32 MiB) is
   reduce-scattered likewise. One sequence per device: the forward compute
   (x 8 KiB + gathered w 32 MiB + h 8 KiB, memory-bound, plus the add) is
   9.1 us, so the gather sets the forward and the gather plus the scatter
   the backward (its compute: w 32 MiB + dw fp32 64 MiB + dx, dh, x 24 KiB,
   27.3 us; the add 24 KiB); what they add beyond compute is exposed
   collective time. */
static void test_fsdp_collectives(void **state) {
    (void)state;
    const char *args[] = {"model_name=default",  "per_device_batch_size=1", "base_emb_dim=4096",
                          "base_num_decoder_layers=1", "num_devices=2", EXACT, NULL};
    fx_run_t *f = fx_analyze_ok(mm_graph, args);
    const remat_layer_row_t *row = &f->r.layers[0];
    const double half = 4096.0 * 4096 * 2 / 2, ag = half / ICI;
    assert_float_equal(row->allgather_seconds, ag, ag * 1e-12);
    assert_float_equal(row->reduce_scatter_seconds, ag, ag * 1e-12);
    double fc = (8192 + 4096.0 * 4096 * 2 + 8192) / HBM + 3 * 8192 / HBM;
    assert_float_equal(row->forward_compute_seconds, fc, fc * 1e-12);
    double bc_expect = (4096.0 * 4096 * 2 + 4096.0 * 4096 * 4 + 3 * 8192) / HBM + 3 * 8192 / HBM;
    assert_float_equal(row->backward_compute_seconds, bc_expect, bc_expect * 1e-12);
    assert_float_equal(row->forward_seconds, ag, ag * 1e-12);
    assert_float_equal(row->backward_seconds, 2 * ag, ag * 1e-12);
    double bc = row->backward_compute_seconds + row->recompute_seconds;
    assert_true(bc < 2 * ag);
    double exposed = (ag - fc) + (2 * ag - bc);
    assert_float_equal(f->r.exposed_collective_seconds, exposed, exposed * 1e-12);
    /* no head: the step is the layer's forward and backward */
    assert_float_equal(f->r.step_seconds, 3 * ag, ag * 1e-12);
    fx_free(f);
}

/* Tensor parallelism's activation collectives (time-model.md,
   "Activation collectives"): y = x + (x @ w1) @ w2 with x [b,e] on
   activation_embed, w1 [e,m] and w2 [m,e] on embed and mlp, h [b,m] on
   activation_mlp. On 2 devices of ici_tensor_parallelism, e = 4096, m =
   16384, per_device_batch_size=4 (b = 8: the batch is not sharded over
   tensor): x is held [8,2048], h [8,8192], w1 [4096,8192], w2 [8192,4096].
   mm1 gathers x to [8,4096]: each device sends the 8 x 2048 bf16 it holds,
   32768 B. mm2 contracts m held at 8192 of 16384: two partial sums of
   [8,4096] bf16 (65536 B), reduce-scattered: each device sends half,
   32768 B. Forward the layer waits for both: 65536 B / ICI. Backward
   under `full`, mm1 re-runs and gathers x again (32768 B), and mm2's
   output gradient is gathered (32768 B); mm1's input-gradient scatter
   runs beside its two contractions (its fp32 weight alone takes 36 us at
   HBM, the scatter 55 ns at ICI). Under `minimal` h is kept: nothing
   re-runs, and the backward waits only for the output gradient's gather
   (mm1's regather of x runs beside its contractions). With no FSDP the
   weights are not gathered: the waits are the exposed collectives. */
static const char *const tp_graph =
    "{\"format\":\"remat-graph/1\",\"name\":\"tp\",\"dims\":{"
    "\"b\":{\"from\":\"per_device_batch_size\",\"axis\":\"activation_batch\"},"
    "\"e\":{\"from\":\"base_emb_dim\",\"axis\":\"activation_embed\",\"weight_axis\":\"embed\"},"
    "\"m\":{\"from\":\"base_mlp_dim\",\"axis\":\"activation_mlp\",\"weight_axis\":\"mlp\"}},"
    "\"layer\":{\"inputs\":[\"x\"],\"outputs\":[\"y\"],\"tensors\":{"
    "\"x\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"},"
    "\"w1\":{\"shape\":[\"e\",\"m\"],\"dtype\":\"weight\",\"param\":true},"
    "\"w2\":{\"shape\":[\"m\",\"e\"],\"dtype\":\"weight\",\"param\":true},"
    "\"h\":{\"shape\":[\"b\",\"m\"],\"dtype\":\"act\",\"checkpoint\":\"mlpwi\"},"
    "\"o\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"},"
    "\"y\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"}},\"ops\":["
    "{\"name\":\"mm1\",\"op\":\"einsum\",\"spec\":\"be,em->bm\",\"in\":[\"x\",\"w1\"],\"out\":[\"h\"]},"
    "{\"name\":\"mm2\",\"op\":\"einsum\",\"spec\":\"bm,me->be\",\"in\":[\"h\",\"w2\"],\"out\":[\"o\"]},"
    "{\"name\":\"res\",\"op\":\"add\",\"in\":[\"x\",\"o\"],\"out\":[\"y\"]}]}}";

static void test_tensor_parallel_collectives(void **state) {
    (void)state;
    const char *base[] = {"model_name=default",  "per_device_batch_size=4", "base_emb_dim=4096",
                          "base_mlp_dim=16384", "base_num_decoder_layers=1", "num_devices=2",
                          "ici_fsdp_parallelism=1", "ici_tensor_parallelism=2", EXACT, NULL};
    const char *full[] = {"remat_policy=full", NULL}, *minimal[] = {"remat_policy=minimal", NULL};
    const double unit = 32768 / ICI;
    fx_run_t *f = fx_analyze_with(tp_graph, base, full);
    const remat_layer_row_t *row = &f->r.layers[0];
    assert_int_equal(f->r.profiles[0].tensors[0].shape[1], 2048);
    assert_float_equal(row->act_collective_forward_seconds, 2 * unit, unit * 1e-12);
    assert_float_equal(row->act_collective_backward_seconds, 2 * unit, unit * 1e-12);
    assert_true(row->allgather_seconds == 0 && row->reduce_scatter_seconds == 0);
    double fwd = row->forward_compute_seconds + 2 * unit;
    assert_float_equal(row->forward_seconds, fwd, fwd * 1e-12);
    double bwd = row->backward_compute_seconds + row->recompute_seconds + 2 * unit;
    assert_float_equal(row->backward_seconds, bwd, bwd * 1e-12);
    assert_float_equal(f->r.exposed_collective_seconds, 4 * unit, unit * 1e-12);
    assert_float_equal(f->r.step_seconds, fwd + bwd, bwd * 1e-12);
    fx_free(f);
    f = fx_analyze_with(tp_graph, base, minimal);
    row = &f->r.layers[0];
    assert_true(f->r.recompute_flops == 0);
    assert_float_equal(row->act_collective_forward_seconds, 2 * unit, unit * 1e-12);
    assert_float_equal(row->act_collective_backward_seconds, unit, unit * 1e-12);
    assert_float_equal(f->r.exposed_collective_seconds, 3 * unit, unit * 1e-12);
    fx_free(f);
    /* FSDP alone shards the batch, which no einsum here contracts: no
       activation collective (the weights' gathers are their own terms) */
    const char *fsdp[] = {"ici_tensor_parallelism=1", "ici_fsdp_parallelism=2", NULL};
    f = fx_analyze_with(tp_graph, base, fsdp);
    row = &f->r.layers[0];
    assert_true(row->act_collective_forward_seconds == 0 &&
                row->act_collective_backward_seconds == 0 && row->allgather_seconds > 0);
    fx_free(f);
}

/* The same layer's whole-size buffers of those collectives, in HBM while
   their op runs (memory-model.md, "Activations gathered or summed
   whole"): mm1 holds x gathered, [8,4096] bf16 = 65536 B, beside its
   output h [8,8192] (131072 B); mm2 holds its partial sums whole, 65536
   B, beside h and its output o [8,2048] (32768 B). The forward's peak
   above the layer's input is mm2's: 131072 + 32768 + 65536 = 229376 B
   (163840 B without the partial sums). */
static void test_tensor_parallel_buffers(void **state) {
    (void)state;
    const char *base[] = {"model_name=default",  "per_device_batch_size=4", "base_emb_dim=4096",
                          "base_mlp_dim=16384", "base_num_decoder_layers=1", "num_devices=2",
                          "ici_fsdp_parallelism=1", "ici_tensor_parallelism=2", EXACT, NULL};
    const char *full[] = {"remat_policy=full", NULL};
    fx_run_t *f = fx_analyze_with(tp_graph, base, full);
    assert_int_equal(f->r.profiles[0].fwd_peak_rel, 131072 + 32768 + 65536);
    fx_free(f);
}

/* Parameters in host RAM come over the host link for each pass: 64 MiB at
   1e9 B/s is 67.1 ms, which sets both passes of this layer. HFU is the
   step's FLOPs at the per-device bf16 peak over the step: compute_seconds
   / step_seconds, with forward 2*1*4096*4096 + 4096 (the add) and backward
   twice the matmul. */
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

/* Under fp8 quantization weight einsums run at the fp8 peak (2.307e15 a
   device), and MFU, HFU and compute_seconds are measured against it. The mm
   layer at batch 8192 (F = 2*8192*4096*4096): mm forward F / PEAK8 = 119
   us (its 192 MiB at HBM: 55 us), backward 2F / PEAK8 = 238 us (320 MiB:
   91 us); the add 3 x 64 MiB each way. Nothing is re-run (full keeps x, the
   einsum's only residual). */
static void test_fp8_peak(void **state) {
    (void)state;
    const char *fp8[] = {"quantization=fp8", EXACT, NULL};
    fx_run_t *f = mm("per_device_batch_size=8192", fp8);
    const double e = 4096, F = 2 * 8192 * e * e, act = 8192 * e * 2;
    assert_true(F / PEAK8 > 3 * act / HBM && 2 * F / PEAK8 > 5 * act / HBM);
    double step = 3 * F / PEAK8 + 6 * act / HBM;
    assert_float_equal(f->r.step_seconds, step, step * 1e-12);
    double model = 3 * F + 8192 * e;
    assert_int_equal(f->r.model_flops, (uint64_t)model);
    assert_int_equal(f->r.recompute_flops, 0);
    assert_float_equal(f->r.compute_seconds, model / PEAK8, model / PEAK8 * 1e-12);
    assert_float_equal(f->r.mfu, model / (step * PEAK8), 1e-12);
    assert_float_equal(f->r.hfu, f->r.mfu, 1e-15);
    fx_free(f);
}

/* The mini layer of test_sim.c under custom mlpwi=offload: 32 bytes of h go
   to host and back each layer. Its forward moves, by op: fc1 x 16 + w1 128 +
   h 32; silu h 32 + a 32; fc2 a 32 + w2 128 + o 16; add x 16 + o 16 + y 16:
   464 bytes, all memory-bound: 464 / 3.69e12 = 125.7 ps. */
static fx_run_t *offload(const char *bw) {
    const char *args[] = {"model_name=default", "per_device_batch_size=2", "base_emb_dim=4",
                          "base_mlp_dim=8", "base_num_decoder_layers=3", "remat_policy=custom",
                          "mlpwi=offload", bw, EXACT, NULL};
    fx_run_t *f = fx_analyze_ok(fx_mini_graph, args);
    return f;
}

static void test_transfers_hide_or_not(void **state) {
    (void)state;
    const double fwd = 464 / HBM;
    /* 1e12 B/s: 32 B in 32 ps, inside the 125.7 ps of forward: hidden. */
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

/* The chunked loss's time: the head ops after the layers run once per
   chunk, so their bytes (bound per chunk) move num_vocab_tiling times, and
   the chunk's forward runs twice (forward, then again in backward).
   The headed graph (fixtures.c) on one device, b=2, e=4, v=64, all
   memory-bound (bytes moved, forward / backward):
     layer: fc 96 / 176 (w 64, dw 64, dx, do, x), res 48 / 48
     emb: table 1024 + tokens 8 + h0 16 = 1048 / table 1024 + dtable 1024 +
       dh0 16 + tokens 8 = 2072
     T=1: lg wl 1024 + hL 16 + logits 256 = 1296 / 1024 + 1024 + dhL 16 +
            dlogits 256 + hL 16 = 2336
          ce logits 256 + targets 8 + loss 4 + lse 8 = 276 / dlogits 256 +
            dloss 4 + logits 256 + targets 8 + lse 8 = 532
          step 368 + 1048 + 2072 + 1296 + 2336 + 276 + 532 = 7928 B
     T=2 (logits 128, lse 4 a chunk): lg 2 x 1168 forward, twice, and
          2 x 2208; ce 2 x 144 twice and 2 x 272:
          step 368 + 3120 + 4672 + 4416 + 576 + 544 = 13696 B. */
static void test_vocab_tiling_time(void **state) {
    (void)state;
    const char *base[] = {"model_name=default",        "per_device_batch_size=2",
                          "base_emb_dim=4",            "vocab_size=64",
                          "base_num_decoder_layers=1", EXACT,
                          NULL};
    fx_run_t *f = fx_analyze_ok(fx_head_graph, base);
    assert_float_equal(f->r.step_seconds, 7928 / HBM, 7928 / HBM * 1e-12);
    fx_free(f);
    const char *two[] = {"num_vocab_tiling=2", NULL};
    f = fx_analyze_with(fx_head_graph, base, two);
    assert_float_equal(f->r.step_seconds, 13696 / HBM, 13696 / HBM * 1e-12);
    /* the re-run's FLOPs are recompute: lg 2*2*4*64 = 1024, ce 4*128 */
    assert_int_equal(f->r.recompute_flops, 1024 + 512);
    double hw = (double)(f->r.model_flops + 1536);
    assert_float_equal(f->r.compute_seconds, hw / PEAK, hw / PEAK * 1e-12);
    fx_free(f);
}

/* Pipeline (MaxText's circular one): 4 micro-batches through 2 stages of
   2 layers, one layer an iteration (R = 2 repeats): 4 x 2 + 1 iterations of
   one layer, 4.5 slots of a stage's 2 layers; the bubble is 1 of the 9
   iterations (base.yml's (S - 1) / (M R + S - 1)). */
static void test_pipeline_bubble(void **state) {
    (void)state;
    const char *args[] = {"model_name=default",        "per_device_batch_size=2",
                          "base_emb_dim=4",            "base_mlp_dim=8",
                          "base_num_decoder_layers=4", "num_devices=2",
                          "ici_pipeline_parallelism=2", "num_pipeline_microbatches=4",
                          NULL};
    fx_run_t *f = fx_analyze_ok(fx_mini_graph, args);
    assert_float_equal(f->r.bubble_fraction, 1.0 / 9.0, 1e-15);
    const remat_layer_row_t *l0 = &f->r.layers[0];
    double slot = 2 * (l0->forward_seconds + l0->backward_seconds);
    assert_float_equal(f->r.step_seconds, 4.5 * slot, slot * 1e-9);
    fx_free(f);
}

/* A pipeline moves work, it adds none: on 2 devices, 2 stages of 2 layers
   and 4 micro-batches do per device the FLOPs that fsdp=2 over the same 4
   layers does (each stage runs half the layers on the whole batch, the
   head runs once on every device over its half of the batch), and the
   head's bytes match too (its batch is the same per device). The step:
   4 + 1/2 slots of a stage's 2 one-sequence layers, then the head once
   over its 2 sequences; with 2 micro-batches of 2 sequences, 2 + 1/2
   slots and the same head: the two steps less their layers' slots are
   equal (the head's time, run once either way). */
static void test_pipeline_moves_work(void **state) {
    (void)state;
    const char *base[] = {"model_name=default", "per_device_batch_size=2", "base_emb_dim=4",
                          "vocab_size=64",      "base_num_decoder_layers=4", "num_devices=2",
                          NULL};
    const char *pipe[] = {"ici_pipeline_parallelism=2", "num_pipeline_microbatches=4", NULL};
    fx_run_t *flat = fx_analyze_with(fx_head_graph, base, NULL);
    fx_run_t *pp = fx_analyze_with(fx_head_graph, base, pipe);
    assert_int_equal(pp->r.nstages, 2);
    assert_int_equal(pp->r.forward_flops, flat->r.forward_flops);
    assert_int_equal(pp->r.backward_flops, flat->r.backward_flops);
    assert_int_equal(pp->r.breakdown[REMAT_CAT_HEAD] > 0, flat->r.breakdown[REMAT_CAT_HEAD] > 0);
    const char *pipe2[] = {"ici_pipeline_parallelism=2", "num_pipeline_microbatches=2", NULL};
    fx_run_t *pp2 = fx_analyze_with(fx_head_graph, base, pipe2);
    const remat_layer_row_t *l4 = &pp->r.layers[0], *l2 = &pp2->r.layers[0];
    const double head4 = pp->r.step_seconds - 4.5 * 2 * (l4->forward_seconds + l4->backward_seconds);
    const double head2 = pp2->r.step_seconds - 2.5 * 2 * (l2->forward_seconds + l2->backward_seconds);
    assert_true(head2 > 0);
    assert_float_equal(head4, head2, head2 * 1e-9);
    fx_free(pp2);
    fx_free(pp);
    fx_free(flat);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_einsum_rooflines),
        cmocka_unit_test(test_efficiencies),
        cmocka_unit_test(test_flash_causal),
        cmocka_unit_test(test_fused_ops_move_no_bytes),
        cmocka_unit_test(test_transfers_hide_or_not),
        cmocka_unit_test(test_fsdp_collectives),
        cmocka_unit_test(test_tensor_parallel_collectives),
        cmocka_unit_test(test_tensor_parallel_buffers),
        cmocka_unit_test(test_param_fetch_and_hfu),
        cmocka_unit_test(test_fp8_peak),
        cmocka_unit_test(test_vocab_tiling_time),
        cmocka_unit_test(test_pipeline_bubble),
        cmocka_unit_test(test_pipeline_moves_work),
    };
    return cmocka_run_group_tests_name("time", tests, NULL, NULL);
}
