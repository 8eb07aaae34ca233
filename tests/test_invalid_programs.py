"""One invalid program per diagnostic code (tests/invalid/), each stating what it expects.

A file's header lines `# expect: CODE at LINE[:COL]` name diagnostics `check` must report
(more may appear); `# mode: run` files are expected to fail at run time instead.
Every code nkirun can emit must have at least one such program.
"""
from __future__ import annotations

import json
import pathlib
import re

import pytest
from click.testing import CliRunner

from nkirun.api import check_program
from nkirun.cli import cli

HERE = pathlib.Path(__file__).parent
INVALID = sorted((HERE / "invalid").glob("*.yaml")) + sorted((HERE / "invalid").glob("*.nkis"))
EXPECT = re.compile(r"^# expect: ([EW]\d{3}) at (\d+)(?::(\d+))?", re.M)
SOURCE_CODES = re.compile(r"""["']([EW]\d{3})["']""")

# Codes that cannot come from a program file alone (file-system and data-file problems,
# run-time errors); each is covered by the named test module instead.
ELSEWHERE = {
    "E000": "test_robustness", "E070": "test_robustness", "E071": "test_robustness",
    "E072": "test_robustness", "E073": "test_robustness", "E074": "test_robustness",
    "E075": "test_workflow", "E080": "test_robustness", "E090": "test_workflow",
    "E091": "test_robustness", "E092": "test_robustness",
    "W136": "test_nc_match_replace8", "W137": "test_nc_match_replace8",  # run-time warnings
    "W202": "test_activation",  # run-time warning
    "E416": "test_local_gather", "E423": "test_nc_n_gather",  # run-time index errors
    "E452": "test_sequence_bounds",  # run time: a negative segment id
    "E486": "test_nc_matmul_modes", "W487": "test_nc_matmul_modes",  # run time
}


def expectations(path: pathlib.Path):
    return [(c, int(ln), int(col) if col else None) for c, ln, col in
            EXPECT.findall(path.read_text())]


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.stem)
def test_invalid_program_reports_expected_code(path):
    expected = expectations(path)
    assert expected, f"{path.name} has no `# expect:` line"
    diags = check_program(str(path)).diagnostics
    got = [(d.code, d.loc.line, d.loc.column) for d in diags]
    for code, line, col in expected:
        assert any(c == code and ln == line and (col is None or cl == col)
                   for c, ln, cl in got), f"{path.name}: expected {code} at {line}:{col}, got {got}"
    assert all(d.loc.file == str(path) for d in diags if d.loc.line)


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.stem)
def test_invalid_program_cli_exit_status_and_json(path):
    expected = expectations(path)
    r = CliRunner().invoke(cli, ["check", str(path), "--format", "json"])
    assert "Traceback" not in r.output
    doc = json.loads(r.output)
    has_error = any(c.startswith("E") for c, _, _ in expected)
    assert r.exit_code == (1 if has_error else 0)
    for d in doc["diagnostics"]:
        assert {"severity", "code", "message", "line", "column", "instruction", "hint"} <= set(d)
        assert d["severity"] in ("error", "warning")


def _emitted_codes() -> set[str]:
    pkg = HERE.parent / "nkirun"
    codes = set()
    for f in pkg.rglob("*.py"):
        codes |= set(SOURCE_CODES.findall(f.read_text()))
    return codes


def test_every_code_has_an_invalid_program():
    covered = {c for p in INVALID for c, _, _ in expectations(p)} | set(ELSEWHERE)
    missing = sorted(_emitted_codes() - covered)
    assert not missing, f"codes without a program in tests/invalid/: {missing}"


def test_every_code_is_documented():
    doc = (HERE.parent / "docs" / "diagnostics.md").read_text()
    missing = sorted(c for c in _emitted_codes() if f"`{c}`" not in doc)
    assert not missing, f"codes missing from docs/diagnostics.md: {missing}"


def test_codes_covered_elsewhere_are_tested_there():
    for code, module in ELSEWHERE.items():
        assert code in next(HERE.rglob(f"{module}.py")).read_text(), f"{module}.py never checks {code}"


EXAMPLES = sorted((HERE.parent / "programs").glob("*.yaml")) + \
    sorted((HERE.parent / "programs").glob("*.nkis"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_programs_have_no_diagnostics_and_run(path, tmp_path):
    """Every program in programs/ checks without a single diagnostic and runs (the
    before-stop smoke test does the same through the installed command)."""
    assert check_program(str(path)).diagnostics == []
    r = CliRunner().invoke(cli, ["run", str(path), "--out", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    assert list((tmp_path / "out").glob("*.npy"))


def test_one_bad_keyword_does_not_hide_the_instructions_other_errors(tmp_path):
    """Issue 3: every violation at once. A bad operator drops the instruction from running,
    but its operands are still checked (dtype, partitions, unknown tensor)."""
    path = tmp_path / "multi.yaml"
    path.write_text("""version: 1
tensors:
  t:  {buffer: sbuf, shape: [128, 64], dtype: float32, fill: 1.0}
  lo: {buffer: sbuf, shape: [64, 1], dtype: bfloat16, fill: 0}
  r:  {buffer: sbuf, shape: [128, 64], dtype: float32}
  y:  {buffer: hbm, shape: [128, 64], dtype: float32, output: true}
instructions:
  - range_select:
      dst: r
      on_true_tile: t
      comp_op0: greater_than
      comp_op1: less
      bound0: lo
      bound1: hii
  - store: {dst: y, src: r}
""")
    got = {(d.code, d.loc.line) for d in check_program(str(path)).diagnostics}
    assert {("E025", 11), ("E060", 13), ("E062", 13), ("E026", 14)} <= got
    assert not any(code == "E050" for code, _ in got)  # no knock-on error for `r`
