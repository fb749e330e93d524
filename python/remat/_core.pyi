# Stubs of the extension module remat._core (python/ext/): private to the
# package, whose functions (remat/__init__.py) are the interface.
from typing import Any

version: str

ErrorTuple = tuple[str, str, str, int, int, str]  # status, source, path, line, column, text

class Run:
    peak_hbm_bytes: int
    budget_bytes: int
    usable_bytes: int
    fits: bool
    fits_with_margin: bool
    passes: bool
    verdict: str
    step_seconds: float
    mfu: float
    hfu: float
    recompute_flops: int
    model_flops: int
    num_devices: int
    layers_count: int
    model: str
    graph: str
    hardware: str
    remat_policy: str
    host_fits: bool
    safety_margin: float
    def html_summary(self) -> str: ...

def call(argv: list[str], config: tuple[str, bytes] | None, /
         ) -> tuple[int, bytes, str, ErrorTuple | None]: ...
def analyze(argv: list[str], config: tuple[str, bytes] | None, /
            ) -> tuple[Run | None, int, str, ErrorTuple | None]: ...
def time_analyze(argv: list[str], config: tuple[str, bytes] | None, n: int, /) -> float: ...
def sweep(base: list[str], config: tuple[str, bytes] | None, keys: list[str],
          values: list[list[str]], /) -> dict[str, list[Any]]: ...
