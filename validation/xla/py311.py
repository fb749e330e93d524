"""Run MaxText's sources on Python 3.11.

MaxText declares Python 3.12, but on its training path only two things are
3.12-only: PEP 695 `type NAME = EXPR` aliases (kernels/mhc) and
`typing.override` (post-training hooks). This module installs, on Python
< 3.12 only, an import hook that compiles `maxtext` modules with each
top-level `type NAME = EXPR` statement read as `NAME = EXPR` (the alias is
only ever used in annotations there), and gives `typing` an `override`
decorator when it has none. The user's checkout or package is not modified.
A generic alias (`type X[T] = ...`) is not rewritten: it stays a SyntaxError
that names the file, rather than a silently different program.
"""

import importlib.abc
import importlib.machinery
import importlib.util
import re
import sys
import typing

_ALIAS = re.compile(r"^type\s+([A-Za-z_][A-Za-z_0-9]*)\s*=", re.MULTILINE)


class _AliasLoader(importlib.machinery.SourceFileLoader):
  """A source loader that reads `type NAME = ...` as `NAME = ...`."""

  def source_to_code(self, data, path, *, _optimize=-1):  # pylint: disable=arguments-differ
    text = importlib.util.decode_source(data)
    if "type " in text:
      text = _ALIAS.sub(r"\1 =", text)
    return compile(text, path, "exec", dont_inherit=True, optimize=_optimize)

  def get_code(self, fullname):
    # Bypass the bytecode cache: a cached .pyc from Python 3.12 would be
    # right, but one written by this hook must not be mistaken for the
    # file's own compile under another interpreter.
    path = self.get_filename(fullname)
    return self.source_to_code(self.get_data(path), path)


class _AliasFinder(importlib.abc.MetaPathFinder):
  """Finds `maxtext.*` modules as the path finder does, with _AliasLoader."""

  def find_spec(self, fullname, path, target=None):
    if fullname != "maxtext" and not fullname.startswith("maxtext."):
      return None
    spec = importlib.machinery.PathFinder.find_spec(fullname, path)
    if spec is None or not isinstance(spec.loader, importlib.machinery.SourceFileLoader):
      return spec
    spec.loader = _AliasLoader(spec.loader.name, spec.loader.path)
    return spec


def install():
  """Installs the hook and the `typing.override` shim where Python needs them."""
  if sys.version_info >= (3, 12):
    return
  if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
    sys.meta_path.insert(0, _AliasFinder())
  if not hasattr(typing, "override"):
    typing.override = lambda f: f
