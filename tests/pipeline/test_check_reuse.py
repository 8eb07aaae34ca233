"""A simulate() object reuses its last call's check when a call traces the same program
(pipeline/reuse.py, speed.SAME_TRACE_CHECK): the fast comparison `same_program` against
its plain twin `same_program_plain` on kernels traced twice and on programs that differ in
one value, one sign of zero or one location (and values of one type all the way down);
and simulate() calls that reuse (and must not reuse) give the outputs, errors and bits of
a check made afresh."""
from __future__ import annotations

import math
import pathlib

import numpy as np
import pytest

import nkirun
from nkirun import speed
from nkirun.checker import passes
from nkirun.diagnostics import NkirunError
from nkirun.api_kernel import trace_call
from nkirun.pipeline.reuse import CheckMemo, same_program, same_program_plain, same_value
from repo_paths import load_module

ROOT = pathlib.Path(__file__).resolve().parents[2]




EXAMPLES = load_module(ROOT / "tests" / "kernel" / "test_examples.py", "_examples_for_reuse")

KERNELS = '''
import nki
import nki.isa as nisa
import nki.language as nl

SETTINGS = {"value": 1.0, "cols": 4}


@nki.jit
def fill(x):
    out = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    u = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=u[:, 0:SETTINGS["cols"]], value=SETTINGS["value"])
    nisa.tensor_tensor(dst=t, data1=t, data2=u, op=nl.add)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def fill_too(x):  # fill's body at other lines: the same program but for its locations
    out = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    u = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=u[:, 0:SETTINGS["cols"]], value=SETTINGS["value"])
    nisa.tensor_tensor(dst=t, data1=t, data2=u, op=nl.add)
    nisa.dma_copy(dst=out, src=t)
    return out
'''


@pytest.fixture
def kernels(tmp_path):
    (tmp_path / "reuse_kernels.py").write_text(KERNELS)
    return load_module(tmp_path / "reuse_kernels.py", "reuse_kernels")


def _both(p, q) -> bool:
    fast, plain = same_program(p, q), same_program_plain(p, q)
    assert fast == plain
    return fast


def _example_calls():
    for name, (arrays, args, _, _) in sorted(EXAMPLES.CASES.items()):
        yield name, EXAMPLES.kernel_function(name), {**arrays, **args}


@pytest.mark.parametrize("name", sorted(EXAMPLES.CASES))
def test_a_kernel_traced_twice_is_the_same_program(name):
    arrays, args, _, _ = EXAMPLES.CASES[name]
    kernel = EXAMPLES.kernel_function(name)
    p = trace_call(kernel, (), {**arrays, **args}).program
    q = trace_call(kernel, (), {**arrays, **args}).program
    assert p is not q and _both(p, q)
    others = [trace_call(EXAMPLES.kernel_function(n), (), {**a, **k}).program
              for n, (a, k, _, _) in sorted(EXAMPLES.CASES.items()) if n != name]
    assert not any(_both(p, o) for o in others)


@pytest.mark.parametrize("change, value", [("value", 2.0), ("value", 1e-45), ("cols", 2)])
def test_one_changed_value_is_another_program(kernels, change, value):
    x = np.ones((128, 4), np.float32)
    p = trace_call(kernels.fill, (x,)).program
    kernels.SETTINGS[change] = value
    q = trace_call(kernels.fill, (x,)).program
    assert not _both(p, q)


def test_a_negative_zero_is_not_a_positive_one(kernels):
    x = np.ones((128, 4), np.float32)
    kernels.SETTINGS["value"] = 0.0
    p = trace_call(kernels.fill, (x,)).program
    kernels.SETTINGS["value"] = -0.0
    q = trace_call(kernels.fill, (x,)).program
    assert p == q  # (== alone finds them equal)
    assert not _both(p, q)
    assert not same_value(0.0, -0.0) and same_value(-0.0, -0.0)
    assert not same_value(np.float32(0.0), np.float32(-0.0))
    assert not same_value(1, 1.0) and not same_value((1, 2), (1.0, 2))


def test_other_locations_are_another_program(kernels):
    x = np.ones((128, 4), np.float32)
    p = trace_call(kernels.fill, (x,)).program
    q = trace_call(kernels.fill_too, (x,)).program
    assert not _both(p, q)
    assert [i.op for i in p.instructions] == [i.op for i in q.instructions]


def test_other_input_shapes_are_another_program():
    kernel = EXAMPLES.kernel_function("softmax")
    rng = np.random.default_rng(5)
    p = trace_call(kernel, (), {"x": rng.standard_normal((128, 333)).astype(np.float32)})
    q = trace_call(kernel, (), {"x": rng.standard_normal((128, 334)).astype(np.float32)})
    assert not _both(p.program, q.program)


def _counting(monkeypatch) -> list:
    calls = []
    validate = passes.validate

    def counted(program, limit):
        calls.append(program)
        return validate(program, limit)
    monkeypatch.setattr(passes, "validate", counted)
    return calls


@pytest.mark.parametrize("name", sorted(EXAMPLES.CASES))
def test_simulate_reuses_the_check_and_gives_the_same_bits(monkeypatch, name):
    arrays, args, _, _ = EXAMPLES.CASES[name]
    kernel = EXAMPLES.kernel_function(name)
    calls = _counting(monkeypatch)
    sim = nkirun.simulate(kernel)
    rng = np.random.default_rng(9)
    other = {k: (rng.permutation(v.reshape(-1)).reshape(v.shape)) for k, v in arrays.items()}
    got = [sim(**a, **args) for a in (arrays, other, arrays)]
    assert len(calls) == 1  # (one check: the next calls traced the same program)
    monkeypatch.setattr(speed, "SAME_TRACE_CHECK", False)
    fresh = nkirun.simulate(kernel)
    want = [fresh(**a, **args) for a in (arrays, other, arrays)]
    assert len(calls) == 4
    for g, w in zip(got, want):
        for a, b in zip(EXAMPLES.as_tuple(g), EXAMPLES.as_tuple(w)):
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes()


def test_simulate_checks_again_when_the_kernel_traces_otherwise(kernels, monkeypatch):
    calls = _counting(monkeypatch)
    sim = nkirun.simulate(kernels.fill)
    x = np.ones((128, 4), np.float32)
    assert (sim(x) == 2.0).all()
    kernels.SETTINGS["value"] = -0.0
    got = sim(x)
    assert len(calls) == 2 and (got == 1.0).all()
    kernels.SETTINGS["value"] = 0.0  # equal to -0.0, but another program
    sim(x)
    assert len(calls) == 3
    kernels.SETTINGS["cols"] = 2  # memset writes half of u: tensor_tensor reads garbage
    for _ in range(2):  # the error each time, the second from the reused check
        with pytest.raises(NkirunError) as e:
            sim(x)
        assert "E090" in str(e.value) or "E050" in str(e.value) or "W051" in str(e.value)
    kernels.SETTINGS["cols"] = 4
    assert (sim(x) == 1.0).all()
    assert len(calls) == 5


def test_the_memo_keeps_one_program_and_no_loops():
    memo = CheckMemo()
    kernel = EXAMPLES.kernel_function("rmsnorm")
    arrays, args, _, _ = EXAMPLES.CASES["rmsnorm"]
    p = trace_call(kernel, (), {**arrays, **args}).program
    first = memo.validate(p, 1 << 40)
    again = memo.validate(trace_call(kernel, (), {**arrays, **args}).program, 1 << 40)
    assert again[0] is first[0] and again[1] == first[1] and again[1] is not first[1]
    assert memo.validate(p, 1 << 30)[0] is not first[0]  # (another HBM limit: afresh)
    assert math.isfinite(len(first[0]))
