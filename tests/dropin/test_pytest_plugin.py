"""The pytest plugin (nkirun/dropin/pytest_plugin.py) on a small suite written for NKI's CPU
simulator: its conftest imports `nki` at load time and its tests never import nkirun."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

CONFTEST = '''
import nki.isa  # noqa: F401  (at load time, as nki-library's conftest does)
'''

SUITE = '''
import numpy as np
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def double(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def too_tall(a):
    t = nl.ndarray((256, 4), dtype=a.dtype, buffer=nl.sbuf)
    return t


def test_double():
    x = np.ones((8, 4), np.float32)
    np.testing.assert_array_equal(nki.cpu_simulate(double)[1](a=x), 2 * x)
    assert "nkirun" in __import__("sys").modules


def test_invalid_kernel():
    nki.cpu_simulate(too_tall)[1](a=np.ones((8, 4), np.float32))


@nki.jit
def summed(a):
    import nki.collectives as ncc
    src = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    dst = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=src, src=a)
    ncc.all_reduce(srcs=[src], dsts=[dst], replica_group=ncc.ReplicaGroup([[0, 1]]),
                   op=nl.add)
    nisa.dma_copy(dst=out, src=dst)
    return out


def test_collective():
    # the harness's call: no rank count; the replica group asks for two ranks
    x = np.ones((8, 4), np.float32)
    np.testing.assert_array_equal(nki.cpu_simulate(summed)[1](a=x), 2 * x)
'''


def _pytest(tmp_path, *args):
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_suite.py").write_text(SUITE)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("NEURON_PLATFORM_TARGET_OVERRIDE", None)
    return subprocess.run([sys.executable, "-m", "pytest", *_load_plugin(),
                           "-p", "no:cacheprovider", "-q", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)


def _load_plugin() -> list[str]:
    """`-p nkirun_pytest` where nkirun's install does not register the plugin itself: an
    install made since the plugin exists (a fresh `pip install -e .`) loads it through
    its pytest11 entry point, and naming it again is "Plugin already registered"."""
    from importlib.metadata import entry_points
    registered = any(ep.value == "nkirun_pytest" for ep in entry_points(group="pytest11"))
    return [] if registered else ["-p", "nkirun_pytest"]


def test_without_the_option_the_plugin_does_nothing(tmp_path):
    r = _pytest(tmp_path)
    assert r.returncode != 0 and "No module named 'nki'" in r.stdout + r.stderr


def test_the_suite_runs_checked_and_costed_on_nkirun(tmp_path):
    out = tmp_path / "nkirun.json"
    r = _pytest(tmp_path, "--nkirun-check", "--nkirun-cost", "--nkirun-json", str(out),
                "--nkirun-target", "trn3")
    text = r.stdout + r.stderr
    assert "1 failed, 2 passed" in text, text
    assert "nkirun check" in text and "1 tests stopped by an nkirun error" in text
    assert "nkirun predicted kernel time" in text and "test_suite.py::test_double" in text
    tests = json.loads(out.read_text())["tests"]
    ok = tests["test_suite.py::test_double"]
    assert ok["outcome"] == "passed" and ok["kernels"][0]["target"] == "trn3"
    assert ok["kernels"][0]["predicted_ns"] > 0 and ok["kernels"][0]["kernel"] == "double"
    # nkirun's own share of the test: the one simulate() call, traced then run
    assert ok["nkirun_calls"] == 1 and 0 < ok["nkirun_seconds"] <= ok["seconds"]
    k = ok["kernels"][0]
    assert k["trace_seconds"] + k["cost_seconds"] + k["run_seconds"] == \
        pytest.approx(k["seconds"], abs=3e-3)
    assert k["cost_seconds"] >= 0 and 0 < k["cpu_seconds"] == ok["nkirun_cpu_seconds"]
    assert k["peak_mb"] >= k["rss_mb"] > 0 and k["extra_mb"] == k["peak_mb"] - k["rss_mb"]
    assert k["tensor_bytes"] == 3 * 8 * 4 * 4  # a, out and t: what nkirun's memory is judged by
    # a collective kernel: its one-rank try, then its ranks' run, each a timed call
    both = tests["test_suite.py::test_collective"]
    assert both["outcome"] == "passed" and both["nkirun_calls"] == 2
    assert both["kernels"][0]["kernel"] == "summed" and both["kernels"][0]["trace_seconds"] > 0
    bad = tests["test_suite.py::test_invalid_kernel"]
    assert bad["outcome"] == "failed" and bad["errors"][0]["code"].startswith("E")
    assert bad["nkirun_calls"] == 1 and bad["kernels"] == []  # refused: timed all the same


def test_an_unknown_target_is_a_usage_error(tmp_path):
    r = _pytest(tmp_path, "--nkirun-target", "trn9")
    assert r.returncode == 4 and "--nkirun: unknown target 'trn9'" in r.stderr
