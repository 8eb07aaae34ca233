"""Fills no step reads left out of a planned run (runner/plan_writes.py, speed.UNREAD_FILLS)
against the plain twin (every fill made) and the plain interpreter: the same bits, errors
and warnings under each policy, whether the tile written in parts is written in full,
dies with parts unwritten, is read where it was not written (the fill is then read: kept),
or takes the slot of a tile that held other values; and the fill steps left out counted."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from nkirun import speed
from nkirun.api import check_program
from nkirun.runner.files import initial_buffers
from nkirun.runner.machine import Machine
from nkirun.runner.plan import _Planner, last_uses
from prog_helpers import NP_TYPES, out, sbuf, tmp, write_program
from test_plan import both_ways

RNG = np.random.default_rng(23)


def _load(dst, src):
    return {"dma_copy": {"dst": dst, "src": src}}


def _copy(dst, src):
    return {"tensor_copy": {"dst": dst, "src": src}}


def _program(tmp_path, dtype, case):
    """`x` (HBM) loaded into tiles of shape (128, 2, 64) in parts; `case` says what reads
    them (docstring of the module)."""
    x = RNG.standard_normal((128, 512)).astype(np.float32)
    tensors = {"x": sbuf(x, dtype, buffer="hbm"), "y": out((128, 512), dtype)}
    for t in ("t0", "t1", "t2"):
        tensors[t] = tmp((128, 2, 64), dtype)
    body = [_load("t0[:, 0, :]", "x[:, 0:64]"), _load("t0[:, 1, :]", "x[:, 64:128]"),
            _copy("y[:, 0:128]", "t0")]  # t0 written in full, then read
    if case == "written in full":
        body += [_load("t1[:, 1, :]", "x[:, 128:192]"), _load("t1[:, 0, :]", "x[:, 192:256]"),
                 _copy("y[:, 128:256]", "t1"), _copy("y[:, 256:512]", "y[:, 0:256]")]
    elif case == "dies in parts":  # (t1 takes t0's slot; only its written half is read)
        body += [_load("t1[:, 1, :]", "x[:, 128:192]"), _copy("y[:, 128:192]", "t1[:, 1, :]"),
                 _load("y[:, 192:512]", "x[:, 192:512]")]
    elif case == "read where unwritten":  # (t1 in t0's old slot: the fill must show)
        body += [_load("t1[:, 1, :]", "x[:, 128:192]"), _copy("y[:, 128:256]", "t1"),
                 _load("y[:, 256:512]", "x[:, 256:512]")]
    elif case == "an output in parts":  # (y written in full, in parts: its fill unread)
        body += [_load("t1[:, 0, :]", "x[:, 128:192]"), _load("t1[:, 1, :]", "x[:, 192:256]"),
                 _copy("y[:, 128:256]", "t1"), _load("t2[:, 0, :]", "x[:, 256:320]"),
                 _copy("y[:, 256:320]", "t2[:, 0, :]"), _load("y[:, 320:512]", "x[:, 320:512]")]
    elif case == "an output left in parts":  # (y's last quarter never written)
        body += [_load("t1[:, 0, :]", "x[:, 128:192]"), _copy("y[:, 128:192]", "t1[:, 0, :]")]
    return check_program(write_program(tmp_path, tensors, body))


CASES = ["written in full", "dies in parts", "read where unwritten", "an output in parts",
         "an output left in parts"]


def _steps(c, policy) -> int:
    kept = {n for n, t in c.program.tensors.items() if t.init is not None or t.output}
    m = Machine(*initial_buffers(replace(c.program, tensors={
        n: t for n, t in c.program.tensors.items() if t.init is not None})))
    return len(_Planner(c.program, c.bound, m, last_uses(c.bound, kept)[0], policy).calls)


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("policy", ["error", "nan", "zero"])
def test_unread_fills_left_out_are_the_plain_twin_and_the_plain_run(tmp_path, monkeypatch,
                                                                    dtype, case, policy):
    c = _program(tmp_path, dtype, case)
    assert c.ok, [d.one_line() for d in c.diagnostics]
    plain, fast = both_ways(c.program, c.bound, policy=policy)
    monkeypatch.setattr(speed, "UNREAD_FILLS", False)
    assert both_ways(c.program, c.bound, policy=policy) == (plain, fast)
    assert fast == plain
    if case == "read where unwritten":
        if policy == "error":
            assert plain[0] == "error"
        else:  # (the fill, not t0's values left in the slot)
            _, shape, data = plain[0]["y"]
            y = np.frombuffer(data, NP_TYPES[dtype]).reshape(shape)[:, 128:192]
            y = y.astype(np.float32)
            assert (np.isnan(y) if policy == "nan" else y == 0).all()
    elif case != "an output left in parts":
        assert plain[0] != "error"


@pytest.mark.parametrize("case, left_out", [
    ("written in full", 3),  # t0, t1 (in t0's slot) and the output y, each in full
    ("dies in parts", 3),  # t1 dies with half of it unwritten, never read there; t0, y
    ("read where unwritten", 1),  # t0 only: the plain copy reading t1 hands t1 and y over
    ("an output in parts", 4),  # t0, t1, t2 (dies in parts) and y
    ("an output left in parts", 2),  # t0, t1; y keeps its fill (handed over at the end)
])
def test_the_fill_steps_left_out(tmp_path, monkeypatch, case, left_out):
    c = _program(tmp_path, "bfloat16", case)
    fast = _steps(c, "nan")
    monkeypatch.setattr(speed, "UNREAD_FILLS", False)
    assert _steps(c, "nan") - fast == left_out
