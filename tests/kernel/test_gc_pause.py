"""The collector policy of the kernel API (nkirun/gc_policy.py): tracing, checking and
scheduling a kernel pause the cyclic garbage collector and give the caller's state back afterwards,
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


@pytest.mark.parametrize("caller_on", [True, False])
def test_loading_a_kernel_path_pauses_the_collector(kernel_module, caller_on, monkeypatch):
    """pipeline.front.load of `PATH.py::FUNCTION` (the suite's and a caller's way to trace a
    kernel file) traces it paused as trace_call does, and gives the caller's state back."""
    from nkirun.pipeline.front import KernelOptions, load
    from nkirun.source.kernel import trace as trace_mod
    seen, real = [], trace_mod.trace

    def trace(*a, **k):
        seen.append(gc.isenabled())
        return real(*a, **k)

    monkeypatch.setattr(trace_mod, "trace", trace)
    (gc.enable if caller_on else gc.disable)()
    try:
        load(f"{kernel_module.__file__}::copy", None, "trn2",
             KernelOptions(shapes=("x=float32[4,8]",)))
        assert gc.isenabled() == caller_on
    finally:
        gc.enable()
    assert seen == [False]


def test_the_schedule_is_made_with_the_collector_paused(kernel_module, monkeypatch):
    """cost's schedule (a slot per instruction, none freed) pauses it as check does: the
    collector took 20-25% of the schedule of the 39,000-instruction matmul tutorial."""
    from nkirun.schedule import cores
    seen, real = [], cores.schedule

    def schedule(*a, **k):
        seen.append(gc.isenabled())
        return real(*a, **k)

    monkeypatch.setattr(cores, "schedule", schedule)
    assert gc.isenabled()
    nkirun.cost(kernel_module.copy, X)
    assert seen == [False] and gc.isenabled()


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


def test_a_run_leaves_no_cycle_holding_its_arrays(kernel_module):
    """The planned run's free lists held themselves (entry -> free list -> entry): every
    call's tiles waited for a full collection, which a paused collector never ran."""
    nkirun.simulate(kernel_module.copy)(X)
    gc.collect()
    gc.disable()
    try:
        nkirun.simulate(kernel_module.copy)(X)
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        arrays = [o for o in gc.garbage if isinstance(o, np.ndarray)
                  or isinstance(o, (list, tuple)) and any(isinstance(x, np.ndarray) for x in o)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert not arrays


POLICY = '''
import gc, sys, weakref
from nkirun import gc_policy
from nkirun.gc_policy import paused_gc

class Node:
    __slots__ = ("next", "__weakref__")

refs = []
for size, passes in ((1_000, 300), (60_000, 20)):  # short passes, then long ones
    for _ in range(passes):
        with paused_gc():
            nodes = [Node() for _ in range(size)]
            for a, b in zip(nodes, nodes[1:] + nodes[:1]):
                a.next = b  # one reference cycle per pass
            refs.append(weakref.ref(nodes[0]))
            del nodes, a, b
with paused_gc():
    pass
print(sum(r() is not None for r in refs[:300]), sum(r() is not None for r in refs[300:]))
'''


def test_garbage_made_while_paused_does_not_pile_up(tmp_path):
    """A long-lived process calling the API: cycles made in paused passes are collected
    (before, each pass's objects went to the oldest generation uncounted, and no full
    collection ever came: 1,500 calls grew a process to 1 GB)."""
    import subprocess
    import sys
    script = tmp_path / "policy.py"
    script.write_text(POLICY)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=300, check=True, env=_tree_env()).stdout.split()
    short_alive, long_alive = map(int, out)
    assert short_alive <= 60, out  # a few young generations' worth, not all 300
    assert long_alive <= 8, out  # at most a quarter-heap's worth, not all 20


FULLS = '''
import gc
from nkirun.gc_policy import paused_gc

def full_collections():
    return gc.get_stats()[-1]["collections"]

kept = []
out = []
for collect_first in (False, True):
    with paused_gc():  # a long pass: its objects filed under the oldest generation
        kept.append([[] for _ in range(300_000)])
    if collect_first:
        gc.collect()  # the caller's own full collection
    before = full_collections()
    with paused_gc():  # the next pass: a full collection first, unless one just ran
        pass
    out.append(full_collections() - before)
print(*out)
'''


def test_a_callers_full_collection_stands_for_the_next_pause(tmp_path):
    """A full collection run since the last filing (the caller's `gc.collect()`) has scanned
    the filed objects: the next pause starts no second one (before, the suite's worker
    paid two full collections in a row before each schedule)."""
    import subprocess
    import sys
    script = tmp_path / "fulls.py"
    script.write_text(FULLS)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=300, check=True, env=_tree_env()).stdout.split()
    assert out == ["1", "0"], out


def test_the_tracers_tables_stay_bounded_over_ever_new_shapes(kernel_module, monkeypatch):
    """What a trace remembers about shapes it saw is capped, so a process tracing ever new
    shapes does not grow without end; layouts keep distinct ids across a clear."""
    from nkirun.source.kernel import session, tensor
    monkeypatch.setattr(session, "SHAPES_SEEN_MAX", 5)
    monkeypatch.setattr(tensor, "LAYOUT_IDS_MAX", 5)
    monkeypatch.setattr(session, "_SHAPES_SEEN", set())
    monkeypatch.setattr(tensor, "_LAYOUT_IDS", {})
    seen = []
    for n in range(1, 13):
        x = np.arange(4 * n, dtype=np.float32).reshape(4, n)
        seen.append(tensor.TensorRec("a", (4, n), tensor.consts.DTYPES["float32"],
                                     tensor.consts.shared_hbm, None).layout)
        nkirun.check(kernel_module.copy, nkirun.shape("float32", 4, 8))
        nkirun.check(kernel_module.copy, x)
        assert len(session._SHAPES_SEEN) <= 5 + 1 and len(tensor._LAYOUT_IDS) <= 5
    assert len(set(seen)) == len(seen)


def _tree_env() -> dict:
    """The environment of a child that imports this tree's nkirun, whatever is installed."""
    import os
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return dict(os.environ, PYTHONPATH=root)


def test_a_long_pass_files_what_it_left_and_counts_it():
    """A pass that leaves more than YOUNG_LIMIT objects files them under the oldest
    generation and counts them (the youngest generation's count, not a walk of every
    object); a pass whose objects die is left young and counts nothing."""
    from nkirun import gc_policy
    gc.collect()
    gc_policy._collect_if_due()  # (the count starts again after that full collection)
    n = gc_policy.YOUNG_LIMIT * 3
    before = gc_policy._filed
    with gc_policy.paused_gc():
        kept = [[i] for i in range(n)]
    filed = gc_policy._filed - before
    assert n <= filed <= n + 2_000, filed
    assert gc.get_count()[0] < 1_000  # (filed: the young generation is empty again)
    before = gc_policy._filed
    with gc_policy.paused_gc():
        dropped = [[i] for i in range(n)]
        del dropped
    assert gc_policy._filed == before
    del kept
