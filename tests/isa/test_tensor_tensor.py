"""tensor_tensor (nki-reference.md §1.2, §2.2) against NumPy references written from the docs:
float32 arithmetic then one cast, comparisons 1.0/0.0, bitwise ops on the integer bits."""
from __future__ import annotations

import numpy as np
import pytest

import matrix
import reference as ref
from prog_helpers import (assert_bits_equal, codes, diagnostics, out, random_floats, reported_at,
                          run_program, sbuf, write_program)
from nkirun.api import check_program, cost

F32 = np.float32
ARITH = {
    "add": lambda a, b: a + b, "subtract": lambda a, b: a - b,
    "multiply": lambda a, b: a * b, "divide": lambda a, b: a / b,
    "maximum": np.maximum, "minimum": np.minimum, "power": lambda a, b: a ** b,
    "greater": lambda a, b: (a > b).astype(F32), "less_equal": lambda a, b: (a <= b).astype(F32),
    "equal": lambda a, b: (a == b).astype(F32), "not_equal": lambda a, b: (a != b).astype(F32),
    "logical_and": lambda a, b: ((a != 0) & (b != 0)).astype(F32),
}


def ref_tt(a, b, op, out_dtype):
    with np.errstate(all="ignore"):
        y = ARITH[op](a.astype(F32), b.astype(F32)).astype(F32)
    return ref.cast_to(y, out_dtype)


def _tt(tmp_path, a, b, op, dst_dtype="float32", extra=None, buffers=("sbuf", "sbuf")):
    t = {"a": sbuf(a, buffer=buffers[0]), "b": sbuf(b, buffer=buffers[1]),
         "y": out(a.shape, dst_dtype)}
    return run_program(tmp_path, t, [{"tensor_tensor": {"dst": "y", "data1": "a", "data2": "b",
                                                        "op": op, **(extra or {})}}])["y"]


@matrix.shapes
@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "maximum", "greater"])
def test_float32_matrix_bit_exact(tmp_path, P, free, op):
    rng = np.random.default_rng(P + len(free))
    a, b = random_floats(rng, (P,) + free), random_floats(rng, (P,) + free)
    assert_bits_equal(_tt(tmp_path, a, b, op), ref_tt(a, b, op, "float32"))


@pytest.mark.parametrize("op", sorted(ARITH))
def test_every_arithmetic_op(tmp_path, op):
    rng = np.random.default_rng(7)
    a = random_floats(rng, (37, 3, 7))
    b = random_floats(rng, (37, 3, 7))
    b[0, 0, :3] = a[0, 0, :3]  # some equal pairs for the comparisons
    if op == "power":
        a = np.abs(a)
    assert_bits_equal(_tt(tmp_path, a, b, op), ref_tt(a, b, op, "float32"))


@pytest.mark.parametrize("d1,d2,dst", [("bfloat16", "float16", "float8_e4m3"),
                                       ("bfloat16", "bfloat16", "bfloat16"),
                                       ("float8_e5m2", "float32", "float16"),
                                       ("int8", "float32", "bfloat16")])
def test_mixed_dtypes_compute_in_float32(tmp_path, d1, d2, dst):
    rng = np.random.default_rng(11)
    a = ref.cast_to(random_floats(rng, (37, 45)) * F32(3), d1)
    b = ref.cast_to(random_floats(rng, (37, 45)), d2)
    assert_bits_equal(_tt(tmp_path, a, b, "multiply", dst), ref_tt(a, b, "multiply", dst))


def test_dtype_keyword_rounds_first(tmp_path):
    a = np.linspace(1, 2, 37 * 9, dtype=F32).reshape(37, 9)
    got = _tt(tmp_path, a, a * F32(1.0001), "add", "float32", {"dtype": "bfloat16"})
    want = ref.cast_to(ref_tt(a, a * F32(1.0001), "add", "bfloat16").astype(F32), "float32")
    assert_bits_equal(got, want)


def _lsr(a, s):
    """Logical shift right: the bits of a as unsigned, zero filled (§2.2)."""
    bits = np.iinfo(a.dtype).bits
    u = a.astype(np.int64) & ((1 << bits) - 1)
    return (u >> s.astype(np.int64)).astype(f"u{a.dtype.itemsize}").view(a.dtype)


@pytest.mark.parametrize("dtype", ["int32", "uint8", "int16", "uint32"])
@pytest.mark.parametrize("op", ["bitwise_and", "bitwise_or", "bitwise_xor", "left_shift",
                                "right_shift"])
def test_bitwise_ops_on_integer_bits(tmp_path, dtype, op):
    rng = np.random.default_rng(3)
    info = np.iinfo(ref._INTS[dtype])
    a = rng.integers(info.min, info.max, (37, 13), endpoint=True).astype(ref._INTS[dtype])
    if "shift" in op:
        b = rng.integers(0, info.bits, (37, 13)).astype(ref._INTS[dtype])
    else:
        b = rng.integers(info.min, info.max, (37, 13), endpoint=True).astype(ref._INTS[dtype])
    want = {"bitwise_and": lambda: a & b, "bitwise_or": lambda: a | b,
            "bitwise_xor": lambda: a ^ b, "left_shift": lambda: a << b,
            "right_shift": lambda: _lsr(a, b)}[op]()
    assert_bits_equal(_tt(tmp_path, a, b, op, dtype), want.astype(ref._INTS[dtype]))


def test_int32_add_is_exact_on_gpsimd_and_float32_on_vector(tmp_path):
    a = np.array([[2**24 + 1, 2**31 - 1, -7]], np.int32).repeat(37, 0)
    b = np.array([[1, 1, 3]], np.int32).repeat(37, 0)
    got = _tt(tmp_path, a, b, "add", "int32")
    assert_bits_equal(got[0], np.array([2**24 + 2, 2**31 - 1, -4], np.int32))  # saturates
    got_v = _tt(tmp_path, a, b, "add", "int32", {"engine": "vector"})
    assert_bits_equal(got_v, ref.cast_to(a.astype(F32) + b.astype(F32), "int32"))
    assert got_v[0, 0] == 2**24  # 2^24 + 1 is not a float32: it rounds to 2^24 twice


def test_one_psum_input(tmp_path):
    rng = np.random.default_rng(4)
    a, b = random_floats(rng, (64, 100)), random_floats(rng, (64, 100))
    got = _tt(tmp_path, a, b, "subtract", buffers=("psum", "sbuf"))
    assert_bits_equal(got, ref_tt(a, b, "subtract", "float32"))


# ---- rules ------------------------------------------------------------------------------------
def _check(tmp_path, a, b, op, dst_dtype="float32", extra=None, buffers=("sbuf", "sbuf")):
    t = {"a": sbuf(a, buffer=buffers[0]), "b": sbuf(b, buffer=buffers[1]),
         "y": out(a.shape, dst_dtype)}
    path = write_program(tmp_path, t, [{"tensor_tensor": {"dst": "y", "data1": "a",
                                                          "data2": "b", "op": op,
                                                          **(extra or {})}}])
    return path, check_program(path).diagnostics


def test_both_inputs_in_psum(tmp_path):
    x = np.ones((4, 8), F32)
    path, d = _check(tmp_path, x, x, "add", buffers=("psum", "psum"))
    reported_at(path, "E210", "data2", only=True)


def test_power_only_on_gpsimd(tmp_path):
    x = np.ones((4, 8), F32)
    path, d = _check(tmp_path, x, x, "power", extra={"engine": "vector"})
    reported_at(path, "E211", "engine", only=True)
    path, d = _check(tmp_path, x, x, "power", buffers=("psum", "sbuf"))
    reported_at(path, "E044", "data1", only=True)


def test_bitwise_needs_integers(tmp_path):
    path, d = _check(tmp_path, np.ones((4, 8), np.int32), np.ones((4, 8), F32), "bitwise_or",
                     "int32")
    reported_at(path, "E212", "data2", only=True)


@pytest.mark.parametrize("op,code", [("abs", "E025"), ("rsqrt", "E025"), ("frob", "E025")])
def test_unary_and_unknown_ops_rejected(tmp_path, op, code):
    x = np.ones((4, 8), F32)
    path, d = _check(tmp_path, x, x, op)
    reported_at(path, code, "op", only=True)


def test_shape_mismatch(tmp_path):
    d = diagnostics(tmp_path, {"a": sbuf(np.ones((4, 8), F32)), "b": sbuf(np.ones((4, 9), F32)),
                               "y": out((4, 8), "float32")},
                    [{"tensor_tensor": {"dst": "y", "data1": "a", "data2": "b", "op": "add"}}])
    assert codes(d) == ["E063"]


# ---- cost -------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype,op,view,bufs,want,engine", [
    ("float32", "add", "a", ("sbuf", "sbuf"), 2 * 300, "vector"),
    ("bfloat16", "add", "a", ("sbuf", "sbuf"), 300, "vector"),
    ("bfloat16", "maximum", "a", ("sbuf", "sbuf"), 600, "vector"),
    ("bfloat16", "add", "w[:, 0:600:2]", ("sbuf", "sbuf"), 600, "vector"),  # strided
    ("float32", "multiply", "a", ("psum", "sbuf"), 300, "vector"),
    ("float32", "power", "a", ("sbuf", "sbuf"), 600, "gpsimd"),
    ("int32", "add", "a", ("sbuf", "sbuf"), 600, "gpsimd"),
    ("int32", "add", "a", ("psum", "sbuf"), 300, "vector"),
])
def test_cost_formula(tmp_path, dtype, op, view, bufs, want, engine):
    x = np.ones((128, 300), ref._INTS.get(dtype, ref._FLOATS.get(dtype)))
    path = write_program(tmp_path, {"a": sbuf(x, buffer=bufs[0]), "b": sbuf(x, buffer=bufs[1]),
                                    "w": sbuf(np.ones((128, 600), x.dtype)),
                                    "y": out(x.shape, dtype)},
                         [{"tensor_tensor": {"dst": "y", "data1": view, "data2": "b", "op": op}}])
    (slot,) = cost(path).slots
    assert (slot.cycles, slot.engine) == (want, engine)


def test_cost_small_tile_is_min_ii(tmp_path):
    x = np.ones((128, 5), F32)
    path = write_program(tmp_path, {"a": sbuf(x), "y": out(x.shape, "float32")},
                         [{"tensor_tensor": {"dst": "y", "data1": "a", "data2": "a",
                                             "op": "add"}}])
    assert cost(path).slots[0].cycles == 64


@pytest.mark.parametrize("P", [1, 37, 128])
@pytest.mark.parametrize("dtypes", [("float32", "float32"), ("bfloat16", "float16")])
def test_divide_warns_and_stays_exact(tmp_path, P, dtypes):
    """§2.2: divide is no hardware instruction at the NKI level: W213, exact float32 result."""
    rng = np.random.default_rng(P)
    a = ref.cast_to(random_floats(rng, (P, 3, 43)), dtypes[0])
    b = ref.cast_to(random_floats(rng, (P, 3, 43)), dtypes[1])
    path, d = _check(tmp_path, a, b, "np.divide", dst_dtype=dtypes[0])
    reported_at(path, "W213", "op", only=True)
    from nkirun.api import run
    assert_bits_equal(run(path)["y"], ref_tt(a, b, "divide", dtypes[0]))
    _, d = _check(tmp_path, a, b, "multiply", dst_dtype=dtypes[0])
    assert codes(d) == []
