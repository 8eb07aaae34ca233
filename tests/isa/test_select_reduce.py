"""select_reduce (seed page 001) against tests/reference.py, bit for bit, and its rules."""
from __future__ import annotations

import numpy as np
import pytest

import reference as ref
from prog_helpers import (assert_bits_equal, out, random_floats, reported_at, run_program, sbuf,
                          write_program)
from nkirun.api import check_program, cost

FP32_MIN = ref.FP32_MIN


def _pred(rng, shape, dtype):
    """A predicate with zeros, ones, other nonzero values (negative for signed types) and
    every 4th row all zero."""
    vals = {"int8": [0, 1, -1, 7, -128], "uint8": [0, 1, 2, 255],
            "int16": [0, 1, -3, 300, -32768], "uint16": [0, 1, 256, 65535]}[dtype]
    p = rng.choice(np.array(vals), size=shape).astype(dtype)
    p[::4] = 0
    return p


def _run(tmp_path, pred, x, on_false, *, reverse=False, dst_dtype=None, dtype_kw=None,
         res_dtype="float32", reduce_cmd="reset_reduce", dst_buffer="sbuf",
         pred_buffer="sbuf"):
    P = x.shape[0]
    tensors = {"pr": sbuf(pred, buffer=pred_buffer), "t": sbuf(x),
               "r": out(x.shape, dst_dtype or ref.dtype_name(x), dst_buffer),
               "m": out((P, 1), res_dtype)}
    args = {"dst": "r", "predicate": "pr", "on_true": "t", "on_false": on_false,
            "reduce_res": "m", "reduce_cmd": reduce_cmd, "reduce_op": "max",
            "reverse_pred": reverse}
    if isinstance(on_false, np.ndarray):
        tensors["f"] = sbuf(on_false)
        args["on_false"] = "f"
    if dtype_kw:
        args["dtype"] = dtype_kw
    return run_program(tmp_path, tensors, [{"select_reduce": args}])


def _want(pred, x, on_false, reverse=False, out_dtype=None, dst_dtype=None, res_dtype="float32"):
    if isinstance(on_false, np.ndarray):
        f = on_false.astype(np.float32)
    else:
        f = ref.FP32_MIN if on_false == "fp32.min" else on_false
    want, rowmax = ref.select_reduce(pred, x, f, reverse, out_dtype=out_dtype)
    if dst_dtype and dst_dtype != ref.dtype_name(want):
        want = ref.cast_to(want.astype(np.float32), dst_dtype)
    return want, ref.cast_to(rowmax, res_dtype)


@pytest.mark.parametrize("P", [1, 37, 128])
@pytest.mark.parametrize("free", [(7,), (65,), (2, 3, 5)])
@pytest.mark.parametrize("pdtype", ["int8", "uint8", "int16", "uint16"])
def test_matches_reference(tmp_path, P, free, pdtype):
    rng = np.random.default_rng(P + 7 * len(free) + len(pdtype))
    x = random_floats(rng, (P, *free))
    pred = _pred(rng, x.shape, pdtype)
    for reverse in (False, True):
        got = _run(tmp_path, pred, x, "fp32.min", reverse=reverse)
        want, rowmax = _want(pred, x, "fp32.min", reverse)
        assert_bits_equal(got["r"], want)
        assert_bits_equal(got["m"], rowmax)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float8_e4m3", "float8_e5m2",
                                   "int8", "uint8", "int16", "uint16", "float32"])
def test_on_true_dtypes_and_tile_on_false(tmp_path, dtype):
    rng = np.random.default_rng(len(dtype))
    P, n = 37, 13
    x = ref.cast_to(random_floats(rng, (P, n), special=dtype.startswith("float")) * 8, dtype)
    pred = _pred(rng, x.shape, "uint8")
    f = rng.standard_normal((P, 1)).astype(np.float32)
    got = _run(tmp_path, pred, x, f)
    want, rowmax = _want(pred, x, f)
    assert_bits_equal(got["r"], want)
    assert_bits_equal(got["m"], rowmax)


@pytest.mark.parametrize("out_dtype", ["bfloat16", "float16", "float8_e4m3", "float8_e5m2"])
def test_output_cast_fully_false_rows(tmp_path, out_dtype):
    """FP32_MIN fill becomes -inf in a low-precision output; a float32 reduce_res keeps it."""
    rng = np.random.default_rng(1)
    x = random_floats(rng, (37, 9), special=False)
    pred = _pred(rng, x.shape, "int16")
    for kw in ({"dst_dtype": out_dtype}, {"dtype_kw": out_dtype}):
        got = _run(tmp_path, pred, x, "fp32.min", **kw)
        want, rowmax = _want(pred, x, "fp32.min", out_dtype=out_dtype,
                             dst_dtype=got["r"].dtype.name)
        assert_bits_equal(got["r"], want)
        assert_bits_equal(got["m"], rowmax)
        assert np.isneginf(got["r"][::4].astype(np.float32)).all()
        assert (got["m"][::4] == FP32_MIN).all()


def test_reverse_pred_is_logical_not(tmp_path):
    """Page 001 Example 3: reverse_pred selects on_true where the predicate is FALSE; a
    bitwise ~ would keep 1 and 2 both true."""
    pred = np.array([[0, 1, 2, -1]], np.int8)
    x = np.array([[10, 20, 30, 40]], np.float32)
    got = _run(tmp_path, pred, x, -1.0, reverse=True)
    np.testing.assert_array_equal(got["r"], [[10, -1, -1, -1]])
    np.testing.assert_array_equal(got["m"], [[10]])
    got = _run(tmp_path, pred, x, -1.0)
    np.testing.assert_array_equal(got["r"], [[-1, 20, 30, 40]])


def test_special_scalars_and_nan(tmp_path):
    x = np.array([[np.nan, 1, 2], [np.inf, 3, -np.inf], [-0.0, 5, 6]], np.float32)
    pred = np.array([[1, 0, 0], [0, 1, 1], [1, 0, 0]], np.uint8)
    for f in ("-inf", "nan", "inf", -0.0, 1e-45):
        got = _run(tmp_path, pred, x, f)
        want, rowmax = _want(pred, x, {"-inf": -np.inf, "nan": np.nan, "inf": np.inf}.get(f, f))
        assert_bits_equal(got["r"], want)
        assert_bits_equal(got["m"], rowmax)


def test_dst_in_psum_and_predicate_in_psum(tmp_path):
    rng = np.random.default_rng(9)
    x = random_floats(rng, (37, 20))
    pred = _pred(rng, x.shape, "uint16")
    got = _run(tmp_path, pred, x, 0.5, dst_buffer="psum", pred_buffer="psum")
    want, rowmax = _want(pred, x, 0.5)
    assert_bits_equal(got["r"], want)
    assert_bits_equal(got["m"], rowmax)


def test_views_with_different_layouts(tmp_path):
    """on_true, predicate and dst only need equal partitions and elements per partition."""
    rng = np.random.default_rng(4)
    x = random_floats(rng, (40, 6, 4))
    pred = _pred(rng, (32, 12), "int8")
    tensors = {"t": sbuf(x), "pr": sbuf(pred), "r": out((32, 2, 6), "float32")}
    inst = {"select_reduce": {"dst": "r", "predicate": "pr", "on_true": "t[8:40, 0:6:2, :]",
                              "on_false": "fp32.min"}}
    got = run_program(tmp_path, tensors, [inst])
    xv = np.ascontiguousarray(x[8:40, 0:6:2, :])
    want, _ = ref.select_reduce(pred, xv, FP32_MIN)
    assert_bits_equal(got["r"], want.reshape(32, 2, 6))



def test_in_place_dst_is_on_true(tmp_path):
    rng = np.random.default_rng(12)
    x = random_floats(rng, (37, 10))
    pred = _pred(rng, x.shape, "int8")
    f = rng.standard_normal((37, 1)).astype(np.float32)
    tensors = {"t": sbuf(x, output=True), "pr": sbuf(pred), "f": sbuf(f),
               "m": out((37, 1), "float32")}
    inst = {"select_reduce": {"dst": "t", "predicate": "pr", "on_true": "t", "on_false": "f",
                              "reduce_cmd": "reset_reduce", "reduce_res": "m"}}
    got = run_program(tmp_path, tensors, [inst])
    want, rowmax = _want(pred, x, f)
    assert_bits_equal(got["t"], want)
    assert_bits_equal(got["m"], rowmax)

# ---- rules ---------------------------------------------------------------------------------
def _prog(tmp_path, **over):
    tensors = {"t": sbuf(np.zeros((8, 16), np.float32)), "pr": sbuf(np.ones((8, 16), np.uint8)),
               "r": out((8, 16), "float32"), "m": out((8, 1), "float32")}
    tensors.update(over.pop("tensors", {}))
    args = {"dst": "r", "predicate": "pr", "on_true": "t", "on_false": "fp32.min",
            "reduce_cmd": "reset_reduce", "reduce_res": "m", "reduce_op": "max"}
    args.update(over)
    args = {k: v for k, v in args.items() if v is not None}
    return write_program(tmp_path, tensors, [{"select_reduce": args}])


def _psum(a):
    return sbuf(a, buffer="psum")


@pytest.mark.parametrize("code,key,over", [
    ("E110", "predicate", {"tensors": {"t": _psum(np.zeros((8, 16), np.float32)),
                                       "pr": _psum(np.ones((8, 16), np.uint8))}}),
    ("E111", "on_false", {"on_false": 1e39}),
    ("E111", "on_false", {"on_false": -3.5e38}),
    ("E060", "predicate", {"tensors": {"pr": sbuf(np.ones((8, 16), np.float32))}}),
    ("E060", "predicate", {"tensors": {"pr": sbuf(np.ones((8, 16), np.int32))}}),
    ("E060", "on_true", {"tensors": {"t": sbuf(np.zeros((8, 16), np.int32))}}),
    ("E060", "on_true", {"tensors": {"t": out((8, 16), "tfloat32")}}),
    ("E060", "reduce_res", {"tensors": {"m": out((8, 1), "int16")}}),
    ("E061", "on_false", {"on_false": "f", "tensors": {"f": sbuf(np.zeros((8, 2), np.float32))}}),
    ("E061", "reduce_res", {"tensors": {"m": out((8, 3), "float32")}}),
    ("E062", "on_false", {"on_false": "f", "tensors": {"f": sbuf(np.zeros((4, 1), np.float32))}}),
    ("E063", "dst", {"tensors": {"r": out((8, 17), "float32")}}),
    ("E063", "predicate", {"tensors": {"pr": sbuf(np.ones((8, 4, 3), np.uint8))}}),
    ("E040", "dst", {"tensors": {"r": out((8, 16), "float32", "hbm")}}),
    ("E025", "reduce_op", {"reduce_op": "add"}),
    ("E024", "reverse_pred", {"reverse_pred": 3}),
    ("E023", "select_reduce", {"on_false": None}),
])
def test_rule_reported_at_its_keyword(tmp_path, code, key, over):
    path = _prog(tmp_path, **over)
    hit, diags = reported_at(path, code, key)
    assert hit.instruction == 0 and hit.is_error


def test_valid_variants_have_no_diagnostics(tmp_path):
    assert check_program(_prog(tmp_path)).diagnostics == []
    # one of on_true / predicate in PSUM is fine, and so is a PSUM dst
    path = _prog(tmp_path, tensors={"t": _psum(np.zeros((8, 16), np.float32)),
                                    "r": out((8, 16), "bfloat16", "psum")})
    assert check_program(path).diagnostics == []
    path = _prog(tmp_path, on_false="f", tensors={"f": sbuf(np.zeros((8, 1), np.float16))})
    assert check_program(path).diagnostics == []
    # the printed FP32_MAX (above the float64 value of FP32_MAX) rounds to it in float32
    for v in (3.4028235e38, -3.4028235e38, "inf", "nan"):
        assert check_program(_prog(tmp_path, on_false=v)).diagnostics == [], v


def test_cost_is_assumed_max_min_ii_n(tmp_path):
    for n, want in ((16, 64), (300, 300)):
        path = _prog(tmp_path, tensors={"t": sbuf(np.zeros((8, n), np.float32)),
                                        "pr": sbuf(np.ones((8, n), np.uint8)),
                                        "r": out((8, n), "float32")})
        slot = cost(path).slots[0]
        assert (slot.engine, slot.cycles, slot.assumed) == ("vector", want, True)
