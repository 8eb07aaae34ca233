"""`cost --format json` with its rows spelled from the slots (speed.JSON_ROWS,
show/cost_json.py) against the plain twin (views.table's dicts through the streamed
writer), and the opt-in summary level (`--detail summary`)."""
from __future__ import annotations

import io
import json
import math

import pytest
from click.testing import CliRunner

from nkirun import api, speed
from nkirun.cli import cli
from nkirun.schedule import VIEWS, to_json
from nkirun.show.cost_json import row_texts, write_cost_json
from nkirun.show.json_out import EncodedRows, write_json

from repo_paths import ROOT

PROGRAMS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "programs").glob("*.yaml"))
LNC2 = ["programs/kernels/rmsnorm_lnc2.py::rmsnorm_lnc2", "--lnc", "2",
        "--shape", "x=float32[256,200]", "--shape", "w=float32[1,200]"]


@pytest.fixture(autouse=True)
def _at_root(monkeypatch):
    monkeypatch.chdir(ROOT)


def _both(s, monkeypatch, views=VIEWS) -> tuple[str, str]:
    fast = io.StringIO()
    write_cost_json(s, views, fast)
    monkeypatch.setattr(speed, "JSON_ROWS", False)
    plain = io.StringIO()
    write_cost_json(s, views, plain)
    monkeypatch.setattr(speed, "JSON_ROWS", True)
    return fast.getvalue(), plain.getvalue()


@pytest.mark.parametrize("path", PROGRAMS + ["programs/rowmax_in_window.nkis"])
def test_rows_spelled_from_the_slots_are_the_plain_twins_bytes(path, monkeypatch):
    s = api.cost(path)
    fast, plain = _both(s, monkeypatch)
    assert fast == plain
    assert json.loads(fast) == json.loads(json.dumps(to_json(s)))


def test_two_cores_name_labels_and_odd_values_are_the_plain_twins_bytes(monkeypatch):
    """Rows with `core`, a `name=` label, times that are ints, -0.0, inf and nan, a wait
    reason needing escapes, and a value of a type the fast spelling does not cover."""
    s = api.cost("programs/two_core_halves.yaml")
    assert s.program.cores == 2
    fast, plain = _both(s, monkeypatch)
    assert fast == plain and '"core": 1' in fast
    s = api.cost("programs/causal_softmax.yaml")
    odd = [dict(inst_name="k\u00e9\"1"), dict(start_ns=2.0, end_ns=3.0),
           dict(start_ns=2, end_ns=3),  # ints equal to floats spelled before: still ints
           dict(start_ns=-0.0), dict(end_ns=math.inf), dict(end_ns=math.nan),
           dict(wait_tensor="t\n\u2028"), dict(cycles=True), dict(queues=(1, 2)),
           dict(queues=[3]), dict(start_ns=1.0005), dict(line=None), dict(assumed=1)]
    for k, change in enumerate(odd):
        s.slots[k % len(s.slots)] = s.slots[k % len(s.slots)].replace(**change)
    fast, plain = _both(s, monkeypatch, ("summary",))  # (the other views need finite times)
    assert fast == plain
    assert "NaN" in fast and "Infinity" in fast and '"name": "k\\u00e9\\"1"' in fast


def test_the_two_core_command_line_document_is_the_plain_twins(monkeypatch):
    fast = CliRunner().invoke(cli, ["cost", *LNC2, "--format", "json"])
    monkeypatch.setattr(speed, "JSON_ROWS", False)
    plain = CliRunner().invoke(cli, ["cost", *LNC2, "--format", "json"])
    assert fast.exit_code == plain.exit_code == 0, fast.output
    assert fast.output == plain.output and '"core": 1' in fast.output


def test_an_empty_row_list_and_a_miscounted_producer():
    out = io.StringIO()
    write_json({"instructions": EncodedRows(0, iter(()))}, out)
    assert out.getvalue() == '{\n  "instructions": []\n}\n'
    with pytest.raises(ValueError, match="3 rows announced, 2 given"):
        write_json({"instructions": EncodedRows(3, iter(['{"a": 1}', '{"b": 2}']))},
                   io.StringIO())


def test_row_texts_are_the_encoded_plain_rows():
    from nkirun.schedule import views as v
    s = api.cost("programs/selective_scan.yaml")
    assert list(row_texts(s)) == [json.dumps(r) for r in v.table(s)]


def test_detail_summary_leaves_the_rows_out_and_keeps_the_rest():
    r = CliRunner().invoke(cli, ["cost", "programs/causal_softmax.yaml", "--format", "json",
                                 "--detail", "summary"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    full = json.loads(CliRunner().invoke(cli, ["cost", "programs/causal_softmax.yaml",
                                               "--format", "json"]).output)
    assert "instructions" not in doc
    del full["instructions"]
    assert doc == full
    assert doc["instruction_count"] > 0
    only = json.loads(CliRunner().invoke(cli, [
        "cost", "programs/causal_softmax.yaml", "--format", "json", "--detail", "summary",
        "--view", "summary"]).output)
    assert {"target", "total_ns", "engines"} <= set(only)
    assert not {"instructions", "timeline", "critical_path", "advice"} & set(only)


@pytest.mark.parametrize("extra", [[], ["--compare-target", "trn1"]])
def test_detail_summary_without_json_or_with_compare_is_a_usage_error(extra):
    fmt = ["--format", "json"] if extra else []
    r = CliRunner().invoke(cli, ["cost", "programs/causal_softmax.yaml", "--detail",
                                 "summary", *fmt, *extra])
    assert r.exit_code == 2
    assert "--detail" in r.output
