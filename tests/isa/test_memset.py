"""memset (nki-reference.md §1.11): Vector or GpSimd only; the value is cast to dst."""
from __future__ import annotations

import numpy as np
import pytest
from prog_helpers import codes, diagnostics, out, run_program, write_program

from nkirun.api import cost


@pytest.mark.parametrize("engine,ok", [("vector", True), ("gpsimd", True), ("unknown", True),
                                       ("tensor", False), ("scalar", False), ("dma", False)])
def test_engine_is_vector_or_gpsimd(tmp_path, engine, ok):
    diags = diagnostics(tmp_path, {"t": out((37, 5), "float32")},
                        [{"memset": {"dst": "t", "value": 1.5, "engine": engine}}])
    assert codes(diags) == ([] if ok else ["E025"])


def test_engine_runs_where_asked(tmp_path):
    path = write_program(tmp_path, {"t": out((4, 8), "float32")},
                         [{"memset": {"dst": "t", "value": 0.0, "engine": "gpsimd"}}])
    assert cost(path).slots[0].engine == "gpsimd"


@pytest.mark.parametrize("dtype,value,want", [("float32", -0.0, -0.0), ("int8", 300, 127),
                                              ("uint16", -3, 0), ("bfloat16", 1.00390625, 1.0)])
def test_value_is_cast_to_dst(tmp_path, dtype, value, want):
    got = run_program(tmp_path, {"t": out((37, 3, 5), dtype)},
                      [{"memset": {"dst": "t", "value": value}}])["t"]
    assert got.shape == (37, 3, 5)
    np.testing.assert_array_equal(got.astype(np.float32), np.full((37, 3, 5), want, np.float32))
    assert np.signbit(got.astype(np.float32)).all() == np.signbit(want)
