"""The real kernels in programs/: each runs through the CLI (`nkirun run`), checks clean,
costs plausibly, and matches an independent NumPy reference written from the kernel's math
(not from nkirun's code)."""

import ml_dtypes
import numpy as np
import pytest

from prog_helpers import run_cli
from nkirun.api import check_program, cost
from repo_paths import PROGRAMS

KERNELS = ("causal_softmax", "topk16", "selective_scan", "sliding_window_max", "cumsum_scan",
           "matmul_transpose")
FP32_MIN = np.finfo(np.float32).min


def path(name):
    return str(PROGRAMS / f"{name}.yaml")


def data(name, tensor, dtype=None):
    a = np.load(PROGRAMS / name / f"{tensor}.npy")
    return a.view(dtype) if dtype is not None else a


def run(program, tmp_path):
    """The outputs `nkirun run` writes (issue 2: every program runs through the CLI)."""
    return run_cli(program, tmp_path / "out")


def overlaps(s1, s2):
    return s1.start_ns < s2.end_ns and s2.start_ns < s1.end_ns


@pytest.mark.parametrize("name", KERNELS)
def test_checks_clean_and_costs(name):
    c = check_program(path(name))
    assert c.ok and not c.diagnostics, [(d.code, d.message) for d in c.diagnostics]
    sched = cost(path(name))
    assert len(sched.slots) == len(c.bound) and sched.total_ns > 0
    for s in sched.slots:
        assert s.cycles > 0 and s.end_ns > s.start_ns >= 0
        if s.waited_on is not None:  # starts no earlier than what it waited for
            assert s.start_ns >= sched.slots[s.waited_on].end_ns - 1e-6


def test_causal_softmax(tmp_path):
    s = data("causal_softmax", "scores")
    got = run(path("causal_softmax"), tmp_path)["probs"]
    p = np.arange(128)[:, None]
    x = np.arange(512)[None, :]
    z = np.where(x <= p + 384, s, FP32_MIN).astype(np.float64)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-9)
    assert (got[x.repeat(128, 0) > p + 384] == 0).all()  # masked keys get exactly 0
    # the Scalar engine's exp of one block overlaps the Vector engine's max of the other
    slots = cost(path("causal_softmax")).slots
    vec = [t for t in slots if t.engine == "vector"]
    act = [t for t in slots if t.engine == "scalar"]
    assert any(overlaps(a, v) for a in act for v in vec)


def test_topk16_exact(tmp_path):
    x = data("topk16", "x")
    out = run(path("topk16"), tmp_path)
    order = np.argsort(-x, axis=1, kind="stable")[:, :16]
    np.testing.assert_array_equal(out["vals"], np.take_along_axis(x, order, axis=1))
    np.testing.assert_array_equal(out["vals"], -np.sort(-x, axis=1)[:, :16])
    np.testing.assert_array_equal(out["idx"], order.astype(np.uint32))
    rest = x.copy()
    np.put_along_axis(rest, order, -np.inf, axis=1)
    np.testing.assert_array_equal(out["rest"], rest)


def test_selective_scan_matches_the_recurrence(tmp_path):
    g = {k: data("selective_scan", k) for k in ("x", "delta", "B", "C", "A", "D", "h0")}
    out = run(path("selective_scan"), tmp_path)
    h = g["h0"][:, 0].astype(np.float64)
    want = np.empty((128, 512))
    for t in range(512):  # the sequential recurrence, one step at a time
        decay = np.exp(g["delta"][:, t].astype(np.float64) * g["A"][:, 0])
        h = decay * h + g["delta"][:, t] * g["B"][:, t] * g["x"][:, t]
        want[:, t] = g["C"][:, t] * h + g["D"][:, 0] * g["x"][:, t]
    np.testing.assert_allclose(out["y"], want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out["h_last"][:, 0], h, rtol=1e-4, atol=1e-6)


def test_sliding_window_max(tmp_path):
    x = data("sliding_window_max", "x")
    out = run(path("sliding_window_max"), tmp_path)
    want_max = np.array([x[p, 3 * p:3 * p + 64].max() for p in range(128)], np.float32)
    np.testing.assert_array_equal(out["wmax"][:, 0], want_max)
    i = np.arange(512)[None, :]
    p = np.arange(128)[:, None]
    np.testing.assert_array_equal(out["window"],
                                  np.where((i >= 3 * p) & (i < 3 * p + 64), x, FP32_MIN))


def test_cumsum_scan_bit_exact(tmp_path):
    x = data("cumsum_scan", "x")
    got = run(path("cumsum_scan"), tmp_path)["csum"]
    # float32 cumsum is a left-to-right float32 fold, as the scan is
    np.testing.assert_array_equal(got.view(np.uint32), np.cumsum(x, axis=1).view(np.uint32))


def test_matmul_transpose(tmp_path):
    bf = ml_dtypes.bfloat16
    a = data("matmul_transpose", "a", bf).astype(np.float64)
    b = np.vstack([data("matmul_transpose", "b0", bf), data("matmul_transpose", "b1", bf)])
    got = run(path("matmul_transpose"), tmp_path)["c"]
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, a @ b.astype(np.float64), rtol=1e-5, atol=1e-4)
    slots = cost(path("matmul_transpose")).slots
    assert {s.op for s in slots if s.engine == "tensor"} == {"nc_transpose", "nc_matmul"}


def test_make_data_is_deterministic(tmp_path):
    import importlib.util
    spec = importlib.util.spec_from_file_location("make_data", PROGRAMS / "make_data.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.main([], root=tmp_path)  # every generator: all committed data must come back
    committed = sorted(f.relative_to(PROGRAMS) for f in PROGRAMS.glob("*/*.npy"))
    assert committed == sorted(f.relative_to(tmp_path) for f in tmp_path.glob("*/*.npy"))
    for f in committed:
        assert (PROGRAMS / f).read_bytes() == (tmp_path / f).read_bytes(), f
