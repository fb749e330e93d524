"""One MaxText decoder layer, checkpointed as MaxText checkpoints it, and the residuals JAX saves for it.

LayerTracer.trace(settings, layer) takes remat's `key=value` settings (MaxText's
keys; maxtext_args.translate turns `topology` into MaxText's compile
topology) and a layer index, and returns the layer's residuals. Everything
that decides what is kept is MaxText's own code, on its default decoder
(pure_nnx_decoder: NNXDecoder, layers/nnx_decoders.py): pyconfig reads the
config, train_compile.get_topology_mesh builds the mesh, NNXDecoder builds
its layers (abstractly, under nnx.eval_shape: each layer's class and
constructor arguments for its index, DeepSeek's dense or MoE class, Gemma 3's
and gpt-oss's attention type, Llama 4's NoPE and MoE flags), its
get_remat_policy gives the policy and its _apply_layer_with_remat wraps the
layer in jax.checkpoint with it. What this module adds is what NNXDecoder's
unscanned loop (__call__ with scan_layers=false) does around those: it finds
the layer by the loop's attribute names, passes the loop's layer arguments,
and calls the layer without jax.checkpoint when remat_policy is the string
"none", as the loop does (MaxText's config reads `none` as null, so the
loop checkpoints it with no policy: the trace records what that keeps).

remat also offers JAX's own policies that MaxText's get_remat_policy does
not (JAX_POLICIES: the dot predicates MaxText used for minimal before
August 2025). For those the config says remat_policy=full
and the layer is checkpointed by the same MaxText helper with JAX's policy in
place of MaxText's.

The residuals are read from the jaxpr of jax.vjp of that call, as
jax._src.ad_checkpoint.saved_residuals reads them (the forward's outputs that
the backward function closes over), with more said about each: every
checkpoint name on its value (a chain of checkpoint_name calls tags one value
with several names), host memory for an offloaded one, and what kind of
value it is (the layer input, a broadcast input, a weight, the layer's RNG
state, a named or an unnamed activation).
"""

import importlib.metadata
import math
import os
import platform
import subprocess
import tempfile

from flax import linen as nn
from flax import nnx
import jax
from jax._src import core as jax_core
from jax._src import source_info_util
from jax._src.ad_checkpoint import name_p
import jax.numpy as jnp
import numpy as np

import maxtext_args

PACKAGES = ("jax", "jaxlib", "libtpu", "flax", "numpy", "ml_dtypes", "tokamax", "qwix", "aqtp")

# Primitives that pass a value through unchanged, as far as what is stored
# goes: checkpoint_name's name_p, the host copy of an offloaded residual,
# reduce_precision (which saved_residuals looks through too), a sharding
# constraint (MaxText's logical-axis annotations) and a copy.
IDENTITY = {"name", "device_put", "reduce_precision", "sharding_constraint", "copy"}
# Call primitives whose outputs are their inner jaxpr's: a residual produced
# by one is followed inside to its own producer (MaxText names its MoE
# experts' matmul outputs inside the shard_map of its sparse path).
CALLS = {"jit", "pjit", "closed_call", "core_call", "remat", "checkpoint", "custom_jvp_call", "custom_vjp_call",
         "shard_map"}


# remat presets that are JAX policies MaxText's get_remat_policy does not
# build: each with the policy JAX builds for it.
JAX_POLICIES = {
    "dots_with_no_batch_dims_saveable": lambda: jax.checkpoint_policies.dots_with_no_batch_dims_saveable,
    "offload_dot_with_no_batch_dims":
        lambda: jax.checkpoint_policies.offload_dot_with_no_batch_dims(offload_src="device", offload_dst="pinned_host"),
}


class LayerTracer:
  """Builds MaxText's decoder per settings and reads one layer's residuals."""

  def __init__(self, maxtext_src):
    from maxtext.configs import pyconfig  # pylint: disable=import-outside-toplevel
    from maxtext.trainers.pre_train import train_compile  # pylint: disable=import-outside-toplevel
    import maxtext  # pylint: disable=import-outside-toplevel

    self.pyconfig = pyconfig
    self.train_compile = train_compile
    self.maxtext_src = maxtext_src
    self.package_dir = os.path.dirname(os.path.abspath(maxtext.__file__))
    self.base_yml = os.path.join(self.package_dir, "configs", "base.yml")
    self.out_dir = tempfile.mkdtemp(prefix="remat-residuals-")

  def config(self, settings):
    """MaxText's config for remat's settings, the key=value list it was given, and JAX's policy name or None."""
    keys = maxtext_args.translate(settings).keys + [f"base_output_directory={self.out_dir}"]
    jax_policy = None
    for i, key in enumerate(keys):
      if key.startswith("remat_policy=") and key.split("=", 1)[1] in JAX_POLICIES:
        jax_policy, keys[i] = key.split("=", 1)[1], "remat_policy=full"
    return self.pyconfig.initialize([None, self.base_yml] + keys), keys, jax_policy

  def trace(self, settings, layer):
    """{"maxtext": keys, "class": ..., "residuals": [...]} or {"maxtext": keys, "error": text}."""
    cfg, keys, jax_policy = self.config(settings)
    record = {"maxtext": [k for k in keys if not k.startswith("base_output_directory=")]}
    if jax_policy:
      record["jax_policy"] = jax_policy
    try:
      if not cfg.pure_nnx_decoder or cfg.scan_layers:
        raise ValueError("the trace follows NNXDecoder's unscanned loop: pure_nnx_decoder=true, scan_layers=false")
      mesh = self.train_compile.get_topology_mesh(cfg)
      with nn.logical_axis_rules(cfg.logical_axis_rules):
        decoder = self.decoder(cfg, mesh)
        module = decoder_layer(cfg, decoder, layer)
        record["class"] = type(module).__name__
        policy = JAX_POLICIES[jax_policy]() if jax_policy else decoder.get_remat_policy()
        record["residuals"] = self.residuals(cfg, mesh, decoder, module, policy)
    except Exception as e:  # pylint: disable=broad-exception-caught
      # A layer MaxText refuses to build is data: the record says why.
      record["error"] = f"{type(e).__name__}: {e}"
    return record

  @staticmethod
  def decoder(cfg, mesh):
    """MaxText's decoder for cfg, every weight abstract (nnx.eval_shape), with its training RNG streams."""
    from maxtext.common.common_types import MODEL_MODE_TRAIN  # pylint: disable=import-outside-toplevel
    from maxtext.layers.nnx_decoders import NNXDecoder  # pylint: disable=import-outside-toplevel
    from maxtext.utils import maxtext_utils_nnx  # pylint: disable=import-outside-toplevel

    def create():
      rngs = maxtext_utils_nnx.create_nnx_rngs(cfg, model_mode=MODEL_MODE_TRAIN)
      return NNXDecoder(config=cfg, mesh=mesh, quant=None, model_mode=MODEL_MODE_TRAIN, rngs=rngs)

    return nnx.eval_shape(create)

  def residuals(self, cfg, mesh, decoder, module, policy):
    """The layer's residuals, each a dict (see Residuals.entry)."""
    from maxtext.common.common_types import DecoderBlockType, MODEL_MODE_TRAIN  # pylint: disable=import-outside-toplevel
    from maxtext.utils import max_utils, maxtext_utils  # pylint: disable=import-outside-toplevel

    batch, seq = max_utils.get_batch_seq_len_for_mode(cfg, MODEL_MODE_TRAIN)
    x = jax.ShapeDtypeStruct((batch, seq, cfg.emb_dim), cfg.dtype)
    ids = jax.ShapeDtypeStruct((batch, seq), jnp.int32)
    graphdef, params, rest = nnx.split(module, nnx.Param, ...)
    prevent_cse = maxtext_utils.should_prevent_cse_in_remat(cfg)
    # NNXDecoder.__call__'s layer arguments; MaxText's train step runs the
    # model with deterministic = not enable_dropout.
    kwargs = {"deterministic": not cfg.enable_dropout, "model_mode": MODEL_MODE_TRAIN, "slot": None,
              "previous_chunk": None, "kv_cache": None}
    if cfg.decoder_block in (DecoderBlockType.GEMMA3, DecoderBlockType.GEMMA4):
      kwargs["bidirectional_mask"] = None

    def apply(p, r, inputs, segment_ids, positions, outer_values):
      layer = nnx.merge(graphdef, p, r)
      call = dict(kwargs, decoder_segment_ids=segment_ids, decoder_positions=positions)
      call.update(zip(outer, outer_values))
      # The loop's test, as it is: pyconfig reads remat_policy=none as None,
      # so `none` is checkpointed too, with get_remat_policy's None (nothing
      # saveable); only a config that kept the string would skip it.
      if cfg.remat_policy != "none":
        out = decoder._apply_layer_with_remat(layer, inputs, policy, prevent_cse, **call)  # pylint: disable=protected-access
      else:
        out = layer(inputs, **call)
      return out[0] if isinstance(out, tuple) else out

    outer = outer_args(cfg, module, batch, seq)
    args = (params, rest, x, ids, ids, tuple(outer.values()))
    roles = ([("param", p) for p in leaf_paths(params)] + [("state", p) for p in leaf_paths(rest)] +
             [("input", "inputs"), ("broadcast", "decoder_segment_ids"), ("broadcast", "decoder_positions")] +
             [("outer", name) for name in outer])
    leaves, tree = jax.tree.flatten(args)
    assert len(leaves) == len(roles), (len(leaves), len(roles))

    def flat(*ls):
      return apply(*jax.tree.unflatten(tree, ls))

    with mesh:
      closed, shape = jax.make_jaxpr(lambda *ls: jax.vjp(flat, *ls), return_shape=True)(*leaves)
    nres = len(jax.tree.leaves(shape[1]))
    jaxpr = closed.jaxpr
    return Residuals(jaxpr, roles, self.package_dir).read(jaxpr.outvars[len(jaxpr.outvars) - nres:])

  def versions(self):
    """The versions of everything the trace ran on, MaxText's commit among them."""
    out = {"python": platform.python_version()}
    for name in PACKAGES:
      try:
        out[name] = importlib.metadata.version(name)
      except importlib.metadata.PackageNotFoundError:
        out[name] = None
    out["maxtext"] = maxtext_version(self.maxtext_src)
    return out


def outer_args(cfg, module, batch, seq):
  """The arguments NNXDecoder's gemma4_small loop passes a layer beside its input, by name, as abstract arrays.

  Gemma 4 E2B/E4B (_apply_gemma4_small_layers): every layer its slice of
  the per-layer inputs; a layer that reuses an earlier layer's keys and
  values (is_shared), and a donor that hands its own on, the keys and
  values the loop made before the layer's checkpoint (compute_shared_kv,
  outside it: the donor's own residuals there are not the layer's). They
  are the checkpoint's arguments, held by what made them: source "outer".
  """
  from maxtext.common.common_types import DecoderBlockType  # pylint: disable=import-outside-toplevel
  from maxtext.models import gemma4_small  # pylint: disable=import-outside-toplevel

  if cfg.decoder_block != DecoderBlockType.GEMMA4_SMALL:
    return {}
  out = {}
  if cfg.hidden_size_per_layer_input > 0 and cfg.vocab_size_per_layer_input > 0:
    out["per_layer_input"] = jax.ShapeDtypeStruct((batch, seq, cfg.hidden_size_per_layer_input), cfg.dtype)
  types = gemma4_small.build_layer_types(cfg.num_decoder_layers, cfg.model_name)
  donor = gemma4_small.is_kv_donor_layer(module.layer_idx, types, cfg.num_kv_shared_layers)
  if module.is_shared or donor:
    kv = jax.ShapeDtypeStruct((batch, seq, module.num_kv_heads, module.head_dim), cfg.dtype)
    out["shared_key"], out["shared_value"] = kv, kv
  return out


def decoder_layer(cfg, decoder, layer):
  """The layer NNXDecoder's unscanned loop runs at index `layer`, by the loop's attribute names."""
  from maxtext.common.common_types import DecoderBlockType  # pylint: disable=import-outside-toplevel

  if cfg.decoder_block == DecoderBlockType.DEEPSEEK:
    if layer < cfg.first_num_dense_layers:
      return getattr(decoder, f"dense_layers_{layer}")
    return getattr(decoder, f"moe_layers_{layer - cfg.first_num_dense_layers}")
  return getattr(decoder, f"layers_{layer}")


def leaf_paths(tree):
  """Each leaf's path as a/b/c (dict keys and attributes; a Variable's own `value` left out)."""
  paths = []
  for path, _ in jax.tree_util.tree_flatten_with_path(tree)[0]:
    parts = [str(k) for k in (getattr(p, "key", None) or getattr(p, "name", None) for p in path) if k is not None]
    if parts and parts[-1] == "value":
      parts.pop()
    paths.append("/".join(parts))
  return paths


def maxtext_version(src):
  """A checkout's commit (and whether its sources are modified), else the package's version."""
  if not src:
    try:
      return {"source": "package", "version": importlib.metadata.version("maxtext")}
    except importlib.metadata.PackageNotFoundError:
      return {"source": "package", "version": None}
  info = {"source": "checkout"}
  try:
    run = lambda *a: subprocess.run(["git", "-C", src, *a], capture_output=True, text=True, check=True).stdout
    info["commit"] = run("rev-parse", "HEAD").strip()
    info["modified"] = bool(run("status", "--porcelain", "--untracked-files=no", "--", "*.py", "*.yml").strip())
  except (OSError, subprocess.CalledProcessError):
    info["commit"] = None
  return info


class Residuals:
  """Reads residual variables of a jaxpr: their names, memory and origin."""

  def __init__(self, jaxpr, roles, package_dir):
    self.jaxpr = jaxpr
    self.roles = dict(zip(jaxpr.invars, roles))
    self.package_dir = package_dir
    self.producer = {}
    self.readers = {}
    for eqn in jaxpr.eqns:
      for v in eqn.outvars:
        self.producer[v] = eqn
      for v in eqn.invars:
        if isinstance(v, jax_core.Var):
          self.readers.setdefault(v, []).append(eqn)

  def read(self, outvars):
    out = []
    seen = set()
    for v in outvars:
      if isinstance(v, jax_core.Literal):
        out.append(self.entry(v.aval, "literal", [], "", ""))
        continue
      if v in seen:  # one array the backward closes over twice is stored once
        continue
      seen.add(v)
      out.append(self.describe(v))
    return out

  def describe(self, var):
    """The record of one residual variable of the top-level jaxpr."""
    root, names = self.root(var)
    if root in self.roles:
      source, path = self.roles[root]
      return self.entry(var.aval, source, names, "", "", arg=path)
    if root in self.jaxpr.constvars:
      return self.entry(var.aval, "constant", names, "", "")
    eqn = self.producer[root]
    inner_names, primitive, where = self.inside(eqn, root)
    names = sorted(set(names) | set(inner_names))
    return self.entry(var.aval, "named" if names else "unnamed", names, where, primitive)

  def root(self, var):
    """The value a residual stores (through identity primitives) and every checkpoint name on it."""
    v = var
    while v in self.producer and self.producer[v].primitive.name in IDENTITY:
      v = self.producer[v].invars[0]
    names, stack, chain = set(), [v], {v}
    while stack:  # the names on v: checkpoint_name calls reading it, and those reading their outputs
      u = stack.pop()
      for eqn in self.readers.get(u, []):
        if eqn.primitive.name in IDENTITY and eqn.invars[0] is u:
          if eqn.primitive is name_p:
            names.add(eqn.params["name"])
          for w in eqn.outvars:
            if w not in chain:
              chain.add(w)
              stack.append(w)
    return v, sorted(names)

  def inside(self, eqn, var):
    """(names, primitive, source line) of a value an equation produces, looking into calls."""
    where = self.where(eqn)
    if eqn.primitive.name not in CALLS:
      return [], eqn.primitive.name, where
    inner = eqn.params.get("jaxpr") or eqn.params.get("call_jaxpr") or eqn.params.get("fun_jaxpr")
    inner = getattr(inner, "jaxpr", inner)
    if inner is None or not hasattr(inner, "outvars"):
      return [], eqn.primitive.name, where
    v = inner.outvars[eqn.outvars.index(var)]
    if not isinstance(v, jax_core.Var):
      return [], eqn.primitive.name, where
    sub = Residuals(inner, [], self.package_dir)
    root, names = sub.root(v)
    if root not in sub.producer:
      return names, eqn.primitive.name, where
    more, primitive, inner_where = sub.inside(sub.producer[root], root)
    return sorted(set(names) | set(more)), primitive, inner_where or where

  def where(self, eqn):
    """The MaxText source line an equation comes from, relative to the package (else '')."""
    text = source_info_util.summarize(eqn.source_info)
    marker = self.package_dir + os.sep
    if marker in text:
      return "maxtext/" + text.split(marker, 1)[1]
    return ""

  @staticmethod
  def entry(aval, source, names, where, primitive, arg=None):
    shape = [int(d) for d in aval.shape]
    dtype = np.dtype(aval.dtype) if not jax.dtypes.issubdtype(aval.dtype, jax.dtypes.prng_key) else None
    itemsize = dtype.itemsize if dtype is not None else 8  # a threefry key is two uint32
    space = str(getattr(aval, "memory_space", "")).lower()
    rec = {
        "source": source,
        "names": names,
        "shape": shape,
        "dtype": str(aval.dtype),
        "bytes": math.prod(shape) * itemsize,
        "memory": "host" if "host" in space else "device",
    }
    if arg:
      rec["arg"] = arg
    if where:
      rec["where"] = where
    if primitive:
      rec["primitive"] = primitive
    return rec
