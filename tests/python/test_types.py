"""Tests of the typed results (python/remat/_types.py) on the CLI's own documents.

Every document the tests parse is one the CLI printed: for each built-in model
an analysis and a timeline, and each schema's variants (table kinds, a check
that passes and one that does not, solve with and without a frontier, found
and not found, timelines folded, unfolded and of a pipeline stage). Each must
survive parse then to_dict unchanged, key order included.

The CLI is $REMAT_CLI, else build-new/remat (a relative path is taken from the
repository root); tests that need it are skipped when it is missing. The
to_pandas tests are skipped when pandas is not installed.
"""

import functools
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]


def _load_types() -> ModuleType:
    # From its file rather than as remat._types: the package's __init__ loads
    # the C extension, which this stdlib-only module does not need.
    spec = importlib.util.spec_from_file_location(
        "remat_types_under_test", REPO / "python" / "remat" / "_types.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look type hints up through it
    spec.loader.exec_module(module)
    return module


T = _load_types()

CLI = REPO / os.environ.get("REMAT_CLI", "build-new/remat")
HAVE_CLI = CLI.is_file() and os.access(CLI, os.X_OK)
NO_CLI = (
    f"no remat CLI at {CLI}: build it (cmake --build build-new --target remat) or set REMAT_CLI"
)


# ---- running the CLI --------------------------------------------------------


@functools.cache
def _run(args: tuple[str, ...]) -> tuple[int, str, str]:
    p = subprocess.run([str(CLI), *args], capture_output=True, text=True, timeout=120, cwd=REPO)
    return p.returncode, p.stdout, p.stderr


def remat_json(*args: str, exit_code: int = 0) -> Any:
    """The JSON the CLI prints for ``args``, freshly decoded (tests may
    change it), after checking the exit status."""
    if not HAVE_CLI:
        pytest.skip(NO_CLI)
    rc, out, err = _run(args)
    assert rc == exit_code, f"remat {' '.join(args)}: exit {rc}, expected {exit_code}\n{err}"
    return json.loads(out)


def builtin_models() -> list[str]:
    """The models `remat list models` lists as analyzable (the section before
    'models remat cannot analyze yet')."""
    rc, out, err = _run(("list", "models"))
    assert rc == 0, err
    models = []
    for line in out.splitlines()[1:]:
        if not line.startswith("  "):
            break  # the next section's heading
        models.append(line.split()[0])
    return models


MODELS = builtin_models() if HAVE_CLI else []


def round_trip(doc: dict[str, Any]) -> Any:
    """Parses ``doc``, checks its class and that to_dict gives it back
    exactly (json.dumps of both: the same keys, order and number types)."""
    obj = T.parse(doc)
    assert type(obj) is T.SCHEMAS[doc["schema"]]
    back = T.to_dict(obj)
    assert back == doc
    assert json.dumps(back) == json.dumps(doc)
    return obj


# Small, fast configs: every figure per device of a real slice.
L8 = ("model_name=llama3-8b", "topology=v6e-8", "per_device_batch_size=2")
PIPE = (
    "model_name=llama3-8b",
    "topology=v6e-8",
    "per_device_batch_size=1",
    "ici_pipeline_parallelism=2",
    "ici_fsdp_parallelism=4",
)
OVER = ("model_name=llama3-8b", "per_device_batch_size=1")  # one device: does not fit
SOLVE = ("model_name=llama3-70b", "topology=tpu7x-128", "per_device_batch_size=6")


# ---- every built-in model ---------------------------------------------------


def test_model_list_is_read():
    if not HAVE_CLI:
        pytest.skip(NO_CLI)
    assert len(MODELS) >= 40 and "llama3-8b" in MODELS and "mixtral-8x7b" in MODELS


# Models whose smallest batch is 2 (use_batch_split_schedule).
EVEN_BATCH = {"deepseek3-671b-batchsplit": 2}


@pytest.mark.parametrize(
    "model", MODELS or [pytest.param("none", marks=pytest.mark.skip(reason=NO_CLI))]
)
def test_every_model_round_trips(model: str) -> None:
    # the batch-split schedule runs the batch in two halves: MaxText needs it even
    batch = f"per_device_batch_size={EVEN_BATCH.get(model, 1)}"
    # the default slice (one device), where most models need fixes...
    r = round_trip(remat_json("analyze", "--format", "json", f"model_name={model}", batch))
    assert r.model == model and len(r.layers) == r.layers_count
    assert (r.fixes is None) == (r.fits_with_margin and r.offload.host_fits)
    # ...and a sharded slice under another policy, with its timeline
    mesh = (
        f"model_name={model}",
        "topology=v5p-8",
        batch,
        "remat_policy=minimal",
    )
    r = round_trip(remat_json("analyze", "--format", "json", *mesh))
    assert r.num_devices > 1
    t = round_trip(remat_json("timeline", "--format", "json", *mesh))
    assert t.peak_hbm_bytes == r.stages[t.stage].peak_hbm_bytes


# ---- each schema's variants ------------------------------------------------

ANALYZE_CASES = {
    "pipeline": PIPE,
    "moe_expert_parallel": (
        "model_name=mixtral-8x7b",
        "topology=v6e-256",
        "ici_expert_parallelism=4",
        "sparse_matmul=false",
        "capacity_factor=1.25",
        "allow_split_physical_axes=true",  # expert 4 is no whole axis of the 16x16 grid
    ),
    "gpu_assumed_budget": (
        "hardware=h100",
        "model_name=llama3-8b",
        "num_devices=8",
        "per_device_batch_size=1",
    ),
    "offload": (*L8, "remat_policy=minimal_offloaded"),
    "views": (
        "model_name=llama3-8b",
        "topology=v6e-8",
        "per_device_batch_size=1",
        "attention=dot_product",
    ),
    "param_host_offload": (
        "model_name=llama3-8b",
        "topology=tpu7x-8",
        "per_device_batch_size=2",
        "parameter_memory_host_offload=true",
    ),
    "unrolled": (
        "model_name=llama2-7b",
        "topology=v5e-16",
        "scan_layers=false",
        "base_num_decoder_layers=8",
        "per_device_batch_size=16",
    ),
    "unit_held": (
        "model_name=gemma3-12b",
        "per_device_batch_size=1",
        "num_vocab_tiling=16",
        "ici_fsdp_parallelism=1",
        "ici_fsdp_transpose_parallelism=-1",
        "remat_policy=custom",
        "decoder_layer_input=device",
        "query_proj=remat",
        "key_proj=remat",
        "value_proj=remat",
        "max_target_length=32768",
        "attention=flash",
        "dcn_data_parallelism=4",
        "sa_block_kv=1024",
        "topology=v6e-256",
        "num_slices=4",
    ),
    "default_run": (),
    "default_run_over": ("remat_policy=minimal",),
}


@pytest.mark.parametrize("case", ANALYZE_CASES)
def test_analyze_variants(case: str) -> None:
    r = round_trip(remat_json("analyze", "--format", "json", *ANALYZE_CASES[case]))
    assert isinstance(r, T.AnalysisResult)
    if case == "pipeline":
        assert len(r.stages) == 2 and r.pipeline_microbatches > 1
    if case == "gpu_assumed_budget":
        assert isinstance(r.budget_assumption, str)
    if case == "views":
        assert any(t.view_of is not None for t in r.tensors)
    if case == "unit_held":
        # the one config known to hold its blocks over the budget: an integer
        # here, null elsewhere
        assert type(r.unit_held_peak_bytes) is int, "this run no longer covers the integer"
    if case == "unrolled":
        # unrolled on a TPU: the bound with every layer's re-run held, and
        # the layers scanned as a fix
        assert type(r.unrolled_held_peak_bytes) is int and r.unrolled_held_peak_bytes > r.peak_hbm_bytes
        assert isinstance(r.fixes.scan_layers, T.ScanFix) and r.fixes.scan_layers.found
        assert r.fixes.scan_layers.settings == "scan_layers=true"
    if case == "default_run":
        assert r.default_run and r.fixes is None


def test_analyze_types_are_exact():
    r = T.parse(remat_json("analyze", "--format", "json", *OVER))
    assert type(r.peak_hbm_bytes) is int and type(r.breakdown.params) is int
    assert type(r.safety_margin) is float and type(r.offload.link_bytes_per_second) is float
    assert type(r.fits) is bool and r.unit_held_peak_bytes is None
    assert r.unrolled_held_peak_bytes is None and r.fixes.scan_layers is None
    assert r.tensors == r.profiles[0].tensors and type(r.tensors[0].shape[0]) is int
    # fixes: present (the step does not fit), each part typed; absent figures stay absent
    assert isinstance(r.fixes, T.Fixes) and isinstance(r.fixes.smallest_slice, T.SmallestSliceFix)
    assert all(type(p.per_device_batch_size) is float for p in r.fixes.largest_batch.per_policy)
    for row in T.to_dict(r)["fixes"]["largest_batch"]["per_policy"]:
        assert ("peak_hbm_bytes" in row) == (row["per_device_batch_size"] > 0)


@pytest.mark.parametrize("kind", ["layers", "tensors", "names", "stages", "all", None])
def test_table_kinds(kind: str | None) -> None:
    args = ("--kind", kind) if kind else ()
    t = round_trip(remat_json("table", "--format", "json", *args, *PIPE))
    expected = ("layers", "tensors", "names", "stages") if kind in ("all", None) else (kind,)
    assert t.kinds == expected
    doc = T.to_dict(t)
    # the kinds not asked for are absent, not null
    assert set(doc) == {"schema", "remat_policy"} | {
        "profiles" if k == "tensors" else k for k in expected
    }


@pytest.mark.parametrize(
    "args",
    [
        L8,
        (
            "--policies",
            "full,minimal_offloaded,save_qkv_proj",
            *SOLVE[:2],
            "per_device_batch_size=4",
        ),
        PIPE,
        OVER,
    ],
    ids=["presets", "policies", "pipeline", "nothing_fits"],
)
def test_compare(args: tuple[str, ...]) -> None:
    c = round_trip(remat_json("compare", "--format", "json", *args))
    assert [r.rank for r in c.results] == list(range(1, len(c.results) + 1))
    assert all(type(r.pass_) is bool and isinstance(r, T.RankedResult) for r in c.results)
    assert all("pass" in row and "pass_" not in row for row in T.to_dict(c)["results"])


def test_check_passing_has_no_fixes():
    c = round_trip(
        remat_json(
            "check",
            "--format",
            "json",
            "model_name=llama3-8b",
            "topology=v6e-8",
            "per_device_batch_size=1",
        )
    )
    assert c.pass_ and c.verdict == "ok" and c.fixes is None
    assert "fixes" not in T.to_dict(c)


@pytest.mark.parametrize(
    "args",
    [
        OVER,
        (*SOLVE[:2], "per_device_batch_size=12", "remat_policy=save_qkv_proj"),
        ("hardware=h100", "model_name=llama3-70b", "num_devices=8", "per_device_batch_size=4"),
    ],
    ids=["oom_one_device", "risk", "gpu_oom"],
)
def test_check_failing_exits_1_with_fixes(args: tuple[str, ...]) -> None:
    c = round_trip(remat_json("check", "--format", "json", *args, exit_code=1))
    assert not c.pass_ and isinstance(c.fixes, T.Fixes)
    p = c.fixes.placement
    assert (p.placement is not None) == p.found == (p.peak_hbm_bytes is not None)


def test_solve_found():
    s = round_trip(remat_json("solve", "--format", "json", *SOLVE))
    assert s.found and isinstance(s.result, T.ResultSummary) and s.result.remat_policy == "solved"
    assert list(s.placement) == s.names and s.frontier is None
    assert "frontier" not in T.to_dict(s)


@pytest.mark.parametrize(
    "flags", [("--frontier",), ("--exhaustive", "--frontier")], ids=["frontier", "exhaustive"]
)
def test_solve_frontier(flags: tuple[str, ...]) -> None:
    s = round_trip(
        remat_json(
            "solve",
            "--format",
            "json",
            *flags,
            "model_name=gemma2-2b",
            "topology=v5e-8",
            "per_device_batch_size=4",
        )
    )
    assert (
        s.found
        and s.frontier
        and s.presets is not None
        and s.faster_points_that_do_not_pass is not None
    )
    if "--exhaustive" in flags:
        assert s.enumerated


def test_solve_frontier_presets():
    s = round_trip(remat_json("solve", "--format", "json", "--frontier", *SOLVE))
    for p in s.presets:  # every dominated_by_passing is written, null dominated_by or not
        assert type(p.dominated_by_passing) is bool
        assert p.dominated_by is None or 0 <= p.dominated_by < len(s.frontier)


@pytest.mark.parametrize("frontier", [False, True])
def test_solve_not_found_exits_1(frontier: bool) -> None:
    flags = ("--frontier",) if frontier else ()
    s = round_trip(remat_json("solve", "--format", "json", *flags, *OVER, exit_code=1))
    assert not s.found and s.placement is None and s.result is None and s.explain is None
    assert (s.frontier is not None) == frontier
    assert not {"placement", "maxtext_overrides", "result", "explain"} & set(T.to_dict(s))


@pytest.mark.parametrize(
    "args",
    [
        L8,
        ("--unfold", *L8),
        PIPE,
        ("--unfold", "--stage", "0", *PIPE),
        (*L8, "remat_policy=minimal_offloaded"),
    ],
    ids=["folded", "unfolded", "pipeline_worst", "pipeline_stage0_unfolded", "offload"],
)
def test_timeline(args: tuple[str, ...]) -> None:
    t = round_trip(remat_json("timeline", "--format", "json", *args))
    assert t.folded == ("--unfold" not in args)
    assert t.events[t.peak_event].live_bytes == t.peak_hbm_bytes
    assert all(type(e.bytes) is T.Breakdown for e in t.events)
    if "--stage" in args:
        assert t.stage == 0 and t.stages == 2


# ---- strictness -------------------------------------------------------------


def schema_error(doc: Any) -> str:
    with pytest.raises(T.SchemaError) as info:
        T.parse(doc)
    assert isinstance(info.value, ValueError)
    return str(info.value)


@pytest.fixture
def analysis() -> Any:
    return remat_json("analyze", "--format", "json", *OVER)


def test_unknown_key(analysis):
    analysis["stages"][0]["breakdown"]["bogus"] = 1
    assert schema_error(analysis) == "$.stages[0].breakdown.bogus: unknown key"


def test_missing_key(analysis):
    del analysis["stages"][0]["breakdown"]["params"]
    assert schema_error(analysis) == "$.stages[0].breakdown.params: missing"


def test_wrong_types(analysis):
    cases = [
        (
            ("layers", 3, "forward_flops"),
            "12",
            "$.layers[3].forward_flops: expected integer, got string",
        ),
        (("peak_hbm_bytes",), 1.0, "$.peak_hbm_bytes: expected integer, got real"),
        (("num_devices",), True, "$.num_devices: expected integer, got boolean"),
        (("tensors", 0, "shape", 1), 2.5, "$.tensors[0].shape[1]: expected integer, got real"),
        (("peak_at", "step"), None, "$.peak_at.step: expected string, got null"),
        (("fits",), 0, "$.fits: expected boolean, got integer"),
        (("notes",), {}, "$.notes: expected array, got object"),
        (("static",), [], "$.static: expected object, got array"),
        (
            ("fixes", "largest_batch", "per_policy", 0, "per_device_batch_size"),
            "1",
            "$.fixes.largest_batch.per_policy[0].per_device_batch_size: expected real, got string",
        ),
    ]
    for path, value, message in cases:
        doc = json.loads(json.dumps(analysis))
        target = doc
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value
        assert schema_error(doc) == message


def test_int_accepted_as_real(analysis):
    analysis["mfu"] = 1
    analysis["offload"]["seconds"] = 0
    r = T.parse(analysis)
    assert type(r.mfu) is float and r.mfu == 1.0 and type(r.offload.seconds) is float


def test_absent_is_not_null(analysis):
    analysis["fixes"]["placement"]["placement"] = None  # written only when found
    assert schema_error(analysis).startswith("$.fixes.placement.placement: null")
    del analysis["fixes"]
    r = T.parse(analysis)  # absent is fine...
    assert r.fixes is None and "fixes" not in T.to_dict(r)
    analysis["fixes"] = None  # ...null is not
    assert schema_error(analysis).startswith("$.fixes: null")


def test_nested_schema_and_maps():
    c = remat_json("compare", "--format", "json", *L8)
    c["results"][1]["schema"] = "remat-result/2"
    assert schema_error(c) == "$.results[1].schema: expected 'remat-result/1', got 'remat-result/2'"
    c["results"][1]["schema"] = "remat-result/1"
    c["results"][1]["pass_"] = True  # the attribute's name is not a JSON key
    assert schema_error(c) == "$.results[1].pass_: unknown key"
    s = remat_json("solve", "--format", "json", "--frontier", *SOLVE)
    s["frontier"][2]["placement"]["query_proj"] = 3
    assert schema_error(s) == "$.frontier[2].placement.query_proj: expected string, got integer"


# A remat-check/1 document (the passing case of docs/json-output.md's fields),
# for the tests that need no CLI.
CHECK_OK = {
    "schema": "remat-check/1",
    "verdict": "ok",
    "pass": True,
    "fits": True,
    "fits_with_margin": True,
    "peak_hbm_bytes": 20424846540,
    "xla_expected_peak_bytes": 20424846540,  # under 95% of the limit: the step itself
    "unrolled_held_peak_bytes": None,
    "budget_bytes": 33285996544,
    "usable_bytes": 31621696716,
    "host_fits": True,
    "peak_at": {"stage": 0, "step": "forward", "where": "head_post", "layer": None, "op": "logits"},
    "budget_assumption": None,
    "notes": [],
}


def test_check_without_cli():
    c = round_trip(json.loads(json.dumps(CHECK_OK)))
    assert c.pass_ is True and c.peak_at.layer is None and c.fixes is None
    assert T.to_dict(c)["peak_at"]["layer"] is None  # null, always written


def test_top_level_errors():
    assert schema_error([]) == "$: expected object, got array"
    assert schema_error({}) == "$.schema: missing"
    assert schema_error({"schema": "remat-nope/1"}).startswith(
        "$.schema: unknown schema 'remat-nope/1'"
    )
    doc = dict(CHECK_OK, extra=1)
    assert schema_error(doc) == "$.extra: unknown key"
    doc = dict(CHECK_OK)
    del doc["pass"]
    assert schema_error(doc) == "$.pass: missing"
    with pytest.raises(TypeError):
        T.to_dict(CHECK_OK)


def test_objects_are_frozen_and_built_by_name():
    p = T.PeakAt(stage=0, step="forward", where="head_pre", layer=None, op="embed")
    assert T.to_dict(p) == {
        "stage": 0,
        "step": "forward",
        "where": "head_pre",
        "layer": None,
        "op": "embed",
    }
    with pytest.raises(AttributeError):  # dataclasses.FrozenInstanceError
        p.stage = 1  # type: ignore[misc]
    assert T.from_dict(T.PeakAt, T.to_dict(p)) == p
    with pytest.raises(T.SchemaError, match=r"^\$\.layer: expected integer, got string$"):
        T.from_dict(T.PeakAt, dict(T.to_dict(p), layer="0"))


def test_parse_is_fast():
    doc = remat_json("analyze", "--format", "json", *OVER)
    assert len(json.dumps(doc, indent=2)) > 40_000  # as the CLI prints it: about 50 KB
    best = float("inf")
    for _ in range(10):
        start = time.perf_counter()
        T.parse(doc)
        best = min(best, time.perf_counter() - start)
    assert best < 0.005, f"parse took {best * 1e3:.2f} ms"


# ---- DataFrames -------------------------------------------------------------


@pytest.fixture
def pd() -> Any:
    return pytest.importorskip("pandas")


def test_pandas_missing(monkeypatch):
    table = T.Table(schema="remat-table/1", remat_policy="full", names=[T.NameRow("x", 1, 0, 0)])
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now fails
    with pytest.raises(ImportError, match="pip install pandas") as info:
        table.to_pandas()
    assert "\n" not in str(info.value)


def test_pandas_table(pd):
    t = T.parse(remat_json("table", "--format", "json", *PIPE))
    with pytest.raises(ValueError, match="name one"):
        t.to_pandas()
    layers = t.to_pandas("layers")
    assert len(layers) == len(t.layers) and layers["forward_flops"].dtype.kind == "i"
    stages = t.to_pandas("stages")
    assert len(stages) == 2 and {"breakdown.params", "peak_at.step", "peak_at.layer"} <= set(
        stages.columns
    )
    tensors = t.to_pandas("tensors")
    assert len(tensors) == sum(len(p.tensors) for p in t.profiles)
    assert list(tensors.columns[:3]) == ["profile", "kind", "name"]
    names = T.parse(remat_json("table", "--format", "json", "--kind", "names", *L8))
    assert list(names.to_pandas()["name"]) == [n.name for n in names.names]
    with pytest.raises(ValueError):
        names.to_pandas("layers")


def test_pandas_analysis(pd):
    r = T.parse(remat_json("analyze", "--format", "json", *PIPE))
    assert len(r.to_pandas()) == r.layers_count
    assert r.to_pandas("names")["saved_bytes"].sum() == sum(n.saved_bytes for n in r.names)
    assert r.to_pandas("stages")["breakdown.params"].tolist() == [
        s.breakdown.params for s in r.stages
    ]
    assert len(r.to_pandas("tensors")) == sum(len(p.tensors) for p in r.profiles)
    with pytest.raises(ValueError):
        r.to_pandas("bogus")


def test_pandas_comparison(pd):
    c = T.parse(remat_json("compare", "--format", "json", *L8))
    df = c.to_pandas()
    assert df["rank"].tolist() == list(range(1, len(c.results) + 1))
    assert {"remat_policy", "pass", "breakdown.params", "offload.host_fits", "mesh.fsdp"} <= set(
        df.columns
    )


def test_pandas_solution(pd):
    s = T.parse(remat_json("solve", "--format", "json", "--frontier", *SOLVE))
    frontier = s.to_pandas()
    assert len(frontier) == len(s.frontier) and "placement.query_proj" in frontier.columns
    assert s.to_pandas("presets")["remat_policy"].tolist() == [p.remat_policy for p in s.presets]
    assert len(s.to_pandas("largest_batch")) == len(s.largest_batch)
    explain = s.to_pandas("explain")
    assert len(explain) == sum(len(e.alternatives) for e in s.explain)
    assert {"name", "placement", "alternative.placement", "alternative.reason"} <= set(
        explain.columns
    )
    plain = T.parse(remat_json("solve", "--format", "json", *SOLVE))
    with pytest.raises(ValueError, match="--frontier"):
        plain.to_pandas()


def test_pandas_timeline(pd):
    t = T.parse(remat_json("timeline", "--format", "json", *L8, "remat_policy=minimal_offloaded"))
    events = t.to_pandas()
    assert len(events) == len(t.events) and events["bytes.params"].dtype.kind == "i"
    assert int(events["live_bytes"].max()) == t.peak_hbm_bytes
    assert len(t.to_pandas("transfers")) == len(t.transfers) > 0
    # data parallelism alone and nothing offloaded: no transfer, yet the
    # empty frame has its columns
    quiet = T.parse(
        remat_json(
            "timeline", "--format", "json", *L8, "ici_fsdp_parallelism=1", "ici_data_parallelism=-1"
        )
    )
    assert quiet.transfers == []
    assert list(quiet.to_pandas("transfers").columns) == [
        "kind",
        "layer",
        "phase",
        "start_seconds",
        "end_seconds",
        "bytes",
    ]
