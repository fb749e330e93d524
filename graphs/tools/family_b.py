#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the Gemma, Gemma 2, Gemma 3, Gemma 4 (dense, MoE and E2B/E4B), Envy, tied-llama, tied-Qwen3, OLMo 3 and DeepSeek-V2-Lite graphs
(graphs/gemma.flash.json, graphs/gemma2.flash.json, graphs/gemma3.flash.json,
graphs/gemma4.flash.json, graphs/gemma4_moe.flash.json, graphs/gemma4_small.flash.json,
graphs/envy.flash.json,
graphs/llama_tied.flash.json, graphs/qwen3_tied.flash.json, graphs/olmo3.flash.json,
graphs/deepseek_lite.flash.json)
from the pieces of moe_graphs.py and moe_family_a.py: llama's
attention, its gated MLP, MLA, the routed experts. The JSON files are the
source the build embeds; this script is how they were made. Run it from
anywhere with python3; it needs nothing else. The shapes follow MaxText
e591f30 (models/gemma2.py, models/gemma3.py, models/gemma4.py, models/gemma4_small.py, models/envy.py,
layers/attentions.py,
layers/decoders.py, layers/attention_mla.py, layers/moe.py);
docs/graph-format.md describes the ops.
"""
import copy
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ beside the generators
import moe_family_a  # noqa: E402
import moe_graphs  # noqa: E402
from moe_graphs import T, O, base, dense_mlp, llama_attention, op_index, write  # noqa: E402

BSE = ["batch", "seq", "embed"]


def renamed(t, ops, rename):
    """The tensors and ops with every tensor and op name n replaced by rename(n)."""
    t2 = {rename(n): v for n, v in t.items()}
    ops2 = []
    for o in ops:
        o = copy.deepcopy(o)
        o["name"] = rename(o["name"])
        o["in"] = [rename(n) for n in o["in"]]
        o["out"] = [rename(n) for n in o["out"]]
        ops2.append(o)
    return t2, ops2


def gelu_mlp(t, ops, inp, prefix):
    """moe_graphs.dense_mlp with MaxText's Gemma activations ['gelu', 'linear']:
    gelu on wi_0 (mlpwi_0), wi_1 linear (mlpwi_1), their product into wo (mlpwo)."""
    out = dense_mlp(t, ops, inp, "mlp", prefix)
    i = op_index(ops, prefix + "silu")
    ops[i]["op"] = "gelu"
    ops[i]["name"] = prefix + "gelu"
    return out


def post_attention_norm(t, ops):
    """An RMSNorm of the attention's output projection (attn) before the
    residual, which then adds the normed value (Gemma 2 and 3, OLMo 3)."""
    t["post_attn_scale"] = T(["embed"], "weight", param=True, axes=["norm"])
    t["attn_normed"] = T(BSE)
    t["post_attn_rstd"] = T(["batch", "seq"], "fp32")
    at = op_index(ops, "attention_residual")
    ops.insert(at, O("post_attention_norm", "rmsnorm", ["attn", "post_attn_scale"],
                     ["attn_normed", "post_attn_rstd"]))
    ops[at + 1]["in"] = ["x", "attn_normed"]


def post_mlp_norm(t, ops, out):
    """An RMSNorm of the MLP's output `out`, then the residual into y."""
    t["post_ffw_scale"] = T(["embed"], "weight", param=True, axes=["norm"])
    t["mlp_normed"] = T(BSE)
    t["post_ffw_rstd"] = T(["batch", "seq"], "fp32")
    t["y"] = T(BSE)
    ops += [O("post_ffw_norm", "rmsnorm", [out, "post_ffw_scale"], ["mlp_normed", "post_ffw_rstd"]),
            O("mlp_residual", "add", ["h1", "mlp_normed"], ["y"])]


def gemma_sublayer(prefix, inp, qk_norm, query_scale):
    """One Gemma decoder sub-layer (MaxText's Gemma2DecoderLayer half, or a
    Gemma3DecoderLayer) on the residual stream `inp`: pre-norm, GQA with RoPE
    (Gemma 3: per-head RMSNorm on q and k before RoPE, q scaled by
    query_pre_attn_scalar after it), the flash kernel, the output projection,
    a post-attention norm, the residual; pre-norm, the GeGLU MLP, a post-MLP
    norm, the residual. Names get `prefix`; the block input keeps its own
    name. Returns (tensors, ops, output name)."""
    t, ops = llama_attention(base["layer"])  # up to the pre-MLP norm
    if inp != "x":
        del t["x"]

    def rename(n):
        return inp if n == "x" else prefix + n

    if qk_norm:
        # per-head RMSNorms between the projections (q_raw, k_raw) and RoPE
        for w, heads in (("q", "heads"), ("k", "kv_heads")):
            t[w + "_norm_scale"] = T(["head_dim"], "weight", param=True, axes=["norm"])
            t[w + "_normed"] = T(["batch", "seq", heads, "head_dim"])
            t[w + "_norm_rstd"] = T(["batch", "seq", heads], "fp32")
            ops[op_index(ops, w + "_rope")]["in"] = [w + "_normed"]
        at = op_index(ops, "v_proj") + 1
        ops[at:at] = [
            O("query_norm", "rmsnorm", ["q_raw", "q_norm_scale"], ["q_normed", "q_norm_rstd"]),
            O("key_norm", "rmsnorm", ["k_raw", "k_norm_scale"], ["k_normed", "k_norm_rstd"])]
    if query_scale:
        # query * query_pre_attn_scalar after RoPE (attentions.py:1299-1300), then
        # tagged query_proj; the scalar is model-specific (gemma3.py:52-59)
        t["q_rot"] = T(["batch", "seq", "heads", "head_dim"])
        ops[op_index(ops, "q_rope")]["out"] = ["q_rot"]
        ops.insert(op_index(ops, "k_rope") + 1, O("query_scale", "scale", ["q_rot"], ["q"]))
    post_attention_norm(t, ops)
    post_mlp_norm(t, ops, gelu_mlp(t, ops, "hn", "mlp_"))
    t, ops = renamed(t, ops, rename)
    return t, ops, prefix + "y"


def tied_head():
    """llama's head with the logits taken from the embedding table
    (logits_via_embedding, as gpt3's head does). MaxText's elementwise ops on
    the logits (decoders.py:823-828: the 1/sqrt(emb) normalization and Gemma
    2's final soft cap, logits / cap, tanh, * cap) are not ops here: XLA fuses
    them into the logits matmul's output and their backward into the
    cross-entropy gradient, so they make no [batch, seq, vocab] buffer of
    their own. As separate ops (scale, tanh, scale) they would keep a second
    [batch, seq, vocab] residual (tanh's output) and hold two
    [batch, seq, vocab] gradients at once in backward: MaxText's own
    gemma2-9b and gemma2-27b v6e-256 benchmark configs (batch 3 and 2,
    sequence 8192, vocabulary 256128) would then need 41.8 and 30.2 GiB of a
    31.25 GiB device, where they run; without them, 20.8 and 18.4 GiB."""
    h = copy.deepcopy(base["head"])
    del h["tensors"]["w_logits"]
    i = op_index(h["ops"], "logits")
    h["ops"][i]["in"] = ["hf", "embedding"]
    h["ops"][i]["spec"] = "bse,ve->bsv"
    return h


def gemma_graph(name, description, layer=None, blocks=None, stack=None):
    g = {"format": base["format"], "name": name, "description": description,
         "dims": copy.deepcopy(base["dims"])}
    if layer:
        g["layer"] = layer
    else:
        g["blocks"] = blocks
        g["stack"] = stack
    g["head"] = tied_head()
    return g


def gemma2():
    t, ops, mid = gemma_sublayer("local_", "x", qk_norm=False, query_scale=False)
    t2, ops2, out = gemma_sublayer("global_", mid, qk_norm=False, query_scale=False)
    t.update(t2)
    ops[op_index(ops, "local_attention")]["window"] = "sliding_window_size"
    ops += ops2
    layer = {"inputs": ["x"], "outputs": [out], "tensors": t, "ops": ops}
    return gemma_graph("gemma2", (
        "Gemma 2 decoder layer as MaxText runs it (decoder_block gemma2): one layer is a pair, a local "
        "(sliding-window) sub-layer then a global one, as base_num_decoder_layers counts them (23 pairs = "
        "46 sub-layers for 27B); only the pair's input is tagged decoder_layer_input. Each sub-layer: "
        "RMSNorm, GQA with RoPE, the flash kernel (the attention logit soft cap is inside it), output "
        "projection, post-attention RMSNorm, residual; RMSNorm, GeGLU MLP (gelu on wi_0), post-MLP RMSNorm, "
        "residual. Head: token embedding, final RMSNorm, logits tied to the embedding, cross-entropy in fp32 "
        "fused with the cast; the 1/sqrt(emb) normalization and the final logit soft cap (logits / cap, "
        "tanh, * cap) are fused by XLA into the logits and their gradient, so they are no tensors here. "
        "The local sub-layer's flash op has its own window (sliding_window_size), which scales its "
        "attention FLOPs; memory is the same either way"),
        layer=layer)


def gemma3():
    t, ops, out = gemma_sublayer("", "x", qk_norm=True, query_scale=True)
    block = {"inputs": ["x"], "outputs": [out], "tensors": t, "ops": ops}
    return gemma_graph("gemma3", (
        "Gemma 3 decoder layer as MaxText runs it (decoder_block gemma3): five local (sliding-window, "
        "sliding_window_size) layers then one global, layer i global when (i + 1) is a multiple of 6 "
        "(GEMMA3_ATTENTION_PATTERN, fixed in MaxText's code). Each layer: RMSNorm, GQA with per-head "
        "RMSNorms on q and k before RoPE, q scaled by query_pre_attn_scalar after it (tagged query_proj "
        "after the scale), the flash kernel, output projection, post-attention RMSNorm, residual; "
        "RMSNorm, GeGLU MLP (gelu on wi_0), post-MLP RMSNorm, residual. Head: token embedding, final "
        "RMSNorm, logits tied to the embedding (the 1/sqrt(emb) normalization fused into them), "
        "cross-entropy in fp32 fused with the cast. MaxText scans Gemma 3 in blocks of six layers (one "
        "remat unit each, the num_decoder_layers % 6 left over as one more block), and so does the "
        "analysis (remat_unit 6). Left out: the vision encoder"),
        blocks={"decoder": block},
        stack=[{"name": "global", "block": "decoder", "every": 6},
               {"name": "local", "block": "decoder", "window": "sliding_window_size"}])


def direct_query(t, ops):
    """MLA's query without the low rank (q_lora_rank 0, attention_mla.py:798-812,
    924-926): one projection [embed, heads, qk_head] of the normed input,
    replacing wq_a, its norm and wq_b (no query_wa_proj, no mla_q)."""
    for n in ("wq_a", "q_a", "q_norm_scale", "q_an", "q_rstd", "wq_b"):
        del t[n]
    t["wq"] = T(["embed", "heads", "qk_head"], "weight", param=True, axes=["embed", "q_heads", "kv"])
    at = op_index(ops, "wq_a")
    ops[at:at + 3] = [O("q_proj", "einsum", ["xn", "wq"], ["q_raw"], spec="bse,ehd->bshd")]


def deepseek_lite():
    g = moe_graphs.deepseek()
    g["name"] = "deepseek_lite"
    g["description"] = (
        "DeepSeek-V2-Lite decoder layers as MaxText runs them (decoder_block deepseek, q_lora_rank 0): "
        "MLA attention with a direct query projection (no low-rank query, so no query_wa_proj or mla_q), "
        "the low-rank key/value projection with its norm (kv_wa_proj, mla_kv), a shared RoPE key, the "
        "flash kernel; then first_num_dense_layers dense layers (a gated MLP of base_mlp_dim) and MoE "
        "layers: softmax router scores over all experts (routed_score_func softmax), top-k, the routed "
        "scaling, tokens permuted to the expert-parallel buffer, Megablox grouped matmuls, the fp32 "
        "weighted combine, plus shared experts (one gated MLP of shared_experts x base_moe_mlp_dim); "
        "head as llama's. As the deepseek graph, RoPE is counted on the whole query and key head dims "
        "(MaxText splits off the rope part, rotates it and concatenates)")
    del g["dims"]["q_lora"]
    for b in g["blocks"].values():
        direct_query(b["tensors"], b["ops"])
        if "router_sigmoid" in [o["name"] for o in b["ops"]]:
            i = op_index(b["ops"], "router_sigmoid")
            b["ops"][i]["name"] = "router_softmax"
            b["ops"][i]["op"] = "softmax"
    return g


def llama_tied():
    """llama's layer under the tied head: Qwen2.5 1.5B (decoder_block qwen2,
    logits_via_embedding; its q, k, v biases are linear, as for the untied
    Qwen2.5s that run the llama graph)."""
    g = gemma_graph("llama_tied", (
        "Llama decoder layer (RMSNorm, GQA, RoPE, SwiGLU) with the flash (splash) kernel, as the llama graph, "
        "under a tied head: token embedding, final RMSNorm, logits from the embedding table "
        "(logits_via_embedding), cross-entropy in fp32"), layer=copy.deepcopy(base["layer"]))
    return g


def qwen3_tied():
    """The Qwen3 dense layer (moe_family_a.qwen3: per-head query and key
    RMSNorm) under the tied head: Qwen3 0.6B, 1.7B and 4B (decoder_block
    qwen3, logits_via_embedding true, normalize_embedding_logits false)."""
    return gemma_graph("qwen3_tied", (
        "Qwen3 dense decoder layer as the qwen3 graph (per-head RMSNorm on q and k, the flash kernel, "
        "llama's gated SiLU MLP) under a tied head: token embedding, final RMSNorm, logits from the "
        "embedding table (logits_via_embedding), cross-entropy in fp32"), layer=moe_family_a.qwen3()["layer"])


def olmo3():
    """Olmo3DecoderLayer (models/olmo3.py): no pre-norms. The attention
    reads the layer input: q, k, v projections, one RMSNorm over all of q's
    heads and one over k's (GlobalRMSNorm, attentions.py picks it for
    model_name olmo3*) before RoPE, the query times head_dim^-0.5, the
    flash kernel, the output projection, a post-attention RMSNorm, the
    residual; llama's gated SiLU MLP on the residual stream, a post-MLP
    RMSNorm, the residual. Three sliding-window layers then one global
    (OLMO3_ATTENTION_PATTERN), scanned in blocks of four
    (Olmo3ScannableBlock, inhomogeneous_layer_cycle_interval). YaRN's RoPE
    scaling is elementwise in the rope op. Head as llama's (untied)."""
    t, ops = moe_family_a.attention(128 ** -0.5, qk_norm="global")
    for n in ("ln1_scale", "xn", "ln1_rstd", "ln2_scale", "hn", "ln2_rstd"):
        del t[n]
    ops = [o for o in ops if o["name"] not in ("pre_attention_norm", "pre_mlp_norm")]
    for o in ops:
        o["in"] = ["x" if n == "xn" else n for n in o["in"]]
    post_attention_norm(t, ops)
    post_mlp_norm(t, ops, dense_mlp(t, ops, "h1", "mlp", "mlp_"))
    block = {"inputs": ["x"], "outputs": ["y"], "tensors": t, "ops": ops}
    g = {"format": base["format"], "name": "olmo3", "description": (
        "OLMo 3 decoder layer as MaxText runs it (decoder_block olmo3): no pre-norms; q, k, v projections "
        "of the layer input, one RMSNorm over all query heads and one over all key heads (GlobalRMSNorm: "
        "scale [heads, head_dim]) before RoPE, the query times head_dim^-0.5 (tagged query_proj after "
        "it), the flash kernel, output projection, post-attention RMSNorm, residual; llama's gated SiLU "
        "MLP on the residual stream, post-MLP RMSNorm, residual. Three sliding-window layers "
        "(sliding_window_size) then one global, layer i global when (i + 1) is a multiple of 4 "
        "(OLMO3_ATTENTION_PATTERN), scanned in blocks of inhomogeneous_layer_cycle_interval layers. "
        "Head as llama's: token embedding, final RMSNorm, untied logits, cross-entropy in fp32"),
        "dims": copy.deepcopy(base["dims"]),
        "blocks": {"decoder": block},
        "stack": [{"name": "global", "block": "decoder", "every": 4},
                  {"name": "local", "block": "decoder", "window": "sliding_window_size"}],
        "head": copy.deepcopy(base["head"])}
    return g


def gemma1():
    """GemmaDecoderLayer (models/gemma.py): llama's layer with the Gemma
    activations ['gelu', 'linear'] (GeGLU: gelu on wi_0), no post-norms,
    under the tied head. The embedding's sqrt(emb) scale is elementwise
    and fused, as in Gemma 2 and 3's graphs."""
    layer = copy.deepcopy(base["layer"])
    i = op_index(layer["ops"], "silu")
    layer["ops"][i]["op"] = "gelu"
    layer["ops"][i]["name"] = "gelu"
    return gemma_graph("gemma", (
        "Gemma decoder layer as MaxText runs it (decoder_block gemma): RMSNorm, attention with the flash "
        "kernel (multi-query at 2B), a GeGLU MLP (gelu on wi_0 times wi_1), residuals, no post-norms; head: "
        "token embedding, final RMSNorm, logits tied to the embedding, cross-entropy in fp32"), layer=layer)


def gemma4_layer(glob):
    """Gemma4DecoderLayer (models/gemma4.py) as MaxText e591f30 trains it:
    Gemma 3's layer (models/gemma3.py) with query_pre_attn_scalar 1 (no
    query scale), a value RMSNorm without a scale on every layer
    (use_v_norm, v_norm_with_scale false in the 31B's yml), and the output
    times a learned scalar (layer_scalar, shape (1,): a rank-0 param here).
    A global layer (`glob`) has its own head dim and key/value heads
    (global_head_dim, global_num_kv_heads) and one key/value projection:
    the value is the unnormed key (share_kv_projections, attentions.py),
    normed without a scale. Partial RoPE (global_rope_proportion) rotates a
    part of each head: elementwise either way."""
    t, ops, out = gemma_sublayer("", "x", qk_norm=True, query_scale=False)
    if glob:
        for v in t.values():
            v["shape"] = ["global_kv_heads" if d == "kv_heads" else
                          "global_head_dim" if d == "head_dim" else d for d in v["shape"]]
        del t["wv"]
        ops = [o for o in ops if o["name"] != "v_proj"]
        src = "k_raw"
    else:
        src = "v_raw"
        t[src] = copy.deepcopy(t["k_raw"])
        ops[op_index(ops, "v_proj")]["out"] = [src]
    t["v_norm_rstd"] = copy.deepcopy(t["k_norm_rstd"])
    ops.insert(op_index(ops, "key_norm") + 1, O("value_norm", "rmsnorm", [src], ["v", "v_norm_rstd"]))
    t["layer_scalar"] = T([], "weight", param=True, axes=[])
    t["y_sum"] = T(BSE)
    ops[op_index(ops, "mlp_residual")]["out"] = ["y_sum"]
    ops.append(O("layer_scale", "mul", ["y_sum", "layer_scalar"], [out]))
    return {"inputs": ["x"], "outputs": [out], "tensors": t, "ops": ops}


def envy_layer(moe):
    """EnvyDecoderLayer (models/envy.py): RMSNorm, attention with per-head
    query and key RMSNorms (use_qk_norm) and the query times head_dim^-0.5
    (query_pre_attn_scalar), the residual; RMSNorm, then a routed MoE block
    (`moe`: RoutedMoE, top-k on the router logits and a softmax over the
    chosen) or llama's gated MLP, a post-MLP RMSNorm (use_post_ffw_norm),
    the residual. Dropout is off in the models' ymls (enable_dropout: false)."""
    t, ops = moe_family_a.attention(128 ** -0.5, qk_norm="rms")
    if moe:
        out = moe_graphs.moe_part(t, ops, "hn", ["embed", None], "softmax")
    else:
        out = dense_mlp(t, ops, "hn", "mlp", "mlp_")
    post_mlp_norm(t, ops, out)
    return {"inputs": ["x"], "outputs": ["y"], "tensors": t, "ops": ops}


def envy():
    g = gemma_graph("envy", (
        "Envy decoder layers as MaxText runs them (decoder_block envy): RMSNorm, attention with per-head "
        "RMSNorms on q and k (scale [head_dim]) before RoPE and the query times head_dim^-0.5, the flash "
        "kernel, output projection, residual; RMSNorm, then in every interleave_moe_layer_step-th layer a "
        "routed MoE block (router logits, top-k, a softmax over the chosen, tokens permuted to the "
        "expert-parallel buffer, Megablox grouped matmuls of base_moe_mlp_dim, unpermuted and summed in "
        "fp32) and in the others llama's gated SiLU MLP of base_mlp_dim; a post-MLP RMSNorm, residual. "
        "MaxText scans the layers in blocks of inhomogeneous_layer_cycle_interval (EnvyScannableBlock), "
        "one remat unit each. Head: token embedding, final RMSNorm, logits tied to the embedding, "
        "cross-entropy in fp32. Left out: the load-balance loss"),
        blocks={"moe": envy_layer(True), "dense": envy_layer(False)},
        stack=[{"name": "moe", "block": "moe", "every": "interleave_moe_layer_step"},
               {"name": "dense", "block": "dense"}])
    g["dims"].update(copy.deepcopy(moe_graphs.MOE_DIMS))
    return g


def gemma4_moe_layer(glob):
    """Gemma4DecoderLayer with Gemma4MoE (models/gemma4.py, the 26B): the
    shared expert is the dense GeGLU MLP on the pre-MLP norm's output
    (mlp_dim wide: maxtext_utils.get_shared_expert_mlp_dim), normed after
    (post_feedforward_layernorm_1); the routed experts read the residual
    stream h1 normed on their own (pre_feedforward_layernorm_2), the router
    an unscaled RMSNorm of h1 times a learned per-feature scale (the
    constant emb_dim^-0.5 folds into it). The router's softmax runs over
    every expert in fp32 and the top-k take its probabilities
    (moe.py, GEMMA4), renormalized (norm_topk_prob) and scaled per expert
    (per_expert_scale: a param here, its [batch, seq, top-k] pick
    elementwise); the routed output is normed (post_feedforward_layernorm_2)
    and added to the shared one, then the post-MLP norm, the residual and
    the layer scalar as in the dense layer."""
    layer = gemma4_layer(glob)
    t, ops = layer["tensors"], layer["ops"]
    at = op_index(ops, "post_ffw_norm")
    tail = ops[at:]
    del ops[at:]
    # the shared expert's output normed
    t["post_ffw1_scale"] = T(["embed"], "weight", param=True, axes=["norm"])
    t["shared_normed"] = T(BSE)
    t["post_ffw1_rstd"] = T(["batch", "seq"], "fp32")
    ops.append(O("post_ffw_norm_1", "rmsnorm", ["mlp_out", "post_ffw1_scale"], ["shared_normed", "post_ffw1_rstd"]))
    # the routed experts' input and the router's
    t["pre_ffw2_scale"] = T(["embed"], "weight", param=True, axes=["norm"])
    t["routed_in"] = T(BSE)
    t["pre_ffw2_rstd"] = T(["batch", "seq"], "fp32")
    ops.append(O("pre_ffw_norm_2", "rmsnorm", ["h1", "pre_ffw2_scale"], ["routed_in", "pre_ffw2_rstd"]))
    t["gate_normed"] = T(BSE)
    t["gate_norm_rstd"] = T(["batch", "seq"], "fp32")
    ops.append(O("gate_norm", "rmsnorm", ["h1"], ["gate_normed", "gate_norm_rstd"]))
    t["router_scale"] = T(["embed"], "weight", param=True, axes=["embed"])
    t["gate_in"] = T(BSE)
    ops.append(O("router_input", "mul", ["gate_normed", "router_scale"], ["gate_in"]))
    routed = moe_graphs.moe_part(t, ops, "routed_in", ["embed", None], "softmax")
    ops[op_index(ops, "gate")]["in"] = ["gate_in", "w_gate"]
    # softmax over every expert in fp32, then the top-k of it
    t["router_logits_f32"] = T(["batch", "seq", "experts"], "fp32")
    t["router_probs"] = T(["batch", "seq", "experts"], "fp32")
    t["topk_raw"] = T(["batch", "seq", "topk"], "fp32")
    t["topk_norm"] = T(["batch", "seq", "topk"], "fp32")
    t["topk_w"] = T(["batch", "seq", "topk"], "fp32")
    del t["topk_w_f32"]
    k = op_index(ops, "top_k")
    ops[k:k + 2] = [
        O("router_cast", "cast", ["router_logits"], ["router_logits_f32"]),
        O("router_softmax", "softmax", ["router_logits_f32"], ["router_probs"]),
        O("top_k", "top_k", ["router_probs"], ["topk_raw", "topk_idx"]),
        O("topk_renorm", "scale", ["topk_raw"], ["topk_norm"], value=1.0),
        O("expert_scale", "scale", ["topk_norm"], ["topk_w"], value=1.0)]
    t["per_expert_scale"] = T(["experts"], "weight", param=True, axes=["exp"])
    ops = [o for o in ops if o["name"] != "weights_cast"]
    ops[op_index(ops, "combine")]["in"] = ["moe_back_f32", "topk_w"]
    ops[op_index(ops, "moe_silu")]["op"] = "gelu"
    ops[op_index(ops, "moe_silu")]["name"] = "moe_gelu"
    t["routed_normed"] = T(BSE)
    t["post_ffw2_scale"] = T(["embed"], "weight", param=True, axes=["norm"])
    t["post_ffw2_rstd"] = T(["batch", "seq"], "fp32")
    ops.append(O("post_ffw_norm_2", "rmsnorm", [routed, "post_ffw2_scale"], ["routed_normed", "post_ffw2_rstd"]))
    t["mlp_sum"] = T(BSE)
    ops.append(O("experts_sum", "add", ["routed_normed", "shared_normed"], ["mlp_sum"]))
    tail[0]["in"] = ["mlp_sum", "post_ffw_scale"]
    ops += tail
    layer["ops"] = ops
    return layer


def gemma4_moe():
    g = gemma4()
    g["name"] = "gemma4_moe"
    g["description"] = (
        "Gemma 4 MoE decoder layer as MaxText runs it (decoder_block gemma4 with num_experts > 1, the "
        "26B): the gemma4 graph's attention, local and global layers, then Gemma4MoE: a shared GeGLU "
        "expert (mlp_dim wide) on the pre-MLP norm's output, normed after; routed GeGLU experts "
        "(Megablox grouped matmuls, moe_mlp_dim wide) on their own RMSNorm of the residual stream, the "
        "router on an unscaled RMSNorm of it times a learned scale, a softmax over every expert in fp32 "
        "and the top-k of it, renormalized and scaled per expert (per_expert_scale, a param here); the "
        "routed output normed, added to the shared one, the post-MLP norm, the residual and the layer "
        "scalar. Left out: the load-balance loss; the vision encoder")
    g["blocks"] = {"local": gemma4_moe_layer(False), "global": gemma4_moe_layer(True)}
    g["dims"].update(copy.deepcopy(moe_graphs.MOE_DIMS))
    return g


def gemma4():
    g = gemma_graph("gemma4", (
        "Gemma 4 dense decoder layer as MaxText runs it (decoder_block gemma4): five local "
        "(sliding-window, sliding_window_size) layers then one global, layer i global when (i + 1) is a "
        "multiple of 6 (GEMMA4_ATTENTION_PATTERN). Each layer: RMSNorm, attention with per-head RMSNorms "
        "on q and k before RoPE and an RMSNorm without a scale on v, the flash kernel, output projection, "
        "post-attention RMSNorm, residual; RMSNorm, GeGLU MLP (gelu on wi_0), post-MLP RMSNorm, residual, "
        "times a learned scalar. A global layer has global_head_dim and global_num_kv_heads and one "
        "projection for key and value (the value is the key before its norm and RoPE). Each layer is "
        "its own remat unit (Gemma4ScannableBlock rematerializes its layers one by one), and a global "
        "layer keeps on device what the policy offloads by name (its scan's own policy saves them). "
        "Head: token "
        "embedding, final RMSNorm, logits tied to the embedding, cross-entropy in fp32. Left out: the "
        "vision encoder; the MoE (26B: the gemma4_moe graph) and the per-layer embeddings (E2B, E4B)"),
        blocks={"local": gemma4_layer(False), "global": gemma4_layer(True)},
        stack=[{"name": "global", "block": "global", "every": 6, "keeps_offloads": True},
               {"name": "local", "block": "local", "window": "sliding_window_size"}])
    g["dims"]["global_head_dim"] = {"from": "global_head_dim"}
    g["dims"]["global_kv_heads"] = {"from": "global_num_kv_heads", "axis": "activation_kv_heads",
                                    "weight_axis": "kv_heads"}
    return g


def gemma4_small_layer(glob, role):
    """Gemma4SmallDecoderLayer (models/gemma4_small.py, Gemma 4 E2B and E4B)
    as MaxText e591f30 trains it, one layer at a time (no scan): the
    gemma4 graph's local layer (query, key and value projections, per-head
    RMSNorms on q and k, a value RMSNorm without a scale, RoPE, the flash
    kernel, post-norms, a GeGLU MLP); a global layer (`glob`) with
    global_head_dim and global_num_kv_heads and its own value projection
    (Gemma4SmallDecoderLayer passes no share_kv_projections). After the MLP's
    residual, the per-layer input: a gate projection of the residual stream
    to hidden_size_per_layer_input (gelu, computed in fp32 and fused),
    times the layer's slice of the per-layer inputs (an `outer` operand:
    the head holds them), projected back to the embedding, RMSNorm, a
    residual; then the layer scalar.

    `role` is how the layer stands to key/value sharing
    (num_kv_shared_layers): "own" computes its keys and values;
    "donor", the last layer of its attention kind before the shared ones,
    has them computed by MaxText's decoder loop before its checkpoint
    (compute_shared_kv: a second pre-attention norm, the projections, the
    norms and the key's RoPE, `outside` ops whose results are kept whatever
    the policy) and reads them inside it; "shared" has no key or value
    projection and attends with its query to its donor's (an `outer`
    flash_attention), and its MLP is shared_layer_mlp_dim wide
    (use_double_wide_mlp)."""
    layer = gemma4_layer(False)
    t, ops = layer["tensors"], layer["ops"]
    if glob:
        for v in t.values():
            v["shape"] = ["global_kv_heads" if d == "kv_heads" else
                          "global_head_dim" if d == "head_dim" else d for d in v["shape"]]
    if role == "shared":
        for n in ("mlp_wi_0", "mlp_wi_1", "mlp_wo", "mlp_gate", "mlp_up", "mlp_gate_act", "mlp_mix"):
            t[n]["shape"] = ["shared_mlp" if d == "mlp" else d for d in t[n]["shape"]]
    # the per-layer input, between the MLP's residual and the layer scalar
    t["h2"] = T(BSE)
    ops[op_index(ops, "mlp_residual")]["out"] = ["h2"]
    t["ple_w_gate"] = T(["embed", "ple"], "weight", param=True)
    t["ple_gate"] = T(["batch", "seq", "ple"])
    t["ple_act"] = T(["batch", "seq", "ple"])
    t["ple_gated"] = T(["batch", "seq", "ple"])
    t["ple_w_proj"] = T(["ple", "embed"], "weight", param=True)
    t["ple_out"] = T(BSE)
    t["post_ple_scale"] = T(["embed"], "weight", param=True, axes=["norm"])
    t["ple_normed"] = T(BSE)
    t["post_ple_rstd"] = T(["batch", "seq"], "fp32")
    at = op_index(ops, "layer_scale")
    ops[at:at] = [
        O("ple_gate_proj", "einsum", ["h2", "ple_w_gate"], ["ple_gate"], spec="bse,ep->bsp"),
        O("ple_gelu", "gelu", ["ple_gate"], ["ple_act"]),
        O("ple_input", "mul", ["ple_act"], ["ple_gated"], outer=True),
        O("ple_proj", "einsum", ["ple_gated", "ple_w_proj"], ["ple_out"], spec="bsp,pe->bse"),
        O("post_ple_norm", "rmsnorm", ["ple_out", "post_ple_scale"], ["ple_normed", "post_ple_rstd"]),
        O("ple_residual", "add", ["h2", "ple_normed"], ["y_sum"])]
    if role == "donor":
        # compute_shared_kv: the norm again, keys and values, outside the checkpoint
        t["kv_xn"] = T(BSE)
        t["kv_ln_rstd"] = T(["batch", "seq"], "fp32")
        kv = ["k_proj", "v_proj", "key_norm", "value_norm", "k_rope"]
        moved = [ops[op_index(ops, n)] for n in kv]
        ops = [o for o in ops if o["name"] not in kv]
        for o in moved:
            o["in"] = ["kv_xn" if n == "xn" else n for n in o["in"]]
            o["outside"] = True
        ops[0:0] = [O("kv_pre_norm", "rmsnorm", ["x", "ln1_scale"], ["kv_xn", "kv_ln_rstd"],
                      outside=True)] + moved
    elif role == "shared":
        for n in ("wk", "wv", "k_raw", "v_raw", "k_norm_scale", "k_normed", "k_norm_rstd", "v",
                  "v_norm_rstd", "k", "k_t", "v_t"):
            del t[n]
        ops = [o for o in ops if o["name"] not in
               ("k_proj", "v_proj", "key_norm", "value_norm", "k_rope", "k_transpose", "v_transpose")]
        att = ops[op_index(ops, "attention")]
        att["in"] = ["q_t"]
        att["outer"] = True
    layer["ops"] = ops
    return layer


def ple_head():
    """The tied head with MaxText's per-layer inputs (Gemma4SmallPLE,
    models/gemma4_small.py) before the layers: the tokens' rows of a second
    table [vocab_size_per_layer_input, layers x hidden_size_per_layer_input]
    (times sqrt(hidden_size_per_layer_input), fused), plus a projection of
    the embedded tokens (h0) to the same width (times emb^-0.5, fused),
    RMS-normalized per layer ([hidden_size_per_layer_input] scale) in fp32
    (MaxText's RMSNorm upcasts its input; outside every checkpoint JAX keeps
    that upcast for the norm's backward: XLA's compile of gemma4-e2b on
    v5e-16 holds an f32 [batch, seq, layers x 256] from the head's forward
    to its backward), the sum
    times 2^-0.5: per_layer_inputs [batch, seq, layers, hidden_size_per_layer_input],
    whose slice each layer reads. MaxText passes each layer its slice as an
    argument of the layer's checkpoint, so the slices are kept to the
    layers' backward: here the head keeps per_layer_inputs whole to its own
    backward (`saves` on the op that makes it), and per_layer_inputs is an
    output of the head: its gradient, which the layers' backward fills,
    lives from the loss's backward to the head's."""
    h = tied_head()
    t, ops = h["tensors"], h["ops"]
    t["ple_table"] = T(["ple_vocab", "ple_all"], "weight", param=True, axes=["vocab", "embed_vocab"])
    t["ple_emb"] = T(["batch", "seq", "ple_all"])
    t["ple_emb4"] = T(["batch", "seq", "layers", "ple"])
    t["ple_w_model"] = T(["embed", "ple_all"], "weight", param=True)
    t["ple_ctx"] = T(["batch", "seq", "ple_all"])
    t["ple_ctx4"] = T(["batch", "seq", "layers", "ple"])
    t["ple_ctx_f32"] = T(["batch", "seq", "layers", "ple"], "fp32")
    t["ple_norm_scale"] = T(["ple"], "weight", param=True, axes=["norm"])
    t["ple_ctx_normed"] = T(["batch", "seq", "layers", "ple"])
    t["ple_rstd"] = T(["batch", "seq", "layers"], "fp32")
    t["ple_sum"] = T(["batch", "seq", "layers", "ple"])
    t["per_layer_inputs"] = T(["batch", "seq", "layers", "ple"])
    at = op_index(ops, "embed") + 1
    ops[at:at] = [
        O("ple_embed", "embedding", ["ple_table", "tokens"], ["ple_emb"]),
        O("ple_embed_view", "reshape", ["ple_emb"], ["ple_emb4"]),
        O("ple_model_proj", "einsum", ["h0", "ple_w_model"], ["ple_ctx"], spec="bse,ef->bsf"),
        O("ple_ctx_view", "reshape", ["ple_ctx"], ["ple_ctx4"]),
        O("ple_upcast", "cast", ["ple_ctx4"], ["ple_ctx_f32"]),
        O("ple_norm", "rmsnorm", ["ple_ctx_f32", "ple_norm_scale"], ["ple_ctx_normed", "ple_rstd"]),
        O("ple_sum", "add", ["ple_emb4", "ple_ctx_normed"], ["ple_sum"]),
        O("ple_scale", "scale", ["ple_sum"], ["per_layer_inputs"], value=2 ** -0.5,
          saves=["per_layer_inputs"])]
    h["outputs"] = h["outputs"] + ["per_layer_inputs"]
    return h


def gemma4_small():
    g = gemma_graph("gemma4_small", (
        "Gemma 4 E2B and E4B decoder layers as MaxText runs them (decoder_block gemma4_small, layer by "
        "layer: scan_layers=false). Local (sliding-window, sliding_window_size) layers and a global one "
        "every gemma4_small_period layers (5 for gemma4-e2b, else 6: get_attention_pattern). Each layer: "
        "the gemma4 graph's attention (per-head RMSNorms on q and k, an unscaled RMSNorm on v, RoPE, the "
        "flash kernel; a global layer with global_head_dim and global_num_kv_heads and its own value "
        "projection), post-attention RMSNorm, residual; RMSNorm, GeGLU MLP, post-MLP RMSNorm, residual; "
        "the per-layer input: a gate projection to hidden_size_per_layer_input, gelu, times the layer's "
        "slice of the per-layer inputs, projected back, RMSNorm, residual; times a learned scalar. The "
        "last num_kv_shared_layers layers reuse the keys and values of the last layer of their kind "
        "before them: those donors compute them in MaxText's decoder loop before their checkpoint (kept "
        "whatever the policy), and the shared layers project only queries and have an MLP of "
        "shared_layer_mlp_dim (twice base_mlp_dim with use_double_wide_mlp). Head: token embedding; the "
        "per-layer inputs (a second table of vocab_size_per_layer_input rows, plus a projection of the "
        "embedding, RMSNorm per layer), held to the head's backward with their gradient from the loss's; "
        "final RMSNorm, logits tied to the embedding, cross-entropy in fp32. Left out: the vision and "
        "audio encoders; the shared keys' and values' gradients as they add up over the shared layers' "
        "backward (each shared layer's are its own until its backward ends)"),
        blocks={"global_donor": gemma4_small_layer(True, "donor"),
                "local_donor": gemma4_small_layer(False, "donor"),
                "global": gemma4_small_layer(True, "own"),
                "local": gemma4_small_layer(False, "own"),
                "global_shared": gemma4_small_layer(True, "shared"),
                "local_shared": gemma4_small_layer(False, "shared")},
        stack=[{"name": "global_donor", "block": "global_donor", "first": "kv_donor_global",
                "every": "kv_donor_global"},
               {"name": "local_donor", "block": "local_donor", "first": "kv_donor_local",
                "every": "kv_donor_local", "window": "sliding_window_size"},
               {"name": "global", "block": "global", "first": "kv_shared_first",
                "every": "gemma4_small_period"},
               {"name": "local", "block": "local", "first": "kv_shared_first",
                "window": "sliding_window_size"},
               {"name": "global_shared", "block": "global_shared", "every": "gemma4_small_period"},
               {"name": "local_shared", "block": "local_shared", "window": "sliding_window_size"}])
    g["head"] = ple_head()
    g["dims"]["global_head_dim"] = {"from": "global_head_dim"}
    g["dims"]["global_kv_heads"] = {"from": "global_num_kv_heads", "axis": "activation_kv_heads",
                                    "weight_axis": "kv_heads"}
    g["dims"]["shared_mlp"] = {"from": "shared_layer_mlp_dim", "axis": "activation_mlp",
                               "weight_axis": "mlp"}
    g["dims"]["ple"] = {"from": "hidden_size_per_layer_input", "weight_axis": "mlp"}
    g["dims"]["ple_all"] = {"from": "per_layer_input_dim", "weight_axis": "mlp"}
    g["dims"]["layers"] = {"from": "base_num_decoder_layers"}
    g["dims"]["ple_vocab"] = {"from": "vocab_size_per_layer_input"}
    return g


if __name__ == "__main__":
    write("gemma4", gemma4())
    write("gemma4_moe", gemma4_moe())
    write("gemma4_small", gemma4_small())
    write("envy", envy())
    write("llama_tied", llama_tied())
    write("qwen3_tied", qwen3_tied())
    write("olmo3", olmo3())
    write("gemma", gemma1())
    write("gemma2", gemma2())
    write("gemma3", gemma3())
    write("deepseek_lite", deepseek_lite())
