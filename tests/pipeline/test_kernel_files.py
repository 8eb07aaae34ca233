"""Issue 25: the kernel path's file handling is the programs' (one pipeline)."""
from __future__ import annotations

import os

import numpy as np
import pytest
from click.testing import CliRunner

from nkirun.cli import cli

COPY = '''import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def cp(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=x)
    return out
'''


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def nk(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_a_kernel_file_with_dots_in_its_name_loads(here):
    (here / "my.kernel.py").write_text(COPY)
    r = nk("check", "my.kernel.py", "--shape", "x=float32[4,8]")
    assert r.exit_code == 0 and "ok — 1 instruction" in r.output, r.output


def test_a_folder_named_like_a_kernel_is_a_folder(here):
    (here / "dir.py").mkdir()
    (here / "dir.py" / "p.yaml").write_text(
        "version: 1\ntensors:\n  y: {buffer: hbm, shape: [2, 2], dtype: float32, fill: 1, "
        "output: true}\ninstructions: []\n")
    r = nk("check", "dir.py")
    assert r.exit_code == 0 and "p.yaml: ok" in r.output, r.output


def test_more_than_16_dimensions_is_e012_before_a_run(here):
    (here / "k.py").write_text(COPY)
    dims = ",".join(["1"] * 70)
    for cmd in (["check"], ["run", "--out", "o"], ["cost"]):
        r = nk(*cmd[:1], "k.py", "--shape", f"x=float32[{dims}]", *cmd[1:])
        assert r.exit_code == 1 and "E012" in r.output, r.output


def test_convert_names_a_kernels_outputs_as_run_does(here):
    (here / "k.py").write_text(COPY.replace("return out", "return out, x"))
    np.save(here / "x.npy", np.ones((4, 8), np.float32))
    r = nk("convert", "k.py", "--input", "x=x.npy", "--to", "yaml")
    assert r.exit_code == 0, r.output
    assert "out0: " in r.stdout and "out1: " in r.stdout and "dst: out0, src: out1" in r.stdout
    r = nk("run", "k.py", "--input", "x=x.npy", "--out", "o")
    assert sorted(os.listdir(here / "o")) == ["out0.npy", "out1.npy"]
