"""Issue 25: `nkirun check PATH...` takes kernels, folders and a pyproject.toml listing
kernels with their shapes ([[tool.nkirun.kernels]]), one summary for all."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

from nkirun.cli import cli

GOOD = '''import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def cp(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=x)
    return out
'''
BAD = GOOD.replace("nisa.dma_copy(dst=out, src=x)", "t = nl.ndarray(x.shape, dtype=x.dtype, "
                   "buffer=nl.sbuf)\n    nisa.dma_copy(dst=out, src=t)")
PROGRAM = ("version: 1\ntensors:\n  y: {buffer: hbm, shape: [2, 2], dtype: float32, "
           "fill: 1, output: true}\ninstructions: []\n")
MANIFEST = '''[project]
name = "demo"

[[tool.nkirun.kernels]]
kernel = "kernels/good.py::cp"
shape = ["x=float32[4,8]"]

[[tool.nkirun.kernels]]
kernel = "kernels/bad.py::cp"
shape = ["x=float32[4,8]"]
target = "trn1"
'''


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "good.py").write_text(GOOD)
    (tmp_path / "kernels" / "bad.py").write_text(BAD)
    (tmp_path / "progs").mkdir()
    (tmp_path / "progs" / "p.yaml").write_text(PROGRAM)
    (tmp_path / "pyproject.toml").write_text(MANIFEST)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def nk(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_a_folder_checks_its_programs_and_listed_kernels(project):
    r = nk("check", ".")
    assert r.exit_code == 1, r.output
    assert "checked 3 programs: 2 ok, 1 with errors" in r.output
    assert "kernels/bad.py:" in r.output and "E050" in r.output


def test_the_manifest_alone_in_junit_and_github(project):
    r = nk("check", "pyproject.toml", "--format", "junit")
    suites = ET.fromstring(r.stdout.split("\n", 1)[1])
    assert r.exit_code == 1 and suites.get("tests") == "2" and suites.get("failures") == "1"
    assert {c.get("file") for c in suites.iter("testcase")} == {"kernels/good.py",
                                                                "kernels/bad.py"}
    r = nk("check", "pyproject.toml", "--format", "github")
    assert "::error file=kernels/bad.py,line=" in r.stdout


def test_several_kernel_files_on_one_command_line(project):
    r = nk("check", "kernels/good.py::cp", "kernels/bad.py", "--shape", "x=float32[4,8]",
           "--format", "json")
    doc = json.loads(r.stdout)
    assert r.exit_code == 1 and [p["ok"] for p in doc["programs"]] == [True, False]


def test_a_bad_manifest_is_located(project):
    (project / "pyproject.toml").write_text(MANIFEST + '\n[[tool.nkirun.kernels]]\nkernal = "x"\n')
    r = nk("check", ".")
    assert r.exit_code == 1 and "pyproject.toml" in r.output and "kernel 3" in r.output


def test_a_manifest_entry_missing_a_parameter_does_not_hide_the_others(project):
    (project / "pyproject.toml").write_text(MANIFEST.replace('shape = ["x=float32[4,8]"]\n'
                                                             'target', 'target', 1)
                                            .replace('kernel = "kernels/bad.py::cp"\n'
                                                     'shape = ["x=float32[4,8]"]',
                                                     'kernel = "kernels/bad.py::cp"'))
    r = nk("check", "pyproject.toml")
    assert r.exit_code == 1 and "E595" in r.output and "`x` is missing" in r.output
    assert "kernels/good.py::cp: ok" in r.output
    r = nk("check", "kernels/bad.py::cp")  # alone: a usage error
    assert r.exit_code == 2
