"""Errors raised inside a kernel's Python while it is traced, located at the kernel's
own line (the first frame outside nkirun's `nki` modules)."""
from __future__ import annotations

import os
import sys
import types

from nkirun.diagnostics import Loc, NkirunError, error

SHIM_DIR = os.path.dirname(os.path.abspath(__file__))
# (code object, its file) -> Loc by instruction index; the file is part of the key because
# equal code objects compile from different files compare equal (co_filename is not compared)
_POSITIONS: dict = {}
_CO_POSITIONS: dict = {}  # the same key -> list(code.co_positions())


def kernel_frame(depth: int = 1):
    """The innermost frame that is not nkirun's own `nki` code (the kernel's call site)."""
    f = sys._getframe(depth)
    while f is not None:
        inside = _INSIDE.get(f.f_code)
        if inside is None:
            inside = _INSIDE[f.f_code] = _is_inside(f.f_code)
        if not inside:
            return f
        f = f.f_back
    return f


def _is_inside(code) -> bool:
    """Whether frames of `code` are nkirun's nki modules, or the import machinery they
    answer to (kernel_frame remembers it per code object, as frame_loc its positions)."""
    return code.co_filename.startswith(SHIM_DIR) or code.co_filename.startswith("<frozen")


_INSIDE: dict = {}  # code object -> _is_inside(code)


def frame_loc(f) -> Loc:
    """The position of the call frame `f` is executing (one shared Loc per call site)."""
    if f is None:
        return Loc()
    code = f.f_code
    key = (code, code.co_filename)
    table = _POSITIONS.get(key)
    if table is None:
        table = _POSITIONS[key] = [None] * (len(code.co_code) // 2 + 1)
    i = f.f_lasti // 2
    loc = table[i] if i < len(table) else None
    if loc is None:
        positions = _CO_POSITIONS.get(key)
        if positions is None:  # (once per code object: a long kernel has many call sites)
            positions = _CO_POSITIONS[key] = list(code.co_positions())
        line, _, col, _ = positions[i] if i < len(positions) else (f.f_lineno, 0, 0, 0)
        loc = Loc(code.co_filename, line or f.f_lineno, (col or 0) + 1)
        if i < len(table):
            table[i] = loc
    return loc


def call_loc(depth: int = 1) -> Loc:
    """`frame_loc(kernel_frame(depth))` as called from the same place, in one walk (every
    nki.isa call and nl.ndarray asks it): per code object its positions table (frame_loc's,
    which it fills), or None for nkirun's own code (tests/kernel/test_call_forms.py
    compares the two)."""
    f = sys._getframe(depth)
    while f is not None:
        code = f.f_code
        hit = _TABLES.get(id(code))
        if hit is None or hit[0] is not code:
            hit = _TABLES[id(code)] = (code, _table_of(code))
        table = hit[1]
        if table is not None:
            i = f.f_lasti // 2
            loc = table[i] if i < len(table) else None
            return loc if loc is not None else frame_loc(f)
        f = f.f_back
    return Loc()


def _table_of(code):
    """frame_loc's positions table of `code` (None for nkirun's own code)."""
    if _is_inside(code):
        return None
    return _POSITIONS.setdefault((code, code.co_filename), [None] * (len(code.co_code) // 2 + 1))


# id(code object) -> (the code object, kept alive so the id stays its own; _table_of(code))
_TABLES: dict = {}


def here() -> Loc:
    """The kernel's line that called into nkirun: frame_loc(kernel_frame()) of the caller,
    by call_loc's tables."""
    return call_loc(2)


class KernelError(NkirunError):
    """A located problem in how the kernel uses `nki` (exit 1)."""


def kernel_error(code: str, message: str, hint: str | None = None,
                 loc: Loc | None = None) -> KernelError:
    return KernelError(error(code, message, loc or here(), hint=hint))


def unsupported(qualname: str, why: str = "") -> KernelError:
    if len(qualname) > 200 or not qualname.isprintable():  # (a name the kernel made up)
        qualname = repr(qualname[:200]) + ("..." if len(qualname) > 200 else "")
    return kernel_error("E601", f"{qualname} is not supported by nkirun"
                        + (f" ({why})" if why else ""),
                        hint="`nkirun ops` lists the nki.isa instructions nkirun provides; "
                             "docs/kernels.md (in nkirun's repository) the rest of its nki API")


def importing() -> bool:
    """Whether the caller's caller is a `from nki import NAME` statement (its IMPORT_FROM,
    or the import machinery's fromlist check before it), not `nki.NAME` in an expression."""
    f = sys._getframe(2)
    code = f.f_code
    return (code.co_filename.startswith("<frozen")
            or code.co_code[f.f_lasti] == _IMPORT_FROM)


_IMPORT_FROM = __import__("dis").opmap["IMPORT_FROM"]


class Unprovided:
    """What `from nki import NAME` binds for a NAME nkirun does not provide
    (`from neuronxcc.nki import trace` heads many machine-written kernels and is never
    used): Python and the Neuron compiler accept an unused import, so nkirun does too,
    and refuses (E601) the first use, located where it is used."""

    __slots__ = ("_qualname", "_line")

    def __init__(self, qualname: str, line: int):
        self._qualname, self._line = qualname, line

    def _refuse(self, *_args, **_kwargs):
        raise unsupported(self._qualname, f"imported at line {self._line}")

    __call__ = __getitem__ = __iter__ = __enter__ = _refuse

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        self._refuse()

    def __repr__(self) -> str:
        return f"<{self._qualname}: not provided by nkirun>"


class NkiPackage(types.ModuleType):
    """An nki module of nkirun's: a name it lacks is E601 at its first use, not at import."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if importing():  # an import is not a use (Unprovided)
            return Unprovided(f"{self.__name__}.{name}", here().line)
        raise unsupported(f"{self.__name__}.{name}")
