"""Typed results: remat's six JSON documents as frozen dataclasses.

The CLI prints six documents, each named by its ``schema`` field
(docs/json-output.md): ``remat-result/1`` (:class:`AnalysisResult`),
``remat-table/1`` (:class:`Table`), ``remat-compare/1`` (:class:`Comparison`),
``remat-check/1`` (:class:`CheckResult`), ``remat-solve/1`` (:class:`Solution`)
and ``remat-timeline/1`` (:class:`Timeline`). :func:`parse` turns a decoded
document (``json.loads``) into one of them, :func:`to_dict` turns any of the
classes back into plain JSON values, and :func:`from_dict` reads one object of
a given class (a nested one too).

Invariants:

* **Field names are the JSON keys**, in the order the CLI writes them, one
  frozen, slotted dataclass per kind of JSON object. The one exception is a
  key that is a Python keyword, which takes a trailing underscore:
  ``pass`` is ``pass_`` (:attr:`CheckResult.pass_`, :attr:`RankedResult.pass_`).
  (A key that is not an identifier would name its JSON key in the field's
  metadata, ``field(metadata={"json": KEY})``; no such key exists today.)
* **Types are the JSON types, exactly**: ``int`` for every byte and FLOP count,
  index and size (JSON integers), ``float`` for times and ratios (JSON reals),
  ``bool``, ``str``, ``X | None`` where the value may be null, ``list[...]``
  for arrays and ``dict[str, str]`` for objects whose keys are data rather
  than fields (a placement: checkpoint name -> ``"device"``, ``"remat"`` or
  ``"offload"``). Enumerated strings (``verdict``, ``step``, ``fate``, ...)
  stay ``str``: a new value from a newer CLI is not a schema error.
* **Absent is not null.** A key the CLI writes only sometimes (``fixes`` when
  the step does not pass, a fix's figures only when it found one, solve's
  ``placement`` only when ``found``, table kinds not asked for) is a field
  ``X | None = None`` whose None means *absent*: :func:`to_dict` leaves it
  out, and :func:`parse` refuses an explicit null there. Keys that are always
  written but may be null (``peak_at.layer``) have no default and stay null.
* **Strict.** An unknown key, a missing key or a value of the wrong JSON type
  raises :class:`SchemaError` (a ``ValueError``) whose message starts with the
  JSON path: ``$.stages[0].breakdown.params: missing``. ``bool`` is never an
  integer; a real where an integer is expected is an error; an integer where a
  real is expected is accepted (stored as ``float``). Nested ``schema`` fields
  must hold their schema's name. So a newer CLI that adds a key (the docs allow
  it within a ``/1`` schema; ``breakdown`` may gain categories) fails loudly
  here until the class gains the field.
* **Round trip.** ``to_dict(parse(d)) == d`` for every document the CLI
  prints, with the same key order (``json.dumps`` of both is identical).

Where docs/json-output.md and the CLI disagree on key order, the fields follow
the CLI (:class:`LayerRow`: ``all_to_all_seconds`` comes before
``d2h_seconds``), so the round trip keeps the order.

``to_pandas()`` methods build pandas DataFrames; pandas is imported only
there and is not a dependency. Rows are the JSON rows with nested objects
flattened into dotted columns (``breakdown.params``, ``placement.query_proj``);
arrays stay as Python lists in their cells.

Parsing and writing are generic: each class's plan (its fields, JSON keys and
one converter per field, from the type hints) is built once and cached.
"""

import importlib
import keyword
import operator
import types
import typing
from collections.abc import Callable
from dataclasses import MISSING, Field, dataclass, fields, is_dataclass
from typing import Any, ClassVar, Union

__all__ = [
    # documents
    "AnalysisResult",
    "Table",
    "Comparison",
    "CheckResult",
    "Solution",
    "Timeline",
    # shared parts
    "Mesh",
    "Breakdown",
    "PeakAt",
    "Stage",
    "Static",
    "Offload",
    "LayerRow",
    "TensorRow",
    "Profile",
    "NameRow",
    "Fixes",
    "FixLine",
    "PlacementFix",
    "LargestBatchFix",
    "PolicyBatch",
    "SmallestSliceFix",
    "ScanFix",
    "ResultBase",
    "ResultSummary",
    "RankedResult",
    "Explanation",
    "Alternative",
    "LargestBatch",
    "FrontierPoint",
    "PresetPoint",
    "Event",
    "Transfer",
    # functions
    "Document",
    "SchemaError",
    "SCHEMAS",
    "parse",
    "from_dict",
    "to_dict",
]


# ---- the classes ----------------------------------------------------------
# Each class lists its JSON keys in the CLI's order; see docs/json-output.md
# for every field's meaning and unit.


@dataclass(frozen=True, slots=True)
class Mesh:
    """``mesh``: shards per mesh axis (each ``ici x dcn``)."""

    data: int
    fsdp: int
    fsdp_transpose: int
    sequence: int
    tensor: int
    tensor_sequence: int
    context: int
    expert: int
    stage: int
    context_usp_ulysses: int
    autoregressive: int


@dataclass(frozen=True, slots=True)
class Breakdown:
    """``breakdown`` (and a timeline event's ``bytes``): live bytes per category."""

    params: int
    optimizer: int
    grads: int
    grad_accum: int
    saved_activations: int
    activations: int
    recompute: int
    fetched: int
    act_grads: int
    head: int
    reserve: int
    gathered_weights: int
    weight_grad_buffer: int
    context_kv_gather: int
    pipeline_inflight: int
    scan_weights: int


@dataclass(frozen=True, slots=True)
class PeakAt:
    """``peak_at``: the moment of a peak."""

    stage: int
    step: str
    where: str
    layer: int | None
    op: str | None


@dataclass(frozen=True, slots=True)
class Stage:
    """``stages[]``: one pipeline stage (the only one without a pipeline)."""

    index: int
    first_layer: int
    last_layer: int
    in_flight: int
    peak_hbm_bytes: int
    static_bytes: int
    inflight_bytes: int
    peak_at: PeakAt
    breakdown: Breakdown


@dataclass(frozen=True, slots=True)
class Static:
    """``static``: memory live for the whole step."""

    param_count: int
    param_count_device: int
    active_param_count: int
    host_bytes: int
    param_bytes: int
    optimizer_bytes: int
    grad_bytes: int
    grad_accum_bytes: int
    reserve_bytes: int


@dataclass(frozen=True, slots=True)
class Offload:
    """``offload``: host offload traffic and host RAM."""

    d2h_bytes: int
    h2d_bytes: int
    seconds: float
    exposed_seconds: float
    hidden: bool
    host_bytes: int
    host_ram_bytes: int
    host_fits: bool
    link_bytes_per_second: float
    link_assumed: bool


@dataclass(frozen=True, slots=True)
class LayerRow:
    """``layers[]``: one layer, one micro-batch."""

    index: int
    profile: int
    saved_device_bytes: int
    offloaded_bytes: int
    recompute_flops: int
    forward_flops: int
    backward_flops: int
    forward_seconds: float
    backward_seconds: float
    forward_compute_seconds: float
    backward_compute_seconds: float
    recompute_seconds: float
    allgather_seconds: float
    reduce_scatter_seconds: float
    all_to_all_seconds: float
    act_collective_forward_seconds: float
    act_collective_backward_seconds: float
    d2h_seconds: float
    h2d_seconds: float
    param_fetch_seconds: float


@dataclass(frozen=True, slots=True)
class TensorRow:
    """``tensors[]`` and ``profiles[].tensors[]``: one tensor of a layer."""

    name: str
    checkpoint: list[str]
    shape: list[int]
    dtype: str
    bytes: int
    view_of: str | None
    placement: str
    fate: str
    unused: bool
    recompute_flops: int


@dataclass(frozen=True, slots=True)
class Profile:
    """``profiles[]``: layers of one kind sharing one plan."""

    kind: str
    first_layer: int
    last_layer: int
    layers: int
    tensors: list[TensorRow]


@dataclass(frozen=True, slots=True)
class NameRow:
    """``names[]``: one checkpoint name over all layers, one micro-batch."""

    name: str
    saved_bytes: int
    offloaded_bytes: int
    recompute_flops: int


@dataclass(frozen=True, slots=True)
class FixLine:
    """What every ``fixes`` entry carries: the one setting changed (None
    where nothing was found), the command to paste and what it does."""

    settings: str | None
    command: str | None
    comment: str


@dataclass(frozen=True, slots=True)
class PlacementFix(FixLine):
    """``fixes.placement``: the solver's fastest placement that passes."""

    found: bool
    placement: dict[str, str] | None = None  # when found
    peak_hbm_bytes: int | None = None  # when found
    step_seconds: float | None = None  # when found


@dataclass(frozen=True, slots=True)
class PolicyBatch:
    """``fixes.largest_batch.per_policy[]``: one policy's largest batch."""

    remat_policy: str
    own: bool
    per_device_batch_size: float
    peak_hbm_bytes: int | None = None  # when per_device_batch_size > 0
    step_seconds: float | None = None  # when per_device_batch_size > 0


@dataclass(frozen=True, slots=True)
class LargestBatchFix(FixLine):
    """``fixes.largest_batch``: the largest batch that passes, per policy."""

    per_policy: list[PolicyBatch]


@dataclass(frozen=True, slots=True)
class SmallestSliceFix(FixLine):
    """``fixes.smallest_slice``: the smallest slice of the chip that passes."""

    found: bool
    topology: str | None = None  # when found
    num_devices: int | None = None  # when found
    chips: int | None = None  # when found
    peak_hbm_bytes: int | None = None  # when found
    step_seconds: float | None = None  # when found


@dataclass(frozen=True, slots=True)
class ScanFix(FixLine):
    """``fixes.scan_layers``: the run with its unrolled layers scanned."""

    found: bool
    peak_hbm_bytes: int | None = None  # when found
    step_seconds: float | None = None  # when found
    refused: str | None = None  # MaxText refuses scan_layers for the model: why


@dataclass(frozen=True, slots=True)
class Fixes:
    """``fixes``: what would make a step that does not pass, pass."""

    placement: PlacementFix
    largest_batch: LargestBatchFix
    smallest_slice: SmallestSliceFix
    scan_layers: ScanFix | None  # null where the layers are scanned already


@dataclass(frozen=True, slots=True)
class ResultBase:
    """The fields every ``remat-result/1`` object starts with.

    Three objects carry the schema: the whole analysis
    (:class:`AnalysisResult`), solve's ``result`` (:class:`ResultSummary`) and
    compare's ``results[]`` (:class:`RankedResult`). The last two lack the
    tables; each adds its own fields after these.
    """

    SCHEMA: ClassVar[str] = "remat-result/1"

    schema: str
    model: str
    graph: str
    hardware: str
    remat_policy: str
    layers_count: int
    num_devices: int
    devices_per_chip: int
    mesh: Mesh
    pipeline_microbatches: int
    pipeline_iterations: int
    remat_unit: int
    unrolled_held_peak_bytes: int | None
    unit_held_peak_bytes: int | None
    unit_apart_partway: bool
    weights_streamed: bool
    worst_stage: int
    stages: list[Stage]
    peak_hbm_bytes: int
    xla_expected_peak_bytes: int  # XLA's figure, after its rematerialization pass
    budget_bytes: int
    budget_source: str
    budget_assumption: str | None
    default_run: bool
    device_hbm_bytes: int
    chip_hbm_bytes: int
    usable_bytes: int
    safety_margin: float
    fits: bool
    fits_with_margin: bool
    breakdown: Breakdown
    peak_at: PeakAt
    static: Static
    forward_flops: int
    backward_flops: int
    model_flops: int
    recompute_flops: int
    recompute_share: float
    recompute_seconds: float
    added_seconds: float
    step_seconds: float
    compute_seconds: float
    mfu: float
    hfu: float
    exposed_collective_seconds: float
    pipeline_bubble_fraction: float
    offload: Offload


@dataclass(frozen=True, slots=True)
class AnalysisResult(ResultBase):
    """``remat-result/1``: ``remat analyze --format json``."""

    layers: list[LayerRow]
    profiles: list[Profile]
    tensors: list[TensorRow]
    names: list[NameRow]
    notes: list[str]
    fixes: Fixes | None = None  # only when the step does not pass

    def to_pandas(self, kind: str = "layers") -> Any:
        """One table as a DataFrame: ``layers``, ``tensors`` (every profile's
        rows, led by ``profile`` and ``kind``), ``names`` or ``stages``."""
        return _result_frame(self.layers, self.profiles, self.names, self.stages, kind)


@dataclass(frozen=True, slots=True)
class ResultSummary(ResultBase):
    """Solve's ``result``: a ``remat-result/1`` object without its tables."""

    notes: list[str]


@dataclass(frozen=True, slots=True)
class RankedResult(ResultBase):
    """``remat-compare/1``'s ``results[]``: one policy, without its tables."""

    notes: list[str]
    rank: int
    pass_: bool  # JSON "pass"

    @property
    def passes(self) -> bool:
        """JSON ``pass``, by the name the rest of the package uses."""
        return self.pass_


@dataclass(frozen=True, slots=True)
class Table:
    """``remat-table/1``: ``remat table --format json [--kind K]``.

    Only the kinds asked for are present (``--kind all``, the default, has
    them all); the others are None and absent from the JSON.
    """

    SCHEMA: ClassVar[str] = "remat-table/1"

    schema: str
    remat_policy: str
    layers: list[LayerRow] | None = None  # --kind layers, all
    profiles: list[Profile] | None = None  # --kind tensors, all
    names: list[NameRow] | None = None  # --kind names, all
    stages: list[Stage] | None = None  # --kind stages, all

    @property
    def kinds(self) -> tuple[str, ...]:
        """The ``--kind`` names present, in the CLI's order."""
        present = (self.layers, self.profiles, self.names, self.stages)
        return tuple(k for k, v in zip(_TABLE_KINDS, present) if v is not None)

    def to_pandas(self, kind: str | None = None) -> Any:
        """The rows of ``kind`` (``layers``, ``tensors``, ``names`` or
        ``stages``) as a DataFrame; with no ``kind``, of the only kind present
        (ValueError when there are several: name one)."""
        if kind is None:
            if len(self.kinds) != 1:
                raise ValueError(f"this table has kinds {list(self.kinds)}: name one")
            kind = self.kinds[0]
        elif kind in _TABLE_KINDS and kind not in self.kinds:
            raise ValueError(f"kind {kind!r} is not in this table (it has {list(self.kinds)})")
        return _result_frame(self.layers, self.profiles, self.names, self.stages, kind)


@dataclass(frozen=True, slots=True)
class Comparison:
    """``remat-compare/1``: ``remat compare --format json``, best first."""

    SCHEMA: ClassVar[str] = "remat-compare/1"

    schema: str
    results: list[RankedResult]

    def to_pandas(self) -> Any:
        """One row per policy, in rank order: every field of the result, the
        objects flattened (``breakdown.params``, ``offload.host_fits``,
        ``mesh.fsdp``); ``stages`` and ``notes`` stay lists. The column for
        JSON's ``pass`` is ``pass``."""
        return _class_frame(self.results, RankedResult)


@dataclass(frozen=True, slots=True)
class CheckResult:
    """``remat-check/1``: ``remat check --format json`` (exit 1 still prints it)."""

    SCHEMA: ClassVar[str] = "remat-check/1"

    schema: str
    verdict: str
    pass_: bool  # JSON "pass"
    fits: bool
    fits_with_margin: bool
    peak_hbm_bytes: int
    xla_expected_peak_bytes: int
    unrolled_held_peak_bytes: int | None
    budget_bytes: int
    usable_bytes: int
    host_fits: bool
    peak_at: PeakAt
    budget_assumption: str | None
    notes: list[str]
    fixes: Fixes | None = None  # only when pass is false

    @property
    def passes(self) -> bool:
        """JSON ``pass``, by the name the rest of the package uses."""
        return self.pass_


@dataclass(frozen=True, slots=True)
class Alternative:
    """``explain[].alternatives[]``: one other option for a name."""

    placement: str
    peak_hbm_bytes: int
    step_seconds: float
    fits: bool
    host_fits: bool
    reason: str


@dataclass(frozen=True, slots=True)
class Explanation:
    """``explain[]``: why a name got its placement."""

    name: str
    placement: str
    saved_bytes: int
    offloaded_bytes: int
    recompute_flops: int
    alternatives: list[Alternative]


@dataclass(frozen=True, slots=True)
class LargestBatch:
    """Solve's ``largest_batch[]``: a policy's largest fitting batch."""

    remat_policy: str
    per_device_batch_size: float


@dataclass(frozen=True, slots=True)
class FrontierPoint:
    """``frontier[]``: a point of the Pareto frontier of (peak, step time)."""

    peak_hbm_bytes: int
    step_seconds: float
    feasible: bool
    fits_budget: bool
    host_fits: bool
    verdict: str
    placement: dict[str, str]


@dataclass(frozen=True, slots=True)
class PresetPoint:
    """``presets[]``: a preset placed against the frontier."""

    remat_policy: str
    peak_hbm_bytes: int
    step_seconds: float
    dominated_by: int | None
    dominated_by_passing: bool


# kw_only: required largest_batch follows keys written only when found.
@dataclass(frozen=True, slots=True, kw_only=True)
class Solution:
    """``remat-solve/1``: ``remat solve --format json [--frontier|--exhaustive]``.

    ``placement``, ``maxtext_overrides``, ``result`` and ``explain`` are
    present only when ``found``; ``faster_points_that_do_not_pass``,
    ``frontier`` and ``presets`` only with ``--frontier``.
    """

    SCHEMA: ClassVar[str] = "remat-solve/1"

    schema: str
    found: bool
    names: list[str]
    space: int
    evaluated: int
    visited: int
    enumerated: bool
    placement: dict[str, str] | None = None  # when found
    maxtext_overrides: str | None = None  # when found
    result: ResultSummary | None = None  # when found
    explain: list[Explanation] | None = None  # when found
    largest_batch: list[LargestBatch]
    faster_points_that_do_not_pass: list[int] | None = None  # --frontier
    frontier: list[FrontierPoint] | None = None  # --frontier
    presets: list[PresetPoint] | None = None  # --frontier

    def to_pandas(self, kind: str = "frontier") -> Any:
        """One of the solution's arrays as a DataFrame:

        * ``frontier`` (the default; needs ``--frontier``): one row per
          point, its placement as ``placement.NAME`` columns;
        * ``presets`` (``--frontier``): one row per preset;
        * ``largest_batch``: one row per policy;
        * ``explain`` (when found): one row per alternative, led by the
          name's own fields (``name``, ``placement``, ``saved_bytes``, ...),
          the alternative's as ``alternative.placement``,
          ``alternative.step_seconds``, ...
        """
        return _solution_frame(self, kind)


@dataclass(frozen=True, slots=True)
class Event:
    """A timeline's ``events[]``: one moment the simulator measures."""

    index: int
    stage: int
    phase: str
    where: str
    step: str
    layer: int | None
    layer_first: int | None
    layer_last: int | None
    repeat: int
    op: str | None
    start_seconds: float
    end_seconds: float
    live_bytes: int
    bytes: Breakdown


@dataclass(frozen=True, slots=True)
class Transfer:
    """A timeline's ``transfers[]``: what crosses a link while a layer runs."""

    kind: str
    layer: int
    phase: str
    start_seconds: float
    end_seconds: float
    bytes: int


@dataclass(frozen=True, slots=True)
class Timeline:
    """``remat-timeline/1``: ``remat timeline --format json [--unfold] [--stage K]``."""

    SCHEMA: ClassVar[str] = "remat-timeline/1"

    schema: str
    model: str
    graph: str
    hardware: str
    remat_policy: str
    stage: int
    stages: int
    worst_stage: int
    folded: bool
    seconds: float
    budget_bytes: int
    usable_bytes: int
    peak_hbm_bytes: int
    peak_event: int
    peak_at: PeakAt
    categories: list[str]
    events: list[Event]
    transfers: list[Transfer]

    def to_pandas(self, kind: str = "events") -> Any:
        """``events`` (the default: one row per event, the live bytes as
        ``bytes.params``, ``bytes.optimizer``, ...) or ``transfers``."""
        if kind == "events":
            return _class_frame(self.events, Event)
        if kind == "transfers":
            return _class_frame(self.transfers, Transfer)
        raise ValueError(f"unknown timeline kind {kind!r}: events or transfers")


#: Any of the six documents, as parse returns them.
Document: typing.TypeAlias = AnalysisResult | Table | Comparison | CheckResult | Solution | Timeline

#: The top-level class of each schema name.
SCHEMAS: dict[str, type] = {
    cls.SCHEMA: cls for cls in (AnalysisResult, Table, Comparison, CheckResult, Solution, Timeline)
}

_TABLE_KINDS = ("layers", "tensors", "names", "stages")


# ---- errors ---------------------------------------------------------------


class SchemaError(ValueError):
    """A document does not match its schema. ``str()`` is ``"PATH: PROBLEM"``,
    PATH a JSON path such as ``$.stages[0].breakdown.params``."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


class _Fail(Exception):
    """Raised inside the converters; the path is collected as it unwinds
    (innermost part first), so the happy path never builds a path string."""

    def __init__(self, problem: str, part: str | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.parts: list[str] = [] if part is None else [part]

    def to_schema_error(self) -> SchemaError:
        return SchemaError("$" + "".join(reversed(self.parts)), self.problem)


_JSON_TYPE_NAMES = {
    type(None): "null",
    bool: "boolean",
    int: "integer",
    float: "real",
    str: "string",
    list: "array",
    dict: "object",
}


def _expected(what: str, value: object) -> _Fail:
    got = _JSON_TYPE_NAMES.get(type(value), type(value).__name__)
    return _Fail(f"expected {what}, got {got}")


# ---- converters -----------------------------------------------------------
# A decoder takes a JSON value and returns the field's value or raises _Fail;
# an encoder does the reverse (None: the value is written as it is).

_Decoder = Callable[[Any], Any]
_Encoder = Callable[[Any], Any] | None


def _dec_int(v: Any) -> int:
    if type(v) is int:  # not isinstance: bool is an int subclass
        return v
    raise _expected("integer", v)


def _dec_float(v: Any) -> float:
    if type(v) is float:
        return v
    if type(v) is int:  # JSON does not tell 1 from 1.0 for every writer
        try:
            return float(v)
        except OverflowError:
            raise _Fail("integer too large for a real") from None
    raise _expected("real", v)


def _dec_str(v: Any) -> str:
    if type(v) is str:
        return v
    raise _expected("string", v)


def _dec_bool(v: Any) -> bool:
    if type(v) is bool:
        return v
    raise _expected("boolean", v)


_PRIMITIVES: dict[type, _Decoder] = {
    int: _dec_int,
    float: _dec_float,
    str: _dec_str,
    bool: _dec_bool,
}


class _NotJson:
    """A type no JSON value has: fields whose values always go through
    their decoder (arrays, objects) name it as their exact type."""


def _nullable(inner: _Decoder) -> _Decoder:
    def dec(v: Any) -> Any:
        return None if v is None else inner(v)

    return dec


def _absent_not_null(inner: _Decoder) -> _Decoder:
    # None stands for an absent key; an explicit null would not survive
    # the round trip, so it is refused.
    def dec(v: Any) -> Any:
        if v is None:
            raise _Fail("null where the key is written only when set (leave it out)")
        return inner(v)

    return dec


def _find_failure(items: Any, inner: _Decoder, part: Callable[[Any], str]) -> _Fail:
    """Re-runs a failed container's decoding item by item to name the item;
    only on the error path, so the happy path is a plain comprehension."""
    for k, x in items:
        try:
            inner(x)
        except _Fail as e:
            e.parts.append(part(k))
            return e
    return _Fail("invalid value")  # unreachable: some item failed before


def _list_decoder(inner: _Decoder, prim: type | None) -> _Decoder:
    def dec(v: Any) -> list[Any]:
        if type(v) is not list:
            raise _expected("array", v)
        if prim is not None:
            # homogeneous primitives (shape, names): check types, copy
            for x in v:
                if type(x) is not prim:
                    raise _find_failure(enumerate(v), inner, "[{}]".format)
            return list(v)
        try:
            return [inner(x) for x in v]
        except _Fail:
            raise _find_failure(enumerate(v), inner, "[{}]".format) from None

    return dec


def _map_decoder(inner: _Decoder) -> _Decoder:
    def dec(v: Any) -> dict[str, Any]:
        if type(v) is not dict:
            raise _expected("object", v)
        try:
            return {k: inner(x) for k, x in v.items()}
        except _Fail:
            raise _find_failure(v.items(), inner, ".{}".format) from None

    return dec


def _list_encoder(inner: _Encoder) -> _Encoder:
    if inner is None:
        return list
    return lambda v: [inner(x) for x in v]


def _map_encoder(inner: _Encoder) -> _Encoder:
    if inner is None:
        return dict
    return lambda v: {k: inner(x) for k, x in v.items()}


def _converters(tp: Any) -> tuple[type, _Decoder, _Encoder]:
    """(exact JSON type or _NotJson, decoder, encoder) for a type hint."""
    if tp in _PRIMITIVES:
        return tp, _PRIMITIVES[tp], None
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        if len(inner) != 1 or len(args) != 2:
            raise TypeError(f"unsupported union {tp!r}: only X | None")
        exact, dec, enc = _converters(inner[0])
        return exact, _nullable(dec), enc
    if origin is list:
        _, dec, enc = _converters(args[0])
        prim = args[0] if args[0] in _PRIMITIVES and args[0] is not float else None
        return _NotJson, _list_decoder(dec, prim), _list_encoder(enc)
    if origin is dict and args[0] is str:
        _, dec, enc = _converters(args[1])
        return _NotJson, _map_decoder(dec), _map_encoder(enc)
    if isinstance(tp, type) and is_dataclass(tp):
        return _NotJson, _class_decoder(tp), _class_encoder(tp)
    raise TypeError(f"unsupported type {tp!r}")


# ---- per-class plans ------------------------------------------------------


def _json_key(f: "Field[Any]") -> str:
    """The JSON key of a dataclass field (see the module docstring)."""
    if "json" in f.metadata:
        return str(f.metadata["json"])
    if f.name.endswith("_") and keyword.iskeyword(f.name[:-1]):
        return f.name[:-1]
    return f.name


@dataclass(frozen=True, slots=True)
class _Plan:
    """What parse and to_dict need to know about one class, computed once."""

    cls: type
    # (json key, attribute, exact JSON type, decoder, optional) per field
    decode: tuple[tuple[str, str, type, _Decoder, bool], ...]
    # (json key, encoder, optional) per field, in the same order
    encode: tuple[tuple[str, _Encoder, bool], ...]
    keys: frozenset[str]
    getter: Callable[[Any], tuple[Any, ...]]
    schema: str | None  # the value a "schema" key must hold, if any


_PLANS: dict[type, _Plan] = {}


def _plan(cls: type) -> _Plan:
    plan = _PLANS.get(cls)
    if plan is None:
        plan = _PLANS[cls] = _build_plan(cls)
    return plan


def _build_plan(cls: type) -> _Plan:
    hints = typing.get_type_hints(cls)
    dec_rows, enc_rows = [], []
    for f in fields(cls):
        # a field that defaults to None is a key written only sometimes
        optional = f.default is None and f.default_factory is MISSING
        exact, dec, enc = _converters(hints[f.name])
        if optional:
            dec = _absent_not_null(dec)
        key = _json_key(f)
        dec_rows.append((key, f.name, exact, dec, optional))
        enc_rows.append((key, enc, optional))
    names = [f.name for f in fields(cls)]
    # attrgetter of one name returns the value, not a 1-tuple
    getter = operator.attrgetter(*names) if len(names) > 1 else (lambda o: (getattr(o, names[0]),))
    schema = getattr(cls, "SCHEMA", None) if "schema" in names else None
    return _Plan(
        cls, tuple(dec_rows), tuple(enc_rows), frozenset(r[0] for r in dec_rows), getter, schema
    )


def _class_decoder(cls: type) -> _Decoder:
    plan: list[_Plan] = []  # filled on first use: classes may name later ones

    def dec(v: Any) -> Any:
        if not plan:
            plan.append(_plan(cls))
        return _decode_object(plan[0], v)

    return dec


def _decode_object(plan: _Plan, v: Any) -> Any:
    if type(v) is not dict:
        raise _expected("object", v)
    # Filled slot by slot, as the dataclass's own __init__ would (frozen
    # classes set their fields with object.__setattr__ too), without the
    # keyword dict and call: that halves the cost of a parse. The classes
    # have no __post_init__ to miss.
    obj: Any = _new_object(plan.cls)
    seen = 0
    key = ""
    try:
        for key, name, exact, dec, optional in plan.decode:
            x = v.get(key, _ABSENT)
            if x is _ABSENT:
                if optional:
                    _set_field(obj, name, None)
                    continue
                raise _Fail("missing")
            seen += 1
            # the common case, a primitive of the right type, costs no call
            _set_field(obj, name, x if type(x) is exact else dec(x))
    except _Fail as e:
        e.parts.append("." + key)
        raise
    if seen != len(v):
        extra = next(k for k in v if k not in plan.keys)
        raise _Fail("unknown key", "." + extra)
    if plan.schema is not None and v["schema"] != plan.schema:
        raise _Fail(f"expected {plan.schema!r}, got {v['schema']!r}", ".schema")
    return obj


_new_object = object.__new__
_set_field = object.__setattr__
_ABSENT = object()


def _class_encoder(cls: type) -> _Encoder:
    plan: list[_Plan] = []

    def enc(obj: Any) -> dict[str, Any]:
        if not plan:
            plan.append(_plan(cls))
        return _encode_object(plan[0], obj)

    return enc


def _encode_object(plan: _Plan, obj: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for (key, enc, optional), x in zip(plan.encode, plan.getter(obj)):
        if x is None:
            if not optional:
                out[key] = None
        else:
            out[key] = x if enc is None else enc(x)
    return out


# ---- the public functions -------------------------------------------------


def parse(doc: dict[str, Any]) -> Document:
    """The typed document for ``doc`` (``json.loads`` of the CLI's output),
    by its ``schema``; raises :class:`SchemaError` naming the JSON path of
    the first problem."""
    if type(doc) is not dict:
        raise _expected("object", doc).to_schema_error()
    schema = doc.get("schema", _ABSENT)
    if schema is _ABSENT:
        raise SchemaError("$.schema", "missing")
    cls = SCHEMAS.get(schema) if type(schema) is str else None
    if cls is None:
        raise SchemaError("$.schema", f"unknown schema {schema!r} (known: {', '.join(SCHEMAS)})")
    return from_dict(cls, doc)


_T = typing.TypeVar("_T")


def from_dict(cls: type[_T], data: Any) -> _T:
    """``data`` read as one object of ``cls`` (any class of this module, a
    nested one too), as strictly as :func:`parse`."""
    if not (isinstance(cls, type) and is_dataclass(cls)):
        raise TypeError(f"{cls!r} is not a remat result class")
    try:
        return typing.cast(_T, _decode_object(_plan(cls), data))
    except _Fail as e:
        raise e.to_schema_error() from None


def to_dict(obj: Any) -> dict[str, Any]:
    """The JSON value of ``obj`` (any class of this module): plain dicts,
    lists and scalars with the JSON keys, in the CLI's order, absent keys
    left out; ``to_dict(parse(d)) == d``."""
    if not is_dataclass(obj) or isinstance(obj, type):
        raise TypeError(f"expected a remat result object, got {type(obj).__name__}")
    return _encode_object(_plan(type(obj)), obj)


# ---- DataFrames -----------------------------------------------------------


def _pandas() -> Any:
    try:
        # by name, so that type checkers need no pandas stubs for this module
        pandas = importlib.import_module("pandas")
    except ImportError:
        raise ImportError(
            "to_pandas() needs pandas, which remat does not require: pip install pandas"
        ) from None
    return pandas


def _flatten(row: dict[str, Any], prefix: str, out: dict[str, Any]) -> dict[str, Any]:
    """Nested objects become dotted columns; arrays stay as they are."""
    for k, v in row.items():
        if type(v) is dict:
            _flatten(v, f"{prefix}{k}.", out)
        else:
            out[prefix + k] = v
    return out


def _class_columns(cls: type, prefix: str = "") -> list[str]:
    """The dotted columns of a class's rows, for a frame with no rows (a
    map's columns depend on its keys, so it has none then)."""
    hints = typing.get_type_hints(cls)
    cols: list[str] = []
    for f in fields(cls):
        tp = hints[f.name]
        inner = [a for a in typing.get_args(tp) if a is not type(None)]
        if typing.get_origin(tp) in (Union, types.UnionType) and len(inner) == 1:
            tp = inner[0]
        if isinstance(tp, type) and is_dataclass(tp):
            cols += _class_columns(tp, f"{prefix}{_json_key(f)}.")
        elif typing.get_origin(tp) is not dict:
            cols.append(prefix + _json_key(f))
    return cols


def _rows_frame(rows: list[dict[str, Any]], empty_columns: list[str]) -> Any:
    """A DataFrame of JSON rows, nested objects flattened (see _flatten);
    ``empty_columns`` name the columns when there is no row."""
    pd = _pandas()
    if not rows:
        return pd.DataFrame(columns=empty_columns)
    return pd.DataFrame([_flatten(r, "", {}) for r in rows])


def _class_frame(items: list[Any], cls: type) -> Any:
    return _rows_frame([to_dict(x) for x in items], _class_columns(cls))


def _result_frame(
    layers: list[LayerRow] | None,
    profiles: list[Profile] | None,
    names: list[NameRow] | None,
    stages: list[Stage] | None,
    kind: str,
) -> Any:
    """One table kind of an analysis or a table as a DataFrame."""
    if kind not in _TABLE_KINDS:
        raise ValueError(f"unknown table kind {kind!r}: one of {', '.join(_TABLE_KINDS)}")
    if kind == "tensors":
        # every profile's tensors in one frame, each row naming its profile
        rows = [
            {"profile": i, "kind": p.kind, **to_dict(t)}
            for i, p in enumerate(profiles or [])
            for t in p.tensors
        ]
        return _rows_frame(rows, ["profile", "kind", *_class_columns(TensorRow)])
    items, cls = {
        "layers": (layers, LayerRow),
        "names": (names, NameRow),
        "stages": (stages, Stage),
    }[kind]
    return _class_frame(items or [], cls)


def _solution_frame(s: Solution, kind: str) -> Any:
    """One array of a solution as a DataFrame (see Solution.to_pandas)."""
    arrays = {
        "frontier": s.frontier,
        "presets": s.presets,
        "largest_batch": s.largest_batch,
        "explain": s.explain,
    }
    if kind not in arrays:
        raise ValueError(f"unknown solution kind {kind!r}: one of {', '.join(arrays)}")
    items = arrays[kind]
    if items is None:
        why = (
            "run solve with --frontier"
            if kind in ("frontier", "presets")
            else "no placement was found"
        )
        raise ValueError(f"this solution has no {kind}: {why}")
    if kind != "explain":
        cls = {"frontier": FrontierPoint, "presets": PresetPoint, "largest_batch": LargestBatch}[
            kind
        ]
        return _class_frame(items, cls)
    # one row per alternative, led by its name's own fields
    own = ["name", "placement", "saved_bytes", "offloaded_bytes", "recompute_flops"]
    rows = [
        {**{k: getattr(e, k) for k in own}, "alternative": to_dict(a)}
        for e in typing.cast(list[Explanation], items)
        for a in e.alternatives
    ]
    return _rows_frame(rows, own + _class_columns(Alternative, "alternative."))
