#!/usr/bin/env python3
"""What JAX keeps for the backward of MaxText's vision encoder and projector.

MaxText runs the vision encoder before the decoder (models/models.py) and,
under freeze_vision_encoder_params (its default), passes the encoder's
outputs through jax.lax.stop_gradient before the projector
(layers/encoders.py VisionEncoder). remat's qwen3_vl, gemma3_vision,
qwen3_5_vision and llama4*_vision graphs model that encoder as frozen:
forward only, no residual, no gradient (docs/memory-model.md, "A frozen vision encoder"). This traces MaxText's own
VisionEncoder for a model (abstract weights, abstract images of the shape
train_compile gives, nothing compiled) under jax.vjp with respect to all
its params and lists every residual JAX saves for the backward, with its
shape, dtype and bytes: the projector's and nothing of the encoder's.

    python3 validation/xla/vision_residuals.py --maxtext SRC [model_name=qwen3-vl-2b ...]
    python3 validation/xla/vision_residuals.py --maxtext SRC model_name=gemma3-4b use_multimodal=true
    python3 validation/xla/vision_residuals.py --maxtext SRC model_name=qwen3.5-35b-a3b use_multimodal=true
    python3 validation/xla/vision_residuals.py --maxtext SRC model_name=llama4-17b-16e use_multimodal=true

Runs on JAX's CPU backend in a minute; its output is one JSON record.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import encoder_trace  # pylint: disable=wrong-import-position


def main(argv):
  args, settings = encoder_trace.parse(argv, __doc__, "qwen3-vl-2b")
  cfg, mesh = encoder_trace.config_and_mesh(args, settings, "vision-residuals")
  # pylint: disable=import-outside-toplevel
  import json
  import jax
  import jax.numpy as jnp
  from flax import nnx
  from flax import linen as nn
  from jax._src.ad_checkpoint import saved_residuals
  from maxtext.layers.encoders import VisionEncoder
  from maxtext.multimodal import processor as mm_processor
  from maxtext.utils import maxtext_utils_nnx
  from maxtext.common.common_types import MODEL_MODE_TRAIN

  image_shape = mm_processor.get_dummy_image_shape_for_init(cfg.model_name, batch_size=1)

  def create():
    rngs = maxtext_utils_nnx.create_nnx_rngs(cfg, model_mode=MODEL_MODE_TRAIN)
    return VisionEncoder(config=cfg, mesh=mesh, rngs=rngs)

  with mesh, nn.logical_axis_rules(cfg.logical_axis_rules):
    enc = nnx.eval_shape(create)
    graphdef, params, rest = nnx.split(enc, nnx.Param, ...)

    def loss(p, images):
      module = nnx.merge(graphdef, p, rest)
      emb, deep = module(images, deterministic=True)
      total = jnp.sum(emb.astype(jnp.float32))
      for d in deep or []:
        total = total + jnp.sum(d.astype(jnp.float32))
      return total

    images = jax.ShapeDtypeStruct(image_shape, jnp.int32)
    res = saved_residuals(loss, params, images)
  out = encoder_trace.residual_records(res)
  # the encoder's own params: all but its projector's (Qwen3-VL's
  # ...VisionProjector_0, Gemma 3's VisionEmbedder_0, Llama 4's
  # Llama4MultiModalProjector_0: its pixel-shuffle adapter is the encoder's)
  enc_params = sum(x.size for path, x in jax.tree_util.tree_leaves_with_path(params)
                   if enc.projector_name not in jax.tree_util.keystr(path))
  print(json.dumps({"settings": settings, "images": list(image_shape),
                    "freeze_vision_encoder_params": bool(cfg.freeze_vision_encoder_params),
                    "encoder_params": int(enc_params), "residuals": out}, indent=1))


if __name__ == "__main__":
  main(sys.argv[1:])
