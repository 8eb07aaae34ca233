"""Casts of the shadow run (runner/shadow.py): what a store keeps, float32 <-> bfloat16 on
the bits where that beats ml_dtypes' casts, and the ULP count of a bfloat16 rounding read
from the bits it drops. Each has its plain definition beside it and a test that they agree
(tests/runner/test_shadow_bits.py). Little-endian only where a view depends on it."""
from __future__ import annotations

import ml_dtypes
import numpy as np

from nkirun.hw import dtypes as dt

BF16 = np.dtype(ml_dtypes.bfloat16)


def real_cast(v: np.ndarray, out_dtype, dst) -> np.ndarray:
    """What Machine.write stores for `v`: cast to `dtype=` (when it differs), then to dst."""
    if out_dtype is not None and out_dtype.np_type != dst.np_type:
        v = dt.cast(v, out_dtype)
    return dt.cast(v, dst)


def stored(v: np.ndarray, out_dtype, dst) -> tuple[np.ndarray, np.ndarray]:
    """(what Machine.write would store for v, the same as float32 values). ml_dtypes' own
    casts: with ml_dtypes >= 0.5 a contiguous float32 <-> bfloat16 astype is faster than
    rounding on the bits (measured, docs/performance.md), and it is the definition."""
    post = real_cast(v, out_dtype, dst)
    return post, as_f32(post)


def as_f32(a) -> np.ndarray:
    """a as float32 values. bfloat16: ml_dtypes' astype when a is contiguous (the fastest
    there), else by moving its bits (ml_dtypes' strided cast is ~4x slower than that)."""
    a = np.asarray(a)
    if a.dtype == BF16 and not a.flags.c_contiguous:
        wide = np.ascontiguousarray(a).view(np.uint16).astype(np.uint32)
        np.left_shift(wide, 16, out=wide)
        return wide.view(np.float32)
    return a.astype(np.float32, copy=False)


def rounds_on_bits(v: np.ndarray, out_dtype, dst) -> bool:
    """Whether storing v through `dtype=` out_dtype into dst is one float32 -> bfloat16
    rounding (what rounded_f32 does on the bits, and bf16_rounding_ulps measures)."""
    return v.dtype == np.float32 and dst.name == "bfloat16" and (
        out_dtype is None or out_dtype.name in ("float32", "bfloat16"))


def rounded_f32(v: np.ndarray, out_dtype, dst) -> np.ndarray:
    """What Machine.write stores for v (its `dtype=` cast, then dst's), as float32 values.
    float32 -> bfloat16 is rounded to nearest even on the bits (ml_dtypes' cast, bit for
    bit but for NaN payloads; about as fast as casting there and back, one array fewer)."""
    if rounds_on_bits(v, out_dtype, dst):
        bits = np.ascontiguousarray(v).view(np.uint32)
        out = np.right_shift(bits, np.uint32(16))  # (in place from here: one fresh array)
        out &= np.uint32(1)
        out += bits
        out += np.uint32(0x7FFF)
        out &= np.uint32(0xFFFF0000)
        r = out.view(np.float32)
        if np.isnan(v.max() if v.size else 0):  # NaN stays NaN (quiet), whatever its payload
            nan = np.isnan(v)
            out[nan] = (bits[nan] | np.uint32(0x00400000)) & np.uint32(0xFFFF0000)
        return r.reshape(v.shape)
    return as_f32(real_cast(v, out_dtype, dst))


def bf16_rounding_ulps(v32: np.ndarray, scratch: np.ndarray) -> float:
    """max over finite float32 v of |bfloat16(v) - v| / (bfloat16's spacing at |v|, at
    least its smallest subnormal step), read from the 16 bits the rounding drops.

    Why exact: those bits, L, are the distance from v down to v truncated, in units of
    float32's spacing at v, and bfloat16's spacing there is 2^16 of those units (the
    subnormal step too: 2^-133 = 2^16 * 2^-149). Round to nearest even moves v by L units
    down or 65536 - L up (a tie: 32768 either way), i.e. by |L as int16| units: the error
    in bfloat16 ULPs is |int16(L)| / 65536, which is also what the float32 division of
    errors() gives (a power-of-two ratio). `scratch`: an int32 array of v32.size.
    Requires v32 finite and never rounded up to infinity (the caller's abs error is finite).
    """
    if not v32.size:
        return 0.0
    low = np.left_shift(v32.reshape(-1).view(np.int32), 16, out=scratch)  # int16(L) * 2^16
    return max(int(low.max()), -int(low.min())) / float(1 << 32)


def plain_bf16_rounding_ulps(v32: np.ndarray) -> float:
    """bf16_rounding_ulps by its definition: round, subtract, divide by the spacing."""
    v = np.asarray(v32, np.float64).reshape(-1)
    if not v.size:
        return 0.0
    err = np.abs(v.astype(BF16).astype(np.float64) - v)
    exp = np.frexp(np.abs(v))[1].astype(np.float64)  # |v| = m * 2^exp, 0.5 <= m < 1
    spacing = np.maximum(np.exp2(exp - 1 - 7), 2.0 ** -133)
    return float((err / spacing).max())
