"""`cost` of a checked program whose check reported no W047 skips working out the
compiler's spills again (`speed.SPILLS_FROM_CHECK`, pipeline/commands.py cost): the check
warns W047 exactly when schedule/spills.py has spill traffic to book (the same live sets,
checker/passes.py), and every schedule equals the one made without the shortcut."""
from __future__ import annotations

import pathlib

import pytest

from nkirun import speed
from nkirun.api import check_program
from nkirun.hw.targets import TARGETS
from nkirun.pipeline import commands
from nkirun.schedule import spills

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROGRAMS = sorted(str(p) for p in (ROOT / "programs").glob("*.yaml"))
HEADER = """\
version: 1
target: trn2
tensors:
  x: {buffer: hbm, shape: [128, 30000], dtype: float32, fill: 1}
  y: {buffer: hbm, shape: [128, 30000], dtype: float32, output: true}
  z: {buffer: hbm, shape: [128, 30000], dtype: float32, output: true}
  a: {buffer: sbuf, shape: [128, 30000], dtype: float32}
  b: {buffer: sbuf, shape: [128, 30000], dtype: float32}
instructions:
"""
# a and b take 120,000 bytes per partition each; trn2 has 229,376 (test_capacity.py)
SPILLS = ["load: {dst: a, src: x}",
          "tensor_scalar: {dst: a, data: a, op0: multiply, operand0: 2}",
          "load: {dst: b, src: x}", "store: {dst: y, src: a}", "store: {dst: z, src: b}"]
FITS = ["load: {dst: a, src: x}", "store: {dst: y, src: a}", "load: {dst: b, src: x}",
        "store: {dst: z, src: b}"]


def _slots(sched):
    return ([tuple(getattr(x, f) for f in x.__slots__) for x in sched.slots],
            sched.total_ns, sched.spills)


def _written(tmp_path):
    out = []
    for name, body in (("spills", SPILLS), ("fits", FITS)):
        p = tmp_path / f"{name}.yaml"
        p.write_text(HEADER + "".join(f"  - {i}\n" for i in body))
        out.append(str(p))
    return out


def test_w047_exactly_when_the_schedule_books_spills(tmp_path, monkeypatch):
    seen = {True: 0, False: 0}
    for path in _written(tmp_path) + PROGRAMS:
        c = check_program(path)
        if not c.ok:
            continue
        warned = any(d.code == "W047" for d in c.diagnostics)
        events = spills.spill_events(c.program, c.bound, TARGETS[c.program.target])
        assert warned == bool(events), path
        seen[warned] += 1
        monkeypatch.setattr(speed, "SPILLS_FROM_CHECK", True)
        fast = _slots(commands.cost(c))
        monkeypatch.setattr(speed, "SPILLS_FROM_CHECK", False)
        assert fast == _slots(commands.cost(c)), path
    assert seen[True] >= 1 and seen[False] >= 10


@pytest.mark.parametrize("shortcut", [True, False])
def test_the_shortcut_is_taken_only_without_w047(tmp_path, monkeypatch, shortcut):
    calls = []
    real = spills.spill_events
    monkeypatch.setattr(spills, "spill_events", lambda *a: calls.append(1) or real(*a))
    monkeypatch.setattr(speed, "SPILLS_FROM_CHECK", shortcut)
    with_spills, fits = _written(tmp_path)
    sched = commands.cost(check_program(with_spills))
    assert sched.spills and sched.spills["save_bytes"] > 0
    commands.cost(check_program(fits))
    assert len(calls) == (1 if shortcut else 2)
