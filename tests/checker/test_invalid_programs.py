"""One invalid program per diagnostic code (tests/invalid/), each stating what it expects.

A file's header lines `# expect: CODE at LINE[:COL]` name diagnostics `check` must report
(more may appear). That every code nkirun can emit has such a program (or a named covering
test) is checked over the whole table in tests/isa/test_registry.py.
"""
from __future__ import annotations

import json
import pathlib
import re

import pytest
from click.testing import CliRunner

from nkirun.api import check_program
from nkirun.cli import cli
from prog_helpers import reported_at
from repo_paths import PROGRAMS
from repo_paths import INVALID as INVALID_DIR

INVALID = sorted(INVALID_DIR.glob("*.yaml")) + sorted(INVALID_DIR.glob("*.nkis"))
EXPECT = re.compile(r"^# expect: ([EW]\d{3}) at (\d+)(?::(\d+))?", re.M)


def expectations(path: pathlib.Path):
    return [(c, int(ln), int(col) if col else None) for c, ln, col in
            EXPECT.findall(path.read_text())]


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.stem)
def test_invalid_program_reports_expected_code(path):
    expected = expectations(path)
    assert expected, f"{path.name} has no `# expect:` line"
    for code, line, col in expected:
        _, diags = reported_at(path, code, line=line, column=col)
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


EXAMPLES = sorted((PROGRAMS).glob("*.yaml")) + \
    sorted((PROGRAMS).glob("*.nkis"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_programs_have_no_diagnostics_and_run(path, tmp_path):
    """Every program in programs/ checks without a single diagnostic and runs (the
    before-stop smoke test does the same through the installed command). A runtime loop's
    W650/W651 say what only the run can know: they are the one exception."""
    assert [d for d in check_program(str(path)).diagnostics
            if d.code not in ("W650", "W651")] == []
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
    for code, line in (("E025", 11), ("E060", 13), ("E062", 13), ("E026", 14)):
        _, diags = reported_at(path, code, line=line, instruction=0)
    assert "E050" not in [d.code for d in diags]  # no knock-on error for `r`
