"""tensor_tensor_scan's fast path; its definition is `tensor_tensor_scan.definition`
(tests/isa/test_fast_paths.py checks they agree bit for bit)."""
from __future__ import annotations

import numpy as np

from nkirun.hw import alu as ops


def scan(d0: np.ndarray, d1: np.ndarray, init: np.ndarray, op0: str, op1: str,
         reverse0: bool, reverse1: bool, valid: np.ndarray | None = None) -> np.ndarray:
    """(P, F) float32 operands, (P,) float32 initial -> (P, F) float32 scan.

    The recurrence is inherently sequential along F; each step works on all partitions at
    once, on contiguous rows of transposed (F, P) tiles, so that every step is two float32
    ufunc calls writing straight into the result row (out=), no temporaries.

    Which NaN comes out of an op on two NaNs is the first operand's in the page's NumPy loop
    (its column operands are strided, so NumPy runs its scalar loop), but NumPy's SIMD loop
    over contiguous rows may hand back the second one for add/multiply. So a result holding
    a NaN is recomputed with that rule applied explicitly (rare: the fast path stays).
    """
    out = _scan(d0, d1, init, op0, op1, reverse0, reverse1, valid, False)
    if np.isnan(out).any():
        out = _scan(d0, d1, init, op0, op1, reverse0, reverse1, valid, True)
    return out


def _first_nan(f, x: np.ndarray, y: np.ndarray, out: np.ndarray, quiet: bool) -> None:
    """out = f(x, y), where two NaN operands give x's NaN: quieted for arithmetic (an x86
    scalar op), as is for maximum/minimum (NumPy's scalar loop returns x itself)."""
    f(x, y, out=out)
    both = np.isnan(x) & np.isnan(y)
    if both.any():
        bits = np.broadcast_to(x, out.shape).view(np.uint32)
        if quiet:
            bits = bits | np.uint32(0x00400000)
        np.copyto(out, bits.view(np.float32), where=both)


BLOCK = 128  # free-axis elements transposed at a time (a (BLOCK, P) float32 tile: 64 KiB)


def _scan(d0, d1, init, op0, op1, reverse0, reverse1, valid, exact_nan: bool) -> np.ndarray:
    """The recurrence; returns (P, F) float32. See `scan`.

    The free axis is walked in blocks of BLOCK elements, each transposed into small (BLOCK, P)
    tiles that stay in cache. Transposing whole (P, F) arrays instead costs more than the
    scan's own arithmetic (NumPy walks the strided side one element at a time;
    docs/performance.md has the numbers).
    """
    f0, f1 = ops.OPS[op0].fn, ops.OPS[op1].fn
    if exact_nan:
        q0, q1 = (op not in ("maximum", "minimum") for op in (op0, op1))
        f0 = lambda x, y, out, f=f0, q=q0: _first_nan(f, x, y, out, q)  # noqa: E731
        f1 = lambda x, y, out, f=f1, q=q1: _first_nan(f, x, y, out, q)  # noqa: E731
    # the loop always calls f0(data0, previous) and f1(op0 result, data1): a reversed op
    # gets its operands swapped back here, outside the loop
    if reverse0:
        f0 = lambda x, y, out, f=f0: f(y, x, out=out)  # noqa: E731
    if reverse1:
        f1 = lambda x, y, out, f=f1: f(y, x, out=out)  # noqa: E731
    p, n = d0.shape
    out = np.empty((p, n), np.float32)
    a, c, r = (np.empty((BLOCK, p), np.float32) for _ in range(3))
    skip = None if valid is None else np.empty((BLOCK, p), bool)
    t = np.empty(p, np.float32)  # op0's result: never `out=` one of op1's operands, as NumPy
    # may then swap a commutative op's operands, which changes which NaN comes through
    prev = init
    for j in range(0, n, BLOCK):
        k = min(BLOCK, n - j)
        np.copyto(a[:k], d0[:, j:j + k].T)
        np.copyto(c[:k], d1[:, j:j + k].T)
        if skip is not None:
            np.logical_not(valid[:, j:j + k].T, out=skip[:k])
        for i, (ai, ci, o) in enumerate(zip(a[:k], c[:k], r[:k])):
            f0(ai, prev, out=t)  # out= by keyword: np.maximum deprecates a third
            f1(t, ci, out=o)  # positional argument
            if skip is not None:
                np.copyto(o, prev, where=skip[i])  # unselected: the running value passes over
            prev = o
        out[:, j:j + k] = r[:k].T
        prev = prev.copy()  # r is refilled by the next block
    return out
