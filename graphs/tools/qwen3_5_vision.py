#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the Qwen3.5 multimodal graph (graphs/qwen3_5_vision.flash.json:
the qwen3_next graph's layer stack and head, hybrid_family.py, with
Qwen3.5's vision encoder in the head, before the layers). remat runs it
for a Qwen3.5 model (decoder_block qwen3_5) with use_multimodal=true
(docs/config.md, "Vision encoders"). Run it from anywhere with python3 (it
needs nothing else), then ep_variants.py. The shapes follow MaxText
e591f30: models/qwen3_5_vision.py (Qwen3_5MoeVisionEncoder and
Qwen3_5MoeVisionProjector subclass models/qwen3.py's
Qwen3OmniMoeVisionEncoder and Qwen3OmniMoeVisionProjector unchanged, for
their names alone, as models/qwen3_vl_vision.py does), layers/encoders.py
(the encoder's outputs behind stop_gradient under
freeze_vision_encoder_params), models/models.py and layers/decoders.py
(_apply_embedding: the image tokens merged into the token embeddings,
multimodal/utils.py merge_mm_embeddings, then cast to the compute dtype),
multimodal/processor.py (Qwen3.5 takes Qwen3-Omni's processor:
train_compile's one 768 x 768 image of 2 frames an example) and
configs/models/qwen3.5-35b-a3b.yml, qwen3.5-397b-a17b.yml (the encoder's
sizes, the same in both but the projector's output width, base_emb_dim).

The encoder and projector are vision_family.py's, Qwen3-VL's, with what
Qwen3.5's model files set otherwise:
  no deepstack mergers (deepstack_visual_indexes_for_vit is empty): the
  encoder's blocks feed the projector alone, and no deepstack feature is
  added to the decoder's stream, so the residual stream stays in the
  compute dtype (Qwen3-VL's turns fp32 after layer 0) and MaxText allows
  scanned layers (configs/types.py refuses scan_layers with deepstack
  only); the layers are the qwen3_next graph's, unchanged, in their
  scanned blocks of inhomogeneous_layer_cycle_interval;
  the encoder runs before the token embedding, as MaxText runs the vision
  encoder before the decoder embeds the tokens (the text embeddings are
  not live across the encoder's peak).
The Qwen3.5 decoder layers take no bidirectional image mask (decoders.py
passes one to Gemma's layers alone), and MRoPE's positions are int32
inputs too small to matter, as in the qwen3_vl graphs.
"""
import copy
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ beside the generators
import hybrid_family  # noqa: E402
import vision_family  # noqa: E402
from moe_graphs import write  # noqa: E402

# num_hidden_layers_for_vit in both Qwen3.5 model files
LAYERS = 27

DESCRIPTION = (
    "{text}. With use_multimodal (this graph): Qwen3.5's vision encoder in the head before the "
    "token embedding (models/qwen3_5_vision.py at e591f30: Qwen3-VL's encoder, models/qwen3.py): "
    "the images (vit_images an example, one in MaxText's train_compile; image_token_share) cut "
    "into vit_patches patches, projected, plus the interpolated position table; {layers} blocks "
    "of LayerNorm, attention (q/k/v, 2D RoPE, dot-product fp32 scores, their softmax fused into "
    "the weighted sum), LayerNorm, GeLU MLP, all fp32 (dtype_mm), forward only with frozen "
    "params (freeze_vision_encoder_params: no gradient, no residual); no deepstack mergers "
    "(Qwen3.5's list is empty); the trained projector (LayerNorm, merge of "
    "spatial_merge_size_for_vit^2 patches, GeLU MLP to base_emb_dim), its output cast and placed "
    "at the image tokens' positions of the token embeddings; the residual stream stays in the "
    "compute dtype. Left out: the encoder's biases as ops (counted as params)")


def qwen3_5_vision():
    g = hybrid_family.qwen3_next()
    g["name"] = "qwen3_5_vision"
    text = g["description"].replace("the load-balance loss, and Qwen3.5's vision encoder",
                                    "and the load-balance loss")
    assert text != g["description"]
    g["description"] = DESCRIPTION.format(text=text, layers=LAYERS)
    for k, v in vision_family.VIT_DIMS.items():
        g["dims"][k] = copy.deepcopy(v)
    g["head"] = vision_family.vision_head(g["head"], LAYERS, [], before_embed=True)
    return g


if __name__ == "__main__":
    write("qwen3_5_vision", qwen3_5_vision())
