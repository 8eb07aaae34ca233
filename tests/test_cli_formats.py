"""Issue 12, "Command line": check PATH..., --format github/junit, run --format json,
--color auto|always|never with FORCE_COLOR/NO_COLOR."""
from __future__ import annotations

import json
import pathlib
import re
import shutil
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from click.testing import CliRunner

from nkirun.cli import cli

ROOT = pathlib.Path(__file__).resolve().parent.parent
ANSI = re.compile(r"\x1b\[[0-9;]*m")
BAD = "tests/invalid/E040_wrong_buffer.yaml"
GOOD = "programs/rowmax_in_window.yaml"


@pytest.fixture(autouse=True)
def _at_root(monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)


def invoke(*args, env=None):
    return CliRunner().invoke(cli, [str(a) for a in args], env=env)


# ---- check PATH... ---------------------------------------------------------------------------
def test_check_many_files_one_summary_one_exit_status():
    r = invoke("check", GOOD, "programs/topk16.yaml")
    assert r.exit_code == 0
    assert r.output.splitlines()[-1] == "checked 2 programs: 2 ok"
    r = invoke("check", GOOD, BAD, "programs/topk16.yaml")
    assert r.exit_code == 1
    assert r.output.splitlines()[-1] == "checked 3 programs: 2 ok, 1 with errors (2 errors)"
    assert f"{BAD}:8:12: error[E040]" in r.output


def test_check_a_folder_finds_every_program(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / ".hidden").mkdir()
    shutil.copy(GOOD, tmp_path / "a.yaml")
    shutil.copy(BAD, tmp_path / "sub" / "b.yml")
    shutil.copy("programs/rowmax_in_window.nkis", tmp_path / "sub" / "c.nkis")
    shutil.copy(BAD, tmp_path / ".hidden" / "skip.yaml")
    (tmp_path / "notes.txt").write_text("not a program")
    (tmp_path / "data.npy").write_bytes(b"")
    r = invoke("check", tmp_path, "--format", "json")
    d = json.loads(r.output)
    assert r.exit_code == 1
    assert [p["program"] for p in d["programs"]] == [
        str(tmp_path / "a.yaml"), str(tmp_path / "sub" / "b.yml"),
        str(tmp_path / "sub" / "c.nkis")]
    assert d["errors"] == 2 and not d["ok"]
    assert {x["file"] for x in d["diagnostics"]} == {str(tmp_path / "sub" / "b.yml")}


def test_check_an_empty_folder_is_a_usage_error(tmp_path):
    r = invoke("check", tmp_path)
    assert r.exit_code == 2 and "no .yaml/.yml/.nkis program" in r.output


def test_check_single_program_json_keeps_its_shape():
    d = json.loads(invoke("check", BAD, "--format", "json").output)
    assert d["program"] == BAD and d["errors"] == 2 and "programs" not in d


# ---- CI formats ------------------------------------------------------------------------------
def test_github_annotations():
    r = invoke("check", BAD, GOOD, "--output-format", "github")
    assert r.exit_code == 1
    lines = r.output.splitlines()
    assert lines[0].startswith(f"::error file={BAD},line=8,col=12,title=nkirun E040::load: ")
    assert "%0Ahelp: " in lines[0]  # the hint, on its own line of the annotation
    assert lines[-1] == "::notice title=nkirun check::2 programs: 1 ok, 1 with errors (2 errors)"
    assert all(line.startswith("::") for line in lines)


def test_github_escapes_properties_and_data(tmp_path):
    p = tmp_path / "a,b:c.yaml"
    p.write_text("version: 1\ntensors: {}\ninstructions:\n  - frob: {x: 1}\n")
    out = invoke("check", p, "--format", "github").output
    assert f"file={str(p).replace(':', '%3A').replace(',', '%2C')}," in out


def test_junit_report():
    r = invoke("check", BAD, GOOD, "--format", "junit")
    assert r.exit_code == 1
    root = ET.fromstring(r.output)
    suite = root.find("testsuite")
    assert suite.get("tests") == "2" and suite.get("failures") == "1"
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert set(cases) == {BAD, GOOD}
    fail = cases[BAD].find("failure")
    assert fail.get("type") == "E040" and "error[E040]" in fail.text
    assert cases[GOOD].find("failure") is None


def test_junit_survives_control_characters(tmp_path):
    p = tmp_path / "ctl.yaml"
    p.write_text("version: 1\ntensors:\n  \"a\\x01\": {buffer: sbuf, shape: [1, 1], "
                 "dtype: float32}\ninstructions: []\n")
    ET.fromstring(invoke("check", p, "--format", "junit").output)  # well-formed XML


# ---- run --format json -----------------------------------------------------------------------
def test_run_json_with_expect_verdict(tmp_path):
    assert invoke("run", GOOD, "--out", tmp_path / "gold").exit_code == 0
    r = invoke("run", GOOD, "--out", tmp_path / "o", "--format", "json",
               "--expect", tmp_path / "gold")
    assert r.exit_code == 0
    d = json.loads(r.stdout)
    assert d["ok"] and d["instructions"] == 6
    assert [o["name"] for o in d["outputs"]] == ["y", "ymax"]
    assert d["outputs"][0]["file"] == str(tmp_path / "o" / "y.npy")
    assert d["expect"]["ok"] and {t["ok"] for t in d["expect"]["tensors"]} == {True}
    # a mismatch: the verdict says so and the exit status is 1
    y = np.load(tmp_path / "gold" / "y.npy")
    y[3, 7] = 12345.0
    np.save(tmp_path / "gold" / "y.npy", y)
    r = invoke("run", GOOD, "--out", tmp_path / "o", "--format", "json",
               "--expect", tmp_path / "gold")
    d = json.loads(r.stdout)
    assert r.exit_code == 1 and not d["ok"] and not d["expect"]["ok"]
    bad = [t for t in d["expect"]["tensors"] if not t["ok"]]
    assert bad[0]["mismatches"] == 1


def test_run_json_error_is_json_too():
    r = invoke("run", BAD, "--format", "json")
    assert r.exit_code == 1
    d = json.loads(r.stdout)
    assert not d["ok"] and [x["code"] for x in d["diagnostics"]] == ["E040", "E050"]


# ---- colour ----------------------------------------------------------------------------------
@pytest.mark.parametrize("flag,env,coloured", [
    ([], {}, False),  # a pipe
    (["--color", "always"], {}, True),
    (["--color", "never"], {"FORCE_COLOR": "1"}, False),
    ([], {"FORCE_COLOR": "1"}, True),
    ([], {"FORCE_COLOR": "0"}, False),
    ([], {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),
    (["--color", "always"], {"NO_COLOR": "1"}, True),
    (["--color=auto"], {}, False),
])
@pytest.mark.parametrize("cmd", [["check", BAD], ["cost", GOOD, "--view", "summary"],
                                 ["explain", "memset"]])
def test_color_flag_and_environment(flag, env, coloured, cmd):
    r = invoke(*flag, *cmd, env=env)
    assert bool(ANSI.search(r.output)) == coloured, r.output[:300]
