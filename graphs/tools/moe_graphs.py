#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the MoE graphs (graphs/mixtral.flash.json, graphs/deepseek.flash.json)
from llama.flash.json's attention and the block pieces below. The JSON files
are the source the build embeds; this script is how they were made, so that a
change to a shared piece (the routed experts, MLA) is made once. Run it from
anywhere with python3; it needs nothing else. The shapes follow MaxText
e591f30 (layers/moe.py, layers/attention_mla.py); docs/graph-format.md
describes the ops.
"""
import copy
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, '..', 'llama.flash.json')) as _f:
    base = json.load(_f)
A = 'act'
def T(shape, dtype=A, ck=None, param=False, axes=None, group=None):
    t = {"shape": shape, "dtype": dtype}
    if param: t["param"] = True
    if group: t["gather_group"] = group
    if ck: t["checkpoint"] = ck if isinstance(ck, str) or len(ck) > 1 else ck[0]
    if axes is not None: t["axes"] = axes
    return t
def O(name, op, i, o, **kw):
    d = {"name": name, "op": op}
    if 'spec' in kw: d['spec'] = kw.pop('spec')
    d["in"] = i; d["out"] = o; d.update(kw); return d

MOE_DIMS = {
  "experts": {"from": "num_experts"},
  "topk": {"from": "num_experts_per_tok"},
  "ep_buffer": {"from": "moe_buffer_factor"},
  "moe_mlp": {"from": "base_moe_mlp_dim", "axis": "activation_mlp_moe", "weight_axis": "mlp_moe"},
}
SHARED_MLP = {"from": "shared_mlp_dim", "axis": "activation_mlp", "weight_axis": "mlp"}
TOK5 = lambda last: ["batch", "seq", "topk", "ep_buffer", last]
AX5 = lambda last: ["activation_batch_moe", "activation_length_moe", None, None, last]

def moe_graph(name, description, **dims):
    """A copy of llama's graph named `name`, its dims with MOE_DIMS and then
    `dims` added (a name already there keeps its place)."""
    g = copy.deepcopy(base)
    g["name"] = name
    g["description"] = description
    g["dims"].update(copy.deepcopy(MOE_DIMS))
    g["dims"].update(copy.deepcopy(dims))
    return g


def op_index(ops, name):
    """The index of the op called `name` in `ops`."""
    for i, o in enumerate(ops):
        if o["name"] == name:
            return i
    raise KeyError(name)


def moe_part(t, ops, inp, gate_axes, router):
    """The routed experts on normed input `inp` [b,s,e]; returns the output tensor name."""
    t["w_gate"] = T(["embed", "experts"], "weight", param=True, axes=gate_axes)
    t["router_logits"] = T(["batch", "seq", "experts"])
    ops.append(O("gate", "einsum", [inp, "w_gate"], ["router_logits"], spec="bse,ex->bsx"))
    src = "router_logits"
    if router == "sigmoid":
        t["router_scores"] = T(["batch", "seq", "experts"])
        ops.append(O("router_sigmoid", "sigmoid", ["router_logits"], ["router_scores"]))
        src = "router_scores"
    t["topk_raw"] = T(["batch", "seq", "topk"])
    t["topk_idx"] = T(["batch", "seq", "topk"], "int32")
    ops.append(O("top_k", "top_k", [src], ["topk_raw", "topk_idx"]))
    t["topk_w"] = T(["batch", "seq", "topk"])
    if router == "sigmoid":
        ops.append(O("router_scale", "scale", ["topk_raw"], ["topk_w"], value=1.0))
    else:
        ops.append(O("router_softmax", "softmax", ["topk_raw"], ["topk_w"]))
    # MaxText repeats each token k times, then sorts the copies by expert
    # (moe.py permute: jnp.repeat, then the sort): two arrays; with expert
    # parallelism the sorted rows land in the all-to-all's receive buffer
    t["tokens_rep"] = T(["batch", "seq", "topk", "embed"],
                        axes=["activation_batch_moe", "activation_length_moe", None, None])
    t["tokens"] = T(TOK5("embed"), axes=AX5(None))
    ops.append(O("repeat", "broadcast", [inp], ["tokens_rep"]))
    ops.append(O("permute", "gather", ["tokens_rep", "topk_idx"], ["tokens"], over="expert"))
    # the shard_map takes the expert weights as inputs: gathered together
    t["moe_wi_0"] = T(["experts", "embed", "moe_mlp"], "weight", param=True,
                      axes=["exp", "embed_moe", "mlp_moe"], group="moe_experts")
    t["moe_wi_1"] = T(["experts", "embed", "moe_mlp"], "weight", param=True,
                      axes=["exp", "embed_moe", "mlp_moe"], group="moe_experts")
    t["moe_wo"] = T(["experts", "moe_mlp", "embed"], "weight", param=True,
                    axes=["exp", "mlp_moe", "embed_moe"], group="moe_experts")
    t["moe_gate"] = T(TOK5("moe_mlp"), ck=["mlpwi_0", "moe_mlpwi_0"], axes=AX5("activation_mlp_moe"))
    t["moe_up"] = T(TOK5("moe_mlp"), ck=["moe_mlpwi_1"], axes=AX5("activation_mlp_moe"))
    t["moe_gate_act"] = T(TOK5("moe_mlp"), axes=AX5("activation_mlp_moe"))
    t["moe_mix"] = T(TOK5("moe_mlp"), axes=AX5("activation_mlp_moe"))
    t["moe_out"] = T(TOK5("embed"), ck=["mlpwo", "moe_mlpwo"], axes=AX5(None))
    ops.append(O("moe_wi_0", "einsum", ["tokens", "moe_wi_0"], ["moe_gate"], spec="bskfe,xem->bskfm", ragged="xf"))
    ops.append(O("moe_wi_1", "einsum", ["tokens", "moe_wi_1"], ["moe_up"], spec="bskfe,xem->bskfm", ragged="xf"))
    ops.append(O("moe_silu", "silu", ["moe_gate"], ["moe_gate_act"]))
    ops.append(O("moe_gated", "mul", ["moe_gate_act", "moe_up"], ["moe_mix"]))
    ops.append(O("moe_wo", "einsum", ["moe_mix", "moe_wo"], ["moe_out"], spec="bskfm,xme->bskfe", ragged="xf"))
    t["moe_back"] = T(["batch", "seq", "topk", "embed"])
    ops.append(O("unpermute", "gather", ["moe_out", "topk_idx"], ["moe_back"], over="expert"))
    t["moe_back_f32"] = T(["batch", "seq", "topk", "embed"], "fp32")
    t["topk_w_f32"] = T(["batch", "seq", "topk"], "fp32")
    t["moe_sum_f32"] = T(["batch", "seq", "embed"], "fp32")
    t["moe_y"] = T(["batch", "seq", "embed"])
    ops.append(O("combine_cast", "cast", ["moe_back"], ["moe_back_f32"]))
    ops.append(O("weights_cast", "cast", ["topk_w"], ["topk_w_f32"]))
    ops.append(O("combine", "einsum", ["moe_back_f32", "topk_w_f32"], ["moe_sum_f32"], spec="bske,bsk->bse"))
    ops.append(O("combine_out", "cast", ["moe_sum_f32"], ["moe_y"]))
    return "moe_y"

def dense_moe_part(t, ops, inp, gate_axes):
    """The routed experts on MaxText's dense path with capacity (sparse_matmul=false,
    capacity_factor > 0; moe.py dense_matmul, generate_masks): every expert takes
    up to `capacity` tokens of each sequence; dispatch and combine masks
    [batch,seq,experts,capacity] move tokens in and out (einsums BSM,BSEC->EBCM and
    EBCM,BSEC->BSM). Returns the output tensor name."""
    t["w_gate"] = T(["embed", "experts"], "weight", param=True, axes=gate_axes)
    t["router_logits"] = T(["batch", "seq", "experts"])
    t["topk_raw"] = T(["batch", "seq", "topk"])
    t["topk_idx"] = T(["batch", "seq", "topk"], "int32")
    t["topk_w"] = T(["batch", "seq", "topk"])
    mask_axes = ["activation_batch_moe", "activation_norm_length_moe", None, None]
    t["combine_mask"] = T(["batch", "seq", "experts", "capacity"], axes=mask_axes)
    t["dispatch_mask"] = T(["batch", "seq", "experts", "capacity"], "bool", axes=mask_axes)
    ops += [O("gate", "einsum", [inp, "w_gate"], ["router_logits"], spec="bse,ex->bsx"),
            O("top_k", "top_k", ["router_logits"], ["topk_raw", "topk_idx"]),
            O("router_softmax", "softmax", ["topk_raw"], ["topk_w"]),
            O("combine_mask", "one_hot", ["topk_idx", "topk_w"], ["combine_mask"]),
            O("dispatch_mask", "one_hot", ["topk_idx"], ["dispatch_mask"])]
    ax = lambda last: ["activation_exp", "activation_batch_moe", None, last]
    t["dispatched"] = T(["experts", "batch", "capacity", "embed"], axes=ax("activation_embed_moe"))
    for w, shape, axes in [("moe_wi_0", ["experts", "embed", "moe_mlp"], ["exp", "embed_moe", "mlp_moe"]),
                           ("moe_wi_1", ["experts", "embed", "moe_mlp"], ["exp", "embed_moe", "mlp_moe"]),
                           ("moe_wo", ["experts", "moe_mlp", "embed"], ["exp", "mlp_moe", "embed_moe"])]:
        t[w] = T(shape, "weight", param=True, axes=axes)
    t["moe_gate"] = T(["experts", "batch", "capacity", "moe_mlp"], ck=["mlpwi_0", "moe_mlpwi_0"],
                      axes=ax("activation_mlp"))
    t["moe_up"] = T(["experts", "batch", "capacity", "moe_mlp"], ck=["mlpwi_1", "moe_mlpwi_1"],
                    axes=ax("activation_mlp"))
    t["moe_gate_act"] = T(["experts", "batch", "capacity", "moe_mlp"], axes=ax("activation_mlp"))
    t["moe_mix"] = T(["experts", "batch", "capacity", "moe_mlp"], axes=ax("activation_mlp"))
    t["moe_out"] = T(["experts", "batch", "capacity", "embed"], ck=["mlpwo", "moe_mlpwo"],
                     axes=ax("activation_embed_moe"))
    t["moe_y"] = T(["batch", "seq", "embed"])
    ops += [O("dispatch", "einsum", [inp, "dispatch_mask"], ["dispatched"], spec="bse,bsxc->xbce"),
            O("moe_wi_0", "einsum", ["dispatched", "moe_wi_0"], ["moe_gate"], spec="xbce,xem->xbcm"),
            O("moe_wi_1", "einsum", ["dispatched", "moe_wi_1"], ["moe_up"], spec="xbce,xem->xbcm"),
            O("moe_silu", "silu", ["moe_gate"], ["moe_gate_act"]),
            O("moe_gated", "mul", ["moe_gate_act", "moe_up"], ["moe_mix"]),
            O("moe_wo", "einsum", ["moe_mix", "moe_wo"], ["moe_out"], spec="xbcm,xme->xbce"),
            O("combine", "einsum", ["moe_out", "combine_mask"], ["moe_y"], spec="xbce,bsxc->bse")]
    return "moe_y"


def llama_attention(L):
    """llama's layer up to h1 and the pre-MLP norm (hn)."""
    t, ops = {}, []
    for n, v in L["tensors"].items():
        t[n] = copy.deepcopy(v)
        if n == "ln2_rstd": break
    for o in L["ops"]:
        ops.append(copy.deepcopy(o))
        if o["name"] == "pre_mlp_norm": break
    return t, ops

def llama_moe(description, dims, part):
    """The mixtral graph: llama's attention and head, and the MoE block `part`
    makes (moe_part or dense_moe_part) on the normed input, as one layer."""
    g = copy.deepcopy(base)
    g["name"] = "mixtral"
    g["description"] = description
    g["dims"].update(dims)
    t, ops = llama_attention(base["layer"])
    y = part(t, ops)
    t["y"] = T(["batch", "seq", "embed"])
    ops.append(O("mlp_residual", "add", ["h1", y], ["y"]))
    g["layer"] = {"inputs": ["x"], "outputs": ["y"], "tensors": t, "ops": ops}
    return g


def mixtral_dense():
    """mixtral on MaxText's dense MoE path with capacity (the 'dropped' recipes)."""
    dims = copy.deepcopy(MOE_DIMS)
    del dims["ep_buffer"]
    dims["capacity"] = {"from": "expert_capacity"}
    return llama_moe(
        "Mixtral decoder layer on MaxText's dense MoE path (sparse_matmul=false, "
        "capacity_factor > 0): llama's attention, then router logits, top-k and a softmax over the chosen; "
        "dispatch and combine masks [batch,seq,experts,capacity] with expert_capacity slots per expert and "
        "sequence; the experts' matmuls over [experts,batch,capacity,...]; head as llama's",
        dims, lambda t, ops: dense_moe_part(t, ops, "hn", ["embed", None]))


def mixtral():
    return llama_moe(
        "Mixtral decoder layer as MaxText runs it (decoder_block mixtral): llama's attention "
        "(RMSNorm, GQA, RoPE, the flash kernel) and a routed MoE block on MaxText's default sparse path: "
        "router logits, top-k and a softmax over the chosen, tokens permuted to [batch,seq,top-k,buffer,embed] "
        "(the expert-parallel all-to-all's receive buffer), Megablox grouped matmuls over the experts, "
        "unpermuted, cast to fp32 and summed by the routing weights; head as llama's",
        copy.deepcopy(MOE_DIMS), lambda t, ops: moe_part(t, ops, "hn", ["embed", None], "softmax"))

def mla_attention():
    t, ops = {}, []
    t["x"] = T(["batch", "seq", "embed"], ck="decoder_layer_input")
    t["ln1_scale"] = T(["embed"], "weight", param=True, axes=["norm"])
    t["xn"] = T(["batch", "seq", "embed"]); t["ln1_rstd"] = T(["batch", "seq"], "fp32")
    ops.append(O("pre_attention_norm", "rmsnorm", ["x", "ln1_scale"], ["xn", "ln1_rstd"]))
    # query: low rank, norm, up projection (q_lora_rank > 0)
    t["wq_a"] = T(["embed", "q_lora"], "weight", param=True, axes=["embed", "q_lora_up_proj"])
    t["q_a"] = T(["batch", "seq", "q_lora"], ck="query_wa_proj")
    t["q_norm_scale"] = T(["q_lora"], "weight", param=True, axes=["norm"])
    t["q_an"] = T(["batch", "seq", "q_lora"], ck="mla_q"); t["q_rstd"] = T(["batch", "seq"], "fp32")
    t["wq_b"] = T(["q_lora", "heads", "qk_head"], "weight", param=True, axes=["q_lora", "q_heads", "kv"])
    t["q_raw"] = T(["batch", "seq", "heads", "qk_head"])
    t["q"] = T(["batch", "seq", "heads", "qk_head"], ck="query_proj")
    ops += [O("wq_a", "einsum", ["xn", "wq_a"], ["q_a"], spec="bse,er->bsr"),
            O("q_norm", "rmsnorm", ["q_a", "q_norm_scale"], ["q_an", "q_rstd"]),
            O("wq_b", "einsum", ["q_an", "wq_b"], ["q_raw"], spec="bsr,rhd->bshd"),
            O("q_rope", "rope", ["q_raw"], ["q"])]
    # key/value: one low-rank projection with the shared RoPE key
    t["wkv_a"] = T(["embed", "kv_a"], "weight", param=True, axes=["embed", "kv_lora_up_proj"])
    t["kv_a_out"] = T(["batch", "seq", "kv_a"], ck="kv_wa_proj")
    t["kv_main"] = T(["batch", "seq", "kv_lora"]); t["k_pe_raw"] = T(["batch", "seq", "qk_rope"])
    t["kv_norm_scale"] = T(["kv_lora"], "weight", param=True, axes=["norm"])
    t["kv_n"] = T(["batch", "seq", "kv_lora"], ck="mla_kv"); t["kv_rstd"] = T(["batch", "seq"], "fp32")
    # MaxText's wkv_b is one weight and one einsum to [b,s,h,nope+v], its
    # output split into the key's no-RoPE part and the value
    t["wkv_b"] = T(["kv_lora", "heads", "kv_up"], "weight", param=True, axes=["kv_lora", "kv_heads", "kv_head_dim"])
    t["kv_up"] = T(["batch", "seq", "heads", "kv_up"])
    t["k_nope"] = T(["batch", "seq", "heads", "qk_nope"])
    t["v"] = T(["batch", "seq", "heads", "v_head"], ck="value_proj")
    t["k_pe"] = T(["batch", "seq", "qk_rope"])
    t["k_pe_heads"] = T(["batch", "seq", "heads", "qk_rope"])
    t["k"] = T(["batch", "seq", "heads", "qk_head"], ck="key_proj")
    ops += [O("wkv_a", "einsum", ["xn", "wkv_a"], ["kv_a_out"], spec="bse,ec->bsc"),
            O("kv_split", "split", ["kv_a_out"], ["kv_main", "k_pe_raw"]),
            O("kv_norm", "rmsnorm", ["kv_main", "kv_norm_scale"], ["kv_n", "kv_rstd"]),
            O("wkv_b", "einsum", ["kv_n", "wkv_b"], ["kv_up"], spec="bsc,chd->bshd"),
            O("kv_up_split", "split", ["kv_up"], ["k_nope", "v"]),
            O("k_rope", "rope", ["k_pe_raw"], ["k_pe"]),
            O("k_pe_broadcast", "broadcast", ["k_pe"], ["k_pe_heads"]),
            O("key_concat", "concat", ["k_nope", "k_pe_heads"], ["k"])]
    # the flash kernel on [b,h,s,d]; values have their own head dim
    t["q_t"] = T(["batch", "heads", "seq", "qk_head"]); t["k_t"] = T(["batch", "heads", "seq", "qk_head"])
    t["v_t"] = T(["batch", "heads", "seq", "v_head"])
    t["ctx"] = T(["batch", "heads", "seq", "v_head"], ck="context")
    t["attn_lse"] = T(["batch", "heads", "seq"], "fp32", ck="context")
    t["attn_out"] = T(["batch", "seq", "heads", "v_head"], ck="attention_out")
    t["wo"] = T(["heads", "v_head", "embed"], "weight", param=True)
    t["attn"] = T(["batch", "seq", "embed"], ck="out_proj")
    t["h1"] = T(["batch", "seq", "embed"])
    t["ln2_scale"] = T(["embed"], "weight", param=True, axes=["norm"])
    t["hn"] = T(["batch", "seq", "embed"]); t["ln2_rstd"] = T(["batch", "seq"], "fp32")
    ops += [O("q_transpose", "transpose", ["q"], ["q_t"]), O("k_transpose", "transpose", ["k"], ["k_t"]),
            O("v_transpose", "transpose", ["v"], ["v_t"]),
            O("attention", "flash_attention", ["q_t", "k_t", "v_t"], ["ctx", "attn_lse"], causal=True, layout="bhsd"),
            O("context_transpose", "transpose", ["ctx"], ["attn_out"]),
            O("out_proj", "einsum", ["attn_out", "wo"], ["attn"], spec="bshd,hde->bse"),
            O("attention_residual", "add", ["x", "attn"], ["h1"]),
            O("pre_mlp_norm", "rmsnorm", ["h1", "ln2_scale"], ["hn", "ln2_rstd"])]
    return t, ops

def dense_mlp(t, ops, inp, dim, prefix):
    t[prefix + "wi_0"] = T(["embed", dim], "weight", param=True)
    t[prefix + "wi_1"] = T(["embed", dim], "weight", param=True)
    t[prefix + "wo"] = T([dim, "embed"], "weight", param=True)
    t[prefix + "gate"] = T(["batch", "seq", dim], ck="mlpwi_0")
    t[prefix + "up"] = T(["batch", "seq", dim], ck="mlpwi_1")
    t[prefix + "gate_act"] = T(["batch", "seq", dim]); t[prefix + "mix"] = T(["batch", "seq", dim])
    t[prefix + "out"] = T(["batch", "seq", "embed"], ck="mlpwo")
    ops += [O(prefix + "wi_0", "einsum", [inp, prefix + "wi_0"], [prefix + "gate"], spec="bse,em->bsm"),
            O(prefix + "wi_1", "einsum", [inp, prefix + "wi_1"], [prefix + "up"], spec="bse,em->bsm"),
            O(prefix + "silu", "silu", [prefix + "gate"], [prefix + "gate_act"]),
            O(prefix + "gated", "mul", [prefix + "gate_act", prefix + "up"], [prefix + "mix"]),
            O(prefix + "wo", "einsum", [prefix + "mix", prefix + "wo"], [prefix + "out"], spec="bsm,me->bse")]
    return prefix + "out"

def deepseek():
    g = moe_graph("deepseek", ("DeepSeek-V2/V3 decoder layers as MaxText runs them (decoder_block deepseek): MLA attention "
        "(low-rank query and key/value projections with their norms, a shared RoPE key, the flash kernel), then "
        "first_num_dense_layers dense layers (a gated MLP of base_mlp_dim) and MoE layers: sigmoid router scores, "
        "top-k, tokens permuted to the expert-parallel buffer, Megablox grouped matmuls, the fp32 weighted "
        "combine, plus shared experts (one gated MLP of shared_experts x base_moe_mlp_dim); head as llama's"),
        shared_mlp=SHARED_MLP)
    d = g["dims"]
    d["q_lora"] = {"from": "q_lora_rank"}
    d["kv_lora"] = {"from": "kv_lora_rank"}
    d["kv_a"] = {"from": "kv_a_dim"}
    d["kv_up"] = {"from": "kv_up_dim"}
    d["qk_head"] = {"from": "qk_head_dim"}
    d["qk_nope"] = {"from": "qk_nope_head_dim"}
    d["qk_rope"] = {"from": "qk_rope_head_dim"}
    d["v_head"] = {"from": "v_head_dim"}
    del d["kv_heads"]; del d["head_dim"]
    # dense
    t, ops = mla_attention()
    out = dense_mlp(t, ops, "hn", "mlp", "mlp_")
    t["y"] = T(["batch", "seq", "embed"]); ops.append(O("mlp_residual", "add", ["h1", out], ["y"]))
    dense = {"inputs": ["x"], "outputs": ["y"], "tensors": t, "ops": ops}
    t, ops = mla_attention()
    routed = moe_part(t, ops, "hn", ["embed_moe", None], "sigmoid")
    shared = dense_mlp(t, ops, "hn", "shared_mlp", "shared_")
    t["ffn_out"] = T(["batch", "seq", "embed"])
    ops.append(O("shared_add", "add", [routed, shared], ["ffn_out"]))
    t["y"] = T(["batch", "seq", "embed"]); ops.append(O("mlp_residual", "add", ["h1", "ffn_out"], ["y"]))
    moe = {"inputs": ["x"], "outputs": ["y"], "tensors": t, "ops": ops}
    return stacked(g, {"dense": dense, "moe": moe},
                   [{"name": "dense", "block": "dense", "first": "first_num_dense_layers"},
                    {"name": "moe", "block": "moe"}])


def indexer_part(t, ops):
    """DeepSeek-V3.2's sparse-attention indexer in an MLA block, after the
    key and before the kernel (MaxText e591f30, layers/attention_mla.py,
    Indexer.__call__, in the sparse training stage without its KL loss):
    its query from the normed low-rank query (wq_b), one shared key from
    the normed input (wk, a LayerNorm with bias), both rotated over their
    first qk_rope_head_dim dims; per-head weights from the input in fp32
    (weights_proj), scaled; the scores q.k over every key for each head,
    ReLU'd and summed by the head weights into [batch, seq, seq] fp32. XLA
    computes that in one output fusion of the contraction (the compiled
    step's dump: the dot, the ReLU, the product and the sum over heads in
    one kernel; the [batch, seq, seq, heads] scores never reach HBM): a
    three-operand einsum here, its FLOPs the contraction's (the ReLU and
    the weighting, 3 per score and head, 1/(2 x indexer_head_dim) of them,
    are left out). Then the top indexer_topk keys: XLA:TPU sorts the whole
    row, values and indices [batch, seq, seq] (the dump's top_k outputs),
    of which the indexer reads the cutoff; and the mask of the picked keys,
    which Tokamax's dynamic splash kernel takes as the int8 blocks of its
    forward pass and of its key/value backward pass, [batch, seq, seq]
    each. The indexer's inputs are stop-gradient'ed and its mask is made
    by comparisons: no gradient reaches it, nothing in it has a backward,
    and the kernel keeps the two masks for its own."""
    BS = ["batch", "seq"]
    BSS = ["batch", "seq", "key_seq"]
    t["idx_wq_b"] = T(["q_lora", "idx_heads", "idx_head"], "weight", param=True,
                      axes=["q_lora", "q_heads", "kv"])
    t["idx_q_raw"] = T(BS + ["idx_heads", "idx_head"])
    t["idx_q_pe_raw"] = T(BS + ["idx_heads", "qk_rope"])
    t["idx_q_nope"] = T(BS + ["idx_heads", "idx_nope"])
    t["idx_q_pe"] = T(BS + ["idx_heads", "qk_rope"])
    t["idx_q"] = T(BS + ["idx_heads", "idx_head"])
    ops += [O("idx_wq_b", "einsum", ["q_an", "idx_wq_b"], ["idx_q_raw"], spec="bsr,rhd->bshd"),
            O("idx_q_split", "split", ["idx_q_raw"], ["idx_q_pe_raw", "idx_q_nope"]),
            O("idx_q_rope", "rope", ["idx_q_pe_raw"], ["idx_q_pe"]),
            O("idx_q_concat", "concat", ["idx_q_pe", "idx_q_nope"], ["idx_q"])]
    t["idx_wk"] = T(["embed", "idx_head"], "weight", param=True, axes=["embed", "kv"])
    t["idx_k_raw"] = T(BS + ["idx_head"])
    t["idx_k_norm_scale"] = T(["idx_head"], "weight", param=True, axes=[None])
    t["idx_k_norm_bias"] = T(["idx_head"], "weight", param=True, axes=[None])
    t["idx_k_n"] = T(BS + ["idx_head"])
    t["idx_k_mean"] = T(BS, "fp32"); t["idx_k_rstd"] = T(BS, "fp32")
    t["idx_k_pe_raw"] = T(BS + ["qk_rope"])
    t["idx_k_nope"] = T(BS + ["idx_nope"])
    t["idx_k_pe"] = T(BS + ["qk_rope"])
    t["idx_k"] = T(BS + ["idx_head"])
    ops += [O("idx_wk", "einsum", ["xn", "idx_wk"], ["idx_k_raw"], spec="bse,ed->bsd"),
            O("idx_k_norm", "layernorm", ["idx_k_raw", "idx_k_norm_scale", "idx_k_norm_bias"],
              ["idx_k_n", "idx_k_mean", "idx_k_rstd"]),
            O("idx_k_split", "split", ["idx_k_n"], ["idx_k_pe_raw", "idx_k_nope"]),
            O("idx_k_rope", "rope", ["idx_k_pe_raw"], ["idx_k_pe"]),
            O("idx_k_concat", "concat", ["idx_k_pe", "idx_k_nope"], ["idx_k"])]
    t["idx_w_proj"] = T(["embed", "idx_heads"], "fp32", param=True, axes=["embed", "q_heads"])
    t["idx_w_raw"] = T(BS + ["idx_heads"], "fp32")
    t["idx_w"] = T(BS + ["idx_heads"], "fp32")
    t["idx_score"] = T(BSS, "fp32")
    t["idx_sorted"] = T(BSS, "fp32")
    t["idx_order"] = T(BSS, "int32")
    t["idx_mask"] = T(BSS, "int8")
    t["idx_mask_dkv"] = T(BSS, "int8")
    # MaxText scales by indexer_n_heads^-0.5 x indexer_head_dim^-0.5 (64 and 128)
    ops += [O("idx_weights", "einsum", ["xn", "idx_w_proj"], ["idx_w_raw"], spec="bse,eh->bsh"),
            O("idx_weights_scale", "scale", ["idx_w_raw"], ["idx_w"], value=64 ** -0.5 * 128 ** -0.5),
            O("idx_score", "einsum", ["idx_q", "idx_k", "idx_w"], ["idx_score"], spec="bthd,bsd,bth->bts"),
            O("idx_top_k", "top_k", ["idx_score"], ["idx_sorted", "idx_order"]),
            O("idx_mask", "one_hot", ["idx_order"], ["idx_mask"]),
            O("idx_mask_dkv", "one_hot", ["idx_order"], ["idx_mask_dkv"])]

def with_indexer(g, runs=True):
    """g (deepseek's) with the indexer in every layer's MLA, its masks the
    flash kernel's fourth and fifth inputs; with `runs` false, its weights
    alone: MaxText skips it when the sequence is at most indexer_topk (it
    would pick every key) and the compiler drops its projections, whose
    results nothing reads."""
    g = copy.deepcopy(g)
    d = g["dims"]
    d["key_seq"] = {"from": "max_target_length"}
    d["idx_heads"] = {"from": "indexer_n_heads", "axis": "activation_heads", "weight_axis": "heads"}
    d["idx_head"] = {"from": "indexer_head_dim"}
    d["idx_nope"] = {"from": "indexer_nope_dim"}
    for blk in g["blocks"].values():
        t, ops = blk["tensors"], blk["ops"]
        part_t, part_ops = {}, []
        indexer_part(part_t, part_ops)
        if not runs:
            t.update({k: v for k, v in part_t.items() if v.get("param")})
            continue
        t.update(part_t)
        at = op_index(ops, "q_transpose")
        ops[at:at] = part_ops
        att = ops[op_index(ops, "attention")]
        att["in"] = att["in"] + ["idx_mask", "idx_mask_dkv"]
    if not runs:
        g["description"] += ("; with the weights of DeepSeek-V3.2's sparse-attention indexer in every "
                             "layer (use_indexer) and nothing of it run: MaxText skips the indexer when "
                             "max_target_length is at most indexer_topk")
        return g
    g["description"] += ("; with DeepSeek-V3.2's sparse-attention indexer in every layer's MLA "
                         "(use_indexer, sparse training without the KL loss, on Tokamax's splash "
                         "kernel): its query from the low-rank query, one key from the input "
                         "(LayerNorm with bias), fp32 head weights, the scores' head-weighted sum "
                         "[batch, seq, seq] in fp32 (one fused contraction: the per-head scores "
                         "stay in the kernel), the row sorted for the top indexer_topk (values and "
                         "indices [batch, seq, seq]), and the mask of the picked keys as the int8 "
                         "blocks the kernel reads and keeps, for its forward and its key/value "
                         "backward; no gradient reaches the indexer")
    return g


def stacked(g, blocks, stack):
    """g (a copy of llama's graph) with `blocks` and `stack` in place of its
    one `layer`, the head kept last as the files write it."""
    del g["layer"]
    head = g.pop("head")
    g["blocks"] = blocks
    g["stack"] = stack
    g["head"] = head
    return g

def with_mtp(g):
    """g with one multi-token prediction module (mtp_num_layers=1; MaxText's
    layers/multi_token_prediction.py): the embedding of the tokens shifted by
    one (the shared table), RMSNorms of it and of the last layer's output,
    their projection W_p [2E, E] (as two [E, E] halves summed: the same
    params and FLOPs), one more MoE layer, the shared final norm and logits,
    a second cross-entropy, scaled by mtp_loss_scaling_factor (0.1) and added
    to the loss. It runs in the head after the layers, outside the layer
    scan's remat: its backward keeps every residual."""
    g = copy.deepcopy(g)
    h = g["head"]
    moe = g["blocks"]["moe"]
    t, ops = h["tensors"], h["ops"]
    BSE = ["batch", "seq", "embed"]
    t["mtp_token_ids"] = T(["batch", "seq"], "int32")
    t["mtp_target_ids"] = T(["batch", "seq"], "int32")
    for n in ("mtp_emb", "mtp_emb_n", "mtp_hid_n", "mtp_proj_e", "mtp_proj_h", "mtp_x"):
        t[n] = T(BSE)
    for n in ("mtp_emb_rstd", "mtp_hid_rstd", "mtp_final_rstd", "mtp_loss_lse"):
        t[n] = T(["batch", "seq"], "fp32")
    for n in ("mtp_emb_scale", "mtp_hid_scale"):
        t[n] = T(["embed"], "weight", param=True, axes=["norm"])
    for n in ("mtp_wp_e", "mtp_wp_h"):
        t[n] = T(["embed", "embed"], "weight", param=True, axes=["embed", None])
    ops += [O("mtp_embed", "embedding", ["embedding", "mtp_token_ids"], ["mtp_emb"]),
            O("mtp_embedding_norm", "rmsnorm", ["mtp_emb", "mtp_emb_scale"], ["mtp_emb_n", "mtp_emb_rstd"]),
            O("mtp_hidden_norm", "rmsnorm", ["hL", "mtp_hid_scale"], ["mtp_hid_n", "mtp_hid_rstd"]),
            O("mtp_projection_e", "einsum", ["mtp_emb_n", "mtp_wp_e"], ["mtp_proj_e"], spec="bse,ef->bsf"),
            O("mtp_projection_h", "einsum", ["mtp_hid_n", "mtp_wp_h"], ["mtp_proj_h"], spec="bse,ef->bsf"),
            O("mtp_projection", "add", ["mtp_proj_e", "mtp_proj_h"], ["mtp_x"])]
    # the MoE layer, its names prefixed and its checkpoint names dropped (no
    # remat policy reaches the head)
    ren = lambda n: "mtp_x" if n == "x" else "mtp_" + n
    for n, v in moe["tensors"].items():
        if n == "x":
            continue
        v = copy.deepcopy(v)
        v.pop("checkpoint", None)
        t[ren(n)] = v
    for o in moe["ops"]:
        o = copy.deepcopy(o)
        o["name"] = "mtp_" + o["name"]
        o["in"] = [ren(n) for n in o["in"]]
        o["out"] = [ren(n) for n in o["out"]]
        ops.append(o)
    t["mtp_hf"] = T(BSE)
    t["mtp_logits"] = copy.deepcopy(t["logits"])
    t["mtp_loss"] = T([], "fp32")
    t["mtp_loss_scaled"] = T([], "fp32")
    t["total_loss"] = T([], "fp32")
    ops += [O("mtp_final_norm", "rmsnorm", [ren("y"), "final_scale"], ["mtp_hf", "mtp_final_rstd"]),
            O("mtp_logits", "einsum", ["mtp_hf", "w_logits"], ["mtp_logits"], spec="bse,ev->bsv"),
            O("mtp_cross_entropy", "cross_entropy", ["mtp_logits", "mtp_target_ids"], ["mtp_loss", "mtp_loss_lse"]),
            O("mtp_loss_scale", "scale", ["mtp_loss"], ["mtp_loss_scaled"], value=0.1),
            O("total_loss", "add", ["loss", "mtp_loss_scaled"], ["total_loss"])]
    h["inputs"] = h["inputs"] + ["mtp_token_ids", "mtp_target_ids"]
    h["outputs"] = ["total_loss"]
    g["description"] += ("; with one multi-token prediction module in the head (mtp_num_layers=1: the "
                         "shifted tokens' embedding, two RMSNorms, the [2E, E] projection, one more MoE "
                         "layer keeping all its residuals, the shared final norm and logits, a second "
                         "cross-entropy)")
    return g


# ---- DeepSeek-V3's batch-split schedule -------------------------------------
# MaxText e591f30, models/deepseek_batchsplit.py (use_batch_split_schedule with
# batch_split_factor 2, the bf16 path): the MoE layers run in a custom_vjp
# scan of their own. Each layer's batch is in two halves (the scan carries the
# halves; `split` before the first MoE layer), run staggered: the first half's
# MLA, the second's, then each half's shared expert and routing, each half's
# grouped matmuls, and the unroute. The layer's residuals are the ones that
# scan returns, whatever remat_policy says: the halves of the layer input, the
# attention output (both offloaded to pinned host memory), the kernel's
# logsumexp, the attention block's output (mla_out), the two gating matmuls'
# outputs (offloaded) and the second half's selected experts; the backward
# re-runs the rest from them. All of a layer's weights are gathered at once
# (one optimization barrier), the next layer's during this one.
def halve(tensors, ops, prefix, shared):
    """The tensors and ops of one half: names prefixed (params and the names
    in `shared` kept), the batch dim the half's (ubatch)."""
    ren = lambda n: n if n in shared or tensors[n].get("param") else prefix + n
    t = {}
    for n, v in tensors.items():
        v = copy.deepcopy(v)
        v.pop("checkpoint", None)
        v["shape"] = ["ubatch" if d == "batch" else d for d in v["shape"]]
        if v.get("param"):
            v.pop("gather_group", None)
            v["gather_group"] = "batch_split_layer"
        t[ren(n)] = v
    o = []
    for op in ops:
        op = copy.deepcopy(op)
        op["name"] = prefix + op["name"]
        op["in"] = [ren(n) for n in op["in"]]
        op["out"] = [ren(n) for n in op["out"]]
        o.append(op)
    return t, o


def batch_split_moe(t, ops, inp):
    """The routed experts of the batch-split MoE layer on normed input `inp`
    [b,s,e] (route_compute_unroute): sigmoid scores of a bf16 gate, top-k;
    the tokens and the choices all-gathered over the expert axis (g: its
    size) and sorted by expert, k copies of each token [b,s,g,k,e], of which
    the grouped matmuls take the rows of this shard's experts; the output
    sorted back, summed over k and reduce-scattered over the expert axis."""
    t["w_gate"] = T(["embed", "experts"], "weight", param=True, axes=["embed", None])
    t["router_logits"] = T(["batch", "seq", "experts"])
    t["router_scores"] = T(["batch", "seq", "experts"])
    t["topk_raw"] = T(["batch", "seq", "topk"])
    t["topk_idx"] = T(["batch", "seq", "topk"], "int32")
    t["topk_w"] = T(["batch", "seq", "topk"])
    ops += [O("gate", "einsum", [inp, "w_gate"], ["router_logits"], spec="bse,ex->bsx"),
            O("router_sigmoid", "sigmoid", ["router_logits"], ["router_scores"]),
            O("top_k", "top_k", ["router_scores"], ["topk_raw", "topk_idx"]),
            O("router_scale", "scale", ["topk_raw"], ["topk_w"], value=1.0)]
    G = lambda *last: ["batch", "seq", "expert_shards"] + list(last)
    t["tokens_ag"] = T(G("embed"))
    t["experts_ag"] = T(G("topk"), "int32")
    t["tokens"] = T(G("topk", "embed"))
    ops += [O("token_all_gather", "broadcast", [inp], ["tokens_ag"]),
            O("choice_all_gather", "broadcast", ["topk_idx"], ["experts_ag"]),
            O("route", "gather", ["tokens_ag", "experts_ag"], ["tokens"])]
    for w, shape, axes in [("moe_wi_0", ["experts", "embed", "moe_mlp"], ["expert_only", "embed_moe", None]),
                           ("moe_wi_1", ["experts", "embed", "moe_mlp"], ["expert_only", "embed_moe", None]),
                           ("moe_wo", ["experts", "moe_mlp", "embed"], ["expert_only", None, "embed_moe"])]:
        t[w] = T(shape, "weight", param=True, axes=axes)
    for n in ("moe_gate", "moe_up", "moe_gate_act", "moe_mix"):
        t[n] = T(G("topk", "moe_mlp"))
    t["moe_out"] = T(G("topk", "embed"))
    t["moe_back"] = T(G("topk", "embed"))
    t["moe_sum"] = T(G("embed"))
    t["moe_y"] = T(["batch", "seq", "embed"])
    ops += [O("moe_wi_0", "einsum", ["tokens", "moe_wi_0"], ["moe_gate"], spec="bsgke,xem->bsgkm", ragged="xg"),
            O("moe_wi_1", "einsum", ["tokens", "moe_wi_1"], ["moe_up"], spec="bsgke,xem->bsgkm", ragged="xg"),
            O("moe_silu", "silu", ["moe_gate"], ["moe_gate_act"]),
            O("moe_gated", "mul", ["moe_gate_act", "moe_up"], ["moe_mix"]),
            O("moe_wo", "einsum", ["moe_mix", "moe_wo"], ["moe_out"], spec="bsgkm,xme->bsgke", ragged="xg"),
            O("unroute", "gather", ["moe_out", "experts_ag"], ["moe_back"]),
            O("unroute_sum", "einsum", ["moe_back"], ["moe_sum"], spec="bsgke->bsge"),
            O("expert_reduce_scatter", "einsum", ["moe_sum"], ["moe_y"], spec="bsge->bse")]
    return "moe_y"


# What the schedule's scan keeps of each half (the residual dicts of
# batch_split_schedule and unroute_ubatch_fn), by this graph's names:
# `offload` where it moves them to pinned host memory.
BATCH_SPLIT_KEPT = {"ctx": "offload", "attn_lse": "device", "h1": "device",
                    "moe_gate": "offload", "moe_up": "offload"}


def batch_split(g):
    """g (deepseek's) with its MoE layers on the batch-split schedule: the
    MoE block made twice on half the batch (ubatch), staggered as the
    schedule runs it, its residuals the schedule's (own_residuals, `kept`),
    its weights one gather group gathered a layer ahead."""
    g = copy.deepcopy(g)
    g["dims"]["ubatch"] = {"from": "per_device_batch_size", "div": "batch_split_factor",
                           "axis": "activation_batch"}
    g["dims"]["expert_shards"] = {"from": "expert_shards"}
    t, ops = mla_attention()
    attn_end = len(ops)
    y = batch_split_moe(t, ops, "hn")
    shared = dense_mlp(t, ops, "hn", "shared_mlp", "shared_")
    t["ffn_out"] = T(["batch", "seq", "embed"])
    ops.append(O("shared_add", "add", [y, shared], ["ffn_out"]))
    t["y"] = T(["batch", "seq", "embed"])
    ops.append(O("mlp_residual", "add", ["h1", "ffn_out"], ["y"]))
    del t["x"]
    t["x"] = T(["batch", "seq", "embed"])
    blk_t = {"x": {"shape": ["batch", "seq", "embed"], "dtype": A, "kept": "offload"}}
    halves = []
    for h in ("a_", "b_"):
        ht, ho = halve(t, ops, h, ())
        for n, place in BATCH_SPLIT_KEPT.items():
            ht[h + n]["kept"] = place
        halves.append((ht, ho))
        blk_t.update(ht)
    # the second half's choices: unroute_ubatch_fn's residual (the first
    # half's unroute keeps none; the backward routes again from mla_out)
    blk_t["b_experts_ag"]["kept"] = "device"
    blk_t["y"] = T(["batch", "seq", "embed"])
    (at, ao), (bt, bo) = halves
    # staggered as the schedule runs them: each half's MLA, each half's
    # shared expert and routing, each half's grouped matmuls, each half's
    # unroute (the second half's finishes in the next layer's scan step)
    def phase(o, names):
        return [op for op in o[attn_end:] if op["name"].split("_", 1)[1] in names]
    route = {"gate", "router_sigmoid", "top_k", "router_scale", "token_all_gather",
             "choice_all_gather", "route", "shared_wi_0", "shared_wi_1", "shared_silu",
             "shared_gated", "shared_wo"}
    compute = {"moe_wi_0", "moe_wi_1", "moe_silu", "moe_gated", "moe_wo"}
    unroute = {"unroute", "unroute_sum", "expert_reduce_scatter", "shared_add", "mlp_residual"}
    assert len(ops) - attn_end == len(route) + len(compute) + len(unroute)
    blk_ops = [O("batch_split", "split", ["x"], ["a_x", "b_x"])]
    blk_ops += ao[:attn_end] + bo[:attn_end]
    for names in (route, compute, unroute):
        blk_ops += phase(ao, names) + phase(bo, names)
    blk_ops.append(O("batch_merge", "concat", ["a_y", "b_y"], ["y"]))
    g["blocks"]["moe"] = {"inputs": ["x"], "outputs": ["y"], "tensors": blk_t, "ops": blk_ops}
    for k in g["stack"]:
        if k["block"] == "moe":
            k["own_residuals"] = True
            k["gathers_ahead"] = True
    g["description"] += (
        "; with the MoE layers on MaxText's batch-split schedule (use_batch_split_schedule, "
        "batch_split_factor 2): each layer on two halves of the batch, staggered; tokens and "
        "choices all-gathered over the expert axis and sorted by expert, the grouped matmuls on "
        "this shard's experts, the output sorted back, summed over k and reduce-scattered; the "
        "residuals the schedule's custom_vjp keeps whatever the policy (the layer input and the "
        "attention output offloaded to host, the logsumexp and the attention block's output on "
        "the device, the gating matmuls' outputs offloaded, the second half's choices); every "
        "weight of the layer gathered at once, the next layer's during this one")
    return g


def write(name, g, variant="flash"):
    with open(os.path.join(HERE, "..", f"{name}.{variant}.json"), "w") as f:
        json.dump(g, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    write("mixtral", mixtral())
    write("mixtral", mixtral_dense(), "flash.dense_moe")
    write("deepseek", deepseek())
    write("deepseek", with_mtp(deepseek()), "flash.mtp")
    write("deepseek", with_indexer(deepseek()), "flash.indexer")
    write("deepseek", with_indexer(deepseek(), runs=False), "flash.indexer_skipped")
    write("deepseek", batch_split(deepseek()), "flash.batchsplit")
