#!/usr/bin/env python3
"""The residual rule from JAX itself: what one MaxText decoder layer keeps for backward.

For each built-in graph's MaxText layer (CASES) and each remat policy
(POLICIES), this builds the layer as MaxText's default decoder does
(NNXDecoder: its layer classes and their arguments, its get_remat_policy,
its jax.checkpoint of one unscanned layer; jax_trace.py says which parts
are MaxText's and which mirror its loop), traces one forward and backward
of it with abstract shapes (no memory, no device) and records every
residual JAX saves for the layer's backward: its shape, dtype and bytes, the
checkpoint names it carries, whether it stays on the device or is offloaded
to host memory, and where it comes from (the layer input, a broadcast input,
a weight, the layer's RNG state, a named tensor, or an unnamed one). The
residuals are those of `jax.ad_checkpoint.print_saved_residuals` (the
outputs of `jax.vjp`'s forward that its backward reads), read from the same
jaxpr with the checkpoint names followed through `checkpoint_name` chains,
sharding constraints, host copies and into shard_map bodies.

    python3 validation/xla/residuals.py --maxtext SRC [--out FILE] [--only GRAPH ...]

`--maxtext SRC` is a MaxText checkout (its `src` folder is put on the path);
without it the installed `maxtext` package is used. With `--only` or
`--policies` the run redoes those cases and keeps the file's others. The result, format
`remat-residuals/1` (validation/README.md), goes to
validation/xla_residuals.json; the `residuals` ctest compares it with
`remat table --kind tensors` for the same settings, name by name and byte by
byte, with no Python.

The trace: JAX's CPU backend (JAX_PLATFORMS=cpu is set here), on a mesh of
one device of a TPU topology (`topology=v5e-1`, MaxText's own
`get_topology_mesh`, libtpu describing the chip), because MaxText picks its
attention kernel by the mesh's platform: on a TPU mesh `attention=flash` is
the splash kernel, as on the machines remat models. Nothing is compiled.
Each layer has its model's real per-layer dims, one sequence of SEQ tokens
per device, on one device, with scan_layers=false: MaxText then checkpoints
each layer on its own, which is the unit remat's graphs model (with
scan_layers=true, gpt-oss, Llama 4 and Gemma 3 scan blocks of 2, 4 and 6
layers under one checkpoint; docs/validation.md says what that changes).
The model has just the layers the recorded ones need (base_num_decoder_layers,
set for remat too). A run takes about ten minutes on two cores.
"""

import argparse
import datetime
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

FORMAT = "remat-residuals/1"

# The environment MaxText's CI uses to reach libtpu on a host with no TPU
# (oracle.py), with the CPU backend for everything JAX runs.
TRACE_ENV = {
    "JAX_PLATFORMS": "cpu",
    "TPU_SKIP_MDS_QUERY": "1",
    "ALLOW_MULTIPLE_LIBTPU_LOAD": "true",
    "DECOUPLE_GCLOUD": "TRUE",
}

# One device of a TPU slice, one sequence of SEQ tokens per device.
SEQ = 1024
COMMON = ["topology=v5e-1", "per_device_batch_size=1", f"max_target_length={SEQ}", "scan_layers=false"]

# Each built-in graph (`remat list`): the model whose real per-layer dims are
# traced, the settings beyond COMMON (`seq`: a sequence in place of SEQ), and the layers recorded: one of each
# layer kind the graph has (dense and MoE, local and global attention),
# as (layer index, the kind's name in remat's graph).
CASES = [
    {"graph": "llama.flash", "settings": ["model_name=llama3-8b"], "layers": [(0, "layer")]},
    {"graph": "llama.dot_product", "settings": ["model_name=llama3-8b", "attention=dot_product"], "layers": [(0, "layer")]},
    {"graph": "llama_tied.flash", "settings": ["model_name=qwen2.5-1.5b", "decoder_block=llama2"], "layers": [(0, "layer")]},
    {"graph": "gemma.flash", "settings": ["model_name=gemma-2b"], "layers": [(0, "layer")]},
    {"graph": "gpt3.flash", "settings": ["model_name=gpt3-22b", "attention=flash"], "layers": [(0, "layer")]},
    {"graph": "gpt3.dot_product", "settings": ["model_name=gpt3-22b", "attention=dot_product"], "layers": [(0, "layer")]},
    {"graph": "gpt3.dot_product.dropout",
     "settings": ["model_name=gpt3-22b", "attention=dot_product", "dropout_rate=0.1", "enable_dropout=true"],
     "layers": [(0, "layer")]},
    {"graph": "mixtral.flash", "settings": ["model_name=mixtral-8x7b"], "layers": [(0, "layer")]},
    {"graph": "mixtral.flash.dense_moe",
     "settings": ["model_name=mixtral-8x7b", "sparse_matmul=false", "capacity_factor=1.25"], "layers": [(0, "layer")]},
    {"graph": "deepseek.flash", "settings": ["model_name=deepseek3-671b"], "layers": [(0, "dense"), (3, "moe")]},
    {"graph": "deepseek_lite.flash", "settings": ["model_name=deepseek2-16b"], "layers": [(0, "dense"), (1, "moe")]},
    {"graph": "qwen3_moe.flash", "settings": ["model_name=qwen3-30b-a3b"], "layers": [(0, "layer")]},
    {"graph": "qwen3.flash", "settings": ["model_name=qwen3-8b"], "layers": [(0, "layer")]},
    {"graph": "qwen3_tied.flash", "settings": ["model_name=qwen3-0.6b"], "layers": [(0, "layer")]},
    {"graph": "gpt_oss.flash", "settings": ["model_name=gpt-oss-20b"], "layers": [(0, "local"), (1, "global")]},
    {"graph": "llama4.flash", "settings": ["model_name=llama4-17b-128e"],
     "layers": [(0, "chunked_dense"), (1, "chunked_moe"), (3, "global_moe")]},
    {"graph": "llama4_qk_norm.flash", "settings": ["model_name=llama4-17b-16e"], "layers": [(0, "chunked_moe"), (3, "global_moe")]},
    {"graph": "gemma2.flash", "settings": ["model_name=gemma2-2b"], "layers": [(0, "layer")]},
    {"graph": "gemma3.flash", "settings": ["model_name=gemma3-4b"], "layers": [(0, "local"), (5, "global")]},
    {"graph": "olmo3.flash", "settings": ["model_name=olmo3-7b"], "layers": [(0, "local"), (3, "global")]},
    {"graph": "gemma4.flash", "settings": ["model_name=gemma4-31b"], "layers": [(0, "local"), (5, "global")]},
    {"graph": "gemma4_moe.flash", "settings": ["model_name=gemma4-26b"], "layers": [(0, "local"), (5, "global")]},
    # unscanned, its layer count decides which layers share keys and values:
    # the model's own count (`depth`)
    {"graph": "gemma4_small.flash", "settings": ["model_name=gemma4-e2b"], "depth": 35,
     "layers": [(0, "local"), (4, "global"), (13, "local_donor"), (14, "global_donor"), (15, "local_shared"),
                (19, "global_shared")]},
    {"graph": "envy.flash", "settings": ["model_name=envy-switch-base"], "layers": [(0, "dense"), (1, "moe")]},
    # MaxText runs the indexer past indexer_topk (2048) keys only: a longer
    # sequence than SEQ
    {"graph": "deepseek.flash.indexer", "seq": 4096,
     "settings": ["model_name=deepseek3.2-671b", "attention=flash", "use_tokamax_splash=true", "indexer_sparse_training=true"],
     "layers": [(0, "dense"), (3, "moe")]},
    {"graph": "qwen3_next.flash", "settings": ["model_name=qwen3-next-80b-a3b"], "layers": [(0, "linear"), (3, "full")]},
]

# MaxText's preset policies (its `get_remat_policy`), then `custom` mixes
# that place names the presets never do: the layer input offloaded, the
# attention output, MLA's and the MoE experts' own names, and mixes of
# device and offload within one layer.
PRESETS = [
    "full", "none", "minimal", "minimal_with_context", "save_dot_with_context_except_mlp", "save_dot_except_mlpwi",
    "save_dot_except_mlp", "save_qkv_proj", "qkv_proj_offloaded", "minimal_offloaded", "save_out_proj",
]
CUSTOM = {
    "custom_attention": ["query_proj=device", "key_proj=offload", "value_proj=offload", "context=device",
                         "attention_out=device", "out_proj=offload", "qkv_proj=device"],
    "custom_mlp": ["decoder_layer_input=offload", "mlpwi_0=device", "mlpwi_1=offload", "mlpwo=device",
                   "mlpwi=device"],
    "custom_moe_mla": ["moe_mlpwi_0=offload", "moe_mlpwi_1=device", "moe_mlpwo=device", "query_wa_proj=device",
                       "kv_wa_proj=offload", "mla_q=device", "mla_kv=device", "kv_proj=device"],
}
# remat's presets that are JAX policies MaxText does not build (the tracer
# checkpoints MaxText's layer with JAX's own policy for them). Not
# everything_saveable: with nothing recomputed JAX keeps each primitive's
# own residuals (every fp32 upcast, rsqrt, bf16 weight copy), which XLA
# fuses or rematerializes; remat models the buffers XLA keeps, and the two
# lists do not compare (docs/validation.md, "Residuals").
JAX_PRESETS = ["dots_with_no_batch_dims_saveable", "offload_dot_with_no_batch_dims"]
POLICIES = [(p, [f"remat_policy={p}"]) for p in PRESETS + JAX_PRESETS] + [
    (name, ["remat_policy=custom"] + keys) for name, keys in CUSTOM.items()
]


def parse_args(argv):
  p = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
  p.add_argument("--maxtext", help="a MaxText checkout (default: the installed maxtext package)")
  p.add_argument("--out", default=os.path.join(HERE, "..", "xla_residuals.json"), help="the data file to write")
  p.add_argument("--only", nargs="*", default=None, help="graphs to record (default: all)")
  p.add_argument("--policies", nargs="*", default=None, help="policies to record (default: all)")
  return p.parse_args(argv)


def kept_cases(args):
  """With --only or --policies, the recorded cases the run does not redo:
  a partial run replaces its own cases in the data file and keeps the rest."""
  if not (args.only or args.policies) or not os.path.exists(args.out):
    return []
  with open(args.out, encoding="utf-8") as f:
    old = json.load(f)
  if old.get("format") != FORMAT:
    raise SystemExit(f"{args.out}: format {old.get('format')!r}, not {FORMAT!r}: run without --only")
  return [c for c in old["cases"]
          if (args.only and c["graph"] not in args.only) or (args.policies and c["policy"] not in args.policies)]


def main(argv):
  args = parse_args(argv)
  for key, value in TRACE_ENV.items():
    os.environ[key] = value
  if args.maxtext:
    sys.path.insert(0, os.path.join(args.maxtext, "src"))
  import py311  # pylint: disable=import-outside-toplevel

  py311.install()
  import jax_trace  # pylint: disable=import-outside-toplevel

  tracer = jax_trace.LayerTracer(args.maxtext)
  cases = []
  for case in CASES:
    if args.only and case["graph"] not in args.only:
      continue
    for policy, policy_keys in POLICIES:
      if args.policies and policy not in args.policies:
        continue
      # The fewest layers that hold the recorded ones, or the case.s own
      # count (`depth`) where it decides the layers (each layer's
      # residuals are its own; the decoder is built whole, abstractly).
      depth = case.get("depth", max(layer for layer, _ in case["layers"]) + 1)
      common = [f"max_target_length={case['seq']}" if k.startswith("max_target_length=") and "seq" in case else k
                for k in COMMON]
      settings = case["settings"] + [f"base_num_decoder_layers={depth}"] + common + policy_keys
      for layer, kind in case["layers"]:
        record = {"graph": case["graph"], "policy": policy, "layer": layer, "kind": kind, "settings": settings}
        record.update(tracer.trace(settings, layer))
        print(f"{case['graph']:26} {policy:34} layer {layer} ({kind}): {summary(record)}", flush=True)
        cases.append(record)
  cases = kept_cases(args) + cases
  order = {c["graph"]: i for i, c in enumerate(CASES)}
  cases.sort(key=lambda r: order.get(r["graph"], len(order)))  # stable: policies stay in order
  out = {
      "format": FORMAT,
      "generated": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
      "command": "python3 validation/xla/residuals.py --maxtext SRC",
      "versions": tracer.versions(),
      "trace": "one layer's jax.vjp, abstract shapes, JAX's CPU backend, a one-device v5e mesh (topology v5e-1)",
      "cases": cases,
  }
  with open(args.out, "w", encoding="utf-8") as f:
    f.write(dumps(out))
  return 0


def dumps(out):
  """The file's text: the header indented, then a case a line and a residual a line (short diffs)."""
  header = json.dumps({k: v for k, v in out.items() if k != "cases"}, indent=1)
  cases = []
  for case in out["cases"]:
    head = {k: v for k, v in case.items() if k != "residuals"}
    if "residuals" not in case:
      cases.append(" " + json.dumps(head))
      continue
    rows = ",\n".join("   " + json.dumps(r) for r in case["residuals"])
    cases.append(" " + json.dumps(head)[:-1] + ', "residuals": [\n' + rows + "]}")
  return header[:-2] + ',\n "cases": [\n' + ",\n".join(cases) + "\n ]\n}\n"


def summary(record):
  if "error" in record:
    return "error: " + record["error"].splitlines()[0][:120]
  kept = [r for r in record["residuals"] if r["source"] in ("input", "named", "unnamed")]
  size = sum(r["bytes"] for r in kept)
  return f"{len(kept)} residuals, {size / 2**20:.1f} MiB (+{len(record['residuals']) - len(kept)} weights/broadcast)"


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
