"""remat's errors as Python exceptions.

Invariant: every error the engine reports (bad input, a usage error, no
memory, a broken invariant) reaches Python as one RematError carrying the
CLI's own line and the parts it names; a TypeError is a misuse of this
package's functions (a value no setting can take), raised before the
engine runs.
"""

from __future__ import annotations


class RematError(ValueError):
    """An error remat reported: the one line the CLI prints, and its parts.

    Attributes:
        message: the CLI's line, without the leading ``remat: ``.
        status: the kind, as ``remat_status_name`` spells it: ``"config"``,
            ``"schema"``, ``"syntax"``, ``"io"``, ``"policy"``, ``"graph"``,
            ``"overflow"``, ``"usage"``, ``"nomem"`` or ``"internal"``.
        source: the file, ``"<command line>"``, ``"<settings dict>"`` or a
            built-in's name the error is in ("" when none).
        path: the key, ``key=value`` setting or JSON path ("" when none).
        key: the config key the error names, when it names one, else None.
        line, column: 1-based place in the file (0 when unknown).
        exit_code: what the CLI would exit with (2 bad input, 3 internal).
        messages: everything the CLI would have written on standard error.
    """

    def __init__(self, message: str, *, status: str = "usage", source: str = "",
                 path: str = "", line: int = 0, column: int = 0, exit_code: int = 2,
                 messages: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.source = source
        self.path = path
        self.key = _key_of(path)
        self.line = line
        self.column = column
        self.exit_code = exit_code
        self.messages = messages


def _key_of(path: str) -> str | None:
    """The config key a path names: ``bogus=1`` and ``$.bogus`` name bogus."""
    if not path:
        return None
    head = path[2:] if path.startswith("$.") else path
    head = head.split("=", 1)[0].split(".", 1)[0].split("[", 1)[0]
    return head or None


def _last_error_line(messages: str) -> str:
    """The CLI's error line: the last line that is not a note."""
    lines = [ln for ln in messages.splitlines() if ln and not ln.startswith("remat: note:")]
    line = lines[-1] if lines else "remat: failed with no message"
    return line[len("remat: "):] if line.startswith("remat: ") else line


def from_engine(rc: int, messages: str,
                error: tuple[str, str, str, int, int, str] | None) -> RematError:
    """The exception for a run that exited with @p rc (2 or 3)."""
    message = _last_error_line(messages)
    if error is None:
        return RematError(message, exit_code=rc, messages=messages)
    status, source, path, line, column, _text = error
    return RematError(message, status=status, source=source, path=path, line=line,
                      column=column, exit_code=rc, messages=messages)
