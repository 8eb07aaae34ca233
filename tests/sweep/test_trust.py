"""The trust summary: the resolution band, the failure census, and the comparison with
hardware timings (pairwise accuracy, Kendall tau, regret)."""
from __future__ import annotations

import pytest

from nkirun.sweep.trust import RESOLUTION, MeasuredError, against_measured, band, \
    failure_census, read_measured


def _row(i, ns, status="ok", codes=(), **params):
    return {"id": i, "status": status, "total_ns": ns, "codes": list(codes),
            "params": params or {"T": i}, "assumed_share": 0.0}


ROWS = [_row(0, 100.0), _row(1, 105.0), _row(2, 150.0), _row(3, 200.0),
        _row(4, None, "invalid", ["E041"]), _row(5, None, "error", ["E602"]),
        _row(6, None, "invalid", ["E041"]), _row(7, None, "timeout")]


def test_the_band_holds_the_variants_within_the_resolution_of_the_best():
    assert RESOLUTION == 0.10
    assert [r["id"] for r in band(ROWS)] == [0, 1]


def test_the_failure_census_counts_codes_and_statuses():
    assert failure_census(ROWS) == [("E041", 2), ("E602", 1), ("timeout", 1)]


def test_a_perfect_ranking_and_a_reversed_one():
    same = against_measured(ROWS, {0: 1.0, 1: 2.0, 2: 3.0, 3: 4.0})
    assert same["pairwise_accuracy"] == 1.0 and same["kendall_tau"] == 1.0
    assert same["regret"] == 0.0 and same["pick"] == 0
    rev = against_measured(ROWS, {0: 4.0, 1: 3.0, 2: 2.0, 3: 1.0})
    assert rev["pairwise_accuracy"] == 0.0 and rev["kendall_tau"] == -1.0
    assert rev["regret"] == 3.0  # nkirun's pick takes 4, the best 1


def test_one_swapped_pair():
    m = against_measured(ROWS, {0: 2.0, 1: 1.0, 2: 3.0, 3: 4.0})
    assert m["pairwise_accuracy"] == pytest.approx(5 / 6)
    assert m["kendall_tau"] == pytest.approx(4 / 6) and m["regret"] == 1.0


def test_measured_by_id_or_by_params(tmp_path):
    by_id = tmp_path / "a.csv"
    by_id.write_text("id,ns\n0,10\n3,40\n")
    assert read_measured(str(by_id), ROWS) == {0: 10.0, 3: 40.0}
    by_params = tmp_path / "b.csv"
    by_params.write_text("T,ns\n1,11\n2,22\n9,99\n")
    assert read_measured(str(by_params), ROWS) == {1: 11.0, 2: 22.0}
    bad = tmp_path / "c.csv"
    bad.write_text("id,time\n0,1\n")
    with pytest.raises(MeasuredError, match="ns"):
        read_measured(str(bad), ROWS)
