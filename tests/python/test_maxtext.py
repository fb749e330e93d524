"""Tests of remat.maxtext: MaxText's config object as remat settings.

Three tiers, each skipped with its reason where it cannot run:

* unit tests on small fake configs of every accepted shape (stdlib only);
* CLI tests: the settings, written as JSON, read by ``remat analyze --config``
  (the binary at $REMAT_CLI, default build-new/remat under the repository);
* MaxText tests: real configs from MaxText's ``pyconfig.initialize`` (MaxText
  importable, or its ``src`` directory at $REMAT_MAXTEXT_SRC), whose settings
  must analyze exactly as the same run given as ``key=value`` arguments.
"""

import enum
import importlib.util
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _load_module():
    # by path: the module is stdlib only and must not need the C extension
    spec = importlib.util.spec_from_file_location(
        "remat_maxtext_under_test", REPO / "python" / "remat" / "maxtext.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


mtx = _load_module()

# ---- fakes -------------------------------------------------------------------


class Block(enum.Enum):  # as MaxText's DecoderBlockType
    LLAMA2 = "llama2"


class Where(str, enum.Enum):  # as MaxText's RematLocation
    DEVICE = "device"
    REMAT = "remat"
    OFFLOAD = "offload"


class FakeDtype:
    """Looks like a numpy dtype to the converter (module and name)."""

    __module__ = "numpy"

    def __init__(self, name):
        self.name = name


BASE_RULES = [
    ["activation_embed_and_logits_batch", ["data", "stage", "fsdp", "fsdp_transpose", "expert"]],
    ["activation_embed", ["tensor"]],
    ["embed", ["fsdp", "fsdp_transpose", "context", "expert"]],
    ["embed", ["fsdp", "context", "expert"]],
    ["norm", ["tensor"]],
    ["qkv", []],
    ["diloco", "diloco"],
]


def llama3_8b(**over):
    """MaxText's keys for llama3-8b on v5p-8 (a part of get_keys())."""
    keys = {
        "model_name": "llama3-8b", "decoder_block": Block.LLAMA2, "hardware": "tpu",
        "attention": "autoselected", "remat_policy": "full", "per_device_batch_size": 2,
        "max_target_length": 2048, "base_emb_dim": 4096, "emb_dim": 4096,
        "base_num_query_heads": 32, "num_query_heads": 32, "base_num_kv_heads": 8,
        "num_kv_heads": 8, "base_mlp_dim": 14336, "mlp_dim": 14336, "base_moe_mlp_dim": -1,
        "moe_mlp_dim": -1, "base_num_decoder_layers": 32, "num_decoder_layers": 32,
        "head_dim": 128, "vocab_size": 128256, "dtype": FakeDtype("bfloat16"),
        "weight_dtype": FakeDtype("float32"), "mu_dtype": FakeDtype("float32"),
        "mlp_activations": ["silu", "linear"], "compile_topology": "v5p-8",
        "compile_topology_num_slices": 1, "num_slices": 1, "num_target_devices": 4,
        "ici_fsdp_parallelism": -1, "dcn_data_parallelism": -1, "ici_diloco_parallelism": 1,
        "num_pipeline_microbatches": -1, "global_batch_size_to_train_on": 8,
        "run_name": "r1", "steps": 20, "tokenizer_path": None, "quantization": None,
        "decoder_layer_input": Where.DEVICE, "query_proj": Where.REMAT,
        "mlpwi_0": Where.REMAT, "tensors_on_device": None,
    }
    keys.update(over)
    return keys


class GetKeysConfig:  # pyconfig.HyperParameters at e591f30
    def __init__(self, keys):
        self._keys = keys

    def get_keys(self):
        return self._keys


class LegacyConfig:  # pyconfig_deprecated._HyperParameters: a .keys dict
    def __init__(self, keys):
        self.keys = keys


class PydanticLike:  # types.MaxTextConfig
    def __init__(self, keys):
        self._keys = keys

    def model_dump(self):
        return dict(self._keys)


def convert(keys, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a compile topology warns about nothing
        return mtx.settings_from_maxtext(keys, **kwargs)


# ---- unit tests: shapes and values --------------------------------------------


@pytest.mark.parametrize("shape", [dict, GetKeysConfig, LegacyConfig, PydanticLike])
def test_every_shape_gives_the_same_settings(shape):
    assert convert(shape(llama3_8b())) == convert(llama3_8b())


def test_other_objects_are_refused():
    with pytest.raises(TypeError, match="no MaxText config"):
        mtx.settings_from_maxtext(object())

    class Bad:
        def get_keys(self):
            return ["model_name"]

    with pytest.raises(TypeError, match="not a mapping"):
        mtx.settings_from_maxtext(Bad())


def test_values_are_json_scalars():
    settings = convert(llama3_8b())
    for key, value in settings.items():
        assert type(value) in (str, int, float, bool), key
    assert json.loads(json.dumps(settings)) == settings
    assert settings["decoder_block"] == "llama2"
    assert settings["dtype"] == "bfloat16" and settings["weight_dtype"] == "float32"
    assert settings["mlp_activations"] == "['silu', 'linear']"


def test_derived_and_unmodeled_keys_are_left_out():
    settings = convert(llama3_8b())
    for key in ("global_batch_size_to_train_on", "num_target_devices", "run_name", "steps",
                "tokenizer_path", "tensors_on_device", "emb_dim", "num_slices",
                "ici_diloco_parallelism", "num_pipeline_microbatches", "base_moe_mlp_dim"):
        assert key not in settings, key


def test_unset_values_take_maxtexts_meaning():
    settings = convert(llama3_8b(remat_policy=None, quantization=None, mu_dtype=""))
    assert settings["remat_policy"] == "none"  # decoders.py: no policy, as "none"
    assert settings["quantization"] == ""
    assert "mu_dtype" not in settings  # weight_dtype's, in MaxText and in remat


def test_instruct_names_are_their_base_models():
    assert convert(llama3_8b(model_name="llama3.1-8b-Instruct"))["model_name"] == "llama3.1-8b"


def test_scaled_dims_describe_the_run():
    keys = llama3_8b(model_name="default", emb_dim=8192, num_decoder_layers=64)
    settings = convert(keys)
    assert settings["base_emb_dim"] == 8192 and settings["base_num_decoder_layers"] == 64


def test_placements_only_under_custom():
    assert "query_proj" not in convert(llama3_8b())
    settings = convert(llama3_8b(remat_policy="custom", query_proj=Where.OFFLOAD))
    assert settings["query_proj"] == "offload"
    assert settings["decoder_layer_input"] == "device"
    assert "mlpwi_0" not in settings  # remat, every default but the input's


def test_pipeline_microbatches_only_when_counted():
    assert convert(llama3_8b(num_pipeline_microbatches=8))["num_pipeline_microbatches"] == 8


# ---- unit tests: the slice and the mesh ---------------------------------------


def test_compile_topology_names_the_slice():
    settings = convert(llama3_8b(compile_topology_num_slices=2, num_target_devices=8))
    assert settings["compile_topology"] == "v5p-8"
    assert settings["compile_topology_num_slices"] == 2
    assert "num_devices" not in settings
    # the AOT target wins over the chip this process runs on
    assert convert(llama3_8b(), device_kind="TPU v4")["hardware"] == "tpu"


def test_live_devices_without_a_chip_warn():
    keys = llama3_8b(compile_topology="", num_target_devices=256, num_slices=2)
    with pytest.warns(UserWarning, match="no compile_topology"):
        settings = mtx.settings_from_maxtext(keys)
    assert settings["num_devices"] == 256 and settings["num_slices"] == 2
    assert "compile_topology" not in settings


def test_an_internal_compile_counts_its_devices():
    keys = llama3_8b(compile_topology="internal-name", internal_compile=True,
                     internal_compile_num_devices=64, num_target_devices=64)
    settings = convert(keys, device_kind="TPU7x")
    assert "compile_topology" not in settings
    assert settings["num_devices"] == 64 and settings["hardware"] == "tpu7x"


def test_live_devices_with_their_chip():
    keys = llama3_8b(compile_topology="", num_target_devices=16)
    settings = convert(keys, device_kind="TPU v5 lite")
    assert settings["hardware"] == "v5e" and settings["num_devices"] == 16


@pytest.mark.parametrize("kind,hardware", [
    ("TPU v4", "v4"), ("TPU v5 lite", "v5e"), ("TPU v5e", "v5e"), ("TPU v5", "v5p"),
    ("TPU v5p", "v5p"), ("TPU v6 lite", "v6e"), ("TPU v6e", "v6e"), ("TPU7x", "tpu7x"),
    ("NVIDIA H100 80GB HBM3", "h100"), ("NVIDIA H200", "h200"), ("NVIDIA B200", "b200"),
])
def test_device_kinds(kind, hardware):
    assert mtx.hardware_from_device_kind(kind) == hardware


@pytest.mark.parametrize("kind", ["cpu", "TPU v3", "TPU v4 lite", "TPU v6"])
def test_unknown_device_kinds_are_refused(kind):
    with pytest.raises(ValueError, match="no chip"):
        mtx.hardware_from_device_kind(kind)


@pytest.mark.parametrize(
    "key", ["ici_diloco_parallelism", "dcn_context_autoregressive_parallelism"])
def test_mesh_axes_remat_lacks_are_refused(key):
    with pytest.raises(ValueError, match=key):
        mtx.settings_from_maxtext(llama3_8b(**{key: 2}))


def test_mesh_keys_pass_as_they_are():
    settings = convert(llama3_8b(ici_tensor_parallelism=2, ici_sequence_parallelism=1))
    assert settings["ici_fsdp_parallelism"] == -1 and settings["ici_tensor_parallelism"] == 2
    assert settings["ici_sequence_parallelism"] == 1  # remat refuses another value itself


# ---- unit tests: logical axis rules --------------------------------------------


def rules_of(rules, **over):
    return convert(llama3_8b(logical_axis_rules=rules, **over), base_rules=BASE_RULES).get(
        "logical_axis_rules")


def test_base_rules_are_no_setting():
    assert rules_of(BASE_RULES) is None
    as_tuples = tuple((n, tuple(a) if isinstance(a, list) else a) for n, a in BASE_RULES)
    assert rules_of(as_tuples) is None  # get_keys() holds tuples


def test_pipeline_rewrite_and_stage_are_remats_own():
    # MaxText's validator puts stage first for a pipeline; remat counts the
    # head's stage split itself
    rules = [r if r[0] != "activation_embed_and_logits_batch" else
             [r[0], ["stage", "data", "fsdp", "fsdp_transpose", "expert"]] for r in BASE_RULES]
    assert rules_of(rules) is None
    rules = [["activation_embed_and_logits_batch", ["data", "stage", "fsdp"]]] + BASE_RULES[1:]
    assert rules_of(rules) == "activation_embed_and_logits_batch:data+fsdp"


def test_changed_added_and_lost_rules():
    rules = BASE_RULES[:1] + [["activation_embed", []], ["embed", ["fsdp"]]] + [
        ["qkv", []], ["diloco", "diloco"], ["norm_new", ["model", "diloco"]]]
    # norm lost its sharding (an earlier base_config chain replaced the list)
    assert rules_of(rules) == "activation_embed:,embed:fsdp,norm_new:tensor,norm:"


def test_override_rules_are_the_whole_list():
    rules = [["activation_batch", ["data", "fsdp"]], ["embed", ["fsdp"]], ["embed", ["context"]]]
    settings = convert(llama3_8b(logical_axis_rules=rules, override_logical_axis_rules=True))
    assert settings["override_logical_axis_rules"] is True
    assert settings["logical_axis_rules"] == "activation_batch:data+fsdp,embed:fsdp"


def test_rules_without_a_base_yml_are_refused(monkeypatch):
    monkeypatch.setattr(mtx, "_base_yml_candidates", lambda config: [])
    with pytest.raises(ValueError, match="base_rules"):
        mtx.settings_from_maxtext(llama3_8b(logical_axis_rules=[["embed", ["fsdp"]]]))


def test_malformed_rules_are_refused():
    with pytest.raises(ValueError, match="not \\[name, axes\\]"):
        rules_of([["embed"]])


# ---- the CLI ------------------------------------------------------------------


def _cli_path():
    return Path(os.environ.get("REMAT_CLI", REPO / "build-new" / "remat"))


requires_cli = pytest.mark.skipif(
    not os.access(_cli_path(), os.X_OK), reason=f"no remat CLI at {_cli_path()} (set REMAT_CLI)"
)

COMPARED = ("peak_hbm_bytes", "num_devices", "mesh", "remat_policy", "layers_count")


def remat_cli(*args):
    """remat's exit status, stdout and stderr (retrying a binary being relinked)."""
    for attempt in range(5):
        try:
            p = subprocess.run([str(_cli_path()), *args], capture_output=True, text=True,
                               timeout=60, check=False)
            return p.returncode, p.stdout, p.stderr
        except OSError:  # ETXTBSY or EACCES while another build writes it
            if attempt == 4:
                raise
            time.sleep(1)
    raise AssertionError("unreachable")


def analysis(args):
    rc, out, err = remat_cli("analyze", "--format", "json", *args)
    assert rc == 0, err
    doc = json.loads(out)
    return {k: doc[k] for k in COMPARED}


def analysis_of_settings(settings, tmp_path):
    path = tmp_path / "run.json"
    path.write_text(json.dumps(settings))
    return analysis(["--config", str(path)])


@requires_cli
def test_cli_reads_a_fake_configs_settings(tmp_path):
    keys = llama3_8b(remat_policy="custom", query_proj=Where.DEVICE, mlpwi_0=Where.OFFLOAD)
    got = analysis_of_settings(convert(keys), tmp_path)
    want = analysis(["model_name=llama3-8b", "per_device_batch_size=2", "topology=v5p-8",
                     "remat_policy=custom", "query_proj=device", "mlpwi_0=offload"])
    assert got == want


@requires_cli
def test_every_key_remat_models_is_handled():
    rc, out, err = remat_cli("list", "keys")
    assert rc == 0, err
    remat_keys = {line.split()[0] for line in out.splitlines()[1:] if line.strip()}
    lines = (REPO / "maxtext" / "keys.txt").read_text().splitlines()
    maxtext_keys = {line.strip() for line in lines if line.strip() and not line.startswith("#")}
    handled = (set(mtx._PLAIN_KEYS) | {base for base, _ in mtx._DIMS} | set(mtx._PLACEMENT_KEYS)
               | {f"{k}_{a}_parallelism" for k in ("ici", "dcn") for a in mtx._MESH_AXES}
               | {"num_pipeline_microbatches", "logical_axis_rules", "num_slices"})
    assert sorted((remat_keys & maxtext_keys) - handled) == []
    # and nothing is passed that remat would only list as not modeled
    remat_spellings = remat_keys | {"compile_topology", "compile_topology_num_slices"}
    assert sorted(handled - remat_spellings) == []


# ---- MaxText ----------------------------------------------------------------------


def _maxtext_src():
    src = os.environ.get("REMAT_MAXTEXT_SRC")
    if src and (Path(src) / "src" / "maxtext").is_dir():
        src = str(Path(src) / "src")
    return src


def _maxtext_findable():
    src = _maxtext_src()
    if src and (Path(src) / "maxtext").is_dir():
        return True
    # a regular package: a bare directory named maxtext (this repository has
    # one, maxtext/keys.txt) is a namespace package with no origin
    spec = importlib.util.find_spec("maxtext")
    return spec is not None and spec.origin is not None


requires_maxtext = pytest.mark.skipif(
    not _maxtext_findable(),
    reason="MaxText is not importable (install it or set REMAT_MAXTEXT_SRC to its src directory)",
)


@pytest.fixture(scope="session")
def pyconfig():
    """MaxText's pyconfig, imported on CPU without cloud services."""
    for key, value in (("DECOUPLE_GCLOUD", "TRUE"), ("TPU_SKIP_MDS_QUERY", "1"),
                       ("JAX_PLATFORMS", "cpu")):
        os.environ.setdefault(key, value)
    src = _maxtext_src()
    if src and src not in sys.path:
        sys.path.insert(0, src)
    try:
        from maxtext.configs import pyconfig as module  # pylint: disable=import-outside-toplevel
    except Exception as e:  # a partial install: jax or a dependency missing
        pytest.skip(f"MaxText does not import: {e!r}")
    return module


def maxtext_config(pyconfig, args):
    import maxtext  # pylint: disable=import-outside-toplevel

    base_yml = Path(maxtext.__file__).parent / "configs" / "base.yml"
    return pyconfig.initialize(["train", str(base_yml), *args])


# (MaxText's arguments, the same run as remat's key=value arguments: None when
# they are the same words)
RUNS = {
    "llama3-8b full": (
        "model_name=llama3-8b per_device_batch_size=2 compile_topology=v5p-8 "
        "compile_topology_num_slices=1 remat_policy=full", None),
    "custom placements": (
        "model_name=llama3-8b per_device_batch_size=2 compile_topology=v5p-8 "
        "remat_policy=custom query_proj=device mlpwi_0=offload out_proj=offload", None),
    "fp8": ("model_name=llama3-8b per_device_batch_size=2 compile_topology=v5p-8 "
            "quantization=fp8", None),
    "bf16 weights": ("model_name=llama3-8b per_device_batch_size=2 compile_topology=v6e-8 "
                     "weight_dtype=bfloat16 remat_policy=minimal", None),
    "pipeline": (
        "model_name=llama3-8b per_device_batch_size=4 compile_topology=v5p-16 "
        "ici_pipeline_parallelism=4 num_pipeline_microbatches=8 "
        "pipeline_delay_activation_forwarding=true", None),
    "pipeline fp8": ("model_name=llama3-8b per_device_batch_size=2 compile_topology=v5p-16 "
                     "ici_pipeline_parallelism=2 quantization=fp8", None),
    "mixtral expert parallel": (
        "model_name=mixtral-8x7b per_device_batch_size=1 compile_topology=v5p-64 "
        "ici_expert_parallelism=4", None),
    "deepseek3 custom": (
        "model_name=deepseek3-671b per_device_batch_size=1 compile_topology=v5p-512 "
        "max_target_length=4096 remat_policy=custom decoder_layer_input=offload "
        "out_proj=offload", None),
    "deepseek3 2d-fsdp rules": (
        "model_name=deepseek3-671b-2dfsdp per_device_batch_size=1 compile_topology=v5p-512 "
        "max_target_length=4096 ici_fsdp_transpose_parallelism=4", None),
    "multi-slice tensor accumulation": (
        "model_name=llama3-8b per_device_batch_size=2 compile_topology=v5p-16 "
        "compile_topology_num_slices=2 ici_tensor_parallelism=2 gradient_accumulation_steps=2",
        None),
    "llama2 yml rule": (
        "model_name=llama2-7b per_device_batch_size=2 compile_topology=v5e-16",
        "model_name=llama2-7b per_device_batch_size=2 compile_topology=v5e-16 "
        "logical_axis_rules=norm:fsdp"),
    "user rules": (
        "model_name=llama3-8b per_device_batch_size=2 compile_topology=v5p-16 "
        "ici_tensor_parallelism=2 "
        "logical_axis_rules=[['activation_embed',[]],['activation_norm_length',['tensor']]]",
        "model_name=llama3-8b per_device_batch_size=2 compile_topology=v5p-16 "
        "ici_tensor_parallelism=2 "
        "logical_axis_rules=activation_embed:,activation_norm_length:tensor"),
    "instruct": (
        "model_name=llama3.1-8b-Instruct per_device_batch_size=2 compile_topology=tpu7x-8",
        "model_name=llama3.1-8b per_device_batch_size=2 compile_topology=tpu7x-8"),
    "gemma3 blocks": (
        "model_name=gemma3-12b per_device_batch_size=1 compile_topology=v5p-16", None),
    "gpt3 position table": (
        "model_name=gpt3-6b per_device_batch_size=4 compile_topology=v5e-16", None),
    "tied qwen3": (
        "model_name=qwen3-4b per_device_batch_size=4 compile_topology=v5e-8", None),
    "olmo3 blocks": (
        "model_name=olmo3-7b per_device_batch_size=4 compile_topology=v6e-8", None),
}


@requires_maxtext
@requires_cli
@pytest.mark.parametrize("name", list(RUNS))
def test_maxtext_config_analyzes_as_its_command_line(pyconfig, tmp_path, name):
    maxtext_args, remat_args = RUNS[name]
    config = maxtext_config(pyconfig, maxtext_args.split())
    settings = convert(config)
    got = analysis_of_settings(settings, tmp_path)
    assert got == analysis((remat_args or maxtext_args).split())


@requires_maxtext
@requires_cli
def test_maxtext_scaled_model(pyconfig, tmp_path):
    config = maxtext_config(pyconfig, "model_name=default global_parameter_scale=8 "
                            "per_device_batch_size=2 compile_topology=v5p-16".split())
    settings = convert(config)
    assert settings["base_emb_dim"] == config.emb_dim != config.base_emb_dim
    want = analysis([
        "model_name=default", "per_device_batch_size=2", "topology=v5p-16",
        f"base_emb_dim={config.emb_dim}", f"base_num_query_heads={config.num_query_heads}",
        f"base_num_kv_heads={config.num_kv_heads}", f"base_mlp_dim={config.mlp_dim}",
        f"base_num_decoder_layers={config.num_decoder_layers}"])
    assert analysis_of_settings(settings, tmp_path) == want


@requires_maxtext
@requires_cli
def test_maxtext_live_devices(pyconfig, tmp_path):
    # no compile_topology: MaxText counts this process's devices (CPU here)
    config = maxtext_config(pyconfig, "model_name=llama3-8b per_device_batch_size=2".split())
    settings = convert(config, device_kind="TPU v5 lite")
    assert settings["num_devices"] == config.num_target_devices
    want = analysis(["model_name=llama3-8b", "per_device_batch_size=2", "hardware=v5e",
                     f"num_devices={config.num_target_devices}"])
    assert analysis_of_settings(settings, tmp_path) == want


@requires_maxtext
@requires_cli
def test_maxtext_model_remat_lacks_is_remats_error(pyconfig, tmp_path):
    config = maxtext_config(pyconfig, "model_name=deepseek4-284b per_device_batch_size=1 "
                            "compile_topology=v5p-64".split())
    path = tmp_path / "run.json"
    path.write_text(json.dumps(convert(config)))
    rc, _, err = remat_cli("analyze", "--config", str(path))
    assert rc == 2 and "deepseek4-284b" in err and "needs" in err


@requires_maxtext
def test_maxtext_diloco_is_refused(pyconfig):
    config = maxtext_config(pyconfig, "model_name=llama3-8b per_device_batch_size=2 "
                            "compile_topology=v5p-8 ici_diloco_parallelism=2".split())
    with pytest.raises(ValueError, match="ici_diloco_parallelism=2"):
        mtx.settings_from_maxtext(config)
