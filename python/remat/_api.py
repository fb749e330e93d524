"""The commands as functions: what ``remat CMD --format json`` prints, typed.

Each function takes the run as :mod:`remat._settings` describes (keyword
arguments, a dict, a path, a launch line) and runs the engine in process
(remat._core, the C library and its command line): no copy of the engine
is here, and the documents are the CLI's own bytes, parsed into the
classes of :mod:`remat._types`.

Invariants: a negative verdict is a result, not an exception (``check``
and ``solve`` return their documents as the CLI prints them with exit
code 1); bad input raises RematError with the CLI's line; an analysis
(``analyze``) keeps the engine's result and builds the whole document
only when a field beyond the gate's figures is read, so that a call costs
about what the C analysis does.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import remat._core as _core

from ._errors import RematError, from_engine
from ._settings import Source, command_line, value_text
from ._types import AnalysisResult, CheckResult, Comparison, Solution, Table, Timeline, parse


def _run(command: str, options: list[str], sources: tuple[Source, ...],
         settings: Mapping[str, Any]) -> tuple[bytes, int, str]:
    """`remat COMMAND WORDS OPTIONS` in process: (output, exit code, messages)."""
    words, config = command_line(sources, settings)
    # Options go after the run's words: a pasted launcher must come first
    # (the CLI skips it there), and getopt takes options anywhere.
    rc, out, messages, error = _core.call([command, *words, *options], config)
    if rc not in (0, 1):
        raise from_engine(rc, messages, error)
    return out, rc, messages


_Doc = TypeVar("_Doc")


def _document(cls: type[_Doc], command: str, options: list[str], sources: tuple[Source, ...],
              settings: Mapping[str, Any]) -> _Doc:
    """The command's JSON document, parsed into @p cls (the schema it prints)."""
    out, _rc, _messages = _run(command, ["--format", "json", *options], sources, settings)
    doc = parse(json.loads(out))
    if not isinstance(doc, cls):
        raise RematError(f"remat {command} printed {type(doc).__name__}, not {cls.__name__}",
                         status="internal", exit_code=3)
    return doc


if TYPE_CHECKING:
    # For type checkers an Analysis has every field of the document, typed;
    # at run time it is a slotted proxy that reads them lazily.
    _AnalysisFields = AnalysisResult
else:
    _AnalysisFields = object


class Analysis(_AnalysisFields):
    """One analyzed step (``remat analyze``), read lazily.

    The gate's figures (``peak_hbm_bytes``, ``budget_bytes``,
    ``usable_bytes``, ``fits``, ``fits_with_margin``, ``passes``,
    ``verdict``, ``step_seconds``, ``mfu``, ``hfu``, ``recompute_flops``,
    ``model_flops``, ``num_devices``, ``layers_count``, ``model``,
    ``graph``, ``hardware``, ``remat_policy``, ``safety_margin``) come from
    the engine's result at once; every other field of ``remat-result/1``
    (docs/json-output.md) is read from :attr:`result`, the whole document,
    made on first use. In Jupyter the analysis shows as the HTML report's
    summary and its chart of live HBM.
    """

    __slots__ = ("_core_run", "_words", "_config", "_doc", "messages")

    # The figures the engine's Run reads itself (python/ext/run.c): taken
    # from the type, so that a getter added there is fast here too.
    _FAST = frozenset(n for n in dir(_core.Run) if not n.startswith("_") and n != "html_summary")

    def __init__(self, core_run: Any, words: list[str], config: tuple[str, bytes] | None,
                 messages: str) -> None:
        self._core_run = core_run
        self._words = words
        self._config = config
        self._doc: AnalysisResult | None = None
        #: what the CLI would print on standard error (notes), one str
        self.messages = messages

    def __getattr__(self, name: str) -> Any:
        if name in Analysis._FAST:
            return getattr(self._core_run, name)
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.result, name)

    def __dir__(self) -> list[str]:
        return sorted(set(object.__dir__(self)) | set(AnalysisResult.__dataclass_fields__))

    @property
    def result(self) -> AnalysisResult:
        """The whole ``remat-result/1`` document, typed (made once)."""
        if self._doc is None:
            rc, out, messages, error = _core.call(
                ["analyze", *self._words, "--format", "json"], self._config)
            if rc != 0:
                raise from_engine(rc, messages, error)
            doc = parse(json.loads(out))
            assert isinstance(doc, AnalysisResult)
            self._doc = doc
        return self._doc

    def to_dict(self) -> dict[str, Any]:
        """The document as ``remat analyze --format json`` prints it."""
        from ._types import to_dict
        return to_dict(self.result)

    def to_pandas(self, kind: str = "layers") -> Any:
        """A table of the document as a pandas DataFrame (AnalysisResult.to_pandas)."""
        return self.result.to_pandas(kind)

    def html(self) -> str:
        """The report's summary: verdict, breakdown, costs, the chart of live HBM."""
        return str(self._core_run.html_summary())

    def _repr_html_(self) -> str:
        return self.html()

    def __repr__(self) -> str:
        gib = 1 << 30
        return (f"<remat.Analysis {self.model} on {self.hardware} x{self.num_devices}, "
                f"remat_policy={self.remat_policy}: {self.verdict}, peak "
                f"{self.peak_hbm_bytes / gib:.2f} GiB of {self.budget_bytes / gib:.2f} GiB>")


def analyze(*sources: Source, **settings: Any) -> Analysis:
    """``remat analyze``: one step simulated; see :class:`Analysis`."""
    words, config = command_line(sources, settings)
    run, rc, messages, error = _core.analyze(["analyze", *words], config)
    if run is None:
        raise from_engine(rc, messages, error)
    return Analysis(run, words, config, messages)


def check(*sources: Source, **settings: Any) -> CheckResult:
    """``remat check``: the verdict and, when it does not pass, the fixes."""
    return _document(CheckResult, "check", [], sources, settings)


def compare(*sources: Source, policies: Sequence[str] | None = None,
            **settings: Any) -> Comparison:
    """``remat compare``: every preset (or ``policies``), ranked."""
    options = ["--policies", ",".join(policies)] if policies is not None else []
    return _document(Comparison, "compare", options, sources, settings)


def solve(*sources: Source, frontier: bool = False, exhaustive: bool = False,
          **settings: Any) -> Solution:
    """``remat solve``: the fastest placement that fits (``frontier``: all of them)."""
    options = (["--frontier"] if frontier else []) + (["--exhaustive"] if exhaustive else [])
    return _document(Solution, "solve", options, sources, settings)


def timeline(*sources: Source, unfold: bool = False, stage: int | None = None,
             **settings: Any) -> Timeline:
    """``remat timeline``: the step event by event (``unfold``: every layer)."""
    options = (["--unfold"] if unfold else []) + (
        ["--stage", value_text("stage", stage)] if stage is not None else [])
    return _document(Timeline, "timeline", options, sources, settings)


def table(*sources: Source, kind: str | Sequence[str] | None = None,
          **settings: Any) -> Table:
    """``remat table``: per-layer, per-tensor, per-name tables (``kind``)."""
    kinds = [kind] if isinstance(kind, str) else list(kind or [])
    options = ["--kind", ",".join(kinds)] if kinds else []
    return _document(Table, "table", options, sources, settings)


def report(*sources: Source, **settings: Any) -> str:
    """``remat report``: the whole self-contained HTML page, as a str."""
    out, _rc, _messages = _run("report", ["-o", "-"], sources, settings)
    return out.decode()


def chart(*sources: Source, kind: str = "timeline", **settings: Any) -> str:
    """``remat chart``: one SVG chart (``timeline``, ``layers``, ``policies``)."""
    out, _rc, _messages = _run("chart", ["--kind", kind, "-o", "-"], sources, settings)
    return out.decode()


class Sweep:
    """Many configurations analyzed in one call (:func:`sweep`).

    ``columns`` maps each swept key (its values as given) and each figure
    to a list with one entry per configuration: ``peak_hbm_bytes``,
    ``budget_bytes``, ``usable_bytes``, ``fits``, ``fits_with_margin``,
    ``passes``, ``verdict``, ``step_seconds``, ``mfu``,
    ``recompute_flops``, ``offload_exposed_seconds`` (None where the
    configuration is bad input) and ``error`` (its one line, else None).
    Rows run in odometer order, the last swept key fastest.
    """

    __slots__ = ("keys", "columns")

    def __init__(self, keys: list[str], columns: dict[str, list[Any]]) -> None:
        self.keys = keys
        self.columns = columns

    def __len__(self) -> int:
        return len(self.columns["error"])

    def __iter__(self) -> Iterator[dict[str, Any]]:
        names = list(self.columns)
        for i in range(len(self)):
            yield {n: self.columns[n][i] for n in names}

    def to_pandas(self) -> Any:
        """The columns as a pandas DataFrame (pandas is not a dependency)."""
        from ._types import _pandas
        return _pandas().DataFrame(self.columns)

    def __repr__(self) -> str:
        ok = sum(1 for p in self.columns["passes"] if p)
        bad = sum(1 for e in self.columns["error"] if e is not None)
        return (f"<remat.Sweep {len(self)} configurations over {', '.join(self.keys)}: "
                f"{ok} pass, {bad} bad input>")


def _file_in_memory(words: list[str], config: tuple[str, bytes] | None
                    ) -> tuple[list[str], tuple[str, bytes] | None]:
    """A ``--config PATH`` among @p words read here, for the sweep, which
    takes its config file's text (a YAML file's base_config chain is still
    followed from its name)."""
    if "--config" not in words:
        return words, config
    at = words.index("--config")
    path = words[at + 1]
    if config is not None or "--config" in words[at + 2:]:
        raise RematError(f"one config file a run: {path} is given beside another",
                         status="usage")
    try:
        with open(path, "rb") as f:
            text = f.read()
    except OSError as e:
        raise RematError(f"{path}: cannot read file: {e.strerror}", status="io",
                         source=path) from None
    return words[:at] + words[at + 2:], (path, text)


def sweep(*sources: Source, grid: Mapping[str, Sequence[Any]], **settings: Any) -> Sweep:
    """Every combination of ``grid``'s values on top of the run, analyzed.

    The engine builds, resolves and analyzes each configuration as
    ``remat analyze`` would, with the GIL released while it runs (taken
    back every 4,096 configurations, so that Ctrl-C stops it); a
    configuration that is bad input gets its error line in ``error`` and
    the sweep goes on. The run may be keyword arguments, dicts and
    ``key=value`` words; a pasted launch line or a path is not taken here
    (load a YAML config with ``remat.analyze`` first, or pass its keys).
    """
    words, config = command_line(sources, settings)
    words, config = _file_in_memory(words, config)
    if any(not ("=" in w and not w.startswith("-")) for w in words):
        raise TypeError("sweep takes settings (keyword arguments, dicts, key=value words, "
                        "a config path), not a launch line")
    keys = [str(k) for k in grid]
    for k, vals in grid.items():
        # a str is a sequence too: swept as its letters, it would be a wrong answer
        if isinstance(vals, (str, bytes)) or not isinstance(vals, Iterable):
            raise TypeError(f"grid[{k!r}] must be a list of values, not {type(vals).__name__}")
    values = [[value_text(k, v) for v in grid[k]] for k in keys]
    columns = _core.sweep(words, config, keys, values)
    swept: dict[str, list[Any]] = {}
    n = len(columns["error"])
    repeat = n
    for k, vals in zip(keys, grid.values()):
        vals = list(vals)
        repeat //= len(vals)
        swept[k] = [vals[(i // repeat) % len(vals)] for i in range(n)]
    return Sweep(keys, {**swept, **columns})


__all__ = ["Analysis", "RematError", "Sweep", "analyze", "chart", "check", "compare", "report",
           "solve", "sweep", "table", "timeline"]
