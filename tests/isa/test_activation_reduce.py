"""activation_reduce against a NumPy reference written from its NKI page: op(data*scale +
bias) in float32 (each function evaluated in float64, rounded once), its sum along all free
axes in element order into reduce_res, the Scalar registers reset first."""
from __future__ import annotations

import numpy as np
import pytest

import reference as ref
from prog_helpers import (assert_bits_equal, codes, diagnostics, out, random_floats,
                          run_program, sbuf, write_program)
from nkirun.api import check_program, cost

F32 = np.float32
FUNCS = {"exp": np.exp, "tanh": np.tanh, "square": np.square, "copy": lambda z: z}


def ref_activation(data, op, scale=1.0, bias=None):
    P = data.shape[0]
    z = data.astype(F32).reshape(P, -1) * (np.asarray(scale, F32).reshape(-1, 1)
                                           if np.ndim(scale) else F32(scale))
    if bias is not None:
        z = (z + np.asarray(bias, F32).reshape(-1, 1)).astype(F32)
    return FUNCS[op](z.astype(np.float64)).astype(F32)


def ref_row_sums(y, start=0.0):
    """The page: reduce_res = reduce_op(output, axis=<FreeAxis>) with np.add, i.e. np.sum of
    each partition's float32 row (pairwise), added to the register's start value once."""
    rows = y.reshape(y.shape[0], -1).astype(F32)
    return (F32(start) + np.array([np.sum(r) for r in rows], F32)).reshape(-1, 1)


@pytest.mark.parametrize("P", [1, 37, 128])
@pytest.mark.parametrize("free", [(5,), (129,), (3, 7)])
@pytest.mark.parametrize("op", ["exp", "tanh", "square"])
def test_matches_the_page(tmp_path, P, free, op):
    rng = np.random.default_rng(P + len(free))
    x = random_floats(rng, (P,) + free, special=False) / F32(4)
    bias = random_floats(rng, (P, 1), special=False)
    outs = run_program(tmp_path, {"x": sbuf(x), "b": sbuf(bias), "y": out(x.shape, "bfloat16"),
                                  "r": out((P, 1), "float32")},
                       [{"activation_reduce": {"dst": "y", "op": op, "data": "x",
                                               "reduce_op": "add", "reduce_res": "r",
                                               "bias": "b", "scale": 0.5}}])
    y = ref_activation(x, op, 0.5, bias)
    assert_bits_equal(outs["y"], ref.cast_to(y.reshape(x.shape), "bfloat16"))
    assert_bits_equal(outs["r"], ref_row_sums(y))


def test_resets_the_shared_scalar_registers(tmp_path):
    """activation_reduce resets the registers, so an activation(reduce) after it continues
    from its sums without a W052 warning; a stale earlier sum does not leak in."""
    rng = np.random.default_rng(2)
    a, b = (random_floats(rng, (16, 20), special=False) for _ in range(2))
    path = write_program(tmp_path, {
        "a": sbuf(a), "b": sbuf(b), "y": out((16, 20), "float32"), "r0": out((16, 1), "float32"),
        "r": out((16, 1), "float32")},
        [{"activation": {"dst": "y", "op": "copy", "data": "b", "reduce_op": "add",
                         "reduce_cmd": "reset_reduce"}},
         {"activation_reduce": {"dst": "y", "op": "copy", "data": "a", "reduce_op": "add",
                                "reduce_res": "r0"}},
         {"activation": {"dst": "y", "op": "copy", "data": "b", "reduce_op": "add",
                         "reduce_cmd": "reduce", "reduce_res": "r"}}])
    assert codes(check_program(path).diagnostics) == []
    from nkirun.api import run
    outs = run(path)
    first = ref_row_sums(a)
    assert_bits_equal(outs["r0"], first)
    assert_bits_equal(outs["r"], (first + ref_row_sums(b)).astype(F32))


def test_rules(tmp_path):
    x = np.ones((4, 8), F32)
    d = diagnostics(tmp_path, {"x": sbuf(x), "y": out((4, 8), "float32"),
                               "r": out((4, 1), "float32")},
                    [{"activation_reduce": {"dst": "y", "op": "exp", "data": "x",
                                            "reduce_op": "maximum", "reduce_res": "r"}},
                     {"activation_reduce": {"dst": "y", "op": "exp", "data": "x",
                                            "reduce_op": "add", "reduce_res": "r",
                                            "reduce_cmd": "reduce"}}])
    got = codes(d)
    assert "E025" in got and "E022" in got


def test_nc_v2_bias_rules_are_activations(tmp_path):
    x = np.ones((4, 8), F32)
    path = write_program(tmp_path, {"x": sbuf(x), "y": out((4, 8), "float32"),
                                    "r": out((4, 1), "float32")},
                         [{"activation_reduce": {"dst": "y", "op": "exp", "data": "x",
                                                 "reduce_op": "add", "reduce_res": "r",
                                                 "bias": 1.0}}], target="trn1")
    assert "E200" in codes(check_program(path).diagnostics)


def test_cost_includes_the_read_out(tmp_path):
    path = write_program(tmp_path, {"x": sbuf(np.ones((128, 500), F32)),
                                    "y": out((128, 500), "float32"), "r": out((128, 1), "float32")},
                         [{"activation_reduce": {"dst": "y", "op": "exp", "data": "x",
                                                 "reduce_op": "add", "reduce_res": "r"}}])
    slot = cost(path).slots[0]
    assert slot.engine == "scalar" and slot.cycles == 500 + 64


def test_explain_example_checks_and_runs(tmp_path):
    from prog_helpers import run_spec_example
    tensors = {
        "scores": sbuf(np.zeros((4, 8), np.float32)),
        "neg_max": sbuf(np.zeros((4, 1), np.float32)),
        "e": out((4, 8), "float32"),
        "rowsum": out((4, 1), "float32"),
    }
    outs = run_spec_example(tmp_path, "activation_reduce", tensors)
    np.testing.assert_array_equal(outs["rowsum"], np.full((4, 1), 8, np.float32))


def test_without_reduce_res_the_sums_stay_in_the_registers(tmp_path):
    """NKI 0.6: reduce_res=None keeps the result in the Scalar accumulator for a later call."""
    x = np.arange(8, dtype=F32).reshape(2, 4)
    path = write_program(tmp_path, {"x": sbuf(x), "y": out(x.shape, "float32"),
                                    "r": out((2, 1), "float32")},
                         [{"activation_reduce": {"dst": "y", "op": "copy", "data": "x",
                                                 "reduce_op": "add", "reduce_res": None}},
                          {"activation": {"dst": "y", "op": "copy", "data": "x",
                                          "reduce_op": "add", "reduce_cmd": "reduce",
                                          "reduce_res": "r"}}])
    assert codes(check_program(path).diagnostics) == []
    from nkirun.api import run
    assert_bits_equal(run(path)["r"], 2 * x.sum(axis=1, keepdims=True))
    assert cost(path).slots[0].cycles == 64
