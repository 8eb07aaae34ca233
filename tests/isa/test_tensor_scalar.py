"""tensor_scalar (nki-reference.md §1.3) against a NumPy reference written from the docs:
(data op0 operand0) op1 operand1 in float32, reverse swapping operands, one final cast."""
from __future__ import annotations

import numpy as np
import pytest

import matrix
import reference as ref
from prog_helpers import (assert_bits_equal, codes, out, random_floats, reported_at, sbuf,
                          write_program)
from nkirun.api import check_program, cost

F32 = np.float32
FN = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
      "maximum": np.maximum, "minimum": np.minimum,
      "greater_equal": lambda a, b: (a >= b).astype(F32),
      "not_equal": lambda a, b: (a != b).astype(F32)}


def ref_ts(x, op0, v0, rev0=False, op1=None, v1=None, rev1=False, out_dtype="float32"):
    P = x.shape[0]
    t = x.astype(F32).reshape(P, -1)

    def apply(op, v, rev, t):
        v = np.asarray(v, F32).reshape(-1, 1) if np.ndim(v) else F32(v)
        with np.errstate(all="ignore"):
            return (FN[op](v, t) if rev else FN[op](t, v)).astype(F32)
    t = apply(op0, v0, rev0, t)
    if op1 is not None:
        t = apply(op1, v1, rev1, t)
    return ref.cast_to(t.reshape(x.shape), out_dtype)


def _ts(tmp_path, x, args, dst_dtype="float32", tensors=None, target=None):
    t = {"x": sbuf(x), "y": out(x.shape, dst_dtype), **(tensors or {})}
    path = write_program(tmp_path, t, [{"tensor_scalar": {"dst": "y", "data": "x", **args}}])
    if target:
        text = open(path).read().replace("version: 1", f"version: 1\ntarget: {target}")
        open(path, "w").write(text)
    return path


def _run(tmp_path, x, args, **kw):
    from nkirun.api import run
    return run(_ts(tmp_path, x, args, **kw))["y"]


@matrix.shapes
@pytest.mark.parametrize("rev0,rev1", [(False, False), (True, False), (False, True)])
def test_matrix_two_ops_with_column_and_scalar(tmp_path, P, free, rev0, rev1):
    rng = np.random.default_rng(P + 3 * len(free))
    x = random_floats(rng, (P,) + free)
    col = random_floats(rng, (P, 1), special=False)
    args = {"op0": "subtract", "operand0": "c", "reverse0": rev0,
            "op1": "divide", "operand1": 2.5, "reverse1": rev1}
    got = _run(tmp_path, x, args, tensors={"c": sbuf(col)})
    assert_bits_equal(got, ref_ts(x, "subtract", col, rev0, "divide", 2.5, rev1))


@pytest.mark.parametrize("op0,op1", [("add", None), ("maximum", "minimum"),
                                     ("greater_equal", "multiply"), ("not_equal", None),
                                     ("multiply", "add")])
def test_op_pairs(tmp_path, op0, op1):
    rng = np.random.default_rng(1)
    x = random_floats(rng, (37, 3, 7))
    x[:, 0, 0] = 0.5
    args = {"op0": op0, "operand0": 0.5}
    if op1:
        args.update(op1=op1, operand1=-3.0)
    assert_bits_equal(_run(tmp_path, x, args), ref_ts(x, op0, 0.5, False, op1, -3.0))


@pytest.mark.parametrize("src,dst", [("bfloat16", "bfloat16"), ("float16", "float8_e4m3"),
                                     ("int16", "float32"), ("float32", "int8")])
def test_dtypes(tmp_path, src, dst):
    rng = np.random.default_rng(2)
    x = ref.cast_to(random_floats(rng, (37, 40), special=False) * F32(20), src)
    col = (rng.standard_normal((37, 1)) * 3).astype(F32)
    args = {"op0": "multiply", "operand0": "c", "op1": "add", "operand1": 2.5}  # [OLD-TEST]
    got = _run(tmp_path, x, args, dst_dtype=dst, tensors={"c": sbuf(col)})
    assert_bits_equal(got, ref_ts(x, "multiply", col, False, "add", 2.5, out_dtype=dst))


def test_unary_rsqrt_defaults_to_gpsimd(tmp_path):
    x = np.abs(random_floats(np.random.default_rng(3), (37, 9), special=False)) + F32(0.1)
    path = _ts(tmp_path, x, {"op0": "rsqrt", "operand0": 0.0})
    from nkirun.api import run
    got = run(path)["y"]
    np.testing.assert_allclose(got, (1 / np.sqrt(x.astype(np.float64))).astype(F32), rtol=2e-7)
    assert cost(path).slots[0].engine == "gpsimd"


def test_unary_abs_then_multiply(tmp_path):
    x = random_floats(np.random.default_rng(4), (16, 11))
    got = _run(tmp_path, x, {"op0": "abs", "operand0": 0, "op1": "multiply", "operand1": -2.0})
    assert_bits_equal(got, (np.abs(x) * F32(-2)).astype(F32))


@pytest.mark.parametrize("dtype", ["int32", "uint16", "int8"])
def test_bitwise_ops_on_integer_bits(tmp_path, dtype):
    np_t = ref._INTS[dtype]
    info = np.iinfo(np_t)
    rng = np.random.default_rng(5)
    x = rng.integers(info.min, info.max, (37, 13), endpoint=True).astype(np_t)
    m = rng.integers(0, info.max, (37, 1), endpoint=True).astype(np_t)
    args = {"op0": "bitwise_and", "operand0": "m", "op1": "right_shift", "operand1": 2}
    got = _run(tmp_path, x, args, dst_dtype=dtype, tensors={"m": sbuf(m)})
    bits = info.bits
    anded = (x & m).astype(np.int64) & ((1 << bits) - 1)  # logical shift: zero fill
    want = (anded >> 2).astype(f"u{np.dtype(np_t).itemsize}").view(np_t)
    assert_bits_equal(got, want)
    got = _run(tmp_path, x, {"op0": "left_shift", "operand0": 3, "reverse0": False,
                             "op1": "bitwise_xor", "operand1": 5}, dst_dtype=dtype)
    assert_bits_equal(got, ((x << np_t(3)) ^ np_t(5)).astype(np_t))


def test_scalar_engine_on_trn2(tmp_path):
    x = random_floats(np.random.default_rng(6), (128, 300))
    args = {"op0": "multiply", "operand0": 1.5, "op1": "add", "operand1": -1.0,
            "engine": "scalar"}
    path = _ts(tmp_path, x, args)
    from nkirun.api import run
    assert_bits_equal(run(path)["y"], ref_ts(x, "multiply", 1.5, False, "add", -1.0))
    slot = cost(path).slots[0]
    assert (slot.engine, slot.cycles) == ("scalar", 300)


# ---- rules ------------------------------------------------------------------------------------
X = np.ones((4, 8), F32)
XI = np.ones((4, 8), np.int32)


@pytest.mark.parametrize("x,args,target,code,key", [
    (X, {"op0": "add", "operand0": 1.0, "op1": "bitwise_and", "operand1": 1}, None,
     "E220", "op1"),
    (X, {"op0": "add", "operand0": 1.0, "op1": "multiply"}, None, "E221", "op1"),
    (X, {"op0": "add", "operand0": 1.0, "operand1": 2.0}, None, "E221", "operand1"),
    (X, {"op0": "abs", "operand0": 2.0}, None, "E222", "operand0"),
    (X, {"op0": "subtract", "operand0": 1.0, "engine": "scalar"}, None, "E223", "engine"),
    (X, {"op0": "multiply", "operand0": 1.0, "engine": "scalar"}, "trn1", "E223", "engine"),
    (X, {"op0": "add", "operand0": 1.0, "engine": "gpsimd"}, None, "E224", "engine"),
    (X, {"op0": "rsqrt", "operand0": 0, "engine": "vector"}, None, "E225", "op0"),
    (X, {"op0": "bitwise_or", "operand0": 1}, None, "E226", "data"),
    (XI, {"op0": "bitwise_or", "operand0": 1.5}, None, "E226", "operand0"),
    (XI, {"op0": "left_shift", "operand0": 2**40}, None, "E226", "operand0"),
    (X, {"op0": "frob", "operand0": 1.0}, None, "E025", "op0"),
    (X, {"op0": "add", "operand0": "w"}, None, "E061", "operand0"),
])
def test_rules(tmp_path, x, args, target, code, key):
    dst = "int32" if x.dtype == np.int32 else "float32"
    path = _ts(tmp_path, x, args, dst, {"w": sbuf(np.ones((4, 2), F32))}, target)
    d = [e for e in check_program(path).diagnostics if e.code != "W051"]
    assert set(codes(d)) == {code}, d
    reported_at(path, code, key)


def test_scalar_engine_pairs_allowed_on_trn2(tmp_path):
    for op0, op1 in (("multiply", "add"), ("multiply", None), ("add", None)):
        args = {"op0": op0, "operand0": 2.0, "engine": "scalar"}
        if op1:
            args.update(op1=op1, operand1=1.0)
        assert check_program(_ts(tmp_path, X, args)).diagnostics == []


def test_psum_with_gpsimd_rejected(tmp_path):
    t = {"x": sbuf(X, buffer="psum"), "y": out(X.shape, "float32")}
    path = write_program(tmp_path, t, [{"tensor_scalar": {"dst": "y", "data": "x",
                                                          "op0": "rsqrt", "operand0": 0}}])
    assert codes(check_program(path).diagnostics) == ["E044"]


def test_cost_min_ii(tmp_path):
    path = _ts(tmp_path, X, {"op0": "add", "operand0": 1.0})
    assert cost(path).slots[0].cycles == 64


# ---- float32 operand tiles (§1.3, new API) and divide (§2.2) -----------------------------------
@pytest.mark.parametrize("dtype", ["float8_e4m3", "int32", "uint8"])
@pytest.mark.parametrize("key", ["operand0", "operand1"])
def test_arithmetic_operand_tile_must_be_float32(tmp_path, dtype, key):
    args = {"op0": "multiply", "operand0": 2.0, "op1": "add", "operand1": 1.0, key: "c"}
    path = _ts(tmp_path, X, args, tensors={"c": sbuf(np.ones((4, 1)), dtype)})
    d = check_program(path).diagnostics
    assert dtype in d[0].message
    reported_at(path, "E227", key, only=True)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("key", ["operand0", "operand1"])
def test_a_16_bit_float_operand_tile_warns_and_computes_exactly(tmp_path, dtype, key):
    """W600: nki-library passes bfloat16 columns; they widen to float32 exactly."""
    import ml_dtypes
    np_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.float16
    col = np.array([[1.5], [-2.25], [0.5], [3.0]])
    args = {"op0": "multiply", "operand0": 2.0, "op1": "add", "operand1": 1.0, key: "c"}
    path = _ts(tmp_path, X, args, tensors={"c": sbuf(col, dtype)})
    reported_at(path, "W600", key, only=True)
    from nkirun.api import run
    x = X.astype(np.float32)
    c = col.astype(np_dtype).astype(np.float32)
    want = x * c + 1 if key == "operand0" else x * 2 + c
    np.testing.assert_array_equal(run(path)["y"], want)


@pytest.mark.parametrize("data_dtype", ["float32", "bfloat16", "int32"])
def test_float32_operand_tile_with_any_data_is_accepted(tmp_path, data_dtype):
    x = np.arange(4 * 8).reshape(4, 8)
    args = {"op0": "multiply", "operand0": "c", "op1": "add", "operand1": "c"}
    path = write_program(tmp_path, {"x": sbuf(x, data_dtype), "c": sbuf(np.ones((4, 1), F32)),
                                    "y": out(x.shape, "float32")},
                         [{"tensor_scalar": {"dst": "y", "data": "x", **args}}])
    assert check_program(path).diagnostics == []


def test_bitwise_operand_tile_stays_integer(tmp_path):
    args = {"op0": "bitwise_and", "operand0": "m"}
    path = _ts(tmp_path, XI, args, "int32", {"m": sbuf(np.full((4, 1), 3), "int32")})
    assert check_program(path).diagnostics == []


@pytest.mark.parametrize("ops_,key", [(("divide", None), "op0"), (("add", "divide"), "op1"),
                                      (("np.true_divide", None), "op0")])
def test_divide_warns_and_stays_exact(tmp_path, ops_, key):
    from nkirun.api import run
    x = random_floats(np.random.default_rng(5), (37, 129))
    op0, op1 = ops_
    args = {"op0": op0, "operand0": 3.0, **({"op1": op1, "operand1": 7.0} if op1 else {})}
    path = _ts(tmp_path, x, args)
    reported_at(path, "W228", key, only=True)
    want = ref_ts(x, "divide" if op0 != "add" else "add", 3.0, op1=op1, v1=7.0)
    assert_bits_equal(run(path)["y"], want)
