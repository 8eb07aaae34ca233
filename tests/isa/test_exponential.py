"""exponential (NeuronCore-v4) against a NumPy reference written from its NKI page:
dst = exp(src - max_value) in float32, and the page's accumulator loop
(reset_reduce: 0, load_reduce: reduce_init, reduce: continue; `accumulator += dst[i]`)."""
from __future__ import annotations

import numpy as np
import pytest

import reference as ref
from prog_helpers import (assert_bits_equal, codes, out, random_floats, sbuf, tmp,
                          write_program)
from nkirun.api import check_program, cost, run

F32 = np.float32
EXAMPLE_TARGET = "trn3"  # for a registry-wide run of SPEC.example: NeuronCore-v4 only


def program(tmp_path, tensors, instructions, target="trn3"):
    """exponential exists on NeuronCore-v4 (trn3) only."""
    return write_program(tmp_path, tensors, instructions, target=target)


def ref_exp(x, max_value):
    """exp(x - max_value): one float32 subtraction, exp correctly rounded to float32."""
    z = x.astype(F32).reshape(x.shape[0], -1) - np.asarray(max_value, F32).reshape(-1, 1)
    with np.errstate(over="ignore"):
        return np.exp(z.astype(np.float64)).astype(F32)


def ref_sum(y, start):
    """The page's loop: accumulator += dst[i], in element order, float32."""
    acc = np.array(np.broadcast_to(np.asarray(start, F32).reshape(-1, 1), (y.shape[0], 1)))
    for i in range(y.shape[1]):
        acc = (acc + y[:, i:i + 1]).astype(F32)
    return acc


@pytest.mark.parametrize("P", [1, 37, 128])
@pytest.mark.parametrize("free", [(5,), (129,), (3, 7), (2, 3, 4)])
def test_reset_reduce_with_column_max(tmp_path, P, free):
    rng = np.random.default_rng(P * 7 + len(free))
    x = random_floats(rng, (P,) + free)
    mx = random_floats(rng, (P, 1), special=False)
    outs = run(program(tmp_path, {"x": sbuf(x), "mx": sbuf(mx), "y": out(x.shape, "float32"),
                                  "s": out((P, 1), "float32")},
                       [{"exponential": {"dst": "y", "src": "x", "max_value": "mx",
                                         "reduce_cmd": "reset_reduce", "reduce_res": "s"}}]))
    y = ref_exp(x, mx)
    assert_bits_equal(outs["y"], y.reshape(x.shape))
    assert_bits_equal(outs["s"], ref_sum(y, 0.0))


@pytest.mark.parametrize("init", [2.5, "col"])
def test_load_reduce_starts_from_reduce_init(tmp_path, init):
    rng = np.random.default_rng(1)
    x = random_floats(rng, (37, 50), special=False)
    col = (rng.standard_normal((37, 1)) * 100).astype(F32)
    tensors = {"x": sbuf(x), "col": sbuf(col), "y": out(x.shape, "bfloat16"),
               "s": out((37, 1), "float32")}
    outs = run(program(tmp_path, tensors, [{"exponential": {
        "dst": "y", "src": "x", "max_value": 1.5, "reduce_cmd": "load_reduce",
        "reduce_init": init, "reduce_res": "s"}}]))
    y = ref_exp(x, np.full((37, 1), 1.5, F32))
    assert_bits_equal(outs["y"], ref.cast_to(y, "bfloat16"))
    assert_bits_equal(outs["s"], ref_sum(y, col if init == "col" else init))


def test_chain_over_tiles_then_idle_with_reduce_res(tmp_path):
    """A softmax denominator over three tiles: reset_reduce, reduce, reduce + reduce_res;
    an idle call's reduce_res holds only its own sum."""
    rng = np.random.default_rng(2)
    xs = [random_floats(rng, (16, 24), special=False) for _ in range(3)]
    tensors = {f"x{i}": sbuf(x) for i, x in enumerate(xs)}
    tensors.update(y=out((16, 24), "float32"), s=out((16, 1), "float32"),
                   own=out((16, 1), "float32"), last=out((16, 24), "float32"))
    prog = [{"exponential": {"dst": "y", "src": "x0", "reduce_cmd": "reset_reduce"}},
            {"exponential": {"dst": "y", "src": "x1", "reduce_cmd": "reduce"}},
            {"exponential": {"dst": "y", "src": "x2", "reduce_cmd": "reduce",
                             "reduce_res": "s"}},
            {"exponential": {"dst": "last", "src": "x0", "reduce_res": "own"}}]
    path = program(tmp_path, tensors, prog)
    assert [d.code for d in check_program(path).diagnostics] == []
    outs = run(path)
    ys = [ref_exp(x, np.zeros((16, 1), F32)) for x in xs]
    acc = ref_sum(ys[0], 0.0)
    acc = ref_sum(ys[1], acc)
    assert_bits_equal(outs["s"], ref_sum(ys[2], acc))
    assert_bits_equal(outs["own"], ref_sum(ys[0], 0.0))


def test_integer_and_low_precision_dtypes(tmp_path):
    x = np.arange(-8, 8, dtype=np.int16).reshape(2, 8)
    outs = run(program(tmp_path, {"x": sbuf(x), "y": out((2, 8), "int32")},
                       [{"exponential": {"dst": "y", "src": "x", "max_value": -1.0}}]))
    assert_bits_equal(outs["y"], ref.cast_to(ref_exp(x, np.full((2, 1), -1.0, F32)), "int32"))


def test_nan_and_inf(tmp_path):
    x = np.array([[np.nan, np.inf, -np.inf, 0.0, 88.0, 89.0]], F32)
    outs = run(program(tmp_path, {"x": sbuf(x), "y": out(x.shape, "float32"),
                                  "s": out((1, 1), "float32")},
                       [{"exponential": {"dst": "y", "src": "x", "reduce_cmd": "reset_reduce",
                                         "reduce_res": "s"}}]))
    want = ref_exp(x, np.zeros((1, 1), F32))
    assert_bits_equal(outs["y"], want)
    assert np.isnan(outs["s"][0, 0])


def test_only_on_neuroncore_v4(tmp_path):
    x = np.ones((4, 8), F32)
    path = program(tmp_path, {"x": sbuf(x), "y": out((4, 8), "float32")},
                   [{"exponential": {"dst": "y", "src": "x"}}], target="trn2")
    d = [d for d in check_program(path).diagnostics if d.code == "E290"]
    assert d and "trn3" in (d[0].hint or "") + d[0].message


def test_rules(tmp_path):
    x = np.ones((4, 2, 2, 2, 2), F32)
    path = program(tmp_path, {"x": sbuf(x), "y": out(x.shape, "float32"),
                              "i": sbuf(np.ones((4, 1), np.float16))},
                   [{"exponential": {"dst": "y", "src": "x", "reduce_init": 1.0}},
                    {"exponential": {"dst": "y", "src": "x", "reduce_cmd": "reset"}},
                    {"exponential": {"dst": "y", "src": "x", "max_value": "i"}}])
    got = codes(check_program(path).diagnostics)
    assert "E291" in got and "E292" in got and "E025" in got and "E060" in got


def test_reduce_after_idle_warns_at_check(tmp_path):
    x = np.ones((4, 8), F32)
    path = program(tmp_path, {"x": sbuf(x), "y": out((4, 8), "float32"),
                              "s": out((4, 1), "float32")},
                   [{"exponential": {"dst": "y", "src": "x", "reduce_cmd": "reset_reduce"}},
                    {"exponential": {"dst": "y", "src": "x"}},
                    {"exponential": {"dst": "y", "src": "x", "reduce_cmd": "reduce",
                                     "reduce_res": "s"}}])
    assert "W052" in codes(check_program(path).diagnostics)


def test_shares_the_vector_accumulator_with_tensor_scalar_reduce(tmp_path):
    rng = np.random.default_rng(4)
    x = random_floats(rng, (8, 16), special=False)
    path = program(tmp_path, {"x": sbuf(x), "y": tmp((8, 16), "float32"),
                              "z": out((8, 16), "float32"), "s": out((8, 1), "float32")},
                   [{"exponential": {"dst": "y", "src": "x", "reduce_cmd": "reset_reduce"}},
                    {"tensor_scalar_reduce": {"dst": "z", "data": "y", "op0": "multiply",
                                              "operand0": 2.0, "reduce_op": "add",
                                              "reduce_cmd": "reduce", "reduce_res": "s"}}])
    assert codes(check_program(path).diagnostics) == []
    y = ref_exp(x, np.zeros((8, 1), F32))
    # exponential's loop sums element by element; tensor_scalar_reduce's page reduces its
    # row with NumPy (np.sum, pairwise) and adds that to the register once
    row_sums = np.array([np.sum(r) for r in y * F32(2)], F32).reshape(-1, 1)
    assert_bits_equal(run(path)["s"], ref_sum(y, 0.0) + row_sums)


def test_cost_is_assumed_and_per_element(tmp_path):
    path = program(tmp_path, {"x": sbuf(np.ones((128, 300), F32)),
                              "y": out((128, 300), "float32")},
                   [{"exponential": {"dst": "y", "src": "x"}}])
    slot = cost(path).slots[0]
    assert slot.cycles == 300 and slot.assumed and slot.engine == "vector"


def test_explain_example_checks_and_runs(tmp_path):
    from prog_helpers import run_spec_example
    tensors = {
        "scores": sbuf(np.zeros((4, 8), np.float32)),
        "row_max": sbuf(np.ones((4, 1), np.float32)),
        "e": out((4, 8), "float32"),
        "rowsum": out((4, 1), "float32"),
    }
    outs = run_spec_example(tmp_path, "exponential", tensors, target="trn3")
    np.testing.assert_allclose(outs["rowsum"], 8 * np.exp(np.float32(-1)), rtol=1e-6)


def test_softmax_program_through_the_cli(tmp_path):
    """programs/softmax_exponential.yaml (trn3): exp(x - rowmax) with the row sum from the
    accumulator, reciprocal, multiply; bit for bit against the pages' float32 steps."""
    from prog_helpers import PROGRAMS, run_cli
    x = np.load(PROGRAMS / "softmax_exponential" / "x.npy")
    mx = x.max(axis=1, keepdims=True)
    y = ref_exp(x, mx)
    inv = (1.0 / ref_sum(y, 0.0).astype(np.float64)).astype(F32)
    got = run_cli(PROGRAMS / "softmax_exponential.yaml", tmp_path / "out")["p"]
    assert_bits_equal(got, (y * inv).astype(F32))
    np.testing.assert_allclose(got.sum(axis=1), 1.0, rtol=1e-5)
