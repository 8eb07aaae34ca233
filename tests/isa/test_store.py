"""nl.store (nki-reference.md §1.16): an SBUF or PSUM tile copied into an HBM view of the same
element count, in row-major order; equal dtypes keep the bits, others convert through
float32; `mask=` (over the source tile) keeps the masked-off dst elements. Compared with
reference.dma."""
from __future__ import annotations

import numpy as np
import pytest

import matrix
import reference as ref
from prog_helpers import (NP_TYPES, assert_bits_equal, out, random_floats, reported_at, sbuf,
                          write_program)
from nkirun.api import run


def _values(rng, shape, dtype):
    if dtype in matrix.INTS:
        info = np.iinfo(NP_TYPES[dtype])
        return rng.integers(max(info.min, -2**20), min(info.max, 2**20), shape).astype(dtype)
    return ref.cast_to(random_floats(rng, shape), dtype)   # with NaN, +-inf, -0.0


def _store(tmp_path, t, dst_shape, dst_dtype, buffer="sbuf", dst="y", **kw):
    """t on chip (`buffer`); store(dst, t) into the HBM output y."""
    tensors = {"t": sbuf(t, buffer=buffer), "y": out(dst_shape, dst_dtype, buffer="hbm")}
    return write_program(tmp_path, tensors, [{"store": {"dst": dst, "src": "t", **kw}}])


@matrix.shapes
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float8_e5m2", "int16", "uint32"])
@pytest.mark.parametrize("buffer", ["sbuf", "psum"])
def test_same_dtype_copies_the_bits(tmp_path, P, free, dtype, buffer):
    t = _values(np.random.default_rng(P + len(free)), (P, *free), dtype)
    got = run(_store(tmp_path, t, (P, *free), dtype, buffer))["y"]
    assert_bits_equal(got, ref.dma(t, (P, *free), dtype))


@pytest.mark.parametrize("src_dtype, dst_dtype", [
    ("float32", "bfloat16"), ("float32", "float8_e4m3"), ("float32", "uint8"),
    ("float16", "float32"), ("int32", "int16"), ("bfloat16", "int32")])
def test_other_dtypes_convert_through_float32(tmp_path, src_dtype, dst_dtype):
    t = _values(np.random.default_rng(5), (128, 9), src_dtype)
    got = run(_store(tmp_path, t, (128, 9), dst_dtype))["y"]
    assert_bits_equal(got, ref.dma(t, (128, 9), dst_dtype))


def test_into_a_view_of_a_taller_hbm_tensor_keeps_the_rest(tmp_path):
    """HBM rows 100..227 of a (256, 6) tensor take a (128, 2, 3) tile, row-major; the other
    rows keep their contents."""
    rng = np.random.default_rng(6)
    t = random_floats(rng, (128, 2, 3))
    y0 = random_floats(rng, (256, 6), special=False)
    path = write_program(tmp_path, {"t": sbuf(t), "y": sbuf(y0, buffer="hbm", output=True)},
                         [{"store": {"dst": "y[100:228, :]", "src": "t"}}])
    want = y0.copy()
    want[100:228] = ref.dma(t, (128, 6), "float32")
    assert_bits_equal(run(path)["y"], want)


def test_mask_keeps_the_masked_off_elements(tmp_path):
    t = np.arange(8 * 6, dtype=np.float32).reshape(8, 6)
    y0 = np.full((8, 6), -1, np.float32)
    path = write_program(tmp_path, {"t": sbuf(t), "y": sbuf(y0, buffer="hbm", output=True)},
                         [{"store": {"dst": "y", "src": "t", "mask": "p < 3 and f >= 4"}}])
    want = y0.copy()
    want[:3, 4:] = t[:3, 4:]
    assert_bits_equal(run(path)["y"], want)


@pytest.mark.parametrize("t_buffer, y_buffer, y_shape, code, key", [
    ("hbm", "hbm", (4, 6), "E040", "src"),      # src must be on chip
    ("sbuf", "sbuf", (4, 6), "E040", "dst"),    # dst must be in HBM
    ("sbuf", "hbm", (6, 5), "E180", "src"),     # element counts differ
])
def test_rules_are_located(tmp_path, t_buffer, y_buffer, y_shape, code, key):
    path = write_program(tmp_path, {"t": sbuf(np.ones((4, 6), np.float32), buffer=t_buffer),
                                    "y": out(y_shape, "float32", buffer=y_buffer)},
                         [{"store": {"dst": "y", "src": "t"}}])
    reported_at(path, code, key, instruction=0, only=True)
