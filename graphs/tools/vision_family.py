#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the Qwen3-VL graphs (graphs/qwen3_vl.flash.json: the qwen3_tied
graph's layers and head, graphs/qwen3_vl_moe.flash.json: the qwen3_moe
graph's) with Qwen3-VL's vision encoder in the head, before the layers.
Run it from anywhere with python3 (it needs nothing else), then
ep_variants.py. The shapes follow MaxText e591f30: models/qwen3.py
(Qwen3OmniMoeVisionEncoder, its blocks, patch mergers and projector, which
models/qwen3_vl_vision.py subclasses unchanged), layers/encoders.py
(VisionEncoder: the encoder's outputs behind stop_gradient under
freeze_vision_encoder_params), models/models.py and layers/decoders.py (the
image tokens merged into the token embeddings, multimodal/utils.py
merge_mm_embeddings), multimodal/processor_qwen3_omni.py
(get_dummy_image_shape_for_init_qwen3_omni: train_compile's images);
docs/graph-format.md describes the ops and docs/memory-model.md the rule.

The encoder, per image of vit_patches patches (one image an example in
MaxText's train_compile; image_token_share sets more):
  the image (int32, as get_shaped_batch gives it) cast to fp32 and
  projected per patch (the Conv3D whose stride is its kernel: a matmul),
  plus the learned position table interpolated to the patches (a gather);
  num_hidden_layers_for_vit blocks: LayerNorm, q/k/v projections, 2D RoPE
  on q and k, dot-product attention (attention_for_vit's default: the
  [heads, patches, patches] fp32 scores, whose softmax XLA fuses into the
  weighted sum's dot),
  output projection, residual; LayerNorm, GeLU MLP, residual; every
  activation fp32 (dtype_mm and DenseGeneral's default);
  a deepstack merger (LayerNorm over merge^2 patches, GeLU MLP to
  base_emb_dim) on each layer deepstack_visual_indexes_for_vit names.
Every encoder param is `frozen`: MaxText stops the encoder's outputs'
gradient (freeze_vision_encoder_params, its default), so the encoder runs
forward only, keeps nothing for backward and its params get no gradient
buffer (they keep their optimizer state: the optimizer is not masked).
The projector (the merger after the encoder: LayerNorm per patch, merge^2
patches concatenated, GeLU MLP to base_emb_dim) trains: its ops have a
backward and keep their inputs from the head's forward to its backward.
Its output, cast to the compute dtype, replaces the image placeholders'
token embeddings (a gather of the image tokens to their positions, added
to the embedded tokens: MaxText's where(mask, image, text) reads and
writes the same buffers).

Left out, each below the step's peak: the biases (params no op reads:
they count in the params and memory, their adds fuse into the matmuls);
the deepstack features' adds to the first decoder layers' outputs (under
scan_layers=false; with scanned layers MaxText drops them), whose mergers
run here with outputs no op reads; the interpolation's four corners
(one gather stands for them). The encoder's params have MaxText's axes:
the attention's q/k/v/o are sharded as the decoder's (embed, heads), every
other encoder and projector param is replicated (DenseGeneral's,
LayerNorm's and Conv's default: no logical axes).
"""
import copy
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ beside the generators
import family_b  # noqa: E402
import moe_family_a  # noqa: E402
from moe_graphs import T, O, write  # noqa: E402

F32 = "fp32"
IMG = ["batch", "vit_n", "vit_p"]  # an example's images' patches

VIT_DIMS = {
    "vit_n": {"from": "vit_images"},
    "vit_p": {"from": "vit_patches"},
    "vit_pix": {"from": "vit_patch_volume"},
    "vit_e": {"from": "hidden_size_for_vit"},
    "vit_m": {"from": "intermediate_size_for_vit"},
    "vit_h": {"from": "num_attention_heads_for_vit", "axis": "activation_heads",
              "weight_axis": "heads"},
    "vit_d": {"from": "hidden_size_for_vit", "div": "num_attention_heads_for_vit"},
    "vit_t": {"from": "vit_tokens"},
    "vit_q": {"from": "vit_merged_dim"},
    "vit_pos": {"from": "num_position_embeddings_for_vit"},
}


def P(shape, axes=None):
    """A frozen encoder param (fp32 as weight_dtype)."""
    t = T(shape, "weight", param=True, axes=axes)
    t["frozen"] = True
    return t


def biases(t, prefix, names_dims):
    """Bias params no op reads (their adds fuse into the matmuls)."""
    for name, shape in names_dims:
        t[prefix + name] = P(shape)


def layernorm(t, ops, name, x, shape, frozen=True):
    """LayerNorm over the last dim of `shape`: fp32 out, mean and rstd."""
    mk = P if frozen else (lambda s: T(s, "weight", param=True))
    t[name + "_scale"] = mk([shape[-1]])
    t[name + "_bias"] = mk([shape[-1]])
    t[name + "_y"] = T(shape, F32)
    t[name + "_mean"] = T(shape[:-1], F32)
    t[name + "_rstd"] = T(shape[:-1], F32)
    ops.append(O(name, "layernorm", [x, name + "_scale", name + "_bias"],
                 [name + "_y", name + "_mean", name + "_rstd"]))
    return name + "_y"


def vit_block(t, ops, x, pre):
    """One encoder block (Qwen3OmniMoeVisionBlock): its output's name."""
    xn = layernorm(t, ops, pre + "ln1", x, IMG + ["vit_e"])
    heads = IMG + ["vit_h", "vit_d"]
    for w, axes in (("q", ["embed", "heads", None]), ("k", ["embed", "kv_heads", None]),
                    ("v", ["embed", "kv_heads", None])):
        t[pre + "w" + w] = P(["vit_e", "vit_h", "vit_d"], axes)
        t[pre + w] = T(heads, F32)
        ops.append(O(pre + w + "_proj", "einsum", [xn, pre + "w" + w], [pre + w],
                     spec="bnpe,ehd->bnphd"))
    biases(t, pre, [("bq", ["vit_h", "vit_d"]), ("bk", ["vit_h", "vit_d"]),
                    ("bv", ["vit_h", "vit_d"]), ("bo", ["vit_e"])])
    for w in ("q", "k"):
        t[pre + w + "_rope"] = T(heads, F32)
        ops.append(O(pre + "rope_" + w, "rope", [pre + w], [pre + w + "_rope"]))
    # MaxText's dot-product attention (attention_op.py apply_attention_dot,
    # compute_local_attention): the fp32 scores, their row max, exp(scores
    # - max) and its row sum, the exponentials times v, divided by the sum.
    # XLA materializes the scores (the QK dot fused with the max) and fuses
    # the exponentials into the sum and into the weighted sum's dot: no
    # probabilities buffer (qwen3-vl-2b on v6e-8, batch 32: one f32
    # [32, 16, 2304, 2304] at the peak, docs/validation.md). So the weighted
    # sum reads the scores; the softmax's 5n FLOPs are not counted.
    t[pre + "scores"] = T(["batch", "vit_n", "vit_h", "vit_p", "vit_p"], F32)
    t[pre + "ctx"] = T(heads, F32)
    ops.append(O(pre + "qk", "einsum", [pre + "q_rope", pre + "k_rope"], [pre + "scores"],
                 spec="bnphd,bnkhd->bnhpk"))
    ops.append(O(pre + "pv", "einsum", [pre + "scores", pre + "v"], [pre + "ctx"],
                 spec="bnhpk,bnkhd->bnphd"))
    t[pre + "wo"] = P(["vit_h", "vit_d", "vit_e"], ["heads", None, "embed"])
    t[pre + "attn"] = T(IMG + ["vit_e"], F32)
    t[pre + "mid"] = T(IMG + ["vit_e"], F32)
    ops.append(O(pre + "o_proj", "einsum", [pre + "ctx", pre + "wo"], [pre + "attn"],
                 spec="bnphd,hde->bnpe"))
    ops.append(O(pre + "attn_res", "add", [x, pre + "attn"], [pre + "mid"]))
    yn = layernorm(t, ops, pre + "ln2", pre + "mid", IMG + ["vit_e"])
    t[pre + "w_fc1"] = P(["vit_e", "vit_m"])
    t[pre + "w_fc2"] = P(["vit_m", "vit_e"])
    biases(t, pre, [("b_fc1", ["vit_m"]), ("b_fc2", ["vit_e"])])
    for n in ("fc1", "gelu"):
        t[pre + n] = T(IMG + ["vit_m"], F32)
    t[pre + "fc2"] = T(IMG + ["vit_e"], F32)
    t[pre + "out"] = T(IMG + ["vit_e"], F32)
    ops.append(O(pre + "fc1", "einsum", [yn, pre + "w_fc1"], [pre + "fc1"], spec="bnpe,em->bnpm"))
    ops.append(O(pre + "gelu", "gelu", [pre + "fc1"], [pre + "gelu"]))
    ops.append(O(pre + "fc2", "einsum", [pre + "gelu", pre + "w_fc2"], [pre + "fc2"],
                 spec="bnpm,me->bnpe"))
    ops.append(O(pre + "mlp_res", "add", [pre + "mid", pre + "fc2"], [pre + "out"]))
    return pre + "out"


def merger(t, ops, x, pre, postshuffle, frozen):
    """Qwen3OmniMoeVisionPatchMerger: LayerNorm (over merge^2 patches after
    the shuffle, or per patch before it), Linear, GeLU, Linear to
    base_emb_dim (out_hidden_size_for_vit). Its output's name."""
    mk = P if frozen else (lambda s: T(s, "weight", param=True))
    merged = ["batch", "vit_n", "vit_t", "vit_q"]
    if postshuffle:
        t[pre + "shuffled"] = T(merged, F32)
        ops.append(O(pre + "shuffle", "reshape", [x], [pre + "shuffled"]))
        h = layernorm(t, ops, pre + "ln", pre + "shuffled", merged, frozen)
    else:
        n = layernorm(t, ops, pre + "ln", x, IMG + ["vit_e"], frozen)
        h = pre + "shuffled"
        t[h] = T(merged, F32)
        ops.append(O(pre + "shuffle", "reshape", [n], [h]))
    t[pre + "w_fc1"] = mk(["vit_q", "vit_q"])
    t[pre + "w_fc2"] = mk(["vit_q", "embed"])
    t[pre + "b_fc1"] = mk(["vit_q"])
    t[pre + "b_fc2"] = mk(["embed"])
    t[pre + "w_fc2"]["axes"] = [None, None]
    t[pre + "b_fc2"]["axes"] = [None]
    t[pre + "fc1"] = T(merged, F32)
    t[pre + "gelu"] = T(merged, F32)
    t[pre + "out"] = T(["batch", "vit_n", "vit_t", "embed"], F32)
    t[pre + "out"]["axes"] = ["activation_batch", None, None, None]
    ops.append(O(pre + "fc1", "einsum", [h, pre + "w_fc1"], [pre + "fc1"], spec="bntq,qr->bntr"))
    ops.append(O(pre + "gelu", "gelu", [pre + "fc1"], [pre + "gelu"]))
    ops.append(O(pre + "fc2", "einsum", [pre + "gelu", pre + "w_fc2"], [pre + "out"],
                 spec="bntq,qe->bnte"))
    return pre + "out"


def encoder(t, enc, layers, deepstack):
    """The images' patch embedding, the encoder's blocks with their
    deepstack mergers and the trained projector, their ops appended to
    `enc`; ends in the image tokens cast to the compute dtype
    (`vit_tokens`)."""
    t["images"] = T(IMG + ["vit_pix"], "int32")
    t["vit_pos_ids"] = T(["vit_p"], "int32")
    t["vit_pixels"] = T(IMG + ["vit_pix"], F32)
    t["vit_patch_w"] = P(["vit_pix", "vit_e"])
    t["vit_patch_b"] = P(["vit_e"])
    t["vit_patches"] = T(IMG + ["vit_e"], F32)
    t["vit_pos_table"] = P(["vit_pos", "vit_e"])
    t["vit_pos"] = T(["vit_p", "vit_e"], "weight")
    t["vit_x0"] = T(IMG + ["vit_e"], F32)
    enc += [O("vit_pixels", "cast", ["images"], ["vit_pixels"]),
            O("vit_patch_embed", "einsum", ["vit_pixels", "vit_patch_w"], ["vit_patches"],
              spec="bnpc,ce->bnpe"),
            O("vit_pos_interp", "gather", ["vit_pos_table", "vit_pos_ids"], ["vit_pos"]),
            O("vit_pos_add", "add", ["vit_patches", "vit_pos"], ["vit_x0"])]
    x = "vit_x0"
    for i in range(layers):
        x = vit_block(t, enc, x, f"vit{i}_")
        if i in deepstack:
            merger(t, enc, x, f"vit_deepstack{deepstack.index(i)}_", True, True)
    vis = merger(t, enc, x, "vit_proj_", False, False)
    t["vit_tokens"] = T(["batch", "vit_n", "vit_t", "embed"])
    t["vit_tokens"]["axes"] = ["activation_batch", None, None, None]
    enc.append(O("vit_tokens_cast", "cast", [vis], ["vit_tokens"]))


def vision_head(head, layers, deepstack, before_embed=False):
    """`head` with the encoder, its projector and the merge before its
    layers: the embedding's output becomes the text embeddings, and the
    merged sequence feeds layer 0 (in fp32 when deepstack features are
    added to the stream: fp32_stream). With `before_embed` the encoder
    runs before the token embedding, as MaxText runs it before the
    decoder embeds (models.py): the text embeddings are not live across
    the encoder's peak."""
    h = copy.deepcopy(head)
    t, ops = h["tensors"], h["ops"]
    h["inputs"] = h["inputs"] + ["images", "vit_pos_ids"]
    enc = []
    encoder(t, enc, layers, deepstack)
    t["image_pos"] = T(["batch", "seq"], "int32")
    t["h_text"] = copy.deepcopy(t["h0"])
    t["h_image"] = copy.deepcopy(t["h0"])
    merge = [O("image_positions", "cast", ["tokens"], ["image_pos"]),
             O("image_scatter", "gather", ["vit_tokens", "image_pos"], ["h_image"])]
    if deepstack:
        t["h_merged"] = copy.deepcopy(t["h0"])
        t["h0"]["dtype"] = F32
        t["hL"]["dtype"] = F32
        merge += [O("image_merge", "add", ["h_text", "h_image"], ["h_merged"]),
                  O("stream_fp32", "cast", ["h_merged"], ["h0"])]
    else:
        merge.append(O("image_merge", "add", ["h_text", "h_image"], ["h0"]))
    splice(ops, enc, merge, before_embed)
    return h


def splice(ops, enc, merge, before_embed=True):
    """The encoder's ops @p enc and the merge's @p merge into the head's
    @p ops around the token embedding, whose output becomes h_text: the
    encoder before it where MaxText runs the encoder before the decoder
    embeds (its text embeddings then not live across the encoder's peak),
    else after it; the merge right after it either way."""
    at = [o["name"] for o in ops].index("embed")
    ops[at]["out"] = ["h_text"]
    if before_embed:
        ops[at + 1:at + 1] = merge
        ops[at:at] = enc
    else:
        ops[at + 1:at + 1] = enc + merge


DESCRIPTION = (
    "{text}. Head: Qwen3-VL's vision encoder before the layers (use_multimodal; models/qwen3.py "
    "at e591f30): the images (vit_images an example, one in MaxText's train_compile; "
    "image_token_share) cut into vit_patches patches, projected, plus the interpolated position "
    "table; {layers} blocks of LayerNorm, attention (q/k/v, 2D RoPE, dot-product fp32 scores, "
    "their softmax fused into the weighted sum), LayerNorm, GeLU MLP, all fp32 (dtype_mm), forward only with frozen params "
    "(freeze_vision_encoder_params: no gradient, no residual); deepstack mergers on layers "
    "{deepstack}; the trained projector (LayerNorm, merge of spatial_merge_size_for_vit^2 "
    "patches, GeLU MLP to base_emb_dim), its output cast and placed at the image tokens' "
    "positions of the token embeddings. The residual stream is fp32 (the deepstack features' fp32 "
    "add after layer 0 promotes it; the head casts layer 0's input). Left out: biases as ops "
    "(counted as params), the deepstack features' adds to the first layers' outputs")


def fp32_stream(layer):
    """The layer with its residual stream in fp32: MaxText adds the first
    deepstack features (fp32, the mergers' dtype) to layer 0's output
    (nnx_decoders.py deepstack_process: bf16 + fp32 promotes), and
    nothing casts it back (Qwen3's layers add their bf16 attention and MLP
    outputs to it), so every later layer's input, middle residual and
    output are fp32; its norms' outputs and the rest stay in the compute
    dtype. Layer 0's input is the bf16 merged embeddings: the head casts
    them (one layer's input held in fp32, 2 bytes an element over)."""
    t = layer["tensors"]
    stream = {layer["inputs"][0], layer["outputs"][0]}
    for o in layer["ops"]:
        if o["op"] == "add" and layer["inputs"][0] in o["in"]:
            stream.update(o["out"])
    assert len(stream) == 3, stream
    for n in stream:
        t[n]["dtype"] = F32
    return layer


def with_vision(g, name, layers, deepstack):
    g = copy.deepcopy(g)
    fp32_stream(g["layer"])
    g["name"] = name
    g["description"] = DESCRIPTION.format(text=g["description"], layers=layers,
                                          deepstack=", ".join(map(str, deepstack)))
    for k, v in VIT_DIMS.items():
        g["dims"][k] = copy.deepcopy(v)
    g["head"] = vision_head(g["head"], layers, deepstack)
    return g


if __name__ == "__main__":
    write("qwen3_vl", with_vision(family_b.qwen3_tied(), "qwen3_vl", 24, [5, 11, 17]))
    write("qwen3_vl_moe", with_vision(moe_family_a.qwen3_moe(), "qwen3_vl_moe", 27, [8, 16, 24]))
