"""The example kernels (programs/kernels/) against independent NumPy references, through
the command line (`nkirun run KERNEL.py::FUNCTION`), the Python API
(`nkirun.simulate`), and `convert` (the traced program, run as YAML, gives the same
outputs)."""
from __future__ import annotations

import json
import math
import pathlib
import sys

import numpy as np
import pytest
from click.testing import CliRunner

import nkirun
from nkirun.cli import cli

KERNELS = pathlib.Path(__file__).resolve().parents[2] / "programs" / "kernels"
RNG = np.random.default_rng(7)


def ref_matmul(lhsT, rhs):
    return lhsT.astype(np.float64).T @ rhs.astype(np.float64)


def ref_rmsnorm(x, w, eps=1e-6):
    x = x.astype(np.float64)
    return x / np.sqrt((x * x).mean(axis=1, keepdims=True) + eps) * w


def ref_softmax(x):
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def ref_attention(q, k, v):
    s = q.T.astype(np.float64) @ k / math.sqrt(q.shape[0])
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)) @ v


def ref_scan(delta, u, A, B, Cm):
    h = np.zeros(delta.shape[0])
    y = np.zeros(delta.shape)
    for t in range(delta.shape[1]):
        h = np.exp(delta[:, t] * A[:, 0]) * h + delta[:, t] * B[0, t] * u[:, t]
        y[:, t] = h * Cm[0, t]
    return y


def ref_topk(x, k):
    order = np.argsort(-x, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(x, order, axis=1), order.astype(np.uint32)


def f32(*shape, scale=1.0, positive=False):
    a = RNG.random(shape) if positive else RNG.standard_normal(shape)
    return (a * scale).astype(np.float32)


CASES = {
    "matmul_tiled": (dict(lhsT=f32(256, 128), rhs=f32(256, 1024)), {}, ref_matmul, 1e-4),
    "rmsnorm": (dict(x=f32(256, 200), w=f32(1, 200)), {"eps": 1e-5},
                lambda x, w, eps: ref_rmsnorm(x, w, eps), 1e-5),
    "softmax": (dict(x=f32(128, 333, scale=4.0)), {}, ref_softmax, 1e-6),
    "flash_attention": (dict(q=f32(64, 128), k=f32(64, 384), v=f32(384, 64)), {},
                        ref_attention, 1e-5),
    "mamba_scan": (dict(delta=f32(128, 512, scale=0.1, positive=True), u=f32(128, 512),
                        A=-f32(128, 1, positive=True), B=f32(1, 512), Cm=f32(1, 512)),
                   {"chunk": 128}, lambda delta, u, A, B, Cm, chunk: ref_scan(delta, u, A, B, Cm),
                   1e-4),
    "topk": (dict(x=f32(100, 300)), {"k": 16}, lambda x, k: ref_topk(x, k), 0.0),
}


def kernel_function(name, function=None):
    sys.path.insert(0, str(KERNELS))
    try:
        module = __import__(name)
    finally:
        sys.path.remove(str(KERNELS))
    return getattr(module, function or name)


def as_tuple(v):
    return v if isinstance(v, tuple) else (v,)


def assert_close(got, want, tol):
    for g, w in zip(as_tuple(got), as_tuple(want)):
        assert g.shape == w.shape
        if tol == 0.0:
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", sorted(CASES))
def test_api_simulate_matches_numpy(name):
    arrays, args, ref, tol = CASES[name]
    got = nkirun.simulate(kernel_function(name))(**arrays, **args)
    assert_close(got, ref(**arrays, **args), tol)


@pytest.mark.parametrize("name", sorted(CASES))
def test_cli_run_matches_numpy(name, tmp_path):
    arrays, args, ref, tol = CASES[name]
    cmd = ["run", f"{KERNELS / name}.py::{name}", "--out", str(tmp_path / "out")]
    for pname, arr in arrays.items():
        np.save(tmp_path / f"{pname}.npy", arr)
        cmd += ["--input", f"{pname}={tmp_path / pname}.npy"]
    cmd += [f"--arg={k}={v!r}" for k, v in args.items()]
    r = CliRunner().invoke(cli, cmd)
    assert r.exit_code == 0, r.output
    want = as_tuple(ref(**arrays, **args))
    got = tuple(np.load(tmp_path / "out" / f"out{i}.npy") for i in range(len(want)))
    assert_close(got, want, tol)
    assert not (tmp_path / "out" / f"out{len(want)}.npy").exists()


@pytest.mark.parametrize("name", sorted(CASES))
def test_check_and_cost_pass(name, tmp_path):
    arrays, args, _, _ = CASES[name]
    cmd = [f"{KERNELS / name}.py"]  # the file's only @nki.jit function
    for pname, arr in arrays.items():
        cmd += ["--shape", f"{pname}=float32[{','.join(map(str, arr.shape))}]"]
    cmd += [f"--arg={k}={v!r}" for k, v in args.items()]
    r = CliRunner().invoke(cli, ["check", *cmd, "--format", "json"])
    assert r.exit_code == 0 and json.loads(r.output)["diagnostics"] == [], r.output
    r = CliRunner().invoke(cli, ["cost", *cmd, "--view", "summary"])
    assert r.exit_code == 0 and "makespan" in r.output, r.output


@pytest.mark.parametrize("fmt", ["yaml", "text"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_convert_gives_a_program_with_the_same_results(name, fmt, tmp_path):
    arrays, args, ref, tol = CASES[name]
    cmd = ["convert", f"{KERNELS / name}.py::{name}", "--to", fmt]
    for pname, arr in arrays.items():
        np.save(tmp_path / f"{pname}.npy", arr)
        cmd += ["--input", f"{pname}={tmp_path / pname}.npy"]
    cmd += [f"--arg={k}={v!r}" for k, v in args.items()]
    out = tmp_path / "sub" / ("prog.yaml" if fmt == "yaml" else "prog.nkis")
    out.parent.mkdir()
    r = CliRunner().invoke(cli, cmd + ["-o", str(out)])
    assert r.exit_code == 0, r.output
    assert nkirun.check(str(out)) == [] or all(not d.is_error for d in nkirun.check(str(out)))
    outs = nkirun.run(str(out))
    kernel_outs = as_tuple(nkirun.simulate(kernel_function(name))(**arrays, **args))
    assert len(outs) == len(kernel_outs)
    for got, want in zip(outs.values(), kernel_outs):
        np.testing.assert_array_equal(got, want)
    r = CliRunner().invoke(cli, ["cost", str(out), "--view", "summary"])
    assert r.exit_code == 0
