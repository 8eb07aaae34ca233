"""The scheduler's per-form costing (`_Scheduler.costed_by_form`: cycles, DMA plan and boxes
from the first instruction of an operand form, names from each instruction) schedules
exactly like costing every instruction on its own (`new_costed`)."""
from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest

from nkirun.checker.bind import bind
from nkirun.schedule import scheduler
from nkirun.schedule.cores import schedule
from nkirun.api_kernel import check_traced, trace_call

ROOT = pathlib.Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("_examples_for_cost_forms",
                                              ROOT / "tests" / "kernel" / "test_examples.py")
EXAMPLES = importlib.util.module_from_spec(spec)
spec.loader.exec_module(EXAMPLES)

LOOP = '''
import nki.isa as nisa
import nki.language as nl

def loop(x, reps):
    acc = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.memset(dst=acc, value=0.0)
    for i in range(reps):
        t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        u = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[:, (i % 4) * 64:(i % 4 + 1) * 64])
        nisa.tensor_tensor(dst=u, data1=t, data2=t, op=nl.multiply)  # same tensor twice
        nisa.tensor_tensor(dst=u, data1=t, data2=t, op=nl.multiply)  # a recomputation
        nisa.tensor_tensor(dst=acc, data1=acc, data2=u, op=nl.add)
    nisa.dma_copy(dst=out, src=acc)
    return out
'''


def _slots(program, bound, monkeypatch, by_form: bool):
    from nkirun import speed
    with monkeypatch.context() as m:
        m.setattr(speed, "FORM_PLANS", False)  # place_plain (plans: test_form_plans.py)
        if not by_form:
            m.setattr(scheduler._Scheduler, "costed_by_form",
                      lambda self, b, form, engine: self.new_costed(b))
        s = schedule(program, bound)
    return [tuple(getattr(x, f) for f in x.__dataclass_fields__) if hasattr(
        x, "__dataclass_fields__") else repr(x) for x in s.slots], s.total_ns


def _traced_cases(tmp_path):
    for name, (arrays, args, _, _) in sorted(EXAMPLES.CASES.items()):
        yield name, trace_call(EXAMPLES.kernel_function(name), (), {**arrays, **args})
    (tmp_path / "cost_forms_loop.py").write_text(LOOP)
    spec = importlib.util.spec_from_file_location("cost_forms_loop",
                                                  tmp_path / "cost_forms_loop.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    yield "loop", trace_call(mod.loop, (np.ones((128, 256), np.float32), 9))


def test_costing_per_form_equals_costing_each_instruction(tmp_path, monkeypatch):
    seen = 0
    for name, traced in _traced_cases(tmp_path):
        if traced.program.cores > 1:
            continue
        bound, diags = check_traced(traced)
        if any(d.is_error for d in diags):
            continue
        fast = _slots(traced.program, bound, monkeypatch, by_form=True)
        plain = _slots(traced.program, bound, monkeypatch, by_form=False)
        assert fast == plain, name
        seen += 1
    assert seen >= 5


def test_the_loop_kernel_takes_the_form_path(tmp_path, monkeypatch):
    from nkirun import speed
    monkeypatch.setattr(speed, "FORM_PLANS", False)  # (with plans: test_form_plans.py)
    calls = []
    real = scheduler._Scheduler.costed_by_form
    monkeypatch.setattr(scheduler._Scheduler, "costed_by_form",
                        lambda self, *a: calls.append(1) or real(self, *a))
    traced = dict(_traced_cases(tmp_path))["loop"]
    bound, _ = check_traced(traced)
    s = schedule(traced.program, bound)
    assert len(calls) >= 30
    assert any(x.wait_kind == "recompute" for x in s.slots)  # the repeated multiply is elided


ACCUMULATE = '''
import nki.isa as nisa
import nki.language as nl

def kt_matmul(aT, b, spelling):
    K, M = aT.shape
    N = b.shape[1]
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    a_t = [nl.load(aT[kt * 128:(kt + 1) * 128, :]) for kt in range(K // 128)]
    b_t = [nl.load(b[kt * 128:(kt + 1) * 128, :]) for kt in range(K // 128)]
    for rep in range(8):
        ps = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
        for kt in range(K // 128):
            if spelling == "unset":
                nisa.nc_matmul(dst=ps, stationary=a_t[kt], moving=b_t[kt])
            else:  # the nc_matmul page's recommended form
                nisa.nc_matmul(dst=ps, stationary=a_t[kt], moving=b_t[kt],
                               accumulate=(kt > 0))
        nl.store(out, nl.copy(ps))
    return out
'''


def test_the_cost_does_not_depend_on_how_accumulate_is_spelled(tmp_path, monkeypatch):
    # accumulate=(kt > 0) and accumulate unset give the same values; the explicit form used
    # to wait a commit latency before every accumulating matmul (28.80 us against 24.82 us)
    import ml_dtypes
    (tmp_path / "kt_matmul.py").write_text(ACCUMULATE)
    spec = importlib.util.spec_from_file_location("kt_matmul", tmp_path / "kt_matmul.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    aT = np.zeros((1024, 128), ml_dtypes.bfloat16)
    b = np.zeros((1024, 512), ml_dtypes.bfloat16)
    runs = {}
    for spelling in ("unset", "explicit"):
        traced = trace_call(mod.kt_matmul, (aT, b, spelling))
        bound, _ = check_traced(traced)
        fast = _slots(traced.program, bound, monkeypatch, by_form=True)
        assert fast == _slots(traced.program, bound, monkeypatch, by_form=False)
        runs[spelling] = [(s.start_ns, s.end_ns, s.engine) for s in
                          schedule(traced.program, bound).slots], fast[1]
    assert runs["explicit"] == runs["unset"]
