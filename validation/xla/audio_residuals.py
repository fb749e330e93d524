#!/usr/bin/env python3
"""What JAX keeps for the backward of MaxText's audio encoder and projector.

MaxText builds Qwen3-Omni's audio encoder under use_audio
(layers/encoders.py AudioEncoder: the encoder, a jax.lax.stop_gradient on
its output under freeze_audio_encoder_params, its default, then the
projector). The train step MaxText compiles at e591f30 does not run it:
trainers/pre_train/train.py's loss_fn passes the model no encoder_audios,
so models.py skips the encoder, and remat's qwen3_omni graph holds the
encoder's params with no op (docs/config.md, Models). This traces
MaxText's own AudioEncoder as a step that did pass the audio would run it
(abstract weights, abstract audio of the shape train_compile's
get_shaped_batch gives, nothing compiled) under jax.vjp with respect to all
its params, and lists every residual JAX saves for the backward, with its
shape, dtype and bytes: the projector's alone under the freeze, none of the
encoder's. In the step MaxText compiles the list is empty: nothing runs.

    python3 validation/xla/audio_residuals.py --maxtext SRC [model_name=qwen3-omni-30b-a3b ...]

Runs on JAX's CPU backend; its output is one JSON record.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import encoder_trace  # pylint: disable=wrong-import-position


def main(argv):
  args, settings = encoder_trace.parse(argv, __doc__, "qwen3-omni-30b-a3b")
  cfg, mesh = encoder_trace.config_and_mesh(args, settings, "audio-residuals", ["use_audio=true"])
  # pylint: disable=import-outside-toplevel
  import json
  import jax
  import jax.numpy as jnp
  from flax import nnx
  from flax import linen as nn
  from jax._src.ad_checkpoint import saved_residuals
  from maxtext.layers.encoders import AudioEncoder
  from maxtext.multimodal import processor as mm_processor
  from maxtext.utils import maxtext_utils_nnx
  from maxtext.common.common_types import MODEL_MODE_TRAIN

  audio_shape = mm_processor.get_dummy_audio_shape_for_init(cfg)

  def create():
    rngs = maxtext_utils_nnx.create_nnx_rngs(cfg, model_mode=MODEL_MODE_TRAIN)
    return AudioEncoder(config=cfg, mesh=mesh, rngs=rngs)

  with mesh, nn.logical_axis_rules(cfg.logical_axis_rules):
    enc = nnx.eval_shape(create)
    graphdef, params, rest = nnx.split(enc, nnx.Param, ...)

    def loss(p, audio):
      module = nnx.merge(graphdef, p, rest)
      emb = module(audio, deterministic=True)
      return jnp.sum(emb.astype(jnp.float32))

    audio = jax.ShapeDtypeStruct(audio_shape, jnp.float32)
    res = saved_residuals(loss, params, audio)
    out_shape = jax.eval_shape(lambda p, a: nnx.merge(graphdef, p, rest)(a, deterministic=True), params, audio)
  out = encoder_trace.residual_records(res)
  leaves = jax.tree_util.tree_leaves_with_path(params)
  enc_params = sum(x.size for path, x in leaves if "Projector" not in jax.tree_util.keystr(path))
  proj_params = sum(x.size for path, x in leaves if "Projector" in jax.tree_util.keystr(path))
  print(json.dumps({"settings": settings, "audio": list(audio_shape), "tokens": list(out_shape.shape),
                    "freeze_audio_encoder_params": bool(cfg.freeze_audio_encoder_params),
                    "encoder_params": int(enc_params), "projector_params": int(proj_params),
                    "residuals": out}, indent=1))


if __name__ == "__main__":
  main(sys.argv[1:])
