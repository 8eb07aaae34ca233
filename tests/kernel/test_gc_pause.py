"""The collector policy of the kernel API (nkirun/gc_policy.py): tracing and checking a
kernel pause the cyclic garbage collector and give the caller's state back afterwards,
whether the kernel returns or raises, and whether the caller had it on or off."""
from __future__ import annotations

import gc
import importlib.util
import textwrap

import numpy as np
import pytest

import nkirun
from nkirun.diagnostics import NkirunError

KERNEL = '''
import gc
import nki
import nki.isa as nisa
import nki.language as nl

SEEN = []


@nki.jit
def copy(x, fail=False):
    SEEN.append(gc.isenabled())  # the collector's state while the kernel is traced
    out = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    if fail:
        raise ValueError("the kernel's own error")
    nisa.dma_copy(dst=out, src=t)
    return out
'''


@pytest.fixture
def kernel_module(tmp_path):
    path = tmp_path / "gc_kernel.py"
    path.write_text(textwrap.dedent(KERNEL))
    spec = importlib.util.spec_from_file_location("gc_kernel", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


X = np.arange(32, dtype=np.float32).reshape(4, 8)


def test_trace_pauses_the_collector_and_restores_it(kernel_module):
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    out = nkirun.simulate(kernel_module.copy)(X)
    np.testing.assert_array_equal(out, X)
    nkirun.check(kernel_module.copy, X)
    nkirun.cost(kernel_module.copy, X)
    nkirun.trace(kernel_module.copy, X)
    assert kernel_module.SEEN == [False] * 4  # paused during each trace
    assert gc.isenabled() and gc.get_freeze_count() == frozen


def test_the_collector_is_restored_when_the_kernel_raises(kernel_module):
    assert gc.isenabled()
    with pytest.raises(NkirunError) as e:
        nkirun.simulate(kernel_module.copy)(X, fail=True)
    assert "the kernel's own error" in str(e.value)
    assert kernel_module.SEEN == [False]
    assert gc.isenabled()


def test_a_caller_who_disabled_the_collector_keeps_it_disabled(kernel_module):
    gc.disable()
    try:
        nkirun.simulate(kernel_module.copy)(X)
        with pytest.raises(NkirunError):
            nkirun.simulate(kernel_module.copy)(X, fail=True)
        assert not gc.isenabled()
    finally:
        gc.enable()
    assert kernel_module.SEEN == [False, False]


def test_a_dropped_trace_is_freed_without_the_collector(kernel_module):
    """No reference cycle holds the Tracer (and through its Builder the traced IR): the
    program goes when the caller drops it, even while the collector is paused."""
    from nkirun.api_kernel import trace_call
    gc.collect()
    gc.disable()
    try:
        traced = trace_call(kernel_module.copy, (X,))
        del traced
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        kinds = {type(o).__name__ for o in gc.garbage}
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert not kinds & {"Tracer", "Builder", "Instruction", "TensorDecl", "View"}, kinds
