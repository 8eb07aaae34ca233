"""The kernels `nkirun check` finds in a project: the `[tool.nkirun]` table of its
`pyproject.toml` (docs/kernels.md, "Checking many kernels in CI"):

    [[tool.nkirun.kernels]]
    kernel = "kernels/rmsnorm.py::rmsnorm"     # relative to the pyproject.toml
    shape  = ["x=float32[128,512]", "w=float32[512]"]
    arg    = ["eps=1e-6"]                        # optional, as --arg
    input  = ["bias=data/bias.npy"]              # optional, as --input (relative paths too)
    grid   = "2"                                 # optional, as --grid
    lnc    = 2                                   # optional, as --lnc
    target = "trn1"                              # optional, as --target

A kernel needs its parameters' shapes to be traced, so a `.py` file in a folder is
checked only when the manifest lists it; programs (.yaml/.yml/.nkis) need nothing.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from nkirun.diagnostics import Loc, NkirunError, error
from nkirun.pipeline.front import KernelOptions

MANIFEST = "pyproject.toml"
_KEYS = {"kernel", "shape", "arg", "input", "grid", "lnc", "target"}


@dataclass(frozen=True)
class Entry:
    """One kernel a manifest lists, with its options and target."""
    spec: str  # PATH.py::FUNCTION, the path joined to the manifest's folder
    options: KernelOptions
    target: str | None = None


def read_manifest(path: str) -> list[Entry]:
    """The kernels `path` (a pyproject.toml) lists; [] without a [tool.nkirun] table.
    A malformed table is E001 at the manifest (each problem says which entry)."""
    import tomllib
    from nkirun import safeio
    why = safeio.not_regular(path)
    if why is not None:
        raise NkirunError(error("E001", f"{path} is {why}, not a pyproject.toml", Loc(path)))
    try:
        with open(path, "rb") as f:
            doc = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise NkirunError(error("E001", f"{path}: cannot read it as TOML: {e}", Loc(path)))
    table = doc.get("tool", {}).get("nkirun", {})
    kernels = table.get("kernels", []) if isinstance(table, dict) else None
    if not isinstance(kernels, list):
        raise _bad(path, "[tool.nkirun] kernels must be a list of tables ([[tool.nkirun."
                   "kernels]])")
    folder = os.path.dirname(path)
    return [_entry(path, folder, i, k) for i, k in enumerate(kernels)]


def _entry(path: str, folder: str, i: int, k) -> Entry:
    where = f"kernel {i + 1}"
    if not isinstance(k, dict) or not isinstance(k.get("kernel"), str):
        raise _bad(path, f"{where}: each entry needs `kernel = \"FILE.py::FUNCTION\"`")
    unknown = set(k) - _KEYS
    if unknown:
        raise _bad(path, f"{where}: unknown key(s) {', '.join(sorted(unknown))} (allowed: "
                   f"{', '.join(sorted(_KEYS))})")

    def words(key):
        v = k.get(key, [])
        v = [v] if isinstance(v, str) else v
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise _bad(path, f"{where}: `{key}` is a list of strings like the command "
                       f"line's --{key}")
        return tuple(v)
    inputs = tuple(_joined(folder, w) for w in words("input"))
    lnc = k.get("lnc")
    if lnc is not None and lnc not in (1, 2):
        raise _bad(path, f"{where}: lnc is 1 or 2")
    grid = k.get("grid")
    opts = KernelOptions(inputs, words("shape"), words("arg"),
                         None if grid is None else str(grid), lnc)
    return Entry(os.path.join(folder, k["kernel"]) if folder else k["kernel"], opts,
                 k.get("target"))


def _joined(folder: str, word: str) -> str:
    name, sep, p = word.partition("=")
    return f"{name}={os.path.join(folder, p)}" if sep and folder else word


def _bad(path: str, message: str) -> NkirunError:
    return NkirunError(error("E001", f"{path}: {message}", Loc(path),
                             hint="see docs/kernels.md, \"Checking many kernels in CI\""))
