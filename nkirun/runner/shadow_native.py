"""The compiled comparison of `run --shadow` (runner/_shadow_native.c), when it was built.

The C module computes, in one pass per tile, what shadow_metrics computes with NumPy
passes: the abs/rel/ULP errors of one or two arrays against the shadow's values
(`errors`) and the counts and loss of one store (`store`), with the same definitions bit
for bit (tests/runner/test_shadow_native.py compares the two over raw bit patterns). It is
optional: `pip install` skips it where no C compiler is available, and then every number
comes from the NumPy definitions. NKIRUN_SHADOW_NUMPY=1 (or `Shadow.native = False`)
forces the NumPy path where the module exists.

Readings: an array is handed to C in its own storage type when C reads that type
(float32, bfloat16, float16, the two fp8 types through a 256-entry table of their values);
anything else (float64 values, integers, MX types) takes the NumPy path.
"""
from __future__ import annotations

import os

import ml_dtypes
import numpy as np

try:
    from nkirun.runner import _shadow_native as _c
except ImportError:  # not built (no compiler at install time): the NumPy path
    _c = None

# a probe that is the shadow's float32 values rounded to bfloat16: C rounds it on the fly
ROUND_BF16 = "round-bf16"
_F32, _BF16, _F16, _TABLE8, _ROUND = 0, 1, 2, 3, 4
_BF16_T = np.dtype(ml_dtypes.bfloat16)
_TABLES = {np.dtype(t): np.arange(256, dtype=np.uint8).view(t).astype(np.float32)
           for t in (ml_dtypes.float8_e4m3, ml_dtypes.float8_e5m2)}


def available() -> bool:
    """Whether the compiled module is there and not switched off (NKIRUN_SHADOW_NUMPY)."""
    return _c is not None and os.environ.get("NKIRUN_SHADOW_NUMPY", "") in ("", "0")


def backend() -> str:
    """Which comparison a shadow run uses by default: "native" (C) or "numpy"."""
    return "native" if available() else "numpy"


_KINDS = {np.dtype(np.float32): (_F32, None), _BF16_T: (_BF16, np.uint16),
          np.dtype(np.float16): (_F16, np.uint16),
          **{t: (_TABLE8, np.uint8) for t in _TABLES}}


def kind(a) -> tuple[int, np.ndarray, np.ndarray | None] | None:
    """(C's element kind, a flat contiguous array of a's bits, the fp8 table) or None when
    C does not read a's type."""
    if isinstance(a, str):
        return (_ROUND, None, None) if a == ROUND_BF16 else None
    a = np.asarray(a)
    k = _KINDS.get(a.dtype)
    if k is None:
        return None
    flat = (a if a.flags.c_contiguous else np.ascontiguousarray(a)).reshape(-1)
    return k[0], flat if k[1] is None else flat.view(k[1]), _TABLES.get(a.dtype)


def errors(xs: list, ref: np.ndarray, nmant: int, tiny: float):
    """[(abs, at, rel, ulp)] of each x in xs (one or two) against float32 ref, or None
    when C cannot read one of them (then the caller takes the NumPy path)."""
    kinds = [kind(x) for x in xs]
    if any(k is None for k in kinds) or not 1 <= len(xs) <= 2:
        return None
    if ref.dtype != np.float32 or not ref.flags.c_contiguous:
        ref = np.ascontiguousarray(ref, dtype=np.float32)
    ref = ref.reshape(-1)
    (k1, a1, t1), (k2, a2, t2) = kinds[0], kinds[1] if len(xs) == 2 else (-1, None, None)
    if t1 is not None and t2 is not None and t1 is not t2:
        return None  # (two different fp8 tables: never happens, one output dtype)
    e1, e2 = _c.errors(ref, a1, k1, a2, k2, t1 if t1 is not None else t2, nmant, tiny)
    return [e1] if e2 is None else [e1, e2]


def store(pre: np.ndarray, post: np.ndarray, limit: float):
    """(nan, overflow, zeros_post, zeros_pre, largest |post| (NaN if any), loss,
    saturated) of float32 values `pre` stored as `post`, or None when C cannot read it."""
    k = kind(post)
    if k is None or pre.dtype != np.float32 or pre.size != post.size:
        return None
    return _c.store(np.ascontiguousarray(pre).reshape(-1), k[1], k[0], k[2], 0, limit)


def store_bf16(pre: np.ndarray, limit: float = np.inf, out: np.ndarray | None = None):
    """pre (float32) rounded to bfloat16 as ml_dtypes rounds, and store()'s counts, in one
    pass; written into `out` (contiguous bfloat16, pre's size) when given."""
    post = np.empty(pre.shape, _BF16_T) if out is None else out
    counts = _c.store(np.ascontiguousarray(pre).reshape(-1), post.reshape(-1).view(np.uint16),
                      _BF16, None, 1, limit)
    return post, counts
