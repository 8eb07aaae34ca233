"""Costing loops of very many trips from their steady state (schedule/steady.py): on small
trip counts the extrapolated schedule equals the full expansion (makespan, each engine's
busy time and instruction count, the loops' rows), and 10^9 trips answer."""
from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from nkirun import api
from nkirun.cli import cli
from nkirun.schedule import steady, to_json

HEAD = """\
version: 1
tensors:
  x: {buffer: hbm, shape: [128, 512], dtype: float32, fill: 1}
  y: {buffer: hbm, shape: [128, 512], dtype: float32, output: true}
  t: {buffer: sbuf, shape: [128, 512], dtype: float32}
  u: {buffer: sbuf, shape: [128, 512], dtype: float32}
  count: {buffer: hbm, shape: [1, 1], dtype: int32, data: [[3]]}
  c: {buffer: sbuf, shape: [1, 1], dtype: int32}
instructions:
  - dma_copy: {dst: c, src: count}
  - register_alloc: {dst: n}
  - register_load: {dst: n, src: c}
  - dma_copy: {dst: t, src: x}
"""
PIPELINE = HEAD + """\
  - for:
      index: i
      stop: STOP
      body:
        - tensor_scalar: {dst: u, data: t, op0: multiply, operand0: 2.0}
        - activation: {dst: t, op: exp, data: u}
        - dma_copy: {dst: y, src: t}
  - tensor_scalar: {dst: u, data: t, op0: add, operand0: 1.0}
  - dma_copy: {dst: y, src: u}
"""
NESTED = HEAD + """\
  - for:
      index: i
      stop: STOP
      body:
        - for:
            index: k
            stop: 3
            body:
              - tensor_scalar: {dst: u, data: t, op0: multiply, operand0: 2.0}
              - tensor_tensor: {dst: t, data1: t, data2: u, op: add}
        - dma_copy: {dst: y, src: t}
"""
ASSUMED = HEAD + """\
  - for:
      index: i
      stop: n
      body:
        - dma_copy: {dst: u, src: x}
        - tensor_tensor: {dst: t, data1: t, data2: u, op: multiply}
  - dma_copy: {dst: y, src: t}
"""


def summary(sched):
    doc = to_json(sched)
    engines = {n: (round(e["busy_ns"], 3), e["instructions"])
               for n, e in sched.engines().items()}
    return round(sched.total_ns, 3), engines, doc["loops"]


def both(text, trips=None, monkeypatch=None):
    full = api.cost(text, trips=trips)
    monkeypatch.setattr(steady, "EXTRAPOLATE_ABOVE", 0)
    fast = api.cost(text, trips=trips)
    monkeypatch.undo()
    return full, fast


@pytest.mark.parametrize("program,trips,after", [
    (PIPELINE.replace("STOP", "40"), None, 2),
    (PIPELINE.replace("STOP", "7"), None, 2),
    (NESTED.replace("STOP", "25"), None, 0),
    (ASSUMED, {"i": 30}, 1),
    (NESTED.replace("STOP", "12").replace("stop: 3", "stop: 20"), None, 0),  # both loops
    (NESTED.replace("STOP", "2").replace("stop: 3", "stop: 40"), None, 0),  # the inner one
])
def test_extrapolated_equals_full_expansion(program, trips, after, monkeypatch):
    full, fast = both(program, trips, monkeypatch)
    assert fast.repeats and len(fast.slots) < len(full.slots)  # it did extrapolate
    t_full, e_full, loops_full = summary(full)
    t_fast, e_fast, loops_fast = summary(fast)
    assert t_fast == pytest.approx(t_full, rel=1e-9)
    assert e_fast.keys() == e_full.keys()
    for name in e_full:
        assert e_fast[name][1] == e_full[name][1], name
        assert e_fast[name][0] == pytest.approx(e_full[name][0], rel=1e-9, abs=1e-6), name
    said = 0
    for a, b in zip(loops_full, loops_fast):
        b = dict(b)
        said += b.pop("extrapolated", None) is not None
        assert a == b
    assert said  # a loop's row says it was extrapolated
    # the `after` instructions after the loop are placed as the full expansion places them
    tail_full = [(s.op, s.index, round(s.start_ns, 3), round(s.end_ns, 3), s.waited_on)
                 for s in full.slots[len(full.slots) - after:]]
    tail_fast = [(s.op, s.index, round(s.start_ns, 3), round(s.end_ns, 3), s.waited_on)
                 for s in fast.slots[len(fast.slots) - after:]]
    assert tail_fast == tail_full
    if after:  # (the path of a schedule that ends in repeated trips ends in the last one shown)
        assert fast.critical_path()[-1].end_ns == pytest.approx(
            full.critical_path()[-1].end_ns)


def test_a_billion_trips_answer():
    sched = api.cost(PIPELINE.replace("STOP", str(10 ** 9)))
    rows = {r["name"]: r for r in to_json(sched)["loops"]}
    assert rows["i"]["iterations"] == 10 ** 9 and rows["i"]["extrapolated"]
    period = rows["i"]["extrapolated"]["period_ns"]
    assert sched.total_ns == pytest.approx(period * 10 ** 9, rel=1e-3)
    assert sched.instruction_count == 4 + 3 * 10 ** 9 + 2  # before, 10^9 trips of 3, after
    assert sched.engines()["dma"]["instructions"] == 2 + 10 ** 9 + 1
    assert len(sched.slots) < 1000


def test_trip_option_and_api_trips_of_a_billion(tmp_path):
    path = tmp_path / "assumed.yaml"
    path.write_text(ASSUMED)
    r = CliRunner().invoke(cli, ["cost", str(path), "--trip", f"i={10 ** 9}"])
    assert r.exit_code == 0, r.output
    assert "1,000,000,000 iterations" in r.output and "steady state" in r.output
    sched = api.cost(ASSUMED, trips={"i": 10 ** 9})
    assert sched.engines()["dma"]["instructions"] == 10 ** 9 + 3


DYNAMIC = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def scaled(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    for i in nl.dynamic_range(10 ** 9):
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=1.0)
    nisa.dma_copy(dst=out, src=t)
    return out
'''


def test_a_kernel_with_a_billion_trip_dynamic_range(tmp_path):
    import importlib.util

    import nkirun
    path = tmp_path / "dyn.py"
    path.write_text(DYNAMIC)
    spec = importlib.util.spec_from_file_location("dyn_steady", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    x = nkirun.shape("float32", 128, 64)
    sched = nkirun.cost(mod.scaled, x)
    assert sched.engines()["vector"]["instructions"] + sched.engines()["gpsimd"][
        "instructions"] + sched.engines()["scalar"]["instructions"] >= 10 ** 9
    assert np.isfinite(sched.total_ns) and sched.repeats


def test_two_nested_loops_of_999999_trips_answer():
    sched = api.cost(NESTED.replace("STOP", "999999").replace("stop: 3", "stop: 999999"))
    rows = {r["name"]: r for r in to_json(sched)["loops"]}
    assert rows["k"]["iterations"] == 999_999 ** 2 and rows["k"]["extrapolated"]
    assert sched.instruction_count == 4 + 999_999 * (1 + 2 * 999_999)
    assert sched.engines()["vector"]["instructions"] + sched.engines()["gpsimd"][
        "instructions"] + sched.engines()["scalar"]["instructions"] == 2 * 999_999 ** 2
