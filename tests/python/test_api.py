"""Tests of the package's commands (python/remat/_api.py) against the CLI.

The package runs the engine in process; the CLI is the same engine run as a
program. Every document the package returns must be the CLI's for the same
run, byte for byte once decoded: an analysis of every built-in model, and
each other command. Then the inputs (keyword arguments, dicts, paths,
launch lines), the exceptions with their parts, the sweep against single
analyses, the GIL released during a sweep, the notebook's HTML and the
DataFrames.

Needs the package importable (pip install .) and the CLI: $REMAT_CLI, else
build-new/remat under the repository. With REMAT_REQUIRE_PACKAGE=1 (CI) a
package that does not import fails instead of skipping.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
CLI = REPO / os.environ.get("REMAT_CLI", "build-new/remat")

try:
    import remat
except ImportError as e:  # the extension is not built here
    if os.environ.get("REMAT_REQUIRE_PACKAGE") == "1":
        raise
    pytest.skip(f"the remat package does not import ({e}): pip install .", allow_module_level=True)

if not os.access(CLI, os.X_OK):
    pytest.skip(f"no remat CLI at {CLI} (set REMAT_CLI)", allow_module_level=True)

SLICE = {"topology": "v5p-64"}


@functools.cache
def cli(*args: str) -> tuple[int, str, str]:
    p = subprocess.run([str(CLI), *args], capture_output=True, text=True, timeout=300, cwd=REPO)
    return p.returncode, p.stdout, p.stderr


def cli_json(*args: str) -> Any:
    rc, out, err = cli(*args, "--format", "json")
    assert rc in (0, 1), err
    return json.loads(out)


def words(settings: dict[str, Any]) -> list[str]:
    return [f"{k}={v}" for k, v in settings.items()]


def analyzable_models() -> list[str]:
    rc, out, err = cli("list", "models")
    assert rc == 0, err
    models = []
    for line in out.splitlines()[1:]:
        if not line.startswith("  "):
            break  # the section of models remat cannot analyze yet
        models.append(line.split()[0])
    assert len(models) >= 40
    return models


# ---- the documents are the CLI's -------------------------------------------------


@pytest.mark.parametrize("model", analyzable_models())
def test_analyze_round_trip_every_model(model: str) -> None:
    settings = {"model_name": model, **SLICE, "per_device_batch_size": 1}
    rc, out, err = cli("analyze", *words(settings), "--format", "json")
    a = None
    try:
        a = remat.analyze(**settings)
    except remat.RematError as e:
        # bad input for the CLI too, with the same line
        assert rc == 2 and err.strip().endswith(e.message), (err, e.message)
        return
    assert rc == 0, err
    doc = json.loads(out)
    assert a.to_dict() == doc
    assert list(a.to_dict()) == list(doc)  # the order too
    for name in remat.Analysis._FAST:
        if name in doc:
            assert getattr(a, name) == doc[name], name
    assert a.passes == (doc["fits_with_margin"] and doc["offload"]["host_fits"])


@pytest.mark.parametrize("command,options,kwargs", [
    ("check", [], {}),
    ("compare", ["--policies", "full,minimal,save_qkv_proj"],
     {"policies": ["full", "minimal", "save_qkv_proj"]}),
    ("solve", [], {}),
    ("solve", ["--frontier"], {"frontier": True}),
    ("timeline", [], {}),
    ("timeline", ["--unfold"], {"unfold": True}),
    ("table", [], {}),
    ("table", ["--kind", "names"], {"kind": "names"}),
])
@pytest.mark.parametrize("batch", [2, 12])  # passes, then does not
def test_commands_match_the_cli(command: str, options: list[str], kwargs: dict[str, Any],
                                batch: int) -> None:
    settings = {"model_name": "llama3-8b", "topology": "v6e-8", "per_device_batch_size": batch}
    doc = getattr(remat, command)(**settings, **kwargs)
    assert remat.to_dict(doc) == cli_json(command, *words(settings), *options)


def test_check_gate_fields() -> None:
    ok = remat.check(model_name="llama3-8b", topology="v6e-8", per_device_batch_size=2)
    bad = remat.check(model_name="llama3-8b", topology="v6e-8", per_device_batch_size=12)
    assert ok.passes and ok.pass_ and ok.verdict == "ok"
    assert not bad.passes and bad.verdict == "oom" and bad.fixes is not None


def test_report_and_chart_are_the_clis() -> None:
    settings = {"model_name": "llama3-8b", "topology": "v6e-8"}
    assert remat.chart(**settings, kind="layers") == cli("chart", "--kind", "layers", "-o", "-",
                                                         *words(settings))[1]
    assert remat.report(**settings) == cli("report", "-o", "-", *words(settings))[1]


# ---- how a run is given ----------------------------------------------------------


def test_every_way_of_giving_a_run_is_the_same_run(tmp_path: Path) -> None:
    settings = {"model_name": "llama3-8b", "topology": "v5p-8", "per_device_batch_size": 3}
    yml = tmp_path / "run.yml"
    yml.write_text("".join(f"{k}: {v}\n" for k, v in settings.items()))
    js = tmp_path / "run.json"
    js.write_text(json.dumps(settings))
    peaks = {
        "kwargs": remat.analyze(**settings).peak_hbm_bytes,
        "dict": remat.analyze(settings).peak_hbm_bytes,
        "yaml": remat.analyze(str(yml)).peak_hbm_bytes,
        "json path": remat.analyze(js).peak_hbm_bytes,
        "words": remat.analyze(words(settings)).peak_hbm_bytes,
        "launch line": remat.analyze(
            "XLA_FLAGS=--xla_dump_to=/tmp python3 -m MaxText.train MaxText/configs/base.yml "
            + " ".join(words(settings)) + " run_name=r steps=5").peak_hbm_bytes,
    }
    assert len(set(peaks.values())) == 1, peaks


def test_keyword_arguments_win_over_the_dict() -> None:
    a = remat.analyze({"model_name": "llama3-8b", "per_device_batch_size": 8},
                      topology="v6e-8", per_device_batch_size=1)
    b = remat.analyze(model_name="llama3-8b", topology="v6e-8", per_device_batch_size=1)
    assert a.peak_hbm_bytes == b.peak_hbm_bytes


def test_dict_values_json_takes_and_bools() -> None:
    a = remat.analyze({"model_name": "llama3-8b", "scan_layers": False}, topology="v6e-8")
    b = remat.analyze(model_name="llama3-8b", topology="v6e-8", scan_layers=False)
    c = remat.analyze(model_name="llama3-8b", topology="v6e-8", scan_layers="false")
    assert a.peak_hbm_bytes == b.peak_hbm_bytes == c.peak_hbm_bytes


# ---- errors ----------------------------------------------------------------------


def test_unknown_key_names_the_key() -> None:
    with pytest.raises(remat.RematError) as e:
        remat.analyze(model_name="llama3-8b", per_device_bach_size=2)
    err = e.value
    assert err.status == "config" and err.key == "per_device_bach_size"
    assert err.source == "<command line>" and err.exit_code == 2
    assert "did you mean 'per_device_batch_size'" in err.message
    rc, _out, cli_err = cli("analyze", "model_name=llama3-8b", "per_device_bach_size=2")
    assert rc == 2 and cli_err.strip() == "remat: " + err.message


def test_bad_value_in_a_dict_names_the_dict() -> None:
    with pytest.raises(remat.RematError) as e:
        remat.analyze({"model_name": "llama3-8b", "per_device_batch_size": "many"})
    assert e.value.source == "<settings dict>" and e.value.key == "per_device_batch_size"


def test_yaml_syntax_error_has_its_place(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yml"
    bad.write_text("model_name: llama3-8b\nper_device_batch_size: [1,\n")
    with pytest.raises(remat.RematError) as e:
        remat.analyze(str(bad))
    assert str(bad) in e.value.message and e.value.status in ("syntax", "config")


def test_missing_file_is_an_io_error(tmp_path: Path) -> None:
    with pytest.raises(remat.RematError) as e:
        remat.analyze(str(tmp_path / "nope.yml"))
    assert e.value.status == "io" and e.value.source == str(tmp_path / "nope.yml")


def test_usage_errors() -> None:
    with pytest.raises(remat.RematError) as e:
        remat.table(model_name="llama3-8b", kind="bogus")
    assert e.value.status == "usage" and "bogus" in e.value.message
    with pytest.raises(remat.RematError) as e:
        remat.analyze({"model_name": "llama3-8b"}, "x.yml")
    assert e.value.status == "usage" and "one config file" in e.value.message


def test_type_errors_before_the_engine() -> None:
    with pytest.raises(TypeError, match="logical_axis_rules"):
        remat.analyze(logical_axis_rules=[["norm", "fsdp"]])
    with pytest.raises(TypeError):
        remat.analyze(3.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="unclosed|quotation"):
        remat.analyze("model_name='llama3-8b")


def test_a_mesh_that_does_not_divide_says_the_nearest() -> None:
    with pytest.raises(remat.RematError) as e:
        remat.analyze(model_name="llama3-8b", topology="v5p-64", ici_tensor_parallelism=32)
    rc, _out, err = cli("analyze", "model_name=llama3-8b", "topology=v5p-64",
                        "ici_tensor_parallelism=32")
    assert rc == 2 and err.strip().splitlines()[-1] == "remat: " + e.value.message


# ---- the sweep -------------------------------------------------------------------


def test_sweep_rows_are_single_analyses() -> None:
    grid = {"per_device_batch_size": [1, 4, 16], "remat_policy": ["full", "minimal", "nope"],
            "ici_tensor_parallelism": [1, 2]}
    s = remat.sweep(model_name="llama3-8b", topology="v6e-8", grid=grid)
    assert len(s) == 18 and s.keys == list(grid)
    for row in s:
        settings = {k: row[k] for k in grid}
        if row["remat_policy"] == "nope":
            assert row["peak_hbm_bytes"] is None and "unknown remat_policy 'nope'" in row["error"]
            continue
        a = remat.analyze(model_name="llama3-8b", topology="v6e-8", **settings)
        assert row["error"] is None
        for name in ("peak_hbm_bytes", "budget_bytes", "usable_bytes", "fits",
                     "fits_with_margin", "passes", "verdict", "step_seconds", "mfu",
                     "recompute_flops"):
            assert row[name] == getattr(a, name), (settings, name)
        assert row["offload_exposed_seconds"] == a.offload.exposed_seconds
    # odometer order, the last key fastest
    assert [r["ici_tensor_parallelism"] for r in list(s)[:4]] == [1, 2, 1, 2]


def test_sweep_takes_a_yaml_path(tmp_path: Path) -> None:
    yml = tmp_path / "run.yml"
    yml.write_text("model_name: llama3-8b\ntopology: v6e-8\n")
    s = remat.sweep(str(yml), grid={"per_device_batch_size": [2]})
    a = remat.analyze(str(yml), per_device_batch_size=2)
    assert s.columns["peak_hbm_bytes"] == [a.peak_hbm_bytes]
    with pytest.raises(TypeError):
        remat.sweep("python3 -m MaxText.train model_name=llama3-8b", grid={"steps": [1]})


def test_sweep_grid_values_are_lists() -> None:
    with pytest.raises(TypeError, match=r"grid\['remat_policy'\] must be a list"):
        remat.sweep(model_name="llama3-8b", grid={"remat_policy": "full"})
    with pytest.raises(TypeError, match="not int"):
        remat.sweep(model_name="llama3-8b", grid={"per_device_batch_size": 4})


def test_sweep_bounds() -> None:
    with pytest.raises(ValueError, match="no values"):
        remat.sweep(model_name="llama3-8b", grid={"per_device_batch_size": []})
    with pytest.raises(ValueError, match="more than"):
        remat.sweep(model_name="llama3-8b", grid={f"k{i}": list(range(100)) for i in range(5)})


def test_sweep_releases_the_gil() -> None:
    """A sweep in one thread leaves the interpreter to the others."""
    grid = {"per_device_batch_size": list(range(1, 41)), "remat_policy": ["full", "minimal"],
            "max_target_length": [1024, 2048, 4096, 8192, 16384]}
    done = threading.Event()
    ticks = 0

    def count() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            time.sleep(0)

    t = threading.Thread(target=count)
    t.start()
    try:
        # sweeps for a quarter of a second at least, so that a busy machine's
        # scheduler gives the counter its share over the whole of it
        calls, before, t0 = 0, ticks, time.perf_counter()
        while time.perf_counter() - t0 < 0.25:
            remat.sweep(model_name="llama3-70b", topology="tpu7x-64", grid=grid)
            calls += 1
        elapsed, during = time.perf_counter() - t0, ticks - before
    finally:
        done.set()
        t.join()
    # holding the GIL, the counter would run once per switch interval (5 ms)
    # and once between calls at most
    held = elapsed / 0.005 + calls
    assert during > 10 * held, (during, held, elapsed, calls)


def test_threads_analyze_at_once() -> None:
    policies = ["full", "minimal", "save_qkv_proj", "save_out_proj"]
    want = {p: remat.analyze(model_name="llama3-8b", topology="v6e-8", remat_policy=p)
            .peak_hbm_bytes for p in policies}
    got: dict[str, set[int]] = {p: set() for p in policies}

    def work(p: str) -> None:
        for _ in range(30):
            got[p].add(remat.check(model_name="llama3-8b", topology="v6e-8",
                                   remat_policy=p).peak_hbm_bytes)

    threads = [threading.Thread(target=work, args=(p,)) for p in policies]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == {p: {v} for p, v in want.items()}


# ---- notebooks and tables -----------------------------------------------------------


def test_notebook_html_is_self_contained() -> None:
    a = remat.analyze(model_name="llama3-8b", topology="v6e-8", per_device_batch_size=12)
    html = a._repr_html_()
    assert html.startswith('<div class="remat-summary">') and html.rstrip().endswith("</div>")
    assert "<svg" in html and "OOM" in html and "Breakdown at the peak" in html
    assert "http://" not in html.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in html and "<script" not in html


def test_to_pandas() -> None:
    pd = pytest.importorskip("pandas")
    a = remat.analyze(model_name="llama3-8b", topology="v6e-8")
    layers = a.to_pandas("layers")
    assert isinstance(layers, pd.DataFrame) and len(layers) == a.layers_count
    s = remat.sweep(model_name="llama3-8b", topology="v6e-8",
                    grid={"per_device_batch_size": [1, 2, 3]})
    df = s.to_pandas()
    assert list(df["per_device_batch_size"]) == [1, 2, 3]
    assert list(df["peak_hbm_bytes"]) == s.columns["peak_hbm_bytes"]
    t = remat.table(model_name="llama3-8b", topology="v6e-8", kind="names").to_pandas()
    assert "name" in t.columns


def test_repr_and_dir() -> None:
    a = remat.analyze(model_name="llama3-8b", topology="v6e-8")
    assert repr(a).startswith("<remat.Analysis llama3-8b on tpu-v6e x8")
    assert "breakdown" in dir(a) and "peak_hbm_bytes" in dir(a)
    with pytest.raises(AttributeError):
        a.no_such_field


def test_from_maxtext_runs_remat_cannot_describe_are_refused_by_name() -> None:
    base = {"model_name": "llama3-8b", "num_decoder_layers": 32, "compile_topology": "v5p-16"}
    for extra, key in [({"pipeline_parallel_layers": 16, "ici_pipeline_parallelism": 2},
                        "pipeline_parallel_layers"),
                       ({"custom_mesh_and_rule": "pure-fsdp"}, "custom_mesh_and_rule")]:
        with pytest.raises(remat.RematError) as e:
            remat.check(remat.from_maxtext({**base, **extra}))
        assert e.value.key == key and "is not modeled" in e.value.message
    # MaxText's own defaults and resolved values describe the run remat analyzes
    same = remat.check(remat.from_maxtext({**base, "pipeline_parallel_layers": 32,
                                           "num_pipeline_microbatches": -1,
                                           "base_moe_mlp_dim": -1}))
    assert same.peak_hbm_bytes == remat.check(remat.from_maxtext(base)).peak_hbm_bytes


def test_ctrl_c_stops_a_long_sweep() -> None:
    """A KeyboardInterrupt reaches a sweep of a million configurations
    within a chunk of them, not at its end (about half a minute)."""
    import _thread

    import signal

    grid = {"per_device_batch_size": list(range(1, 101)), "max_target_length":
            list(range(1024, 1024 + 100 * 128, 128)), "ici_tensor_parallelism": [1] * 100}
    # A process started in the background of a shell without job control
    # inherits SIGINT ignored, and interrupt_main then does nothing: the
    # handler a terminal's Ctrl-C reaches is Python's own, so install it.
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.3, _thread.interrupt_main)
    timer.start()
    t0 = time.perf_counter()
    try:
        with pytest.raises(KeyboardInterrupt):
            remat.sweep(model_name="llama3-8b", topology="v6e-8", grid=grid)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, old)
    assert time.perf_counter() - t0 < 5
