"""activate2 (NeuronCore-v4) against the NKI page's behaviour block, transcribed with
NumPy: (data op0 imm0) op1 imm1 in float32 (bypass = nothing, reverse flags swap), the
activation function (float64, rounded once; prelu with relu_param), and the accumulator
loop `accumulator = reduce_op(accumulator, dst[i])` over the Scalar registers."""
from __future__ import annotations

import math

import numpy as np
import pytest

import reference as ref
from prog_helpers import (assert_bits_equal, codes, out, random_floats, sbuf, tmp,
                          write_program)
from nkirun.api import check_program, cost, run

F32 = np.float32
EXAMPLE_TARGET = "trn3"  # for a registry-wide run of SPEC.example: NeuronCore-v4 only
ALU = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply}
FUNCS = {"copy": lambda z, a: z, "exp": lambda z, a: np.exp(z), "tanh": lambda z, a: np.tanh(z),
         "relu": lambda z, a: np.maximum(z, 0.0),
         "prelu": lambda z, a: np.where(z >= 0, z, (a * z.astype(F32)).astype(np.float64))}
REDUCE = {"add": lambda acc, v: acc + v, "maximum": np.maximum, "minimum": np.minimum,
          "abs_max": lambda acc, v: np.where(np.abs(acc) > np.abs(v), acc, v),  # nl.abs_max:
          "abs_min": lambda acc, v: np.where(np.abs(acc) < np.abs(v), acc, v)}  # y on a tie
IDENTITY = {"add": 0.0, "maximum": -np.inf, "minimum": np.inf, "abs_max": 0.0, "abs_min": np.inf}


def program(tmp_path, tensors, instructions, target="trn3"):
    """activate2 exists on NeuronCore-v4 (trn3) only."""
    return write_program(tmp_path, tensors, instructions, target=target)


def col(v, P):
    return np.asarray(v, F32).reshape(-1, 1) if np.ndim(v) else np.full((P, 1), v, F32)


def ref_activate2(data, op, imm0, imm1, op0, op1, relu_param=0.0, reverse0=False,
                  reverse1=False):
    P = data.shape[0]
    val = data.astype(F32).reshape(P, -1)
    for o, imm, rev in ((op0, imm0, reverse0), (op1, imm1, reverse1)):
        if o != "bypass":
            v = col(imm, P)
            val = (ALU[o](v, val) if rev else ALU[o](val, v)).astype(F32)
    with np.errstate(all="ignore"):
        return FUNCS[op](val.astype(np.float64), col(relu_param, P)).astype(F32)


def ref_fold(y, reduce_op, start=None):
    acc = np.full((y.shape[0], 1), IDENTITY[reduce_op] if start is None else 0.0, F32)
    if start is not None:
        acc[:] = start
    with np.errstate(all="ignore"):
        for i in range(y.shape[1]):
            acc = REDUCE[reduce_op](acc, y[:, i:i + 1]).astype(F32)
    return acc


def _a2(**kw):
    args = {"dst": "y", "op": "copy", "data": "x", "imm0": 2.0, "imm1": 0.5,
            "op0": "multiply", "op1": "add"}
    args.update(kw)
    return {"activate2": args}


@pytest.mark.parametrize("P", [1, 37, 128])
@pytest.mark.parametrize("free", [(5,), (129,), (3, 7)])
@pytest.mark.parametrize("pair", [("multiply", "add"), ("multiply", "subtract"),
                                  ("multiply", "bypass"), ("add", "bypass"),
                                  ("subtract", "bypass"), ("bypass", "bypass")])
def test_pairs(tmp_path, P, free, pair):
    rng = np.random.default_rng(P + len(free))
    x = random_floats(rng, (P,) + free) / F32(4)
    c = random_floats(rng, (P, 1), special=False)
    outs = run(program(tmp_path, {"x": sbuf(x), "c": sbuf(c), "y": out(x.shape, "float32")},
                       [_a2(op="tanh", imm0="c", op0=pair[0], op1=pair[1], imm1=-1.25)]))
    assert_bits_equal(outs["y"], ref_activate2(x, "tanh", c, -1.25, *pair).reshape(x.shape))


@pytest.mark.parametrize("reverse0,reverse1", [(True, False), (False, True), (True, True)])
def test_reverse_flags(tmp_path, reverse0, reverse1):
    rng = np.random.default_rng(2)
    x = random_floats(rng, (37, 20), special=False)
    outs = run(program(tmp_path, {"x": sbuf(x), "y": out(x.shape, "float32")},
                       [_a2(op0="multiply", op1="subtract", imm0=3.0, imm1=1.0,
                            reverse0=reverse0, reverse1=reverse1)]))
    want = ref_activate2(x, "copy", 3.0, 1.0, "multiply", "subtract", 0.0, reverse0, reverse1)
    assert_bits_equal(outs["y"], want)


def test_prelu_with_a_column_relu_param(tmp_path):
    x = np.array([[-2.0, -0.5, 0.0, 3.0], [-4.0, 1.0, -1.0, 2.0]], F32)
    alpha = np.array([[0.1], [0.25]], F32)
    outs = run(program(tmp_path, {"x": sbuf(x), "a": sbuf(alpha), "y": out(x.shape, "float32")},
                       [_a2(op="prelu", op0="bypass", op1="bypass", relu_param="a")]))
    assert_bits_equal(outs["y"], ref_activate2(x, "prelu", 2.0, 0.5, "bypass", "bypass", alpha))


@pytest.mark.parametrize("reduce_op", ["add", "maximum", "minimum", "abs_max", "abs_min"])
def test_reduce_ops_and_chain(tmp_path, reduce_op):
    rng = np.random.default_rng(4)
    a, b = (random_floats(rng, (37, 30), special=False) for _ in range(2))
    outs = run(program(tmp_path, {"a": sbuf(a), "b": sbuf(b), "y": tmp((37, 30), "bfloat16"),
                                  "r1": out((37, 1), "float32"), "r2": out((37, 1), "float32")},
                       [_a2(data="a", reduce_op=reduce_op, reduce_cmd="reset_reduce",
                            reduce_res="r1"),
                        _a2(data="b", reduce_op=reduce_op, reduce_cmd="reduce",
                            reduce_res="r2")]))
    ya = ref_activate2(a, "copy", 2.0, 0.5, "multiply", "add")
    yb = ref_activate2(b, "copy", 2.0, 0.5, "multiply", "add")
    first = ref_fold(ya, reduce_op)
    assert_bits_equal(outs["r1"], first)
    assert_bits_equal(outs["r2"], ref_fold(yb, reduce_op, first))


def test_reset_and_sharing_with_activation(tmp_path):
    """reset sets the registers to reduce_op's identity; activation(reduce) then adds its
    row sums onto the registers activate2 left."""
    x = np.arange(1, 9, dtype=F32).reshape(2, 4)
    outs = run(program(tmp_path, {"x": sbuf(x), "y": tmp((2, 4), "float32"),
                                  "m": out((2, 1), "float32"), "r": out((2, 1), "float32")},
                       [_a2(reduce_op="maximum", reduce_cmd="reset"),
                        _a2(reduce_op="maximum", reduce_cmd="reduce", reduce_res="m"),
                        {"activation": {"dst": "y", "op": "copy", "data": "x",
                                        "reduce_op": "add", "reduce_cmd": "reduce",
                                        "reduce_res": "r"}}]))
    top = (x * 2 + 0.5).max(axis=1, keepdims=True)
    assert_bits_equal(outs["m"], top)
    assert_bits_equal(outs["r"], top + x.sum(axis=1, keepdims=True))


def test_only_on_neuroncore_v4_and_rules(tmp_path):
    x = np.ones((4, 8), F32)
    t = {"x": sbuf(x), "y": out((4, 8), "float32"), "r": out((4, 1), "float32"),
         "h": sbuf(np.ones((4, 1), np.float16)), "f": sbuf(np.ones((4, 1), F32))}
    assert "E310" in codes(check_program(program(tmp_path, t, [_a2()], "trn2")).diagnostics)
    d = check_program(program(tmp_path, t, [
        _a2(op0="add", op1="add"), _a2(imm0="h", imm1="f"),
        _a2(op0="bypass", op1="bypass", reverse0=True), _a2(reduce_res="r"),
        _a2(reduce_op="multiply")])).diagnostics
    got = codes(d)
    for code in ("E311", "E312", "E313", "E314", "E025"):
        assert code in got, (code, got)


def test_reduce_first_warns(tmp_path):
    path = program(tmp_path, {"x": sbuf(np.ones((4, 4), F32)), "y": out((4, 4), "float32"),
                              "r": out((4, 1), "float32")},
                   [_a2(reduce_op="add", reduce_cmd="reduce", reduce_res="r")])
    assert codes(check_program(path).diagnostics) == ["W052"]


def test_cost(tmp_path):
    path = program(tmp_path, {"x": sbuf(np.ones((128, 400), F32)), "y": out((128, 400), "float32"),
                              "r": out((128, 1), "float32")},
                   [_a2(reduce_op="add", reduce_cmd="reset_reduce", reduce_res="r")])
    slot = cost(path).slots[0]
    assert slot.engine == "scalar" and slot.assumed and slot.cycles == 400 + 64


def test_explain_example_checks_and_runs(tmp_path):
    from prog_helpers import run_spec_example
    tensors = {
        "x": sbuf(np.zeros((4, 8), np.float32)),
        "y": out((4, 8), "float32"),
        "row_max": out((4, 1), "float32"),
    }
    outs = run_spec_example(tmp_path, "activate2", tensors, target="trn3")
    np.testing.assert_allclose(
        outs["row_max"], 0.5 * (1 + math.erf(0.5 / math.sqrt(2))) * 0.5, rtol=1e-6)


@pytest.mark.parametrize("reduce_op", ["abs_max", "abs_min", "maximum", "add"])
def test_magnitude_folds_keep_the_sign_ties_and_nan(tmp_path, reduce_op):
    """nl.abs_max/abs_min return the signed value, the later one on a tie; a NaN wins when it
    arrives and loses to the next element (the page's loop with those operators)."""
    x = np.array([[-5.0, 3.0, 5.0, -1.0], [2.0, np.nan, -4.0, 1.0], [1.0, -1.0, np.nan, 2.0],
                  [-3.0, 2.0, 1.0, np.nan], [0.0, -0.0, 0.0, -0.0], [7.0, -7.0, 7.0, 0.5]], F32)
    for cmd, start in (("reset_reduce", None), ("reduce", -6.0)):
        prog = [_a2(op0="bypass", op1="bypass", reduce_op=reduce_op, reduce_cmd=cmd,
                    reduce_res="r")]
        if start is not None:
            prog.insert(0, _a2(data="s", dst="t", op0="bypass", op1="bypass",
                               reduce_op=reduce_op, reduce_cmd="reset_reduce"))
        outs = run(program(tmp_path, {"x": sbuf(x), "s": sbuf(np.full((6, 1), start or 0, F32)),
                                      "y": out(x.shape, "float32"), "t": tmp((6, 1), "float32"),
                                      "r": out((6, 1), "float32")}, prog))
        first = None if start is None else ref_fold(np.full((6, 1), start, F32), reduce_op)
        assert_bits_equal(outs["r"], ref_fold(x, reduce_op, first))


@pytest.mark.parametrize("dtype", ["float32", "tfloat32", "bfloat16"])
def test_data_is_not_modified(tmp_path, dtype):
    x = ref.cast_to(np.arange(24, dtype=F32).reshape(3, 8) / 8 - 1, dtype)
    decl = {"buffer": "sbuf", "shape": [3, 8], "dtype": dtype, "data": x.astype(F32).tolist(),
            "output": True}
    outs = run(program(tmp_path, {"x": decl, "y": out((3, 8), "float32")}, [_a2(op="exp")]))
    assert_bits_equal(outs["x"].view(x.dtype) if outs["x"].dtype.kind == "V" else outs["x"], x)
    assert_bits_equal(outs["y"], ref_activate2(x, "exp", 2.0, 0.5, "multiply", "add"))


def test_inputs_outside_the_valid_range_warn_w202(tmp_path):
    from nkirun.runner.interpret import execute
    x = np.array([[1.0, 4.0, -2.0, 8.0]], F32)
    path = program(tmp_path, {"x": sbuf(x), "y": out(x.shape, "float32")},
                   [_a2(op="log", op0="multiply", imm0=1.0, op1="bypass")])
    c = check_program(path)
    seen = [w for w in execute(c.program, c.bound).warnings if w.code == "W202"]
    assert len(seen) == 1 and "activate2(log)" in seen[0].message and "-2.0" in seen[0].message
