#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the Qwen3-MoE, dense Qwen3, gpt-oss and Llama 4 graphs (graphs/qwen3_moe.flash.json,
graphs/gpt_oss.flash.json, graphs/llama4.flash.json, graphs/llama4_qk_norm.flash.json,
graphs/qwen3.flash.json)
from the pieces of moe_graphs.py: llama's attention, the routed experts on
MaxText's sparse path and the dense (shared) MLP. Each family's differences
are applied to those pieces here (query/key norms, projection biases, the
query scale, router and expert biases, gpt-oss's clipped activation, Llama 4's
router that scales the tokens). The JSON files are the source the build
embeds; run this script with python3 from anywhere to rewrite them. The shapes
follow MaxText e591f30 (models/qwen3.py, models/gpt_oss.py, models/llama4.py,
layers/attentions.py, layers/moe.py); docs/graph-format.md describes the ops.
"""
import copy
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ beside the generators
import moe_graphs  # noqa: E402
from moe_graphs import (T, O, moe_part, llama_attention, dense_mlp, moe_graph, op_index,  # noqa: E402
                        write, base, stacked, SHARED_MLP)

BSE = ["batch", "seq", "embed"]
Q = ["batch", "seq", "heads", "head_dim"]
KV = ["batch", "seq", "kv_heads", "head_dim"]
TOK = moe_graphs.TOK5("moe_mlp")
TOK_AX = moe_graphs.AX5("activation_mlp_moe")
TOK_E = moe_graphs.TOK5("embed")
TOK_E_AX = moe_graphs.AX5(None)


# ---- editing a block's op list ----------------------------------------------

def op(ops, name):
    return ops[op_index(ops, name)]


def insert_after(ops, name, new):
    i = op_index(ops, name) + 1
    ops[i:i] = new


def replace(ops, name, new):
    """Op `name` gives way to the ops `new`, at its place in the run order."""
    i = op_index(ops, name)
    ops[i:i + 1] = new


def drop(t, ops, op_names=(), tensors=()):
    for n in op_names:
        del ops[op_index(ops, n)]
    for n in tensors:
        del t[n]


def redirect(t, ops, name, old, new):
    """Op `name` writes `new`, an unnamed tensor of `old`'s shape, dtype and
    axes, instead of `old`; the caller adds the ops that make `old` from it."""
    v = {k: copy.deepcopy(x) for k, x in t[old].items() if k != "checkpoint"}
    t[new] = v
    o = op(ops, name)
    o["out"] = [new if x == old else x for x in o["out"]]


# ---- attention ---------------------------------------------------------------

def attention(q_scale, qk_norm=None, rope=True, temperature=False, bias=False, sinks=False):
    """llama's attention up to the pre-MLP norm (hn), with:
    qk_norm "rms": per-head RMSNorm (scale [head_dim]) on q and k before RoPE (Qwen3);
            "global": one RMSNorm over all of q's heads and one over k's
                  (scale [heads, head_dim], statistics [batch, seq]) before
                  RoPE: Olmo 3's GlobalRMSNorm (normalizations.py);
            "l2": Llama 4's weightless L2 norm after RoPE, as an RMSNorm whose
                  scale is one [head_dim] vector of ones (see the description);
    rope False: a NoPE layer (Llama 4's global layers), no RoPE;
    q_scale: the query times query_pre_attn_scalar = head_dim^-0.5 (the value
             recorded for the presets' head_dim), a new array (Qwen3, gpt-oss and
             Llama 4 pass it; llama2's layer folds the scale into the init);
    temperature: Llama 4's NoPE-layer query temperature (query x a [b,s] scale);
    bias: q, k, v and output projection biases (gpt-oss);
    sinks: gpt-oss's per-head attention sink logits, a [heads] param the flash
           kernel reads (the graph's flash_attention takes only q, k, v, so the
           param is listed and counted but read by no op)."""
    t, ops = llama_attention(base["layer"])
    if bias:
        for w, name, shape in (("bq", "q_proj", Q), ("bk", "k_proj", KV), ("bv", "v_proj", KV)):
            out = op(ops, name)["out"][0]
            shape_dims = shape[2:]
            t[w] = T(shape_dims, "weight", param=True)
            redirect(t, ops, name, out, out + "_nobias")
            insert_after(ops, name, [O(name + "_bias", "add", [out + "_nobias", w], [out])])
        t["bo"] = T(["embed"], "weight", param=True)
        redirect(t, ops, "out_proj", "attn", "attn_nobias")
        insert_after(ops, "out_proj", [O("out_proj_bias", "add", ["attn_nobias", "bo"], ["attn"])])
    if sinks:
        t["sinks"] = T(["heads"], "weight", param=True, axes=[None])
    # the query: q_raw -> ... -> q (query_proj)
    qsteps, ksteps = [], []
    if qk_norm == "rms":
        t["q_norm_scale"] = T(["head_dim"], "weight", param=True, axes=["norm"])
        t["k_norm_scale"] = T(["head_dim"], "weight", param=True, axes=["norm"])
    if qk_norm == "global":
        t["q_norm_scale"] = T(["heads", "head_dim"], "weight", param=True, axes=["norm", None])
        t["k_norm_scale"] = T(["kv_heads", "head_dim"], "weight", param=True, axes=["norm", None])
    if qk_norm in ("rms", "global"):
        qsteps.append(("q_norm", "rmsnorm", "q_norm_scale", {}))
        ksteps.append(("k_norm", "rmsnorm", "k_norm_scale", {}))
    if rope:
        qsteps.append(("q_rope", "rope", None, {}))
        ksteps.append(("k_rope", "rope", None, {}))
    if qk_norm == "l2":
        t["qk_l2_unit"] = T(["head_dim"], "weight", param=True, axes=["norm"])
        qsteps.append(("q_l2_norm", "rmsnorm", "qk_l2_unit", {}))
        ksteps.append(("k_l2_norm", "rmsnorm", "qk_l2_unit", {}))
    if q_scale:
        qsteps.append(("q_pre_attn_scale", "scale", None, {"value": q_scale}))
    if temperature:
        qsteps.append(("q_temperature", "scale", None, {"value": 1.0}))

    def chain(src, dst, steps, shape, heads):
        new = []
        cur = src
        for i, (name, kind, param, kw) in enumerate(steps):
            out = dst if i + 1 == len(steps) else name + "_out"
            if out != dst:
                t[out] = T(shape)
            ins = [cur] + ([param] if param else [])
            outs = [out]
            if kind == "rmsnorm":
                rows = ["batch", "seq"] if qk_norm == "global" and param != "qk_l2_unit" else ["batch", "seq", heads]
                t[out + "_rstd"] = T(rows, "fp32")
                outs.append(out + "_rstd")
            new.append(O(name, kind, ins, outs, **copy.deepcopy(kw)))
            cur = out
        return new

    # the llama attention's q_rope/k_rope (q_raw -> q, k_raw -> k) give way
    # to the chains; with no step, what wrote q_raw or k_raw writes q or k
    for raw, dst, steps, shape, heads, old in (
            ("q_raw", "q", qsteps, Q, "heads", "q_rope"),
            ("k_raw", "k", ksteps, KV, "kv_heads", "k_rope")):
        if steps:
            replace(ops, old, chain(raw, dst, steps, shape, heads))
        else:
            drop(t, ops, [old], [raw])
            for o in ops:
                o["out"] = [dst if x == raw else x for x in o["out"]]
    return t, ops


def residual(t, ops, ffn_out):
    t["y"] = T(BSE)
    ops.append(O("mlp_residual", "add", ["h1", ffn_out], ["y"]))
    return {"inputs": ["x"], "outputs": ["y"], "tensors": t, "ops": ops}


# ---- Qwen3-MoE ---------------------------------------------------------------

def qwen3_moe():
    g = moe_graph("qwen3_moe", (
        "Qwen3-MoE decoder layer as MaxText runs it (decoder_block qwen3_moe): llama's attention with "
        "per-head RMSNorm on q and k (scale [head_dim]) before RoPE and the query times head_dim^-0.5, "
        "the flash kernel; every layer a routed MoE block on MaxText's default sparse path, no shared "
        "experts: router logits, top-k, a softmax over the chosen and their renormalization "
        "(norm_topk_prob), tokens permuted to the expert-parallel buffer, Megablox grouped matmuls over "
        "base_moe_mlp_dim, unpermuted and summed in fp32; head as llama's. Leaves out the load-balance "
        "loss (load_balance_loss_weight > 0, e.g. qwen3-235b-a22b: a softmax over all experts [b,s,E] "
        "and a one-hot [b,s,k,E] of int32 per layer)"))
    t, ops = attention(128 ** -0.5, qk_norm="rms")
    y = moe_part(t, ops, "hn", ["embed", None], "softmax")
    # norm_topk_prob: the top-k weights divided by their sum
    redirect(t, ops, "router_softmax", "topk_w", "topk_softmax")
    insert_after(ops, "router_softmax",
                 [O("norm_topk_prob", "scale", ["topk_softmax"], ["topk_w"], value=1.0)])
    g["layer"] = residual(t, ops, y)
    return g


# ---- Qwen3 (dense) -----------------------------------------------------------

def qwen3():
    """Qwen3DecoderLayer (models/qwen3.py): AttentionWithNorm, the MoE
    layer's attention, then llama's gated MLP (MlpBlock)."""
    g = copy.deepcopy(base)
    g["name"] = "qwen3"
    g["description"] = (
        "Qwen3 dense decoder layer as MaxText runs it (decoder_block qwen3): llama's attention with "
        "per-head RMSNorm on q and k (scale [head_dim]) before RoPE and the query times head_dim^-0.5, "
        "the flash kernel, then llama's gated SiLU MLP of base_mlp_dim; head as llama's (untied logits)")
    t, ops = attention(128 ** -0.5, qk_norm="rms")
    layer = base["layer"]
    first = next(i for i, o in enumerate(layer["ops"]) if o["name"] == "wi_0")
    mlp_ops = [o for o in layer["ops"][first:] if o["name"] != "mlp_residual"]
    for o in mlp_ops:
        for n in o["in"] + o["out"]:
            t.setdefault(n, copy.deepcopy(layer["tensors"][n]))
    ops += copy.deepcopy(mlp_ops)
    g["layer"] = residual(t, ops, "mlp_out")
    return g


# ---- gpt-oss -----------------------------------------------------------------

def gpt_oss_moe(t, ops, inp):
    """RoutedMoE with routed_bias, mlp_bias and gpt-oss's activation."""
    y = moe_part(t, ops, inp, ["embed", None], "softmax")
    # router bias [E] on the logits (GateLogit, use_bias=routed_bias)
    t["w_gate_bias"] = T(["experts"], "weight", param=True, axes=[None])
    redirect(t, ops, "gate", "router_logits", "router_logits_nobias")
    insert_after(ops, "gate", [O("gate_bias", "add", ["router_logits_nobias", "w_gate_bias"],
                                 ["router_logits"])])
    # expert biases: [E, H] (wi_0, wi_1) and [E, M] (wo) params, cast to the
    # compute dtype on entry to the expert block, then picked per routed row
    # by its expert (transform_bias: bias[selected_experts]) and added after
    # each grouped matmul
    for w, mm, out, dim, ax, rows_shape, rows_ax in (
            ("moe_wi_0", "moe_wi_0", "moe_gate", "moe_mlp", "activation_mlp", TOK, TOK_AX),
            ("moe_wi_1", "moe_wi_1", "moe_up", "moe_mlp", "activation_mlp", TOK, TOK_AX),
            ("moe_wo", "moe_wo", "moe_out", "embed", "activation_embed", TOK_E, TOK_E_AX)):
        b = w + "_bias"
        t[b] = T(["experts", dim], "weight", param=True, axes=["exp", ax])
        t[b + "_cast"] = T(["experts", dim], axes=["exp", ax])
        t[b + "_rows"] = T(rows_shape, axes=rows_ax)
        redirect(t, ops, mm, out, out + "_nobias")
        insert_after(ops, mm, [
            O(b + "_cast", "cast", [b], [b + "_cast"]),
            O(b + "_rows", "gather", [b + "_cast", "topk_idx"], [b + "_rows"]),
            O(mm + "_bias", "add", [out + "_nobias", b + "_rows"], [out])])
    # activation (apply_ffn_activation, GPT_OSS): clip(w0, max=limit),
    # w0 * sigmoid(1.702 w0), times clip(w1, -limit, limit) + 1
    for n in ("moe_gate_c", "moe_gate_s", "moe_glu", "moe_up_c", "moe_up_p1"):
        t[n] = T(TOK, axes=TOK_AX)
    replace(ops, "moe_silu", [
        O("moe_clip_w0", "scale", ["moe_gate"], ["moe_gate_c"], value=7.0, saves=["moe_gate"]),
        O("moe_act_scale", "scale", ["moe_gate_c"], ["moe_gate_s"], value=1.702),
        O("moe_sigmoid", "sigmoid", ["moe_gate_s"], ["moe_gate_act"]),
        O("moe_glu", "mul", ["moe_gate_c", "moe_gate_act"], ["moe_glu"]),
        O("moe_clip_w1", "scale", ["moe_up"], ["moe_up_c"], value=7.0, saves=["moe_up"]),
        O("moe_up_plus_one", "scale", ["moe_up_c"], ["moe_up_p1"], value=1.0)])
    op(ops, "moe_gated")["in"] = ["moe_glu", "moe_up_p1"]
    return y


def gpt_oss():
    g = moe_graph("gpt_oss", (
        "gpt-oss decoder layers as MaxText runs them (decoder_block gpt_oss): llama's attention with q, k, "
        "v and output projection biases, RoPE, the query times head_dim^-0.5 and the flash kernel; layers "
        "alternate sliding-window attention (even layers, 0-based: sliding_window_size) and global "
        "attention (odd layers; the pattern of two is fixed in MaxText's code); every layer a routed MoE "
        "block (sparse path, no shared experts, expert width base_mlp_dim as MaxText passes mlp_dim): "
        "router logits plus a router bias, top-k, a softmax over the chosen, tokens permuted to the "
        "expert-parallel buffer, Megablox grouped matmuls each followed by its expert bias gathered per "
        "routed row, the clipped activation w0 sigmoid(1.702 w0) (w1 + 1) (each clip a scale op that "
        "keeps its input for the clamp's mask), unpermuted and summed in fp32; head as llama's. The "
        "attention sinks (one logit per query head) are a [heads] param that no op reads: the flash "
        "kernel here takes only q, k, v, so they count in the params but not in the kernel's inputs; "
        "the bias adds' masks of padded rows (jnp.where) are taken as fused with the adds. MaxText scans "
        "the layers in pairs (inhomogeneous_layer_cycle_interval 2), a pair under one remat, and so does "
        "the analysis (remat_unit 2: under full one input kept per pair, a pair re-run at a time)"),
        moe_mlp={"from": "base_mlp_dim", "axis": "activation_mlp_moe", "weight_axis": "mlp_moe"})
    blocks = {}
    for name in ("global", "local"):
        t, ops = attention(64 ** -0.5, bias=True, sinks=True)
        y = gpt_oss_moe(t, ops, "hn")
        blocks[name] = residual(t, ops, y)
    return stacked(g, blocks, [
        {"name": "global", "block": "global", "every": 2},
        {"name": "local", "block": "local", "window": "sliding_window_size"}])


# ---- Llama 4 -----------------------------------------------------------------

def llama4_moe(t, ops, inp):
    """RoutedAndSharedMoE with Llama 4's router: top-k on the raw logits,
    sigmoid of the chosen (fp32) scaling the tokens before the experts, and
    the combine's weights all ones (a sum over the chosen)."""
    routed = moe_part(t, ops, inp, ["embed_moe", None], "softmax")
    drop(t, ops, ["router_softmax", "weights_cast"], ["topk_w", "topk_w_f32"])
    t["topk_raw_f32"] = T(["batch", "seq", "topk"], "fp32")
    t["router_scores"] = T(["batch", "seq", "topk"], "fp32")
    t["scaled_tokens"] = T(["batch", "seq", "topk", "embed"], "fp32")
    t["moe_in"] = T(["batch", "seq", "topk", "embed"])
    insert_after(ops, "top_k", [
        O("router_cast", "cast", ["topk_raw"], ["topk_raw_f32"]),
        O("router_sigmoid", "sigmoid", ["topk_raw_f32"], ["router_scores"]),
        O("router_scale_tokens", "einsum", [inp, "router_scores"], ["scaled_tokens"], spec="bse,bsk->bske"),
        O("tokens_cast", "cast", ["scaled_tokens"], ["moe_in"])])
    op(ops, "permute")["in"] = ["moe_in", "topk_idx"]
    drop(t, ops, ["repeat"], ["tokens_rep"])  # moe_in is the repeated tokens already
    c = op(ops, "combine")
    c["in"] = ["moe_back_f32"]
    c["spec"] = "bske->bse"
    shared = dense_mlp(t, ops, inp, "shared_mlp", "shared_")
    t["ffn_out"] = T(BSE)
    ops.append(O("shared_add", "add", [routed, shared], ["ffn_out"]))
    return "ffn_out"


def llama4(qk_norm):
    name = "llama4_qk_norm" if qk_norm else "llama4"
    norm = ("with use_qk_norm's weightless L2 norm on q and k after RoPE in the RoPE layers (an RMSNorm "
            "here, whose scale is one [head_dim] vector shared by q and k: 128 params a layer that the "
            "model does not have)" if qk_norm else "without query/key norms (use_qk_norm=false)")
    g = moe_graph(name, (
        "Llama 4 decoder layers as MaxText runs them (decoder_block llama4), " + norm + ": llama's "
        "attention with the query times head_dim^-0.5 and the flash kernel; layer i (0-based) is a global "
        "NoPE layer (no RoPE, the query times a per-position temperature) when (i + 1) is a multiple of "
        "nope_layer_interval, else a chunked-attention RoPE layer (chunk_attn_window_size); it is MoE when "
        "(i + 1) is a multiple of interleave_moe_layer_step, else a gated MLP of base_mlp_dim. The MoE "
        "block: router logits, top-k on them, the sigmoid of the chosen (fp32) scaling the token before "
        "the experts, tokens permuted to the expert-parallel buffer, Megablox grouped matmuls, "
        "unpermuted and summed in fp32 with weights of one, plus the shared expert (a gated MLP of "
        "shared_experts x base_moe_mlp_dim); head as llama's. The global layers are taken as MoE layers: "
        "right when interleave_moe_layer_step divides nope_layer_interval (Scout 1 and 4, Maverick 2 "
        "and 4). Leaves out the scaled token's sort in fp32 (cast to the compute dtype before the "
        "permute here, after it in MaxText) and the vision encoder. MaxText scans the layers in blocks "
        "of inhomogeneous_layer_cycle_interval (4), a block under one remat, and so does the analysis "
        "(remat_unit 4: under full one input kept per block, a block re-run at a time)"), shared_mlp=SHARED_MLP)
    blocks = {}
    t, ops = attention(128 ** -0.5, rope=False, temperature=True)
    blocks["global_moe"] = residual(t, ops, llama4_moe(t, ops, "hn"))
    t, ops = attention(128 ** -0.5, qk_norm="l2" if qk_norm else None)
    blocks["chunked_moe"] = residual(t, ops, llama4_moe(t, ops, "hn"))
    t, ops = attention(128 ** -0.5, qk_norm="l2" if qk_norm else None)
    blocks["chunked_dense"] = residual(t, ops, dense_mlp(t, ops, "hn", "mlp", "mlp_"))
    return stacked(g, blocks, [
        {"name": "global_moe", "block": "global_moe", "every": "nope_layer_interval"},
        {"name": "chunked_moe", "block": "chunked_moe", "every": "interleave_moe_layer_step",
         "window": "chunk_attn_window_size"},
        {"name": "chunked_dense", "block": "chunked_dense", "window": "chunk_attn_window_size"}])


if __name__ == "__main__":
    write("qwen3_moe", qwen3_moe())
    write("qwen3", qwen3())
    write("gpt_oss", gpt_oss())
    write("llama4", llama4(False))
    write("llama4_qk_norm", llama4(True))
