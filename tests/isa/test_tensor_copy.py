"""tensor_copy (nki-reference.md §1.5): bit-exact when the dtypes match (Vector/GpSimd and the
NC-v3 Scalar engine), through float32 otherwise and always on the NC-v2 Scalar engine."""
from __future__ import annotations

import numpy as np
import pytest

import matrix
import reference as ref
from prog_helpers import (assert_bits_equal, codes, diagnostics, out, random_floats, reported_at,
                          sbuf, write_program)
from nkirun.api import cost, run

F32 = np.float32


def _prog(tmp_path, x, dst_dtype, target="trn2", src_buffer="sbuf", **kw):
    t = {"x": sbuf(x, buffer=src_buffer), "y": out(x.shape, dst_dtype)}
    path = write_program(tmp_path, t, [{"tensor_copy": {"dst": "y", "src": "x", **kw}}])
    text = open(path).read().replace("version: 1", f"version: 1\ntarget: {target}")
    open(path, "w").write(text)
    return path


def _ints(dtype, shape, rng):
    info = np.iinfo(ref._INTS[dtype])
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(ref._INTS[dtype])


@matrix.shapes
@pytest.mark.parametrize("engine", ["vector", "gpsimd"])
def test_same_dtype_is_bit_exact(tmp_path, P, free, engine):
    rng = np.random.default_rng(P)
    x = random_floats(rng, (P,) + free)
    x.reshape(-1)[0] = np.frombuffer(np.uint32(0x7FC12345).tobytes(), F32)[0]  # NaN payload
    assert_bits_equal(run(_prog(tmp_path, x, "float32", engine=engine))["y"], x)
    xi = _ints("int32", (P,) + free, rng)
    assert_bits_equal(run(_prog(tmp_path, xi, "int32", engine=engine))["y"], xi)


@pytest.mark.parametrize("src,dst", [("float32", "bfloat16"), ("bfloat16", "float8_e4m3"),
                                     ("float16", "float32"), ("float32", "int8"),
                                     ("int32", "float32"), ("uint16", "int8"),
                                     ("float8_e5m2", "float16")])
def test_casts_through_float32(tmp_path, src, dst):
    rng = np.random.default_rng(1)
    if src in ref._INTS:
        x = _ints(src, (37, 3, 7), rng)
    else:
        x = ref.cast_to(random_floats(rng, (37, 3, 7)) * F32(40), src)
    got = run(_prog(tmp_path, x, dst))["y"]
    assert_bits_equal(got, ref.cast_to(x.astype(F32), dst))


def test_dtype_keyword(tmp_path):
    x = random_floats(np.random.default_rng(2), (16, 9))
    got = run(_prog(tmp_path, x, "float32", dtype="bfloat16"))["y"]
    assert_bits_equal(got, ref.cast_to(ref.cast_to(x, "bfloat16").astype(F32), "float32"))


def test_scalar_engine_nc_v2_goes_through_float32(tmp_path):
    x = np.array([[2**24 + 1, -(2**31), 7]], np.int32).repeat(4, 0)
    path = _prog(tmp_path, x, "int32", "trn1", engine="scalar")
    reported_at(path, "W240", "engine", only=True)
    assert run(path)["y"][0, 0] == 2**24  # 2^24 + 1 is not a float32
    assert_bits_equal(run(_prog(tmp_path, x, "int32", "trn2", engine="scalar"))["y"], x)


def test_psum_source_and_engines(tmp_path):
    x = random_floats(np.random.default_rng(3), (64, 100))
    path = _prog(tmp_path, x, "float32", src_buffer="psum")
    assert_bits_equal(run(path)["y"], x)
    # no engine named: the compiler's choice, the idle Scalar engine (schedule/placement.py;
    # NKIBench's bmm profile shows its PSUM copies on ScalarE)
    assert cost(path).slots[0].engine == "scalar"
    path = _prog(tmp_path, x, "float32", src_buffer="psum", engine="gpsimd")
    reported_at(path, "E044", "src", only=True)


def test_rules(tmp_path):
    d = diagnostics(tmp_path, {"x": sbuf(np.ones((4, 8), F32)), "y": out((4, 9), "float32")},
                    [{"tensor_copy": {"dst": "y", "src": "x"}}])
    assert codes(d) == ["E063"]
    path = _prog(tmp_path, np.ones((4, 8), F32), "float32", engine="tensor")
    reported_at(path, "E025", "engine", only=True)


@pytest.mark.parametrize("engine,n,want", [("vector", 300, 300), ("scalar", 300, 300),
                                           ("gpsimd", 5, 64)])
def test_cost(tmp_path, engine, n, want):
    slot = cost(_prog(tmp_path, np.ones((128, n), F32), "float32", engine=engine)).slots[0]
    assert (slot.engine, slot.cycles) == (engine, want)
