"""range_select (seed page 000) against tests/reference.py, bit for bit, and its rules."""
from __future__ import annotations

import numpy as np
import pytest

import matrix
import reference as ref
from prog_helpers import (assert_bits_equal, codes, diagnostics, out, random_floats, reported_at,
                          run_program, sbuf, write_program)
from nkirun.api import check_program

FP32_MIN = ref.FP32_MIN
OPS = ("equal", "less", "less_equal", "greater", "greater_equal")
LOW = ("bfloat16", "float16", "float8_e4m3", "float8_e5m2")


def _bounds(rng, P, n, start):
    """Per-partition [lo, hi) windows around the index range; every 5th row empty."""
    lo = rng.integers(start - 3, start + n + 3, size=(P, 1)).astype(np.float32)
    hi = lo + rng.integers(0, n + 3, size=(P, 1)).astype(np.float32)
    hi[::5] = lo[::5] - 1  # fully false rows
    return lo, hi


def _run(tmp_path, x, lo, hi, *, op0="greater_equal", op1="less", start=0, dst_dtype=None,
         dtype_kw=None, res_dtype="float32", reduce_cmd="reset_reduce"):
    P = x.shape[0]
    dst_dtype = dst_dtype or ref.dtype_name(x)
    args = {"dst": "r", "on_true_tile": "t", "comp_op0": op0, "comp_op1": op1,
            "bound0": "b0", "bound1": "b1", "reduce_cmd": reduce_cmd, "reduce_res": "m",
            "reduce_op": "max", "range_start": start, "on_false_value": "fp32.min"}
    if dtype_kw:
        args["dtype"] = dtype_kw
    tensors = {"t": sbuf(x), "b0": sbuf(lo), "b1": sbuf(hi),
               "r": out(x.shape, dst_dtype), "m": out((P, 1), res_dtype)}
    return run_program(tmp_path, tensors, [{"range_select": args}])


def _check(got, x, lo, hi, op0=np.greater_equal, op1=np.less, start=0, out_dtype=None,
           res_dtype="float32", dst_dtype=None):
    want, rowmax = ref.range_select(x, op0, op1, lo, hi, start, out_dtype=out_dtype)
    if dst_dtype and dst_dtype != ref.dtype_name(want):
        want = ref.cast_to(want.astype(np.float32), dst_dtype)
    assert_bits_equal(got["r"], want)
    assert_bits_equal(got["m"], ref.cast_to(rowmax, res_dtype))


@matrix.shapes
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16", "float8_e4m3"])
def test_matches_reference(tmp_path, P, free, dtype):
    rng = np.random.default_rng(P * 1000 + sum(free))
    x = ref.cast_to(random_floats(rng, (P, *free)), dtype)
    n = int(np.prod(free))
    lo, hi = _bounds(rng, P, n, 0)
    _check(_run(tmp_path, x, lo, hi), x, lo, hi)


@pytest.mark.parametrize("out_dtype", LOW)
@pytest.mark.parametrize("via", ["dst", "dtype"])
def test_output_cast_fill_becomes_minus_inf(tmp_path, out_dtype, via):
    """Page 000's stability note: FP32_MIN becomes -inf in a bf16/fp16/fp8 output, while a
    float32 reduce_res keeps FP32_MIN for fully unselected rows."""
    rng = np.random.default_rng(7)
    P, n = 37, 11
    x = random_floats(rng, (P, n), special=False)
    lo, hi = _bounds(rng, P, n, 0)
    kw = {"dst_dtype": out_dtype} if via == "dst" else {"dtype_kw": out_dtype}
    got = _run(tmp_path, x, lo, hi, **kw)
    _check(got, x, lo, hi, out_dtype=out_dtype, dst_dtype=got["r"].dtype.name)
    assert (got["r"].dtype.name == out_dtype) == (via == "dst")
    empty = got["r"][::5].astype(np.float32)
    assert np.isneginf(empty).all()
    assert (got["m"][::5] == FP32_MIN).all()


def test_bf16_reduce_res_turns_fp32_min_into_minus_inf(tmp_path):
    x = np.ones((4, 6), np.float32)
    lo = np.full((4, 1), 10, np.float32)
    hi = np.full((4, 1), 0, np.float32)  # nothing selected
    got = _run(tmp_path, x, lo, hi, res_dtype="bfloat16")
    assert np.isneginf(got["m"].astype(np.float32)).all()
    assert (got["r"] == FP32_MIN).all()


@pytest.mark.parametrize("op0", OPS)
@pytest.mark.parametrize("op1", OPS)
def test_all_comparison_op_pairs(tmp_path, op0, op1):
    rng = np.random.default_rng(3)
    P, n, start = 37, 9, 5
    x = random_floats(rng, (P, n))
    lo, hi = _bounds(rng, P, n, start)
    lo[3] = hi[3] = start + 4  # equal bounds: `equal` selects exactly one element
    got = _run(tmp_path, x, lo, hi, op0=op0, op1=op1, start=start)
    _check(got, x, lo, hi, getattr(np, op0), getattr(np, op1), start)


@pytest.mark.parametrize("start", [-20, 1, 1000, 2**24 - 200])
def test_range_start_offsets(tmp_path, start):
    rng = np.random.default_rng(abs(start) % 97)
    P, n = 37, 33
    x = random_floats(rng, (P, n))
    lo, hi = _bounds(rng, P, n, start)
    got = _run(tmp_path, x, lo, hi, start=start)
    _check(got, x, lo, hi, start=start)
    row = got["r"][1]
    i = np.arange(start, start + n)
    keep = (i >= lo[1, 0]) & (i < hi[1, 0])
    assert ((row == FP32_MIN) | keep).all()


def test_nan_inf_values_and_nan_bounds(tmp_path):
    x = np.array([[np.nan, 1, 2, 3], [np.inf, -np.inf, 5, np.nan], [1, 2, 3, 4]], np.float32)
    lo = np.array([[0], [0], [np.nan]], np.float32)  # NaN bound: every comparison false
    hi = np.array([[2], [3], [4]], np.float32)
    got = _run(tmp_path, x, lo, hi)
    _check(got, x, lo, hi)
    assert np.isnan(got["m"][0, 0])  # NaN propagates through max
    assert got["m"][1, 0] == np.inf and got["m"][2, 0] == FP32_MIN


def test_idle_reduce_res_is_own_max(tmp_path):
    rng = np.random.default_rng(11)
    x = random_floats(rng, (37, 8), special=False)
    lo, hi = _bounds(rng, 37, 8, 0)
    _check(_run(tmp_path, x, lo, hi, reduce_cmd="idle"), x, lo, hi)


def test_views_and_psum(tmp_path):
    """on_true_tile as a strided view of a bigger tile, dst in PSUM, bounds as columns."""
    rng = np.random.default_rng(5)
    big = random_floats(rng, (64, 3, 20))
    bounds = np.stack([np.zeros(64), np.full(64, 6.0)], axis=1).astype(np.float32)
    tensors = {"t": sbuf(big), "bb": sbuf(bounds), "r": out((32, 10), "float32", "psum"),
               "m": out((32, 1), "float32")}
    inst = {"range_select": {"dst": "r", "on_true_tile": "t[32:64, 1, 0:20:2]",
                             "comp_op0": "greater_equal", "comp_op1": "less",
                             "bound0": "bb[32:64, 0]", "bound1": "bb[32:64, 1:2]",
                             "reduce_cmd": "reset_reduce", "reduce_res": "m"}}
    got = run_program(tmp_path, tensors, [inst])
    x = np.ascontiguousarray(big[32:64, 1, 0:20:2])
    _check(got, x, bounds[32:64, 0:1], bounds[32:64, 1:2])


# ---- rules ---------------------------------------------------------------------------------
def _prog(tmp_path, **over):
    tensors = {"t": sbuf(np.zeros((8, 16), np.float32)), "b0": sbuf(np.zeros((8, 1), np.float32)),
               "b1": sbuf(np.ones((8, 1), np.float32)), "r": out((8, 16), "float32"),
               "m": out((8, 1), "float32")}
    tensors.update(over.pop("tensors", {}))
    args = {"dst": "r", "on_true_tile": "t", "comp_op0": "greater_equal", "comp_op1": "less",
            "bound0": "b0", "bound1": "b1", "reduce_cmd": "reset_reduce", "reduce_res": "m",
            "on_false_value": "fp32.min"}
    args.update(over)
    args = {k: v for k, v in args.items() if v is not None}
    return write_program(tmp_path, tensors, [{"range_select": args}])


@pytest.mark.parametrize("code,key,over", [
    ("E101", "on_false_value", {"on_false_value": -1e30}),
    ("E101", "on_false_value", {"on_false_value": "-inf"}),
    ("E102", "range_start", {"range_start": 2**24}),
    ("E102", "range_start", {"range_start": -2**24}),
    ("E025", "comp_op0", {"comp_op0": "not_equal"}),
    ("E025", "reduce_op", {"reduce_op": "add"}),
    ("E025", "reduce_cmd", {"reduce_cmd": "accumulate"}),
    ("E060", "on_true_tile", {"tensors": {"t": sbuf(np.zeros((8, 16), np.int16))}}),
    ("E060", "bound0", {"tensors": {"b0": sbuf(np.zeros((8, 1), np.float16))}}),
    ("E060", "reduce_res", {"tensors": {"m": out((8, 1), "int32")}}),
    ("E061", "bound1", {"tensors": {"b1": sbuf(np.zeros((8, 2), np.float32))}}),
    ("E061", "reduce_res", {"tensors": {"m": out((8, 2), "float32")}}),
    ("E062", "bound0", {"tensors": {"b0": sbuf(np.zeros((4, 1), np.float32))}}),
    ("E063", "dst", {"tensors": {"r": out((8, 15), "float32")}}),
    ("E040", "on_true_tile", {"tensors": {"t": sbuf(np.zeros((8, 16), np.float32), buffer="hbm")}}),
    ("E023", "range_select", {"bound1": None}),
    ("W103", "reduce_res", {"tensors": {"r": out((8, 16), "bfloat16"),
                                        "m": out((8, 1), "bfloat16")}}),
])
def test_rule_reported_at_its_keyword(tmp_path, code, key, over):
    path = _prog(tmp_path, **over)
    hit, diags = reported_at(path, code, key)
    assert hit.instruction == 0


def test_valid_program_has_no_diagnostics(tmp_path):
    assert check_program(_prog(tmp_path)).diagnostics == []
    # FP32_MIN written as the number the page prints rounds to the same float32 bit pattern
    for v in (-3.4028235e38, "-3.4028234663852886e38", "nl.fp32.min"):
        assert codes(check_program(_prog(tmp_path, on_false_value=v)).diagnostics) == [], v
    assert codes(check_program(_prog(tmp_path, on_false_value=-1e39)).diagnostics) == ["E101"]
    # range_start + N just inside 2^24 is allowed
    assert codes(check_program(_prog(tmp_path, range_start=2**24 - 17)).diagnostics) == []
    assert "E102" in codes(diagnostics(tmp_path, {"t": sbuf(np.zeros((1, 16), np.float32)),
                                                  "b0": sbuf(np.zeros((1, 1), np.float32)),
                                                  "b1": sbuf(np.zeros((1, 1), np.float32)),
                                                  "r": out((1, 16), "float32")},
                                       [{"range_select": {
                                           "dst": "r", "on_true_tile": "t",
                                           "comp_op0": "less", "comp_op1": "less",
                                           "bound0": "b0", "bound1": "b1",
                                           "range_start": 2**24 - 16}}]))


def test_cost_is_max_min_ii_n(tmp_path):
    from nkirun.api import cost
    for n, want in ((16, 64), (200, 200)):
        path = _prog(tmp_path, tensors={"t": sbuf(np.zeros((8, n), np.float32)),
                                        "r": out((8, n), "float32")})
        slot = cost(path).slots[0]
        assert (slot.engine, slot.cycles, slot.assumed) == ("vector", want, False)
