"""Matmul operands widened once per write in a planned run (runner/plan_widen.py,
speed.WIDEN_ONCE) against the plain twin (each call widens its operands) and the plain
interpreter: the same bits and errors, whatever writes a tile between two matmuls that
read it (a DMA into part of it, a planned copy, an instruction the plan leaves to the
plain path, another tensor taking the tile's slot), and fewer widenings than reads."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from nkirun import speed
from nkirun.api import check_program
from nkirun.runner.files import initial_buffers
from nkirun.runner.machine import Machine
from nkirun.runner.plan import _Planner, last_uses
from nkirun.runner.plan_widen import _widen_all
from prog_helpers import out, sbuf, tmp, write_program
from test_plan import both_ways

RNG = np.random.default_rng(17)


def _mm(dst, st, mv, acc=None):
    mm = {"dst": dst, "stationary": st, "moving": mv}
    if acc is not None:
        mm["accumulate"] = acc
    return {"nc_matmul": mm}


def _program(tmp_path, dtype, between, inside=False):
    """Two K tiles of a bfloat16 (or `dtype`) stationary `a` and moving `b`, loaded whole,
    each read by matmuls of two output blocks; `between` (instructions) runs after the
    first block (inside: after the second block's first matmul, when the copies of a's
    views that block widened together are current), so later reads see what it wrote."""
    lhs = RNG.standard_normal((256, 128)).astype(np.float32)
    rhs = RNG.standard_normal((256, 1024)).astype(np.float32)
    tensors = {"lhs": sbuf(lhs, dtype, buffer="hbm"), "rhs": sbuf(rhs, dtype, buffer="hbm"),
               "a": tmp((128, 2, 128), dtype), "b": tmp((128, 2, 1024), dtype),
               "y": out((128, 1024), "float32"), "scale": sbuf(np.full((128, 1), 0.5),
                                                            "float32")}
    body = [{"dma_copy": {"dst": f"a[:, {k}, :]", "src": f"lhs[{128 * k}:{128 * k + 128}, :]"}}
            for k in range(2)]
    body += [{"dma_copy": {"dst": f"b[:, {k}, :]", "src": f"rhs[{128 * k}:{128 * k + 128}, :]"}}
             for k in range(2)]
    for j in range(2):
        tensors[f"acc{j}"] = tmp((128, 512), "float32", "psum")
        cols = f"{512 * j}:{512 * j + 512}"
        for rep in range(2):  # (the same views read again: the copies serve)
            for k in range(2):
                body.append(_mm(f"acc{j}", f"a[:, {k}, :]", f"b[:, {k}, {cols}]",
                                bool(k or rep)))
                if (j, rep, k) == ((1, 0, 0) if inside else (0, 1, 1)):
                    body += between
        body.append({"tensor_copy": {"dst": f"y[:, {cols}]", "src": f"acc{j}"}})
    return check_program(write_program(tmp_path, tensors, body))


BETWEEN = {
    "nothing": [],
    "a DMA into part of a tile": [
        {"dma_copy": {"dst": "a[0:64, 1, :]", "src": "lhs[0:64, :]"}},
        {"dma_copy": {"dst": "b[:, 0, 512:768]", "src": "rhs[0:128, 0:256]"}}],
    "a planned copy over a tile": [{"tensor_copy": {"dst": "a[:, 1, :]", "src": "a[:, 0, :]"}}],
    "a plain instruction writing a tile": [
        {"tensor_scalar": {"dst": "a[:, 0, :]", "data": "a[:, 1, :]", "op0": "multiply",
                           "operand0": "scale"}}],
    "a memset of a tile": [{"memset": {"dst": "a", "value": 0.25}}],
}


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float8_e4m3", "float32"])
@pytest.mark.parametrize("between", list(BETWEEN), ids=list(BETWEEN))
@pytest.mark.parametrize("inside", [False, True], ids=["between blocks", "inside a block"])
def test_widened_once_is_the_plain_twin_and_the_plain_run(tmp_path, monkeypatch, dtype,
                                                          between, inside):
    c = _program(tmp_path, dtype, BETWEEN[between], inside)
    assert c.ok, [d.one_line() for d in c.diagnostics]
    plain, once = both_ways(c.program, c.bound)
    monkeypatch.setattr(speed, "WIDEN_ONCE", False)
    assert both_ways(c.program, c.bound)[1] == once
    assert once == plain and plain[0] != "error"
    monkeypatch.setattr(speed, "BF16_SHIFT", False)  # (hw/dtypes.py widen_into's twin)
    assert both_ways(c.program, c.bound) == (plain, once)


def _widenings(c) -> tuple[int, int, int]:
    """(widening steps of the plan, views they widen, matmuls) of checked program c."""
    kept = {n for n, t in c.program.tensors.items() if t.init is not None or t.output}
    m = Machine(*initial_buffers(replace(c.program, tensors={
        n: t for n, t in c.program.tensors.items() if t.init is not None})))
    p = _Planner(c.program, c.bound, m, last_uses(c.bound, kept)[0], "error")
    steps = [call.args[0] for call in p.calls if getattr(call, "func", None) is _widen_all]
    return len(steps), sum(map(len, steps)), sum(1 for b in c.bound if b.op == "nc_matmul")


def test_operands_are_widened_again_only_after_a_write(tmp_path, monkeypatch):
    monkeypatch.setattr(speed, "WIDEN_FROM_SOURCE", False)  # (its counts: test_plan_source)
    # 8 matmuls read 6 distinct views (a[:, 0], a[:, 1], b[:, k, cols]): 6 widenings
    assert _widenings(_program(tmp_path, "bfloat16", BETWEEN["nothing"])) == (6, 6, 8)
    # the DMA between the blocks rewrites a: its two views are widened again, in one step
    # at the first read (they were current before the write); b's second-block views are
    # new anyway
    dma = BETWEEN["a DMA into part of a tile"]
    assert _widenings(_program(tmp_path, "bfloat16", dma)) == (7, 8, 8)
    # inside the second block, after its first matmul: a[:, 1] and the block's other
    # b view are read next (a's two views in one step, as above; b[:, 1, 512:] is new);
    # the block's second pass then finds b[:, 0, 512:] stale, and b's three views read
    # before the write come with it (two of the first block's, never read again: what
    # the guess costs when the loop does not repeat)
    assert _widenings(_program(tmp_path, "bfloat16", dma, inside=True)) == (8, 11, 8)
    monkeypatch.setattr(speed, "WIDEN_ONCE", False)  # (the calls widen: no steps)
    assert _widenings(_program(tmp_path, "bfloat16", BETWEEN["nothing"])) == (0, 0, 8)


def test_a_tile_slot_taken_by_another_tensor_is_widened_again(tmp_path, monkeypatch):
    """Tiles `t0`, `t1` of one shape and dtype, one after the other: t1 takes t0's array
    and the matmul view of the same layout must not read t0's copy."""
    x = RNG.standard_normal((256, 128)).astype(np.float32)
    rhs = RNG.standard_normal((128, 512)).astype(np.float32)
    tensors = {"x": sbuf(x, "bfloat16", buffer="hbm"), "r": sbuf(rhs, "bfloat16"),
               "t0": tmp((128, 128), "bfloat16"), "t1": tmp((128, 128), "bfloat16"),
               "acc": tmp((128, 512), "float32", "psum"), "y": out((128, 1024), "float32")}
    body = []
    for i in range(2):
        body += [{"dma_copy": {"dst": f"t{i}", "src": f"x[{128 * i}:{128 * i + 128}]"}},
                 _mm("acc", f"t{i}", "r", False), _mm("acc", f"t{i}", "r", True),
                 {"tensor_copy": {"dst": f"y[:, {512 * i}:{512 * i + 512}]", "src": "acc"}}]
    c = check_program(write_program(tmp_path, tensors, body))
    assert c.ok, [d.one_line() for d in c.diagnostics]
    plain, once = both_ways(c.program, c.bound)
    assert once == plain and plain[0] != "error"
    monkeypatch.setattr(speed, "WIDEN_FROM_SOURCE", False)  # (widened from the tiles)
    assert _widenings(c) == (3, 3, 4)  # r once, t0 once, t1 (in t0's array) once
