"""How Machine.write stores values: the casts (store_cast), and writes through a pattern
with zero steps (accepted for activation_reduce's dst only, checker/bind.py): the engine streams the elements in pattern order, so each storage
element ends up holding the last value sent to it. nki-library's qkv_cte relies on this
to give activation_reduce a one-column dst it never reads."""
from __future__ import annotations

import dataclasses

import numpy as np

from nkirun.hw import dtypes as dt


def last_streamed(r, values, mask):
    """(r without its zero-step dims, the values and mask written last along them)."""
    s = r.ap
    zero = [st == 0 and n > 1 for st, n in zip(s.byte_strides, s.shape)]
    keep = tuple(slice(n - 1, n) if z else slice(None) for z, n in zip(zero, s.shape))
    shape = tuple(1 if z else n for z, n in zip(zero, s.shape))

    def last(a):
        a = np.asarray(a)
        if a.size != r.free_size * r.partitions:
            a = np.broadcast_to(a, r.shape)
        return a.reshape(s.shape)[keep]

    ap = dataclasses.replace(s, shape=shape, overlapping=False)
    out = dataclasses.replace(r, shape=shape, ap=ap)
    return out, last(values), None if mask is None else last(mask)


def store_cast(values, to: dt.DType, out_dtype: dt.DType | None = None) -> np.ndarray:
    """`values` as Machine.write copies them into a `to` tensor: cast to the instruction's
    `dtype=` (out_dtype) and then to `to`, except where NumPy's own cast on the copy is
    nkirun's (the copy then casts; runner/plan.py's fast forms use this too)."""
    v = values if values.__class__ is np.ndarray else np.asarray(values)
    if out_dtype is not None and out_dtype.np_type != to.np_type:
        v = dt.cast(v, out_dtype)
    if not (v.dtype is to.np_type and to.name != "tfloat32") and \
            not _numpy_cast_is_ours(v.dtype, to):  # (the first test: the usual case)
        v = dt.cast(v, to)
    return v


def _numpy_cast_is_ours(src: np.dtype, dst: dt.DType) -> bool:
    """Whether NumPy's own cast of `src` values to dst's storage is nkirun's cast (dt.cast),
    so that write() can cast straight into the destination without a temporary: no cast at
    all, or float32 to a float type other than tfloat32 (both round to nearest even)."""
    if src == dst.np_type:
        return dst.name != "tfloat32"  # tfloat32 is float32 storage whose mantissa is rounded
    return src == np.float32 and dst.is_float and dst.name != "tfloat32"
