"""tensor_scalar_reduce against a NumPy reference written from its NKI page: dst = data op0
operand0 in float32, and reduce_op folded over the free axes into the Vector-engine
accumulator (reset_reduce: reduce_op's identity, load_reduce: reduce_init, reduce:
continue; each row reduced as NumPy does, then combined with the register), reduce_res = the register (negated with reduce_res_negate)."""
from __future__ import annotations

import numpy as np
import pytest

import reference as ref
from prog_helpers import (assert_bits_equal, codes, diagnostics, out, random_floats,
                          run_program, sbuf, tmp, write_program)
from nkirun.api import cost

F32 = np.float32
OP0 = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
       "maximum": np.maximum, "minimum": np.minimum}
IDENTITY = {"add": 0.0, "multiply": 1.0, "maximum": -np.inf, "minimum": np.inf}
FOLD = {"add": lambda a, b: a + b, "multiply": lambda a, b: a * b,
        "maximum": np.maximum, "minimum": np.minimum}
ROW_REDUCE = {"add": np.sum, "multiply": np.prod, "maximum": np.max, "minimum": np.min}


def ref_tsr(x, op0, v, reduce_op, start=None):
    """(dst as float32 (P, N), register (P, 1)): the page's math, `reduce_res =
    reduce_op(dst, axis=<FreeAxis>)` as NumPy reduces each row (np.add: pairwise), combined
    once with the register's start value."""
    P = x.shape[0]
    y = OP0[op0](x.astype(F32).reshape(P, -1), np.asarray(v, F32).reshape(-1, 1)
                 if np.ndim(v) else F32(v)).astype(F32)
    acc = np.full((P, 1), IDENTITY[reduce_op] if start is None else 0, F32)
    if start is not None:
        acc[:] = np.asarray(start, F32).reshape(-1, 1) if np.ndim(start) else start
    with np.errstate(all="ignore"):
        rows = np.array([ROW_REDUCE[reduce_op](r) for r in y], F32).reshape(-1, 1)
        acc = FOLD[reduce_op](acc, rows).astype(F32)
    return y, acc


def _tsr(**kw):
    args = {"dst": "y", "data": "x", "op0": "multiply", "operand0": 1.5, "reduce_op": "add"}
    args.update(kw)
    return {"tensor_scalar_reduce": args}


@pytest.mark.parametrize("P", [1, 37, 128])
@pytest.mark.parametrize("free", [(5,), (129,), (3, 7)])
@pytest.mark.parametrize("reduce_op", ["add", "multiply", "maximum", "minimum"])
def test_reset_reduce_matrix(tmp_path, P, free, reduce_op):
    rng = np.random.default_rng(P + len(free))
    x = random_floats(rng, (P,) + free, special=reduce_op in ("maximum", "minimum"))
    if reduce_op == "multiply":
        x = (np.abs(x) % F32(1.5) + F32(0.5)).astype(F32)
    col = (rng.standard_normal((P, 1)) + 1).astype(F32)
    outs = run_program(tmp_path, {"x": sbuf(x), "c": sbuf(col), "y": out(x.shape, "float32"),
                                  "r": out((P, 1), "float32")},
                       [_tsr(op0="subtract", operand0="c", reduce_op=reduce_op,
                             reduce_res="r")])
    y, acc = ref_tsr(x, "subtract", col, reduce_op)
    assert_bits_equal(outs["y"], y.reshape(x.shape))
    assert_bits_equal(outs["r"], acc)


@pytest.mark.parametrize("init", [-3.0, "c"])
def test_load_reduce_and_negate(tmp_path, init):
    rng = np.random.default_rng(5)
    x = random_floats(rng, (37, 33), special=False)
    col = (rng.standard_normal((37, 1)) * 10).astype(F32)
    outs = run_program(tmp_path, {"x": sbuf(x), "c": sbuf(col), "y": out(x.shape, "bfloat16"),
                                  "r": out((37, 1), "float32")},
                       [_tsr(reduce_cmd="load_reduce", reduce_init=init, reduce_res="r",
                             reduce_res_negate=True, reduce_op="maximum")])
    y, acc = ref_tsr(x, "multiply", 1.5, "maximum", start=col if init == "c" else init)
    assert_bits_equal(outs["y"], ref.cast_to(y, "bfloat16"))
    assert_bits_equal(outs["r"], -acc)


def test_chain_without_reduce_res_then_read_out(tmp_path):
    """NKI 0.6: reduce_res=None keeps the result in the register for the next call."""
    rng = np.random.default_rng(6)
    a, b = (random_floats(rng, (16, 40), special=False) for _ in range(2))
    outs = run_program(tmp_path, {"a": sbuf(a), "b": sbuf(b), "y": tmp((16, 40), "float32"),
                                  "z": out((16, 40), "float32"), "r": out((16, 1), "float32")},
                       [_tsr(data="a"), _tsr(dst="z", data="b", reduce_cmd="reduce",
                                             reduce_res="r")])
    _, first = ref_tsr(a, "multiply", 1.5, "add")
    _, acc = ref_tsr(b, "multiply", 1.5, "add", start=first)
    assert_bits_equal(outs["r"], acc)


def test_unary_op0_and_reverse0(tmp_path):
    x = np.array([[-2.0, 3.0, -0.5, 4.0]], F32)
    outs = run_program(tmp_path, {"x": sbuf(x), "y": out(x.shape, "float32"),
                                  "r": out((1, 1), "float32")},
                       [_tsr(op0="abs", operand0=0, reduce_op="maximum", reduce_res="r")])
    assert_bits_equal(outs["y"], np.abs(x))
    assert outs["r"][0, 0] == 4.0
    d = diagnostics(tmp_path, {"x": sbuf(x), "y": out(x.shape, "float32")},
                    [_tsr(op0="abs", operand0=2.0), _tsr(reverse0=True),
                     _tsr(reduce_cmd="load_reduce"), _tsr(reduce_init=1.0),
                     _tsr(reduce_op="subtract"), _tsr(op0="bitwise_and")])
    got = codes(d)
    assert "E333" in codes(diagnostics(tmp_path, {"x": sbuf(x), "y": out(x.shape, "float32")},
                                       [_tsr(operand0=None)]))
    outs = run_program(tmp_path, {"x": sbuf(x), "y": out(x.shape, "float32"),
                                  "r": out((1, 1), "float32")},
                       [_tsr(op0="abs", operand0=None, reduce_res="r")])
    assert outs["r"][0, 0] == 9.5
    for code in ("E330", "E331", "E332", "E025"):
        assert code in got, (code, got)
    assert got.count("E331") == 2


def test_reduce_first_warns(tmp_path):
    x = np.ones((4, 4), F32)
    d = diagnostics(tmp_path, {"x": sbuf(x), "y": out(x.shape, "float32"),
                               "r": out((4, 1), "float32")},
                    [_tsr(reduce_cmd="reduce", reduce_res="r")])
    assert codes(d) == ["W052"]


def test_cost(tmp_path):
    path = write_program(tmp_path, {"x": sbuf(np.ones((128, 10), F32)),
                                    "y": out((128, 10), "float32")}, [_tsr()])
    assert cost(path).slots[0].cycles == 64 + 64
    path = write_program(tmp_path, {"x": sbuf(np.ones((128, 1000), F32)),
                                    "y": out((128, 1000), "float32")}, [_tsr()])
    assert cost(path).slots[0].cycles == 1000 + 64


def test_explain_example_checks_and_runs(tmp_path):
    from prog_helpers import run_spec_example
    tensors = {
        "x": sbuf(np.ones((4, 8), np.float32)),
        "y": out((4, 8), "float32"),
        "rowsum": out((4, 1), "float32"),
    }
    outs = run_spec_example(tmp_path, "tensor_scalar_reduce", tensors)
    np.testing.assert_array_equal(outs["rowsum"], np.full((4, 1), 4, np.float32))


def test_sum_of_negative_zeros_starts_from_plus_zero(tmp_path):
    """The register starts at +0.0, so a row of -0.0 sums to +0.0 (the page's loop), and
    multiply starting at 1.0 keeps a NaN's payload."""
    x = np.array([[-0.0, -0.0, -0.0], [-0.0, 1.0, -1.0], [2.0, np.nan, 3.0]], F32)
    for reduce_op in ("add", "multiply"):
        outs = run_program(tmp_path, {"x": sbuf(x), "y": out(x.shape, "float32"),
                                      "r": out((3, 1), "float32")},
                           [_tsr(operand0=1.0, reduce_op=reduce_op, reduce_res="r")])
        assert_bits_equal(outs["r"], ref_tsr(x, "multiply", 1.0, reduce_op)[1])


@pytest.mark.parametrize("dtype", ["float32", "tfloat32", "bfloat16"])
def test_data_is_not_modified(tmp_path, dtype):
    x = ref.cast_to(np.arange(24, dtype=F32).reshape(3, 8) - 5, dtype)
    decl = {"buffer": "sbuf", "shape": [3, 8], "dtype": dtype, "data": x.astype(F32).tolist(),
            "output": True}
    outs = run_program(tmp_path, {"x": decl, "y": out((3, 8), "float32"),
                                  "r": out((3, 1), "float32")},
                       [_tsr(op0="add", operand0=1.0, reduce_res="r")])
    assert_bits_equal(outs["x"].view(x.dtype) if outs["x"].dtype.kind == "V" else outs["x"], x)
