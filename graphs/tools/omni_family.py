#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the Qwen3-Omni graph (graphs/qwen3_omni.flash.json): the
qwen3_vl_moe graph (vision_family.py: the qwen3_moe graph's layers and
head, Qwen3-VL's vision encoder before the layers) with Qwen3-Omni's audio
encoder's params in the head. Run it from anywhere with python3 (it needs
nothing else), after vision_family.py, then ep_variants.py. The shapes
follow MaxText e591f30: models/qwen3.py (Qwen3OmniAudioEncoder, its
layers Qwen3OmniAudioEncoderLayer, and Qwen3OmniAudioProjector),
layers/encoders.py (AudioEncoder: the encoder, a stop_gradient under
freeze_audio_encoder_params, the projector), layers/attentions.py and
layers/linears.py (the attention's and MlpBlock's kernels, biases and
their logical axes), models/models.py (the audio encoder is built when
use_audio is set and run only when the call passes encoder_audios),
trainers/pre_train/train.py (loss_fn), utils/maxtext_utils.py
(get_shaped_batch, init_initial_state) and multimodal/processor.py with
processor_qwen3_omni.py (get_dummy_audio_shape_for_init_qwen3_omni);
docs/graph-format.md describes the tensors and docs/memory-model.md the
rule.

The vision encoder is Qwen3-VL's unchanged: MaxText's Qwen3-VL encoder
subclasses Qwen3-Omni's (models/qwen3_vl_vision.py), and the Omni model
file (configs/models/qwen3-omni-30b-a3b.yml) sets the same sizes as
qwen3-vl-30b-a3b.yml (27 layers 1152 wide, MLP 4304, 16 heads, deepstack
on layers 8, 16 and 24, one 768x768 image an example in train_compile).

The audio encoder in the step MaxText compiles: params, no ops. With
use_audio, init_initial_state (and get_abstract_param) call the model with
a dummy audio (batch, num_mel_bins_for_audio, 4 chunks of
2 n_window_for_audio frames), so the encoder's and projector's params
exist, sharded by their logical axes, with their AdamW moments. But the
train step's loss_fn passes the model no encoder_audios (it passes the
batch's images alone), so models.py skips the audio encoder: no audio op
runs and no audio token is merged; the params' gradients are zeros no op
reads (XLA folds them into the update). The batch's dummy audios
(get_shaped_batch: float32 [batch, 128, 400]) are an argument nothing
reads; jax.jit drops unused arguments (keep_unused defaults to False),
so the graph has no audio input. Every audio param is therefore `frozen`
here (no gradient source, no gradient buffer, optimizer state kept), the
projector's too: with the encoder not run, no gradient reaches it either,
whatever freeze_audio_encoder_params says.

The params, per models/qwen3.py (d = d_model_for_audio, c =
downsample_hidden_size_for_audio, f = c x the mel bins after three
stride-2 convs, (((num_mel_bins_for_audio + 1) // 2 + 1) // 2 + 1) // 2,
m = encoder_ffn_dim_for_audio, o = output_dim_for_audio):
  conv2d1, 2, 3: 3x3 kernels [3, 3, 1, c] and [3, 3, c, c], each a bias
  [c] (nnx.Conv: no logical axes, replicated);
  conv_out: [f, d], no bias (DenseGeneral's default kernel_axes (): replicated);
  encoder_layers_for_audio layers (written as one stacked tensor of each
  kind, a leading unsharded dim: they are read by no op, so a stack holds
  what the per-layer arrays hold): two LayerNorms (scale and bias [d],
  replicated); q, k, v [d, heads, d / heads] with biases [heads, d / heads]
  (use_bias_in_projections; kernel axes (embed, q_heads, kv) and (embed,
  kv_heads, kv_head_dim), a bias the kernel's last axes); o [heads,
  d / heads, d] (heads, kv, embed) with a bias [d] (embed); the MLP's wi
  [d, m] (embed, mlp), bias [m] (mlp), wo [m, d] (mlp, embed), bias [d]
  (embed): MlpBlock with one activation and use_bias;
  layernorm_post: scale and bias [d];
  the projector: proj1 [d, d] and proj2 [d, o] with biases
  (DenseGeneral's default axes: replicated).
The sinusoidal position embedding has no params.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ beside the generators
import moe_family_a  # noqa: E402
import vision_family  # noqa: E402
from moe_graphs import T, write  # noqa: E402

AUDIO_DIMS = {
    "aud_l": {"from": "encoder_layers_for_audio"},
    "aud_e": {"from": "d_model_for_audio"},
    "aud_h": {"from": "encoder_attention_heads_for_audio"},
    "aud_d": {"from": "d_model_for_audio", "div": "encoder_attention_heads_for_audio"},
    "aud_m": {"from": "encoder_ffn_dim_for_audio"},
    "aud_c": {"from": "downsample_hidden_size_for_audio"},
    "aud_k": {"value": 9},  # a conv's 3x3 window (models/qwen3.py kernel_size=(3, 3))
    "aud_f": {"from": "audio_conv_out_dim"},
    "aud_o": {"from": "output_dim_for_audio"},
}

# name: (shape, logical axes); None axes: replicated (no logical axes)
AUDIO_PARAMS = {
    "aud_conv1_w": (["aud_k", "aud_c"], None),
    "aud_conv1_b": (["aud_c"], None),
    "aud_conv2_w": (["aud_k", "aud_c", "aud_c"], None),
    "aud_conv2_b": (["aud_c"], None),
    "aud_conv3_w": (["aud_k", "aud_c", "aud_c"], None),
    "aud_conv3_b": (["aud_c"], None),
    "aud_conv_out_w": (["aud_f", "aud_e"], None),
    "aud_ln1_scale": (["aud_l", "aud_e"], None),
    "aud_ln1_bias": (["aud_l", "aud_e"], None),
    "aud_wq": (["aud_l", "aud_e", "aud_h", "aud_d"], [None, "embed", "q_heads", "kv"]),
    "aud_bq": (["aud_l", "aud_h", "aud_d"], [None, "q_heads", "kv"]),
    "aud_wk": (["aud_l", "aud_e", "aud_h", "aud_d"], [None, "embed", "kv_heads", "kv_head_dim"]),
    "aud_bk": (["aud_l", "aud_h", "aud_d"], [None, "kv_heads", "kv_head_dim"]),
    "aud_wv": (["aud_l", "aud_e", "aud_h", "aud_d"], [None, "embed", "kv_heads", "kv_head_dim"]),
    "aud_bv": (["aud_l", "aud_h", "aud_d"], [None, "kv_heads", "kv_head_dim"]),
    "aud_wo": (["aud_l", "aud_h", "aud_d", "aud_e"], [None, "heads", "kv", "embed"]),
    "aud_bo": (["aud_l", "aud_e"], [None, "embed"]),
    "aud_ln2_scale": (["aud_l", "aud_e"], None),
    "aud_ln2_bias": (["aud_l", "aud_e"], None),
    "aud_wi": (["aud_l", "aud_e", "aud_m"], [None, "embed", "mlp"]),
    "aud_bi": (["aud_l", "aud_m"], [None, "mlp"]),
    "aud_wo_mlp": (["aud_l", "aud_m", "aud_e"], [None, "mlp", "embed"]),
    "aud_bo_mlp": (["aud_l", "aud_e"], [None, "embed"]),
    "aud_ln_post_scale": (["aud_e"], None),
    "aud_ln_post_bias": (["aud_e"], None),
    "aud_proj1_w": (["aud_e", "aud_e"], None),
    "aud_proj1_b": (["aud_e"], None),
    "aud_proj2_w": (["aud_e", "aud_o"], None),
    "aud_proj2_b": (["aud_o"], None),
}

DESCRIPTION = (
    "; Qwen3-Omni's audio encoder (use_audio; models/qwen3.py at e591f30) as MaxText's train "
    "step has it: its params and their optimizer state, nothing run (loss_fn passes the model "
    "no audio): three 3x3 stride-2 convs of downsample_hidden_size_for_audio channels, their "
    "output projection, encoder_layers_for_audio layers of LayerNorm, attention with biases, "
    "LayerNorm and a GeLU MLP with biases (d_model_for_audio wide, encoder_ffn_dim_for_audio "
    "MLP), a final LayerNorm and the projector to output_dim_for_audio; every audio param frozen "
    "(no gradient reaches it), the attention and MLP kernels sharded as the decoder's, the rest "
    "replicated")


def with_audio(g):
    """Graph `g` with the audio encoder's params in its head."""
    g["name"] = "qwen3_omni"
    g["description"] += DESCRIPTION
    g["dims"].update({k: dict(v) for k, v in AUDIO_DIMS.items()})
    t = g["head"]["tensors"]
    for name, (shape, axes) in AUDIO_PARAMS.items():
        p = T(shape, "weight", param=True, axes=axes if axes else [None] * len(shape))
        p["frozen"] = True
        t[name] = p
    return g


def qwen3_omni():
    return with_audio(vision_family.with_vision(moe_family_a.qwen3_moe(), "qwen3_omni", 27,
                                                [8, 16, 24]))


if __name__ == "__main__":
    write("qwen3_omni", qwen3_omni())
