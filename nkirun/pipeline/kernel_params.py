"""A kernel's parameters as text: `--arg NAME=VALUE`, `--shape NAME=DTYPE[D0,...]`,
`--input NAME=PATH.npy[:DTYPE]` (only the header is read) and `--grid G[,G]` — the words
of the command line and of the `[tool.nkirun]` manifest (pipeline/manifest.py) alike.

A value that does not parse is an OptionError (the CLI's usage error, exit 2, naming the
option). A missing or unknown parameter is the kernel's KernelUsageError (also exit 2).
"""
from __future__ import annotations

import ast
import os
import re

from nkirun.diagnostics import Loc, NkirunError, error, warning

class OptionError(ValueError):
    """A kernel option's value that does not parse: `option` names it (`--arg`)."""

    def __init__(self, message: str, option: str):
        super().__init__(message)
        self.option = option

_MAX_DIGITS = 30  # digits of a --shape dimension beyond any byte count
_SHAPE = re.compile(r"^\s*([A-Za-z_]\w*)\s*=\s*([A-Za-z_][\w.]*)\s*\[([\d\s,]*)\]\s*$")


# ---- parameters ---------------------------------------------------------------------------
class _Word(str):
    """An --arg VALUE that is a bare (dotted) name, not a literal: only an Enum parameter
    takes it (`--arg norm=RMS_NORM` or `--arg norm=NormType.RMS_NORM`)."""


def _enum_args(func, values: dict) -> None:
    """--arg values for parameters whose default is an Enum member become members: by name
    (a bare or quoted word, the class prefix optional) or by value (`--arg norm=1`)."""
    import enum
    import inspect
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        params = {}
    for name, v in values.items():
        p = params.get(name)
        cls = type(p.default) if p is not None and isinstance(p.default, enum.Enum) else None
        if cls is None or isinstance(v, cls):
            if isinstance(v, _Word):
                raise OptionError(f"{name}={v}: VALUE must be a Python literal (int, "
                                  "float, bool, None, str in quotes, tuple, list, dict)",
                                  "--arg")
            continue
        try:
            values[name] = cls[v.rsplit(".", 1)[-1]] if isinstance(v, str) else cls(v)
        except (KeyError, ValueError, TypeError):
            members = ", ".join(m.name for m in cls)
            raise OptionError(f"{name}={v}: `{name}` is a {cls.__name__}; give one of "
                              f"{members} (or its value)", "--arg") from None


def _parse_args(values) -> dict:
    out = {}
    for v in values:
        name, sep, text = v.partition("=")
        if not sep or not name.strip().isidentifier():
            raise OptionError(f"{v!r}: expected NAME=VALUE", "--arg")
        try:
            out[name.strip()] = ast.literal_eval(text.strip())
        except (MemoryError, RecursionError):  # nested or signed past the parser's limits
            raise OptionError(f"{name.strip()}=...: VALUE ({len(text):,} characters) is "
                              "nested too deeply for a Python literal", "--arg") from None
        except (ValueError, SyntaxError):
            if all(w.isidentifier() for w in text.strip().split(".")):
                out[name.strip()] = _Word(text.strip())  # an Enum member's name, maybe
                continue
            raise OptionError(f"{v!r}: VALUE must be a Python literal (int, float, "
                              "bool, None, str in quotes, tuple, list, dict)",
                              "--arg") from None
    return out


def _parse_shapes(values) -> dict:
    from nkirun.source.kernel import consts
    from nkirun.source.kernel.trace import TensorArg
    out = {}
    for v in values:
        m = _SHAPE.match(v)
        # (a dimension too long for int() is beyond any byte count: the trace's E043 says so)
        dims = [int(x) if len(x.strip()) <= _MAX_DIGITS else 10 ** _MAX_DIGITS
                for x in m.group(3).split(",") if x.strip()] if m else []
        d = consts.to_dtype(m.group(2)) if m else None
        if not m or not dims or any(n <= 0 for n in dims) or d is None or d.nkirun is None:
            raise OptionError(f"{v!r}: expected NAME=DTYPE[D0,D1,...] such as "
                              "x=float32[128,512]", "--shape")
        out[m.group(1)] = TensorArg(tuple(dims), d.nkirun)
    return out


def _parse_inputs(values, notes: list | None = None) -> dict:
    """--input NAME=PATH.npy[:DTYPE] -> TensorArg per parameter; warnings go to `notes`."""
    from nkirun.source.kernel.trace import TensorArg
    out = {}
    for v in values:
        name, sep, path = v.partition("=")
        if not sep or not name.strip() or not path:
            raise OptionError(f"{v!r}: expected NAME=PATH.npy[:DTYPE]", "--input")
        path, want = _dtype_suffix(path)
        shape, dtype = _npy_header(name.strip(), path, want, notes)
        out[name.strip()] = TensorArg(shape, dtype, file=path)
    return out


def _dtype_suffix(path: str):
    """(path, NlDType or None): a trailing `:DTYPE` naming an NKI dtype is the dtype the
    file's values are in (np.save writes several ml_dtypes types with one header)."""
    from nkirun.source.kernel import consts
    head, sep, tail = path.rpartition(":")
    if not sep or not head or os.path.exists(path):
        return path, None
    d = consts.DTYPES.get(tail.strip())
    if d is None:
        if re.fullmatch(r"[A-Za-z_]\w*", tail.strip()) and not os.path.exists(path):
            raise OptionError(f"{path!r}: `{tail}` is no NKI dtype; after the file, "
                              ":DTYPE names the values' dtype (e.g. :float8_e8m0fnu)",
                              "--input")
        return path, None
    return head, d


# np.save writes every 1-byte ml_dtypes type but float8_e5m2 as raw bytes '|V1', and
# bfloat16 as '<V2': the header does not say which type the bytes are.
_RAW_DEFAULT = {1: "float8_e4m3", 2: "bfloat16"}


def _npy_header(name: str, path: str, want=None, notes: list | None = None):
    """(shape, nkirun DType) of an --input file; `want`: the `:DTYPE` suffix, if any."""
    from nkirun.hw import dtypes as dt
    from nkirun.runner.files import _read_header
    import numpy as np
    from nkirun import safeio
    loc = Loc(path)
    if "\0" in path:
        raise NkirunError(error("E070", f"--input {name}: {path!r} is not a valid path (it "
                                "contains a NUL character)", Loc()))
    why = safeio.not_regular(path)  # before opening: a FIFO's open() would block for ever
    if why is not None:
        raise NkirunError(error("E072", f"--input {name}: {path} is {why}, not a .npy file",
                                loc, hint="give the path of a regular .npy file (its header "
                                "gives the parameter's shape and dtype)"))
    try:
        with open(path, "rb") as f:
            if f.read(6) != b"\x93NUMPY":
                raise ValueError("not a .npy file (no NumPy header)")
            f.seek(0)
            shape, _, dtype, e5m2 = _read_header(f)
    except FileNotFoundError:
        raise NkirunError(error("E070", f"--input {name}: {path} not found", loc)) from None
    except (OSError, ValueError, EOFError) as e:
        raise NkirunError(error("E072", f"--input {name}: {path}: {e}", loc)) from None
    dtype = np.dtype(dtype)
    if e5m2:
        d = dt.DTYPES["float8_e5m2"]
    elif dtype.kind == "V":
        d = dt.DTYPES.get(_RAW_DEFAULT.get(dtype.itemsize, ""))
    elif dtype == np.bool_:
        d = dt.DTYPES["uint8"]  # nl.bool_ is stored as a byte (0 or 1)
    else:
        d = dt.from_numpy(dtype.newbyteorder("="))
    if d is None:
        like = dt.nki_stand_in(dtype)
        fix = (f"save it as {like}: np.save({path!r}, a.astype(np.{like})); " if like else "")
        raise NkirunError(error("E073", f"--input {name}: {path} has dtype {dtype}, not an "
                                "NKI dtype", loc, hint=fix + "allowed: " + ", ".join(dt.DTYPES)))
    if want is not None:
        d = _suffix_dtype(name, path, want, d, raw=dtype.kind == "V")
    elif dtype.kind == "V" and dtype.itemsize == 1 and notes is not None:
        notes.append(warning(
            "W601", f"--input {name}: {path} holds raw 1-byte values (descr {dtype.str!r}), "
            f"read as {d.name}; np.save writes float8_e4m3, float8_e4m3fn and "
            "float8_e8m0fnu arrays with this same header", loc,
            hint=f"name the dtype after the file: --input {name}={path}:float8_e8m0fnu "
                 f"(or :{d.name} to confirm)"))
    return tuple(shape) or (1,), d


def _suffix_dtype(name: str, path: str, want, got, raw: bool):
    """The dtype `:DTYPE` names, if the file's header can hold it (E073 otherwise): raw
    bytes of its size (an ml_dtypes array np.save wrote), its own dtype, or uint8 bits of
    float8_e8m0fnu (MX scales)."""
    d = want.nkirun
    loc = Loc(path)
    if d is None or d.packed != 1 and d.name != got.name:
        raise NkirunError(error("E073", f"--input {name}: {path}:{want}: nkirun does not "
                                f"load {want} files", loc))
    if d.name == got.name or (raw and d.itemsize == got.itemsize and not d.is_int) \
            or (d.name == "float8_e8m0fnu" and got.name == "uint8"):
        return d
    raise NkirunError(error(
        "E073", f"--input {name}: {path} holds "
        f"{f'{got.itemsize}-byte raw values' if raw else got.name}, not {want}", loc,
        hint=f"save the array as {want} (an ml_dtypes.{want} array with np.save), or "
             "drop the :DTYPE suffix"))


def _grid(grid, lnc) -> tuple:
    if grid:
        try:
            g = tuple(int(x) for x in str(grid).split(","))
        except ValueError:
            g = ()
        if not g or any(n <= 0 for n in g):
            raise OptionError(f"{grid!r}: expected positive ints such as 2 or 2,2", "--grid")
        return g
    return ()


