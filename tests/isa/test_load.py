"""nl.load (nki-reference.md §1.16): an HBM view copied into an SBUF tile of the same element
count, in row-major order; equal dtypes keep the bits, others convert through float32;
`mask=` keeps the masked-off dst elements. Compared with reference.dma."""
from __future__ import annotations

import numpy as np
import pytest

import matrix
import reference as ref
from prog_helpers import (NP_TYPES, assert_bits_equal, out, random_floats, reported_at, sbuf,
                          tmp, write_program)
from nkirun.api import run


def _values(rng, shape, dtype):
    if dtype in matrix.INTS:
        info = np.iinfo(NP_TYPES[dtype])
        return rng.integers(max(info.min, -2**20), min(info.max, 2**20), shape).astype(dtype)
    return ref.cast_to(random_floats(rng, shape), dtype)   # with NaN, +-inf, -0.0


def _load(tmp_path, x, dst_shape, dst_dtype, src="x", **kw):
    """x in HBM; t = load(src); y = t (stored back, the output)."""
    t = {"x": sbuf(x, buffer="hbm"), "t": tmp(dst_shape, dst_dtype),
         "y": out(dst_shape, dst_dtype, buffer="hbm")}
    return write_program(tmp_path, t, [{"load": {"dst": "t", "src": src, **kw}},
                                       {"store": {"dst": "y", "src": "t"}}])


@matrix.shapes
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float8_e4m3", "int32", "uint8"])
def test_same_dtype_copies_the_bits(tmp_path, P, free, dtype):
    x = _values(np.random.default_rng(P), (P, *free), dtype)
    got = run(_load(tmp_path, x, (P, *free), dtype))["y"]
    assert_bits_equal(got, ref.dma(x, (P, *free), dtype))


@pytest.mark.parametrize("src_dtype, dst_dtype", [
    ("float32", "bfloat16"), ("float32", "float8_e5m2"), ("float32", "int8"),
    ("bfloat16", "float32"), ("int16", "int8"), ("int32", "float16"), ("float16", "uint8")])
def test_other_dtypes_convert_through_float32(tmp_path, src_dtype, dst_dtype):
    x = _values(np.random.default_rng(3), (37, 3, 7), src_dtype)
    got = run(_load(tmp_path, x, (37, 3, 7), dst_dtype))["y"]
    assert_bits_equal(got, ref.dma(x, (37, 3, 7), dst_dtype))


def test_row_major_reshape_and_a_view_of_a_taller_hbm_tensor(tmp_path):
    """HBM has no 128-row limit: rows 128..255 of a (256, 6) tensor load into (128, 2, 3)."""
    x = random_floats(np.random.default_rng(4), (256, 6))
    got = run(_load(tmp_path, x, (128, 2, 3), "float32", src="x[128:256, :]"))["y"]
    assert_bits_equal(got, ref.dma(x[128:256], (128, 2, 3), "float32"))
    got = run(_load(tmp_path, x[:4], (8, 3), "float32"))["y"]
    assert_bits_equal(got, ref.dma(x[:4], (8, 3), "float32"))


def test_mask_keeps_the_masked_off_elements(tmp_path):
    x = np.arange(8 * 6, dtype=np.float32).reshape(8, 6)
    t0 = np.full((8, 6), -1, np.float32)
    path = write_program(tmp_path, {"x": sbuf(x, buffer="hbm"), "t": sbuf(t0, output=True)},
                         [{"load": {"dst": "t", "src": "x", "mask": "p >= 5 and f < 2"}}])
    want = t0.copy()
    sel = (np.arange(8)[:, None] >= 5) & (np.arange(6)[None, :] < 2)
    want[sel] = x[sel]
    assert_bits_equal(run(path)["t"], want)


@pytest.mark.parametrize("x_buffer, t_buffer, t_shape, code, key", [
    ("sbuf", "sbuf", (4, 6), "E040", "src"),      # src must be in HBM
    ("hbm", "psum", (4, 6), "E040", "dst"),       # dst must be in SBUF
    ("hbm", "sbuf", (4, 5), "E180", "src"),       # element counts differ
])
def test_rules_are_located(tmp_path, x_buffer, t_buffer, t_shape, code, key):
    x = np.ones((4, 6), np.float32)
    path = write_program(tmp_path, {"x": sbuf(x, buffer=x_buffer),
                                    "t": out(t_shape, "float32", buffer=t_buffer)},
                         [{"load": {"dst": "t", "src": "x"}}])
    reported_at(path, code, key, instruction=0, only=True)
