#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the Llama 4 multimodal graphs (graphs/llama4_vision.flash.json and
graphs/llama4_qk_norm_vision.flash.json: the llama4 and llama4_qk_norm
graphs' layer stacks and heads, with Llama 4's vision encoder in the head,
before the layers). remat runs them for a llama4 model with
use_multimodal=true (docs/config.md, "Vision encoders"). Run it from
anywhere with python3 (it needs nothing else), then ep_variants.py (the
expert-parallel variants). The shapes follow MaxText e591f30:
models/llama4.py (Llama4VisionModel, Llama4UnfoldConvolution,
Llama4VisionEncoderLayer, Llama4VisionMLP, pixel_shuffle,
Llama4VisionPixelShuffleMLP, Llama4VisionMLP2, Llama4MultiModalProjector),
layers/embeddings.py (LlamaVisionRotaryEmbedding: the 2D RoPE),
layers/encoders.py (VisionEncoder: the encoder's output, the pixel-shuffle
adapter's included, behind stop_gradient under freeze_vision_encoder_params,
then the projector), models/models.py and layers/decoders.py
(_apply_embedding: multimodal/utils.py merge_mm_embeddings with the tile
masks), multimodal/processor_llama4.py (get_dummy_image_shape_for_init_llama4:
train_compile's images, one image of 20 tiles of 336 x 336 x 3 an example,
LLAMA4_TILES_PAD_TO) and utils/maxtext_utils.py (get_shaped_batch: the
int32 images and the [images, tiles] int32 tile masks),
configs/models/llama4-17b-*.yml and configs/base.yml (the *_for_vit keys,
dtype_mm float32, attention_for_vit dot_product); docs/graph-format.md
describes the ops and docs/memory-model.md the rule.

The encoder, per tile (vit_n = 20 tiles an image, image_token_share sets
more images) of vit_tile_patches = (image_size_for_vit /
patch_size_for_vit)^2 patches (576 for 336 / 14):
  the tile (int32) cut into patches by conv_general_dilated_patches
  (fp32, preferred_element_type dtype_mm; XLA writes them in bf16 for
  the matmul: a cast here) and projected
  without bias ([num_channels x patch^2, width], the unfold's Dense);
  the class embedding broadcast to every tile and concatenated after the
  patches (vit_patches = 577 tokens a tile), plus the learned position
  table ([577, width], added whole); LayerNorm (layernorm_pre);
  num_hidden_layers_for_vit blocks (Llama4VisionEncoderLayer): LayerNorm,
  q/k/v with biases, 2D RoPE on q and k, dot-product attention
  (attention_for_vit's default: the [heads, 577, 577] fp32 scores, whose
  softmax XLA fuses into the weighted sum's dot, as in the qwen3_vl
  graph's encoder, vision_family.py), output projection, residual;
  LayerNorm, GeLU MLP (biases), residual; every activation fp32 (dtype_mm)
  but what XLA:TPU writes in bf16 for its DEFAULT-precision matmuls
  (BF16 below), and v's projection after the scores, as XLA schedules it;
  LayerNorm (layernorm_post), the class token dropped (a split), the pixel
  shuffle (reshapes and two transposes: [576, width] to [144, width x 4]
  for pixel_shuffle_ratio_for_vit 0.5; one copy here, a cast to bf16), and the
  adapter MLP (Llama4VisionMLP2: Dense without bias, GeLU, Dense without
  bias, GeLU; projector_input_dim_for_vit, projector_output_dim_for_vit).
Every encoder param, the adapter's too, is `frozen`: MaxText's encoder
module is Llama4VisionModel whole, whose output it stops
(freeze_vision_encoder_params, its default), so it runs forward only,
keeps nothing for backward and its params get no gradient buffer (they
keep their optimizer state: the optimizer is not masked).
The projector (Llama4MultiModalProjector: one Dense without bias from
vision_output_dim_for_vit to base_emb_dim, fp32 as dtype_mm) trains: it
keeps its input from the head's forward to its backward.
The encoder and projector run before the token embedding, as MaxText runs
the vision encoder before the decoder embeds the tokens. The merge
(merge_mm_embeddings with the tile masks train_compile passes): the
projector's fp32 output cast to the compute dtype, its tokens sorted by
the masks' argsort (valid tiles first: a gather, a second copy), then the
gather of the image tokens to their positions, added to the embedded
tokens (MaxText's where(mask, image, text) reads and writes the same
buffers). The decoder layers are the llama4 graphs', unchanged (scanned in
blocks of four as MaxText's default).

The params' dtypes are MaxText's: the attention's q/k/v/o and their biases
take weight_dtype (Attention's weight_dtype=config.weight_dtype); the
unfold, MLP, adapter and projector Dense layers (no weight_dtype given:
DenseGeneral's float32), the LayerNorms (nnx's float32), the class
embedding and the position table (dtype_mm) are fp32 whatever weight_dtype
says. Their axes: the attention's q/k/v/o are sharded as the decoder's
(embed, heads), every other encoder and projector param is replicated
(DenseGeneral's and LayerNorm's default: no logical axes).

Left out, each below the step's peak: the biases as ops (params no op
reads: they count in the params and memory, their adds fuse into the
matmuls), the query's scale (fused into the scores' dot), the argsort of
the [images, tiles] masks (int32 [batch, 2880] indices; the gather reads
the image token positions), the dropout of the adapter
(projector_dropout_for_vit 0, and deterministic without enable_dropout).
"""
import copy
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ beside the generators
import moe_family_a  # noqa: E402
from moe_graphs import T, O, write  # noqa: E402
from vision_family import F32, IMG, P, VIT_DIMS, layernorm, splice, vit_block  # noqa: E402

# configs/models/llama4-17b-{16e,128e}.yml at e591f30: num_hidden_layers_for_vit
LAYERS = 34

# Qwen3-VL's dims less its position table, with Llama 4's: vit_n the tiles
# of an example's images, vit_g a tile's patches before the class token,
# vit_t a tile's image tokens after the pixel shuffle, vit_q the shuffled
# width, the adapter's widths, and the class token's one row.
DIMS = {k: v for k, v in VIT_DIMS.items() if k != "vit_pos"}
DIMS["vit_n"] = {"from": "vit_tiles"}
DIMS["vit_g"] = {"from": "vit_tile_patches"}
DIMS["vit_t"] = {"from": "vit_tile_tokens"}
DIMS["vit_a"] = {"from": "projector_input_dim_for_vit"}
DIMS["vit_o"] = {"from": "projector_output_dim_for_vit"}
DIMS["vit_one"] = {"value": 1}

# Per-block params MaxText keeps in fp32 whatever weight_dtype says.
FP32_PARAMS = ("ln1_scale", "ln1_bias", "ln2_scale", "ln2_bias", "w_fc1", "w_fc2", "b_fc1",
               "b_fc2")
GRID = ["batch", "vit_n", "vit_g"]  # a tile's patches, the class token not yet there
BF16 = "bf16"

# What XLA:TPU stores of the fp32 encoder (models/llama4.py computes in
# dtype_mm, float32; MaxText's matmul_precision is "default"): a dot at
# DEFAULT precision reads bf16, and XLA's bf16 propagation writes its
# operands converted where every reader of them is such a dot (through
# elementwise ops: the RoPE) and fuses the convert into their producer.
# Read from the compiled step of llama4-17b-16e on v5p-8 (use_multimodal,
# batch 96, num_vocab_tiling=8; docs/validation.md): the patches
# bf16[1920,576,588], q, k and v from their projections and through the
# RoPE bf16[1920,577,16,88], the weighted sum's output (read by the output
# projection alone) bf16, the MLP's GeLU output bf16[1920,577,5632] beside
# its fp32 input, the pixel-shuffled tokens bf16[1920,144,5632]; the
# scores (read by the softmax's max and exponentials), the residual stream
# and the LayerNorms' inputs stay fp32. XLA fuses each block's LayerNorms
# into the matmuls that read them (the q, k and v projections each
# normalize the block's input again; no normalized tensor is written):
# their outputs, which those matmuls alone read, are bf16 here too.
BLOCK_BF16 = ("ln1_y", "ln2_y", "q", "k", "v", "q_rope", "k_rope", "ctx")


def f32_param(shape):
    """A frozen encoder param MaxText keeps in fp32."""
    t = P(shape)
    t["dtype"] = F32
    return t


def embed_tiles(t, ops):
    """The unfold (patches and their Dense), the class token and the
    position table, then layernorm_pre: its output's name."""
    t["images"] = T(GRID + ["vit_pix"], "int32")
    t["vit_pixels"] = T(GRID + ["vit_pix"], BF16)
    t["vit_patch_w"] = f32_param(["vit_pix", "vit_e"])
    t["vit_patches"] = T(GRID + ["vit_e"], F32)
    t["vit_class"] = f32_param(["vit_e"])
    t["vit_class_tiles"] = T(["batch", "vit_n", "vit_one", "vit_e"], F32)
    t["vit_tokens0"] = T(IMG + ["vit_e"], F32)
    t["vit_pos_table"] = f32_param(["vit_p", "vit_e"])
    t["vit_x0"] = T(IMG + ["vit_e"], F32)
    ops += [O("vit_pixels", "cast", ["images"], ["vit_pixels"]),
            O("vit_patch_embed", "einsum", ["vit_pixels", "vit_patch_w"], ["vit_patches"],
              spec="bngc,ce->bnge"),
            O("vit_class_broadcast", "broadcast", ["vit_class"], ["vit_class_tiles"]),
            O("vit_class_concat", "concat", ["vit_patches", "vit_class_tiles"], ["vit_tokens0"]),
            O("vit_pos_add", "add", ["vit_tokens0", "vit_pos_table"], ["vit_x0"])]
    x = layernorm(t, ops, "vit_norm_pre", "vit_x0", IMG + ["vit_e"])
    for n in ("vit_norm_pre_scale", "vit_norm_pre_bias"):
        t[n]["dtype"] = F32
    return x


def bf16_gelu(t, ops, pre, fc1, gelu):
    """The GeLU read only by a matmul: its fp32 input converted to bf16
    before it (the convert XLA fuses into the GeLU's output), so that the
    GeLU writes bf16 beside its fp32 input."""
    t[fc1 + "_bf16"] = T(t[fc1]["shape"], BF16)
    t[gelu]["dtype"] = BF16
    at = [o["name"] for o in ops].index(pre + "gelu" if pre else gelu)
    ops[at]["in"] = [fc1 + "_bf16"]
    ops.insert(at, O(fc1 + "_bf16", "cast", [fc1], [fc1 + "_bf16"]))


def llama4_block(t, ops, x, pre):
    """One Llama4VisionEncoderLayer: vision_family.vit_block (LayerNorm,
    q/k/v with biases, 2D RoPE, fp32 scores, o, LayerNorm, GeLU MLP) with
    MaxText's fp32 norms and MLP, and the dot operands XLA writes in bf16
    (BLOCK_BF16, the GeLU's output). The value projection runs after the
    scores, where XLA's scheduler puts it (the same compiled step: at the
    QK product it holds the block's input, q, k and the scores; v is made
    after them, for the weighted sum, and held with its output), from the
    block's input normalized again (the LayerNorm fused into v's matmul,
    its 8n FLOPs counted again). Its output's name."""
    out = vit_block(t, ops, x, pre)
    names = [o["name"] for o in ops]
    v_proj = ops.pop(names.index(pre + "v_proj"))
    at = [o["name"] for o in ops].index(pre + "pv")
    ln = []
    xv = layernorm(t, ln, pre + "ln1v", x, IMG + ["vit_e"])
    for n in ("scale", "bias"):
        del t[pre + "ln1v_" + n]  # the block's first LayerNorm's params
    ln[0]["in"][1:] = [pre + "ln1_scale", pre + "ln1_bias"]
    t[xv]["dtype"] = BF16
    v_proj["in"][0] = xv
    ops[at:at] = ln + [v_proj]
    for n in FP32_PARAMS:
        t[pre + n]["dtype"] = F32
    for n in BLOCK_BF16:
        t[pre + n]["dtype"] = BF16
    bf16_gelu(t, ops, pre, pre + "fc1", pre + "gelu")
    return out


def adapter(t, ops, x):
    """layernorm_post, the class token dropped, the pixel shuffle and the
    adapter MLP (frozen, fp32): its output's name."""
    x = layernorm(t, ops, "vit_norm_post", x, IMG + ["vit_e"])
    for n in ("vit_norm_post_scale", "vit_norm_post_bias"):
        t[n]["dtype"] = F32
    t["vit_grid"] = T(GRID + ["vit_e"], F32)
    t["vit_class_out"] = T(["batch", "vit_n", "vit_one", "vit_e"], F32)
    t["vit_grid_rows"] = T(["batch", "vit_n", "vit_t", "vit_q"], F32)
    t["vit_shuffled"] = T(["batch", "vit_n", "vit_t", "vit_q"], BF16)
    t["vit_ad_w1"] = f32_param(["vit_q", "vit_a"])
    t["vit_ad_w2"] = f32_param(["vit_a", "vit_o"])
    t["vit_ad_fc1"] = T(["batch", "vit_n", "vit_t", "vit_a"], F32)
    t["vit_ad_gelu1"] = T(["batch", "vit_n", "vit_t", "vit_a"], BF16)
    t["vit_ad_fc2"] = T(["batch", "vit_n", "vit_t", "vit_o"], F32)
    t["vit_ad_out"] = T(["batch", "vit_n", "vit_t", "vit_o"], F32)
    # pixel_shuffle's reshapes are bitcasts; its transposes move elements
    # across the patch grid, so XLA writes the shuffled tokens anew, in
    # bf16 (the adapter's matmul reads them alone): a reshape to the
    # [tokens, width x ratio^-2] rows, then the copy as a cast
    ops += [O("vit_drop_class", "split", [x], ["vit_grid", "vit_class_out"]),
            O("vit_shuffle_rows", "reshape", ["vit_grid"], ["vit_grid_rows"]),
            O("vit_pixel_shuffle", "cast", ["vit_grid_rows"], ["vit_shuffled"]),
            O("vit_ad_fc1", "einsum", ["vit_shuffled", "vit_ad_w1"], ["vit_ad_fc1"],
              spec="bntq,qa->bnta"),
            O("vit_ad_gelu1", "gelu", ["vit_ad_fc1"], ["vit_ad_gelu1"]),
            O("vit_ad_fc2", "einsum", ["vit_ad_gelu1", "vit_ad_w2"], ["vit_ad_fc2"],
              spec="bnta,ao->bnto"),
            O("vit_ad_gelu2", "gelu", ["vit_ad_fc2"], ["vit_ad_out"])]
    bf16_gelu(t, ops, "", "vit_ad_fc1", "vit_ad_gelu1")
    return "vit_ad_out"


def encoder(t, ops):
    """Llama4VisionModel, frozen: the adapter's output's name."""
    x = embed_tiles(t, ops)
    for i in range(LAYERS):
        x = llama4_block(t, ops, x, f"vit{i}_")
    return adapter(t, ops, x)


def projector(t, ops, x):
    """Llama4MultiModalProjector, trained: one fp32 Dense without bias to
    base_emb_dim, replicated. Its output's name."""
    t["vit_proj_w"] = T(["vit_o", "embed"], F32, param=True, axes=[None, None])
    t["vit_proj_out"] = T(["batch", "vit_n", "vit_t", "embed"], F32)
    t["vit_proj_out"]["axes"] = ["activation_batch", None, None, None]
    ops.append(O("vit_proj", "einsum", [x, "vit_proj_w"], ["vit_proj_out"],
                 spec="bnto,od->bntd"))
    return "vit_proj_out"


def vision_head(head):
    """`head` with the encoder and its projector before the token
    embedding, and the merge after it: the embedding's output becomes the
    text embeddings, and the merged sequence (the compute dtype, as MaxText
    casts it) feeds layer 0."""
    h = copy.deepcopy(head)
    t, ops = h["tensors"], h["ops"]
    t["image_masks"] = T(["batch", "vit_n"], "int32")
    h["inputs"] = h["inputs"] + ["images", "image_masks"]
    enc = []
    vis = projector(t, enc, encoder(t, enc))
    for n in ("vit_tokens", "vit_sorted"):
        t[n] = T(["batch", "vit_n", "vit_t", "embed"])
        t[n]["axes"] = ["activation_batch", None, None, None]
    t["vit_order"] = T(["batch", "vit_n", "vit_t"], "int32")
    t["image_pos"] = T(["batch", "seq"], "int32")
    t["h_text"] = copy.deepcopy(t["h0"])
    t["h_image"] = copy.deepcopy(t["h0"])
    enc.append(O("vit_tokens_cast", "cast", [vis], ["vit_tokens"]))
    # merge_mm_embeddings: the tile masks repeated per token and argsorted
    # (valid tiles first), the tokens gathered in that order, then to the
    # placeholders' positions
    merge = [O("vit_tile_order", "broadcast", ["image_masks"], ["vit_order"]),
             O("vit_sort_tiles", "gather", ["vit_tokens", "vit_order"], ["vit_sorted"]),
             O("image_positions", "cast", ["tokens"], ["image_pos"]),
             O("image_scatter", "gather", ["vit_sorted", "image_pos"], ["h_image"]),
             O("image_merge", "add", ["h_text", "h_image"], ["h0"])]
    splice(ops, enc, merge)
    return h


DESCRIPTION = (
    "{text}. With use_multimodal (this graph): Llama 4's vision encoder in the head before the "
    "layers (models/llama4.py at e591f30): the images (vit_images an example, one in MaxText's "
    "train_compile; image_token_share) as 20 tiles each (vit_tiles), a tile cut into "
    "vit_tile_patches patches by the unfold and projected, the class token appended and the "
    "learned position table added, LayerNorm; {layers} blocks of LayerNorm, attention (q/k/v "
    "with biases, 2D RoPE, dot-product fp32 scores, their softmax fused into the weighted sum, "
    "v projected after the scores), LayerNorm, GeLU MLP, fp32 (dtype_mm) but the matmul operands "
    "XLA:TPU writes in bf16 at DEFAULT precision; LayerNorm, the class token dropped, the pixel "
    "shuffle to vit_tile_tokens tokens a tile and the adapter MLP (GeLU, GeLU): forward only with "
    "frozen params (freeze_vision_encoder_params: no gradient, no residual); the trained "
    "projector (one Dense to base_emb_dim), its output cast, sorted by the tile masks and placed "
    "at the image tokens' positions of the token embeddings. Left out: biases as ops (counted as "
    "params), the query's scale (fused into the scores), the masks' argsort")


def llama4_vision(qk_norm):
    g = moe_family_a.llama4(qk_norm)
    g["name"] = g["name"] + "_vision"
    text = g["description"].replace(" and the vision encoder", "")
    g["description"] = DESCRIPTION.format(text=text, layers=LAYERS)
    for k, v in DIMS.items():
        g["dims"][k] = copy.deepcopy(v)
    g["head"] = vision_head(g["head"])
    return g


if __name__ == "__main__":
    write("llama4_vision", llama4_vision(False))
    write("llama4_qk_norm_vision", llama4_vision(True))
