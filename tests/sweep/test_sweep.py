"""Whole sweeps through the API and the command: rows, duplicates, ranking, the same rows
for every --jobs, resume, faults, exit statuses."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

import nkirun
from nkirun.sweep.results import read_rows
from tests.sweep.sweep_helpers import copy_kernel, faulty, strip_timing

X = nkirun.shape("float32", 128, 512)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _sweep(tmp_path, name="out", **kw):
    k = copy_kernel(tmp_path)
    kw.setdefault("vary", {"TILE": [128, 256, 384, 512], "UNUSED": [0, 1]})
    return nkirun.sweep(f"{k}::copy", X, out=str(tmp_path / name), **kw)


def test_rows_statuses_duplicates_and_best(tmp_path):
    rows = _sweep(tmp_path, jobs=1, reference=None)
    assert [r["id"] for r in rows] == list(range(8))
    by = {(r["params"]["TILE"], r["params"]["UNUSED"]): r for r in rows}
    assert by[(384, 0)]["status"] == by[(384, 1)]["status"] == "error"
    for tile in (128, 256, 512):  # UNUSED changes nothing: the second is a duplicate
        first, second = by[(tile, 0)], by[(tile, 1)]
        assert first["status"] == "ok" and second["status"] == "duplicate"
        assert second["duplicate_of"] == first["id"]
        assert second["total_ns"] == first["total_ns"]
    best = rows.best(2)
    assert [r["status"] for r in best] == ["ok", "ok"]
    assert best[0]["total_ns"] <= best[1]["total_ns"]
    lines = (tmp_path / "out" / "summary.csv").read_text().splitlines()
    assert lines[0].startswith("rank,id,kernel,TILE,UNUSED,status,total_ns")
    assert [ln.split(",")[0] for ln in lines[1:4]] == ["1", "2", "3"] and len(lines) == 9


def test_the_same_rows_for_every_jobs(tmp_path):
    one = _sweep(tmp_path, "one", jobs=1, reference=f"{tmp_path}/copy_kernel.py::reference")
    two = _sweep(tmp_path, "two", jobs=2, reference=f"{tmp_path}/copy_kernel.py::reference")
    assert strip_timing(one) == strip_timing(two)
    assert sum(r["verify"] is not None for r in one) == 3  # the 3 ok ones (top:5)
    a = [json.loads(x) for x in (tmp_path / "one" / "results.jsonl").read_text().splitlines()]
    b = [json.loads(x) for x in (tmp_path / "two" / "results.jsonl").read_text().splitlines()]
    assert sorted(map(repr, strip_timing(a))) == sorted(map(repr, strip_timing(b)))


def test_mismatch_against_a_wrong_reference(tmp_path):
    rows = _sweep(tmp_path, jobs=1, verify="all", vary={"TILE": [128, 256]},
                  reference=f"{tmp_path}/copy_kernel.py::wrong")
    assert [r["status"] for r in rows] == ["mismatch", "mismatch"]
    assert rows.best(1) == []


FAULTS = {"loops": "timeout", "allocates": "crashed", "exits": "crashed",
          "syntax": "error", "imports": "error", "fine": "ok"}


def test_faults_end_with_their_status_and_the_sweep_goes_on(tmp_path):
    files = faulty(tmp_path)
    rows = nkirun.sweep(f"{tmp_path}/cands/*.py::cand", X, vary={"TILE": [128]}, jobs=2,
                        timeout=5, out=str(tmp_path / "out"))
    got = {os.path.basename(r["kernel"].split("::")[0])[:-3]: r for r in rows}
    assert {k: r["status"] for k, r in got.items()} == FAULTS
    assert "SyntaxError" in got["syntax"]["message"]
    assert "not_a_module_nkirun_sweep" in got["imports"]["message"]
    assert "exited with status 7" in got["exits"]["message"]
    assert "memory" in got["allocates"]["message"]
    assert "5 s deadline" in got["loops"]["message"]
    assert len(files) == len(rows)


@pytest.mark.timing
def test_faults_end_within_the_deadline_plus_two_seconds(tmp_path):
    faulty(tmp_path)
    rows = nkirun.sweep(f"{tmp_path}/cands/*.py::cand", X, vary={"TILE": [128]}, jobs=1,
                        timeout=3, out=str(tmp_path / "out"))
    assert all(r["seconds"] <= 3 + 2 for r in rows), [(r["kernel"], r["seconds"]) for r in rows]


def _cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "nkirun", "sweep", *args],
                          capture_output=True, text=True, cwd=kw.get("cwd"),
                          env={**os.environ, "PYTHONPATH": ROOT})


def _args(tmp_path, out, sleep="0.0"):
    k = copy_kernel(tmp_path)
    return [f"{k}::copy", "--shape", "x=float32[128,512]", "--vary", "TILE=128,256,384,512",
            "--vary", "UNUSED=0:2", "--arg", f"SLEEP={sleep}", "--out", str(tmp_path / out),
            "--verify", "none"]


def test_cli_exit_statuses_and_formats(tmp_path):
    ok = _cli(*_args(tmp_path, "a"), "--format", "csv", "--jobs", "1")
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.splitlines()[0].startswith("rank,id,kernel,TILE,UNUSED")
    again = _cli(*_args(tmp_path, "a"))
    assert again.returncode == 2 and "--resume" in again.stderr
    other = _cli(*_args(tmp_path, "a", sleep="0.001"), "--resume")
    assert other.returncode == 2 and "arguments differ" in other.stderr
    none_ok = _cli(*_args(tmp_path, "b")[:-4], "--where", "TILE == 384", "--out",
                   str(tmp_path / "b"), "--format", "json")
    assert none_ok.returncode == 1, none_ok.stderr
    data = json.loads(none_ok.stdout)
    assert data["counts"] == {"error": 3} and data["failures"] == [["E602", 3]]
    bad = _cli(*_args(tmp_path, "c"), "--where", "open('x')")
    assert bad.returncode == 2 and "not allowed" in bad.stderr
    bad = _cli(*_args(tmp_path, "d"), "--backend", "spark")
    assert bad.returncode == 2 and "local, ray" in bad.stderr


def test_resume_after_sigkill_reproduces_the_summary(tmp_path):
    whole = _cli(*_args(tmp_path, "whole"), "--jobs", "2")
    assert whole.returncode == 0, whole.stderr
    args = _args(tmp_path, "cut", sleep="0.3")
    proc = subprocess.Popen([sys.executable, "-m", "nkirun", "sweep", *args, "--jobs", "2"],
                            env={**os.environ, "PYTHONPATH": ROOT}, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    results = tmp_path / "cut" / "results.jsonl"
    for _ in range(600):  # (bounded: at most 60 s)
        if results.exists() and len(results.read_text().splitlines()) >= 3:
            break
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done = len(read_rows(str(tmp_path / "cut")))
    assert 3 <= done < 12
    resumed = _cli(*args, "--jobs", "1", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    cut = (tmp_path / "cut" / "summary.csv").read_text()
    assert cut == (tmp_path / "whole" / "summary.csv").read_text()


def test_a_worker_dead_before_its_next_variant_is_sent(tmp_path, monkeypatch):
    """The pool sends each worker its next variant ahead; a worker that died (os._exit)
    before that send refuses it (a broken pipe): the variant goes back in line."""
    from nkirun.sweep import pool
    sent = pool._Worker.__init__

    def dies_at_once(self, ctx, cap):
        sent(self, ctx, cap)
        self.conn.send(("setup", None))  # (the worker's loop ends on a bad message)
        self.conn.send(("variant", (None, [])))
        self.proc.join(10)
    monkeypatch.setattr(pool._Worker, "__init__", dies_at_once)
    k = copy_kernel(tmp_path)
    rows = nkirun.sweep(f"{k}::copy", X, vary={"TILE": [128, 256]}, jobs=1, timeout=20,
                        out=str(tmp_path / "out"))
    assert [r["status"] for r in rows] == ["crashed", "crashed"]
