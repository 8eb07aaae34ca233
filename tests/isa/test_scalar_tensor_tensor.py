"""scalar_tensor_tensor against a NumPy reference written from its NKI page: (data op0
operand0) op1 operand1, operand0 a scalar or (P, 1) column, operand1 a full tile, reverse
flags swapping each operator's operands, float32 math, one cast to dst."""
from __future__ import annotations

import numpy as np
import pytest

import reference as ref
from prog_helpers import (assert_bits_equal, codes, diagnostics, out, random_floats,
                          run_program, sbuf, write_program)
from nkirun.api import cost

F32 = np.float32
FN = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
      "maximum": np.maximum, "minimum": np.minimum,
      "greater": lambda a, b: (a > b).astype(F32)}


def ref_stt(data, op0, operand0, op1, operand1, reverse0=False, reverse1=False,
            out_dtype="float32"):
    P = data.shape[0]
    x = data.astype(F32).reshape(P, -1)
    v = np.asarray(operand0, F32).reshape(-1, 1) if np.ndim(operand0) else F32(operand0)
    w = operand1.astype(F32).reshape(P, -1)
    with np.errstate(all="ignore"):
        t = (FN[op0](v, x) if reverse0 else FN[op0](x, v)).astype(F32)
        y = (FN[op1](w, t) if reverse1 else FN[op1](t, w)).astype(F32)
    return ref.cast_to(y.reshape(data.shape), out_dtype)


@pytest.mark.parametrize("P", [1, 37, 128])
@pytest.mark.parametrize("free", [(5,), (129,), (3, 7)])
@pytest.mark.parametrize("rev0,rev1", [(False, False), (True, False), (False, True),
                                       (True, True)])
def test_matrix(tmp_path, P, free, rev0, rev1):
    rng = np.random.default_rng(P + 5 * len(free))
    x, w = random_floats(rng, (P,) + free), random_floats(rng, (P,) + free)
    col = random_floats(rng, (P, 1), special=False)
    outs = run_program(tmp_path, {"x": sbuf(x), "w": sbuf(w), "c": sbuf(col),
                                  "y": out(x.shape, "float32")},
                       [{"scalar_tensor_tensor": {
                           "dst": "y", "data": "x", "op0": "subtract", "operand0": "c",
                           "op1": "subtract", "operand1": "w", "reverse0": rev0,
                           "reverse1": rev1}}])
    assert_bits_equal(outs["y"], ref_stt(x, "subtract", col, "subtract", w, rev0, rev1))


@pytest.mark.parametrize("op0,op1", [("add", "maximum"), ("maximum", "minimum"),
                                     ("multiply", "add"), ("greater", "multiply")])
@pytest.mark.parametrize("dtypes", [("bfloat16", "float32", "bfloat16"),
                                    ("float16", "bfloat16", "float8_e4m3"),
                                    ("int8", "float32", "int16")])
def test_ops_and_dtypes(tmp_path, op0, op1, dtypes):
    rng = np.random.default_rng(9)
    dx, dw, dy = dtypes
    x = ref.cast_to(random_floats(rng, (37, 20), special=False) * 3, dx)
    w = ref.cast_to(random_floats(rng, (37, 20), special=False), dw)
    outs = run_program(tmp_path, {"x": sbuf(x), "w": sbuf(w, buffer="psum"),
                                  "y": out(x.shape, dy)},
                       [{"scalar_tensor_tensor": {"dst": "y", "data": "x", "op0": op0,
                                                  "operand0": 0.75, "op1": op1,
                                                  "operand1": "w"}}])
    assert_bits_equal(outs["y"], ref_stt(x, op0, 0.75, op1, w, out_dtype=dy))


def test_rules(tmp_path):
    t = np.ones((4, 8), F32)
    d = diagnostics(tmp_path, {"x": sbuf(t, buffer="psum"), "w": sbuf(t, buffer="psum"),
                               "s": sbuf(t), "y": out((4, 8), "float32"),
                               "short": sbuf(np.ones((4, 7), F32))},
                    [{"scalar_tensor_tensor": {"dst": "y", "data": "x", "op0": "add",
                                               "operand0": 1.0, "op1": "add", "operand1": "w"}},
                     {"scalar_tensor_tensor": {"dst": "y", "data": "s", "op0": "abs",
                                               "operand0": 2.0, "op1": "add", "operand1": "s"}},
                     {"scalar_tensor_tensor": {"dst": "y", "data": "s", "op0": "add",
                                               "operand0": 1.0, "op1": "bitwise_or",
                                               "operand1": "s"}},
                     {"scalar_tensor_tensor": {"dst": "y", "data": "s", "op0": "add",
                                               "operand0": 1.0, "op1": "add",
                                               "operand1": "short"}}])
    got = codes(d)
    for code in ("E320", "E321", "E025", "E063"):
        assert code in got, (code, got)


@pytest.mark.parametrize("dtype,op0,op1,n,cycles", [
    ("bfloat16", "subtract", "multiply", 100, 100), ("bfloat16", "subtract", "multiply", 101, 202),
    ("float32", "subtract", "multiply", 100, 200), ("bfloat16", "add", "multiply", 100, 200)])
def test_cost(tmp_path, dtype, op0, op1, n, cycles):
    t = ref.cast_to(np.ones((128, n), F32), dtype)
    path = write_program(tmp_path, {"x": sbuf(t), "w": sbuf(t), "y": out((128, n), dtype)},
                         [{"scalar_tensor_tensor": {"dst": "y", "data": "x", "op0": op0,
                                                    "operand0": 1.0, "op1": op1,
                                                    "operand1": "w"}}])
    assert cost(path).slots[0].cycles == cycles


def test_explain_example_checks_and_runs(tmp_path):
    from prog_helpers import run_spec_example
    tensors = {
        "x": sbuf(np.full((4, 8), 3, np.float32)),
        "row_mean": sbuf(np.ones((4, 1), np.float32)),
        "gamma": sbuf(np.full((4, 8), 0.5, np.float32)),
        "y": out((4, 8), "float32"),
    }
    outs = run_spec_example(tmp_path, "scalar_tensor_tensor", tensors)
    np.testing.assert_array_equal(outs["y"], np.ones((4, 8), np.float32))


@pytest.mark.parametrize("dtype", ["float32", "tfloat32", "bfloat16", "int16"])
def test_inputs_are_not_modified(tmp_path, dtype):
    """The intermediate may go into a widened copy of data, never into data itself (float32
    and tfloat32 tiles are read without a copy)."""
    x = ref.cast_to(np.arange(24, dtype=F32).reshape(3, 8) - 5, dtype)
    w = np.full((3, 8), 2.0, F32)
    outs = run_program(tmp_path, {"x": sbuf(x, output=True) if dtype != "tfloat32" else
                                  {"buffer": "sbuf", "shape": [3, 8], "dtype": "tfloat32",
                                   "data": x.tolist(), "output": True},
                                  "w": sbuf(w), "y": out((3, 8), "float32")},
                       [{"scalar_tensor_tensor": {"dst": "y", "data": "x", "op0": "add",
                                                  "operand0": 1.0, "op1": "multiply",
                                                  "operand1": "w"}}])
    assert_bits_equal(outs["x"].view(x.dtype) if outs["x"].dtype.kind == "V" else outs["x"], x)
    assert_bits_equal(outs["y"], ref_stt(x, "add", 1.0, "multiply", w))
