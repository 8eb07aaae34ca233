"""nkirun/dropin/usage.py: what one call adds to the process's resident memory."""
from __future__ import annotations

import sys

import numpy as np
import pytest

from nkirun.dropin import usage

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


@linux
def test_the_peak_inside_a_call_is_seen_after_its_memory_is_freed():
    row = {}
    with usage.measured(row):
        a = np.ones(64 << 17)  # 64 MB, touched, then freed before the call ends
        del a
    assert row["peak_exact"] and row["extra_mb"] >= 60
    assert row["peak_mb"] == row["rss_mb"] + row["extra_mb"]


@linux
def test_an_earlier_peak_outside_the_calls_is_kept_as_the_process_peak():
    a = np.ones(96 << 17)  # 96 MB before any call
    resident = usage._status_kb("VmRSS") << 10
    del a
    with usage.measured({}):
        pass
    assert usage.process_peak_bytes() >= resident - (4 << 20)  # counters sync in batches


def test_a_call_beside_another_does_not_reset_its_peak():
    outer, inner = {}, {}
    with usage.measured(outer):
        with usage.measured(inner):
            b = np.ones(32 << 17)
            del b
    assert not inner.get("peak_exact", False)
    if outer.get("peak_exact"):
        assert outer["extra_mb"] >= 30


def test_cpu_time_counts_work_and_not_waiting():
    import time
    busy, idle = {}, {}
    with usage.measured(busy):
        np.sort(np.random.default_rng(0).random(4 << 20))
    with usage.measured(idle):
        time.sleep(0.2)
    assert busy["cpu_seconds"] > 0 and idle["seconds"] >= 0.2
    assert idle["cpu_seconds"] < idle["seconds"] / 2
