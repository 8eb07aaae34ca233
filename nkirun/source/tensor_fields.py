"""The fields of one tensor declaration (`buffer`, `shape`, `dtype`, `file`/`fill`/`data`,
`output`) read and checked for `builder.Builder`, each problem appended to `diags`."""
from __future__ import annotations

import re

import numpy as np

from nkirun.diagnostics import error
from nkirun.hw.alu import parse_scalar
from nkirun.ir import BUFFERS

TENSOR_KEYS = ("buffer", "shape", "dtype", "file", "fill", "data", "output", "core")
NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
MAX_DIMS = 16  # NumPy allows 64 (32 before 2.0); instructions add a few axes of their own
BUFFER_ALIASES = {"shared_hbm": "hbm", "private_hbm": "hbm"}


def buffer_of(diags: list, name, buffer, vloc):
    """`buffer:` as hbm/sbuf/psum (aliases and `nl.` accepted), or None if not given."""
    if buffer is None:
        return None
    b = BUFFER_ALIASES.get(str(buffer).removeprefix("nl."), str(buffer).removeprefix("nl."))
    if b not in BUFFERS:
        diags.append(error("E011", f"tensor `{name}`: unknown buffer {buffer!r}",
                                vloc("buffer"), hint="allowed: hbm, sbuf, psum"))
    return b


def shape_of(diags: list, name, shape, vloc):
    """`shape:` as a tuple, or None (not given, or reported)."""
    if shape is None:
        return None
    if not (isinstance(shape, list) and shape and all(
            isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in shape)):
        diags.append(error("E012", f"tensor `{name}`: shape must be a non-empty list "
                                f"of positive integers, got {shape!r}", vloc("shape")))
        return None
    if len(shape) > MAX_DIMS:
        diags.append(error(
            "E012", f"tensor `{name}`: a shape of {len(shape)} dimensions; at most "
            f"{MAX_DIMS} are supported", vloc("shape"),
            hint="NKI tiles have a partition dimension and a few free ones"))
        return None
    return tuple(shape)


def initial_value(diags: list, name, fields, shape, vloc) -> tuple:
    """(which of file/fill/data, its value) or (None, None)."""
    d = diags
    inits = [k for k in ("file", "fill", "data") if k in fields]
    if len(inits) > 1:
        d.append(error("E015", f"tensor `{name}` has {' and '.join(inits)}: give at most one "
                       "initial value", fields[inits[1]][1]))
        return None, None
    if not inits:
        return None, None
    init = inits[0]
    init_value = fields[init][0]
    if init == "file" and not (isinstance(init_value, str) and init_value
                               and "\0" not in init_value):
        d.append(error("E006", f"tensor `{name}`: `file` must be a path to a .npy file",
                       vloc("file")))
    elif init == "fill":
        v = parse_scalar(init_value)
        if v is None:
            d.append(error("E019", f"tensor `{name}`: fill must be a number, got "
                           f"{init_value!r}", vloc("fill"),
                           hint="numbers, or inf, -inf, nan, fp32.min, fp32.max"))
        init_value = v
    elif init == "data" and shape is not None:
        init_value = data_array(diags, name, init_value, shape, vloc("data"))
    return init, init_value


def empty_values(diags: list, name, fields: dict) -> dict:
    """Report each key written with no value (`shape:` with nothing after the colon,
    `shape: null`): E005 for buffer/shape/dtype, E006 for the others. Returns the
    fields without them, so no later rule sees a None."""
    kept = {}
    for k, f in fields.items():
        if f[0] is not None or k not in TENSOR_KEYS:
            kept[k] = f
            continue
        required = k in ("buffer", "shape", "dtype")
        what = {"buffer": "hbm, sbuf or psum", "shape": "a list such as [128, 512]",
                "dtype": "a dtype such as float32", "output": "true or false",
                "file": "a .npy path", "fill": "a number",
                "data": "a nested list of numbers"}.get(k, "a value")
        diags.append(error("E005" if required else "E006",
                                f"tensor `{name}`: `{k}` has no value", f[1],
                                hint=f"write {what} after `{k}:`"))
    return kept


def data_array(diags: list, name, value, shape, loc):
    if not isinstance(value, list):
        diags.append(error("E016", f"tensor `{name}`: data must be a nested list of "
                                f"shape {list(shape)}", loc))
        return None
    try:
        if _has_bool(value):  # np.array would silently read true/false as 1/0
            raise TypeError
        arr = np.array(value, dtype=np.float64)
    except (ValueError, TypeError, OverflowError):
        vals = [parse_scalar(v) for v in np.array(value, dtype=object).ravel()] \
            if _rectangular(value) else [None]
        if any(v is None for v in vals):
            diags.append(error("E016", f"tensor `{name}`: data must be a rectangular "
                                    "nested list of numbers", loc))
            return None
        arr = np.array(vals, dtype=np.float64).reshape(np.array(value, dtype=object).shape)
    if arr.shape != shape:
        diags.append(error("E016", f"tensor `{name}`: data has shape {list(arr.shape)}, "
                                f"declared {list(shape)}", loc))
        return None
    return arr


def _has_bool(value) -> bool:
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, bool):
            return True
        if isinstance(v, list):
            stack.extend(v)
    return False


def _rectangular(value) -> bool:
    try:
        np.array(value, dtype=object)
        return True
    except ValueError:
        return False
