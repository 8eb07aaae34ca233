"""hw/dtypes.py `widen_into` (speed.BF16_SHIFT: bfloat16 widened to float32 by shifting its
bits) against its plain twin `widen_into_plain` (NumPy's, i.e. ml_dtypes', cast): the same
float32 bits for every bfloat16 value, NaN payloads and signed zeros included, in every
layout a plan form reads (contiguous, strided, reversed, broadcast), and the plain cast
for the other types; and `filler` (speed.FILL_BITS: a planned fill by the stored bits)
against `filler_plain`. Runs with the switches off: tests/kernel/test_call_forms.py,
tests/runner/test_plan_widen.py."""
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


FILL_VALUES = [0.0, -0.0, 1.5, -2.75, 448.0, 464.0, 65520.0, 3.0e38, np.inf, -np.inf, np.nan,
               1e-45, -1e-40, 7.0, -129.0, 300.0]
FILL_TYPES = [np.float32, ml_dtypes.bfloat16, np.float16, ml_dtypes.float8_e4m3fn,
              ml_dtypes.float8_e5m2, np.int32, np.int16, np.int8, np.uint8, np.uint16, bool]


@pytest.mark.parametrize("dtype", FILL_TYPES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("layout", ["contiguous", "strided", "column"])
def test_a_fill_by_the_bits_is_the_copy(dtype, layout):
    """hw/dtypes.py `filler` (speed.FILL_BITS) against `filler_plain` (NumPy's broadcast
    copy): the same bits in every element it sets, and none elsewhere, for the values a
    plan fills with (float32 and float64 ones, cast by the copy) and every storage type."""
    from nkirun.hw.dtypes import filler, filler_plain
    for v in FILL_VALUES:
        for value in (np.full((1,), v, np.float32), np.full((1,), v, np.float64),
                      np.zeros((), dtype)):
            base = np.arange(128 * 2 * 64).reshape(128, 2, 64).astype(dtype)
            a, b = base.copy(), base.copy()
            pick = {"contiguous": np.s_[...], "strided": np.s_[:, 1, ::3],
                    "column": np.s_[:, 0, 5]}[layout]
            with np.errstate(all="ignore"):
                filler(a[pick], value)()
                filler_plain(b[pick], value)()
            u = {1: np.uint8, 2: np.uint16, 4: np.uint32}[np.dtype(dtype).itemsize]
            assert np.array_equal(a.view(u), b.view(u)), (v, value.dtype)
