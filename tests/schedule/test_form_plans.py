"""The scheduler's per-form plans (`speed.FORM_PLANS`, schedule/fast_place.py) schedule
exactly like the plain path (`_Scheduler.place_plain`), and dropping the access histories
of tensors no later instruction accesses (`speed.DEAD_HISTORIES`) exactly like keeping
them: every slot, field by field."""
from __future__ import annotations

import importlib.util
import pathlib

import numpy as np

from nkirun import speed
from nkirun.api_kernel import check_traced, trace_call
from nkirun.schedule import fast_place
from nkirun.schedule.cores import schedule

HERE = pathlib.Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("_cost_forms_for_plans",
                                              HERE / "test_cost_forms.py")
FORMS = importlib.util.module_from_spec(spec)
spec.loader.exec_module(FORMS)

BLOCKS = '''
import nki.isa as nisa
import nki.language as nl

def blocks(x, w):
    big = nl.ndarray((16, 128, 512), dtype=nl.float32, buffer=nl.sbuf)
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    for i in range(16):  # a tensor written block by block: many write boxes live
        nisa.dma_copy(dst=big[i], src=x[i])
    acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=acc, value=0.0)
    for i in range(16):
        t = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=t, src=big[i])  # the compiler may place it on ScalarE
        nisa.tensor_tensor(dst=acc, data1=acc, data2=t, op=nl.add)
        nisa.tensor_tensor(dst=big[(i + 1) % 16], data1=t, data2=t, op=nl.multiply)
    for j in range(4):
        p = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=p, stationary=w, moving=acc[:, j * 128:(j + 1) * 128])
        nisa.tensor_copy(dst=acc[:, j * 128:(j + 1) * 128], src=p)
    nisa.dma_copy(dst=out, src=acc)
    return out
'''


SCALAR = '''
import nki.isa as nisa
import nki.language as nl

def scalar_choice(x):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    base = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=base, src=x)
    acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=acc, value=0.0)
    for i in range(12):  # copies and scalings the compiler may put on either engine
        for k in range(i % 4):  # the Scalar engine busy with work of its own
            e = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation(dst=e, op=nl.exp, data=base, scale=float(i * 4 + k + 1))
        t = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=t, data=base, op0=nl.multiply, operand0=float(i + 2))
        u = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=u, src=t)
        nisa.tensor_tensor(dst=acc, data1=acc, data2=u, op=nl.add)
    nisa.dma_copy(dst=out, src=acc)
    return out
'''


def _load(tmp_path, name: str, text: str):
    (tmp_path / f"{name}.py").write_text(text)
    spec = importlib.util.spec_from_file_location(name, tmp_path / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _cases(tmp_path):
    yield from FORMS._traced_cases(tmp_path)
    x = np.ones((128, 512), np.float32)
    yield "scalar_choice", trace_call(_load(tmp_path, "plan_scalar", SCALAR).scalar_choice,
                                      (x,))
    (tmp_path / "plan_blocks.py").write_text(BLOCKS)
    spec = importlib.util.spec_from_file_location("plan_blocks", tmp_path / "plan_blocks.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    w = np.zeros((128, 128), np.float32)
    yield "blocks", trace_call(mod.blocks, (np.ones((16, 128, 512), np.float32), w))


def _slots(program, bound, monkeypatch, plans: bool, switch: str = "FORM_PLANS"):
    with monkeypatch.context() as m:
        m.setattr(speed, switch, plans)
        s = schedule(program, bound)
    return [tuple(getattr(x, f) for f in x.__slots__) for x in s.slots], s.total_ns


def test_form_plans_schedule_as_the_plain_path(tmp_path, monkeypatch):
    planned = []
    real = fast_place.place_form
    monkeypatch.setattr(fast_place, "place_form",
                        lambda *a: planned.append(1) or real(*a))
    from nkirun.schedule import scheduler
    monkeypatch.setattr(scheduler, "place_form", fast_place.place_form)
    seen = 0
    for name, traced in _cases(tmp_path):
        bound, diags = check_traced(traced)
        if any(d.is_error for d in diags):
            continue
        before = len(planned)
        fast = _slots(traced.program, bound, monkeypatch, plans=True)
        took = len(planned) - before
        assert fast == _slots(traced.program, bound, monkeypatch, plans=False), name
        if name in ("loop", "blocks"):
            assert took >= 30, name  # the plan path was taken
        if name == "scalar_choice":  # (scalar_alt: some placed there, some not)
            engines = [row[1][1] for row in fast[0] if row[1][0] in ("tensor_copy",
                                                                      "tensor_scalar")]
            assert "scalar" in engines and "vector" in engines, engines
        seen += 1
    assert seen >= 6


def test_dropping_dead_histories_schedules_as_keeping_them(tmp_path, monkeypatch):
    seen = 0
    for name, traced in _cases(tmp_path):
        bound, diags = check_traced(traced)
        if any(d.is_error for d in diags):
            continue
        kept = _slots(traced.program, bound, monkeypatch, False, "DEAD_HISTORIES")
        assert _slots(traced.program, bound, monkeypatch, True, "DEAD_HISTORIES") == kept, name
        seen += 1
    assert seen >= 6


def test_last_uses_names_each_tensor_at_its_last_access(tmp_path):
    from nkirun.schedule.history import last_uses
    traced = dict(_cases(tmp_path))["blocks"]
    bound, _ = check_traced(traced)
    dead = last_uses(bound)
    names = [b.names_plan()[1] for b in bound]
    listed = []
    for k, gone in enumerate(dead):
        gone = () if gone is None else (gone,) if isinstance(gone, str) else gone
        for n in gone:
            assert n in names[k] and not any(n in later for later in names[k + 1:]), n
        listed += gone
    assert sorted(listed) == sorted({n for ns in names for n in ns})
