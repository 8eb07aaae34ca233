"""The one accumulator model (nkirun/isa/accumulators.py) against references written from the
pages, across instructions that share a register.

The two documented orders: a page whose pseudo-code loops `acc = op(acc, x[i])` (exponential,
activate2) folds element by element from the register; a page that writes a NumPy reduction
(activation's `reduce_op(reduce_regs, reduce_op(output, axis))`, tensor_scalar_reduce's
`reduce_op(dst, axis)`, the select pages' np.max) reduces each row as NumPy does (np.sum is
pairwise) and combines the register once. Float32 results must match bit for bit."""
from __future__ import annotations

import numpy as np
import pytest

from prog_helpers import (assert_bits_equal, out, random_floats, run_program, sbuf, tmp,
                          write_program)
from nkirun.api import run
from nkirun.isa import accumulators as accs

F32 = np.float32


def np_row_sums(y):
    """np.sum of each partition's row, one 1-D row at a time."""
    with np.errstate(all="ignore"):
        return np.array([np.sum(r) for r in y.reshape(y.shape[0], -1).astype(F32)],
                        F32).reshape(-1, 1)


def loop_sums(y, start):
    """The loop pages: acc += y[i] in element order, from `start`, in float32."""
    y = y.reshape(y.shape[0], -1).astype(F32)
    acc = np.array(np.broadcast_to(np.asarray(start, F32).reshape(-1, 1), (y.shape[0], 1)))
    with np.errstate(all="ignore"):
        for i in range(y.shape[1]):
            acc = (acc + y[:, i:i + 1]).astype(F32)
    return acc


def test_the_two_orders_really_differ_and_numpy_reduces_rows_pairwise():
    # a row where pairwise and element-order float32 sums round differently
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((37, 1001)) * 1000).astype(F32)
    start = np.zeros((37, 1), F32)
    whole = accs.fold_rows("add", start, x, accs.WHOLE_ROW)
    streamed = accs.fold_rows("add", start, x, accs.STREAMED)
    assert_bits_equal(whole, np_row_sums(x))
    assert_bits_equal(streamed, loop_sums(x, 0.0))
    assert not np.array_equal(whole, streamed)
    # a strided (non-contiguous) view reduces to the same bits
    assert_bits_equal(accs.row_reduce("add", x[:, ::2]), np_row_sums(np.ascontiguousarray(x[:, ::2])))


@pytest.mark.parametrize("P", [1, 37, 128])
@pytest.mark.parametrize("free", [(129,), (3, 7), (1, 333)])
def test_activation_chain_is_np_sum_per_instruction(tmp_path, P, free):
    rng = np.random.default_rng(P * 7 + len(free))
    a = random_floats(rng, (P,) + free, special=False)
    b = random_floats(rng, (P, 515), special=False)
    outs = run_program(tmp_path, {"a": sbuf(a), "b": sbuf(b), "y": tmp(a.shape, "float32"),
                                  "z": out(b.shape, "float32"), "r": out((P, 1), "float32")},
                       [{"activation": {"dst": "y", "op": "copy", "data": "a",
                                        "reduce_op": "add", "reduce_cmd": "reset_reduce"}},
                        {"activation": {"dst": "z", "op": "copy", "data": "b",
                                        "reduce_op": "add", "reduce_cmd": "reduce",
                                        "reduce_res": "r"}}])
    assert_bits_equal(outs["r"], (F32(0) + np_row_sums(a)) + np_row_sums(b))


def test_nan_and_inf_propagate_through_both_orders(tmp_path):
    x = np.ones((4, 9), F32)
    x[0, 3], x[1, 5], x[2, 0], x[2, 8] = np.nan, np.inf, np.inf, -np.inf
    outs = run_program(tmp_path, {"x": sbuf(x), "y": out(x.shape, "float32"),
                                  "r": out((4, 1), "float32")},
                       [{"tensor_scalar_reduce": {"dst": "y", "data": "x", "op0": "multiply",
                                                  "operand0": 1.0, "reduce_op": "add",
                                                  "reduce_res": "r"}}])
    want = np_row_sums(x)
    assert np.isnan(want[0, 0]) and want[1, 0] == np.inf and np.isnan(want[2, 0])
    assert_bits_equal(outs["r"], want)
    outs = run(write_program(tmp_path, {"x": sbuf(x), "y": out(x.shape, "float32"),
                                        "r": out((4, 1), "float32")},
                             [{"exponential": {"dst": "y", "src": "x", "max_value": 1.0,
                                               "reduce_cmd": "reset_reduce",
                                               "reduce_res": "r"}}], target="trn3"))
    with np.errstate(all="ignore"):
        e = np.exp((x - F32(1)).astype(np.float64)).astype(F32)
    assert_bits_equal(outs["r"], loop_sums(e, 0.0))


@pytest.mark.parametrize("P", [1, 37, 128])
def test_vector_chain_whole_row_then_loop_then_whole_row(tmp_path, P):
    """tensor_scalar_reduce (load_reduce) -> exponential (reduce) -> tensor_scalar_reduce
    (reduce): one Vector register, each step in its page's order."""
    rng = np.random.default_rng(P)
    a, c = (random_floats(rng, (P, 131), special=False) for _ in range(2))
    e = (random_floats(rng, (P, 3, 5), special=False) / F32(8)).astype(F32)
    init = (rng.standard_normal((P, 1)) * 100).astype(F32)
    tsr = {"op0": "multiply", "operand0": 0.5, "reduce_op": "add"}
    outs = run(write_program(tmp_path, {
        "a": sbuf(a), "c": sbuf(c), "e": sbuf(e), "i": sbuf(init),
        "y1": tmp(a.shape, "float32"), "y2": tmp(e.shape, "float32"),
        "y3": tmp(c.shape, "float32"), "r": out((P, 1), "float32")}, [
        {"tensor_scalar_reduce": {"dst": "y1", "data": "a", **tsr,
                                  "reduce_cmd": "load_reduce", "reduce_init": "i"}},
        {"exponential": {"dst": "y2", "src": "e", "reduce_cmd": "reduce"}},
        {"tensor_scalar_reduce": {"dst": "y3", "data": "c", **tsr, "reduce_cmd": "reduce",
                                  "reduce_res": "r"}}], target="trn3"))
    reg = init + np_row_sums(a * F32(0.5))
    with np.errstate(over="ignore"):
        reg = loop_sums(np.exp(e.reshape(P, -1).astype(np.float64)).astype(F32), reg)
    reg = reg + np_row_sums(c * F32(0.5))
    assert_bits_equal(outs["r"], reg)


def test_scalar_chain_activation_then_activate2(tmp_path):
    """activation (np.sum of the row) then activate2 (its loop) on one Scalar register."""
    rng = np.random.default_rng(3)
    a = random_floats(rng, (37, 200), special=False)
    b = random_floats(rng, (37, 77), special=False)
    outs = run(write_program(tmp_path, {
        "a": sbuf(a), "b": sbuf(b), "y": tmp(a.shape, "float32"),
        "z": tmp(b.shape, "float32"), "r": out((37, 1), "float32")}, [
        {"activation": {"dst": "y", "op": "copy", "data": "a", "reduce_op": "add",
                        "reduce_cmd": "reset_reduce"}},
        {"activate2": {"dst": "z", "op": "copy", "data": "b", "imm0": 2.0, "imm1": 0.0,
                       "op0": "multiply", "op1": "add", "reduce_op": "add",
                       "reduce_cmd": "reduce", "reduce_res": "r"}}], target="trn3"))
    assert_bits_equal(outs["r"], loop_sums(b * F32(2), np_row_sums(a)))


def test_select_max_chain_keeps_nan_and_masked_rows(tmp_path):
    """select_reduce / range_select: np.max of the row, combined with the register."""
    x = np.arange(4 * 6, dtype=F32).reshape(4, 6)
    x[1, 2] = np.nan
    pred = np.ones((4, 6), np.uint8)
    outs = run_program(tmp_path, {"x": sbuf(x), "p": sbuf(pred, "uint8"),
                                  "y": tmp(x.shape, "float32"), "r": out((4, 1), "float32")},
                       [{"select_reduce": {"dst": "y", "predicate": "p", "on_true": "x",
                                           "on_false": -1.0, "reduce_cmd": "reset_reduce"}},
                        {"select_reduce": {"dst": "y", "predicate": "p", "on_true": "x",
                                           "on_false": -1.0, "reduce_cmd": "reduce",
                                           "reduce_res": "r"}}])
    want = np.maximum(np.max(x, axis=1, keepdims=True), np.max(x, axis=1, keepdims=True))
    assert_bits_equal(outs["r"], want)
