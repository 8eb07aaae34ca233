"""Issue 25: one pipeline. Every command and option gives the same result, and the same
reliability, for a YAML program, its text form and a Python kernel that traces to it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from click.testing import CliRunner

import nkirun
from nkirun.cli import cli

from repo_paths import ROOT

ENV = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", "OPENBLAS_NUM_THREADS": "1"}
YAML = """version: 1
target: trn2
tensors:
  x:    {buffer: hbm, shape: [4, 128], dtype: float32, file: x.npy}
  t:    {buffer: sbuf, shape: [4, 128], dtype: float32}
  u:    {buffer: sbuf, shape: [4, 128], dtype: float32}
  out0: {buffer: hbm, shape: [4, 128], dtype: float32, output: true}
instructions:
  - dma_copy: {dst: t, src: x}
  - tensor_scalar: {dst: u, data: t, op0: add, operand0: 1.0}
  - dma_copy: {dst: out0, src: u}
"""
TEXT = """version 1
target trn2
tensor x hbm [4, 128] float32 file=x.npy
tensor t sbuf [4, 128] float32
tensor u sbuf [4, 128] float32
tensor out0 hbm [4, 128] float32 output
dma_copy dst=t src=x
tensor_scalar dst=u data=t op0=add operand0=1.0
dma_copy dst=out0 src=u
"""
KERNEL = '''import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def add1(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    u = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=u, data=t, op0=nl.add, operand0=1.0)
    nisa.dma_copy(dst=out, src=u)
    return out
'''
X = np.arange(512, dtype=np.float32).reshape(4, 128)
FRONTS = ["p.yaml", "p.nkis", "k.py::add1"]


@pytest.fixture
def here(tmp_path, monkeypatch):
    (tmp_path / "p.yaml").write_text(YAML)
    (tmp_path / "p.nkis").write_text(TEXT)
    (tmp_path / "k.py").write_text(KERNEL)
    np.save(tmp_path / "x.npy", X)
    os.mkdir(tmp_path / "gold")
    np.save(tmp_path / "gold" / "out0.npy", X + 1)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def nk(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_the_three_front_ends_are_the_same_program(here):
    from nkirun.pipeline.front import load, KernelOptions
    progs = [load(f, kernel=KernelOptions(inputs=("x=x.npy",))).program for f in FRONTS]
    shapes = [{n: (t.buffer, t.shape) for n, t in p.tensors.items()} for p in progs]
    shapes[2]["out0"] = shapes[2].pop("out")
    assert shapes[0] == shapes[1] == shapes[2]
    assert [i.op for i in progs[0].instructions] == [i.op for i in progs[2].instructions]


@pytest.mark.parametrize("front", FRONTS)
def test_run_writes_out0_and_says_so(here, front):
    r = nk("run", front, "--input", "x=x.npy", "--out", "o")
    assert r.exit_code == 0, r.output
    np.testing.assert_array_equal(np.load(here / "o" / "out0.npy"), X + 1)
    assert "out0" in r.output and "3 instructions executed, 1 output written" in r.output


@pytest.mark.parametrize("front", FRONTS)
def test_run_json(here, front):
    r = nk("run", front, "--input", "x=x.npy", "--out", "o", "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["ok"] and [o["name"] for o in doc["outputs"]] == ["out0"]
    assert doc["outputs"][0]["shape"] == [4, 128] and doc["instructions"] == 3


@pytest.mark.parametrize("front", FRONTS)
def test_run_expect(here, front):
    r = nk("run", front, "--input", "x=x.npy", "--out", "o", "--expect", "gold")
    assert r.exit_code == 0 and "PASS" in r.output, r.output
    np.save(here / "gold" / "out0.npy", X + 2)
    r = nk("run", front, "--input", "x=x.npy", "--out", "o", "--expect", "gold", "--ulp", "0")
    assert r.exit_code == 1 and "FAIL" in r.output
    r = nk("run", front, "--input", "x=x.npy", "--out", "o", "--expect", "gold",
           "--format", "json")
    doc = json.loads(r.stdout)
    assert r.exit_code == 1 and doc["expect"]["ok"] is False
    assert [t["tensor"] for t in doc["expect"]["tensors"]] == ["out0"]


@pytest.mark.parametrize("front", FRONTS)
def test_run_trace_and_dump(here, front):
    r = nk("run", front, "--input", "x=x.npy", "--out", "o", "--trace", "--dump", "d")
    assert r.exit_code == 0, r.output
    assert sum(line.startswith("#") for line in r.stderr.splitlines()) == 3
    dumped = sorted(os.listdir(here / "d"))
    assert len(dumped) == 3 and dumped[1].startswith("1_tensor_scalar")


@pytest.mark.parametrize("front", FRONTS)
def test_run_shadow_json(here, front):
    r = nk("run", front, "--input", "x=x.npy", "--out", "o", "--shadow", "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert "shadow" in doc and doc["outputs"][0]["name"] == "out0"


@pytest.mark.parametrize("front", FRONTS)
@pytest.mark.parametrize("fmt", ["json", "github", "junit"])
def test_check_formats(here, front, fmt):
    r = nk("check", front, "--input", "x=x.npy", "--format", fmt)
    assert r.exit_code == 0, r.output
    if fmt == "json":
        assert json.loads(r.stdout)["ok"] is True
    elif fmt == "github":
        assert r.stdout.startswith("::notice title=nkirun check::1 program: 1 ok")
    else:
        assert ET.fromstring(r.stdout.split("\n", 1)[1]).get("tests") == "1"


def test_check_many_programs_and_kernels_in_one_summary(here):
    r = nk("check", "p.yaml", "p.nkis", "k.py::add1", "--shape", "x=float32[4,128]")
    assert r.exit_code == 0, r.output
    assert "checked 3 programs: 3 ok" in r.output


@pytest.mark.parametrize("front", FRONTS)
def test_cost_is_the_same(here, front):
    r = nk("cost", front, "--input", "x=x.npy", "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    ref = json.loads(nk("cost", "p.yaml", "--format", "json").stdout)
    assert doc["total_ns"] == ref["total_ns"] and doc["instruction_count"] == 3


@pytest.mark.parametrize("front", FRONTS)
def test_cost_trace_out(here, front):
    r = nk("cost", front, "--input", "x=x.npy", "--trace-out", "-")
    assert r.exit_code == 0
    assert "traceEvents" in json.loads(r.stdout)  # the trace alone on stdout
    r = nk("cost", front, "--input", "x=x.npy", "--view", "summary", "--trace-out", "t.json")
    assert r.exit_code == 0 and "wrote the Perfetto trace to t.json" in r.stderr
    assert "traceEvents" in json.loads((here / "t.json").read_text())


@pytest.mark.parametrize("front", FRONTS)
@pytest.mark.parametrize("to", ["yaml", "text"])
def test_convert_runs_the_same(here, front, to):
    out = "c.yaml" if to == "yaml" else "c.nkis"
    r = nk("convert", front, "--input", "x=x.npy", "--to", to, "-o", out)
    assert r.exit_code == 0 and f"wrote {out}" in r.stderr, r.output
    got = nkirun.run(out, inputs={"x": X})
    assert list(got) == ["out0"]
    np.testing.assert_array_equal(got["out0"], X + 1)


@pytest.mark.parametrize("front", FRONTS)
def test_convert_dash_and_planted_names(here, front):
    r = nk("convert", front, "--input", "x=x.npy", "--to", "text", "-o", "-")
    assert r.exit_code == 0 and "dma_copy dst=out0" in r.stdout
    assert not (here / "-").exists()
    victim = here / "victim.txt"
    victim.write_text("keep me")
    for name in (f"c.nkis.tmp{os.getpid()}", "c.nkis.tmp"):
        os.symlink(victim, here / name)
    r = nk("convert", front, "--input", "x=x.npy", "--to", "text", "-o", "c.nkis")
    assert r.exit_code == 0 and victim.read_text() == "keep me"


@pytest.mark.parametrize("front", FRONTS)
@pytest.mark.parametrize("cmd", [["check"], ["cost"], ["run", "--out", "o"],
                                 ["convert", "--to", "text"]])
def test_a_fifo_input_never_hangs(here, front, cmd):
    os.mkfifo(here / "f.npy")
    r = subprocess.run([sys.executable, "-m", "nkirun", cmd[0], front, "--input", "x=f.npy",
                        *cmd[1:]], cwd=here, env=ENV, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode in (0, 1) and "Traceback" not in r.stderr, r.stderr
    if cmd[0] == "run" or front.endswith(".py::add1"):  # what reads the file refuses it
        assert r.returncode == 1 and "FIFO" in r.stdout + r.stderr


@pytest.mark.parametrize("front", FRONTS)
@pytest.mark.parametrize("flag", ["--out", "--dump", "--expect"])
def test_empty_folder_names(here, front, flag):
    r = nk("run", front, "--input", "x=x.npy", flag, "")
    assert r.exit_code == 2 and "empty" in r.output


# ---- the Python API -----------------------------------------------------------------------------
def _kernel(here):
    import importlib.util
    spec = importlib.util.spec_from_file_location("k_matrix", here / "k.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.add1


def test_api_same_results(here):
    k = _kernel(here)
    for src in ("p.yaml", "p.nkis", YAML):
        np.testing.assert_array_equal(nkirun.run(src, inputs={"x": X})["out0"], X + 1)
    np.testing.assert_array_equal(nkirun.simulate(k)(X), X + 1)
    assert nkirun.check("p.yaml") == nkirun.check(k, X) == []
    costs = {nkirun.cost(s).total_ns for s in ("p.yaml", "p.nkis")}
    assert costs == {nkirun.cost(k, X).total_ns}
    assert len(costs) == 1


def test_api_options_are_nkiruns_not_the_kernels(here):
    k = _kernel(here)
    assert nkirun.cost(k, X, target="trn1").target.name == "trn1"
    assert nkirun.check(k, X, target="trn1") == []
    for bad in (lambda: nkirun.simulate(k, target="bogus"), lambda: nkirun.check(k, X, lnc=3),
                lambda: nkirun.cost(k, X, target="bogus"), lambda: nkirun.simulate(k, lnc=3),
                lambda: nkirun.run("p.yaml", inputs={"x": X}, target="bogus"),
                lambda: nkirun.cost("p.yaml", trips=[1])):
        with pytest.raises(ValueError):
            bad()


def test_a_kernel_parameter_named_target(here):
    (here / "t.py").write_text(KERNEL.replace("def add1(x):", "def add1(x, target=0.0):")
                               .replace("operand0=1.0", "operand0=target"))
    import importlib.util
    spec = importlib.util.spec_from_file_location("t_matrix", here / "t.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    np.testing.assert_array_equal(nkirun.simulate(mod.add1, target="trn1")(X, target=3.0), X + 3)
    np.testing.assert_array_equal(nkirun.run(mod.add1, X, target="trn1",
                                             kernel_kwargs={"target": 4.0}), X + 4)
    with pytest.raises(ValueError):
        nkirun.run(mod.add1, X, target="bogus")
    sched = nkirun.cost(mod.add1, X, target="trn1", kernel_kwargs={"target": 2.0})
    assert sched.target.name == "trn1"
    assert nkirun.check(mod.add1, X, kernel_kwargs={"target": 2.0}) == []


@pytest.mark.parametrize("front", FRONTS)
def test_target_and_uninitialized_options(here, front):
    r = nk("run", front, "--input", "x=x.npy", "--out", "o", "--target", "trn1",
           "--uninitialized", "nan", "--format", "json")
    assert r.exit_code == 0, r.output
    np.testing.assert_array_equal(np.load(here / "o" / "out0.npy"), X + 1)
    r = nk("cost", front, "--input", "x=x.npy", "--target", "trn1", "--format", "json")
    assert json.loads(r.stdout)["target"] == "trn1"


def test_cost_compare_a_program_with_its_kernel(here):
    r = nk("cost", "p.yaml", "--compare", "p.nkis", "--format", "json")
    assert r.exit_code == 0, r.output
    r = nk("cost", "k.py::add1", "--input", "x=x.npy", "--compare-target", "trn1",
           "--format", "json")
    assert r.exit_code == 0, r.output
