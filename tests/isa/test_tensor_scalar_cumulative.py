"""tensor_scalar_cumulative against the NKI page's pseudo-code, transcribed as a loop over
the free axis: reg = op1(op0(src[i], imm0), reg); dst[i] = reg; reg starting at op1's
identity (reset_reduce), imm1 (load_reduce) or where the Vector accumulator was (reduce)."""
from __future__ import annotations

import numpy as np
import pytest

import reference as ref
from prog_helpers import (assert_bits_equal, codes, diagnostics, out, random_floats,
                          run_program, sbuf, tmp, write_program)
from nkirun.api import cost

F32 = np.float32
FN = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
      "maximum": np.maximum, "minimum": np.minimum}
IDENTITY = {"add": 0.0, "subtract": 0.0, "multiply": 1.0, "maximum": -np.inf,
            "minimum": np.inf}


def ref_cumulative(src, op0, imm0, op1, reg=None):
    """(dst values as float32, final register); the page's loop, float32 throughout."""
    P = src.shape[0]
    x = src.astype(F32).reshape(P, -1)
    v0 = np.asarray(imm0, F32).reshape(-1, 1) if np.ndim(imm0) else F32(imm0)
    if reg is None:
        reg = np.full((P, 1), IDENTITY[op1], F32)
    reg = np.array(np.broadcast_to(np.asarray(reg, F32).reshape(-1, 1), (P, 1)))
    outv = np.empty_like(x)
    with np.errstate(all="ignore"):
        for i in range(x.shape[1]):
            value = FN[op0](x[:, i:i + 1], v0).astype(F32)
            reg = FN[op1](value, reg).astype(F32)
            outv[:, i:i + 1] = reg
    return outv, reg


def _cum(**kw):
    args = {"dst": "y", "src": "x", "op0": "add", "op1": "add", "imm0": 0.0}
    args.update(kw)
    return {"tensor_scalar_cumulative": args}


@pytest.mark.parametrize("P", [1, 37, 128])
@pytest.mark.parametrize("free", [(5,), (129,), (3, 7)])
@pytest.mark.parametrize("op1", ["add", "subtract", "multiply", "maximum", "minimum"])
def test_scan_matrix(tmp_path, P, free, op1):
    rng = np.random.default_rng(P * 3 + len(free))
    x = random_floats(rng, (P,) + free, special=False)
    if op1 == "multiply":
        x = (np.abs(x) % F32(0.5) + F32(0.75)).astype(F32)
    col = rng.standard_normal((P, 1)).astype(F32)
    outs = run_program(tmp_path, {"x": sbuf(x), "c": sbuf(col), "y": out(x.shape, "float32")},
                       [_cum(op0="multiply", imm0="c", op1=op1)])
    want, _ = ref_cumulative(x, "multiply", col, op1)
    assert_bits_equal(outs["y"], want.reshape(x.shape))


def test_specials_propagate(tmp_path):
    x = np.array([[1.0, np.nan, 2.0, 3.0], [np.inf, -np.inf, 1.0, 2.0]], F32)
    for op1 in ("add", "maximum", "minimum", "subtract"):
        outs = run_program(tmp_path, {"x": sbuf(x), "y": out(x.shape, "float32")},
                           [_cum(op1=op1)])
        want, _ = ref_cumulative(x, "add", 0.0, op1)
        np.testing.assert_array_equal(outs["y"], want)  # NaN == NaN position-wise


def test_sdk_examples(tmp_path):
    """The SDK doc test's goldens: ones (128, 64); add/multiply/max; load_reduce; chains."""
    src = np.ones((128, 64), F32)
    ones = np.ones((128, 1), F32)
    cases = [
        ([_cum()], np.add.accumulate(src, axis=-1)),
        ([_cum(op1="multiply")], np.multiply.accumulate(src, axis=-1)),
        ([_cum(imm0="o", op1="maximum")], np.maximum.accumulate(src + ones, axis=-1)),
        ([_cum(imm0="o", imm1="o", reduce_cmd="load_reduce")],
         np.add.accumulate(src + ones, axis=-1) + ones),
        ([_cum(imm0="o", imm1="z", op1="minimum", reduce_cmd="load_reduce")],
         np.zeros((128, 64), F32)),
        ([_cum(), _cum(reduce_cmd="reduce")], np.add.accumulate(src, axis=-1) + 64),
        ([_cum(imm1=1.0, reduce_cmd="load_reduce"), _cum(imm1=1.0, reduce_cmd="reduce")],
         np.add.accumulate(src, axis=-1) + 65),
    ]
    for prog, golden in cases:
        outs = run_program(tmp_path, {"x": sbuf(src), "o": sbuf(ones),
                                      "z": sbuf(np.zeros((128, 1), F32)),
                                      "y": out(src.shape, "float32")}, prog)
        assert_bits_equal(outs["y"], golden.astype(F32))


@pytest.mark.parametrize("dtype", ["bfloat16", "int16", "uint8", "float8_e4m3"])
def test_dtypes(tmp_path, dtype):
    x = ref.cast_to(np.arange(24, dtype=F32).reshape(2, 12) % 5, dtype)
    outs = run_program(tmp_path, {"x": sbuf(x), "y": out(x.shape, dtype)}, [_cum()])
    want, _ = ref_cumulative(x, "add", 0.0, "add")
    assert_bits_equal(outs["y"], ref.cast_to(want, dtype))


def test_register_feeds_the_next_accumulator_user(tmp_path):
    """The final register is the shared Vector accumulator: tensor_scalar_reduce with
    reduce_cmd=reduce continues from it."""
    x = np.arange(1, 9, dtype=F32).reshape(2, 4)
    outs = run_program(tmp_path, {"x": sbuf(x), "y": tmp(x.shape, "float32"),
                                  "z": tmp(x.shape, "float32"), "r": out((2, 1), "float32")},
                       [_cum(), {"tensor_scalar_reduce": {
                           "dst": "z", "data": "y", "op0": "multiply", "operand0": 0.0,
                           "reduce_op": "add", "reduce_cmd": "reduce", "reduce_res": "r"}}])
    assert_bits_equal(outs["r"], x.sum(axis=1, keepdims=True))


def test_rules(tmp_path):
    x = np.ones((4, 8), np.int32)
    d = diagnostics(tmp_path, {"x": sbuf(x), "y": out(x.shape, "int32"),
                               "f": sbuf(np.ones((4, 8), F32))},
                    [_cum(), _cum(src="f", dst="f", reduce_cmd="load_reduce"),
                     _cum(src="f", dst="f", op1="divide"),
                     _cum(src="f", dst="f", reduce_cmd="idle"),
                     _cum(src="f", dst="f", op0="abs", imm0=1.0)])
    got = codes(d)
    for code in ("E060", "E340", "E025", "E341"):
        assert code in got, (code, got)


def test_reduce_first_warns(tmp_path):
    x = np.ones((4, 4), F32)
    d = diagnostics(tmp_path, {"x": sbuf(x), "y": out(x.shape, "float32")},
                    [_cum(reduce_cmd="reduce")])
    assert codes(d) == ["W052"]


def test_cost(tmp_path):
    path = write_program(tmp_path, {"x": sbuf(np.ones((128, 700), F32)),
                                    "y": out((128, 700), "float32")}, [_cum()])
    slot = cost(path).slots[0]
    assert slot.cycles == 700 and slot.assumed


def test_explain_example_checks_and_runs(tmp_path):
    from prog_helpers import run_spec_example
    tensors = {
        "x": sbuf(np.ones((4, 8), np.float32)),
        "running": out((4, 8), "float32"),
    }
    outs = run_spec_example(tmp_path, "tensor_scalar_cumulative", tensors)
    np.testing.assert_array_equal(outs["running"], np.cumsum(np.ones((4, 8), np.float32), axis=1))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int16"])
def test_src_is_not_modified(tmp_path, dtype):
    x = ref.cast_to(np.arange(24, dtype=F32).reshape(3, 8) - 5, dtype)
    outs = run_program(tmp_path, {"x": sbuf(x, output=True), "y": out((3, 8), "float32")},
                       [_cum(op0="multiply", imm0=2.0)])
    assert_bits_equal(outs["x"].view(x.dtype) if outs["x"].dtype.kind == "V" else outs["x"], x)
    assert_bits_equal(outs["y"], ref_cumulative(x, "multiply", 2.0, "add")[0])
