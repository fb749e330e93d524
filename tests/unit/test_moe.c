/* SPDX-License-Identifier: MIT */
/*
 * test_moe.c: mixed layer stacks and the MoE block, on layers small enough
 * to follow by hand, then the built-in MoE presets against their published
 * parameter counts and JAX's residual rule.
 *
 * The tiny MoE layer (per_device_batch_size=2, base_emb_dim=4, num_experts=4,
 * num_experts_per_tok=2, base_moe_mlp_dim=8, bf16 activations, fp32 weights,
 * one device: the buffer factor f is 1):
 *   x [b,e] 16 B; router logits [b,x] 16 B; top-k weights [b,k] 8 B and
 *   indices [b,k] int32 16 B; tokens [b,k,f,e] 32 B; wi [b,k,f,m] 64 B;
 *   wo [b,k,f,e] 32 B; unpermuted [b,k,e] 32 B; combined [b,e] 16 B.
 *   params: gate [e,x] 16, wi [x,e,m] 128, wo [x,m,e] 128: 272 a layer.
 *   FLOPs forward: gate 2*2*4*4 = 64; top_k 8 (one per score); softmax 5*4
 *   = 20; each grouped matmul 2*b*k*e*m = 256 (the experts and the buffer
 *   factor are ragged: a row meets one expert once), not 2*b*k*f*e*x*m =
 *   1024; combine 2*2*2*4 = 32; residual add 8: 644 a layer.
 */
#include "remat/input/graph_file.h"
#include "fixtures.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "remat/solve/solve.h"
#include "sim/sim_rooms.h"
#include "sim/sim_internal.h"

#define TINY_DIMS                                                                              \
    "\"dims\":{\"b\":{\"from\":\"per_device_batch_size\",\"axis\":\"activation_batch\"},"     \
    "\"e\":{\"from\":\"base_emb_dim\"},\"m\":{\"from\":\"base_moe_mlp_dim\","                 \
    "\"axis\":\"activation_mlp_moe\"},\"d\":{\"from\":\"base_mlp_dim\"},"                     \
    "\"x\":{\"from\":\"num_experts\"},\"k\":{\"from\":\"num_experts_per_tok\"},"              \
    "\"f\":{\"from\":\"moe_buffer_factor\"}}"

#define MOE_BLOCK                                                                              \
    "{\"inputs\":[\"x\"],\"outputs\":[\"y\"],\"tensors\":{"                                    \
    "\"x\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\",\"checkpoint\":\"decoder_layer_input\"}," \
    "\"wg\":{\"shape\":[\"e\",\"x\"],\"dtype\":\"weight\",\"param\":true,"                     \
    "\"axes\":[\"embed\",null]},"                                                              \
    "\"logits\":{\"shape\":[\"b\",\"x\"],\"dtype\":\"act\"},"                                  \
    "\"tw_raw\":{\"shape\":[\"b\",\"k\"],\"dtype\":\"act\"},"                                  \
    "\"ti\":{\"shape\":[\"b\",\"k\"],\"dtype\":\"int32\"},"                                    \
    "\"tw\":{\"shape\":[\"b\",\"k\"],\"dtype\":\"act\"},"                                      \
    "\"t\":{\"shape\":[\"b\",\"k\",\"f\",\"e\"],\"dtype\":\"act\","                            \
    "\"axes\":[\"activation_batch_moe\",null,null,null]},"                                     \
    "\"w0\":{\"shape\":[\"x\",\"e\",\"m\"],\"dtype\":\"weight\",\"param\":true,"               \
    "\"axes\":[\"exp\",\"embed_moe\",\"mlp_moe\"]},"                                           \
    "\"g\":{\"shape\":[\"b\",\"k\",\"f\",\"m\"],\"dtype\":\"act\","                            \
    "\"checkpoint\":[\"mlpwi_0\",\"moe_mlpwi_0\"],"                                            \
    "\"axes\":[\"activation_batch_moe\",null,null,\"activation_mlp_moe\"]},"                   \
    "\"w2\":{\"shape\":[\"x\",\"m\",\"e\"],\"dtype\":\"weight\",\"param\":true,"               \
    "\"axes\":[\"exp\",\"mlp_moe\",\"embed_moe\"]},"                                           \
    "\"o\":{\"shape\":[\"b\",\"k\",\"f\",\"e\"],\"dtype\":\"act\","                            \
    "\"checkpoint\":[\"mlpwo\",\"moe_mlpwo\"],"                                                \
    "\"axes\":[\"activation_batch_moe\",null,null,null]},"                                     \
    "\"ob\":{\"shape\":[\"b\",\"k\",\"e\"],\"dtype\":\"act\"},"                                \
    "\"c\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"},"                                       \
    "\"y\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"}},"                                      \
    "\"ops\":["                                                                                \
    "{\"name\":\"gate\",\"op\":\"einsum\",\"spec\":\"be,ex->bx\",\"in\":[\"x\",\"wg\"],"       \
    "\"out\":[\"logits\"]},"                                                                   \
    "{\"name\":\"top_k\",\"op\":\"top_k\",\"in\":[\"logits\"],\"out\":[\"tw_raw\",\"ti\"]},"   \
    "{\"name\":\"route\",\"op\":\"softmax\",\"in\":[\"tw_raw\"],\"out\":[\"tw\"]},"            \
    "{\"name\":\"permute\",\"op\":\"gather\",\"over\":\"expert\",\"in\":[\"x\",\"ti\"],"       \
    "\"out\":[\"t\"]},"                                                                        \
    "{\"name\":\"wi\",\"op\":\"einsum\",\"spec\":\"bkfe,xem->bkfm\",\"ragged\":\"xf\","        \
    "\"in\":[\"t\",\"w0\"],\"out\":[\"g\"]},"                                                  \
    "{\"name\":\"wo\",\"op\":\"einsum\",\"spec\":\"bkfm,xme->bkfe\",\"ragged\":\"xf\","        \
    "\"in\":[\"g\",\"w2\"],\"out\":[\"o\"]},"                                                  \
    "{\"name\":\"unpermute\",\"op\":\"gather\",\"over\":\"expert\",\"in\":[\"o\",\"ti\"],"     \
    "\"out\":[\"ob\"]},"                                                                       \
    "{\"name\":\"combine\",\"op\":\"einsum\",\"spec\":\"bke,bk->be\",\"in\":[\"ob\",\"tw\"],"  \
    "\"out\":[\"c\"]},"                                                                        \
    "{\"name\":\"res\",\"op\":\"add\",\"in\":[\"x\",\"c\"],\"out\":[\"y\"]}]}"

#define DENSE_BLOCK                                                                            \
    "{\"inputs\":[\"x\"],\"outputs\":[\"y\"],\"tensors\":{"                                    \
    "\"x\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\",\"checkpoint\":\"decoder_layer_input\"}," \
    "\"w1\":{\"shape\":[\"e\",\"d\"],\"dtype\":\"weight\",\"param\":true},"                    \
    "\"h\":{\"shape\":[\"b\",\"d\"],\"dtype\":\"act\",\"checkpoint\":\"mlpwi_0\"},"            \
    "\"w2\":{\"shape\":[\"d\",\"e\"],\"dtype\":\"weight\",\"param\":true},"                    \
    "\"o\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\",\"checkpoint\":\"mlpwo\"},"              \
    "\"y\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"}},"                                      \
    "\"ops\":["                                                                                \
    "{\"name\":\"fc1\",\"op\":\"einsum\",\"spec\":\"be,ed->bd\",\"in\":[\"x\",\"w1\"],"        \
    "\"out\":[\"h\"]},"                                                                        \
    "{\"name\":\"fc2\",\"op\":\"einsum\",\"spec\":\"bd,de->be\",\"in\":[\"h\",\"w2\"],"        \
    "\"out\":[\"o\"]},"                                                                        \
    "{\"name\":\"res\",\"op\":\"add\",\"in\":[\"x\",\"o\"],\"out\":[\"y\"]}]}"

static const char *const moe_graph =
    "{\"format\":\"remat-graph/1\",\"name\":\"tiny_moe\"," TINY_DIMS ",\"layer\":" MOE_BLOCK "}";

/* Dense first (first_num_dense_layers), then MoE. */
static const char *const first_graph =
    "{\"format\":\"remat-graph/1\",\"name\":\"tiny_stack\"," TINY_DIMS
    ",\"blocks\":{\"dense\":" DENSE_BLOCK ",\"moe\":" MOE_BLOCK "},"
    "\"stack\":[{\"name\":\"dense\",\"block\":\"dense\",\"first\":\"first_num_dense_layers\"},"
    "{\"name\":\"moe\",\"block\":\"moe\"}]}";

/* MoE on every second layer (a constant rule), dense elsewhere. */
static const char *const every_graph =
    "{\"format\":\"remat-graph/1\",\"name\":\"tiny_every\"," TINY_DIMS
    ",\"blocks\":{\"dense\":" DENSE_BLOCK ",\"moe\":" MOE_BLOCK "},"
    "\"stack\":[{\"name\":\"moe\",\"block\":\"moe\",\"every\":2},"
    "{\"name\":\"dense\",\"block\":\"dense\"}]}";

static const char *const tiny_base[] = {
    "model_name=default",  "graph=mixtral",         "per_device_batch_size=2",
    "base_emb_dim=4",      "base_mlp_dim=8",        "base_moe_mlp_dim=8",
    "num_experts=4",       "num_experts_per_tok=2", "base_num_decoder_layers=3",
    "reserve_fraction=0", "scan_layers=false",  NULL};

static const remat_tensor_row_t *row(const fx_run_t *f, size_t p, const char *name) {
    const remat_block_t *b = remat_profile_block(&f->r, p);
    size_t i = remat_block_find_tensor(b, name);
    assert_true(i != REMAT_NONE);
    return &f->r.profiles[p].tensors[i];
}

/* The header's sizes and FLOPs, one device. */
static void test_tiny_moe_by_hand(void **state) {
    (void)state;
    const char *extra[] = {"remat_policy=minimal", NULL};
    fx_run_t *f = fx_analyze_with(moe_graph, tiny_base, extra);
    const struct {
        const char *name;
        uint64_t bytes;
    } want[] = {{"x", 16},  {"logits", 16}, {"tw_raw", 8}, {"ti", 16}, {"tw", 8}, {"t", 32},
                {"g", 64},  {"o", 32},      {"ob", 32},    {"c", 16},  {"y", 16}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        assert_int_equal(row(f, 0, want[i].name)->bytes, want[i].bytes);
    }
    assert_int_equal(f->r.param_count, 3 * 272);
    assert_int_equal(f->r.layers[0].forward_flops, 644);
    /* no expert parallelism: no all-to-all */
    assert_true(f->r.layers[0].all_to_all_seconds == 0);
    /* JAX's residual rule under minimal (mlpwi_0 and mlpwo saveable):
       backward reads t (wi's input), g (wo's), ob and tw (the combine's);
       g is named: kept. ob is not: it is rebuilt by re-running the
       unpermute, whose input o is named mlpwo, so o is kept to re-run it
       (not for a backward of its own: the gather's backward reads only the
       indices). t is rebuilt from x and ti, ti and tw from x through the
       router: recomputed. */
    assert_int_equal(row(f, 0, "g")->fate, REMAT_FATE_DEVICE);
    assert_int_equal(row(f, 0, "o")->fate, REMAT_FATE_DEVICE);
    assert_int_equal(row(f, 0, "ob")->fate, REMAT_FATE_RECOMPUTE);
    assert_int_equal(row(f, 0, "t")->fate, REMAT_FATE_RECOMPUTE);
    assert_int_equal(row(f, 0, "ti")->fate, REMAT_FATE_RECOMPUTE);
    assert_int_equal(row(f, 0, "tw")->fate, REMAT_FATE_RECOMPUTE);
    assert_int_equal(f->r.layers[0].saved_device_bytes, 16 + 64 + 32);
    fx_free(f);
}

/* The tiny MoE layer's backward and recompute FLOPs by hand (the table of
   docs/graph-format.md), one device. Backward: gate 64 x 2 (x and its
   weight need gradients) = 128; top_k's scatter, one per value (tw_raw
   [2,2]) = 4; softmax 4n = 16; each gather's scatter-add, one per output
   element (t [2,2,1,4], ob [2,2,4]) = 16 + 16; the grouped matmuls 256 x 2
   each = 1024; combine 32 x 2 (ob and tw) = 64; the residual add 0 (no
   broadcast input): 1268. Recompute under minimal (g and o kept, as
   test_tiny_moe_by_hand says): the router (gate 64, top_k 8, softmax 20)
   for ti and tw, the permute and unpermute (0) for t and ob: 92. Under full
   (only x kept): that and both grouped matmuls, 92 + 2 x 256 = 604; the
   combine and the add are not re-run, their outputs read by no backward. */
static void test_tiny_moe_backward_by_hand(void **state) {
    (void)state;
    const char *minimal[] = {"remat_policy=minimal", NULL};
    fx_run_t *f = fx_analyze_with(moe_graph, tiny_base, minimal);
    for (size_t l = 0; l < 3; l++) {
        assert_int_equal(f->r.layers[l].backward_flops, 1268);
        assert_int_equal(f->r.layers[l].recompute_flops, 92);
    }
    fx_free(f);
    const char *full[] = {"remat_policy=full", NULL};
    f = fx_analyze_with(moe_graph, tiny_base, full);
    for (size_t l = 0; l < 3; l++) {
        assert_int_equal(f->r.layers[l].forward_flops, 644);
        assert_int_equal(f->r.layers[l].backward_flops, 1268);
        assert_int_equal(f->r.layers[l].recompute_flops, 604);
    }
    fx_free(f);
}

/* The tiny MoE layer's forward peak over the bytes it starts from (its
   input x is the caller's), one device (no gathered weights), by hand.
   Each op's outputs are allocated, the live bytes measured, then what it
   read last is freed; nothing here is fusable. Under full only y is kept:
   gate 16 (logits); top_k +8 +16 = 40, logits freed: 24; route +8 = 32,
   tw_raw freed: 24; permute +32 = 56; wi +64 = 120, t freed: 88; wo +32 =
   120, g freed: 56; unpermute +32 = 88; ... The peak is 120. Under
   minimal g and o stay: wi 120 (88 after t), wo 120, unpermute +32 = 152
   (ti freed: 136), combine +16 = 152 (ob, tw freed: 112), res +16 = 128
   (c freed): the peak is 152, and the layer leaves g, o and y, 112. */
static void test_tiny_moe_forward_peak_by_hand(void **state) {
    (void)state;
    const char *full[] = {"remat_policy=full", NULL};
    fx_run_t *f = fx_analyze_with(moe_graph, tiny_base, full);
    assert_int_equal(f->r.nprofiles, 1);
    assert_int_equal(f->r.profiles[0].fwd_peak_rel, 120);
    fx_free(f);
    const char *minimal[] = {"remat_policy=minimal", NULL};
    f = fx_analyze_with(moe_graph, tiny_base, minimal);
    assert_int_equal(f->r.profiles[0].fwd_peak_rel, 152);
    assert_int_equal(f->r.layers[0].saved_device_bytes, 16 + 64 + 32);
    fx_free(f);
}

/* Expert parallelism on a 4x2 mesh (fsdp 4, expert 2; 8 devices), with
   base_emb_dim=8 so that the embed dim of the weights divides over fsdp x
   expert (8). Per device: the batch shards over fsdp x expert (16 / 8 = 2
   sequences); the experts over expert (4 / 2 = 2), the embed dim of expert
   weights over fsdp (8 / 4 = 2); the receive buffer holds the local routed
   tokens times min(EP 2, experts / top-k 2) = 2: tokens [2,2,2,8] 128 B,
   wi [2,2,2,8] 128 B; wi's weight [2,2,8] 32 params, 128 B. A grouped
   matmul's FLOPs are the local routed rows' 2*2*2 x 2*8*8 = 512, as on one
   device: the buffer's factor is ragged. The all-to-alls move the tokens
   (128 B) and the unpermuted rows [2,2,8] (64 B), half of them off the
   chip: 96 B each pass over ICI. */
static void test_expert_parallel_by_hand(void **state) {
    (void)state;
    const char *extra[] = {"remat_policy=minimal",     "base_emb_dim=8",
                           "num_devices=8",            "ici_fsdp_parallelism=4",
                           "ici_expert_parallelism=2", NULL};
    fx_run_t *f = fx_analyze_with(moe_graph, tiny_base, extra);
    assert_int_equal(row(f, 0, "t")->bytes, 128);
    assert_int_equal(row(f, 0, "g")->bytes, 128);
    assert_int_equal(row(f, 0, "w0")->bytes, 128);
    assert_int_equal(row(f, 0, "ob")->bytes, 64);
    const remat_block_t *b = remat_profile_block(&f->r, 0);
    assert_int_equal(f->r.dim_size[b->tensors[remat_block_find_tensor(b, "t")].dim[2]], 2);
    assert_int_equal(row(f, 0, "g")->shape[2], 2);
    assert_true(f->r.layers[0].all_to_all_seconds == 96.0 / f->hw.ici_bw);
    /* gate 2*2*8*4 = 128 (its weight gathered whole); the grouped matmuls
       512 each; top_k 8, softmax 20, combine 2*2*2*8 = 64, add 16 */
    assert_int_equal(f->r.layers[0].forward_flops, 128 + 8 + 20 + 512 + 512 + 64 + 16);
    fx_free(f);
}

/* With the expert axis sharded, the built-in MoE graphs run MaxText's
   expert-parallel path (their .ep variant): the local copies sorted, sent
   to the receive buffer, sorted again; the experts' output sorted back,
   returned and sorted to token order. Mixtral 8x7B, one sequence of 256 a
   device, expert parallelism 4 over 16 devices: the receive buffer holds
   min(4, 8 / 2) = 4 times the local copies, 1 x 256 x 2 x 4 x 4096 bf16 =
   16 MiB, as does each sort of it; the copies at home 256 x 2 x 4096 bf16
   = 4 MiB. Without the expert axis, one sort each way, as before. */
static void test_expert_parallel_path(void **state) {
    (void)state;
    const char *ep[] = {"model_name=mixtral-8x7b", "per_device_batch_size=1",
                        "max_target_length=256",   "num_devices=16",
                        "ici_expert_parallelism=4", "base_num_decoder_layers=2",
                        "remat_policy=minimal",    NULL};
    fx_run_t *f = fx_analyze_ok(NULL, ep);
    assert_true(f->graph->expert_parallel);
    assert_int_equal(f->r.mesh.shards[REMAT_AXIS_EXPERT], 4);
    static const struct {
        const char *name;
        uint64_t bytes;
    } want[] = {{"tokens_sorted", 4u << 20}, {"tokens_recv", 16u << 20}, {"tokens", 16u << 20},
                {"moe_out", 16u << 20},      {"moe_out_local", 16u << 20},
                {"moe_home", 4u << 20},      {"moe_back", 4u << 20}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        assert_int_equal(row(f, 0, want[i].name)->bytes, want[i].bytes);
    }
    /* the two all-to-alls move what they did before the variant: the
       receive buffer out (16 MiB) and the copies home (4 MiB), 3/4 of it
       across ICI over 4 expert shards: 15 MiB */
    assert_true(f->r.layers[0].all_to_all_seconds == 15728640.0 / f->hw.ici_bw);
    /* under minimal the backward re-runs the whole path: the grouped
       matmuls read the second sort, made from the receive buffer, and the
       combine's weight gradient reads the returned output, made from the
       experts' sorted-back output (the compiler's re-run holds both) */
    static const char *const rerun[] = {"tokens_sorted", "tokens_recv", "tokens", "moe_out_local",
                                        "moe_home"};
    for (size_t i = 0; i < sizeof rerun / sizeof rerun[0]; i++) {
        assert_int_equal(row(f, 0, rerun[i])->fate, REMAT_FATE_RECOMPUTE);
    }
    fx_free(f);
    const char *one[] = {"model_name=mixtral-8x7b", "per_device_batch_size=1",
                         "max_target_length=256",   "num_devices=16",
                         "base_num_decoder_layers=2", NULL};
    f = fx_analyze_ok(NULL, one);
    assert_false(f->graph->expert_parallel);
    const remat_block_t *b = remat_profile_block(&f->r, 0);
    assert_true(remat_block_find_tensor(b, "tokens_recv") == REMAT_NONE);
    assert_int_equal(row(f, 0, "tokens")->bytes, 4u << 20); /* a buffer factor of 1 */
    fx_free(f);
}

/* A stack's kinds: dense first (first_num_dense_layers=1), then MoE; the
   params of each kind times its layers (64 + 2 x 272 = 608); one profile
   per kind, each naming its kind. */
static void test_first_dense_then_moe(void **state) {
    (void)state;
    const char *extra[] = {"remat_policy=full", "first_num_dense_layers=1", NULL};
    fx_run_t *f = fx_analyze_with(first_graph, tiny_base, extra);
    assert_int_equal(f->r.param_count, 64 + 2 * 272);
    assert_int_equal(f->r.nprofiles, 2);
    assert_string_equal(f->graph->kinds[f->r.profiles[0].kind].name, "dense");
    assert_int_equal(f->r.profiles[0].nlayers, 1);
    assert_string_equal(f->graph->kinds[f->r.profiles[1].kind].name, "moe");
    assert_int_equal(f->r.profiles[1].first, 1);
    assert_int_equal(f->r.profiles[1].nlayers, 2);
    assert_int_equal(f->r.layers[0].forward_flops, 2 * 2 * 4 * 8 * 2 + 8);
    assert_int_equal(f->r.layers[2].forward_flops, 644);
    fx_free(f);
    /* no dense layer: every layer MoE */
    const char *none[] = {"remat_policy=full", "first_num_dense_layers=0", NULL};
    f = fx_analyze_with(first_graph, tiny_base, none);
    assert_int_equal(f->r.param_count, 3 * 272);
    assert_int_equal(f->r.nprofiles, 1);
    fx_free(f);
}

/* every=2: layers 1 and 3 of 4 are MoE. Two pipeline stages split the
   layers in halves, each with one kind of each: the same static params per
   stage (64 + 272 = 336 params, 1344 B). */
static void test_every_and_stages(void **state) {
    (void)state;
    const char *extra[] = {"remat_policy=full", "base_num_decoder_layers=4", "num_devices=2",
                           "ici_fsdp_parallelism=1", "ici_pipeline_parallelism=2", NULL};
    fx_run_t *f = fx_analyze_with(every_graph, tiny_base, extra);
    assert_int_equal(f->r.param_count, 2 * 64 + 2 * 272);
    for (size_t l = 0; l < 4; l++) {
        const size_t kind = f->r.profiles[f->r.layers[l].profile].kind;
        assert_string_equal(f->graph->kinds[kind].name, l % 2 ? "moe" : "dense");
    }
    assert_int_equal(f->r.nstages, 2);
    assert_int_equal(f->r.param_count_device, 64 + 272);
    assert_int_equal(f->r.param_bytes, (64 + 272) * 4);
    fx_free(f);
}

/* Stack rules that do not load: a last kind with a rule, an unknown
   block, a rule key that is not an integer config key. */
static void test_stack_errors(void **state) {
    (void)state;
    static const struct {
        const char *stack, *path, *text;
    } cases[] = {
        {"[{\"name\":\"moe\",\"block\":\"moe\",\"every\":2}]", "$.stack[0]",
         "the last kind takes every layer left"},
        {"[{\"name\":\"moe\",\"block\":\"nope\"}]", "$.stack[0].block", "no block 'nope'"},
        {"[{\"name\":\"a\",\"block\":\"moe\",\"first\":\"dtype\"},{\"name\":\"b\",\"block\":"
         "\"moe\"}]",
         "$.stack[0].first", "'dtype' is not an integer config key"},
        {"[{\"name\":\"a\",\"block\":\"moe\",\"every\":0},{\"name\":\"b\",\"block\":\"moe\"}]",
         "$.stack[0].every", "positive integer"},
        {"[{\"name\":\"a\",\"block\":\"moe\",\"every\":2},{\"name\":\"a\",\"block\":\"moe\"}]",
         "$.stack[1]", "duplicate kind name 'a'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[8192];
        snprintf(text, sizeof text,
                 "{\"format\":\"remat-graph/1\",\"name\":\"t\"," TINY_DIMS
                 ",\"blocks\":{\"moe\":" MOE_BLOCK "},\"stack\":%s}",
                 cases[i].stack);
        remat_graph_t *g = NULL;
        remat_error_t err;
        remat_error_init(&err);
        assert_int_equal(remat_graph_load_string(text, "<t>", &g, &err), REMAT_E_SCHEMA);
        assert_null(g);
        assert_string_equal(err.json_path, cases[i].path);
        if (!strstr(err.text, cases[i].text)) {
            fail_msg("case %zu: '%s' lacks '%s'", i, err.text, cases[i].text);
        }
    }
}

/* The MoE, MLA, mixed-stack, QK-norm and tied presets' parameter counts against the
   published ones: totals within 0.5%; active counts (what one token runs
   through) within the rounding of the published figure, with the input
   embedding left out where the vendor leaves it out (DeepSeek's and
   OpenAI's counts). Sources: Mistral's Mixtral announcements and model
   cards (8x7B: 46.7B total, 12.9B active; 8x22B: 141B, 39B); the
   DeepSeek-V3 technical report (arXiv 2412.19437: 671B, 37B activated,
   without the 14B multi-token prediction module); the DeepSeek-V2 report
   (arXiv 2405.04434: 236B and 21B; V2-Lite 15.7B); the Qwen3 model cards
   (30.5B, 235B and 22B, Qwen3-Coder 480B; the dense 8.2B, 14.8B and
   32.8B); Qwen2.5-1.5B's model card (1.54B, tied); the Gemma report (arXiv 2403.08295,
   Table 2: 2B 524,550,144 embedding and 1,981,884,416 other parameters,
   7B 786,825,216 and 7,751,248,896); OpenAI's gpt-oss model card
   (20.9B and 3.61B, 116.8B and 5.13B); Meta's Llama 4 model cards
   (Maverick 400B; Scout 109B with its vision encoder, 107.8B for the text
   decoder remat models, counted from its config; 17B active); the Gemma 2
   report (2.61B, 9.24B, 27.2B) and Gemma 3's text decoders (3.88B, 11.8B,
   27.0B). Not checked for active counts: Qwen3-30B-A3B's "3.3B" (remat
   3.35B with the embedding, 3.04B without) and V2-Lite's "2.4B" (remat
   2.45B without it). Kimi K2 is left out: MaxText's dims give 1.026T
   against a published 1T or 1.04T (docs/config.md). */
static void test_preset_param_counts(void **state) {
    (void)state;
    static const struct {
        const char *model;
        double total, active, half; /* half: the published active figure's rounding */
        bool no_embedding;
    } models[] = {{"model_name=mixtral-8x7b", 46.7e9, 12.9e9, 0.05e9, false},
                  {"model_name=mixtral-8x22b", 141e9, 39e9, 0.5e9, false},
                  {"model_name=deepseek3-671b", 671e9, 37e9, 0.5e9, true},
                  {"model_name=deepseek2-236b", 236e9, 21e9, 0.5e9, true},
                  {"model_name=deepseek2-16b", 15.7e9, 0, 0, false},
                  {"model_name=qwen3-30b-a3b", 30.5e9, 0, 0, false},
                  {"model_name=qwen3-8b", 8.2e9, 0, 0, false},
                  {"model_name=qwen3-14b", 14.8e9, 0, 0, false},
                  {"model_name=qwen3-32b", 32.8e9, 0, 0, false},
                  {"model_name=gemma-2b", 2506434560.0, 0, 0, false},
                  {"model_name=gemma-7b", 8538074112.0, 0, 0, false},
                  {"model_name=qwen2.5-1.5b", 1.54e9, 0, 0, false},
                  {"model_name=qwen3-235b-a22b", 235e9, 22e9, 0.5e9, false},
                  {"model_name=qwen3-480b-a35b", 480e9, 35e9, 0.5e9, false},
                  {"model_name=gpt-oss-20b", 20.9e9, 3.61e9, 0.005e9, true},
                  {"model_name=gpt-oss-120b", 116.8e9, 5.13e9, 0.005e9, true},
                  {"model_name=llama4-17b-16e", 107.8e9, 17e9, 0.5e9, false},
                  {"model_name=llama4-17b-128e", 400e9, 17e9, 0.5e9, false},
                  {"model_name=gemma2-2b", 2.61e9, 0, 0, false},
                  {"model_name=gemma2-9b", 9.24e9, 0, 0, false},
                  {"model_name=gemma2-27b", 27.2e9, 0, 0, false},
                  {"model_name=gemma3-4b", 3.88e9, 0, 0, false},
                  {"model_name=gemma3-12b", 11.8e9, 0, 0, false},
                  {"model_name=gemma3-27b", 27.0e9, 0, 0, false}};
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        const char *args[] = {models[i].model, "per_device_batch_size=1", "max_target_length=1024",
                              NULL};
        fx_run_t *f = fx_analyze_ok(NULL, args);
        const double total = (double)f->r.param_count;
        const double embedding = (double)f->cfg.vocab_size * (double)f->cfg.base_emb_dim;
        const double active =
            (double)f->r.active_param_count - (models[i].no_embedding ? embedding : 0);
        if (fabs(total - models[i].total) / models[i].total > 0.005 ||
            (models[i].active > 0 && fabs(active - models[i].active) > models[i].half)) {
            fail_msg("%s: %.4g total (published %.4g), %.4g active (published %.4g)",
                     models[i].model, total, models[i].total, active, models[i].active);
        }
        fx_free(f);
    }
}

/* Qwen3's small dense models tie the logits to the embedding table. By
   hand, a layer with embed E, 16 or 32 query heads and 8 key/value heads
   of 128, MLP width M: q and o E x 128 Hq each, k and v E x 1024 each,
   the gated MLP 3 E M, the query and key norms 128 each, the two layer
   norms E each; the model: layers x that, the table 151936 x E once, the
   final norm E.
     0.6B: E 1024, Hq 16, M 3072, 28 layers: 15,730,944 a layer,
           440,466,432 + 155,582,464 + 1024 = 596,049,920
     1.7B: E 2048, Hq 16, M 6144, 28 layers: 50,336,000 a layer,
           1,409,408,000 + 311,164,928 + 2048 = 1,720,574,976
     4B:   E 2560, Hq 32, M 9728, 36 layers: 100,930,816 a layer,
           3,633,509,376 + 388,956,160 + 2560 = 4,022,468,096
   The model cards round the totals (0.6B, 1.7B, 4.0B: 0.7%, 1.2% and 0.6%
   from these); their non-embedding counts (0.44B, 1.4B, 3.6B) hold to
   their rounding. */
static void test_tied_qwen3_counts(void **state) {
    (void)state;
    static const struct {
        const char *model;
        uint64_t total;
        double non_embedding, half;
    } models[] = {{"model_name=qwen3-0.6b", 596049920u, 0.44e9, 0.005e9},
                  {"model_name=qwen3-1.7b", 1720574976u, 1.4e9, 0.05e9},
                  {"model_name=qwen3-1.7b-base", 1720574976u, 1.4e9, 0.05e9},
                  {"model_name=qwen3-4b", 4022468096u, 3.6e9, 0.05e9},
                  {"model_name=qwen3-4b-base", 4022468096u, 3.6e9, 0.05e9},
                  {"model_name=qwen3-4b-thinking-2507", 4022468096u, 3.6e9, 0.05e9}};
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        const char *args[] = {models[i].model, "per_device_batch_size=1", "max_target_length=1024",
                              NULL};
        fx_run_t *f = fx_analyze_ok(NULL, args);
        assert_int_equal(f->r.param_count, models[i].total);
        assert_string_equal(f->graph->name, "qwen3_tied");
        const double table = (double)f->cfg.vocab_size * (double)f->cfg.base_emb_dim;
        assert_true(fabs((double)f->r.param_count - table - models[i].non_embedding) <=
                    models[i].half);
        fx_free(f);
    }
}

/* OLMo 3 (the olmo3 graph): a layer with embed E, Hq query and Hk
   key/value heads of 128 and MLP width M has q and o E x 128 Hq each, k
   and v E x 128 Hk each, the gated MLP 3 E M, the query and key norms over
   all heads 128 Hq and 128 Hk, and the post-attention and post-MLP norms E
   each; the model: layers x that, untied embedding and logits tables of
   100278 x E each, the final norm E.
     7B:  E 4096, Hq 32, Hk 32, M 11008, 32 layers: 202,391,552 a layer,
          6,476,529,664 + 2 x 410,738,688 + 4096 = 7,298,011,136
     32B: E 5120, Hq 40, Hk 8, M 27648, 64 layers: 487,604,224 a layer,
          31,206,670,336 + 2 x 513,423,360 + 5120 = 32,233,522,176
   Hugging Face's pages for the checkpoints count 7.3B and 32.2B. The
   layers scan in blocks of four (Olmo3ScannableBlock): one remat unit. */
static void test_olmo3_counts(void **state) {
    (void)state;
    static const struct {
        const char *model;
        uint64_t total;
        double published;
    } models[] = {{"model_name=olmo3-7b", 7298011136u, 7.3e9},
                  {"model_name=olmo3-7b-pt", 7298011136u, 7.3e9},
                  {"model_name=olmo3-32b", 32233522176u, 32.2e9}};
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        const char *args[] = {models[i].model, "per_device_batch_size=1", "max_target_length=1024",
                              NULL};
        fx_run_t *f = fx_analyze_ok(NULL, args);
        assert_int_equal(f->r.param_count, models[i].total);
        assert_true(fabs((double)f->r.param_count - models[i].published) / models[i].published <=
                    0.005);
        assert_int_equal(f->r.remat_unit, 4);
        fx_free(f);
    }
}

/* Gemma 4 31B (gemma4 graph): embedding 262,144 x 5,376 = 1,409,286,144
   and the final norm 5,376. A local layer: q and out 5,376 x 32 x 256 =
   44,040,192 each, k and v 5,376 x 16 x 256 = 22,020,096 each, the GeGLU
   MLP 3 x 5,376 x 21,504 = 346,816,512, four norms of 5,376, the query and
   key norms 256 each, the layer scalar 1: 478,959,105. A global layer
   (head dim 512, 4 key/value heads, no value projection): q and out
   5,376 x 32 x 512 = 88,080,384 each, k 5,376 x 4 x 512 = 11,010,048, the
   MLP, the norms (2 x 512 + 4 x 5,376) and the scalar: 534,009,857. Layers
   5, 11, ..., 59 are global: 50 x 478,959,105 + 10 x 534,009,857 +
   1,409,291,520 = 30,697,345,340; the model card counts 30.7B (and about
   550M more in the vision encoder, which remat leaves out). Each layer is
   its own remat unit (Gemma4ScannableBlock rematerializes layer by layer);
   the global layers bind their own head dim. */
static void test_gemma4_counts(void **state) {
    (void)state;
    const char *args[] = {"model_name=gemma4-31b", "per_device_batch_size=1",
                          "max_target_length=1024", NULL};
    fx_run_t *f = fx_analyze_ok(NULL, args);
    assert_int_equal(f->r.param_count, 30697345340u);
    assert_true(fabs((double)f->r.param_count - 30.7e9) / 30.7e9 <= 0.005);
    assert_int_equal(f->r.remat_unit, 1);
    assert_int_equal(f->r.nprofiles >= 2, 1);
    const remat_block_t *g = remat_profile_block(&f->r, f->r.layers[5].profile);
    const remat_block_t *l = remat_profile_block(&f->r, f->r.layers[0].profile);
    assert_int_equal(remat_block_find_tensor(g, "wv"), REMAT_NONE);
    assert_true(remat_block_find_tensor(l, "wv") != REMAT_NONE);
    const remat_tensor_row_t *q = &f->r.profiles[f->r.layers[5].profile]
                                       .tensors[remat_block_find_tensor(g, "q_raw")];
    assert_int_equal(q->shape[3], 512);
    fx_free(f);
    /* global_head_dim and global_num_kv_heads at MaxText's 0 read as the
       local layers' head dim and heads: a global layer is then a local one
       without its value projection (22,020,096) */
    const char *zero[] = {"model_name=gemma4-31b", "global_head_dim=0", "global_num_kv_heads=0",
                          "base_num_decoder_layers=6", "per_device_batch_size=1",
                          "max_target_length=1024", NULL};
    f = fx_analyze_ok(NULL, zero);
    assert_int_equal(f->r.param_count, 1409291520u + 5 * 478959105u + 478959105u - 22020096u);
    fx_free(f);
}

/* Gemma 4 26B-A4B (gemma4_moe graph): embedding 262,144 x 2,816 =
   738,197,504 and the final norm. Every layer's MLP is Gemma4MoE: the
   shared GeGLU expert 3 x 2,816 x 2,112 = 17,842,176, the router 2,816 x
   128 = 360,448 and its scale 2,816, 128 experts of 3 x 2,816 x 704
   (761,266,176), the per-expert scale 128, seven norms of 2,816 and the
   layer scalar: 779,491,457. Attention, local: q and out 2,816 x 16 x 256
   = 11,534,336 each, k and v 2,816 x 8 x 256 = 5,767,168 each, norms 2 x
   256: 34,603,520; global (head dim 512, 2 key/value heads, no value
   projection): 23,068,672 x 2 + 2,883,584 + 2 x 512 = 49,021,952. 25 local
   and 5 global layers: 25,233,141,790, the model card's 25.2B. A token
   runs 8 of the 128 experts: 761,266,176 x 8 / 128 and the per-expert
   scale's 8 instead of the experts' all: 3,822,526,990 active, its 3.8B. */
static void test_gemma4_moe_counts(void **state) {
    (void)state;
    const char *args[] = {"model_name=gemma4-26b", "per_device_batch_size=1",
                          "max_target_length=1024", NULL};
    fx_run_t *f = fx_analyze_ok(NULL, args);
    assert_int_equal(f->r.param_count, 25233141790u);
    assert_int_equal(f->r.param_count,
                     UINT64_C(738197504) + 2816 + UINT64_C(30) * 779491457 +
                         UINT64_C(25) * 34603520 + UINT64_C(5) * 49021952);
    assert_true(fabs((double)f->r.param_count - 25.2e9) / 25.2e9 <= 0.005);
    assert_int_equal(f->r.active_param_count, 3822526990u);
    assert_true(fabs((double)f->r.active_param_count - 3.8e9) / 3.8e9 <= 0.01);
    assert_int_equal(f->r.remat_unit, 1);
    fx_free(f);
}

/* Envy Switch base (envy graph): embedding 32,768 x 1,536 = 50,331,648
   and the final norm. Attention: q, k, v and out 1,536 x 12 x 128 =
   2,359,296 each, the query and key norms 128 each, three norms of 1,536:
   9,442,048 a layer. A dense layer's gated MLP 3 x 1,536 x 6,144 =
   28,311,552; an MoE layer (every second) the router 1,536 x 128 =
   196,608 and 128 such experts, 3,623,878,656. Six of each:
   22,077,958,656 (no published total: MaxText's ymls are the source). A
   token runs one expert: 504,556,032 active. The layers scan in blocks
   of two (EnvyScannableBlock): one remat unit. */
static void test_envy_counts(void **state) {
    (void)state;
    const char *args[] = {"model_name=envy-switch-base", "per_device_batch_size=1",
                          "max_target_length=1024", NULL};
    fx_run_t *f = fx_analyze_ok(NULL, args);
    const uint64_t attn = UINT64_C(9442048), mlp = UINT64_C(28311552);
    assert_int_equal(f->r.param_count,
                     UINT64_C(50333184) + 6 * (attn + mlp) + 6 * (attn + 196608 + 128 * mlp));
    assert_int_equal(f->r.param_count, UINT64_C(22077958656));
    assert_int_equal(f->r.active_param_count,
                     UINT64_C(50333184) + 6 * (attn + mlp) + 6 * (attn + 196608 + mlp));
    assert_int_equal(f->r.remat_unit, 2);
    fx_free(f);
}

/* Gemma 4's global layer runs under its scan's own policy, which saves
   the names the config offloads (models/gemma4.py, _scan_global_layer:
   save_only_these_names of the saved and offloaded names): the gemma4
   graph's global kind keeps them on device (keeps_offloads). A JAX
   predicate's offload is not by name: it stays; and unscanned layers run
   the config's policy (remat_resolve clears the flag). */
static void test_gemma4_global_keeps_offloads(void **state) {
    (void)state;
    static const struct {
        const char *policy, *scan;
        remat_fate_t local, global;
    } cases[] = {{"remat_policy=minimal_offloaded", "scan_layers=true", REMAT_FATE_OFFLOAD,
                  REMAT_FATE_DEVICE},
                 {"remat_policy=offload_dot_with_no_batch_dims", "scan_layers=true",
                  REMAT_FATE_OFFLOAD, REMAT_FATE_OFFLOAD},
                 /* unscanned, every layer runs the config's policy */
                 {"remat_policy=minimal_offloaded", "scan_layers=false", REMAT_FATE_OFFLOAD,
                  REMAT_FATE_OFFLOAD}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *args[] = {"model_name=gemma4-31b", "base_num_decoder_layers=12",
                              "per_device_batch_size=1", "max_target_length=1024",
                              cases[i].policy, cases[i].scan, NULL};
        fx_run_t *f = fx_analyze_ok(NULL, args);
        for (size_t l = 0; l < 12; l++) {
            const size_t p = f->r.layers[l].profile;
            const remat_block_t *b = remat_profile_block(&f->r, p);
            const remat_fate_t got = f->r.profiles[p].plan.fate[remat_block_find_tensor(b, "attn")];
            assert_int_equal(got, (l + 1) % 6 == 0 ? cases[i].global : cases[i].local);
        }
        fx_free(f);
    }
}

/* The built-in MoE graphs at tiny sizes (batch 1, seq 4, embed 8, 4
   experts, top-2): what each kind keeps per preset under JAX's residual
   rule, as `remat table --kind tensors` lists it, kinds in stack order. */
static void expect_kept(const char *graph, const char *policy, const char *want) {
    const char *args[] = {"model_name=default", graph, policy, "num_experts=4",
                          "num_experts_per_tok=2", "shared_experts=1", "first_num_dense_layers=1",
                          "per_device_batch_size=1", "max_target_length=4", "base_emb_dim=8",
                          "base_num_query_heads=2", "base_num_kv_heads=2", "head_dim=4",
                          "q_lora_rank=4", "kv_lora_rank=4", "qk_nope_head_dim=4",
                          "qk_rope_head_dim=2", "v_head_dim=4", "base_mlp_dim=16",
                          "base_moe_mlp_dim=16", "vocab_size=16", "base_num_decoder_layers=2",
                          strstr(graph, "deepseek") ? "attention_type=mla" : NULL, NULL};
    fx_run_t *f = fx_analyze_ok(NULL, args);
    char kept[1024] = "";
    for (size_t p = 0; p < f->r.nprofiles; p++) {
        const remat_block_t *b = remat_profile_block(&f->r, p);
        const char *kind = f->graph->kinds[f->r.profiles[p].kind].name;
        for (size_t i = 0; i < b->ntensors; i++) {
            remat_fate_t fate = f->r.profiles[p].tensors[i].fate;
            if (fate == REMAT_FATE_DEVICE || fate == REMAT_FATE_OFFLOAD) {
                snprintf(kept + strlen(kept), sizeof kept - strlen(kept), "%s%s:%s",
                         kept[0] ? " " : "", kind, b->tensors[i].name);
            }
        }
    }
    if (strcmp(kept, want) != 0) {
        fail_msg("%s %s: kept '%s', expected '%s'", graph, policy, kept, want);
    }
    fx_free(f);
}

/* mixtral: minimal keeps the attention projections, out_proj, the routed
   experts' wi_0 (mlpwi_0) and, to re-run the unpermute, their output
   (mlpwo); not wi_1, which MaxText's sparse path tags moe_mlpwi_1 only.
   The dot predicate saves the router's logits and the weight matmuls but
   not the grouped matmuls (Megablox's kernel is not a dot_general).
   deepseek: MLA's query_proj (q), key_proj (k, the concat), value_proj
   (v); minimal also keeps the dense MLP's and the shared experts' wi_0 and
   wi_1 (mlpwi_0, mlpwi_1); their mlpwo is read by no backward and not
   needed to re-run anything: dropped. */
static void test_moe_kept_sets(void **state) {
    (void)state;
    expect_kept("graph=mixtral", "remat_policy=full", "layer:x");
    expect_kept("graph=mixtral", "remat_policy=minimal",
                "layer:x layer:q layer:k layer:v layer:attn layer:moe_gate layer:moe_out");
    expect_kept("graph=mixtral", "remat_policy=save_qkv_proj", "layer:x layer:q layer:k layer:v");
    expect_kept("graph=mixtral", "remat_policy=dots_with_no_batch_dims_saveable",
                "layer:x layer:q_raw layer:k_raw layer:v layer:attn layer:router_logits");
    expect_kept("graph=deepseek", "remat_policy=full", "dense:x moe:x");
    expect_kept("graph=deepseek", "remat_policy=minimal",
                "dense:x dense:q dense:v dense:k dense:attn dense:mlp_gate dense:mlp_up "
                "moe:x moe:q moe:v moe:k moe:attn moe:moe_gate moe:moe_out moe:shared_gate "
                "moe:shared_up");
    expect_kept("graph=deepseek", "remat_policy=save_dot_except_mlp",
                "dense:x dense:q dense:v dense:k dense:attn moe:x moe:q moe:v moe:k moe:attn");
}

/* The forward event of op @p op of @p f's first layer, from a traced run. */
/* Layer @p layer's events of op @p op at @p step in @p f's step, in
   order: the first @p cap of them into @p out; returns how many there are. */
static size_t events_of(const fx_run_t *f, size_t layer, const char *op, remat_step_t step,
                        remat_trace_event_t *out, size_t cap) {
    remat_analyzer_t *an = NULL;
    remat_error_t err;
    remat_error_init(&err);
    assert_int_equal(remat_analyzer_new(f->graph, &f->cfg, &f->hw, &an, &err), REMAT_OK);
    remat_trace_t tr;
    remat_i_trace_init(&tr);
    remat_result_t r;
    remat_result_init(&r);
    const remat_run_opts_t opts = {.trace = &tr};
    assert_int_equal(remat_analyzer_run(an, f->policy, &opts, &r, &err), REMAT_OK);
    size_t n = 0;
    for (size_t i = 0; i < tr.nevents; i++) {
        const remat_trace_event_t *e = &tr.events[i];
        if (e->layer == layer && e->step == step && e->op && strcmp(e->op, op) == 0) {
            if (n < cap) {
                out[n] = *e;
            }
            n++;
        }
    }
    remat_result_release(&r);
    remat_i_trace_release(&tr);
    remat_analyzer_free(an);
    return n;
}

static remat_trace_event_t forward_event(const fx_run_t *f, const char *op) {
    remat_trace_event_t e;
    assert_true(events_of(f, 0, op, REMAT_STEP_FORWARD, &e, 1) >= 1);
    return e;
}

static int64_t gathered_at(const fx_run_t *f, const char *op) {
    return forward_event(f, op).cats[REMAT_CAT_GATHERED];
}

/* Megablox's tile padding in the time model: per_device_batch_size=16384,
   top-2, one device: R = 32768 routed rows, G = 4 local experts; the
   grouped matmul wi [32768 x 4096] x [4096 x 4096] is compute-bound on
   tpu7x (1.1 TFLOPs against 0.8 GB moved), so its time scales with its
   executed FLOPs, the model's x (R + G tile) / R: (32768 + 2048) / 32768
   with tiles of 512, (32768 + 4) / 32768 with tiles of 1. */
static void test_grouped_padding_time(void **state) {
    (void)state;
    const char *t512[] = {"per_device_batch_size=16384", "base_emb_dim=4096",
                          "base_moe_mlp_dim=4096", "wi_tile_fwd_batch_seq=512", NULL};
    const char *t1[] = {"per_device_batch_size=16384", "base_emb_dim=4096",
                        "base_moe_mlp_dim=4096", "wi_tile_fwd_batch_seq=1", NULL};
    fx_run_t *a = fx_analyze_with(moe_graph, tiny_base, t512);
    fx_run_t *b = fx_analyze_with(moe_graph, tiny_base, t1);
    const double ratio = forward_event(a, "wi").seconds / forward_event(b, "wi").seconds;
    assert_true(fabs(ratio - (32768.0 + 2048) / (32768.0 + 4)) < 1e-12);
    fx_free(a);
    fx_free(b);
}

/* Replaces the first @p old in @p buf (of @p cap bytes) with @p with. */
static void replace_once(char *buf, size_t cap, const char *old, const char *with) {
    char *at = strstr(buf, old);
    assert_non_null(at);
    const size_t lo = strlen(old), lw = strlen(with);
    assert_true(strlen(buf) - lo + lw < cap);
    memmove(at + lw, at + lo, strlen(at + lo) + 1);
    memcpy(at, with, lw);
}

/* moe_graph under full on the 4x2 mesh (fsdp 4, expert 2) without
   prefetch, and then @p more settings: each op gathering its own weights
   (*@p own) and w0 and w2 in one gather group (*@p grp). */
static void group_pair(const char *const *more, fx_run_t **own, fx_run_t **grp) {
    static const char *const mesh[] = {"remat_policy=full",        "base_emb_dim=8",
                                       "num_devices=8",            "ici_fsdp_parallelism=4",
                                       "ici_expert_parallelism=2", "fsdp_prefetch=false"};
    const char *extra[16];
    size_t n = 0;
    for (size_t k = 0; k < sizeof mesh / sizeof mesh[0]; k++) {
        extra[n++] = mesh[k];
    }
    for (size_t k = 0; more && more[k]; k++) {
        assert_true(n < sizeof extra / sizeof extra[0] - 1);
        extra[n++] = more[k];
    }
    extra[n] = NULL;
    char grouped[8192];
    snprintf(grouped, sizeof grouped, "%s", moe_graph);
    replace_once(grouped, sizeof grouped, "\"w0\":{", "\"w0\":{\"gather_group\":\"moe_experts\",");
    replace_once(grouped, sizeof grouped, "\"w2\":{", "\"w2\":{\"gather_group\":\"moe_experts\",");
    *own = fx_analyze_with(moe_graph, tiny_base, extra);
    *grp = fx_analyze_with(grouped, tiny_base, extra);
}

/* A gather group (MaxText's MoE shard_map takes the expert weights as
   inputs): on the 4x2 mesh, without prefetch, wi and wo each gather their
   own weight, whole over fsdp in bf16: [2 experts, 8, 8] = 128 elements,
   256 B; grouped, both are held from the first op that reads one (wi) to
   the last (wo): 512 B at each, and at the gate the router's [8, 4]
   weight alone, 64 B, either way. */
static void test_gather_group(void **state) {
    (void)state;
    fx_run_t *own, *grp;
    group_pair(NULL, &own, &grp);
    assert_int_equal(gathered_at(own, "wi"), 256);
    assert_int_equal(gathered_at(own, "wo"), 256);
    assert_int_equal(gathered_at(grp, "wi"), 512);
    assert_int_equal(gathered_at(grp, "wo"), 512);
    assert_int_equal(gathered_at(own, "gate"), 64);
    assert_int_equal(gathered_at(grp, "gate"), 64);
    fx_free(own);
    fx_free(grp);
}

/* A gather group in a remat unit (the three layers of tiny_base scanned as
   one block: decoder_block=llama4, inhomogeneous_layer_cycle_interval=3)
   under full, on the 4x2 mesh without prefetch. Each layer's re-run
   gathers the group (w0 and w2 whole over fsdp, 256 B each: 512 B) and
   keeps it to its own backward, so layer 2's backward also holds layers 0
   and 1's copies (1024 B) and layer 1's layer 0's (512 B): at each
   layer's output projection (wo) 512 B more a lower layer than without a
   group, where each op gathers its own weight (256 B at wo). The held
   copies leave the regathered figure, as the weights gathered ahead do,
   and so does the group's copy of w0 at wo, which wo does not read. */
static void test_gather_group_unit(void **state) {
    (void)state;
    static const char *const block[] = {"scan_layers=true", "decoder_block=llama4",
                                        "inhomogeneous_layer_cycle_interval=3", NULL};
    fx_run_t *own, *grp;
    group_pair(block, &own, &grp);
    assert_int_equal(grp->r.remat_unit, 3);
    for (size_t l = 0; l < 3; l++) {
        remat_trace_event_t e;
        assert_int_equal(events_of(own, l, "wo", REMAT_STEP_BACKWARD, &e, 1), 1);
        assert_int_equal(e.cats[REMAT_CAT_GATHERED], 256);
        assert_int_equal(events_of(grp, l, "wo", REMAT_STEP_BACKWARD, &e, 1), 1);
        assert_int_equal(e.cats[REMAT_CAT_GATHERED], 512 + 512 * (int64_t)l);
    }
    /* the peak is at layer 2's backward (wo's), with 1024 B held and w0's
       256 B beside wo's own: they leave the regathered figure */
    assert_int_equal(grp->r.peak_at.layer, 2);
    assert_string_equal(grp->r.peak_at.op, "wo");
    assert_int_equal(grp->r.peak_bytes - grp->r.regathered_peak_bytes, 1024 + 256);
    fx_free(own);
    fx_free(grp);
}

/* The experts' two input projections (a gated MLP as Mixtral's: wi and wi1
   read the routed tokens t, their product g feeds wo), as grouped matmuls
   (ragged) against the same einsums plain, one device under full
   (tiny_base: t [2,2,1,4] and o 32 B, g0, g1 and g [2,2,1,8] 64 B). Two
   moments differ, each by hand: at wo's backward g's gradient takes over
   g, the residual only wo's weight gradient reads, which XLA makes first
   (64 B less re-run); at wi's, the second writer of t's gradient, the
   kernel's own gradient buffer lives beside the one wi1 made (32 B more
   gradient), summed after. Every other backward moment is the same. */
static void test_grouped_backward(void **state) {
    (void)state;
    const char *extra[] = {"remat_policy=full", NULL};
    char two[8192], plain[8192];
    snprintf(two, sizeof two, "%s", moe_graph);
    replace_once(two, sizeof two, "\"w2\":{",
                 "\"w1\":{\"shape\":[\"x\",\"e\",\"m\"],\"dtype\":\"weight\",\"param\":true},"
                 "\"g0\":{\"shape\":[\"b\",\"k\",\"f\",\"m\"],\"dtype\":\"act\"},"
                 "\"g1\":{\"shape\":[\"b\",\"k\",\"f\",\"m\"],\"dtype\":\"act\"},\"w2\":{");
    replace_once(two, sizeof two, "\"in\":[\"t\",\"w0\"],\"out\":[\"g\"]",
                 "\"in\":[\"t\",\"w0\"],\"out\":[\"g0\"]");
    replace_once(two, sizeof two, "{\"name\":\"wo\"",
                 "{\"name\":\"wi1\",\"op\":\"einsum\",\"spec\":\"bkfe,xem->bkfm\","
                 "\"ragged\":\"xf\",\"in\":[\"t\",\"w1\"],\"out\":[\"g1\"]},"
                 "{\"name\":\"mix\",\"op\":\"mul\",\"in\":[\"g0\",\"g1\"],\"out\":[\"g\"]},"
                 "{\"name\":\"wo\"");
    snprintf(plain, sizeof plain, "%s", two);
    while (strstr(plain, "\"ragged\":\"xf\",")) {
        replace_once(plain, sizeof plain, "\"ragged\":\"xf\",", "");
    }
    fx_run_t *g = fx_analyze_with(two, tiny_base, extra);
    fx_run_t *p = fx_analyze_with(plain, tiny_base, extra);
    static const char *const ops[] = {"res", "combine", "unpermute", "wo", "mix", "wi1",
                                      "wi",  "permute", "route",     "top_k", "gate"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        remat_trace_event_t a, b;
        assert_int_equal(events_of(g, 0, ops[i], REMAT_STEP_BACKWARD, &a, 1), 1);
        assert_int_equal(events_of(p, 0, ops[i], REMAT_STEP_BACKWARD, &b, 1), 1);
        const bool wo = strcmp(ops[i], "wo") == 0, wi = strcmp(ops[i], "wi") == 0;
        assert_int_equal(a.cats[REMAT_CAT_RECOMPUTE] - b.cats[REMAT_CAT_RECOMPUTE], wo ? -64 : 0);
        assert_int_equal(a.cats[REMAT_CAT_ACT_GRADS] - b.cats[REMAT_CAT_ACT_GRADS], wi ? 32 : 0);
        assert_int_equal(a.live - b.live, wo ? -64 : wi ? 32 : 0);
    }
    fx_free(g);
    fx_free(p);
}

/* The solver on a mixed stack: one placement per name over both kinds,
   branch and bound against exhaustive enumeration, under budgets from
   loose to tight (the budget replaces XLA's limit; no margin, no
   reserve), on XLA:GPU, where the unrolled layers re-run one at a time
   (XLA:TPU's unrolled bound: test_report's test_unrolled_bound). */
static void test_solver_on_stack(void **state) {
    (void)state;
    /* all in HBM peaks at 10,080 B; 10,050 and 10,000 bind (the solver
       moves names off, slower each time: 10,016 and 9,984 B); nothing
       fits 9,950 */
    static const char *const budgets[] = {"hbm_budget=1000000", "hbm_budget=10050",
                                          "hbm_budget=10000", "hbm_budget=9950", NULL};
    double last = 0;
    size_t found = 0;
    for (size_t b = 0; budgets[b]; b++) {
        const char *extra[] = {"remat_policy=full", "first_num_dense_layers=1",
                               "safety_margin=0", "hardware=h100", budgets[b], NULL};
        fx_run_t *f = fx_analyze_with(first_graph, tiny_base, extra);
        remat_solution_t bb, ex;
        remat_solution_init(&bb);
        remat_solution_init(&ex);
        remat_error_t err;
        remat_error_init(&err);
        assert_int_equal(remat_solve(f->graph, &f->cfg, &f->hw, 0, &bb, &err), REMAT_OK);
        assert_int_equal(remat_solve(f->graph, &f->cfg, &f->hw, REMAT_SOLVE_EXHAUSTIVE, &ex, &err),
                         REMAT_OK);
        /* the names of both kinds: the layer input, the dense MLP's and
           the experts' */
        assert_int_equal(bb.nnames, 5);
        assert_int_equal(bb.found, ex.found);
        if (bb.found) {
            found++;
            assert_true(bb.best.step_seconds > last);
            last = bb.best.step_seconds;
            assert_true(bb.best.step_seconds == ex.best.step_seconds);
            assert_int_equal(bb.best.peak_bytes, ex.best.peak_bytes);
            assert_true(bb.evaluated <= ex.evaluated);
        }
        remat_solution_release(&bb);
        remat_solution_release(&ex);
        fx_free(f);
    }
    assert_int_equal(found, 3);
}

/* Windows: gemma2's pair at seq 8 with a window of 4 on its local half's
   flash op. Causal attention counts s^2/2 = 32 query-key pairs; windowed,
   s w - w^2/2 = 24: the local op's FLOPs (its re-run under full remat,
   on its output ctx) are 3/4 of the global one's. Per pair: 2 b h s t (d
   + d_v) / 2 = 2*1*2*8*8*(4+4)/2 = 1024 global, 768 local. */
static void test_attention_window(void **state) {
    (void)state;
    const char *args[] = {"model_name=default", "graph=gemma2", "remat_policy=full",
                          "per_device_batch_size=1", "max_target_length=8", "base_emb_dim=8",
                          "base_num_query_heads=2", "base_num_kv_heads=1", "head_dim=4",
                          "base_mlp_dim=16", "vocab_size=16", "base_num_decoder_layers=2",
                          "sliding_window_size=4", NULL};
    fx_run_t *f = fx_analyze_ok(NULL, args);
    assert_int_equal(row(f, 0, "global_ctx")->recompute_flops, 1024);
    assert_int_equal(row(f, 0, "local_ctx")->recompute_flops, 768);
    /* What the kernel executes (the time model): whole key blocks of
       sa_block_kv = 1: s B (ceil(w / B) + 1) = 40 pairs, at most the
       unwindowed causal s (s + B) / 2 = 36, over the model's 24: 1.5. */
    remat_analyzer_t *an = NULL;
    remat_error_t err;
    remat_error_init(&err);
    f->cfg.sa_block_kv = 1;
    assert_int_equal(remat_analyzer_new(f->graph, &f->cfg, &f->hw, &an, &err), REMAT_OK);
    const remat_block_t *b = &f->graph->kinds[0].block;
    for (size_t j = 0; j < b->nops; j++) {
        if (strcmp(b->ops[j].name, "local_attention") == 0) {
            assert_true(an->kb[0].xscale[j] == 1.5);
        } else {
            assert_true(an->kb[0].xscale[j] == 0);
        }
    }
    remat_analyzer_free(an);
    fx_free(f);
}

/* DeepSeek-V3's multi-token prediction (mtp_num_layers=1): the head gains
   one more MoE layer (what a 62nd layer adds), the projection's 2E x E
   and two norms of E; it keeps all its residuals, so its forward is no
   recompute. Two MTP layers are refused. */
static void test_mtp(void **state) {
    (void)state;
    const char *base[] = {"model_name=deepseek3-671b", "per_device_batch_size=1",
                          "max_target_length=256", NULL};
    const char *mtp[] = {"mtp_num_layers=1", NULL}, *more[] = {"base_num_decoder_layers=62", NULL};
    fx_run_t *a = fx_analyze_with(NULL, base, NULL), *m = fx_analyze_with(NULL, base, mtp),
             *l = fx_analyze_with(NULL, base, more);
    const uint64_t E = 7168;
    assert_int_equal(m->r.param_count - a->r.param_count,
                     l->r.param_count - a->r.param_count + 2 * E * E + 2 * E);
    assert_true(m->r.recompute_flops == a->r.recompute_flops);
    assert_true(m->r.forward_flops > a->r.forward_flops);
    fx_free(a);
    fx_free(m);
    fx_free(l);
    const char *args[] = {"model_name=deepseek3-671b", "mtp_num_layers=2", NULL};
    fx_run_t *f = fx_analyze(NULL, args);
    assert_int_equal(f->st, REMAT_E_CONFIG);
    assert_non_null(strstr(f->err.text, "one multi-token prediction layer"));
    fx_free(f);
}

/* The routing kinds by hand, one device, per_device_batch_size=2,
   base_emb_dim=4, top-2: x, s, t [2,4]; v, idx [2,2] (idx int32); mask,
   wide, m [2,2,4]; g, y [2,4]. Forward: sigmoid 4n = 32, tanh 32, top_k
   one per score 8, one_hot a write per output element 16, broadcast 0,
   mul 16, the sum over k (einsum bke->be) 2*2*2*4 = 32, add 8: 144.
   Backward: sigmoid and tanh 3n = 24 each, top_k's scatter 4, one_hot's
   values 16, broadcast's sum 16, mul 16 x 2, einsum 32 x 1, add 0: 148. */
static void test_routing_kinds(void **state) {
    (void)state;
    static const char *const graph =
        "{\"format\":\"remat-graph/1\",\"name\":\"routing\","
        "\"dims\":{\"b\":{\"from\":\"per_device_batch_size\"},\"e\":{\"from\":"
        "\"base_emb_dim\"},\"k\":{\"from\":\"num_experts_per_tok\"}},"
        "\"layer\":{\"inputs\":[\"x\"],\"outputs\":[\"y\"],\"tensors\":{"
        "\"x\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"},"
        "\"s\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"},"
        "\"t\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"},"
        "\"v\":{\"shape\":[\"b\",\"k\"],\"dtype\":\"act\"},"
        "\"idx\":{\"shape\":[\"b\",\"k\"],\"dtype\":\"int32\"},"
        "\"wide\":{\"shape\":[\"b\",\"k\",\"e\"],\"dtype\":\"act\"},"
        "\"mask\":{\"shape\":[\"b\",\"k\",\"e\"],\"dtype\":\"act\"},"
        "\"m\":{\"shape\":[\"b\",\"k\",\"e\"],\"dtype\":\"act\"},"
        "\"g\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"},"
        "\"y\":{\"shape\":[\"b\",\"e\"],\"dtype\":\"act\"}},\"ops\":["
        "{\"name\":\"sig\",\"op\":\"sigmoid\",\"in\":[\"x\"],\"out\":[\"s\"]},"
        "{\"name\":\"th\",\"op\":\"tanh\",\"in\":[\"s\"],\"out\":[\"t\"]},"
        "{\"name\":\"pick\",\"op\":\"top_k\",\"in\":[\"t\"],\"out\":[\"v\",\"idx\"]},"
        "{\"name\":\"oh\",\"op\":\"one_hot\",\"in\":[\"idx\",\"v\"],\"out\":[\"mask\"]},"
        "{\"name\":\"bc\",\"op\":\"broadcast\",\"in\":[\"t\"],\"out\":[\"wide\"]},"
        "{\"name\":\"mm\",\"op\":\"mul\",\"in\":[\"wide\",\"mask\"],\"out\":[\"m\"]},"
        "{\"name\":\"sum\",\"op\":\"einsum\",\"spec\":\"bke->be\",\"in\":[\"m\"],"
        "\"out\":[\"g\"]},"
        "{\"name\":\"res\",\"op\":\"add\",\"in\":[\"x\",\"g\"],\"out\":[\"y\"]}]}}";
    const char *base[] = {"model_name=default",    "graph=mixtral",
                          "num_experts=4",         "num_experts_per_tok=2",
                          "per_device_batch_size=2", "base_emb_dim=4",
                          "base_num_decoder_layers=1", "remat_policy=full",
                          NULL};
    fx_run_t *f = fx_analyze_with(graph, base, NULL);
    assert_int_equal(f->r.layers[0].forward_flops, 144);
    assert_int_equal(f->r.layers[0].backward_flops, 148);
    fx_free(f);
    /* shape rules, each broken once */
    static const struct {
        const char *from, *to, *text;
    } bad[] = {
        {"\"idx\":{\"shape\":[\"b\",\"k\"],\"dtype\":\"int32\"}",
         "\"idx\":{\"shape\":[\"b\",\"k\"],\"dtype\":\"fp32\"}", "must be int32"},
        {"\"v\":{\"shape\":[\"b\",\"k\"]", "\"v\":{\"shape\":[\"b\",\"e\"]",
         "values and indices"},
        {"\"wide\":{\"shape\":[\"b\",\"k\",\"e\"],\"dtype\":\"act\"}",
         "\"wide\":{\"shape\":[\"b\",\"k\",\"e\"],\"dtype\":\"fp32\"}",
         "do not broadcast"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[4096];
        const char *at = strstr(graph, bad[i].from);
        assert_non_null(at);
        snprintf(text, sizeof text, "%.*s%s%s", (int)(at - graph), graph, bad[i].to,
                 at + strlen(bad[i].from));
        remat_graph_t *g = NULL;
        remat_error_t err;
        remat_error_init(&err);
        assert_int_not_equal(remat_graph_load_string(text, "<t>", &g, &err), REMAT_OK);
        if (!strstr(err.text, bad[i].text)) {
            fail_msg("case %zu: '%s' lacks '%s'", i, err.text, bad[i].text);
        }
    }
}

/* The tiny sizes of the built-in graphs' hand-worked cases: batch 1, seq 4,
   embed 8, 2 heads, 4 experts, top-2, expert MLP 16. */
#define TINY_BUILTIN                                                                           \
    "model_name=default", "per_device_batch_size=1", "max_target_length=4", "base_emb_dim=8",  \
        "base_num_query_heads=2", "base_num_kv_heads=2", "head_dim=4", "base_mlp_dim=16",      \
        "base_moe_mlp_dim=16", "num_experts=4", "num_experts_per_tok=2", "vocab_size=16",      \
        "base_num_decoder_layers=2", "remat_policy=full"

/* Mixtral's dense path with capacity_factor 1: capacity = int(max(ceil(4 x
   2 / 4) x 1, 1)) = 2 slots per expert and sequence. bf16 bytes: masks
   [b,s,x,c] = 32 elements, 64 B (combine) and 32 B (dispatch, bool);
   dispatched tokens [x,b,c,e] 64 elements, 128 B; an expert activation
   [x,b,c,m] 128 elements, 256 B; the combined output [b,s,e] 64 B. FLOPs
   (their re-runs under full remat): dispatch 2 b s e x c = 512, each
   expert matmul in 2 x b c e m = 2048 (the combine's output is read by no
   backward: not re-run). */
static void test_dense_path_by_hand(void **state) {
    (void)state;
    const char *args[] = {TINY_BUILTIN, "graph=mixtral", "sparse_matmul=false",
                          "capacity_factor=1", NULL};
    fx_run_t *f = fx_analyze_ok(NULL, args);
    assert_string_equal(f->graph->source, "built-in graph 'mixtral.flash.dense_moe'");
    const struct {
        const char *name;
        uint64_t bytes, flops;
    } want[] = {{"combine_mask", 64, 0},   {"dispatch_mask", 32, 0}, {"dispatched", 128, 512},
                {"moe_gate", 256, 2048},   {"moe_up", 256, 2048},    {"moe_out", 128, 2048},
                {"moe_y", 64, 0}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const remat_tensor_row_t *t = row(f, 0, want[i].name);
        if (t->bytes != want[i].bytes || (want[i].flops && t->recompute_flops != want[i].flops)) {
            fail_msg("%s: %llu B, %llu FLOPs", want[i].name, (unsigned long long)t->bytes,
                     (unsigned long long)t->recompute_flops);
        }
    }
    fx_free(f);
}

/* MLA at q_lora_rank 4, kv_lora_rank 4, qk_nope 4, qk_rope 2, v_head 4, 2
   heads (bf16 bytes): q_a [1,4,4] 32 B; the key/value down-projection with
   the RoPE key [1,4,6] 48 B; its normed main part [1,4,4] 32 B; q and k
   [1,4,2,6] 96 B; the key/value up-projection [1,4,2,8] 128 B, one einsum
   as in MaxText, split into the key's no-RoPE part and v [1,4,2,4] 64 B
   each; the RoPE key copied to both heads [1,4,2,2] 32 B; the kernel's
   output [1,2,4,4] 64 B. FLOPs (re-runs): wq_a 2*4*8*4 = 256, wq_b
   2*4*4*2*6 = 384, wkv_a 2*4*8*6 = 384, wkv_b 2*4*4*2*8 = 512 (the split
   none), the flash kernel causal 2*2*4*4*(6 + 4)/2 = 320.
   The attention's params: 32 + 4 + 48 + 48 + 4 + 64 + 64 + 8 = 272. */
static void test_mla_by_hand(void **state) {
    (void)state;
    const char *args[] = {TINY_BUILTIN, "graph=deepseek", "attention_type=mla",
                          "q_lora_rank=4", "kv_lora_rank=4", "qk_nope_head_dim=4",
                          "qk_rope_head_dim=2", "v_head_dim=4", "first_num_dense_layers=2",
                          "shared_experts=1", NULL};
    fx_run_t *f = fx_analyze_ok(NULL, args);
    const struct {
        const char *name;
        uint64_t bytes, flops;
    } want[] = {{"q_a", 32, 256},    {"kv_a_out", 48, 384}, {"kv_n", 32, 0},
                {"q_raw", 96, 384},  {"k", 96, 0},          {"kv_up", 128, 512},
                {"v", 64, 0},        {"k_nope", 64, 0},     {"k_pe_heads", 32, 0},
                {"ctx", 64, 320}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const remat_tensor_row_t *t = row(f, 0, want[i].name);
        if (t->bytes != want[i].bytes || (want[i].flops && t->recompute_flops != want[i].flops)) {
            fail_msg("%s: %llu B, %llu FLOPs", want[i].name, (unsigned long long)t->bytes,
                     (unsigned long long)t->recompute_flops);
        }
    }
    const remat_block_t *b = remat_profile_block(&f->r, 0);
    uint64_t attention = 0;
    static const char *const params[] = {"ln1_scale", "wq_a", "q_norm_scale", "wq_b",
                                         "wkv_a",     "kv_norm_scale", "wkv_b", "wo"};
    for (size_t i = 0; i < sizeof params / sizeof params[0]; i++) {
        const remat_tensor_t *t = &b->tensors[remat_block_find_tensor(b, params[i])];
        uint64_t n = 1;
        for (size_t j = 0; j < t->rank; j++) {
            n *= f->r.dim_size[t->dim[j]];
        }
        attention += n;
    }
    assert_int_equal(attention, 272);
    fx_free(f);
}


/* Llama 4's MoE combine, bske->bse, is a one-operand einsum (MaxText:
   einsum("BKE,BK->BE", inter_f32, ones_like(weights))): its backward reads
   no activation, so nothing is kept for it, and it is no dot for the
   predicates. Under minimal a layer keeps 171,966,464 bytes at batch 1 x
   2048 on one device (JAX's count; keeping moe_back_f32, rebuilt from
   moe_out, was 192,937,984: +12.2%); under full the expert down projection
   is not re-run for it (171.8 GFLOP a layer less). */
static void test_one_operand_einsum(void **state) {
    (void)state;
    const char *minimal[] = {"model_name=llama4-17b-16e", "per_device_batch_size=1",
                             "remat_policy=minimal", NULL};
    fx_run_t *f = fx_analyze_ok(NULL, minimal);
    assert_int_equal(f->r.layers[0].saved_device_bytes, 171966464);
    for (size_t k = 0; k < f->graph->nkinds; k++) {
        const remat_block_t *b = &f->graph->kinds[k].block;
        for (size_t j = 0; j < b->nops; j++) {
            const remat_op_t *op = &b->ops[j];
            if (op->kind == REMAT_OP_EINSUM && op->nin == 1) {
                assert_int_equal(op->nsaves, 0);
                assert_false(remat_op_einsum_no_batch_dims(op));
            }
        }
    }
    fx_free(f);
    const char *full[] = {"model_name=llama4-17b-16e", "per_device_batch_size=1",
                          "remat_policy=full", NULL};
    f = fx_analyze_ok(NULL, full);
    assert_int_equal(f->r.layers[0].recompute_flops, 988559745024ull);
    fx_free(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_operand_einsum),
        cmocka_unit_test(test_tiny_moe_by_hand),
        cmocka_unit_test(test_tiny_moe_backward_by_hand),
        cmocka_unit_test(test_tiny_moe_forward_peak_by_hand),
        cmocka_unit_test(test_expert_parallel_by_hand),
        cmocka_unit_test(test_expert_parallel_path),
        cmocka_unit_test(test_first_dense_then_moe),
        cmocka_unit_test(test_every_and_stages),
        cmocka_unit_test(test_stack_errors),
        cmocka_unit_test(test_preset_param_counts),
        cmocka_unit_test(test_tied_qwen3_counts),
        cmocka_unit_test(test_olmo3_counts),
        cmocka_unit_test(test_gemma4_counts),
        cmocka_unit_test(test_gemma4_moe_counts),
        cmocka_unit_test(test_envy_counts),
        cmocka_unit_test(test_gemma4_global_keeps_offloads),
        cmocka_unit_test(test_moe_kept_sets),
        cmocka_unit_test(test_gather_group),
        cmocka_unit_test(test_gather_group_unit),
        cmocka_unit_test(test_grouped_backward),
        cmocka_unit_test(test_grouped_padding_time),
        cmocka_unit_test(test_solver_on_stack),
        cmocka_unit_test(test_attention_window),
        cmocka_unit_test(test_mtp),
        cmocka_unit_test(test_routing_kinds),
        cmocka_unit_test(test_dense_path_by_hand),
        cmocka_unit_test(test_mla_by_hand),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
