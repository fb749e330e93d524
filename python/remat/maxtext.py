"""MaxText's config object as remat settings.

:func:`settings_from_maxtext` turns the object MaxText's ``pyconfig.initialize``
returns (or the same keys in another shape) into the settings remat reads:
a dict of MaxText key names that, written with ``json.dumps`` to a file, makes
``remat analyze --config FILE`` analyze the run that config describes.

Invariants:

* **Keys.** Every key is one remat models (``remat list keys``), spelled as
  MaxText spells it (``compile_topology``, ``compile_topology_num_slices``),
  plus remat's own ``num_devices`` and ``hardware`` for a run on live devices
  (no ``compile_topology``), where MaxText's config names no chip. MaxText keys
  remat does not model (``run_name``, ``steps``, paths, the data pipeline...)
  are left out: they change none of remat's figures.
* **No derived value remat derives again.** MaxText's validator computes
  global and micro batch sizes, ``num_slices``, ``tensors_on_device``, the
  ``ici_parallelism`` lists, resolved pipeline counts and a mesh order; remat
  computes its own from the settings they come from, and a second copy could
  only disagree. Where MaxText derives a value remat has no source for (the
  model dims scaled by ``global_parameter_scale``, the devices of a live run),
  the derived value is passed in place of its source.
* **Values are JSON scalars**: ``str``, ``int``, ``float`` or ``bool``, never
  ``None``, a list or a mapping (remat's JSON config reader refuses those).
  Enums become their values, dtypes their names, ``mlp_activations`` (and
  ``deepstack_visual_indexes_for_vit``) the flow
  text MaxText's YAML would hold (``['silu', 'linear']``), and
  ``logical_axis_rules`` remat's override syntax (``name:axis+axis,...``).
* **Pure.** The config is only read. Nothing from MaxText or JAX is imported;
  PyYAML is imported only to read MaxText's ``base.yml`` when the config has
  ``logical_axis_rules`` to compare with it.
* **Refusals.** A value remat would silently model as another run (a mesh
  axis remat lacks, sized above 1) raises ``ValueError`` naming the key; a
  value remat refuses itself (``attention=cudnn_flash_te``, an MoE block it
  has no graph for) is passed through, so that remat names it.
"""

from __future__ import annotations

import enum
import functools
import importlib.util
import os
import sys
import warnings
from collections.abc import Mapping
from typing import Any

__all__ = ["settings_from_maxtext", "hardware_from_device_kind"]

# MaxText keys remat models and takes as they are (after _scalar). The keys
# handled by their own rule (the slice, the model dims, the policy's
# placements, pipeline micro-batches, the axis rules) are not listed here.
_PLAIN_KEYS = (
    "model_name", "decoder_block", "attention", "attention_type", "hardware",
    "remat_policy", "opt_type", "head_dim", "vocab_size", "max_target_length",
    "trainable_position_size",
    "per_device_batch_size", "gradient_accumulation_steps", "num_vocab_tiling",
    "dtype", "weight_dtype", "grad_dtype", "mu_dtype", "scan_layers",
    "dropout_rate", "enable_dropout", "quantization", "use_qwix_quantization",
    "parameter_memory_host_offload", "optimizer_memory_host_offload",
    "mlp_activations", "logits_via_embedding", "use_qk_norm",
    "use_post_attn_norm", "use_post_ffw_norm",
    # mixture of experts, MLA, layer stacks and attention windows
    "num_experts", "num_experts_per_tok", "shared_experts",
    "first_num_dense_layers", "interleave_moe_layer_step",
    "inhomogeneous_layer_cycle_interval", "nope_layer_interval",
    "sparse_matmul", "capacity_factor", "ragged_buffer_factor",
    "wi_tile_fwd_batch_seq", "sa_block_kv", "q_lora_rank", "kv_lora_rank",
    "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
    "sliding_window_size", "chunk_attn_window_size", "mtp_num_layers",
    "global_head_dim", "global_num_kv_heads", "share_kv_projections",
    "v_norm_with_scale", "hidden_size_per_layer_input", "vocab_size_per_layer_input",
    "num_kv_shared_layers", "use_double_wide_mlp", "gdn_conv_kernel_dim", "gdn_num_key_heads",
    "gdn_num_value_heads", "gdn_key_head_dim", "gdn_value_head_dim", "gdn_chunk_size",
    # the vision encoders of Qwen3-VL, Gemma 3, Qwen3.5 and Llama 4
    "use_multimodal", "freeze_vision_encoder_params", "dtype_mm", "hidden_size_for_vit",
    "intermediate_size_for_vit", "num_attention_heads_for_vit", "num_hidden_layers_for_vit",
    "image_size_for_vit", "patch_size_for_vit", "conv_stride_for_vit", "temporal_patch_size_for_vit",
    "tile_size_for_vit", "pixel_shuffle_ratio_for_vit", "projector_input_dim_for_vit",
    "projector_output_dim_for_vit", "vision_output_dim_for_vit",
    "spatial_merge_size_for_vit", "num_channels_for_vit", "num_position_embeddings_for_vit",
    "out_hidden_size_for_vit", "deepstack_visual_indexes_for_vit",
    # Qwen3-Omni's audio encoder (its params: MaxText's train step runs none of it)
    "use_audio", "freeze_audio_encoder_params", "d_model_for_audio", "encoder_layers_for_audio",
    "encoder_attention_heads_for_audio", "encoder_ffn_dim_for_audio", "num_mel_bins_for_audio",
    "downsample_hidden_size_for_audio", "output_dim_for_audio", "num_conv_layers_for_audio",
    # DeepSeek-V3.2's sparse-attention indexer, its stage and its kernel
    "use_indexer", "indexer_n_heads", "indexer_head_dim", "indexer_topk",
    "indexer_sparse_training", "indexer_loss_scaling_factor", "use_tokamax_splash",
    # DeepSeek-V3's batch-split schedule
    "use_batch_split_schedule", "batch_split_factor",
    # pipeline
    "num_layers_per_pipeline_stage", "pipeline_delay_activation_forwarding",
    "override_logical_axis_rules",
    # the mesh's layout on the slice's chip grid
    "allow_split_physical_axes",
)

# remat's base_* keys are the model's dims; MaxText scales them by
# global_parameter_scale into these derived keys, which remat does not
# model, so the scaled value is the one that describes the run.
_DIMS = (
    ("base_emb_dim", "emb_dim"),
    ("base_num_query_heads", "num_query_heads"),
    ("base_num_kv_heads", "num_kv_heads"),
    ("base_mlp_dim", "mlp_dim"),
    ("base_moe_mlp_dim", "moe_mlp_dim"),
    ("base_num_decoder_layers", "num_decoder_layers"),
)

# MaxText's checkpoint names, the per-name keys of remat_policy=custom
# (types.py's list at e591f30, as the validator builds tensors_on_device).
_PLACEMENT_KEYS = (
    "decoder_layer_input", "indexer_cutoff_threshold", "context", "mlpwi",
    "moe_mlpwi_0", "moe_mlpwi_1", "moe_mlpwo", "mlpwi_0", "mlpwi_1", "mlpwo",
    "query_proj", "key_proj", "value_proj", "kv_proj", "query_wa_proj",
    "kv_wa_proj", "mla_kv", "mla_q", "qkv_proj", "attention_out", "out_proj",
)

# The mesh axes remat has (src/model/mesh.c), by their parallelism keys'
# infix; MaxText's `stage` axis is keyed `pipeline`.
_MESH_AXES = (
    "data", "fsdp", "fsdp_transpose", "sequence", "tensor", "tensor_sequence",
    "context", "expert", "pipeline", "context_usp_ulysses", "autoregressive",
)
_RULE_AXES = frozenset(_MESH_AXES) - {"pipeline"} | {"stage"}
# MaxText's other mesh axes. At size 1 they shard nothing, so a rule naming
# one loses nothing when it is dropped; above 1 remat would put their devices
# on another axis and analyze another run, so they are refused.
_FOREIGN_AXES = ("diloco", "context_autoregressive")
# `model` is MaxText's old name of the tensor axis (its ici_map sizes it by
# ici_tensor_parallelism).
_AXIS_ALIASES = {"model": "tensor"}
# remat shards the head's batch over the pipeline stages by itself (it binds
# the head's batch dims divided by the stages: src/sim/bind.c), so `stage`
# in these rules, base.yml's and the one MaxText's validator rewrites for a
# pipeline, is already counted.
_STAGE_BUILTIN = frozenset(
    {"activation_embed_and_logits_batch", "activation_embed_and_logits_batch_sequence"}
)

# jax's device_kind strings for TPUs (lower case, as libtpu names them) and
# the hardware profile each is; a GPU's kind holds its model ("NVIDIA H100
# 80GB HBM3"). "TPU v4 lite" (v4i) and older chips have no profile.
_TPU_KINDS = {
    "tpu7x": "tpu7x", "tpu v6 lite": "v6e", "tpu v6e": "v6e", "tpu v5 lite": "v5e",
    "tpu v5e": "v5e", "tpu v5": "v5p", "tpu v5p": "v5p", "tpu v4": "v4",
}
_GPU_KINDS = (("h100", "h100"), ("h200", "h200"), ("b200", "b200"))


def settings_from_maxtext(
    config: Any, *, base_rules: Any = None, device_kind: str | None = None
) -> dict[str, object]:
    """The remat settings of the run a MaxText config describes.

    ``config`` is what ``pyconfig.initialize(argv)`` returns (its
    ``get_keys()``), a legacy config with a ``.keys`` dict, a pydantic
    ``MaxTextConfig`` (``model_dump()``) or a plain mapping of MaxText keys.
    ``base_rules`` is the ``logical_axis_rules`` list the config's rules are
    compared with (default: those of the ``base.yml`` beside the MaxText that
    built the config). ``device_kind`` (``jax.devices()[0].device_kind``)
    names the chip of a run without ``compile_topology``; a compile topology
    names its own. Raises ``TypeError`` for an object of another shape and
    ``ValueError`` for a run remat cannot describe (see the module's
    invariants).
    """
    flat = _flat_keys(config)
    settings: dict[str, object] = {}
    for key in _PLAIN_KEYS:
        if key in flat:
            _put(settings, key, flat[key])
    _put_model(settings, flat)
    _put_dims(settings, flat)
    _put_slice(settings, flat, device_kind)
    _put_mesh(settings, flat)
    _put_placements(settings, flat)
    _put_pipeline(settings, flat)
    rules = _rules_setting(flat, config, base_rules)
    if rules is not None:
        settings["logical_axis_rules"] = rules
    return settings


def hardware_from_device_kind(kind: str) -> str:
    """remat's hardware profile for a jax ``device_kind`` ('TPU v5 lite': v5e)."""
    low = " ".join(str(kind).lower().split())
    if low in _TPU_KINDS:
        return _TPU_KINDS[low]
    for part, hardware in _GPU_KINDS:
        if low.startswith("nvidia") and part in low:
            return hardware
    raise ValueError(f"device_kind {kind!r} is no chip remat has a profile for")


# ---- reading the config ----------------------------------------------------


def _flat_keys(config: Any) -> Mapping[str, Any]:
    """The config's keys as one flat mapping, whatever its shape."""
    if isinstance(config, Mapping):
        return config
    get_keys = getattr(config, "get_keys", None)
    if callable(get_keys):
        return _as_mapping(get_keys(), "get_keys()")
    keys = getattr(config, "keys", None)
    if isinstance(keys, Mapping):  # legacy pyconfig's _HyperParameters
        return keys
    model_dump = getattr(config, "model_dump", None)
    if callable(model_dump):  # pydantic MaxTextConfig
        return _as_mapping(model_dump(), "model_dump()")
    raise TypeError(
        f"{type(config).__name__} is no MaxText config: expected get_keys(), "
        "a .keys dict, model_dump() or a mapping of MaxText keys"
    )


def _as_mapping(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise TypeError(f"the config's {what} returned {type(value).__name__}, not a mapping")
    return value


def _scalar(value: Any) -> Any:
    """A MaxText value as a JSON scalar, or None when it has none."""
    if isinstance(value, enum.Enum):  # DecoderBlockType, RematLocation, ...
        value = value.value
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if type(value).__module__.split(".")[0] in ("numpy", "jax", "ml_dtypes"):
        name = getattr(value, "name", None)  # a dtype: jnp.dtype(bfloat16)
        if isinstance(name, str):
            return name
        item = getattr(value, "item", None)  # a numpy scalar
        if callable(item):
            return _scalar(item())
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        # MaxText's YAML flow text, which remat reads for mlp_activations
        return "[" + ", ".join(repr(v) for v in value) + "]"
    if isinstance(value, (list, tuple)) and all(type(v) is int for v in value):
        # the flow text remat reads for deepstack_visual_indexes_for_vit
        return "[" + ", ".join(str(v) for v in value) + "]"
    raise ValueError(f"a {type(value).__name__} has no JSON scalar for remat: {value!r}")


def _put(settings: dict[str, object], key: str, value: Any) -> None:
    """settings[key] = the value as a scalar; an unset (None) value is left
    to remat's default, which is MaxText's base.yml default."""
    try:
        scalar = _scalar(value)
    except ValueError as e:
        raise ValueError(f"{key}: {e}") from None
    if scalar is not None:
        settings[key] = scalar


# ---- the groups of keys ----------------------------------------------------


def _put_model(settings: dict[str, object], flat: Mapping[str, Any]) -> None:
    """MaxText's own readings of a few keys, so that remat reads them alike."""
    name = settings.get("model_name")
    if isinstance(name, str) and "-Instruct" in name:
        # pyconfig loads the base model's yml for an -Instruct name (the
        # same architecture); remat's presets carry the base names only
        settings["model_name"] = name.replace("-Instruct", "")
    if "remat_policy" in flat and flat["remat_policy"] is None:
        # decoders.py checkpoints with no policy for None, as for "none"
        settings["remat_policy"] = "none"
    if "quantization" in flat and flat["quantization"] is None:
        settings["quantization"] = ""  # no quantization, remat's empty value
    if settings.get("mu_dtype") == "":
        # unset: MaxText's validator and remat both take weight_dtype
        del settings["mu_dtype"]


def _put_dims(settings: dict[str, object], flat: Mapping[str, Any]) -> None:
    """The model's dims, scaled as MaxText runs them."""
    for base, derived in _DIMS:
        value = flat.get(derived)
        if value is None:
            value = flat.get(base)
        value = _scalar(value)
        # base_moe_mlp_dim is -1 in base.yml when there are no experts: unset
        if value is not None and not (isinstance(value, int) and value <= 0):
            settings[base] = value


def _put_slice(
    settings: dict[str, object], flat: Mapping[str, Any], device_kind: str | None
) -> None:
    """The slice, as MaxText's get_num_target_devices finds it: an internal
    compile's device count, else the compile topology, else the devices of
    this process (jax.devices()) that MaxText counted."""
    topology = _scalar(flat.get("compile_topology"))
    if topology and not flat.get("internal_compile"):
        # train_compile's target: remat's topology names both chip and count,
        # and MaxText's num_target_devices, derived from it, is left out
        settings["compile_topology"] = topology
        slices = _scalar(flat.get("compile_topology_num_slices"))
        if slices is not None:
            settings["compile_topology_num_slices"] = slices
        return
    # an internal compile's topology is a name remat does not know: its count
    key = "internal_compile_num_devices" if flat.get("internal_compile") else "num_target_devices"
    devices = _scalar(flat.get(key))
    if isinstance(devices, int) and devices > 0:
        settings["num_devices"] = devices
    slices = _scalar(flat.get("num_slices"))  # MaxText's count of live slices
    if isinstance(slices, int) and slices > 0:
        settings["num_slices"] = slices
    if device_kind is not None:
        settings["hardware"] = hardware_from_device_kind(device_kind)
    elif "num_devices" in settings:
        # hardware is MaxText's 'tpu' or 'gpu', no chip: remat would take its
        # default profile (or h100), whose budget may not be this chip's
        warnings.warn(
            "the MaxText config names no compile_topology and no device_kind was "
            "given: remat assumes its default chip for these devices",
            stacklevel=3,
        )


def _put_mesh(settings: dict[str, object], flat: Mapping[str, Any]) -> None:
    """Every mesh axis remat has; one it lacks must be 1."""
    for kind in ("ici", "dcn"):
        for axis in _MESH_AXES:
            key = f"{kind}_{axis}_parallelism"
            if key in flat:
                _put(settings, key, flat[key])
        for axis in _FOREIGN_AXES:
            key = f"{kind}_{axis}_parallelism"
            size = _scalar(flat.get(key, 1))
            if size not in (1, None):
                raise ValueError(
                    f"{key}={size}: remat's mesh has no '{axis}' axis, so it would "
                    "analyze these devices on another axis"
                )


def _put_placements(settings: dict[str, object], flat: Mapping[str, Any]) -> None:
    """The per-name placements, which remat takes only under custom (MaxText
    reads them only then, and keeps defaults for them under every policy).

    A name left at `remat` is left out: that is MaxText's default for every
    name but decoder_layer_input, and remat's (docs/policies.md), while remat
    notes each name set that the model's graph does not tag (MaxText's 21
    names cover every block). decoder_layer_input, tagged in every graph, is
    always given."""
    if settings.get("remat_policy") != "custom":
        return
    for key in _PLACEMENT_KEYS:
        if key in flat and (key == "decoder_layer_input" or _scalar(flat[key]) != "remat"):
            _put(settings, key, flat[key])


def _put_pipeline(settings: dict[str, object], flat: Mapping[str, Any]) -> None:
    """Pipeline micro-batches: MaxText's -1 is "the default", which its
    validator resolves to remat's own default only when pipelining; remat
    takes a positive count, so -1 is left to it."""
    count = _scalar(flat.get("num_pipeline_microbatches"))
    if isinstance(count, int) and count > 0:
        settings["num_pipeline_microbatches"] = count
    # MaxText's validator turns pipeline_parallel_layers=-1 into every layer
    # (DeepSeek: every MoE layer). Another count pipelines only some layers,
    # which remat refuses by name, so it is passed for remat to say so.
    layers = _scalar(flat.get("pipeline_parallel_layers"))
    total = _scalar(flat.get("num_decoder_layers", flat.get("base_num_decoder_layers")))
    dense = _scalar(flat.get("first_num_dense_layers")) or 0
    if isinstance(layers, int) and layers != -1 and isinstance(total, int) and \
            layers not in (total, total - dense):
        settings["pipeline_parallel_layers"] = layers
    # A file's mesh and rules: passed, for remat to refuse by name.
    custom = _scalar(flat.get("custom_mesh_and_rule"))
    if isinstance(custom, str) and custom:
        settings["custom_mesh_and_rule"] = custom


# ---- logical axis rules ----------------------------------------------------


def _rules_setting(flat: Mapping[str, Any], config: Any, base_rules: Any) -> str | None:
    """logical_axis_rules in remat's override syntax, or None when the
    config's rules are base.yml's.

    MaxText merges a model's and the user's rules into base.yml's list; remat
    starts from base.yml's (its defaults) and replaces the rules of each name
    it is given. So the names whose rules differ from base.yml's are given,
    and a name base.yml shards and the config lost is given as unsharded. A name
    with several rules (flax falls back along them) is written by its first,
    as remat reads MaxText's YAML. With override_logical_axis_rules the list
    is the rules, whole.
    """
    rules = flat.get("logical_axis_rules")
    if not rules:
        return None
    table = _rule_table(rules)
    if flat.get("override_logical_axis_rules"):
        return _rules_text(table, table.keys(), ())
    if base_rules is None:
        base_rules = _base_yml_rules(config)
    base = _rule_table(base_rules)
    changed = [n for n in table if _comparable(n, table[n]) != _comparable(n, base.get(n))]
    # a lost name whose base rules shard nothing is unsharded either way, and
    # remat holds at most 96 rules
    lost = [n for n in base if n not in table and any(_comparable(n, base[n]))]
    return _rules_text(table, changed, lost) or None


def _rule_table(rules: Any) -> dict[str, list[tuple[str, ...]]]:
    """[[name, axis | [axes]], ...] as name -> its rules' axes, in order."""
    table: dict[str, list[tuple[str, ...]]] = {}
    for rule in rules:
        if not isinstance(rule, (list, tuple)) or len(rule) != 2 or not isinstance(rule[0], str):
            raise ValueError(f"logical_axis_rules: {rule!r} is not [name, axes]")
        name, axes = rule
        axes = (axes,) if isinstance(axes, str) else tuple(axes or ())
        table.setdefault(name, []).append(axes)
    return table


def _comparable(name: str, rules: list[tuple[str, ...]] | None) -> Any:
    """A name's rules as remat sees them: axis sets (the order of a rule's
    axes sizes nothing), stage left out where remat counts it itself."""
    if rules is None:
        return None
    return [frozenset(_rule_axes(name, axes)) for axes in rules]


def _rule_axes(name: str, axes: tuple[str, ...]) -> list[str]:
    """One rule's mesh axes by remat's names; MaxText's other axes are 1."""
    out = []
    for axis in axes:
        axis = _AXIS_ALIASES.get(axis, axis)
        if axis in _RULE_AXES and not (axis == "stage" and name in _STAGE_BUILTIN):
            out.append(axis)
    return out


def _rules_text(table: dict[str, list[tuple[str, ...]]], names: Any, lost: Any) -> str:
    parts = [f"{n}:" + "+".join(_rule_axes(n, table[n][0])) for n in names]
    parts += [f"{n}:" for n in lost]
    return ",".join(parts)


def _base_yml_rules(config: Any) -> Any:
    """base.yml's logical_axis_rules, from the MaxText that built the config
    (its module's directory) or else the importable maxtext package."""
    for path in _base_yml_candidates(config):
        if os.path.isfile(path):
            return _load_rules(path)
    raise ValueError(
        "logical_axis_rules: no MaxText base.yml to compare the config's rules with; "
        "pass base_rules= (base.yml's logical_axis_rules list)"
    )


def _base_yml_candidates(config: Any) -> list[str]:
    dirs = []
    module = sys.modules.get(getattr(type(config), "__module__", ""))
    module_file = getattr(module, "__file__", None)
    if isinstance(module_file, str):
        dirs.append(os.path.dirname(module_file))  # maxtext/configs/pyconfig.py
    for package in ("maxtext", "MaxText"):
        try:
            spec = importlib.util.find_spec(package)
        except (ImportError, ValueError):
            spec = None
        for location in (spec.submodule_search_locations or []) if spec else []:
            dirs.append(location)
    paths = []
    for d in dirs:
        paths += [os.path.join(d, "base.yml"), os.path.join(d, "configs", "base.yml")]
    return paths


@functools.lru_cache(maxsize=4)
def _load_rules(path: str) -> tuple[tuple[str, Any], ...]:
    try:
        import yaml  # type: ignore[import-untyped]  # MaxText's own dependency (under OmegaConf)
    except ImportError:
        raise ValueError(
            f"logical_axis_rules: reading {path} needs PyYAML; pass base_rules= instead"
        ) from None
    with open(path, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    rules = doc.get("logical_axis_rules") if isinstance(doc, dict) else None
    if not isinstance(rules, list):
        raise ValueError(f"{path} holds no logical_axis_rules list")
    return tuple((r[0], tuple(r[1]) if isinstance(r[1], list) else r[1]) for r in rules)
