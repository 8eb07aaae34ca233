"""bn_aggr against a NumPy reference written from its NKI page: (count, mean,
variance*count) triples pooled into the mean and population variance of all the elements
they describe (compared with np.mean / np.var of those elements)."""
from __future__ import annotations

import numpy as np
import pytest

from prog_helpers import codes, diagnostics, out, run_program, sbuf, write_program
from nkirun.api import cost

F32 = np.float32
# the explain example's tensors where a registry-wide harness cannot guess them
EXAMPLE_TENSORS = {"stats": "{buffer: sbuf, dtype: float32, shape: [128, 6], fill: 1}",
                   "mean_var": "{buffer: sbuf, dtype: float32, shape: [128, 2], output: true}"}


def triples_of(groups):
    """(P, 3k): the triple of each group of elements (float64 statistics)."""
    cols = []
    for g in groups:
        n = g.shape[1]
        cols += [np.full(g.shape[0], n), g.mean(axis=1) if n else np.zeros(g.shape[0]),
                 g.var(axis=1) * n if n else np.zeros(g.shape[0])]
    return np.stack(cols, axis=1).astype(F32)


@pytest.mark.parametrize("P", [1, 37, 128])
@pytest.mark.parametrize("sizes", [(10,), (3, 17, 1), (64, 0, 64, 5)])
def test_pooled_mean_and_variance(tmp_path, P, sizes):
    rng = np.random.default_rng(P + len(sizes))
    groups = [(rng.standard_normal((P, n)) * 5 + i).astype(np.float64)
              for i, n in enumerate(sizes)]
    data = triples_of(groups)
    got = run_program(tmp_path, {"t": sbuf(data), "mv": out((P, 2), "float32")},
                      [{"bn_aggr": {"dst": "mv", "data": "t"}}])["mv"]
    everything = np.concatenate(groups, axis=1)
    np.testing.assert_allclose(got[:, 0], everything.mean(axis=1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[:, 1], everything.var(axis=1), rtol=1e-5, atol=1e-6)


def test_every_count_zero_gives_nan(tmp_path):
    got = run_program(tmp_path, {"t": sbuf(np.zeros((2, 3), F32)), "mv": out((2, 2), "float32")},
                      [{"bn_aggr": {"dst": "mv", "data": "t"}}])["mv"]
    assert np.isnan(got).all()


def test_rules(tmp_path):
    d = diagnostics(tmp_path, {"t": sbuf(np.ones((4, 7), F32)), "u": sbuf(np.ones((4, 6), F32)),
                               "mv": out((4, 2), "float32"), "bad": out((4, 3), "float32")},
                    [{"bn_aggr": {"dst": "mv", "data": "t"}},
                     {"bn_aggr": {"dst": "bad", "data": "u"}}])
    got = codes(d)
    assert "E380" in got and "E381" in got


@pytest.mark.parametrize("n,cycles", [(6, 64), (12, 64), (60, 260)])
def test_cost(tmp_path, n, cycles):
    path = write_program(tmp_path, {"t": sbuf(np.ones((128, n), F32)),
                                    "mv": out((128, 2), "float32")},
                         [{"bn_aggr": {"dst": "mv", "data": "t"}}])
    assert cost(path).slots[0].cycles == cycles


def test_explain_example_checks_and_runs(tmp_path):
    from prog_helpers import run_spec_example
    tensors = {
        "stats": sbuf(np.array([[2, 1, 2, 2, 2, 2]], np.float32)),
        "mean_var": out((1, 2), "float32"),
    }
    outs = run_spec_example(tmp_path, "bn_aggr", tensors)
    np.testing.assert_array_equal(outs["mean_var"], [[1.5, 1.25]])


def test_layernorm_program_through_the_cli(tmp_path):
    """programs/layernorm_bn_stats.yaml (bn_stats on two halves, bn_aggr, rsqrt, scale and
    shift) against LayerNorm in float64."""
    from prog_helpers import PROGRAMS, run_cli
    data = PROGRAMS / "layernorm_bn_stats"
    x, gamma, beta = (np.load(data / f"{n}.npy").astype(np.float64)
                      for n in ("x", "gamma", "beta"))
    want = (x - x.mean(axis=1, keepdims=True)) / np.sqrt(x.var(axis=1, keepdims=True) + 1e-5)
    got = run_cli(PROGRAMS / "layernorm_bn_stats.yaml", tmp_path / "out")["y"]
    np.testing.assert_allclose(got, want * gamma + beta, rtol=1e-5, atol=1e-5)
