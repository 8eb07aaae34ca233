"""iota (nki-reference.md §1.10) against tests/reference.py, and its rules."""
from __future__ import annotations

import numpy as np
import pytest

import reference as ref
from prog_helpers import assert_bits_equal, codes, out, reported_at, run_program, write_program
from nkirun.api import check_program, cost


def _run(tmp_path, shape, dtype, pattern, **kw):
    args = {"dst": "r", "pattern": [list(p) for p in pattern], **kw}
    return run_program(tmp_path, {"r": out(shape, dtype)}, [{"iota": args}])["r"]


@pytest.mark.parametrize("P", [1, 37, 128])
@pytest.mark.parametrize("free,pattern", [
    ((513,), [[1, 513]]),
    ((3, 7), [[-7, 3], [1, 7]]),
    ((30,), [[5, 6], [-2, 5]]),
    ((2, 3, 2, 5), [[100, 2], [-10, 3], [0, 2], [3, 5]]),
])
@pytest.mark.parametrize("dtype", ["int32", "float32", "bfloat16", "int8", "uint16"])
def test_matches_reference(tmp_path, P, free, pattern, dtype):
    for offset, cm in ((0, 0), (-50, 513), (7, -3)):
        got = _run(tmp_path, (P, *free), dtype, pattern, offset=offset, channel_multiplier=cm)
        assert_bits_equal(got, ref.iota((P, *free), pattern, offset, cm, dtype))


def test_defaults_and_flat_index(tmp_path):
    got = _run(tmp_path, (4, 6), "int32", [[1, 6]])
    np.testing.assert_array_equal(got, np.tile(np.arange(6), (4, 1)))
    got = _run(tmp_path, (4, 6), "uint32", [[1, 6]], channel_multiplier=6)
    np.testing.assert_array_equal(got, np.arange(24).reshape(4, 6))


def test_int32_computation_then_cast(tmp_path):
    """Exact int32 values; float32 rounds beyond 2^24 (RNE); small ints saturate."""
    big = 2**31 - 4
    got = _run(tmp_path, (1, 4), "int32", [[1, 4]], offset=big - 3)
    np.testing.assert_array_equal(got, [[big - 3, big - 2, big - 1, big]])
    got = _run(tmp_path, (1, 3), "float32", [[1, 3]], offset=2**24 + 1)
    assert_bits_equal(got, ref.iota((1, 3), [[1, 3]], 2**24 + 1, 0, "float32"))
    assert got[0, 0] == 2**24  # 2^24 + 1 rounds to even
    got = _run(tmp_path, (1, 4), "int8", [[100, 4]], offset=-150)
    np.testing.assert_array_equal(got, [[-128, -50, 50, 127]])
    got = _run(tmp_path, (1, 3), "uint8", [[-1, 3]])
    np.testing.assert_array_equal(got, [[0, 0, 0]])


@pytest.mark.parametrize("dtype", ["float16", "float8_e4m3", "float8_e5m2", "tfloat32"])
def test_low_precision_floats(tmp_path, dtype):
    got = _run(tmp_path, (37, 64), dtype, [[37, 64]], offset=-1000, channel_multiplier=1)
    assert_bits_equal(got, ref.iota((37, 64), [[37, 64]], -1000, 1, dtype))


def test_view_dst(tmp_path):
    tensors = {"r": {"buffer": "sbuf", "shape": [16, 10], "dtype": "int32", "fill": -1,
                     "output": True}}
    inst = {"iota": {"dst": "r[4:12, 1:10:3]", "pattern": [[1, 3]], "channel_multiplier": 10}}
    got = run_program(tmp_path, tensors, [inst])["r"]
    want = np.full((16, 10), -1, np.int32)
    want[4:12, 1:10:3] = np.arange(8)[:, None] * 10 + np.arange(3)
    np.testing.assert_array_equal(got, want)


# ---- rules ---------------------------------------------------------------------------------
def _prog(tmp_path, shape=(8, 16), buffer="sbuf", **over):
    args = {"dst": "r", "pattern": [[1, 16]], "offset": 0, "channel_multiplier": 16}
    args.update(over)
    return write_program(tmp_path, {"r": out(shape, "int32", buffer)}, [{"iota": args}])


@pytest.mark.parametrize("code,key,kw", [
    ("E160", "pattern", {"pattern": [[1, 1]] * 4 + [[1, 16]]}),
    ("E161", "pattern", {"pattern": [[1, -1], [1, 16]]}),
    ("E162", "pattern", {"pattern": [[1, 8]]}),
    ("E162", "pattern", {"pattern": [[1, 16], [1, 2]]}),
    ("E163", "offset", {"offset": -(2**31) - 1}),
    ("E163", "channel_multiplier", {"channel_multiplier": 2**31}),
    ("E163", "pattern", {"offset": 2**31 - 16}),
    ("E040", "dst", {"buffer": "psum"}),
    ("E040", "dst", {"buffer": "hbm"}),
    ("E024", "pattern", {"pattern": "[[1, 16]]"}),
    ("E024", "offset", {"offset": 1.5}),
])
def test_rule_reported_at_its_keyword(tmp_path, code, key, kw):
    path = _prog(tmp_path, **kw)
    _, diags = reported_at(path, code, key)
    assert codes(diags).count(code) == 1  # e.g. PSUM: E040 only, no extra E044


def test_valid_program(tmp_path):
    assert check_program(_prog(tmp_path)).diagnostics == []
    assert check_program(_prog(tmp_path, offset=2**31 - 1 - 7 * 16 - 15)).diagnostics == []


def test_cost_150_plus_n(tmp_path):
    slot = cost(_prog(tmp_path)).slots[0]
    assert (slot.engine, slot.cycles, slot.assumed) == ("gpsimd", 166, False)
