"""simulate()'s execution plan kept for its next call (runner/plan_keep.py,
speed.KEPT_PLAN): every example kernel called again on other inputs gives the bits of a
plan compiled afresh; a plan is run again only for the same bound instructions, policy and
speed switches; the outputs a call returned and the inputs it was given are left as they
were by later calls; a plan with a plain step is not kept, nor the plan of a program's
first call."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

import nkirun
from nkirun import speed
from nkirun.runner import plan as plan_module
from repo_paths import load_module

ROOT = pathlib.Path(__file__).resolve().parents[2]




EXAMPLES = load_module(ROOT / "tests" / "kernel" / "test_examples.py", "_examples_for_keep")


def _counting(monkeypatch) -> list:
    made = []
    planner = plan_module._Planner

    def counted(*args, **kwargs):
        made.append(planner(*args, **kwargs))
        return made[-1]
    monkeypatch.setattr(plan_module, "_Planner", counted)
    return made


def _bits(result) -> list:
    return [(a.dtype, a.shape, a.tobytes()) for a in EXAMPLES.as_tuple(result)]


def _inputs(arrays: dict, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return {k: (v + rng.standard_normal(v.shape).astype(v.dtype) * 0.5).astype(v.dtype)
            if v.dtype.kind == "f" else v for k, v in arrays.items()}


@pytest.mark.parametrize("name", sorted(EXAMPLES.CASES))
@pytest.mark.parametrize("uninitialized", ["error", "nan"])
def test_a_kept_plan_gives_the_bits_of_a_fresh_one(monkeypatch, name, uninitialized):
    arrays, args, _, _ = EXAMPLES.CASES[name]
    kernel = EXAMPLES.kernel_function(name)
    calls = [arrays, _inputs(arrays, 1), _inputs(arrays, 2), arrays]
    given = [{k: v.copy() for k, v in a.items()} for a in calls]
    made = _counting(monkeypatch)
    sim = nkirun.simulate(kernel, uninitialized=uninitialized)
    got = [sim(**a, **args) for a in calls]
    kept = len(made) == 2  # (kept from the second call: a one-shot call keeps nothing)
    first = _bits(got[0])
    monkeypatch.setattr(speed, "KEPT_PLAN", False)
    monkeypatch.setattr(speed, "SAME_TRACE_CHECK", False)
    fresh = nkirun.simulate(kernel, uninitialized=uninitialized)
    want = [_bits(fresh(**a, **args)) for a in calls]
    assert [_bits(g) for g in got] == want
    assert _bits(got[0]) == first  # (later calls wrote their own outputs)
    for a, b in zip(calls, given):  # (and left the inputs as they were)
        assert all(np.array_equal(a[k], b[k], equal_nan=True) for k in a)
    assert len(made) == (2 if kept else 4) + 4
    if name == "matmul_tiled":
        assert kept  # (every step planned: the plan is run again)


def test_a_switch_changed_between_calls_compiles_again(monkeypatch):
    arrays, args, _, _ = EXAMPLES.CASES["matmul_tiled"]
    made = _counting(monkeypatch)
    sim = nkirun.simulate(EXAMPLES.kernel_function("matmul_tiled"))
    a = sim(**arrays, **args)
    monkeypatch.setattr(speed, "WIDEN_ONCE", False)
    b = sim(**arrays, **args)  # (checked again under the new switches: a new program)
    c = sim(**arrays, **args)  # (its second call: compiled and kept)
    d = sim(**arrays, **args)  # (run from the kept plan)
    assert len(made) == 3 and _bits(a) == _bits(b) == _bits(c) == _bits(d)


PLAIN_STEP = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def rowmax(x):
    out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    m = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=m, op=nl.maximum, data=t, axis=1)
    nisa.dma_copy(dst=out, src=m)
    return out
'''


def test_a_plan_with_a_plain_step_is_compiled_each_call(tmp_path, monkeypatch):
    (tmp_path / "plain_step_kernel.py").write_text(PLAIN_STEP)
    kernel = load_module(tmp_path / "plain_step_kernel.py", "plain_step_kernel").rowmax
    made = _counting(monkeypatch)
    sim = nkirun.simulate(kernel)
    xs = [np.random.default_rng(i).standard_normal((128, 64)).astype(np.float32)
          for i in range(3)]
    got = [sim(x) for x in xs]
    plain = [any(getattr(c, "func", None) is plan_module._plain for c in p.calls)
             for p in made]
    assert plain == [True, True, True]  # (tensor_reduce has no plan form)
    for x, g in zip(xs, got):
        assert np.array_equal(g[:, 0], x.max(axis=1))


def test_a_plan_is_kept_from_a_programs_second_call():
    """A one-shot call (a test harness's) holds no arrays after it and copies no outputs."""
    from nkirun.runner.plan_keep import PlanMemo
    arrays, args, _, _ = EXAMPLES.CASES["matmul_tiled"]
    sim = nkirun.simulate(EXAMPLES.kernel_function("matmul_tiled"))
    keeps = []
    memo_keep = PlanMemo.keep

    def keep(memo, bound, *rest):
        keeps.append(memo_keep(memo, bound, *rest))
        return keeps[-1]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(PlanMemo, "keep", keep)
        first = sim(**arrays, **args)
        assert keeps == [False]
        second = sim(**arrays, **args)
        assert keeps == [False, True]
        sim(**arrays, **args)  # (run again from the kept plan: keep() not asked)
        assert keeps == [False, True]
    assert _bits(first) == _bits(second)
