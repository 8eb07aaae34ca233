"""bn_stats (with bn_aggr) against NumPy references written from their NKI pages: count,
mean and variance*count of the even and of the odd elements of each partition; bn_aggr's
mean and variance of the pooled elements. The pages fix the outputs, not the float32
arithmetic, so results are compared to the float64 statistics within float32 rounding."""
from __future__ import annotations

import numpy as np
import pytest

import reference as ref
from prog_helpers import codes, diagnostics, out, random_floats, run_program, sbuf, write_program
from nkirun.api import cost

F32 = np.float32
# the explain example's tensors where a registry-wide harness cannot guess them
EXAMPLE_TENSORS = {"stats": "{buffer: sbuf, dtype: float32, shape: [128, 6], output: true}"}


def ref_bn_stats(data):
    rows = data.astype(np.float64).reshape(data.shape[0], -1)
    cols = []
    for half in (rows[:, 0::2], rows[:, 1::2]):
        n = half.shape[1]
        mean = half.mean(axis=1) if n else np.zeros(rows.shape[0])
        var = half.var(axis=1) if n else np.zeros(rows.shape[0])
        cols += [np.full(rows.shape[0], n), mean, var * n]
    return np.stack(cols, axis=1)


@pytest.mark.parametrize("P", [1, 37, 128])
@pytest.mark.parametrize("free", [(1,), (2,), (5,), (3, 7), (512,)])
def test_six_statistics(tmp_path, P, free):
    rng = np.random.default_rng(P + sum(free))
    x = random_floats(rng, (P,) + free, special=False) * F32(10)
    outs = run_program(tmp_path, {"x": sbuf(x), "s": out((P, 6), "float32")},
                       [{"bn_stats": {"dst": "s", "data": "x"}}])
    np.testing.assert_allclose(outs["s"], ref_bn_stats(x), rtol=2e-6, atol=1e-5)


def test_nan_propagates_into_its_half(tmp_path):
    x = np.array([[np.nan, 1.0, 2.0, 3.0]], F32)
    got = run_program(tmp_path, {"x": sbuf(x), "s": out((1, 6), "float32")},
                      [{"bn_stats": {"dst": "s", "data": "x"}}])["s"][0]
    assert got[0] == 2 and np.isnan(got[1]) and np.isnan(got[2])
    np.testing.assert_allclose(got[3:], [2, 2, 2])


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_low_precision_input_and_output(tmp_path, dtype):
    rng = np.random.default_rng(3)
    x = ref.cast_to(random_floats(rng, (37, 64), special=False), dtype)
    outs = run_program(tmp_path, {"x": sbuf(x), "s": out((37, 6), dtype)},
                       [{"bn_stats": {"dst": "s", "data": "x"}}])
    want = ref.cast_to(ref_bn_stats(x).astype(F32), dtype)
    np.testing.assert_allclose(outs["s"].astype(F32), want.astype(F32), rtol=1e-2, atol=1e-2)


def test_sdk_examples_with_bn_aggr(tmp_path):
    """The SDK doc test: (128, 128) in one bn_stats; (128, 1024) in two 512-element
    bn_stats writing one (128, 12) stats tile; bn_aggr against np.mean / np.var."""
    rng = np.random.default_rng(0)
    a = (rng.random((128, 128)) * 100).astype(F32)
    b = (rng.random((128, 1024)) * 100).astype(F32)
    outs = run_program(tmp_path, {
        "a": sbuf(a), "b": sbuf(b), "sa": {"buffer": "sbuf", "shape": [128, 6], "dtype": "float32"},
        "sb": {"buffer": "sbuf", "shape": [128, 12], "dtype": "float32"},
        "ma": out((128, 2), "float32"), "mb": out((128, 2), "float32")},
        [{"bn_stats": {"dst": "sa", "data": "a"}}, {"bn_aggr": {"dst": "ma", "data": "sa"}},
         {"bn_stats": {"dst": "sb[:, 0:6]", "data": "b[:, 0:512]"}},
         {"bn_stats": {"dst": "sb[:, 6:12]", "data": "b[:, 512:1024]"}},
         {"bn_aggr": {"dst": "mb", "data": "sb"}}])
    for got, x in ((outs["ma"], a), (outs["mb"], b)):
        np.testing.assert_allclose(got[:, 0], x.mean(axis=1), rtol=1e-6)
        np.testing.assert_allclose(got[:, 1], x.astype(np.float64).var(axis=1), rtol=1e-5)


def test_rules(tmp_path):
    d = diagnostics(tmp_path, {"x": sbuf(np.ones((4, 513), F32)), "y": sbuf(np.ones((4, 8), F32)),
                               "s": out((4, 6), "float32"), "bad": out((4, 5), "float32")},
                    [{"bn_stats": {"dst": "s", "data": "x"}},
                     {"bn_stats": {"dst": "bad", "data": "y"}}])
    got = codes(d)
    assert "E370" in got and "E371" in got


def test_cost(tmp_path):
    path = write_program(tmp_path, {"x": sbuf(np.ones((128, 300), F32)),
                                    "s": out((128, 6), "float32")},
                         [{"bn_stats": {"dst": "s", "data": "x"}}])
    assert cost(path).slots[0].cycles == 300


def test_explain_example_checks_and_runs(tmp_path):
    from prog_helpers import run_spec_example
    tensors = {
        "x": sbuf(np.arange(8, dtype=np.float32).reshape(2, 4)),
        "stats": out((2, 6), "float32"),
    }
    outs = run_spec_example(tmp_path, "bn_stats", tensors)
    np.testing.assert_array_equal(outs["stats"][0], [2, 1, 2, 2, 2, 2])
