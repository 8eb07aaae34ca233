"""A run's loops as a whole stay within the instruction budget (nkirun/control.py,
nkirun/limits.py): E661 bounds one entry of one loop, E662 the total, so nested loops that
each end but together run for ever stop with a located error. Outcomes only: no timing."""
from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from nkirun import api
from nkirun.cli import cli
from nkirun.diagnostics import NkirunError
from nkirun.limits import budget
from register_helpers import program, run_error

NESTED = program({"y": "buffer: hbm, shape: [1, 1], dtype: int32, fill: 0, output: true",
                  "s": "buffer: sbuf, shape: [1, 1], dtype: int32"}, """\
  - for:
      index: i
      stop: 999999
      body:
        - for:
            index: j
            stop: 999999
            body:
              - register_store: {dst: s, src: j}
              - dma_copy: {dst: y, src: s}
""")


def test_nested_loops_stop_at_the_budget_with_e662_naming_the_loop():
    with budget(5_000):
        diags = run_error(NESTED)
    assert [d.code for d in diags] == ["E662"]
    d = diags[0]
    assert "loop `j`" in d.message and "loop i trip 1, loop j trip 2,500" in d.message
    assert d.loc.line == 10  # the inner `for:` entry


def test_a_trip_counts_its_own_body_and_an_empty_one_counts_one():
    from nkirun.control import _trip_weights, loop_tree
    prog = api.require_valid(NESTED).program
    tree = loop_tree(prog.loops)
    assert _trip_weights(tree) == {"i": 1, "j": 2}


def test_the_budget_is_an_option_of_run_and_cost(tmp_path):
    path = tmp_path / "nested.yaml"
    path.write_text(NESTED)
    r = CliRunner().invoke(cli, ["run", str(path), "--out", str(tmp_path / "o"),
                                 "--max-instructions", "3000"])
    assert r.exit_code == 1 and "E662" in r.output, r.output
    assert not (tmp_path / "o").exists()
    # cost does not schedule every trip: both loops answer from their steady state
    r = CliRunner().invoke(cli, ["cost", str(path), "--max-instructions", "3000"])
    assert r.exit_code == 0 and "steady state" in r.output, r.output


def test_loops_within_the_budget_run_as_before():
    small = NESTED.replace("999999", "3")
    with budget(20):  # 3 x (1 + 3 x 2) = 21 steps: over
        assert [d.code for d in run_error(small)] == ["E662"]
    with budget(21):
        out = api.run(small)
    np.testing.assert_array_equal(out["y"], [[2]])


def test_a_cost_without_a_steady_state_stops_at_the_budget(monkeypatch):
    import nkirun
    from nkirun.schedule import steady
    monkeypatch.setattr(steady, "SAME_TRIPS", 10 ** 9)  # (as if no two trips matched)
    with pytest.raises(NkirunError) as e:
        nkirun.cost(NESTED, max_instructions=1000)
    assert e.value.diagnostics[0].code == "E662"
    assert "no steady state" in e.value.diagnostics[0].message
