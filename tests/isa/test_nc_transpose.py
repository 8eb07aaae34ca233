"""nc_transpose: bit-exact (P, F) -> (F, P), engine rules, dtype rule and cost."""
import numpy as np
import pytest
from prog_helpers import (NP_TYPES, assert_bits_equal, codes, diagnostics, out, random_floats,
                          run_program, sbuf, tmp, write_program)

from nkirun.api import cost

# Tensors for SPEC.example (tests/isa/test_registry.py checks and runs it)
EXAMPLE_TENSORS = {
    "t": "{buffer: sbuf, shape: [128, 64], dtype: float32, fill: 1}",
    "tT": "{buffer: psum, shape: [64, 128], dtype: float32, output: true}",
}


def ref_transpose(x):
    p = x.shape[0]
    flat = x.reshape(p, -1)
    res = np.empty((flat.shape[1], p), x.dtype)
    for i in range(p):
        for j in range(flat.shape[1]):
            res[j, i] = flat[i, j]
    return res


@pytest.mark.parametrize("shape,dtype,engine,dst_buf", [
    ((1, 1), "float32", "tensor", "psum"),
    ((37, 13), "float32", "unknown", "psum"),
    ((128, 128), "float32", "tensor", "psum"),
    ((128, 4, 31), "bfloat16", "tensor", "psum"),
    ((37, 101), "float16", "tensor", "psum"),
    ((32, 32), "float32", "vector", "sbuf"),
    ((7, 3, 5), "float8_e4m3", "vector", "psum"),
    ((31, 17), "int32", "vector", "sbuf"),
])
def test_matrix(tmp_path, shape, dtype, engine, dst_buf):
    rng = np.random.default_rng(sum(shape))
    x = random_floats(rng, shape, special=not dtype.startswith("int")).astype(NP_TYPES[dtype])
    p, f = shape[0], int(np.prod(shape[1:]))
    got = run_program(tmp_path, {"x": sbuf(x), "y": out((f, p), dtype, dst_buf)},
                      [{"nc_transpose": {"dst": "y", "data": "x", "engine": engine}}])["y"]
    assert_bits_equal(got, ref_transpose(x))


def test_vector_reads_psum_and_mask(tmp_path):
    x = np.arange(20 * 9, dtype=np.float32).reshape(20, 9)
    prev = np.full((9, 20), -1.0, np.float32)
    got = run_program(tmp_path, {"x": sbuf(x, buffer="psum"), "y": sbuf(prev, output=True)},
                      [{"nc_transpose": {"dst": "y", "data": "x", "mask": "p < 4 and f >= 10"}}]
                      )["y"]
    want = prev.copy()
    want[:4, 10:] = x.T[:4, 10:]
    assert_bits_equal(got, want)


@pytest.mark.parametrize("x,y,args,code", [
    ((129, 4), (4, 129), {}, "E017"),  # partition > 128: a tensor rule
    ((64, 129), (129, 64), {}, "E260"),
    ((33, 8), (8, 33), {"engine": "vector"}, "E260"),
    ((8, 33), (33, 8), {"engine": "vector"}, "E260"),
    ((8, 16), (16, 8), {"y_buf": "sbuf", "engine": "tensor"}, "E261"),
    ((8, 16), (16, 8), {"x_buf": "psum", "engine": "tensor"}, "E261"),
    ((8, 16), (8, 16), {}, "E262"),
    ((8, 16), (16, 8), {"y_dtype": "bfloat16"}, "E263"),
])
def test_rejects(tmp_path, x, y, args, code):
    args = dict(args)
    t = {"x": tmp(x, "float32", args.pop("x_buf", "sbuf")) | {"fill": 1.0},
         "y": out(y, args.pop("y_dtype", "float32"), args.pop("y_buf", "psum"))}
    diags = diagnostics(tmp_path, t, [{"nc_transpose": {"dst": "y", "data": "x", **args}}])
    assert code in codes(diags), [(d.code, d.message) for d in diags]
    assert all(d.loc.line for d in diags)


@pytest.mark.parametrize("shape,engine,dst_buf,cycles", [
    ((128, 128), "tensor", "psum", 128),  # max(P, min(64, F))
    ((16, 128), "tensor", "psum", 64),
    ((16, 8), "tensor", "psum", 16),
    ((32, 32), "vector", "sbuf", 64),  # max(MIN_II, N)
    ((8, 32), "unknown", "sbuf", 64),
])
def test_cost(tmp_path, shape, engine, dst_buf, cycles):
    p, f = shape
    path = write_program(tmp_path, {"x": sbuf(np.ones(shape, np.float32)),
                                    "y": out((f, p), "float32", dst_buf)},
                         [{"nc_transpose": {"dst": "y", "data": "x", "engine": engine}}])
    slot = cost(path).slots[0]
    assert slot.cycles == cycles
    assert slot.engine == ("tensor" if engine == "tensor" else "vector")
