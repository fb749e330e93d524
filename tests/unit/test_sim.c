/* SPDX-License-Identifier: MIT */
/*
 * test_sim.c: the step simulation on layers small enough to follow by hand
 * (XLA's fusion, in-place backward, gradients from the backward on, the
 * reserve), then Megatron's published per-layer formula on the gpt3 graph.
 *
 * The mini layer (fixtures.c), with per_device_batch_size=2, base_emb_dim=4,
 * base_mlp_dim=8, 3 layers, bf16 activations, fp32 weights/grads, adamw, on
 * one tpu7x device, reserve_fraction=0 (so that bytes are exact), scan_layers=false
 * (no scan copy of the weights: test_scan_weights_by_hand works that):
 *   x [2,4] 16 B   h [2,8] 32 B   a [2,8] 32 B   o [2,4] 16 B   y [2,4] 16 B
 *   w1 [4,8], w2 [8,4]: 64 params a layer, 192 in all
 *   static: params 192*4 = 768, adamw 2*192*4 = 1536 -> 2304; the weight
 *   gradients (192*4 = 768) exist from the backward on.
 *   backward reads: x (fc1), h (silu), a (fc2); nothing reads o (add).
 *   Nothing fuses: a (silu's output) is read by an einsum, y is the output.
 */
#include "fixtures.h"

#include <stdio.h>
#include <string.h>

#include "remat/data/builtin.h"
#include "sim/sim_internal.h"

static const char *const mini_base[] = {"model_name=default",      "per_device_batch_size=2",
                                        "base_emb_dim=4",          "base_mlp_dim=8",
                                        "base_num_decoder_layers=3", "reserve_fraction=0", "scan_layers=false",
                                        NULL};

static fx_run_t *mini(const char *policy, const char *extra1, const char *extra2) {
    const char *extra[] = {policy, extra1, extra2, NULL};
    if (!extra1) {
        extra[1] = extra2;
        extra[2] = NULL;
    }
    return fx_analyze_with(fx_mini_graph, mini_base, extra);
}

static void test_static_memory(void **state) {
    (void)state;
    fx_run_t *f = mini("remat_policy=full", NULL, NULL);
    assert_int_equal(f->r.param_count, 192);
    assert_int_equal(f->r.param_bytes, 768);
    assert_int_equal(f->r.grad_bytes, 768);
    assert_int_equal(f->r.optimizer_bytes, 1536);
    assert_int_equal(f->r.accum_bytes, 0);
    /* The weight gradients are not static: the stage's static bytes are
       params + optimizer only, 768 + 1536. */
    assert_int_equal(f->r.stages[0].static_bytes, 2304);
    fx_free(f);
}

static void test_flops(void **state) {
    (void)state;
    fx_run_t *f = mini("remat_policy=full", NULL, NULL);
    /* fc1, fc2: 2*b*e*m = 2*2*4*8 = 128 forward; backward one contraction
       per operand needing a gradient (activation and weight): 256.
       silu on 16 elements: 4 each forward (64), 6 backward (96). add: 1 per
       output element (8), backward 0 (same shapes: the gradient passes
       through). Layer: forward 328, backward 608; 3 layers. */
    assert_int_equal(f->r.layers[0].forward_flops, 328);
    assert_int_equal(f->r.layers[0].backward_flops, 608);
    assert_int_equal(f->r.forward_flops, 3 * 328);
    assert_int_equal(f->r.model_flops, 3 * (328 + 608));
    /* full re-runs fc1 and silu to rebuild h and a: 128 + 64 a layer. */
    assert_int_equal(f->r.layers[0].recompute_flops, 192);
    assert_int_equal(f->r.recompute_flops, 576);
    assert_float_equal(f->r.recompute_share, 576.0 / (3 * (328 + 608)), 1e-15);
    fx_free(f);
}

/* full keeps x only.
   forward, relative to the layer's start (x already counted):
     fc1 +h 32 | silu +a 64, -h 32 | fc2 +o 48, -a 16 | add +y 32, -o 16
     peak 64 at silu; the layer leaves y (16).
   backward (x and dy in the baseline):
     recompute fc1 +h 32 | recompute silu +a 64
     add (elementwise): dx takes over dy's buffer (16 B, dying here), +do 80
     fc2: +da 112, -do 96, -a 64
     silu (elementwise): dh takes over da's buffer (32 B) 64, -h 32
     fc1: 32, -dh 0, -x -16
     peak 112 at fc2's backward.
   step: 2304 static + x0 16 = 2320; forward layers end at 2368; the last
   output's gradient replaces it and the weight gradients (768) arrive:
   3136; layer 2 backward peaks at 3136 + 112. */
static void test_full_by_hand(void **state) {
    (void)state;
    fx_run_t *f = mini("remat_policy=full", NULL, NULL);
    assert_int_equal(f->r.profiles[0].fwd_peak_rel, 64);
    assert_int_equal(f->r.profiles[0].bwd_peak_rel, 112);
    assert_int_equal(f->r.peak_bytes, 3248);
    /* tpu7x: the budget is XLA's per-device limit, 101,732,836,352 B as
       libtpu measures it (printed 94.75 GiB; the device has half the
       chip's 192 GiB); check keeps 5% free: x 0.95 = 96646194534.4,
       floored. */
    assert_int_equal(f->r.budget_bytes, 101732836352ull);
    assert_int_equal(f->r.usable_bytes, 96646194534ull);
    assert_true(f->r.fits && f->r.fits_margin);
    assert_int_equal(f->r.peak_at.where, REMAT_AT_LAYER);
    assert_int_equal(f->r.peak_at.layer, 2);
    assert_int_equal(f->r.peak_at.step, REMAT_STEP_BACKWARD);
    assert_string_equal(f->r.peak_at.op, "fc2");
    /* breakdown: x0..x2 saved (48); h and a rebuilt (64); gradients dy2 of
       the baseline (now dx) plus do and da: 16+16+32. */
    assert_int_equal(f->r.breakdown[REMAT_CAT_SAVED], 48);
    assert_int_equal(f->r.breakdown[REMAT_CAT_RECOMPUTE], 64);
    assert_int_equal(f->r.breakdown[REMAT_CAT_ACT_GRADS], 64);
    assert_int_equal(f->r.breakdown[REMAT_CAT_PARAMS], 768);
    assert_int_equal(f->r.breakdown[REMAT_CAT_OPTIMIZER], 1536);
    assert_int_equal(f->r.breakdown[REMAT_CAT_GRADS], 768);
    assert_int_equal(f->r.breakdown[REMAT_CAT_RESERVE], 0);
    assert_int_equal(f->r.layers[1].saved_device_bytes, 16);
    fx_free(f);
}

/* minimal keeps x and h (mlpwi); mlpwo is named but nothing reads it.
   forward: +h 32 (kept) | +a 64 | +o 80, -a 48 | +y 64, -o 48: peak 80.
   backward (x, h, dy): recompute silu +a 32 | add: dx takes dy, +do 48 |
   fc2 +da 80, -do 64, -a 32 | silu: dh takes da 32, -h 0 | fc1 -dh, -x.
   step: 2320 -> 2368 -> 2416 -> 2464 after forward; + 768 gradients at
   the turn: 3232; layer 2 backward peaks at 3232 + 80 = 3312. */
static void test_minimal_by_hand(void **state) {
    (void)state;
    fx_run_t *f = mini("remat_policy=minimal", NULL, NULL);
    const remat_graph_t *g = f->graph;
    const remat_profile_t *p = &f->r.profiles[0];
    assert_int_equal(p->fwd_peak_rel, 80);
    assert_int_equal(p->bwd_peak_rel, 80);
    assert_int_equal(f->r.peak_bytes, 3312);
    assert_int_equal(f->r.layers[0].saved_device_bytes, 48);
    assert_int_equal(f->r.layers[0].recompute_flops, 64);
    assert_int_equal(p->tensors[fx_tensor(g, "h")].fate, REMAT_FATE_DEVICE);
    assert_int_equal(p->tensors[fx_tensor(g, "a")].fate, REMAT_FATE_RECOMPUTE);
    assert_int_equal(p->tensors[fx_tensor(g, "o")].fate, REMAT_FATE_TRANSIENT);
    assert_true(p->tensors[fx_tensor(g, "o")].unused);
    assert_false(p->tensors[fx_tensor(g, "h")].unused);
    fx_free(f);
}

/* everything_saveable keeps x, h, a. forward peaks at the add: h+a+o+y = 96.
   backward: add: dx takes dy, +do 16 | fc2 +da 48, -do -a 0 | silu: dh
   takes da, -h ... peak 48.
   step: 2320 + 80 a layer -> 2560; + 768 at the turn: 3328; layer 2
   backward 3328 + 48 = 3376. */
static void test_everything_saveable_by_hand(void **state) {
    (void)state;
    fx_run_t *f = mini("remat_policy=everything_saveable", NULL, NULL);
    assert_int_equal(f->r.profiles[0].fwd_peak_rel, 96);
    assert_int_equal(f->r.profiles[0].bwd_peak_rel, 48);
    assert_int_equal(f->r.peak_bytes, 3376);
    assert_int_equal(f->r.layers[0].saved_device_bytes, 80);
    assert_int_equal(f->r.recompute_flops, 0);
    assert_false(f->r.none_as_full);
    fx_free(f);
    /* MaxText checkpoints the layer with no policy, scanned or not:
       none == full (the fixture scans nothing; scanned, the scan's copy
       of the weights comes too, test_scan_weights_by_hand). */
    f = mini("remat_policy=none", NULL, NULL);
    assert_true(f->r.none_as_full);
    assert_int_equal(f->r.peak_bytes, 3248);
    fx_free(f);
    f = mini("remat_policy=none", "scan_layers=true", NULL);
    assert_true(f->r.none_as_full);
    assert_int_equal(f->r.peak_bytes, 3248 + 384);
    fx_free(f);
}

/* custom mlpwi=offload: h is copied to host. forward: h stays until the end
   of the layer, then leaves HBM: +h 32 | +a 64 | +o 80, -a 48 | +y 64,
   -o 48 | end -h 16. backward fetches h first (32), rebuilds a (64), then
   as full: peak 112. Device peak equals full's 3248, below minimal's 3312. */
static void test_offload_by_hand(void **state) {
    (void)state;
    fx_run_t *f = mini("remat_policy=custom", "mlpwi=offload", NULL);
    assert_int_equal(f->r.profiles[0].fwd_peak_rel, 80);
    assert_int_equal(f->r.profiles[0].bwd_peak_rel, 112);
    assert_int_equal(f->r.peak_bytes, 3248);
    assert_int_equal(f->r.layers[0].offloaded_bytes, 32);
    assert_int_equal(f->r.layers[0].saved_device_bytes, 16);
    assert_int_equal(f->r.d2h_bytes, 96);
    assert_int_equal(f->r.h2d_bytes, 96);
    /* tpu7x: a host has 4 chips of 2 devices: 8 devices hold 8 x 96 bytes. */
    assert_int_equal(f->r.host_bytes_per_host, 768);
    /* 32 B a layer each way at the assumed host link, per device: the
       chip's 3.2e10 B/s over its 2 devices, 1.6e10. */
    assert_true(f->r.host_link_assumed);
    assert_float_equal(f->r.d2h_seconds, 3 * 32 / 1.6e10, 1e-18);
    fx_free(f);
    /* Overriding the link bandwidth clears the assumption (the config's
       figure is per device already). */
    f = mini("remat_policy=custom", "mlpwi=offload", "host_link_bw=1e9");
    assert_false(f->r.host_link_assumed);
    assert_float_equal(f->r.d2h_seconds, 96 / 1e9, 1e-15);
    fx_free(f);
}

/* Offloading the layer input too: x leaves HBM after the layer's forward and
   is fetched back before its backward. */
static void test_offload_layer_input(void **state) {
    (void)state;
    fx_run_t *f = mini("remat_policy=custom", "decoder_layer_input=offload", NULL);
    assert_int_equal(f->r.layers[0].saved_device_bytes, 0);
    assert_int_equal(f->r.layers[0].offloaded_bytes, 16);
    fx_free(f);
}

/* A scan holds its layers' params in the compute dtype (static.c): the
   mini model's three layers hold 3 x (32 + 32) = 192 params, 384 bf16
   bytes, live from the first layer's forward to the last one's backward,
   on top of test_full_by_hand's step (whose fixture scans nothing):
   its peak (backward l2, fc2) 3248 becomes 3632. */
static void test_scan_weights_by_hand(void **state) {
    (void)state;
    fx_run_t *f = mini("remat_policy=full", "scan_layers=true", NULL);
    assert_int_equal(f->r.peak_bytes, 3248 + 384);
    assert_int_equal(f->r.breakdown[REMAT_CAT_SCAN_WEIGHTS], 384);
    assert_int_equal(f->r.peak_at.layer, 2);
    assert_string_equal(f->r.peak_at.op, "fc2");
    fx_free(f);
    f = mini("remat_policy=full", NULL, NULL);
    assert_int_equal(f->r.peak_bytes, 3248);
    assert_int_equal(f->r.breakdown[REMAT_CAT_SCAN_WEIGHTS], 0);
    fx_free(f);
}

/* Gradient accumulation repeats the micro-batch (MaxText's micro-batch is
   per_device_batch_size x devices, the global batch k of them) and adds an
   fp32 buffer. */
static void test_grad_accumulation(void **state) {
    (void)state;
    fx_run_t *f = mini("remat_policy=full", "gradient_accumulation_steps=2", NULL);
    assert_int_equal(f->r.accum_bytes, 192 * 4);
    assert_int_equal(f->r.layers[0].saved_device_bytes, 16); /* x of two sequences */
    /* two micro-batches of two sequences: twice test_flops's step */
    assert_int_equal(f->r.model_flops, 2 * 3 * (328 + 608));
    assert_int_equal(f->r.layers[0].forward_flops, 328); /* one micro-batch's */
    /* the accumulator is static: params 768 + adamw 1536 + accum 768 */
    assert_int_equal(f->r.stages[0].static_bytes, 768 + 1536 + 768);
    fx_free(f);
}

/* A policy that keeps mlpwi in HBM in layers @p range (JSON), remat
   elsewhere. */
static remat_policy_t *mlpwi_in(const char *range) {
    char text[160];
    snprintf(text, sizeof text,
             "{\"format\":\"remat-policy/1\",\"name\":\"ranged\","
             "\"layers\":[{\"range\":\"%s\",\"names\":{\"mlpwi\":\"device\"}}]}",
             range);
    remat_policy_t *p = NULL;
    remat_error_t err;
    remat_error_init(&err);
    assert_int_equal(remat_policy_load_string(text, "<t>", false, &p, &err), REMAT_OK);
    return p;
}

/* Layer ranges give layers their own plans (profiles). */
static void test_layer_ranges(void **state) {
    (void)state;
    remat_policy_t *p = mlpwi_in("1-2");
    remat_error_t err;
    remat_error_init(&err);
    fx_run_t *f = mini("remat_policy=full", NULL, NULL);
    assert_int_equal(remat_analyze(f->graph, &f->cfg, p, &f->hw, &f->r, &err), REMAT_OK);
    assert_int_equal(f->r.nprofiles, 2);
    assert_int_equal(f->r.layers[0].saved_device_bytes, 16);
    assert_int_equal(f->r.layers[1].saved_device_bytes, 48);
    assert_int_equal(f->r.layers[2].saved_device_bytes, 48);
    assert_int_equal(f->r.profiles[1].first, 1);
    assert_int_equal(f->r.profiles[1].nlayers, 2);
    remat_policy_free(p);
    fx_free(f);
}

/* The gated layer (fixtures.c) with b=2, e=4, m=8, one layer, reserve 0:
     x, o, y [2,4] 16 B; g, u, s, p [2,8] 32 B; w0, w1, w2 32 params each:
     params 96*4 = 384, adamw 768, grads 384.
   s = silu(g) is fusable: silu makes it, the mul reads it forward and the
   mul's backward reads it, and both fuse; it owns its buffer and is not the
   output. g (einsum), p (read by an einsum) and y (the output) are not.

   full keeps x: s is rebuilt, so it is never materialized, and g, the
   input silu computes it from, lives until s's last reader (the mul),
   forward, in the re-run and in backward; its gradient is fused too.
   forward: gp +g 32 | up +u 64 | act: nothing 64 | gate +p 96, -g -u 32 |
     down +o 48, -p 16 | res +y 32, -o 16: peak 96 at gate.
   backward (x, dy): re-run gp +g 32 | up +u 64 | act 64 | gate +p 96 |
     res: dx takes dy, +do 112 | down +dp 144, -do -p 96 |
     gate: ds fused (no buffer), du takes dp's buffer 96, -u 64 |
     act: dg takes g's buffer (its last backward reader) 64 |
     up: 64, -du 32 | gp: 32, -dg 0, -x -16: peak 144 at down.
   Materialized, s would add 32 to the re-run and to the backward peak
   (176).
   step: 1152 static + x 16 = 1168; forward 1168 + 96, leaves y: 1184;
   the turn: -y +dy +grads 384 = 1568; backward 1568 + 144 = 1712. */
static const char *const gated_base[] = {"model_name=default",        "per_device_batch_size=2",
                                         "base_emb_dim=4",            "base_mlp_dim=8",
                                         "base_num_decoder_layers=1", "reserve_fraction=0", "scan_layers=false",
                                         NULL};

static void test_fusion_by_hand(void **state) {
    (void)state;
    const char *full[] = {"remat_policy=full", NULL};
    fx_run_t *f = fx_analyze_with(fx_gated_graph, gated_base, full);
    const remat_profile_t *p = &f->r.profiles[0];
    assert_int_equal(p->tensors[fx_tensor(f->graph, "s")].fate, REMAT_FATE_RECOMPUTE);
    assert_int_equal(p->fwd_peak_rel, 96);
    assert_int_equal(p->bwd_peak_rel, 144);
    assert_int_equal(f->r.peak_bytes, 1712);
    assert_int_equal(f->r.peak_at.step, REMAT_STEP_BACKWARD);
    assert_string_equal(f->r.peak_at.op, "down");
    /* at the peak: re-run g, u, p (96); dx (was dy) 16, do 16, dp 32 */
    assert_int_equal(f->r.breakdown[REMAT_CAT_RECOMPUTE], 96);
    assert_int_equal(f->r.breakdown[REMAT_CAT_ACT_GRADS], 64);
    /* FLOPs are unchanged by fusion: gp, up 2*2*4*8 = 128 each, silu 4*16,
       mul 16, down 128, add 8 forward; full re-runs gp, up, act, gate. */
    assert_int_equal(f->r.layers[0].forward_flops, 128 + 128 + 64 + 16 + 128 + 8);
    assert_int_equal(f->r.layers[0].recompute_flops, 128 + 128 + 64 + 16);
    fx_free(f);
    /* Kept, a fusable tensor is materialized: everything_saveable keeps g,
       u, s, p, so forward holds g u s p o y = 160 at the add. */
    const char *all[] = {"remat_policy=everything_saveable", NULL};
    f = fx_analyze_with(fx_gated_graph, gated_base, all);
    assert_int_equal(f->r.profiles[0].tensors[fx_tensor(f->graph, "s")].fate, REMAT_FATE_DEVICE);
    assert_int_equal(f->r.profiles[0].fwd_peak_rel, 160);
    assert_int_equal(f->r.layers[0].saved_device_bytes, 16 + 4 * 32);
    fx_free(f);
}

/* In-place backward on the gated layer under everything_saveable: x,
   g, u, s, p kept (144 B), nothing re-run. An elementwise op's input
   gradient takes over a buffer of its size that dies at that op.
   backward (kept buffers and dy in the baseline):
     res: dx takes dy's buffer, +do 16
     down: +dp 48, -do -p 0 (peak 48)
     gate: ds takes dp's buffer (its output's gradient); du takes s's
       buffer (a residual whose last backward reader is the mul): 0; -u -32
     act: dg takes ds's buffer -32, -g -64
     up: -du -96 | gp: -dg -128, -x -144.
   Without the in-place rule the mul would hold dp, ds, du and its
   residuals s, u: 64 above the baseline.
   step: 1168 + 144 = 1312 after forward; the turn 1696; backward peak
   1696 + 48 = 1744 at down. */
static void test_inplace_backward_by_hand(void **state) {
    (void)state;
    const char *all[] = {"remat_policy=everything_saveable", NULL};
    fx_run_t *f = fx_analyze_with(fx_gated_graph, gated_base, all);
    assert_int_equal(f->r.profiles[0].bwd_peak_rel, 48);
    assert_int_equal(f->r.peak_bytes, 1744);
    assert_int_equal(f->r.peak_at.step, REMAT_STEP_BACKWARD);
    assert_string_equal(f->r.peak_at.op, "down");
    /* saved: x 16 + the layer's 128 kept + y 16 - y 16 (left at the turn);
       act_grads: dx 16 (in dy's buffer), do 16, dp 32 */
    assert_int_equal(f->r.breakdown[REMAT_CAT_SAVED], 144);
    assert_int_equal(f->r.breakdown[REMAT_CAT_ACT_GRADS], 64);
    assert_int_equal(f->r.breakdown[REMAT_CAT_GRADS], 384);
    fx_free(f);
}

/* The weight gradients are allocated when the backward begins, not before.
   A layer with a forward-only working set: fc: o = x @ w, res: y = x + o,
   and outer: z = x (x) o [b,e,e], which nothing reads (a statistic nobody
   differentiates): it runs forward, has no backward (so o and x are not
   its residuals), and is freed right after it is made. b=8, e=4, one layer, full, reserve 0:
     x, o, y 64 B; z 8*4*4*2 = 256 B; w 16 params: params 64, adamw 128,
     grads 64.
   forward: fc +o 64 | outer +z 320, -z 64 | res +y 128, -o 64: peak 320.
   backward: res: dx takes dy, +do 64 | fc: -do, -x: peak 64.
   step: 192 + x 64 = 256; forward 256 + 320 = 576 at outer; leaves y:
   320; the turn: -y +dy +grads 64 = 384; backward 384 + 64 = 448.
   The peak is the forward's 576, without gradients; were they static, it
   would be 640. */
static void test_grads_from_backward(void **state) {
    (void)state;
    static const char *const graph =
        "{\"format\":\"remat-graph/1\",\"name\":\"outer\","
        "\"dims\":{\"b\":{\"from\":\"per_device_batch_size\"},\"e\":{\"from\":\"base_emb_dim\"}},"
        "\"layer\":{\"inputs\":[\"x\"],\"outputs\":[\"y\"],\"tensors\":{"
        "\"x\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"},"
        "\"w\":{\"shape\":[\"e\",\"e\"],\"dtype\":\"weight\",\"param\":true},"
        "\"o\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"},"
        "\"z\":{\"shape\":[\"b\",\"e\",\"e\"],\"dtype\":\"act\"},"
        "\"y\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"}},\"ops\":["
        "{\"name\":\"fc\",\"op\":\"einsum\",\"spec\":\"be,ef->bf\",\"in\":[\"x\",\"w\"],\"out\":[\"o\"]},"
        "{\"name\":\"outer\",\"op\":\"einsum\",\"spec\":\"be,bf->bef\",\"in\":[\"x\",\"o\"],"
        "\"out\":[\"z\"]},"
        "{\"name\":\"res\",\"op\":\"add\",\"in\":[\"x\",\"o\"],\"out\":[\"y\"]}]}}";
    const char *args[] = {"model_name=default", "per_device_batch_size=8", "base_emb_dim=4",
                          "base_num_decoder_layers=1", "reserve_fraction=0", "scan_layers=false", NULL};
    fx_run_t *f = fx_analyze_ok(graph, args);
    assert_int_equal(f->r.profiles[0].fwd_peak_rel, 320);
    assert_int_equal(f->r.profiles[0].bwd_peak_rel, 64);
    assert_int_equal(f->r.stages[0].static_bytes, 192);
    assert_int_equal(f->r.peak_bytes, 576);
    assert_int_equal(f->r.peak_at.step, REMAT_STEP_FORWARD);
    assert_string_equal(f->r.peak_at.op, "outer");
    assert_int_equal(f->r.breakdown[REMAT_CAT_GRADS], 0);
    assert_int_equal(f->r.breakdown[REMAT_CAT_ACTIVATIONS], 320);
    assert_int_equal(f->r.grad_bytes, 64);
    fx_free(f);
}

/* The reserve: at every measurement of the step, floor(reserve_fraction x
   the transient bytes: all but params, optimizer, grads, grad_accum,
   reserve and in-flight residuals) is added. The mini layer under full
   (test_full_by_hand), the step's six measurements:
     forward l0: 2320 + 64, transient x0 16 + 64 = 80
     forward l1: 2336 + 64, transient 96;  forward l2: 2352 + 64, 112
     backward l2: 3136 + 112, transient saved 48 + dy 16 + 112 = 176
     backward l1: 3120 + 112, transient 32 + 16 + 112 = 160
     backward l0: 3104 + 112, transient 16 + 16 + 112 = 144
   tpu7x's profile: 0.00 (fitted to the compiled corpus), so the step is
   its liveness: backward l2, 3248. At reserve_fraction=0.01: backward
   l2: 3248 + floor(1.76) = 3249; l1: 3232 + 1; l0: 3216 + 1; forward l2:
   2416 + 1. */
static void test_reserve_fraction(void **state) {
    (void)state;
    const char *profile[] = {"model_name=default", "per_device_batch_size=2", "base_emb_dim=4", "scan_layers=false",
                             "base_mlp_dim=8", "base_num_decoder_layers=3", "remat_policy=full",
                             NULL};
    fx_run_t *f = fx_analyze_ok(fx_mini_graph, profile);
    assert_float_equal(f->hw.reserve_fraction, 0.0, 0);
    assert_int_equal(f->r.peak_bytes, 3248);
    assert_int_equal(f->r.breakdown[REMAT_CAT_RESERVE], 0);
    assert_int_equal(f->r.peak_at.layer, 2);
    assert_string_equal(f->r.peak_at.op, "fc2");
    fx_free(f);
    f = mini("remat_policy=full", "reserve_fraction=0.01", NULL);
    assert_int_equal(f->r.peak_bytes, 3249);
    assert_int_equal(f->r.breakdown[REMAT_CAT_RESERVE], 1);
    assert_int_equal(f->r.peak_at.layer, 2);
    fx_free(f);
    /* reserve_fraction=0.5: backward l2 3248 + 88 = 3336 (l1 3312, l0
       3288, forward l2 2416 + 56). */
    f = mini("remat_policy=full", "reserve_fraction=0.5", NULL);
    assert_int_equal(f->r.peak_bytes, 3336);
    assert_int_equal(f->r.breakdown[REMAT_CAT_RESERVE], 88);
    fx_free(f);
    /* hbm_reserve is static and not transient: 1000 more bytes at every
       moment, the fraction's 88 unchanged, both in the reserve row. */
    f = mini("remat_policy=full", "reserve_fraction=0.5", "hbm_reserve=1000");
    assert_int_equal(f->r.peak_bytes, 4336);
    assert_int_equal(f->r.breakdown[REMAT_CAT_RESERVE], 1088);
    fx_free(f);
}

/* Megatron (Korthikanti et al. 2022): a GPT layer with no checkpointing keeps
   sbh(34 + 5as/h) bytes; remat adds the two LayerNorms' fp32 mean and rstd,
   4 bytes x s x b each: 16sb. s=2048, b=1, h=12288, a=96:
   34sbh = 855,638,016; 5as^2b = 2,013,265,920; 16sb = 32,768.
   Megatron's layer is gpt3.dot_product.dropout (attention=dot_product with
   dropout on; the gpt3-175b preset turns dropout off). q, k and v are
   slices of the fused qkv, arrays of their own: 2sbh each, as the paper
   counts them; qkv itself is fused into the split (read by no backward). */
static void test_megatron_formula(void **state) {
    (void)state;
    const uint64_t s = 2048, b = 1, h = 12288, a = 96;
    const char *all[] = {"model_name=gpt3-175b", "per_device_batch_size=1",
                         "remat_policy=everything_saveable", "attention=dot_product",
                         "dropout_rate=0.1", "enable_dropout=true", NULL};
    fx_run_t *f = fx_analyze_ok(NULL, all);
    assert_int_equal(f->r.layers[0].saved_device_bytes,
                     s * b * h * 34 + 5 * a * s * s * b + 16 * s * b);
    assert_int_equal(f->r.layers[0].saved_device_bytes, 2868936704u);
    fx_free(f);
    const char *full[] = {"model_name=gpt3-175b", "per_device_batch_size=1", NULL};
    f = fx_analyze_ok(NULL, full);
    assert_int_equal(f->r.layers[95].saved_device_bytes, 2 * s * b * h);
    fx_free(f);
}

/* What an analyzer run and a fresh remat_analyze must agree on. */
static void assert_same_result(const remat_result_t *a, const remat_result_t *b, bool tables) {
    assert_int_equal(a->peak_bytes, b->peak_bytes);
    assert_memory_equal(a->breakdown, b->breakdown, sizeof a->breakdown);
    assert_int_equal(a->peak_at.step, b->peak_at.step);
    assert_int_equal(a->peak_at.where, b->peak_at.where);
    assert_int_equal(a->peak_at.layer, b->peak_at.layer);
    assert_int_equal(a->peak_at.stage, b->peak_at.stage);
    assert_ptr_equal(a->peak_at.op, b->peak_at.op);
    assert_int_equal(a->nstages, b->nstages);
    for (size_t k = 0; k < a->nstages; k++) {
        assert_int_equal(a->stages[k].peak_bytes, b->stages[k].peak_bytes);
        assert_int_equal(a->stages[k].inflight_bytes, b->stages[k].inflight_bytes);
    }
    assert_true(a->step_seconds == b->step_seconds);
    assert_true(a->mfu == b->mfu && a->hfu == b->hfu);
    assert_int_equal(a->recompute_flops, b->recompute_flops);
    assert_int_equal(a->d2h_bytes, b->d2h_bytes);
    assert_int_equal(a->host_bytes_per_host, b->host_bytes_per_host);
    assert_int_equal(remat_result_passes(a), remat_result_passes(b));
    assert_int_equal(a->nprofiles, b->nprofiles);
    if (tables) {
        assert_int_equal(a->nnames, b->nnames);
        assert_memory_equal(a->names, b->names, a->nnames * sizeof *a->names);
    }
}

/* One analyzer for the run @p args runs every built-in policy, in order
   and then in reverse, and each run equals a fresh analysis: nothing of
   one run leaks into the next, the head's forward that the analyzer plays
   once and copies after (step.c's memo) included. */
static void analyzer_reuse(const char *const *args) {
    fx_run_t *f = fx_analyze_ok(NULL, args);
    remat_analyzer_t *an = NULL;
    remat_error_t err;
    remat_error_init(&err);
    assert_int_equal(remat_analyzer_new(f->graph, &f->cfg, &f->hw, &an, &err), REMAT_OK);
    const size_t n = remat_builtin_count(REMAT_BUILTIN_POLICY);
    remat_result_t run, fresh;
    remat_result_init(&run);
    remat_result_init(&fresh);
    for (size_t k = 0; k < 2 * n; k++) {
        const char *name = remat_builtin_name(REMAT_BUILTIN_POLICY, k < n ? k : 2 * n - 1 - k);
        remat_policy_t *p = NULL;
        assert_int_equal(remat_policy_builtin(name, &p, &err), REMAT_OK);
        assert_int_equal(remat_analyzer_run(an, p, NULL, &run, &err), REMAT_OK);
        assert_int_equal(remat_analyze(f->graph, &f->cfg, p, &f->hw, &fresh, &err), REMAT_OK);
        assert_same_result(&run, &fresh, true);
        remat_policy_free(p);
    }
    remat_result_release(&run);
    remat_result_release(&fresh);
    remat_analyzer_free(an);
    fx_free(f);
}

/* A pipeline mesh, so that every stage is composed. */
static void test_analyzer_reuse(void **state) {
    (void)state;
    const char *args[] = {"model_name=llama3-8b", "topology=tpu7x-16",
                          "ici_tensor_parallelism=2", "ici_pipeline_parallelism=2",
                          "per_device_batch_size=2", NULL};
    analyzer_reuse(args);
}

/* A head of hundreds of ops before the layers (Qwen3-VL's frozen encoder):
   once over the budget, so that each run composes the stage several times
   (held and apart, the unrolled bound) from the memo, and once with the
   step's peak in the encoder (its first QK product), so that the memo's
   peak is the step's. */
static void test_analyzer_reuse_vision(void **state) {
    (void)state;
    const char *over[] = {"model_name=qwen3-vl-2b", "topology=v6e-8", "per_device_batch_size=8",
                          "image_token_share=0.5625", NULL};
    analyzer_reuse(over);
    const char *encoder[] = {"model_name=qwen3-vl-2b", "topology=v6e-8",
                             "base_num_decoder_layers=2", "max_target_length=1024",
                             "num_vocab_tiling=8", "per_device_batch_size=64", NULL};
    analyzer_reuse(encoder);
}

/* The peeled layers (step.c, peeled_from) stay inside the stage where its
   layers are not a whole number of remat units: Gemma 3's blocks of 6
   under qkv_proj_offloaded on one slice (XLA's relaid copy), at 2 layers
   (one block, the remainder), 8 (a block and a remainder) and the
   published 34. Each analyzes, and more layers hold more. */
static void test_peeled_remainder_block(void **state) {
    (void)state;
    const char *layers[] = {"base_num_decoder_layers=2", "base_num_decoder_layers=8",
                            "base_num_decoder_layers=34"};
    uint64_t prev = 0;
    for (size_t i = 0; i < 3; i++) {
        const char *args[] = {"model_name=gemma3-4b", "topology=v6e-8",
                              "remat_policy=qkv_proj_offloaded", "per_device_batch_size=8",
                              layers[i], NULL};
        fx_run_t *f = fx_analyze_ok(NULL, args);
        assert_int_equal(f->r.remat_unit, 6);
        assert_true(f->r.peak_bytes > prev);
        prev = f->r.peak_bytes;
        fx_free(f);
    }
}

/* The solver's shortcuts: a plan given for a uniform policy, and no tables,
   change nothing of the verdict and the times. */
static void test_analyzer_lite_plan(void **state) {
    (void)state;
    fx_run_t *f = mini("remat_policy=minimal", NULL, NULL);
    remat_analyzer_t *an = NULL;
    remat_error_t err;
    remat_error_init(&err);
    assert_int_equal(remat_analyzer_new(f->graph, &f->cfg, &f->hw, &an, &err), REMAT_OK);
    remat_plan_t plan;
    remat_plan_init(&plan);
    assert_int_equal(remat_plan_layer(f->graph, 0, f->policy, 0, &plan, &err), REMAT_OK);
    /* remat_plan_copy, the library's copy of a plan (the analysis copies
       into its result's memory instead): every array equal, twice, the
       second time into the copy's own arrays */
    remat_plan_t copy;
    remat_plan_init(&copy);
    for (int twice = 0; twice < 2; twice++) {
        remat_plan_copy(&copy, &plan);
        assert_true(remat_plan_equal(&copy, &plan));
        const size_t nt = plan.ntensors, no = plan.nops;
        assert_memory_equal(copy.unused, plan.unused, nt * sizeof *plan.unused);
        assert_memory_equal(copy.needed, plan.needed, (nt + no) * sizeof *plan.needed);
        assert_memory_equal(copy.recompute_op, plan.recompute_op, no * sizeof *plan.recompute_op);
    }
    remat_plan_release(&copy);
    const remat_run_opts_t opts = {.plan = &plan, .lite = true};
    remat_result_t r;
    remat_result_init(&r);
    assert_int_equal(remat_analyzer_run(an, f->policy, &opts, &r, &err), REMAT_OK);
    assert_same_result(&r, &f->r, false);
    assert_null(r.profiles[0].tensors);
    assert_int_equal(r.nnames, 0);
    remat_result_release(&r);
    remat_plan_release(&plan);
    remat_analyzer_free(an);
    fx_free(f);
}

/* A failed run leaves the result released. */
static void test_analyzer_failed_run(void **state) {
    (void)state;
    remat_policy_t *p = mlpwi_in("2-3"); /* the mini model has layers 0-2 */
    remat_error_t err;
    remat_error_init(&err);
    fx_run_t *f = mini("remat_policy=full", NULL, NULL);
    remat_analyzer_t *an = NULL;
    assert_int_equal(remat_analyzer_new(f->graph, &f->cfg, &f->hw, &an, &err), REMAT_OK);
    assert_int_equal(remat_analyzer_run(an, p, NULL, &f->r, &err), REMAT_E_POLICY);
    assert_null(f->r.layers);
    assert_null(f->r.profiles);
    assert_int_equal(f->r.peak_bytes, 0);
    remat_analyzer_free(an);
    remat_policy_free(p);
    fx_free(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_static_memory),     cmocka_unit_test(test_flops),
        cmocka_unit_test(test_full_by_hand),      cmocka_unit_test(test_minimal_by_hand),
        cmocka_unit_test(test_everything_saveable_by_hand),      cmocka_unit_test(test_offload_by_hand),
        cmocka_unit_test(test_offload_layer_input), cmocka_unit_test(test_grad_accumulation),
        cmocka_unit_test(test_layer_ranges),      cmocka_unit_test(test_fusion_by_hand),
        cmocka_unit_test(test_inplace_backward_by_hand),
        cmocka_unit_test(test_grads_from_backward), cmocka_unit_test(test_scan_weights_by_hand), cmocka_unit_test(test_reserve_fraction),
        cmocka_unit_test(test_megatron_formula),
        cmocka_unit_test(test_analyzer_reuse), cmocka_unit_test(test_analyzer_reuse_vision),
        cmocka_unit_test(test_peeled_remainder_block),    cmocka_unit_test(test_analyzer_lite_plan),
        cmocka_unit_test(test_analyzer_failed_run),
    };
    return cmocka_run_group_tests_name("sim", tests, NULL, NULL);
}
