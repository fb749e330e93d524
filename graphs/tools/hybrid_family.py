#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the Qwen3-Next graph (graphs/qwen3_next.flash.json): MaxText's
decoder_block qwen3_next (and qwen3_5, whose text decoder is the same
layers: models/qwen3_5.py subclasses them) at e591f30, models/qwen3.py
(Qwen3NextGatedDeltaNet, jax_chunk_gated_delta_rule, Qwen3NextFullAttention,
Qwen3NextSparseMoeBlock, Qwen3NextScannableBlock), layers/attentions.py (the
gated query of is_qwen3_hybrid) and layers/moe.py. It is built from the
pieces of moe_graphs.py (the routed experts, the dense MLP) and
moe_family_a.py's editing helpers; run it with python3 from anywhere.

The gated DeltaNet's chunked recurrence (a lax.scan over chunks of
gdn_chunk_size tokens inside a shard_map) has ops the op kinds do not name
(a triangular solve, a cumulative sum, exp, softplus, the scan). The graph
follows what JAX keeps for its backward instead (jax.vjp's residuals of
jax_chunk_gated_delta_rule): every per-chunk array the backward reads is a
tensor of its shape and dtype, stacked over the chunks as the scan stacks
its residuals, made by an op whose rule (or `saves`) keeps it. The
stand-ins are named in the graph's description and in docs/config.md.
"""
import copy
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ beside the generators
from moe_graphs import T, O, moe_part, dense_mlp, moe_graph, write, stacked, SHARED_MLP  # noqa: E402
from moe_family_a import op, insert_after, redirect, residual  # noqa: E402

BSE = ["batch", "seq", "embed"]
# the gated DeltaNet's shard_map: batch over activation_kv_batch, value
# heads over activation_kv_heads (models/qwen3.py, qkv_pspec)
KVB, KVH = "activation_kv_batch", "activation_kv_heads"

# The DeltaNet's activations are sharded by heads, as MaxText constrains
# mixed_qkvz (KV_HEAD), so that the reshapes between the flat widths and
# [heads, head_dim] hold under tensor parallelism; its projection weights'
# gdn_head axis has mlp's rules at e591f30 (base.yml: fsdp_transpose,
# tensor, tensor_sequence, autoregressive), which they take here.
GDN_DIMS = {
    "gdn_qkvz": {"from": "gdn_qkvz_dim", "axis": KVH, "weight_axis": "mlp"},
    "gdn_ba": {"from": "gdn_ba_dim", "axis": KVH, "weight_axis": "mlp"},
    "gdn_key": {"from": "gdn_key_dim", "axis": KVH},
    "gdn_value": {"from": "gdn_value_dim", "axis": KVH, "weight_axis": "mlp"},
    "gdn_conv": {"from": "gdn_conv_dim", "axis": KVH},
    "gdn_kernel": {"from": "gdn_conv_kernel_dim"},
    "gdn_k_heads": {"from": "gdn_num_key_heads", "axis": KVH},
    "gdn_rep": {"from": "gdn_num_value_heads", "div": "gdn_num_key_heads"},
    "gdn_heads": {"from": "gdn_num_value_heads", "axis": KVH},
    "gdn_k_dim": {"from": "gdn_key_head_dim"},
    "gdn_v_dim": {"from": "gdn_value_head_dim"},
    "gdn_chunks": {"from": "gdn_num_chunks"},
    "gdn_chunk": {"from": "gdn_chunk_size"},
    "gdn_chunk_k": {"from": "gdn_chunk_size"},
    "gdn_batch": {"from": "per_device_batch_size", "axis": KVB},
    "two": {"value": 2},
}


def gdn_prelude(t, ops):
    """Qwen3NextGatedDeltaNet up to the delta rule's inputs: the norm, the
    qkvz and ba projections, their split, the depthwise causal conv over
    q, k, v with its fp32 SiLU, q and k repeated to the value heads, and
    the gates beta = sigmoid(b), g = -exp(A_log) softplus(a + dt_bias)."""
    t["x"] = T(BSE)  # MaxText does not tag the qwen3_next layer's input
    t["ln1_scale"] = T(["embed"], "weight", param=True, axes=["norm"])
    t["xn"] = T(BSE)
    t["ln1_rstd"] = T(["batch", "seq"], "fp32")
    t["w_qkvz"] = T(["embed", "gdn_qkvz"], "weight", param=True)
    t["w_ba"] = T(["embed", "gdn_ba"], "weight", param=True)
    t["qkvz"] = T(["batch", "seq", "gdn_qkvz"])
    t["ba"] = T(["batch", "seq", "gdn_ba"])
    for n in ("q0", "k0"):
        t[n] = T(["batch", "seq", "gdn_key"])
    for n in ("v0", "z"):
        t[n] = T(["batch", "seq", "gdn_value"])
    t["qkv"] = T(["batch", "seq", "gdn_conv"])
    # nnx.Conv's depthwise kernel (kernel, 1, channels)
    t["w_conv"] = T(["gdn_kernel", "gdn_conv"], "weight", param=True, axes=[None, None])
    t["conv"] = T(["batch", "seq", "gdn_conv"])
    t["conv_f32"] = T(["batch", "seq", "gdn_conv"], "fp32")
    t["conv_act"] = T(["batch", "seq", "gdn_conv"], "fp32")
    t["qkv_c"] = T(["batch", "seq", "gdn_conv"])
    for n in ("q_c", "k_c"):
        t[n] = T(["batch", "seq", "gdn_key"])
    t["v_c"] = T(["batch", "seq", "gdn_value"])
    for n in ("q_kh", "k_kh"):
        t[n] = T(["batch", "seq", "gdn_k_heads", "gdn_k_dim"])
    for n in ("q_rep5", "k_rep5"):
        t[n] = T(["batch", "seq", "gdn_k_heads", "gdn_rep", "gdn_k_dim"])
    for n in ("q_rep", "k_rep"):
        t[n] = T(["gdn_batch", "seq", "gdn_heads", "gdn_k_dim"])
    t["v_h"] = T(["gdn_batch", "seq", "gdn_heads", "gdn_v_dim"])
    HS = ["gdn_batch", "seq", "gdn_heads"]
    for n in ("b_gate", "a_gate", "beta", "a_dt", "a_soft", "g"):
        t[n] = T(HS)
    t["dt_bias"] = T(["gdn_heads"], "weight", param=True, axes=[None])
    t["a_log"] = T(["gdn_heads"], "weight", param=True, axes=[None])
    ops += [
        O("pre_attention_norm", "rmsnorm", ["x", "ln1_scale"], ["xn", "ln1_rstd"]),
        O("in_proj_qkvz", "einsum", ["xn", "w_qkvz"], ["qkvz"], spec="bse,ef->bsf"),
        O("in_proj_ba", "einsum", ["xn", "w_ba"], ["ba"], spec="bse,ef->bsf"),
        O("qkvz_split", "split", ["qkvz"], ["q0", "k0", "v0", "z"]),
        O("qkv_concat", "concat", ["q0", "k0", "v0"], ["qkv"]),
        # out[b,s,c] = sum_k in[b,s-k,c] w[k,c]: 2 b s c k FLOPs; its
        # backward reads the input (MaxText's causally padded copy of it)
        O("conv1d", "einsum", ["qkv", "w_conv"], ["conv"], spec="bsc,kc->bsc"),
        O("conv_upcast", "cast", ["conv"], ["conv_f32"]),
        O("conv_silu", "silu", ["conv_f32"], ["conv_act"]),
        O("conv_downcast", "cast", ["conv_act"], ["qkv_c"]),
        O("qkv_split", "split", ["qkv_c"], ["q_c", "k_c", "v_c"]),
        O("q_heads", "reshape", ["q_c"], ["q_kh"]),
        O("k_heads", "reshape", ["k_c"], ["k_kh"]),
        O("q_repeat", "broadcast", ["q_kh"], ["q_rep5"]),
        O("k_repeat", "broadcast", ["k_kh"], ["k_rep5"]),
        O("q_repeat_heads", "reshape", ["q_rep5"], ["q_rep"]),
        O("k_repeat_heads", "reshape", ["k_rep5"], ["k_rep"]),
        O("v_heads", "reshape", ["v_c"], ["v_h"]),
        O("ba_split", "split", ["ba"], ["b_gate", "a_gate"]),
        O("beta_sigmoid", "sigmoid", ["b_gate"], ["beta"]),
        O("a_dt_bias", "add", ["a_gate", "dt_bias"], ["a_dt"]),
        # softplus: its backward reads its input, as silu's does
        O("a_softplus", "silu", ["a_dt"], ["a_soft"]),
        O("g_decay", "mul", ["a_soft", "a_log"], ["g"]),
    ]


def chunked(name, shape, dtype="act"):
    return T(shape, dtype)


def gdn_core(t, ops):
    """jax_chunk_gated_delta_rule on q_rep, k_rep, v_h, g, beta, its output
    core_out [b,s,heads,v_dim]. Stage 1: L2 norms of q and k, the query
    scale, the [b,n,h,c,d] chunk layout. Stage 2 (every chunk at once): the
    decayed k_beta k^T, its triangular inverse A, u = A v_beta, w = A
    k_beta exp(g). Stage 3, the scan over chunks: its per-chunk values are
    tensors over all chunks, [b,n,...], as the scan stacks its residuals;
    the state h [b,n,h,k_dim,v_dim] in fp32."""
    B, N, H, C, CK = "gdn_batch", "gdn_chunks", "gdn_heads", "gdn_chunk", "gdn_chunk_k"
    D, V = "gdn_k_dim", "gdn_v_dim"
    CD, CV, CC, DV = [B, N, H, C, D], [B, N, H, C, V], [B, N, H, C, CK], [B, N, H, D, V]
    HS = [B, "seq", H]
    t["q_l2"] = T([B, "seq", H, D])
    t["k_l2"] = T([B, "seq", H, D])
    t["q_l2_rstd"] = T(HS)
    t["k_l2_rstd"] = T(HS)
    t["q_sc"] = T([B, "seq", H, D])
    t["q_cv"] = T([B, N, C, H, D])
    t["k_cv"] = T([B, N, C, H, D])
    t["v_cv"] = T([B, N, C, H, V])
    t["g_f32"] = T(HS, "fp32")
    t["g_cv"] = T([B, N, C, H], "fp32")
    t["beta_cv"] = T([B, N, C, H])
    t["q_ch"] = T(CD)
    t["k_ch"] = T(CD)
    t["v_ch"] = T(CV)
    t["g_ch"] = T([B, N, H, C], "fp32")
    t["beta_ch"] = T([B, N, H, C])
    t["g_cum"] = T([B, N, H, C], "fp32")
    ops += [
        # use_qk_norm_in_gdn: x rsqrt(sum x^2 + eps), no scale, in bf16
        O("q_l2norm", "rmsnorm", ["q_rep"], ["q_l2", "q_l2_rstd"]),
        O("k_l2norm", "rmsnorm", ["k_rep"], ["k_l2", "k_l2_rstd"]),
        O("q_scale", "scale", ["q_l2"], ["q_sc"], value=128 ** -0.5),
        O("q_to_chunks", "reshape", ["q_sc"], ["q_cv"]),
        O("k_to_chunks", "reshape", ["k_l2"], ["k_cv"]),
        O("v_to_chunks", "reshape", ["v_h"], ["v_cv"]),
        O("g_upcast", "cast", ["g"], ["g_f32"]),
        O("g_to_chunks", "reshape", ["g_f32"], ["g_cv"]),
        O("beta_to_chunks", "reshape", ["beta"], ["beta_cv"]),
        O("q_chunk_layout", "transpose", ["q_cv"], ["q_ch"]),
        O("k_chunk_layout", "transpose", ["k_cv"], ["k_ch"]),
        O("v_chunk_layout", "transpose", ["v_cv"], ["v_ch"]),
        O("g_chunk_layout", "transpose", ["g_cv"], ["g_ch"]),
        O("beta_chunk_layout", "transpose", ["beta_cv"], ["beta_ch"]),
        # cumsum over the chunk: an add per element, its backward (a
        # reversed cumsum) reads nothing, as scale's
        O("g_cumsum", "scale", ["g_ch"], ["g_cum"], value=1.0),
    ]
    # stage 2
    t["beta_k"] = T(CD)
    t["k_beta"] = T(CD)
    t["k_ch_t"] = T([B, N, H, D, C])
    t["kk"] = T(CC)
    t["kk_f32"] = T(CC, "fp32")
    t["g_diff"] = T(CC, "fp32")
    t["decay"] = T(CC, "fp32")
    t["kk_decay"] = T(CC, "fp32")
    t["kk_masked"] = T(CC, "fp32")
    t["a_inv"] = T(CC, "fp32")
    t["beta_v"] = T(CV)
    t["v_beta"] = T(CV)
    t["v_beta_f32"] = T(CV, "fp32")
    t["u"] = T(CV, "fp32")
    t["u_bf"] = T(CV)
    t["k_beta_f32"] = T(CD, "fp32")
    t["exp_g"] = T([B, N, H, C], "fp32")
    t["exp_g_k"] = T(CD, "fp32")
    t["k_beta_g"] = T(CD, "fp32")
    t["w"] = T(CD, "fp32")
    t["w_bf"] = T(CD)
    ops += [
        # beta[..., None]: the product keeps the keys (and beta's [b,n,h,c,1])
        O("beta_to_keys", "broadcast", ["beta_ch"], ["beta_k"]),
        O("k_times_beta", "mul", ["k_ch", "beta_k"], ["k_beta"], saves=["k_ch"]),
        O("k_transpose", "transpose", ["k_ch"], ["k_ch_t"]),
        O("kk", "einsum", ["k_beta", "k_ch_t"], ["kk"], spec="bnhcd,bnhde->bnhce"),
        O("kk_upcast", "cast", ["kk"], ["kk_f32"]),
        # g_cum[..., :, None] - g_cum[..., None, :], masked: an op a pair
        O("g_pair_diff", "broadcast", ["g_cum"], ["g_diff"]),
        # exp: its backward reads its output, as sigmoid's; JAX keeps the
        # masked difference too
        O("decay_exp", "sigmoid", ["g_diff"], ["decay"], saves=["g_diff", "decay"]),
        O("kk_decayed", "mul", ["kk_f32", "decay"], ["kk_decay"]),
        O("kk_strict_lower", "scale", ["kk_decay"], ["kk_masked"], value=1.0),
        # solve_triangular(I + S, I): its backward reads its operand and
        # its output (A)
        O("triangular_inverse", "softmax", ["kk_masked"], ["a_inv"], saves=["kk_masked", "a_inv"]),
        O("beta_to_values", "broadcast", ["beta_ch"], ["beta_v"]),
        O("v_times_beta", "mul", ["v_ch", "beta_v"], ["v_beta"], saves=["v_ch"]),
        O("v_beta_upcast", "cast", ["v_beta"], ["v_beta_f32"]),
        O("u_wy", "einsum", ["a_inv", "v_beta_f32"], ["u"], spec="bnhce,bnhev->bnhcv"),
        O("u_downcast", "cast", ["u"], ["u_bf"]),
        O("k_beta_upcast", "cast", ["k_beta"], ["k_beta_f32"]),
        O("exp_g_cum", "sigmoid", ["g_cum"], ["exp_g"]),
        O("exp_g_to_keys", "broadcast", ["exp_g"], ["exp_g_k"]),
        O("k_beta_decayed", "mul", ["k_beta_f32", "exp_g_k"], ["k_beta_g"], saves=["k_beta_f32"]),
        O("w_wy", "einsum", ["a_inv", "k_beta_g"], ["w"], spec="bnhce,bnhed->bnhcd"),
        O("w_downcast", "cast", ["w"], ["w_bf"]),
    ]
    # stage 3: the scan's body over all chunks
    t["w_f32"] = T(CD, "fp32")
    t["u_f32"] = T(CV, "fp32")
    t["k_f32"] = T(CD, "fp32")
    t["k_dec"] = T(CD, "fp32")
    t["state"] = T(DV, "fp32")
    t["v_prime"] = T(CV, "fp32")
    t["v_new"] = T(CV, "fp32")
    t["q_f32"] = T(CD, "fp32")
    t["q_g"] = T(CD, "fp32")
    t["attn_inter"] = T(CV, "fp32")
    t["qk"] = T(CC)
    t["qk_f32"] = T(CC, "fp32")
    t["decay_in"] = T(CC, "fp32")
    t["attn_intra"] = T(CC, "fp32")
    t["attn_term"] = T(CV, "fp32")
    t["o_ch"] = T(CV, "fp32")
    t["o_cv"] = T([B, N, C, H, V], "fp32")
    t["o_f32"] = T([B, "seq", H, V], "fp32")
    t["core_out"] = T([B, "seq", H, V])
    ops += [
        O("w_upcast", "cast", ["w_bf"], ["w_f32"]),
        O("u_upcast", "cast", ["u_bf"], ["u_f32"]),
        O("k_upcast", "cast", ["k_ch"], ["k_f32"]),
        # k exp(g_last - g): the keys' decay to the chunk's end
        O("k_state_decay", "mul", ["k_f32", "exp_g_k"], ["k_dec"], saves=["k_f32"]),
        # the state each chunk reads: h, the sum of the decayed k^T v_new
        # of the chunks before (the scan's carry, stacked)
        O("state", "einsum", ["k_dec", "u_f32"], ["state"], spec="bnhcd,bnhcv->bnhdv"),
        O("v_prime", "einsum", ["w_f32", "state"], ["v_prime"], spec="bnhcd,bnhdv->bnhcv"),
        O("v_new", "add", ["u_f32", "v_prime"], ["v_new"]),
        O("q_upcast", "cast", ["q_ch"], ["q_f32"]),
        O("q_decayed", "mul", ["q_f32", "exp_g_k"], ["q_g"], saves=["q_f32"]),
        O("attn_inter", "einsum", ["q_g", "state"], ["attn_inter"], spec="bnhcd,bnhdv->bnhcv"),
        O("qk", "einsum", ["q_ch", "k_ch"], ["qk"], spec="bnhcd,bnhed->bnhce"),
        O("qk_upcast", "cast", ["qk"], ["qk_f32"]),
        O("decay_exp_intra", "sigmoid", ["g_diff"], ["decay_in"]),
        O("attn_intra", "mul", ["qk_f32", "decay_in"], ["attn_intra"]),
        O("attn_term", "einsum", ["attn_intra", "v_new"], ["attn_term"], spec="bnhce,bnhev->bnhcv"),
        O("chunk_out", "add", ["attn_inter", "attn_term"], ["o_ch"]),
        O("o_token_layout", "transpose", ["o_ch"], ["o_cv"]),
        O("o_tokens", "reshape", ["o_cv"], ["o_f32"]),
        O("core_downcast", "cast", ["o_f32"], ["core_out"]),
    ]


def gdn_output(t, ops):
    """Qwen3NextRMSNormGated (an RMSNorm over v_dim, times silu(z) in fp32)
    and out_proj, the attention residual and the pre-MLP norm."""
    HV = ["gdn_batch", "seq", "gdn_heads", "gdn_v_dim"]
    t["gdn_norm_scale"] = T(["gdn_v_dim"], "weight", param=True, axes=["norm"])
    t["core_n"] = T(HV)
    t["core_rstd"] = T(["gdn_batch", "seq", "gdn_heads"], "fp32")
    t["z_h"] = T(HV)
    t["z_f32"] = T(HV, "fp32")
    t["z_act"] = T(HV, "fp32")
    t["gated_f32"] = T(HV, "fp32")
    t["gated"] = T(HV)
    t["gated_flat"] = T(["batch", "seq", "gdn_value"])
    t["w_out"] = T(["gdn_value", "embed"], "weight", param=True)
    t["attn"] = T(BSE)
    t["h1"] = T(BSE)
    t["ln2_scale"] = T(["embed"], "weight", param=True, axes=["norm"])
    t["hn"] = T(BSE)
    t["ln2_rstd"] = T(["batch", "seq"], "fp32")
    ops += [
        O("gated_norm", "rmsnorm", ["core_out", "gdn_norm_scale"], ["core_n", "core_rstd"]),
        O("z_heads", "reshape", ["z"], ["z_h"]),
        O("z_upcast", "cast", ["z_h"], ["z_f32"]),
        O("z_silu", "silu", ["z_f32"], ["z_act"]),
        O("gate_product", "mul", ["core_n", "z_act"], ["gated_f32"]),
        O("gated_downcast", "cast", ["gated_f32"], ["gated"]),
        O("gated_flat", "reshape", ["gated"], ["gated_flat"]),
        O("out_proj", "einsum", ["gated_flat", "w_out"], ["attn"], spec="bsf,fe->bse"),
        O("attention_residual", "add", ["x", "attn"], ["h1"]),
        O("pre_mlp_norm", "rmsnorm", ["h1", "ln2_scale"], ["hn", "ln2_rstd"]),
    ]


def gated_attention(t, ops):
    """Qwen3NextFullAttention: the query projection twice head_dim wide,
    split into the query and a gate; per-head RMSNorm of q and k, RoPE
    (partial_rotary_factor of head_dim in MaxText; the rope op over all of
    it here), the query times head_dim^-0.5, the flash kernel, the output
    times sigmoid(gate), out_proj over heads x head_dim."""
    Q = ["batch", "seq", "heads", "head_dim"]
    KV = ["batch", "seq", "kv_heads", "head_dim"]
    t["x"] = T(BSE)  # MaxText does not tag the qwen3_next layer's input
    t["ln1_scale"] = T(["embed"], "weight", param=True, axes=["norm"])
    t["xn"] = T(BSE)
    t["ln1_rstd"] = T(["batch", "seq"], "fp32")
    t["wq"] = T(["embed", "heads", "two", "head_dim"], "weight", param=True,
                axes=["embed", "q_heads", None, "kv"])
    t["wk"] = T(["embed", "kv_heads", "head_dim"], "weight", param=True)
    t["wv"] = T(["embed", "kv_heads", "head_dim"], "weight", param=True)
    t["qg_raw"] = T(["batch", "seq", "heads", "two", "head_dim"])
    t["q_raw"] = T(Q)
    t["gate_raw"] = T(Q)
    t["k_raw"] = T(KV)
    t["v"] = T(KV, ck="value_proj")
    t["q_norm_scale"] = T(["head_dim"], "weight", param=True, axes=["norm"])
    t["k_norm_scale"] = T(["head_dim"], "weight", param=True, axes=["norm"])
    t["q_n"] = T(Q)
    t["q_n_rstd"] = T(["batch", "seq", "heads"], "fp32")
    t["k_n"] = T(KV)
    t["k_n_rstd"] = T(["batch", "seq", "kv_heads"], "fp32")
    t["q_rope_out"] = T(Q)
    t["q"] = T(Q, ck="query_proj")
    t["k"] = T(KV, ck="key_proj")
    t["q_t"] = T(["batch", "heads", "seq", "head_dim"])
    t["k_t"] = T(["batch", "kv_heads", "seq", "head_dim"])
    t["v_t"] = T(["batch", "kv_heads", "seq", "head_dim"])
    t["ctx"] = T(["batch", "heads", "seq", "head_dim"], ck="context")
    t["attn_lse"] = T(["batch", "heads", "seq"], "fp32", ck="context")
    t["attn_out"] = T(Q, ck="attention_out")
    t["gate_sig"] = T(Q)
    t["gated"] = T(Q)
    t["wo"] = T(["heads", "head_dim", "embed"], "weight", param=True, axes=["mlp", None, "embed"])
    t["attn"] = T(BSE, ck="out_proj")
    t["h1"] = T(BSE)
    t["ln2_scale"] = T(["embed"], "weight", param=True, axes=["norm"])
    t["hn"] = T(BSE)
    t["ln2_rstd"] = T(["batch", "seq"], "fp32")
    ops += [
        O("pre_attention_norm", "rmsnorm", ["x", "ln1_scale"], ["xn", "ln1_rstd"]),
        O("q_proj", "einsum", ["xn", "wq"], ["qg_raw"], spec="bse,ehgd->bshgd"),
        O("k_proj", "einsum", ["xn", "wk"], ["k_raw"], spec="bse,ehd->bshd"),
        O("v_proj", "einsum", ["xn", "wv"], ["v"], spec="bse,ehd->bshd"),
        O("query_gate_split", "split", ["qg_raw"], ["q_raw", "gate_raw"]),
        O("q_norm", "rmsnorm", ["q_raw", "q_norm_scale"], ["q_n", "q_n_rstd"]),
        O("k_norm", "rmsnorm", ["k_raw", "k_norm_scale"], ["k_n", "k_n_rstd"]),
        O("q_rope", "rope", ["q_n"], ["q_rope_out"]),
        O("k_rope", "rope", ["k_n"], ["k"]),
        O("q_pre_attn_scale", "scale", ["q_rope_out"], ["q"], value=256 ** -0.5),
        O("q_transpose", "transpose", ["q"], ["q_t"]),
        O("k_transpose", "transpose", ["k"], ["k_t"]),
        O("v_transpose", "transpose", ["v"], ["v_t"]),
        O("attention", "flash_attention", ["q_t", "k_t", "v_t"], ["ctx", "attn_lse"], causal=True,
          layout="bhsd"),
        O("context_transpose", "transpose", ["ctx"], ["attn_out"]),
        O("gate_sigmoid", "sigmoid", ["gate_raw"], ["gate_sig"]),
        O("output_gate", "mul", ["attn_out", "gate_sig"], ["gated"]),
        O("out_proj", "einsum", ["gated", "wo"], ["attn"], spec="bshd,hde->bse"),
        O("attention_residual", "add", ["x", "attn"], ["h1"]),
        O("pre_mlp_norm", "rmsnorm", ["h1", "ln2_scale"], ["hn", "ln2_rstd"]),
    ]


def sparse_moe(t, ops):
    """Qwen3NextSparseMoeBlock: the routed experts (a softmax over the top-k
    and norm_topk_prob, as Qwen3-MoE's), the shared expert (a gated MLP of
    shared_experts x base_moe_mlp_dim) and its gate sigmoid(hn . w) [b,s]."""
    routed = moe_part(t, ops, "hn", ["embed", None], "softmax")
    redirect(t, ops, "router_softmax", "topk_w", "topk_softmax")
    insert_after(ops, "router_softmax",
                 [O("norm_topk_prob", "scale", ["topk_softmax"], ["topk_w"], value=1.0)])
    shared = dense_mlp(t, ops, "hn", "shared_mlp", "shared_")
    t["w_shared_gate"] = T(["embed"], "weight", param=True, axes=["embed"])
    t["expert_gate"] = T(["batch", "seq"])
    t["expert_gate_sig"] = T(["batch", "seq"])
    t["expert_gate_b"] = T(BSE)
    t["shared_scaled"] = T(BSE)
    t["ffn_out"] = T(BSE)
    ops += [
        O("shared_expert_gate", "einsum", ["hn", "w_shared_gate"], ["expert_gate"], spec="bse,e->bs"),
        O("shared_expert_gate_sigmoid", "sigmoid", ["expert_gate"], ["expert_gate_sig"]),
        O("shared_expert_gate_broadcast", "broadcast", ["expert_gate_sig"], ["expert_gate_b"]),
        O("shared_expert_scale", "mul", [shared, "expert_gate_b"], ["shared_scaled"]),
        O("shared_add", "add", [routed, "shared_scaled"], ["ffn_out"]),
    ]
    return "ffn_out"


def qwen3_next():
    g = moe_graph("qwen3_next", (
        "Qwen3-Next (and Qwen3.5's text decoder) as MaxText runs it (decoder_block qwen3_next, qwen3_5): "
        "layer i (0-based) is a gated full-attention layer when (i + 1) is a multiple of "
        "inhomogeneous_layer_cycle_interval (4), else a gated DeltaNet (linear attention) layer; every layer "
        "ends in the sparse MoE block. Gated DeltaNet: RMSNorm, the qkvz and ba projections, a depthwise "
        "causal conv (gdn_conv_kernel_dim) over q, k, v with an fp32 SiLU, q and k repeated to the value "
        "heads and L2-normed, the gates beta = sigmoid(b) and g = -exp(A_log) softplus(a + dt_bias), the "
        "chunked delta rule over chunks of gdn_chunk_size (the decayed k_beta k^T, its triangular inverse, "
        "the WY factors, then the scan over chunks with its fp32 state [k_dim, v_dim] per head), the gated "
        "RMSNorm times silu(z) in fp32 and out_proj. The delta rule's per-chunk values are tensors over all "
        "chunks ([b, chunks, heads, ...]), as the scan stacks its residuals; ops the op kinds lack stand in "
        "by their residual rule: the cumulative sum a scale (reads nothing), exp a sigmoid (reads its "
        "output), softplus a silu (reads its input), the triangular solve a softmax that keeps its operand "
        "and output, the pairwise decay difference a broadcast; the scan's state is one einsum of the "
        "chunks' decayed keys and values (the update's FLOPs; the carried sum's adds are left out). Gated "
        "attention: the query projection twice head_dim wide split into the query and a gate, per-head "
        "RMSNorm on q and k, RoPE (MaxText rotates partial_rotary_factor of head_dim; the rope op here "
        "all of it), the query times head_dim^-0.5, the flash kernel, the output times sigmoid(gate), "
        "out_proj. MoE: router logits, top-k, a softmax over the chosen and norm_topk_prob, tokens permuted "
        "to the expert-parallel buffer, Megablox grouped matmuls, unpermuted and summed in fp32, plus the "
        "shared expert (a gated MLP of shared_experts x base_moe_mlp_dim) times sigmoid of its gate "
        "[b, s]; head as llama's (untied logits). MaxText scans the layers in blocks of "
        "inhomogeneous_layer_cycle_interval, a block under one remat, and so does the analysis (remat_unit "
        "4: under full one input kept per block, a block re-run at a time). Left out: the segment masks "
        "on the keys, values and g (jnp.where, fused), the conv input's causal padding (kernel - 1 rows), "
        "the last chunk's padding when gdn_chunk_size does not divide the sequence (refused), the "
        "load-balance loss, and Qwen3.5's vision encoder"), shared_mlp=SHARED_MLP)
    g["dims"].update(copy.deepcopy(GDN_DIMS))
    t, ops = {}, []
    gdn_prelude(t, ops)
    gdn_core(t, ops)
    gdn_output(t, ops)
    linear = residual(t, ops, sparse_moe(t, ops))
    t, ops = {}, []
    gated_attention(t, ops)
    full = residual(t, ops, sparse_moe(t, ops))
    return stacked(g, {"full": full, "linear": linear}, [
        {"name": "full", "block": "full", "every": "inhomogeneous_layer_cycle_interval"},
        {"name": "linear", "block": "linear"}])


if __name__ == "__main__":
    write("qwen3_next", qwen3_next())
