"""tensor_reduce (nki-reference.md §1.4) against a loop reference written from the docs: the
last free axes folded in float32, element by element; bitwise folds on integer bits."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import reference as ref
from prog_helpers import (assert_bits_equal, codes, out, random_floats, reported_at, run_program,
                          sbuf, write_program)
from nkirun.api import check_program, cost

# Tensors for SPEC.example (tests/isa/test_registry.py checks and runs it)
EXAMPLE_TENSORS = {
    "scores": "{buffer: sbuf, shape: [128, 512], dtype: float32, fill: 1}",
    "rowmax": "{buffer: sbuf, shape: [128, 1], dtype: float32, output: true}",
}

F32 = np.float32
STEP = {"add": lambda a, b: a + b, "subtract": lambda a, b: a - b,
        "multiply": lambda a, b: a * b, "maximum": np.maximum, "minimum": np.minimum}


def ref_reduce(x, op, first_axis, negate=False, out_dtype="float32"):
    """Fold axes first_axis.. of x one element at a time (float32 accumulator per row)."""
    lead = x.shape[:first_axis]
    rows = x.reshape(lead + (-1,))
    if op.startswith("bitwise"):
        f = {"bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
             "bitwise_xor": np.bitwise_xor}[op]
        return functools.reduce(f, [rows[..., k] for k in range(rows.shape[-1])])
    rows = rows.astype(F32)
    if op.startswith("logical"):
        nz = (rows != 0).sum(axis=-1)
        acc = {"logical_and": nz == rows.shape[-1], "logical_or": nz > 0,
               "logical_xor": nz % 2 == 1}[op].astype(F32)
    else:
        acc = rows[..., 0].copy()
        with np.errstate(all="ignore"):
            for k in range(1, rows.shape[-1]):
                acc = STEP[op](acc, rows[..., k]).astype(F32)
    if negate:
        acc = -acc
    return ref.cast_to(acc, out_dtype)


def _red(tmp_path, x, op, axis, dst_shape, dst_dtype="float32", **kw):
    t = {"x": sbuf(x), "y": out(dst_shape, dst_dtype)}
    return run_program(tmp_path, t, [{"tensor_reduce": {"dst": "y", "op": op, "data": "x",
                                                        "axis": axis, **kw}}])["y"]


@pytest.mark.parametrize("P", [1, 37, 128])
@pytest.mark.parametrize("free,axis,first", [((5,), 1, 1), ((129,), -1, 1), ((3, 7), [1, 2], 1),
                                             ((3, 7), 2, 2), ((3, 7), [-1, -2], 1)])
@pytest.mark.parametrize("op", ["add", "maximum", "multiply"])
def test_matrix_bit_exact(tmp_path, P, free, axis, first, op):
    rng = np.random.default_rng(P + len(free) + first)
    x = random_floats(rng, (P,) + free, special=(op != "multiply"))
    want = ref_reduce(x, op, first)
    got = _red(tmp_path, x, op, axis, want.shape if want.ndim > 1 else (P, 1))
    assert_bits_equal(got.reshape(want.shape), want)


@pytest.mark.parametrize("op", ["subtract", "minimum", "logical_and", "logical_or",
                                "logical_xor"])
def test_other_reducible_ops(tmp_path, op):
    rng = np.random.default_rng(9)
    x = random_floats(rng, (37, 3, 7))
    x[::3] = 0.0
    x[1::3, :, :4] = 0.0
    want = ref_reduce(x, op, 1)
    assert_bits_equal(_red(tmp_path, x, op, [1, 2], (37, 1)), want.reshape(37, 1))


def test_sum_is_sequential_not_pairwise(tmp_path):
    # 1 + 2^-24 * 300: a sequential float32 fold never moves off 1.0
    x = np.full((4, 301), 2.0**-24, F32)
    x[:, 0] = 1.0
    got = _red(tmp_path, x, "add", 1, (4, 1))
    assert_bits_equal(got, np.ones((4, 1), F32))
    assert np.add.reduce(x, axis=1)[0] != F32(1)  # NumPy's pairwise sum differs


def test_negate_keepdims_and_dtypes(tmp_path):
    rng = np.random.default_rng(2)
    x = ref.cast_to(random_floats(rng, (37, 3, 7), special=False), "bfloat16")
    want = ref_reduce(x, "add", 2, negate=True, out_dtype="bfloat16")
    got = _red(tmp_path, x, "add", 2, (37, 3, 1), "bfloat16", negate=True, keepdims=True)
    assert_bits_equal(got, want.reshape(37, 3, 1))
    got = _red(tmp_path, x, "maximum", [1, 2], (37, 1), "float8_e4m3", dtype="float16")
    inner = ref.cast_to(ref_reduce(x, "maximum", 1), "float16").astype(F32)
    assert_bits_equal(got, ref.cast_to(inner, "float8_e4m3").reshape(37, 1))


def test_nan_and_inf_rows(tmp_path):
    x = np.array([[1, np.nan, 3], [np.inf, -np.inf, 0], [-0.0, -0.0, -0.0]], F32)
    for op in ("add", "maximum", "minimum"):
        assert_bits_equal(_red(tmp_path, x, op, 1, (3, 1)), ref_reduce(x, op, 1).reshape(3, 1))


@pytest.mark.parametrize("dtype", ["int32", "uint8", "int16"])
@pytest.mark.parametrize("op", ["bitwise_and", "bitwise_or", "bitwise_xor"])
def test_bitwise(tmp_path, dtype, op):
    t = ref._INTS[dtype]
    info = np.iinfo(t)
    x = np.random.default_rng(4).integers(info.min, info.max, (37, 2, 9), endpoint=True).astype(t)
    want = ref_reduce(x, op, 2)
    assert_bits_equal(_red(tmp_path, x, op, -1, (37, 2), dtype), want)


def test_psum_input(tmp_path):
    x = random_floats(np.random.default_rng(5), (64, 100))
    t = {"x": sbuf(x, buffer="psum"), "y": out((64, 1), "float32", "psum")}
    got = run_program(tmp_path, t, [{"tensor_reduce": {"dst": "y", "op": "maximum", "data": "x",
                                                       "axis": 1}}])["y"]
    assert_bits_equal(got, ref_reduce(x, "maximum", 1).reshape(64, 1))


# ---- rules ------------------------------------------------------------------------------------
@pytest.mark.parametrize("xdtype,op,axis,dst,extra,code,key", [
    ("float32", "add", 0, (4, 1), {}, "E230", "axis"),
    ("float32", "add", [0, 1, 2], (4, 1), {}, "E230", "axis"),
    ("float32", "add", 1, (4, 7), {}, "E231", "axis"),  # not the last axis of (4, 3, 7)
    ("float32", "add", 3, (4, 1), {}, "E231", "axis"),
    ("float32", "add", [2, 2], (4, 3), {}, "E231", "axis"),
    ("float32", "add", 2, (4, 7), {}, "E232", "dst"),
    ("float32", "add", 2, (4, 3, 7), {"keepdims": True}, "E232", "dst"),
    ("float32", "bitwise_or", 2, (4, 3), {}, "E233", "data"),
    ("int32", "bitwise_or", 2, (4, 3), {"negate": True}, "E234", "negate"),
    ("float32", "divide", 2, (4, 3), {}, "E025", "op"),
    ("float32", "greater", 2, (4, 3), {}, "E025", "op"),
])
def test_rules(tmp_path, xdtype, op, axis, dst, extra, code, key):
    x = np.ones((4, 3, 7), ref._INTS.get(xdtype, F32))
    t = {"x": sbuf(x), "y": out(dst, "int32" if xdtype == "int32" else "float32")}
    path = write_program(tmp_path, t, [{"tensor_reduce": {"dst": "y", "op": op, "data": "x",
                                                          "axis": axis, **extra}}])
    d = check_program(path).diagnostics
    assert set(codes(d)) == {code}, d
    reported_at(path, code, key)


@pytest.mark.parametrize("dtype,op,want", [("float32", "add", 600), ("bfloat16", "add", 300),
                                           ("bfloat16", "maximum", 300),
                                           ("bfloat16", "multiply", 600)])
def test_cost(tmp_path, dtype, op, want):
    x = ref.cast_to(np.ones((128, 600), F32), dtype)
    path = write_program(tmp_path, {"x": sbuf(x), "y": out((128, 1), dtype)},
                         [{"tensor_reduce": {"dst": "y", "op": op, "data": "x", "axis": 1}}])
    slot = cost(path).slots[0]
    assert (slot.cycles, slot.engine) == (want, "vector")


def test_mask_indexes_data(tmp_path):
    # mask_on = data (docs/masks.md): fold only selected inputs; a dst element is written
    # when any of its inputs is selected, the others keep their values
    x = random_floats(np.random.default_rng(6), (8, 3, 7), special=False)
    prev = np.full((8, 3), -5.0, F32)
    got = run_program(tmp_path, {"x": sbuf(x), "y": sbuf(prev, output=True)},
                      [{"tensor_reduce": {"dst": "y", "op": "add", "data": "x", "axis": 2,
                                          "mask": "p < 4 and f0 >= 1 and f1 < 5"}}])["y"]
    want = prev.copy()
    want[:4, 1:] = ref_reduce(x[:4, 1:, :5], "add", 2)
    assert_bits_equal(got, want)
