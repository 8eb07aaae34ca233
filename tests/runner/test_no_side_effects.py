"""The library leaves the calling process alone: no paused or frozen garbage collector, and
no state from one call that a second call sees."""
from __future__ import annotations

import gc
import pathlib

import numpy as np

import nkirun

PROGRAM = pathlib.Path(__file__).resolve().parents[2] / "programs" / "rowmax_in_window.yaml"


def test_api_calls_leave_the_garbage_collector_as_they_found_it(tmp_path):
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    nkirun.check(str(PROGRAM))
    nkirun.cost(str(PROGRAM))
    nkirun.run(str(PROGRAM), out=str(tmp_path / "o"))
    assert gc.isenabled() and gc.get_freeze_count() == frozen


def test_a_second_call_sees_nothing_of_the_first(tmp_path):
    first = nkirun.run(str(PROGRAM), out=str(tmp_path / "a"))
    again = nkirun.run(str(PROGRAM), out=str(tmp_path / "b"))
    assert first.keys() == again.keys()
    for k in first:
        np.testing.assert_array_equal(first[k], again[k])
    assert nkirun.cost(str(PROGRAM)).total_ns == nkirun.cost(str(PROGRAM)).total_ns
