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

from repo_paths import ROOT
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


@pytest.mark.parametrize("command", ["run", "cost"])
def test_json_error_is_json_too(command):
    """A tool reading `--format json` gets JSON for an invalid program as well (the text
    diagnostics still go to stderr)."""
    r = invoke(command, BAD, "--format", "json")
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


# ---- numbers, colours and wrapping a person reads -------------------------------------------
def test_durations_scale_with_one_separator_style():
    from nkirun.terminal import duration, in_unit, time_unit
    assert duration(748.66) == "748.7 ns"
    assert duration(4748.7) == "4.75 us" and duration(4748.7, micro=True) == "4.75 µs"
    assert duration(12_345_678.0) == "12.35 ms" and duration(3.5e9) == "3.50 s"
    assert duration(1_234_567_890_123.0) == "1,234.57 s"
    assert time_unit(4748.7) == ("ns", 1.0) and time_unit(47_487.0, True) == ("µs", 1e3)
    assert in_unit(1_234_567.0, 1.0) == "1,234,567.0"


def _cost_text(path, color, width=120):
    import io

    from nkirun import api
    from nkirun.schedule import render_report

    class Tty(io.StringIO):
        encoding = "utf-8"

        def isatty(self):
            return True
    f = Tty()
    render_report(api.cost(path), f, width=width, color=color)
    return f.getvalue()


def test_cost_report_units_and_dma_column():
    text = _cost_text("programs/causal_softmax.yaml", color=False)
    assert "makespan " in text and re.search(r"makespan [\d,.]+ (ns|us|ms)", text)
    assert text.isascii()  # plain output: `us`, never `µs`
    table = text.split("\ninstructions\n")[1].split("cost formulas")[0]
    rows = [ln for ln in table.splitlines() if "| load " in ln or "| store " in ln]
    # a DMA transfer has no cycles ("-"); its own time is in the `own` column (issue 24)
    assert rows and all(re.search(r"\|\s+- \|\s+[\d,.]+ \|", ln) for ln in rows)
    assert re.search(r"\| cycles \|\s+own (ns|us|ms) \|", table)
    coloured = _cost_text("programs/causal_softmax.yaml", color=True)
    assert "µs" in ANSI.sub("", coloured)  # a terminal gets the real unit


RED_OR_DARK_BLUE = re.compile(r"\x1b\[(?:[0-9;]*;)?(?:31|34|44)(?:;[0-9;]*)?m")


@pytest.mark.parametrize("path", ["programs/matmul_transpose.yaml",
                                  "programs/causal_softmax.yaml", "programs/topk16.yaml"])
def test_cost_colours_by_engine_never_red_or_dark_blue(path):
    from nkirun.schedule.report import ENGINE_COLORS
    assert not {"red", "blue", "bright_red"} & set(ENGINE_COLORS.values())
    text = _cost_text(path, color=True)
    assert "\x1b[" in text and not RED_OR_DARK_BLUE.search(text)
    from nkirun import api
    engines = {x.engine for x in api.cost(path).slots}
    # every instruction of one engine gets that engine's colour in the timeline
    assert len({ENGINE_COLORS[e] for e in engines}) == len(engines)


def test_diagnostic_gutter_is_not_dark_blue():
    import io

    from nkirun.diagnostics import Loc, error
    from nkirun.show.render import print_diagnostics, set_color_mode

    class Tty(io.StringIO):
        def isatty(self):
            return True
    f = Tty()
    set_color_mode("always")
    try:
        print_diagnostics([error("E020", "m", Loc("p", 1, 1), hint="h")], ("x",), f)
    finally:
        set_color_mode("auto")
    body = f.getvalue()  # red marks the error itself (header, caret); the frame is not blue
    assert "\x1b[" in body and not re.search(r"\x1b\[(?:[0-9;]*;)?(?:34|44)(?:;[0-9;]*)?m", body)


@pytest.mark.parametrize("columns,limit", [("200", 80), ("99999999", 80), ("20", 60),
                                           ("70", 70)])
def test_explain_wraps_between_words(columns, limit):
    from nkirun.isa import REGISTRY
    r = invoke("explain", "range_select", env={"COLUMNS": columns})
    assert r.exit_code == 0
    example = set(REGISTRY["range_select"].example.splitlines())
    prose = [ln for ln in r.output.splitlines()
             if ln.strip() not in example and not ln.startswith("source: ")]
    assert max(len(ln) for ln in prose) <= limit
    assert max(len(ln) for ln in prose) > limit - 15  # it does use the room
    words = set(" ".join(r.output.split()).split())
    assert "per-partition" in words  # words are never split (no hyphen breaks)


def test_explain_a_diagnostic_code():
    r = invoke("explain", "E040")
    assert r.exit_code == 0
    assert r.output.startswith("E040 (error) — Memory and buffers")
    assert "buffer the instruction does not allow" in r.output
    r = invoke("explain", "w213", "--format", "json")
    d = json.loads(r.output)
    assert d["code"] == "W213" and d["instruction"] == "tensor_tensor"
    assert d["severity"] == "warning"
    r = invoke("explain", "E999")
    assert r.exit_code == 1 and "unknown diagnostic code" in r.output
