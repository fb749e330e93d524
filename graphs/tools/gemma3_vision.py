#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the Gemma 3 multimodal graph (graphs/gemma3_vision.flash.json: the
gemma3 graph's layer stack and head, with Gemma 3's vision encoder in the
head, before the layers). remat runs it for a gemma3 model with
use_multimodal=true (docs/config.md, "Vision encoders"). Run it from
anywhere with python3 (it needs nothing else). The shapes follow MaxText
e591f30: models/gemma3.py (Gemma3VisionEncoderLayer, Encoder,
Encoder1DBlock, MlpBlockViT, VisionExit, VisionEmbedder), layers/encoders.py
(VisionEncoder: the encoder's output behind stop_gradient under
freeze_vision_encoder_params, then the projector), models/models.py and
layers/decoders.py (_apply_embedding: the image tokens merged into the
token embeddings, multimodal/utils.py merge_mm_embeddings, cast to the
text's dtype), multimodal/processor_gemma3.py
(get_dummy_image_shape_for_init_gemma3: train_compile's images, one
896 x 896 x 3 image an example; 256 placeholder tokens an image),
configs/models/gemma3-*.yml (the encoder's sizes, the same for 4B, 12B and
27B) and configs/base.yml (dtype_mm float32, posemb_type_for_vit learn,
attention_for_vit dot_product); docs/graph-format.md describes the ops and
docs/memory-model.md the rule.

The encoder, per image of vit_patches = (image_size_for_vit /
patch_size_for_vit)^2 patches (4,096 for 896 / 14; one image an example in
MaxText's train_compile, image_token_share sets more):
  the image (int32, as get_shaped_batch gives it) promoted to fp32 by the
  patch Conv (kernel patch x patch, stride the same, VALID: a matmul per
  patch of num_channels_for_vit x patch^2 pixels), plus the learned
  position table ([patches, width], posemb_type_for_vit learn, added
  whole);
  num_hidden_layers_for_vit blocks (Encoder1DBlock): LayerNorm, q/k/v
  projections with biases, no RoPE (is_nope_layer), the query scaled by
  1/sqrt(head dim) (query_pre_attn_scalar: a constant XLA fuses into the
  scores' dot, so no op here), dot-product attention (attention_for_vit's
  default: the [heads, patches, patches] fp32 scores, whose softmax XLA
  fuses into the weighted sum's dot, as in the qwen3_vl graph's encoder,
  vision_family.py), output projection, residual; LayerNorm, GeLU MLP
  (Dense, gelu, Dense, with biases), residual; every activation fp32
  (dtype_mm);
  the encoder's final LayerNorm, then VisionExit: a 2D average pool of the
  64 x 64 patch grid to 16 x 16 = 256 tokens (output_length 256, fixed in
  the code), here a reshape to [256 tokens, window] and a sum over the
  window (one-operand einsum).
Every encoder param is `frozen`: MaxText stops the encoder's output's
gradient (freeze_vision_encoder_params, its default), so the encoder runs
forward only, keeps nothing for backward and its params get no gradient
buffer (they keep their optimizer state: the optimizer is not masked).
The projector (VisionEmbedder: RMSNorm over the encoder's width, fp32 as
dtype_mm, then the [width, base_emb_dim] projection) trains: its ops have a
backward and keep their inputs from the head's forward to its backward.
The encoder and projector run before the token embedding, as MaxText
runs the vision encoder before the decoder embeds the tokens (the text
embeddings are not live across the encoder's peak). The projector's fp32
output, cast to the compute dtype, replaces the image placeholders' token
embeddings (a gather of the image tokens to their
positions, added to the embedded tokens: MaxText's where(mask, image,
text) reads and writes the same buffers). Unlike Qwen3-VL there are no
deepstack features: the residual stream stays in the compute dtype and
the decoder layers are the gemma3 graph's, unchanged (scan_layers as
MaxText's default).

The params' dtypes are MaxText's: the attention's q/k/v/o take
weight_dtype (Attention's weight_dtype=config.weight_dtype) and the
projector's norm too; the MLP's Dense layers (no weight_dtype given:
DenseGeneral's float32), the LayerNorms (nnx's float32), the patch Conv,
the position table (dtype_mm) and the projection (an Einsum whose
initializer takes no dtype: float32) are fp32 whatever weight_dtype says.
Their axes: the attention's q/k/v/o are sharded as the decoder's (embed,
heads), the projector's norm scale on `norm`, every other encoder and
projector param is replicated (DenseGeneral's, LayerNorm's, Conv's and
Einsum's default: no logical axes).

Left out, each below the step's peak: the biases as ops (params no op
reads: they count in the params and memory, their adds fuse into the
matmuls), the query's scale (fused into the scores' dot), the dropouts
(dropout_rate applies only with enable_dropout, off in training by
default).
"""
import copy
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ beside the generators
import family_b  # noqa: E402
from moe_graphs import T, O, write  # noqa: E402
from vision_family import F32, IMG, P, VIT_DIMS, layernorm, splice, vit_block  # noqa: E402

# configs/models/gemma3-{4b,12b,27b}.yml at e591f30: num_hidden_layers_for_vit
LAYERS = 27

# Qwen3-VL's dims less what Gemma 3 has not (the position table is
# [patches, width], no merged width), plus the pool's window: the patches
# one image token averages (vit_patches / vit_tokens, 16 for 4096 / 256).
DIMS = {k: v for k, v in VIT_DIMS.items() if k not in ("vit_q", "vit_pos")}
DIMS["vit_w"] = {"from": "vit_patches", "div": "vit_tokens"}

# Per-block params MaxText keeps in fp32 whatever weight_dtype says.
FP32_PARAMS = ("ln1_scale", "ln1_bias", "ln2_scale", "ln2_bias", "w_fc1", "w_fc2", "b_fc1",
               "b_fc2")


def gemma_block(t, ops, x, pre):
    """One Encoder1DBlock: vision_family.vit_block without its 2D RoPE
    (the Gemma 3 encoder's attention is a NoPE layer): the scores read the
    projections. Its output's name."""
    out = vit_block(t, ops, x, pre)
    for w in ("q", "k"):
        del t[pre + w + "_rope"]
    ops[:] = [o for o in ops if o["name"] not in (pre + "rope_q", pre + "rope_k")]
    qk = next(o for o in ops if o["name"] == pre + "qk")
    qk["in"] = [pre + "q", pre + "k"]
    for n in FP32_PARAMS:
        t[pre + n]["dtype"] = F32
    return out


def encoder(t, ops):
    """The patch embedding, the position table, the blocks, the final norm
    and VisionExit's pool: the pooled tokens' name."""
    t["images"] = T(IMG + ["vit_pix"], "int32")
    t["vit_pixels"] = T(IMG + ["vit_pix"], F32)
    t["vit_patch_w"] = P(["vit_pix", "vit_e"])
    t["vit_patch_b"] = P(["vit_e"])
    t["vit_pos_table"] = P(["vit_p", "vit_e"])
    for n in ("vit_patch_w", "vit_patch_b", "vit_pos_table"):
        t[n]["dtype"] = F32
    t["vit_patches"] = T(IMG + ["vit_e"], F32)
    t["vit_x0"] = T(IMG + ["vit_e"], F32)
    ops += [O("vit_pixels", "cast", ["images"], ["vit_pixels"]),
            O("vit_patch_embed", "einsum", ["vit_pixels", "vit_patch_w"], ["vit_patches"],
              spec="bnpc,ce->bnpe"),
            O("vit_pos_add", "add", ["vit_patches", "vit_pos_table"], ["vit_x0"])]
    x = "vit_x0"
    for i in range(LAYERS):
        x = gemma_block(t, ops, x, f"vit{i}_")
    x = layernorm(t, ops, "vit_norm", x, IMG + ["vit_e"])
    for n in ("vit_norm_scale", "vit_norm_bias"):
        t[n]["dtype"] = F32
    t["vit_windows"] = T(["batch", "vit_n", "vit_t", "vit_w", "vit_e"], F32)
    t["vit_pooled"] = T(["batch", "vit_n", "vit_t", "vit_e"], F32)
    ops += [O("vit_pool_windows", "reshape", [x], ["vit_windows"]),
            O("vit_pool", "einsum", ["vit_windows"], ["vit_pooled"], spec="bntwe->bnte")]
    return "vit_pooled"


def projector(t, ops, x):
    """VisionEmbedder, trained: RMSNorm (fp32) and the projection to
    base_emb_dim. Its output's name."""
    t["vit_proj_scale"] = T(["vit_e"], "weight", param=True, axes=["norm"])
    t["vit_proj_normed"] = T(["batch", "vit_n", "vit_t", "vit_e"], F32)
    t["vit_proj_rstd"] = T(["batch", "vit_n", "vit_t"], F32)
    t["vit_proj_w"] = T(["vit_e", "embed"], F32, param=True, axes=[None, None])
    t["vit_proj_out"] = T(["batch", "vit_n", "vit_t", "embed"], F32)
    t["vit_proj_out"]["axes"] = ["activation_batch", None, None, None]
    ops += [O("vit_proj_norm", "rmsnorm", [x, "vit_proj_scale"],
              ["vit_proj_normed", "vit_proj_rstd"]),
            O("vit_proj", "einsum", ["vit_proj_normed", "vit_proj_w"], ["vit_proj_out"],
              spec="bnte,ed->bntd")]
    return "vit_proj_out"


def vision_head(head):
    """`head` with the encoder and its projector before the token
    embedding, and the merge after it: the embedding's output becomes the
    text embeddings, and the merged sequence (the compute dtype, as MaxText
    casts it) feeds layer 0."""
    h = copy.deepcopy(head)
    t, ops = h["tensors"], h["ops"]
    h["inputs"] = h["inputs"] + ["images"]
    enc = []
    vis = projector(t, enc, encoder(t, enc))
    t["vit_tokens"] = T(["batch", "vit_n", "vit_t", "embed"])
    t["vit_tokens"]["axes"] = ["activation_batch", None, None, None]
    t["image_pos"] = T(["batch", "seq"], "int32")
    t["h_text"] = copy.deepcopy(t["h0"])
    t["h_image"] = copy.deepcopy(t["h0"])
    enc.append(O("vit_tokens_cast", "cast", [vis], ["vit_tokens"]))
    merge = [O("image_positions", "cast", ["tokens"], ["image_pos"]),
             O("image_scatter", "gather", ["vit_tokens", "image_pos"], ["h_image"]),
             O("image_merge", "add", ["h_text", "h_image"], ["h0"])]
    # MaxText runs the encoder before the decoder embeds the tokens
    # (models.py calls the vision encoder, then the decoder, whose
    # _apply_embedding merges)
    splice(ops, enc, merge)
    return h


DESCRIPTION = (
    "{text}. With use_multimodal (this graph): Gemma 3's vision encoder in the head before the "
    "layers (models/gemma3.py at e591f30): the images (vit_images an example, one in MaxText's "
    "train_compile; image_token_share) cut into vit_patches patches by the patch Conv, plus the "
    "learned position table; {layers} blocks of LayerNorm, attention (q/k/v with biases, no RoPE, "
    "dot-product fp32 scores, their softmax fused into the weighted sum), LayerNorm, GeLU MLP, "
    "all fp32 (dtype_mm), forward only with frozen params (freeze_vision_encoder_params: no "
    "gradient, no residual); the final LayerNorm and VisionExit's average pool to 256 tokens an "
    "image; the trained projector (RMSNorm, projection to base_emb_dim), its output cast and "
    "placed at the image tokens' positions of the token embeddings. Left out: biases as ops "
    "(counted as params), the query's scale (fused into the scores)")


def gemma3_vision():
    g = family_b.gemma3()
    g["name"] = "gemma3_vision"
    text = g["description"].replace(". Left out: the vision encoder", "")
    g["description"] = DESCRIPTION.format(text=text, layers=LAYERS)
    for k, v in DIMS.items():
        g["dims"][k] = copy.deepcopy(v)
    g["head"] = vision_head(g["head"])
    return g


if __name__ == "__main__":
    write("gemma3_vision", gemma3_vision())
