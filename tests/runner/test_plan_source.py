"""Matmul operands widened from the source of the bit copy that loaded their tile, and the
copies nothing else reads left out (runner/plan_source.py, speed.WIDEN_FROM_SOURCE), against
the plain twin (each view widened from its tile, every copy made) and the plain interpreter:
the same bits and errors when the source is written between the load and the read, when a
tile is also read as it is, when a tile is loaded in parts and a view spans two loads, when
a tile is copied on into another tile, when a tile's slot is taken by another tensor; the
view of the source `_sub_source` gives, over random layouts; and the counts of widenings
and copies left out on a loop that loads each HBM region several times."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from nkirun import speed
from nkirun.api import check_program
from nkirun.runner.files import initial_buffers
from nkirun.runner.machine import Machine
from nkirun.runner.plan import _Planner, last_uses
from nkirun.runner import plan_source
from nkirun.runner.plan_source import _sub_source
from nkirun.runner.plan_widen import _widen_all
from nkirun.runner.interpret import execute, outputs
from nkirun.runner.plan import execute_planned
from prog_helpers import out, sbuf, tmp, write_program
from test_plan import _outcome

RNG = np.random.default_rng(29)


def both_ways(program, bound, policy="error"):
    """test_plan.both_ways with the sources followed (execute_planned does so by default only
    for a plan simulate() keeps)."""
    def plain():
        m = execute(program, bound, uninitialized=policy, plan=False)
        return outputs(program, m), m.warnings

    def planned():
        m = execute_planned(program, bound, None, policy, follow=True)
        return outputs(program, m), m.warnings
    return _outcome(plain), _outcome(planned)


def _mm(dst, st, mv, acc):
    return {"nc_matmul": {"dst": dst, "stationary": st, "moving": mv, "accumulate": acc}}


def _load(dst, src):
    return {"dma_copy": {"dst": dst, "src": src}}


def _program(tmp_path, dtype, case):
    """K = 256 in two tiles of a (128, 2, 128) stationary tile `a` loaded from HBM `lhs`
    and a (128, 2, 512) moving tile `b` from `rhs`, two matmul chains reading them, and
    `case` (the module's docstring) around them."""
    lhs = RNG.standard_normal((256, 128)).astype(np.float32)
    rhs = RNG.standard_normal((256, 1024)).astype(np.float32)
    tensors = {"lhs": sbuf(lhs, dtype, buffer="hbm"), "rhs": sbuf(rhs, dtype, buffer="hbm"),
               "a": tmp((128, 2, 128), dtype), "b": tmp((128, 2, 512), dtype),
               "c": tmp((128, 2, 128), dtype), "y": out((128, 1024), "float32"),
               "z": out((128, 128), dtype)}
    loads = [_load("a[:, 0, :]", "lhs[0:128, :]"), _load("a[:, 1, :]", "lhs[128:256, :]")]
    if case == "a view spans two loads":
        loads = [_load("a[0:64, :, :]", "lhs.ap([[128, 64], [16384, 2], [1, 128]])"),
                 _load("a[64:128, :, :]", "lhs.ap([[128, 64], [16384, 2], [1, 128]], offset=8192)")]
    body = list(loads)
    for j in range(2):
        tensors[f"acc{j}"] = tmp((128, 512), "float32", "psum")
        cols = f"{512 * j}:{512 * j + 512}"
        body += [_load("b[:, 0, :]", f"rhs[0:128, {cols}]"),
                 _load("b[:, 1, :]", f"rhs[128:256, {cols}]")]
        st = "c" if case == "copied on" else "a"
        if case == "copied on" and j == 0:
            body += [{"tensor_copy": {"dst": "c", "src": "a"}}]
        for k in range(2):
            body.append(_mm(f"acc{j}", f"{st}[:, {k}, :]", f"b[:, {k}, :]", bool(k)))
        if case == "the source written" and j == 0:  # (lhs rewritten; a keeps its values)
            body += [_load("lhs[0:128, :]", "rhs[128:256, 0:128]")]
        body.append({"tensor_copy": {"dst": f"y[:, {cols}]", "src": f"acc{j}"}})
        if case == "the source written" and j == 0:  # (a loaded again from the new lhs)
            body += [_load("a[:, 0, :]", "lhs[0:128, :]")]
    body.append(_load("z", "a[:, 1, :]") if case == "read as it is" else
                _load("z", "lhs[128:256, :]"))
    return check_program(write_program(tmp_path, tensors, body))


CASES = ["plain", "the source written", "read as it is", "a view spans two loads",
         "copied on"]


def _plan(c):
    kept = {n for n, t in c.program.tensors.items() if t.init is not None or t.output}
    m = Machine(*initial_buffers(replace(c.program, tensors={
        n: t for n, t in c.program.tensors.items() if t.init is not None})))
    return _Planner(c.program, c.bound, m, last_uses(c.bound, kept)[0], "error")


def _counts(c) -> tuple[int, int]:
    """(views the plan's steps widen, copies it makes) of checked program c."""
    p = _plan(c)
    widened = sum(len(call.args[0]) for call in p.calls
                  if getattr(call, "func", None) is _widen_all)
    return widened, sum(1 for b, call in zip(p.bs, p.calls)
                        if b.op == "dma_copy" and getattr(call, "func", None) is np.copyto)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float8_e4m3", "float32"])
@pytest.mark.parametrize("case", CASES)
def test_widened_from_the_source_is_the_plain_twin_and_the_plain_run(tmp_path, monkeypatch,
                                                                     dtype, case):
    c = _program(tmp_path, dtype, case)
    assert c.ok, [d.one_line() for d in c.diagnostics]
    plain, fast = both_ways(c.program, c.bound)
    assert fast == plain and plain[0] != "error"
    monkeypatch.setattr(speed, "WIDEN_FROM_SOURCE", False)
    assert both_ways(c.program, c.bound) == (plain, fast)


@pytest.mark.parametrize("case, fast, twin", [
    # a's two views from lhs, b's four from rhs: the six loads into a and b left out
    # (the store to z is the copy left)
    ("plain", (6, 1), (6, 7)),
    # lhs written after the first chain: what a holds is no longer lhs's, so a's views
    # are widened from a from there on (its three loads stay) and the two copies of lhs's
    # views read before the write are widened again in one step at the next read
    ("the source written", (9, 5), (8, 9)),
    # a is also read as it is (stored to z): its two loads stay
    ("read as it is", (6, 3), (6, 7)),
    # a's views span a's two loads (halves of the partitions): widened from a itself
    ("a view spans two loads", (6, 3), (6, 7)),
    # c copied from a: c's views widened from a's (whose loads then stay)
    ("copied on", (6, 3), (6, 7)),
])
def test_the_widenings_and_the_copies_left(tmp_path, monkeypatch, case, fast, twin):
    c = _program(tmp_path, "bfloat16", case)
    assert _counts(c) == fast
    monkeypatch.setattr(speed, "WIDEN_FROM_SOURCE", False)
    assert _counts(c) == twin


def test_each_hbm_region_is_widened_once_however_often_it_is_loaded(tmp_path, monkeypatch):
    """The tutorial's v1 loop: for each of 2 x 2 output tiles, 2 K tiles of lhs and rhs
    loaded into tiles of their own (2 x 2 x 2 loads of each, 8 + 8)."""
    lhs = RNG.standard_normal((256, 256)).astype(np.float32)
    rhs = RNG.standard_normal((256, 1024)).astype(np.float32)
    tensors = {"lhs": sbuf(lhs, "bfloat16", buffer="hbm"),
               "rhs": sbuf(rhs, "bfloat16", buffer="hbm"), "y": out((128, 2048), "float32")}
    body, i = [], 0
    for m in range(2):
        for n in range(2):
            tensors[f"acc{m}{n}"] = tmp((128, 512), "float32", "psum")
            for k in range(2):
                tensors[f"s{i}"], tensors[f"v{i}"] = tmp((128, 128), "bfloat16"), \
                    tmp((128, 512), "bfloat16")
                rows = f"{128 * k}:{128 * k + 128}"
                body += [_load(f"s{i}", f"lhs[{rows}, {128 * m}:{128 * m + 128}]"),
                         _load(f"v{i}", f"rhs[{rows}, {512 * n}:{512 * n + 512}]"),
                         _mm(f"acc{m}{n}", f"s{i}", f"v{i}", bool(k))]
                i += 1
            cols = f"{1024 * m + 512 * n}:{1024 * m + 512 * n + 512}"
            body.append({"tensor_copy": {"dst": f"y[:, {cols}]", "src": f"acc{m}{n}"}})
    c = check_program(write_program(tmp_path, tensors, body))
    assert c.ok, [d.one_line() for d in c.diagnostics]
    plain, fast = both_ways(c.program, c.bound)
    assert fast == plain and plain[0] != "error"
    assert _counts(c) == (4 + 4, 0)  # 2 x 2 regions of lhs, 2 x 2 of rhs; no load left
    # bounded: room for the copies of lhs's four regions (64 KB each) and one of rhs's
    # (256 KB): the other rhs views are widened from their tiles, whose loads stay
    monkeypatch.setattr(plan_source, "SOURCE_COPY_BYTES", 4 * 65536 + 262144)
    assert _counts(c) == (4 + 1 + 6, 6)
    assert both_ways(c.program, c.bound) == (plain, fast)
    monkeypatch.setattr(speed, "WIDEN_FROM_SOURCE", False)
    assert _counts(c) == (16, 16)
    assert both_ways(c.program, c.bound) == (plain, fast)


def _strided(base: np.ndarray, rng) -> np.ndarray:
    """A random box of `base` with random positive steps (a view)."""
    index = []
    for n in base.shape:
        start = int(rng.integers(0, n))
        step = int(rng.integers(1, 3))
        stop = int(rng.integers(start + 1, n + 1))
        index.append(slice(start, stop, step))
    return base[tuple(index)]


@pytest.mark.parametrize("seed", range(40))
def test_the_source_view_holds_what_the_view_of_the_destination_holds(seed):
    rng = np.random.default_rng(seed)
    arr = np.zeros((6, 5, 8), np.uint16)
    d = _strided(arr, rng)
    src = rng.integers(0, 1 << 16, size=(9,) + d.shape, dtype=np.uint16)[int(rng.integers(9))]
    if rng.integers(2):  # (a source of other strides: a transposed copy's view)
        src = np.ascontiguousarray(src.T).T
    np.copyto(d, src)
    found = 0
    for _ in range(20):  # views of the array: inside d or not
        v = _strided(arr, rng)
        if rng.integers(2) and v.ndim > 1:
            v = v.reshape(-1) if v.flags.c_contiguous else v[..., 0]
        got = _sub_source(v, d, src)
        if got is not None:  # (only a view all of whose elements d holds)
            assert np.isin(_offsets(v, arr), _offsets(d, arr)).all()
            assert got.shape == v.shape and got.tobytes() == v.tobytes()
            found += 1
    for _ in range(20):  # views of d: always found
        v = _strided(d, rng)
        got = _sub_source(v, d, src)
        assert got is not None and got.shape == v.shape and got.tobytes() == v.tobytes()


def _offsets(v, arr):
    """The byte offsets in arr of view v's elements."""
    start = v.__array_interface__["data"][0] - arr.__array_interface__["data"][0]
    idx = np.indices(v.shape).reshape(v.ndim, -1)
    return start + (np.array(v.strides)[:, None] * idx).sum(0)
