"""A two-core schedule whose cores share their FormPlans and move each slot's facts to its
core once per facts (`speed.CORE_PLANS`, schedule/cores.py `facts_on_core`) equals the
plain path's, where each core plans its own forms and every slot's facts are interned
afresh: every slot, field by field, and the total."""
from __future__ import annotations

import numpy as np

from nkirun import speed
from nkirun.api_kernel import check_traced, trace_call
from nkirun.hw.targets import TARGETS
from nkirun.schedule import fast_place, scheduler
from nkirun.schedule.cores import facts_on_core, schedule
from repo_paths import PROGRAMS, load_module

RMSNORM = load_module(PROGRAMS / "kernels" / "rmsnorm_lnc2.py", "_rmsnorm_lnc2_for_plans")


def _traced():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1024, 256)).astype(np.float32)  # 8 row tiles per core
    w = rng.standard_normal((1, 256)).astype(np.float32)
    traced = trace_call(RMSNORM.rmsnorm_lnc2, (x, w), lnc=2)
    bound, diags = check_traced(traced)
    assert not any(d.is_error for d in diags)
    return traced.program, bound


def _slots(program, bound, monkeypatch, on: bool):
    plans = []
    real = fast_place.make_plan
    with monkeypatch.context() as m:
        m.setattr(speed, "CORE_PLANS", on)
        m.setattr(scheduler, "make_plan", lambda *a: plans.append(1) or real(*a))
        s = schedule(program, bound)
    return [tuple(getattr(x, f) for f in x.__slots__) for x in s.slots], s.total_ns, len(plans)


def test_shared_core_plans_schedule_as_the_plain_path(monkeypatch):
    program, bound = _traced()
    assert program.cores == 2
    fast, total, planned = _slots(program, bound, monkeypatch, True)
    plain, plain_total, plain_planned = _slots(program, bound, monkeypatch, False)
    assert fast == plain and total == plain_total
    assert {row[1][-1] for row in fast} == {0, 1}  # (facts of both cores)
    assert planned < plain_planned  # (the cores' common forms planned once)


def test_facts_on_core_equals_its_plain_twin():
    s = scheduler._Scheduler(_traced()[0], TARGETS["trn2"])
    memo: dict = {}
    made = [s.facts_of("tensor_copy", "vector", "vector", (), 64, "f", False, None, 0.0,
                       0.0, 0.0, 0.0, 0),
            s.facts_of("dma_copy", "dma", "dma.q0-15", (0, 1), 900, "g", True, "ld", 12.5,
                       1024.0, 512.0, 1024.0, 0),
            s.facts_of("tensor_copy", "vector", "vector", (), 64, "f", False, None, 0.0,
                       0.0, 0.0, 0.0, 1),
            s.facts_of("tensor_copy", "vector", "vector", (), 64, "f", False, None, 0.0,
                       0.0, 0.0, 0.0, False)]  # (a bool core: interned apart from 0)
    for _ in range(2):
        for facts in made:
            for core in (0, 1):
                got = facts_on_core(s, facts, core, memo)
                want = s.facts_of(*facts[:-1], core)
                assert got is want and type(got[-1]) is type(want[-1])

