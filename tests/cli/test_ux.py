"""What people see: help texts, diagnostics (plain and coloured), the run summary, the
golden-diff report and the coloured trace."""
from __future__ import annotations

import io
import re

import numpy as np
import pytest

from nkirun.runner.compare import compare, compare_headline, format_diffs
from nkirun.hw.dtypes import DTYPES
from nkirun.diagnostics import Loc, error, warning
from nkirun.show.render import LONG_LINE, format_plain, print_diagnostics, summary_line
from prog_helpers import invoke
from repo_paths import ROOT

ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture(autouse=True)
def _at_root(monkeypatch):
    monkeypatch.chdir(ROOT)  # outputs name programs by the path they were given


class Tty(io.StringIO):
    def isatty(self):
        return True


# ---- help -------------------------------------------------------------------------------------
def test_top_help_lists_commands_in_workflow_order():
    out = invoke("--help").output
    listed = re.findall(r"^  (\w+)\s{2,}", out.split("Commands:")[1], re.M)
    assert listed == ["check", "run", "cost", "sweep", "convert", "explain", "ops", "schema"]
    assert "..." not in out.split("Commands:")[1]  # one-line summaries, not cut docstrings
    assert "Exit status" in out


@pytest.mark.parametrize("cmd", ["check", "run", "cost", "sweep", "convert", "explain", "ops",
                                 "schema"])
def test_every_command_help_states_exit_status(cmd):
    out = invoke(cmd, "--help").output
    assert "Exit status" in out
    if cmd not in ("ops", "schema"):
        assert "Examples:" in out and f"nkirun {cmd} " in out


# ---- diagnostics ------------------------------------------------------------------------------
def test_summary_line_wording():
    e, w = error("E020", "x", Loc("p", 1, 1)), warning("W051", "y", Loc("p", 2, 1))
    assert summary_line([]) == "no problems"
    assert summary_line([e]) == "1 error"
    assert summary_line([e, e, w]) == "2 errors, 1 warning"
    assert summary_line([w, w]) == "2 warnings"


def test_check_ok_line(tmp_path):
    r = invoke("check", "programs/rowmax_in_window.yaml")
    assert r.exit_code == 0
    assert r.output.strip() == "programs/rowmax_in_window.yaml: ok — 6 instructions"


def test_yaml_syntax_error_quotes_the_source_and_explains_views(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("version: 1\ntensors:\n  t: {buffer: sbuf, shape: [4, 4], dtype: float32}\n"
                 "instructions:\n  - memset: {dst: t[:, 0:2], value: 1.0}\n")
    r = invoke("check", p)
    assert r.exit_code == 1
    lines = r.output.splitlines()
    assert lines[0].startswith(f"{p}:5:") and "error[E001]" in lines[0]
    assert lines[1] == " 5 |   - memset: {dst: t[:, 0:2], value: 1.0}"
    assert lines[2].strip(" |").startswith("^")
    assert 'quote a view that has a comma: "t[:, 0:128]"' in lines[3]


def test_long_source_line_is_windowed_with_the_caret_on_the_token():
    src = "  - x: {" + ", ".join(f"k{i}: {i}" for i in range(200)) + ", bad: 1}"
    col = src.index("bad") + 1
    text = format_plain(error("E022", "unknown keyword `bad`", Loc("p", 1, col)), (src,))
    _, quoted, caret = text.splitlines()
    assert len(quoted) <= LONG_LINE + 10 and quoted.startswith(" 1 | ...")
    at = caret.index("^")
    assert quoted[at:at + 3] == "bad" and caret.count("^") == 3


@pytest.mark.parametrize("length,col", [(5000, 6000), (5000, 5001), (20, 5000)])
def test_a_column_past_the_line_end_keeps_the_caret_line_windowed(length, col):
    """A column after the end of a 5,000-column line gave a caret line 1,000 columns
    longer than the window; the caret now sits just after the quoted line's end."""
    src = "x" * length
    _, quoted, caret = format_plain(error("E001", "m", Loc("p", 1, col)), (src,)).splitlines()
    assert len(caret) <= len(quoted) + 1 <= LONG_LINE + 11
    assert caret.index("^") == len(quoted) and caret.count("^") == 1


def test_tabs_do_not_shift_the_caret():
    src = "\t- memset: {dst: t, valu: 1}"
    col = src.index("valu") + 1
    _, quoted, caret = format_plain(error("E022", "m", Loc("p", 1, col)), (src,)).splitlines()
    at = caret.index("^")
    assert quoted[at:at + 4] == "valu"


def test_coloured_diagnostics_keep_the_source_line_whole(monkeypatch):
    monkeypatch.setenv("COLUMNS", "40")
    monkeypatch.delenv("NO_COLOR", raising=False)
    src = "  - range_select: {dst: r, on_true_tile: t, comp_op0: greater_eq, comp_op1: less}"
    d = error("E025", "unknown operator 'greater_eq' " * 3, Loc("p.yaml", 1, 45),
              hint="allowed: equal, less")
    f = Tty()
    print_diagnostics([d], (src,), f)
    out = f.getvalue()
    assert "\x1b[" in out
    plain = ANSI.sub("", out).splitlines()
    at = plain.index(f" 1 | {src}")  # not broken at 40 columns (the terminal wraps it)
    # the header before it wraps between words, within 60 columns at the least (issue 12)
    head = plain[:at]
    assert len(head) > 1 and all(len(h) <= 60 for h in head)
    assert " ".join(" ".join(head).split()) == " ".join(
        f"p.yaml:1:45: error[E025]: {d.message}".split())
    assert plain[at + 1].index("^") == plain[at].index("comp_op0")
    assert plain[at + 2] == "   = help: allowed: equal, less"


def test_no_color_env_gives_plain_text(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    f = Tty()
    print_diagnostics([error("E020", "m", Loc("p", 1, 1))], ("x",), f)
    assert "\x1b" not in f.getvalue() and f.getvalue().startswith("p:1:1: error[E020]: m")


# ---- run summary, --expect ---------------------------------------------------------------------
def test_run_summary_aligned_and_plural(tmp_path):
    r = invoke("run", "programs/rowmax_in_window.yaml", "--out", tmp_path / "o")
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert lines[0] == ("programs/rowmax_in_window.yaml: 6 instructions executed, "
                        "2 outputs written")
    arrows = {line.index("->") for line in lines[1:]}
    assert len(lines) == 3 and len(arrows) == 1  # the columns line up


def test_compare_headline():
    f32 = DTYPES["float32"]
    a = np.zeros((2, 3), np.float32)
    ok, bad = compare("y", a, a, f32), compare("z", a, a + 1, f32)
    assert compare_headline([ok]) == "the output matches"
    assert compare_headline([ok, ok]) == "all 2 outputs match"
    assert compare_headline([bad]) == "the output differs"
    assert compare_headline([ok, bad]) == "1 of 2 outputs differs"
    assert compare_headline([bad, bad, ok]) == "2 of 3 outputs differ"


def test_nan_only_mismatch_says_so():
    f32 = DTYPES["float32"]
    a = np.zeros((4, 3), np.float32)
    b = a.copy()
    b[2, 1] = np.nan
    text = format_diffs([compare("y", a, b, f32, on_chip=True)])
    assert "MISMATCH (exact) in 1 of 12 elements" in text
    assert "first at (p=2, f=1): got 0, expected nan" in text
    assert "the difference is in NaN, inf or the sign of zero" in text
    assert "max abs error" not in text


# ---- trace on a terminal -----------------------------------------------------------------------
def test_coloured_trace_streams_one_aligned_line_per_instruction(tmp_path):
    from nkirun import api
    from nkirun.runner.interpret import execute
    from nkirun.runner.watch import Tracer
    c = api.require_valid("programs/causal_softmax.yaml")
    tracer = Tracer(Tty(), rich=True, bound=c.bound)
    execute(c.program, c.bound, None, tracer)
    lines = ANSI.sub("", tracer.stream.getvalue()).splitlines()
    assert lines[0] == "trace: what each instruction wrote"
    heads = [ln for ln in lines[1:] if ln.startswith("#")]
    assert len(heads) == len(c.bound)
    assert len({ln.index(" min ") for ln in heads}) == 1  # views padded to one width
    assert "NaN" not in "".join(lines)  # counts appear only when there are some


# ---- cost report at narrow widths ---------------------------------------------------------------
@pytest.mark.parametrize("width", [60, 72, 80, 100])
@pytest.mark.parametrize("name", ["causal_softmax", "topk_match_replace"])
def test_cost_report_fits_and_never_cuts_a_number(name, width):
    from nkirun import api
    from nkirun.schedule import render_report
    s = api.cost(f"programs/{name}.yaml")
    f = io.StringIO()
    render_report(s, f, width=width, color=False)
    text = f.getvalue()
    assert max(map(len, text.splitlines())) <= width
    assert "…" not in text
    table = text.split("\ninstructions\n")[1].split("cost formulas")[0]
    rows = [ln for ln in table.splitlines() if re.match(r"\|\s*\d", ln)]
    assert len(rows) == len(s.slots)  # one row per instruction, index and cycles whole
    header = [c.strip() for c in table.splitlines()[1].strip("|").split("|")]
    ends = any(c.startswith("end") for c in header)  # narrow: dropped before the engine
    assert ends or width < 80
    for x, row in zip(s.slots, rows):
        cells = [c.strip() for c in row.strip("|").split("|")]
        # cycles are cycles; a DMA transfer (modelled in ns) shows "-" there (issue 24)
        assert cells[0] == str(x.index) and ("-" if x.engine == "dma"
                                             else f"{x.cycles:,}") in cells
        from nkirun.terminal import in_unit, time_unit
        assert not ends or in_unit(x.end_ns, time_unit(s.total_ns)[1]) in cells
    # lists wrap between items, not inside one
    for line in text.splitlines():
        assert not re.match(r"^\d+% \(", line.strip())


@pytest.mark.parametrize("args", [["cost", "programs/rowmax_in_window.yaml", "--view",
                                   "timeline,table"], ["explain", "range_select"]],
                         ids=["cost", "explain"])
def test_an_absurd_columns_is_held_to_a_terminal_width(args):
    """COLUMNS=99999999 on a terminal (FORCE_COLOR stands in for one): rich would size the
    table and timeline to it and never finish; the width is held within TERMINAL_WIDTH."""
    import os
    import subprocess
    import sys

    from nkirun.terminal import TERMINAL_WIDTH
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FORCE_COLOR": "1", "COLUMNS": "99999999"}
    env.pop("NO_COLOR", None)
    p = subprocess.run([sys.executable, "-m", "nkirun", *args], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=60)  # a hang guard
    assert p.returncode == 0, p.stderr[-2000:]
    lines = ANSI.sub("", p.stdout).splitlines()
    assert lines and max(map(len, lines)) <= TERMINAL_WIDTH[1]
