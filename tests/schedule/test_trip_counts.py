"""Costing runtime loops (schedule/trips.py): the body is scheduled once per iteration,
the counts from constant bounds, the data, or `--trip NAME=N`, and the report says which."""
import json

import numpy as np
import pytest
from click.testing import CliRunner

from nkirun import api
from nkirun.cli import cli
from nkirun.diagnostics import NkirunError
from nkirun.schedule import to_json

BODY = """\
version: 1
tensors:
  count: {buffer: hbm, shape: [1, 1], dtype: int32, data: [[COUNT]]}
  c: {buffer: sbuf, shape: [1, 1], dtype: int32}
  t: {buffer: sbuf, shape: [128, 64], dtype: float32, fill: 1}
  y: {buffer: hbm, shape: [128, 64], dtype: float32, output: true}
instructions:
  - dma_copy: {dst: c, src: count}
  - register_alloc: {dst: n}
  - register_load: {dst: n, src: c}
  - for:
      index: e
      stop: n
      body:
        - for:
            index: k
            stop: 2
            body:
              - tensor_scalar: {dst: t, data: t, op0: multiply, operand0: 2.0, engine: vector}
  - dma_copy: {dst: y, src: t}
"""


def body_ops(sched):
    return [s.op for s in sched.slots].count("tensor_scalar")


@pytest.mark.parametrize("count", [0, 1, 3])
def test_counts_come_from_running_the_data(count):
    sched = api.cost(BODY.replace("COUNT", str(count)))
    assert body_ops(sched) == 2 * count
    rows = {r["name"]: r for r in to_json(sched)["loops"]}
    assert rows["e"] == {"name": "e", "kind": "for", "line": 11, "entries": 1,
                         "iterations": count, "trips": "data"}
    assert rows["k"]["trips"] == "static" and rows["k"]["iterations"] == 2 * count
    # every copy has its own position; the source line stays the body's
    assert len({s.index for s in sched.slots}) == len(sched.slots)
    assert {s.line for s in sched.slots if s.op == "tensor_scalar"} <= {19}


def test_assumed_trip_count_is_stated():
    sched = api.cost(BODY.replace("COUNT", "3"), trips={"e": 5})
    assert body_ops(sched) == 10
    doc = to_json(sched)
    assert doc["loops"][0]["trips"] == "assumed"
    assert any("--trip e=5" in a and "assumed" in a for a in doc["assumptions"])


def test_each_iteration_is_scheduled_after_the_last():
    sched = api.cost(BODY.replace("COUNT", "4"))
    body = [s for s in sched.slots if s.op == "tensor_scalar"]
    assert all(b.start_ns >= a.end_ns for a, b in zip(body, body[1:]))  # in-order Vector
    busy = sum(s.end_ns - s.start_ns for s in body)
    one = [s for s in api.cost(BODY.replace("COUNT", "1")).slots if s.op == "tensor_scalar"]
    assert busy == pytest.approx(4 * sum(s.end_ns - s.start_ns for s in one))


def test_no_data_and_no_trip_is_e657_naming_the_loop():
    text = BODY.replace("data: [[COUNT]]", "file: nowhere.npy")  # checks; cannot run
    with pytest.raises(NkirunError) as e:
        api.cost(text)
    d, = e.value.diagnostics
    assert d.code == "E657" and "loop `e`" in d.message and "--trip e=N" in d.hint


@pytest.mark.parametrize("trip,word", [("x=3", "no dynamic loop `x`"), ("k=3", "no dynamic"),
                                       ("e=-1", "NAME=N"), ("e", "NAME=N")])
def test_bad_trip_is_e658(trip, word, tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text(BODY.replace("COUNT", "2"))
    r = CliRunner().invoke(cli, ["cost", str(p), "--trip", trip])
    assert r.exit_code == 1 and "E658" in r.output and word in r.output


def test_cli_report_and_json(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text(BODY.replace("COUNT", "2"))
    r = CliRunner().invoke(cli, ["cost", str(p), "--view", "summary"])
    assert r.exit_code == 0 and "loop e (line 11): 2 iterations in 1 entry, trip count from " \
                                "running the data" in r.output
    r = CliRunner().invoke(cli, ["cost", str(p), "--trip", "e=7", "--format", "json"])
    assert r.exit_code == 0 and json.loads(r.output)["loops"][0]["iterations"] == 7
    assert np.isfinite(json.loads(r.output)["total_ns"])
