"""The Perfetto trace (issue 12, "Trace export"): one track per DMA queue group actually
used, a flow arrow for every "waited for" edge, counter tracks of live SBUF/PSUM bytes."""
from __future__ import annotations

import json
import os
import pathlib
import stat

import pytest
from click.testing import CliRunner

from nkirun import api
from nkirun.cli import cli
from nkirun.schedule import trace_events
from nkirun.schedule.views import tracks

from repo_paths import ROOT
PROGRAMS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "programs").glob("*.yaml"))


@pytest.fixture(autouse=True)
def _at_root(monkeypatch):
    monkeypatch.chdir(ROOT)


def _events(path):
    s = api.cost(path)
    return s, trace_events(s)["traceEvents"]


def _thread_names(events):
    """(pid, tid) -> track name (a two-core program has one process per core)."""
    return {(e["pid"], e["tid"]): e["args"]["name"] for e in events
            if e["ph"] == "M" and e["name"] == "thread_name"}


def _track_name(name: str) -> str:
    """A tracks() name without its two-core prefix ("core1.dma.q0-15" -> "dma.q0-15")."""
    return name.split(".", 1)[1] if name.startswith("core") else name


@pytest.mark.parametrize("path", PROGRAMS)
def test_one_track_per_dma_queue_group_used(path):
    s, events = _events(path)
    names = _thread_names(events)
    dma_tracks = sorted(n for n in names.values() if n.startswith("dma"))
    assert dma_tracks == sorted(_track_name(n) for n, _ in tracks(s)
                                if _track_name(n).startswith("dma"))
    used = {q for x in s.slots for q in x.queues}
    # no two DMA tracks carry exactly the same transfers; every track has something on it
    per_tid: dict[tuple, list[int]] = {}
    for e in events:
        if e["ph"] == "X":
            per_tid.setdefault((e["pid"], e["tid"]), []).append(e["args"]["index"])
    assert set(per_tid) == set(names)
    dma_runs = [tuple(v) for t, v in per_tid.items() if names[t].startswith("dma")]
    assert len(dma_runs) == len(set(dma_runs))
    assert len(dma_tracks) <= len(used)
    # each DMA instruction appears once on every group holding one of its queues
    for x in s.slots:
        if x.queues:
            assert any(i == x.index for v in dma_runs for i in v)


def test_all_sixteen_queues_together_are_one_track():
    s, events = _events("programs/rowmax_in_window.yaml")
    assert all(len(x.queues) == 16 for x in s.slots if x.engine == "dma")
    dma = [n for n in _thread_names(events).values() if n.startswith("dma")]
    assert dma == ["dma.q0-15"]


@pytest.mark.parametrize("path", PROGRAMS)
def test_a_flow_arrow_for_every_waited_for_edge(path):
    s, events = _events(path)
    slices = [e for e in events if e["ph"] == "X"]
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    edges = {(x.waited_on, x.index) for x in s.slots if x.waited_on is not None}
    assert starts.keys() == ends.keys()
    got = {(starts[i]["args"]["from"], starts[i]["args"]["to"]) for i in starts}
    assert got == edges and len(starts) == len(edges)

    def enclosing(ev, index):  # the flow event lies inside a slice of `index` on its track
        return any(sl["args"]["index"] == index and sl["tid"] == ev["tid"]
                   and sl["pid"] == ev["pid"]
                   and sl["ts"] <= ev["ts"] <= sl["ts"] + sl["dur"] for sl in slices)
    for i, st in starts.items():
        assert enclosing(st, st["args"]["from"])
        assert ends[i]["bp"] == "e" and enclosing(ends[i], st["args"]["to"])


def test_live_sbuf_and_psum_counters():
    s, events = _events("programs/matmul_transpose.yaml")
    counters = {}
    for e in events:
        if e["ph"] == "C":
            counters.setdefault(e["name"], []).append((e["ts"], e["args"]["bytes"]))
    assert set(counters) == {"live SBUF bytes", "live PSUM bytes"}
    prog = s.program
    for buf in ("sbuf", "psum"):
        steps = counters[f"live {buf.upper()} bytes"]
        assert steps[0] == (0.0, 0) and steps[-1][1] == 0  # nothing live at the end
        assert all(n >= 0 for _, n in steps)
        assert [t for t, _ in steps] == sorted(t for t, _ in steps)
        # the peak never exceeds the sum of all tensors of that buffer, and is reached
        total = sum(t.size * t.dtype.itemsize for t in prog.tensors.values()
                    if t.buffer == buf)
        assert 0 < max(n for _, n in steps) <= total
    # an independent count at one instant: the middle of the last instruction
    x = s.slots[-1]
    mid = (x.start_ns + x.end_ns) / 2
    live = 0
    for name, t in prog.tensors.items():
        if t.buffer != "sbuf":
            continue
        uses = [y for y in s.slots if name in y.tensors]
        if uses and min(y.start_ns for y in uses) <= mid < max(y.end_ns for y in uses):
            live += t.size * t.dtype.itemsize
    steps = counters["live SBUF bytes"]
    at = [n for t, n in steps if t <= mid / 1000][-1]
    assert at == live


def test_trace_out_dash_writes_the_trace_to_stdout():
    r = CliRunner().invoke(
        cli, ["cost", "programs/rowmax_in_window.yaml", "--trace-out", "-"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)  # standard output is the trace alone
    assert d["traceEvents"]
    assert "standard output" in r.stderr


def test_trace_file_says_where_and_respects_the_umask(tmp_path):
    out = tmp_path / "t.json"
    old = os.umask(0o027)
    try:
        r = CliRunner().invoke(
            cli, ["cost", "programs/rowmax_in_window.yaml", "--trace-out", str(out)])
    finally:
        os.umask(old)
    assert r.exit_code == 0, r.output
    assert stat.S_IMODE(out.stat().st_mode) == 0o640
    assert str(out) in r.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["t.json"]  # no temporary file left


@pytest.mark.parametrize("path", ["programs/range_select_chain.yaml",
                                  "programs/selective_scan.yaml",
                                  "programs/moe_expert_loop.yaml"])
def test_back_to_back_slices_do_not_overlap(path):
    """ts and dur were rounded each on its own, so a slice that ends where the next one on
    its track starts overlapped it by 1 ps; the end points are rounded now. (DMA slices
    that really overlap in the schedule, transfers in flight together, still do.)"""
    s, events = _events(path)
    first = {}
    for e in events:
        if e["ph"] == "X" and "op" in e["args"]:
            first[e["args"]["index"]] = e
    slots = sorted(s.slots, key=lambda x: (x.queue, x.start_ns))
    checked = 0
    for a, b in zip(slots, slots[1:]):
        if a.queue == b.queue and a.end_ns <= b.start_ns:
            ea, eb = first[a.index], first[b.index]
            assert round(ea["ts"] + ea["dur"], 6) <= eb["ts"], (a, b)
            checked += 1
    assert checked


@pytest.mark.parametrize("path", PROGRAMS)
def test_streamed_trace_is_the_plain_twins_bytes(path, tmp_path, monkeypatch):
    """speed.STREAMED_JSON: the trace written a few hundred events at a time is byte for
    byte json.dumps of the whole document (its plain twin)."""
    from nkirun import speed
    from nkirun.schedule import perfetto, write_trace
    monkeypatch.setattr(perfetto, "_CHUNK", 3)  # several chunks even for a short program
    s = api.cost(path)
    write_trace(s, str(tmp_path / "streamed.json"))
    monkeypatch.setattr(speed, "STREAMED_JSON", False)
    write_trace(s, str(tmp_path / "plain.json"))
    streamed = (tmp_path / "streamed.json").read_bytes()
    assert streamed == (tmp_path / "plain.json").read_bytes()
    assert streamed == json.dumps(trace_events(s), separators=(",", ":")).encode()


def test_a_transfer_with_no_queue_gets_a_track(tmp_path):
    """A DMA elided as a recompute has no queue (scheduler.py): the trace once died on it
    with a KeyError (nki-library/NKIBench add_rmsnorm_matmul); it goes on `dma.elided`."""
    from nkirun.schedule import write_trace
    s = api.cost("programs/rowmax_in_window.yaml")
    dma = next(x for x in s.slots if x.engine == "dma")
    s.slots[s.slots.index(dma)] = dma.replace(queues=())
    events = trace_events(s)["traceEvents"]
    names = _thread_names(events)
    elided = [k for k, name in names.items() if name == "dma.elided"]
    assert len(elided) == 1
    assert [e["args"]["index"] for e in events if e["ph"] == "X"
            and (e["pid"], e["tid"]) == elided[0]] == [dma.index]
    write_trace(s, str(tmp_path / "t.json"))
    assert json.loads((tmp_path / "t.json").read_text())["traceEvents"]
