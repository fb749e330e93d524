"""How the Python front turns what a caller passes into a command line.

Every call of the API (analyze, check, compare, solve, timeline, table,
sweep) takes the run the same way, in any mix:

* keyword arguments, MaxText's keys: ``per_device_batch_size=2``;
* a dict of MaxText's keys (also what :func:`remat.from_maxtext` returns),
  read as a config file would be, so lists and nested values are fine;
* a path (``str`` or ``os.PathLike``) to a MaxText YAML config (its
  ``base_config`` chain is followed) or a JSON config;
* a pasted launch line, ``"python3 -m MaxText.train MaxText/configs/base.yml
  model_name=llama3-8b ..."``, or ``key=value`` words, as one string or a
  list of strings.

Invariants (the CLI's layering, docs/config.md): keyword arguments and
``key=value`` words are the command line's settings and win over the
config file (the dict or the path), which wins over the model preset.
Several dicts merge in order into one config document; a dict and a path
together are one config file too many (RematError, as the CLI says).
Nothing here reads a file or knows a key: the engine does both, so the
errors are the CLI's own lines.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping, Sequence
from typing import Any, Union

Source = Union[Mapping[str, Any], str, "os.PathLike[str]", Sequence[str]]

# The name a dict's config document goes by in error lines.
DICT_NAME = "<settings dict>"


def value_text(key: str, value: Any) -> str:
    """One keyword argument's value as the command line spells it."""
    kind = type(value)
    if kind is str:  # the common cases first: this runs for every setting of every call
        return str(value)
    if kind is int:
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value) if not isinstance(value, float) else repr(value)
    raise TypeError(
        f"{key}={value!r}: a keyword argument takes a str, int, float or bool; "
        "put lists and mappings in a settings dict"
    )


def _words(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError as e:  # an unclosed quote: say where, as the CLI would
        raise TypeError(f"cannot split the launch line: {e}") from None


def _is_path(text: str) -> bool:
    return not any(c.isspace() for c in text) and "=" not in text


def command_line(sources: tuple[Source, ...], settings: Mapping[str, Any]) -> tuple[list[str], tuple[str, bytes] | None]:
    """The words after the command, and the config document from dicts.

    Returns ``(words, config)``: ``config`` is ``(name, JSON text)`` when
    dicts were given, for the engine to read as the config file.
    """
    if not sources:  # keyword arguments alone: the fast path of a sweep-like loop
        return [f"{k}={value_text(k, v)}" for k, v in settings.items()], None
    words: list[str] = []
    doc: dict[str, Any] | None = None
    for src in sources:
        if isinstance(src, Mapping):
            doc = {**(doc or {}), **{str(k): v for k, v in src.items()}}
        elif isinstance(src, os.PathLike):
            words += ["--config", os.fspath(src)]
        elif isinstance(src, str):
            words += ["--config", src] if _is_path(src) else _words(src)
        elif isinstance(src, Sequence) and all(isinstance(w, str) for w in src):
            words += list(src)
        else:
            raise TypeError(
                f"a run is given as keyword arguments, a dict, a path, a launch line or a "
                f"list of str, not {type(src).__name__}"
            )
    words += [f"{k}={value_text(k, v)}" for k, v in settings.items()]
    config = None
    if doc is not None:
        config = (DICT_NAME, json.dumps(doc, default=_json_default).encode())
    return words, config


def _json_default(value: Any) -> Any:
    # MaxText's config objects hold tuples and other sequences; JSON has lists.
    if isinstance(value, tuple):
        return list(value)
    raise TypeError(f"a settings dict holds {type(value).__name__}, which JSON cannot write")
