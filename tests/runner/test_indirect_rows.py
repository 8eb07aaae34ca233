"""An indirect view's element offsets are computed once per instruction and index values
(runner/indirect_rows.py, speed.INDIRECT_ROWS): the same results, warnings and errors as
computing them at every use (rows_plain), fewer computations, and a fresh answer when
the index changes under the same instruction (a runtime loop's scalar_offset)."""
from __future__ import annotations

import numpy as np
import pytest

import nkirun
from nkirun import speed
from nkirun.diagnostics import NkirunError
from nkirun.runner import cores
from nkirun.views import indirect
from tests.kernel.test_kernel_contract import nkirun_kernel, write

ROUTE = """\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def route(table, rows, dest):
    # each core gathers the rows `rows` names (its half of them) and scatters them to the
    # rows `dest` names in a shared output; a dest row past the end is skipped
    N, F = table.shape
    P = rows.shape[0] // 2
    core = nl.program_id(0)
    out = nl.ndarray((N, F), dtype=table.dtype, buffer=nl.shared_hbm, name="out")
    zero = nl.ndarray((N // 2, F), dtype=table.dtype, buffer=nl.sbuf)
    nisa.memset(dst=zero, value=0.0)
    nisa.dma_copy(dst=out[core * (N // 2):(core + 1) * (N // 2), :], src=zero)
    nisa.core_barrier(data=out, cores=(0, 1))
    ix = nl.ndarray((P, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=ix, src=rows[core * P:(core + 1) * P, :])
    dx = nl.ndarray((P, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=dx, src=dest[core * P:(core + 1) * P, :])
    got = nl.ndarray((P, F), dtype=table.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=got, src=table.ap([[F, P], [1, F]], vector_offset=ix, indirect_dim=0))
    nisa.dma_copy(dst=out.ap([[F, P], [1, F]], vector_offset=dx, indirect_dim=0), src=got,
                  oob_mode=nisa.oob_mode.skip)
    nisa.core_barrier(data=out, cores=(0, 1))
    return out
"""

LOOP = """\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def shift(data, n_input):
    # out[0, i + 1] = data[0, i] for i < n, one element per runtime-loop iteration: the
    # same two indirect views each time, their scalar_offset the loop's register
    out = nl.ndarray((1, 9), dtype=nl.float32, buffer=nl.shared_hbm)
    zeros = nl.ndarray((1, 9), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=zeros, value=0.0)
    nisa.dma_copy(dst=out, src=zeros)
    n = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=n, src=n_input)
    reg = nisa.register_alloc()
    nisa.register_load(reg, n)
    temp = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.sbuf)

    def body(i):
        nisa.dma_copy(dst=temp, src=data.ap([[1, 1], [1, 1]], scalar_offset=i,
                                            indirect_dim=1))
        nisa.dma_copy(dst=out.ap([[1, 1], [1, 1]], offset=1, scalar_offset=i,
                                 indirect_dim=1), src=temp)

    nl.fori_loop(0, reg, body)
    return out
"""

RNG = np.random.default_rng(27)
TABLE = RNG.standard_normal((16, 8)).astype(np.float32)
ROWS = np.array([3, 3, 0, 15, 7, 2, 9, 1], np.int32).reshape(8, 1)


def _route(tmp_path, dest, memo: bool, monkeypatch):
    monkeypatch.setattr(speed, "INDIRECT_ROWS", memo)
    calls = []
    plain = indirect.offsets

    def counted(*args):
        calls.append(1)
        return plain(*args)
    monkeypatch.setattr(indirect, "offsets", counted)
    k = nkirun_kernel(write(tmp_path, ROUTE, f"route_{memo}.py"), "route")
    out = nkirun.simulate(k, lnc=2)(TABLE, ROWS, np.asarray(dest, np.int32).reshape(8, 1))
    return out, len(calls)


def _want(dest):
    want = np.zeros_like(TABLE)
    for r, d in zip(ROWS[:, 0], dest):
        if 0 <= d < 16:
            want[d] = TABLE[r]
    return want


def test_the_memo_gives_the_plain_results_with_fewer_computations(tmp_path, monkeypatch):
    dest = [4, 5, 6, 99, 8, 10, 11, 12]  # 99: out of bounds, skipped
    fast, n_fast = _route(tmp_path, dest, True, monkeypatch)
    plain, n_plain = _route(tmp_path, dest, False, monkeypatch)
    np.testing.assert_array_equal(fast, _want(dest))
    np.testing.assert_array_equal(plain, fast)
    # per core: the gather and the scatter, once each (the race tracking, the reads'
    # checks, the gather and scatter themselves, the oob mask and the written marks
    # ask for them again)
    assert n_fast == 4 and n_plain > 2 * n_fast


def test_the_memo_keeps_the_run_time_race_and_the_out_of_bounds_error(tmp_path, monkeypatch):
    """Both cores scatter to row 5: W631 either way; an index past the end under
    oob_mode=error (the gather) stops the run with E093 either way."""
    dest = [4, 5, 6, 7, 5, 10, 11, 12]
    plain = cores._race
    for memo in (True, False):
        monkeypatch.setattr(speed, "INDIRECT_ROWS", memo)
        races = []
        monkeypatch.setattr(cores, "_race", lambda *a: races.append(plain(*a)) or races[-1])
        k = nkirun_kernel(write(tmp_path, ROUTE, f"race_{memo}.py"), "route")
        nkirun.simulate(k, lnc=2)(TABLE, ROWS, np.asarray(dest, np.int32).reshape(8, 1))
        assert [r.code for r in races] == ["W631"], memo
        assert "writes elements that core 1 writes" in races[0].message
        bad = ROWS.copy()
        bad[6] = 40
        with pytest.raises(NkirunError, match="E093"):
            nkirun.simulate(k, lnc=2)(TABLE, bad, np.asarray(dest, np.int32).reshape(8, 1))


def test_a_runtime_loop_sees_each_iterations_index(tmp_path, monkeypatch):
    monkeypatch.setattr(speed, "INDIRECT_ROWS", True)
    k = nkirun_kernel(write(tmp_path, LOOP, "shift.py"), "shift")
    data = np.arange(1, 10, dtype=np.float32).reshape(1, 9)
    got = nkirun.simulate(k)(data, np.array([[5]], np.int32))
    np.testing.assert_array_equal(got, [[0, 1, 2, 3, 4, 5, 0, 0, 0]])
