"""Signed zeros, instruction by instruction: every arithmetic instruction whose fast path
folds, scans, reorders or negates is run over tiles of +0.0, -0.0 and values that cancel
exactly (x - x is +0.0 in round-to-nearest, -0.0 - +0.0 is -0.0), and compared bit for
bit with its page's NumPy written as a plain loop over scalars (independent of nkirun)."""
from __future__ import annotations

import numpy as np
import pytest

from prog_helpers import assert_bits_equal, out, run_program, sbuf, write_program

from nkirun.api import run

F32 = np.float32
FN = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
      "maximum": np.maximum, "minimum": np.minimum}
P, N = 128, 8


def zeros_and_cancels(seed: int, n: int = N) -> np.ndarray:
    """(P, n) float32 of +-0 and +-1, +-2 (so sums and differences cancel exactly)."""
    rng = np.random.default_rng(seed)
    pool = np.array([0.0, -0.0, 0.0, -0.0, 1.0, -1.0, 2.0], F32)
    return pool[rng.integers(0, len(pool), (P, n))]


def column(seed: int) -> np.ndarray:
    return zeros_and_cancels(seed, 1)


def run_one(tmp_path, inst: dict, dst_shape=(P, N), **arrays) -> np.ndarray:
    tensors = {k: sbuf(v) for k, v in arrays.items()}
    tensors["y"] = out(dst_shape, "float32")
    return run_program(tmp_path, tensors, [inst])["y"]


def f32(fn, a, b):
    with np.errstate(all="ignore"):
        return F32(fn(F32(a), F32(b)))


# ---- the page loops -----------------------------------------------------------------------
def ref_cumulative(x, op1, start):
    """tensor_scalar_cumulative, op0 = multiply by 1.0: reg = op1(value, reg)."""
    y = np.empty_like(x)
    for p in range(x.shape[0]):
        reg = F32(start[p, 0])
        for i in range(x.shape[1]):
            reg = f32(FN[op1], f32(np.multiply, x[p, i], 1.0), reg)
            y[p, i] = reg
    return y


def ref_fold(x, op, negate=False):
    """tensor_reduce: x0 op x1 op ... in element order; negate: times -1."""
    y = np.empty((x.shape[0], 1), F32)
    for p in range(x.shape[0]):
        r = x[p, 0]
        for v in x[p, 1:]:
            r = f32(FN[op], r, v)
        y[p, 0] = f32(np.multiply, r, -1.0) if negate else r
    return y


def ref_partition_fold(x, op):
    y = x[0].copy()
    for p in range(1, x.shape[0]):
        y = np.array([f32(FN[op], a, b) for a, b in zip(y, x[p])], F32)
    return y.reshape(1, -1)


def ref_scan(d0, d1, init, op0, op1, reverse0, reverse1):
    y = np.empty_like(d0)
    for p in range(d0.shape[0]):
        prev = F32(init[p, 0])
        for i in range(d0.shape[1]):
            a = f32(FN[op0], prev, d0[p, i]) if reverse0 else f32(FN[op0], d0[p, i], prev)
            prev = f32(FN[op1], d1[p, i], a) if reverse1 else f32(FN[op1], a, d1[p, i])
            y[p, i] = prev
    return y


def elementwise(fn, a, b):
    a, b = np.broadcast_arrays(a, b)
    return np.array([f32(fn, u, v) for u, v in zip(a.ravel(), b.ravel())],
                    F32).reshape(a.shape)


# ---- the instructions ---------------------------------------------------------------------
@pytest.mark.parametrize("op1", list(FN))
@pytest.mark.parametrize("start", ["reset", "+0", "-0"])
def test_tensor_scalar_cumulative(tmp_path, op1, start):
    x = zeros_and_cancels(1)
    inst = {"dst": "y", "src": "x", "op0": "multiply", "imm0": 1.0, "op1": op1}
    identity = {"add": 0.0, "subtract": 0.0, "multiply": 1.0, "maximum": -np.inf,
                "minimum": np.inf}[op1]
    s = np.full((P, 1), identity, F32)
    if start != "reset":
        s = np.full((P, 1), float(start), F32)
        inst.update(reduce_cmd="load_reduce", imm1=float(start))
    got = run_one(tmp_path, {"tensor_scalar_cumulative": inst}, x=x)
    assert_bits_equal(got, ref_cumulative(x, op1, s))


@pytest.mark.parametrize("op", list(FN))
@pytest.mark.parametrize("negate", [False, True])
def test_tensor_reduce(tmp_path, op, negate):
    x = zeros_and_cancels(2)
    got = run_one(tmp_path, {"tensor_reduce": {"dst": "y", "op": op, "data": "x", "axis": 1,
                                               "negate": negate}}, (P, 1), x=x)
    assert_bits_equal(got, ref_fold(x, op, negate))


@pytest.mark.parametrize("op", ["add", "maximum"])
def test_tensor_partition_reduce(tmp_path, op):
    x = zeros_and_cancels(3)[:4]
    tensors = {"x": sbuf(x), "y": out((1, N), "float32")}
    got = run_program(tmp_path, tensors, [{"tensor_partition_reduce": {
        "dst": "y", "op": op, "data": "x"}}])["y"]
    assert_bits_equal(got, ref_partition_fold(x, op))


@pytest.mark.parametrize("op0,op1", [("add", "subtract"), ("subtract", "add"),
                                     ("subtract", "subtract"), ("maximum", "minimum"),
                                     ("multiply", "subtract")])
@pytest.mark.parametrize("reverse0,reverse1", [(False, False), (True, False), (False, True),
                                               (True, True)])
def test_tensor_tensor_scan(tmp_path, op0, op1, reverse0, reverse1):
    d0, d1, init = zeros_and_cancels(4), zeros_and_cancels(5), column(6)
    got = run_one(tmp_path, {"tensor_tensor_scan": {
        "dst": "y", "data0": "a", "data1": "b", "initial": "i", "op0": op0, "op1": op1,
        "reverse0": reverse0, "reverse1": reverse1}}, a=d0, b=d1, i=init)
    assert_bits_equal(got, ref_scan(d0, d1, init, op0, op1, reverse0, reverse1))


@pytest.mark.parametrize("op", list(FN))
def test_tensor_tensor(tmp_path, op):
    a, b = zeros_and_cancels(7), zeros_and_cancels(8)
    got = run_one(tmp_path, {"tensor_tensor": {"dst": "y", "data1": "a", "data2": "b",
                                               "op": op}}, a=a, b=b)
    assert_bits_equal(got, elementwise(FN[op], a, b))


@pytest.mark.parametrize("op0", ["subtract", "add", "maximum"])
@pytest.mark.parametrize("reverse0", [False, True])
def test_tensor_scalar(tmp_path, op0, reverse0):
    x, c = zeros_and_cancels(9), column(10)
    got = run_one(tmp_path, {"tensor_scalar": {"dst": "y", "data": "x", "op0": op0,
                                               "operand0": "c", "reverse0": reverse0}},
                  x=x, c=c)
    want = elementwise(FN[op0], c, x) if reverse0 else elementwise(FN[op0], x, c)
    assert_bits_equal(got, want)


@pytest.mark.parametrize("reverse0,reverse1", [(False, False), (True, True)])
def test_scalar_tensor_tensor(tmp_path, reverse0, reverse1):
    x, c, t = zeros_and_cancels(11), column(12), zeros_and_cancels(13)
    got = run_one(tmp_path, {"scalar_tensor_tensor": {
        "dst": "y", "data": "x", "op0": "subtract", "operand0": "c", "op1": "subtract",
        "operand1": "t", "reverse0": reverse0, "reverse1": reverse1}}, x=x, c=c, t=t)
    first = elementwise(np.subtract, c, x) if reverse0 else elementwise(np.subtract, x, c)
    want = elementwise(np.subtract, t, first) if reverse1 else elementwise(np.subtract, first, t)
    assert_bits_equal(got, want)


def test_activation_copy_with_bias(tmp_path):
    # op(data * scale + bias): -0 * 1 + -0 is -0, -0 * 1 + +0 is +0
    x, bias = zeros_and_cancels(14), column(15)
    got = run_one(tmp_path, {"activation": {"dst": "y", "op": "copy", "data": "x",
                                            "bias": "c", "scale": 1.0}}, x=x, c=bias)
    assert_bits_equal(got, elementwise(np.add, elementwise(np.multiply, x, F32(1)), bias))


@pytest.mark.parametrize("op1", list(FN))
def test_cumulative_scan_equals_its_plain_loop(op1):
    from nkirun.isa.tensor_scalar_cumulative import plain_scan, scan
    v = zeros_and_cancels(16, 40)
    v[::7, 3] = np.inf
    start = column(17)
    with np.errstate(all="ignore"):  # (0 * inf)
        assert_bits_equal(scan(op1, start, v.copy()), plain_scan(op1, start, v.copy()))


@pytest.mark.parametrize("reduce_op", ["maximum", "minimum", "add"])
def test_activate2_streamed_reduction(tmp_path, reduce_op):
    # the page's loop: accumulator = reduce_op(accumulator, dst[i]), from the identity
    x = zeros_and_cancels(18)
    tensors = {"x": sbuf(x), "y": out((P, N), "float32"), "r": out((P, 1), "float32")}
    got = run(write_program(tmp_path, tensors, [{"activate2": {  # (x * 1.0 + -0.0 is x)
        "dst": "y", "op": "copy", "data": "x", "imm0": 1.0, "imm1": -0.0, "op0": "multiply",
        "op1": "add", "reduce_op": reduce_op, "reduce_cmd": "reset_reduce",
        "reduce_res": "r"}}], target="trn3"))
    start = {"maximum": -np.inf, "minimum": np.inf, "add": 0.0}[reduce_op]
    want = np.empty((P, 1), F32)
    for p in range(P):
        acc = F32(start)
        for v in x[p]:
            acc = f32(FN[reduce_op], acc, v)
        want[p, 0] = acc
    assert_bits_equal(got["r"], want)


def _matching_rows(seed: int):
    """data (P, 20): 1..16 and four zeros of random signs, shuffled; vals (P, 8): two zeros
    of either sign and six of 1..16 (the page matches with ==, so -0.0 finds +0.0)."""
    rng = np.random.default_rng(seed)
    zeros = np.array([0.0, -0.0], F32)
    data = np.array([rng.permutation(np.concatenate([np.arange(1, 17, dtype=F32),
                                                     rng.choice(zeros, 4)])) for _ in range(P)])
    vals = np.array([np.concatenate([rng.choice(zeros, 2), rng.choice(
        np.arange(1, 17, dtype=F32), 6, replace=False)]) for _ in range(P)])
    return data, vals


def test_nc_match_replace8_matches_zeros_of_either_sign(tmp_path):
    import reference as ref
    data, vals = _matching_rows(19)
    tensors = {"d": sbuf(data), "v": sbuf(vals), "y": out((P, 20), "float32"),
               "i": out((P, 8), "uint32")}
    got = run_program(tmp_path, tensors, [{"nc_match_replace8": {
        "dst": "y", "data": "d", "vals": "v", "imm": -1.0, "dst_idx": "i"}}])
    want_y, want_i = ref.nc_match_replace8(data, vals, -1.0)
    assert_bits_equal(got["y"], want_y)
    assert_bits_equal(got["i"], want_i)


def test_nc_find_index8_finds_zeros_of_either_sign(tmp_path):
    data, vals = _matching_rows(20)
    tensors = {"d": sbuf(data), "v": sbuf(vals), "i": out((P, 8), "uint32")}
    got = run_program(tmp_path, tensors, [{"nc_find_index8": {
        "dst": "i", "data": "d", "vals": "v"}}])["i"]
    # NKI 0.6: the k-th copy of a value in vals (copies compared with ==) gets its k-th match
    want = np.array([[np.flatnonzero(data[p] == v)[np.count_nonzero(vals[p, :j] == v)]
                      for j, v in enumerate(vals[p])] for p in range(P)], np.uint32)
    assert_bits_equal(got, want)
