"""max8's fast path; its definition is `max8.definition` (tests/isa/test_fast_paths.py)."""
from __future__ import annotations

import numpy as np

K = 8


def top8(x: np.ndarray) -> np.ndarray:
    """(P, N) float32 -> (P, 8) float32, largest first (NaN highest, -0.0 below +0.0).

    Ranks the values by an int32 key that orders float bit patterns like the numbers they
    hold, so ties are decided by value alone; argpartition finds the 8 largest in one pass,
    then only those 8 are sorted. The values are gathered from x (NaN payloads kept).
    """
    bits = x.view(np.int32)
    key = bits ^ ((bits >> 31) & np.int32(0x7FFFFFFF))  # negative floats: reverse their order
    nan = np.isnan(x)
    if nan.any():
        key[nan] = bits[nan] & np.int32(0x7FFFFFFF)  # any NaN above +inf (0x7F800000)
    n = x.shape[1]
    part = np.argpartition(key, n - K, axis=1)[:, n - K:]
    order = np.argsort(np.take_along_axis(key, part, axis=1), axis=1, kind="stable")[:, ::-1]
    return np.take_along_axis(x, np.take_along_axis(part, order, axis=1), axis=1)
