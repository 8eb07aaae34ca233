"""`nkirun cost` output: golden text reports of the example programs (fixed width, no
colour; `pytest --regen-golden` rewrites them), the JSON contract, the Perfetto trace and
the command-line options."""
from __future__ import annotations

import io
import json

import pytest
import yaml
from click.testing import CliRunner

from nkirun import api
from nkirun.cli import cli
from nkirun.schedule import render_report, to_json, trace_events
from repo_paths import GOLDEN, ROOT

PROGRAMS = sorted(p.name for p in (ROOT / "programs").glob("*.yaml"))
WIDTH = 100


def report(path: str, **kw) -> str:
    f = io.StringIO()
    render_report(api.cost(path), f, width=WIDTH, color=False, **kw)
    return f.getvalue()


@pytest.mark.parametrize("name", PROGRAMS)
def test_golden_report(name, request, monkeypatch):
    monkeypatch.chdir(ROOT)  # the report names the program by the path it was given
    text = report(f"programs/{name}")
    golden = GOLDEN / (name.removesuffix(".yaml") + ".txt")
    if request.config.getoption("--regen-golden"):
        GOLDEN.mkdir(exist_ok=True)
        golden.write_text(text)
        return
    assert golden.exists(), f"{golden} is missing: run pytest --regen-golden"
    assert text == golden.read_text(), (
        f"the cost report of {name} changed; if that is intended, run pytest --regen-golden "
        "and review the diff")


@pytest.mark.parametrize("name", PROGRAMS)
def test_plain_report_is_ascii_and_fits(name, monkeypatch):
    monkeypatch.chdir(ROOT)
    text = report(f"programs/{name}")
    assert "\x1b" not in text
    # no box-drawing or block characters (text from the instruction notes may cite "§")
    assert not any("\u2500" <= ch <= "\u259f" or ch == "\u00b7" for ch in text)
    assert max(len(line) for line in text.splitlines()) <= WIDTH
    for head in ("engines", "instructions", "timeline", "critical path"):
        assert any(line.startswith(head) for line in text.splitlines()), head


def test_narrow_instruction_table_keeps_engine_before_end_time(monkeypatch):
    """Narrow terminals drop optional columns start, end, then engine (the UX review:
    which engine ran an instruction matters more than when it ended)."""
    monkeypatch.chdir(ROOT)
    sched = api.cost("programs/causal_softmax.yaml")
    seen = set()
    for width in range(40, 121, 4):
        f = io.StringIO()
        render_report(sched, f, width=width, views=("table",))
        header = next(line for line in f.getvalue().splitlines() if "cycles" in line)
        cells = [c.strip() for c in header.strip("|").split("|")]
        seen.add(tuple(cells))
        assert "engine" in cells or not any(c.startswith("end") for c in cells), (width, cells)
        assert max(len(line) for line in f.getvalue().splitlines()) <= width
    assert any("engine" in c and not any(x.startswith("end") for x in c) for c in seen)


def test_colour_report_has_colour(monkeypatch):
    monkeypatch.chdir(ROOT)
    f = io.StringIO()
    render_report(api.cost("programs/rowmax_in_window.yaml"), f, width=WIDTH, color=True)
    assert "\x1b[" in f.getvalue()


def test_views_are_selectable(monkeypatch):
    monkeypatch.chdir(ROOT)
    text = report("programs/rowmax_in_window.yaml", views=("timeline",))
    assert text.startswith("timeline") and "engines" not in text
    lines = text.splitlines()
    assert any(line.startswith("vector") for line in lines)
    assert any(line.startswith("dma.q0-15") for line in lines)


def test_table_rows_are_capped(tmp_path):
    insts = [{"memset": {"dst": "a", "value": float(i)}} for i in range(30)]
    p = tmp_path / "many.yaml"
    p.write_text(yaml.safe_dump({"version": 1, "tensors": {
        "a": {"buffer": "sbuf", "shape": [4, 4], "dtype": "float32", "output": True}},
        "instructions": insts}))
    text = report(str(p), views=("table",), max_rows=10)
    assert "20 more instructions" in text
    assert "20 more" not in report(str(p), views=("table",), max_rows=0)


# ---- JSON --------------------------------------------------------------------------------
def cost_json(*args):
    r = CliRunner().invoke(cli, ["cost", *args, "--format", "json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


@pytest.mark.parametrize("name", PROGRAMS)
def test_json_has_the_contract_keys(name, monkeypatch):
    monkeypatch.chdir(ROOT)
    d = cost_json(f"programs/{name}")
    program = yaml.safe_load((ROOT / "programs" / name).read_text())
    assert d["target"] == program.get("target", "trn2")
    assert isinstance(d["total_ns"], float) and d["total_ns"] > 0
    for e in d["engines"].values():
        assert {"clock_ghz", "busy_ns", "utilization"} <= e.keys()
    entries = program.get("instructions") or [  # a two-core program: core 0's, then core 1's
        e for core in program["cores"] for e in core["instructions"]]
    if "loops" in d:  # runtime loops: one row per executed instruction, in run order
        from nkirun import api
        ops: list = []
        api.run(f"programs/{name}", after_each=lambda b, m: ops.append(b.op))
        entries = [{op: None} for op in ops]
    assert len(d["instructions"]) == len(entries)
    for i, (x, entry) in enumerate(zip(d["instructions"], entries)):
        assert {"op", "engine", "cycles", "start_ns", "end_ns", "formula", "assumed",
                "wait"} <= x.keys()
        assert x["index"] == i and x["op"] == next(iter(entry))  # program order
        assert x["engine"] in d["engines"]
        assert isinstance(x["cycles"], int) and 0 <= x["start_ns"] <= x["end_ns"]
    assert d["total_ns"] == pytest.approx(max(x["end_ns"] for x in d["instructions"]))
    assert d["bottleneck"] in d["engines"]
    assert d["critical_path"]["steps"][-1]["end_ns"] == pytest.approx(d["total_ns"])
    assert {r["track"] for r in d["timeline"]["rows"]} >= {
        (f"core{x['core']}." if "core" in x else "") + x["engine"]  # two cores: per core
        for x in d["instructions"] if x["engine"] != "dma"}


def test_json_notes_cite_the_typo_and_assumptions(monkeypatch):
    monkeypatch.chdir(ROOT)
    d = cost_json("programs/topk_match_replace.yaml")
    assert any("nc_match_replace8" in n and "min(MIN_II, N)" in n for n in d["notes"])
    d = cost_json("programs/select_reduce_reverse.yaml")
    assert any(x["assumed"] for x in d["instructions"] if x["op"] == "select_reduce")
    assert any(n.startswith("select_reduce") for n in d["notes"])
    assert any("partitions 8e..8e+7" in a for a in d["assumptions"])


def test_target_override(monkeypatch):
    monkeypatch.chdir(ROOT)
    d2, d1 = cost_json("programs/rowmax_in_window.yaml"), cost_json(
        "programs/rowmax_in_window.yaml", "--target", "trn1")
    assert (d2["target"], d1["target"]) == ("trn2", "trn1")
    assert d1["engines"]["vector"]["clock_ghz"] == 1.12
    assert d2["engines"]["vector"]["clock_ghz"] == 0.96
    assert d1["total_ns"] > d2["total_ns"]  # 1.3 us DMA fixed cost vs 0.6 us


def test_json_views_select_sections(monkeypatch):
    monkeypatch.chdir(ROOT)
    d = cost_json("programs/rowmax_in_window.yaml", "--view", "summary")
    assert "timeline" not in d and "critical_path" not in d and d["instructions"]


# ---- Perfetto ----------------------------------------------------------------------------
def test_trace_is_valid_trace_event_json(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    out = tmp_path / "trace.json"
    r = CliRunner().invoke(cli, ["cost", "programs/causal_softmax.yaml", "--trace-out",
                                 str(out), "--view", "summary"])
    assert r.exit_code == 0, r.output
    d = json.loads(out.read_text())
    events = d["traceEvents"]
    slices = [e for e in events if e["ph"] == "X"]
    meta = [e for e in events if e["ph"] == "M"]
    for e in slices:
        assert {"name", "ts", "dur", "pid", "tid", "args"} <= e.keys()
        assert isinstance(e["ts"], (int, float)) and e["dur"] >= 0
    s = api.cost("programs/causal_softmax.yaml")
    # one slice per instruction on its engine; a DMA transfer on each queue group it uses
    # (tests/test_perfetto.py checks the groups)
    assert len(slices) >= len(s.slots)
    assert {e["args"]["index"] for e in slices} == set(range(len(s.slots)))
    names = {e["tid"]: e["args"]["name"] for e in meta if e["name"] == "thread_name"}
    assert {e["tid"] for e in slices} <= names.keys()
    assert any(n.startswith("dma.q") for n in names.values())
    x = s.slots[-1]
    last = [e for e in slices if e["args"]["index"] == x.index][0]
    assert last["ts"] == pytest.approx(x.start_ns / 1000)  # microseconds
    assert last["dur"] == pytest.approx(x.duration_ns / 1000)
    assert trace_events(s)["traceEvents"] == events


def test_trace_to_an_unwritable_place_is_a_diagnostic(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    r = CliRunner().invoke(cli, ["cost", "programs/rowmax_in_window.yaml", "--trace-out",
                                 str(tmp_path / "no" / "such" / "dir" / "t.json")])
    assert r.exit_code == 1
    assert "E080" in r.output and "Traceback" not in r.output


# ---- the command line --------------------------------------------------------------------
def test_cli_text_is_plain_when_piped(monkeypatch):
    monkeypatch.chdir(ROOT)
    r = CliRunner().invoke(cli, ["cost", "programs/rowmax_in_window.yaml"])
    assert r.exit_code == 0
    assert "\x1b" not in r.output and r.output.isascii()  # this program has no notes
    assert "makespan" in r.output and "bottleneck: dma" in r.output


def test_cli_bad_view_is_a_usage_error(monkeypatch):
    monkeypatch.chdir(ROOT)
    r = CliRunner().invoke(cli, ["cost", "programs/rowmax_in_window.yaml", "--view", "gantt"])
    assert r.exit_code == 2 and "summary, table, timeline, critical" in r.output


def test_cli_invalid_program_exits_1(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("version: 1\ntensors: {}\ninstructions:\n  - load: {dst: t, src: x}\n")
    r = CliRunner().invoke(cli, ["cost", str(p)])
    assert r.exit_code == 1 and "E026" in r.output


def test_to_json_is_pure(monkeypatch):
    monkeypatch.chdir(ROOT)
    s = api.cost("programs/causal_softmax.yaml")
    assert to_json(s) == to_json(s)
    json.dumps(to_json(s))  # serialisable


# ---- units, letters and tags the reports explain (issue 24) -----------------------------------
def test_cycles_are_cycles_and_every_row_has_its_own_ns(monkeypatch):
    """The cycles column held ns for DMA rows: now DMA shows "-" there, and every row has
    its own time in ns (JSON `ns` = cycles / the engine's clock_ghz; DMA, modelled in ns,
    counts cycles at its nominal 1 GHz, so `cycles` stays a number for readers of it)."""
    monkeypatch.chdir(ROOT)
    doc = to_json(api.cost("programs/rowmax_in_window.yaml"))
    for i in doc["instructions"]:
        clock = doc["engines"][i["engine"]]["clock_ghz"]
        assert i["ns"] == pytest.approx(i["cycles"] / clock, abs=1e-3)
    assert doc["engines"]["dma"]["clock_ghz"] == 1.0
    text = report("programs/rowmax_in_window.yaml", views=("table",))
    head = next(ln for ln in text.splitlines() if "| cycles |" in ln)
    assert "own ns" in head
    rows = [ln.split("|") for ln in text.splitlines() if "dma.q0-15" in ln or "| vector" in ln]
    at = head.split("|").index(" cycles ")
    assert {r[at].strip() for r in rows if "dma" in "".join(r)} == {"-"}
    assert all(" ns" not in r[at] for r in rows)


def test_timeline_letters_are_the_same_in_every_report(monkeypatch):
    """A letter was picked per op and per report (`S` was select_reduce in one report, store
    in another); now each engine has its letter, consecutive instructions on a track
    alternating its case, and the legend says so."""
    from nkirun.schedule.views import ENGINE_LETTERS, timeline
    monkeypatch.chdir(ROOT)
    for name in ("select_reduce_reverse", "rowmax_in_window", "causal_softmax"):
        s = api.cost(f"programs/{name}.yaml")
        legend = report(f"programs/{name}.yaml", views=("timeline",)).split("legend:")[1]
        used = {x.engine for x in s.slots}
        assert all(f"{ENGINE_LETTERS[e]} {e}" in legend for e in used)
        assert "case alternates between consecutive instructions" in legend
        for row in timeline(s, width=400)["rows"]:  # wide: every instruction shows
            letters = set(row["bar"]) - {"."}
            assert {c.upper() for c in letters} <= {ENGINE_LETTERS[e] for e in used}
            runs = "".join(c for k, c in enumerate(row["bar"])
                           if c != "." and (k == 0 or row["bar"][k - 1] != c))
            assert len(runs) <= len(row["instructions"])
    dma = timeline(api.cost("programs/rowmax_in_window.yaml"), width=400)["rows"][-1]["bar"]
    assert "D" in dma and "d" in dma  # two loads and stores back to back: both cases


def test_old_isa_tag_is_explained(monkeypatch):
    """`[OLD-ISA]` in a note said nothing to a reader; the notes now say what it is."""
    monkeypatch.chdir(ROOT)
    notes = to_json(api.cost("programs/matmul_transpose.yaml"))["notes"]
    assert any("[OLD-ISA]" in n for n in notes)
    meaning = [n for n in notes if n.startswith("[OLD-ISA]: ")]
    assert len(meaning) == 1 and "legacy NKI ISA" in meaning[0] and "https://" in meaning[0]
    r = CliRunner().invoke(cli, ["explain", "nc_matmul"])
    assert "[OLD-ISA]: the cost estimate of the legacy NKI ISA pages" in " ".join(
        r.output.split())
