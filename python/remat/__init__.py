"""remat: will a MaxText training step fit in accelerator memory, and which
rematerialization policy should it use? The analyzer, in Python.

    import remat
    r = remat.analyze(model_name="llama3-8b", topology="v6e-8", per_device_batch_size=2)
    r.verdict, r.peak_hbm_bytes, r.step_seconds
    remat.check(remat.from_maxtext(config)).pass_   # gate a launch script

The engine is remat's C library, in process (no copy of it here); the
results are the CLI's JSON documents (docs/json-output.md) as typed,
frozen dataclasses; bad input raises RematError with the CLI's line.
docs/python.md is the guide.
"""

import remat._core as _core

from ._api import (Analysis, Sweep, analyze, chart, check, compare, report, solve, sweep, table,
                   timeline)
from ._errors import RematError
from ._types import (AnalysisResult, CheckResult, Comparison, SchemaError, Solution, Table,
                     Timeline, parse, to_dict)
from .maxtext import settings_from_maxtext as from_maxtext

__version__ = _core.version

__all__ = [
    "Analysis", "AnalysisResult", "CheckResult", "Comparison", "RematError", "SchemaError",
    "Solution", "Sweep", "Table", "Timeline", "analyze", "chart", "check", "compare",
    "from_maxtext", "parse", "report", "solve", "sweep", "table", "timeline", "to_dict",
]
