"""The command line for kernels: `nkirun run|check|cost|convert KERNEL.py::FUNCTION`
(docs/kernels.md). nkirun/cli.py hands a KERNEL argument to these functions.

Readings:
- Outputs of `run` go to DIR/out0.npy, out1.npy, ... (default DIR: out/<file stem>);
  the summary names each output's tensor (its `name=` where the kernel gave one).
- A missing or unknown parameter, a bad --arg/--shape/--grid: usage errors (exit 2). A
  missing kernel file, no such function, no or several @nki.jit functions: E600 (exit 1).
- --lnc 2 traces the kernel once per core of a two-core program (trn2/trn3; E632 on
  others); nl.program_id(0) is the core, nl.num_programs(0) is 2.
"""
from __future__ import annotations

import ast
import contextlib
import os
import re
import sys
from dataclasses import replace

import click

from nkirun.diagnostics import Loc, NkirunError, error, warning
from nkirun.source.kernel.loader import KernelUsageError, split_spec

_MAX_DIGITS = 30  # digits of a --shape dimension beyond any byte count
_SHAPE = re.compile(r"^\s*([A-Za-z_]\w*)\s*=\s*([A-Za-z_][\w.]*)\s*\[([\d\s,]*)\]\s*$")


def kernel_options(*, inputs: bool):
    """--arg, --shape, --grid, --lnc (and --input where the command has none), and
    --max-instructions (nkirun/limits.py), which applies to YAML and text programs too:
    the command runs within that budget."""
    def deco(f):
        f = _within_budget(f)
        opts = [
            click.option("--arg", "kernel_args", multiple=True, metavar="NAME=VALUE",
                         help="kernel parameter NAME (a Python literal), repeatable"),
            click.option("--shape", "kernel_shapes", multiple=True,
                         metavar="NAME=DTYPE[D0,...]",
                         help="kernel tensor parameter NAME by shape only, repeatable"),
            click.option("--grid", "grid", default=None, metavar="G[,G...]",
                         help="launch the kernel on an SPMD grid (nl.program_id)"),
            click.option("--lnc", "lnc", type=click.IntRange(1, 2), default=None,
                         help="logical NeuronCore size: 2 runs the kernel on two cores "
                              "(trn2/trn3)"),
            click.option("--max-instructions", "max_instructions", default=None,
                         type=click.IntRange(min=1), metavar="N",
                         help="the budget: instructions a kernel's trace may record and a "
                              "run or cost may execute, loop bodies once per trip "
                              "(default 10,000,000)"),
        ]
        if inputs:
            opts.append(click.option("--input", "inputs", multiple=True, metavar="NAME=PATH",
                                     help="kernel tensor parameter NAME from a .npy file "
                                          "(only its header is read), repeatable"))
        for o in reversed(opts):
            f = o(f)
        return f
    return deco


def _within_budget(f):
    """The command `f` run within its --max-instructions budget."""
    import functools

    @functools.wraps(f)
    def command(*args, max_instructions=None, **kwargs):
        from nkirun.limits import budget
        with budget(max_instructions):
            return f(*args, **kwargs)
    return command


def no_kernel_options(program, kernel_args=(), kernel_shapes=(), grid=None, lnc=None):
    """A usage error naming the kernel-only options given with a YAML/text program (check
    and cost pass their --input in `kernel_shapes`: it too is kernel-only there)."""
    given = [name for name, v in (("--arg", kernel_args), ("--shape/--input", kernel_shapes),
                                  ("--grid", grid), ("--lnc", lnc)) if v]
    if given:
        raise click.UsageError(f"{', '.join(given)} apply to Python kernels "
                               f"(KERNEL.py::FUNCTION), not to the program {program}")


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
                raise click.BadParameter(f"{name}={v}: VALUE must be a Python literal (int, "
                                         "float, bool, None, str in quotes, tuple, list, "
                                         "dict)", param_hint="--arg")
            continue
        try:
            values[name] = cls[v.rsplit(".", 1)[-1]] if isinstance(v, str) else cls(v)
        except (KeyError, ValueError, TypeError):
            members = ", ".join(m.name for m in cls)
            raise click.BadParameter(f"{name}={v}: `{name}` is a {cls.__name__}; give one of "
                                     f"{members} (or its value)", param_hint="--arg") from None


def _parse_args(values) -> dict:
    out = {}
    for v in values:
        name, sep, text = v.partition("=")
        if not sep or not name.strip().isidentifier():
            raise click.BadParameter(f"{v!r}: expected NAME=VALUE", param_hint="--arg")
        try:
            out[name.strip()] = ast.literal_eval(text.strip())
        except (MemoryError, RecursionError):  # nested or signed past the parser's limits
            raise click.BadParameter(f"{name.strip()}=...: VALUE ({len(text):,} characters) "
                                     "is nested too deeply for a Python literal",
                                     param_hint="--arg") from None
        except (ValueError, SyntaxError):
            if all(w.isidentifier() for w in text.strip().split(".")):
                out[name.strip()] = _Word(text.strip())  # an Enum member's name, maybe
                continue
            raise click.BadParameter(f"{v!r}: VALUE must be a Python literal (int, float, "
                                     "bool, None, str in quotes, tuple, list, dict)",
                                     param_hint="--arg") from None
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
            raise click.BadParameter(f"{v!r}: expected NAME=DTYPE[D0,D1,...] such as "
                                     "x=float32[128,512]", param_hint="--shape")
        out[m.group(1)] = TensorArg(tuple(dims), d.nkirun)
    return out


def _parse_inputs(values, notes: list | None = None) -> dict:
    """--input NAME=PATH.npy[:DTYPE] -> TensorArg per parameter; warnings go to `notes`."""
    from nkirun.source.kernel.trace import TensorArg
    out = {}
    for v in values:
        name, sep, path = v.partition("=")
        if not sep or not name.strip() or not path:
            raise click.BadParameter(f"{v!r}: expected NAME=PATH.npy[:DTYPE]",
                                     param_hint="--input")
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
            raise click.BadParameter(f"{path!r}: `{tail}` is no NKI dtype; after the file, "
                                     ":DTYPE names the values' dtype (e.g. "
                                     ":float8_e8m0fnu)", param_hint="--input")
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
    loc = Loc(path)
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
        raise NkirunError(error("E073", f"--input {name}: {path} has dtype {dtype}, not an "
                                "NKI dtype", loc, hint="allowed: " + ", ".join(dt.DTYPES)))
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
            raise click.BadParameter(f"{grid!r}: expected positive ints such as 2 or 2,2",
                                     param_hint="--grid")
        return g
    return ()


def trace_spec(spec, *, inputs=(), shapes=(), args=(), grid=None, lnc=None, target=None,
               max_hbm_bytes=None):
    """Import and trace `PATH.py[::FUNCTION]` with the command line's parameters."""
    from nkirun.hw.targets import DEFAULT_MAX_HBM_BYTES
    from nkirun.source.kernel.api import default_target
    from nkirun.source.kernel.loader import find_function, import_kernel_module, \
        kernel_exception
    from nkirun.source.kernel.modules import installed
    from nkirun.source.kernel.trace import check_names, trace
    path, func_name = split_spec(spec)
    notes: list = []  # warnings about the inputs (W601)
    values = {**_parse_inputs(inputs, notes), **_parse_shapes(shapes)}
    for name, v in _parse_args(args).items():
        if name in values:
            raise click.UsageError(f"parameter `{name}` is given twice")
        values[name] = v
    with installed(), contextlib.redirect_stdout(sys.stderr):
        try:
            module = import_kernel_module(path)
        except NkirunError:
            raise
        except Exception as exc:  # noqa: BLE001 - the kernel file's own error
            raise kernel_exception(exc) from None
        try:
            func = find_function(module, path, func_name)
        except KernelUsageError as e:
            raise NkirunError(error("E600", str(e), Loc(path))) from None
    from nkirun.source.kernel.modules import Kernel
    plain = func.func if isinstance(func, Kernel) else func
    _enum_args(getattr(plain, "__wrapped__", plain), values)
    try:
        check_names(plain, values)
    except KernelUsageError as e:
        raise click.UsageError(str(e)) from None
    try:
        traced = trace(func, values, target or default_target(), _grid(grid, lnc), lnc or 1,
                       max_hbm_bytes or DEFAULT_MAX_HBM_BYTES)
    except KernelUsageError as e:
        raise click.UsageError(str(e)) from None
    traced.diagnostics = notes + [_user_path(d, path) for d in traced.diagnostics]
    traced.program = replace(traced.program, path=path)  # as the user named it
    return traced


def _user_path(d, path):
    """Diagnostics in the kernel file name it as the user wrote it."""
    if d.loc.file and os.path.abspath(d.loc.file) == os.path.abspath(path) \
            and d.loc.file != path:
        return replace(d, loc=replace(d.loc, file=path))
    return d


def relocate(e: NkirunError, spec: str) -> NkirunError:
    path = split_spec(spec)[0]
    e.diagnostics = [_user_path(d, path) for d in e.diagnostics]
    return e
