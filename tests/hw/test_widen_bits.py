"""hw/dtypes.py `widen_into` (speed.BF16_SHIFT: bfloat16 widened to float32 by shifting its
bits) against its plain twin `widen_into_plain` (NumPy's, i.e. ml_dtypes', cast): the same
float32 bits for every bfloat16 value, NaN payloads and signed zeros included, in every
layout a plan form reads (contiguous, strided, reversed, broadcast), and the plain cast
for the other types. A run with the switch off gives the same outputs as with it on."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from nkirun import speed
from nkirun.hw.dtypes import widen_into, widen_into_plain

ALL_BF16 = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(ml_dtypes.bfloat16)


def _both(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    fast = np.full(a.shape, 7.0, np.float32)  # (something to overwrite, not zeros)
    plain = np.full(a.shape, -3.0, np.float32)
    widen_into(fast, a)
    widen_into_plain(plain, a)
    return fast.view(np.uint32), plain.view(np.uint32)


def test_every_bfloat16_value_widens_to_the_same_bits():
    fast, plain = _both(ALL_BF16)
    assert np.array_equal(fast, plain)
    # and the plain twin is the exact widening: bfloat16's bits are float32's upper half
    assert np.array_equal(plain, ALL_BF16.view(np.uint16).astype(np.uint32) << 16)


@pytest.mark.parametrize("layout", ["contiguous", "rows", "columns", "reversed", "broadcast",
                                    "tile"])
def test_every_layout_a_plan_reads(layout):
    grid = ALL_BF16.reshape(256, 256)
    a = {"contiguous": grid,
         "rows": grid[::3, 5:200],
         "columns": grid.T,
         "reversed": grid[::-1, ::-2],
         "broadcast": np.broadcast_to(grid[7], (128, 256)),
         "tile": grid.reshape(128, 2, 256)[:, 1, 64:192]}[layout]
    fast, plain = _both(a)
    assert fast.shape == a.shape
    assert np.array_equal(fast, plain)


@pytest.mark.parametrize("name", ["float16", "float8_e4m3fn", "float8_e5m2", "float32",
                                  "float8_e4m3"])
def test_other_types_take_the_plain_cast(name):
    t = getattr(ml_dtypes, name, None) or np.dtype(name)
    a = np.arange(1 << 8, dtype=np.uint32).astype(np.uint8).view(np.uint8)
    a = (a.view(t) if np.dtype(t).itemsize == 1 else
         np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(t)
         if np.dtype(t).itemsize == 2 else
         np.random.default_rng(3).standard_normal(999).astype(t))
    fast, plain = _both(a)
    assert np.array_equal(fast, plain)


def test_switch_off_is_the_plain_cast(monkeypatch):
    monkeypatch.setattr(speed, "BF16_SHIFT", False)
    fast, plain = _both(ALL_BF16[::-1])
    assert np.array_equal(fast, plain)
