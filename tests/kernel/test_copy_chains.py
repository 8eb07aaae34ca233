"""`nl.broadcast_to`'s copy chain recorded from a plan (speed.COPY_CHAINS,
source/kernel/copy_chains.py) traces the very program its plain definition
(convenience.broadcast_to's loop of `dma_copy`s) does: every instruction with its
arguments, index, locations and core, the tensors, the diagnostics and the run's results;
across a whole tile, a view, a row count that is no power of two, the view method, a
pending result flushed first, a masked write before (the plain path narrows), a form
table that is full and a budget that runs out inside a chain."""
from __future__ import annotations

import numpy as np
import pytest

import nkirun
from nkirun import speed
from nkirun.api_kernel import check_traced, run_traced, trace_call
from nkirun.diagnostics import NkirunError
from nkirun.source.kernel import call_forms, copy_chains, legacy
from repo_paths import load_module
from trace_facts import assert_same_outcome, diagnostic_facts, instruction_facts

KERNEL = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def broadcasts(b, n):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((128, 64), dtype=nl.float32)
    rows = nl.ndarray((4, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=rows, src=b[0:4, 0:64])
    for i in range(n):
        r = nl.ndarray((1, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=r, src=b[i % 4:i % 4 + 1, 0:64])
        whole = nl.broadcast_to(r, (128, 64))
        part = nl.broadcast_to(rows[i % 2:i % 2 + 1, :], (96, 64))
        two = r.broadcast_to((2, 64))
        cast = nl.broadcast_to(nl.load(b[i % 4:i % 4 + 1, 0:64]), (128, 64),
                               dtype=nl.bfloat16)
        nisa.tensor_tensor(dst=acc, data1=acc, data2=whole, op=nl.add)
        nisa.tensor_tensor(dst=acc[0:96, :], data1=acc[0:96, :], data2=part, op=nl.add)
        nisa.tensor_tensor(dst=acc[0:2, :], data1=acc[0:2, :], data2=two, op=nl.subtract)
        nisa.tensor_tensor(dst=acc, data1=acc, data2=cast, op=nl.add)
    ip = nl.arange(4)[:, None]
    jf = nl.arange(64)[None, :]
    m = nl.load(b[ip, jf], mask=(ip < 3))  # three rows written: a masked write's rows kept
    for i in range(2):
        late = nl.broadcast_to(m[i:i + 1, :], (128, 64))
        nisa.tensor_tensor(dst=acc, data1=acc, data2=late, op=nl.add)
    nisa.dma_copy(dst=out, src=acc)
    return out
'''


@pytest.fixture
def kernel(tmp_path):
    (tmp_path / "copy_chains_kernel.py").write_text(KERNEL)
    return load_module(tmp_path / "copy_chains_kernel.py", "copy_chains_kernel").broadcasts


B = np.arange(4 * 64, dtype=np.float32).reshape(4, 64) / 64




def _traced(kernel, monkeypatch, on: bool, n: int = 6):
    monkeypatch.setattr(speed, "COPY_CHAINS", on)
    traced = trace_call(kernel, (B, n))
    bound, diags = check_traced(traced)
    results = [a.tobytes() for a in run_traced(traced, bound)]
    return traced, diags, results


@pytest.fixture
def stepped(monkeypatch):
    """The ops of the plain path's steps (convenience._emit's legacy.record_now; the
    kernel's line is found before it is called)."""
    calls = []
    plain = legacy.record_now

    def counted(op, *args):
        calls.append(op)
        return plain(op, *args)
    monkeypatch.setattr(legacy, "record_now", counted)
    return calls


def test_chains_from_plans_trace_the_plain_program(kernel, monkeypatch, stepped):
    fast, fast_diags, fast_results = _traced(kernel, monkeypatch, True)
    from_plans = len(stepped)
    plain, plain_diags, plain_results = _traced(kernel, monkeypatch, False)
    # the plain path: six trips of four chains (8 + 8 + 2 + 8 steps), two after the mask
    assert len(stepped) - from_plans == 6 * 26 + 2 * 8
    # from plans: each site's calls after its first (`part`'s two views: after the second)
    # but those after the masked load (the plain path narrows)
    assert from_plans == 26 + 8 + 2 * 8
    assert_same_outcome((fast, fast_diags, fast_results), (plain, plain_diags, plain_results))
    chain = [i for i in fast.program.instructions if i.op == "dma_copy"]
    assert len(chain) > 6 * (8 + 7 + 1 + 8)  # (the chains are there)


@pytest.mark.parametrize("forms_max", [3, 12])
def test_a_full_form_table(kernel, monkeypatch, stepped, forms_max):
    monkeypatch.setattr(call_forms, "FORMS_MAX", forms_max)
    fast, _, fast_results = _traced(kernel, monkeypatch, True)
    from_plans = len(stepped)
    plain, _, plain_results = _traced(kernel, monkeypatch, False)
    assert instruction_facts(fast.program) == instruction_facts(plain.program)
    assert fast_results == plain_results
    if forms_max == 3:  # no chain's forms kept: no plan, every step by the plain path
        assert len(stepped) == 2 * from_plans
    else:  # the first chain's forms kept, the others' not: its plan only
        assert len(stepped) - from_plans == 6 * 26 + 2 * 8 > from_plans + 8 * 4


@pytest.mark.parametrize("limit", [40, 47, 53, 61, 90, 91, 100])
def test_a_budget_that_runs_out_inside_a_chain(kernel, monkeypatch, limit):
    def trace(on: bool):
        monkeypatch.setattr(speed, "COPY_CHAINS", on)
        try:
            return instruction_facts(nkirun.trace(kernel, B, 6, max_instructions=limit))
        except NkirunError as e:
            return diagnostic_facts(e.diagnostics)
    got = trace(True)
    assert got == trace(False)
    assert got[0][1] == "E609"


@pytest.mark.parametrize("rows", [2, 3, 5, 64, 96, 127, 128])
def test_steps_are_the_plain_loop(rows):
    plain, filled = [], 1
    while filled < rows:
        n = min(filled, rows - filled)
        plain.append((filled, filled + n, n))
        filled += n
    assert copy_chains.steps(rows) == plain
