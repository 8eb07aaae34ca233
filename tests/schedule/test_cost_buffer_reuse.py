"""A kernel under nki.compiler.skip_middle_end_transformations keeps one buffer per
allocation site: a loop's next iteration waits for the last one to release its tiles
(docs/cost.md, "Buffers under skip_middle_end_transformations"); without the decorator
every iteration's tiles are its own and iterations overlap."""
from __future__ import annotations

import importlib.util

import nkirun
from nkirun.schedule import schedule
from nkirun.api_kernel import require_valid, trace_call
from nkirun.source.kernel.modules import install_fallback_finder

KERNELS = '''
import nki
import nki.isa as nisa
import nki.language as nl


def _body(a, out):
    for m in nl.affine_range(a.shape[1] // 4):
        t = nl.ndarray((128, 4), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a[:, m * 4:(m + 1) * 4])
        r = nl.ndarray((128, 4), dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=r, data1=t, data2=t, op=nl.add)
        nisa.dma_copy(dst=out[:, m * 4:(m + 1) * 4], src=r)


@nki.compiler.skip_middle_end_transformations
@nki.jit
def reused(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    _body(a, out)
    return out


@nki.jit
def pipelined(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    _body(a, out)
    return out
'''


def _schedule(tmp_path, name):
    install_fallback_finder()
    path = tmp_path / "reuse_kernels.py"
    path.write_text(KERNELS)
    spec = importlib.util.spec_from_file_location("reuse_kernels", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    traced = trace_call(getattr(mod, name), (nkirun.shape("float32", 128, 32),), {}, "trn2")
    bound, _ = require_valid(traced)
    return traced.program, schedule(traced.program, bound)


def test_skip_middle_end_serialises_iterations_on_their_shared_tiles(tmp_path):
    program, s = _schedule(tmp_path, "reused")
    assert program.reuse_buffers
    loads = [x for x in s.slots if x.op == "dma_copy"][0::2]  # load, store, load, ...
    adds = [x for x in s.slots if x.op == "tensor_tensor"]
    assert len(loads) == len(adds) == 8
    for nxt, add in zip(loads[1:], adds):  # the next load into t waits for the add reading t
        assert nxt.start_ns >= add.end_ns
    _, free = _schedule(tmp_path, "pipelined")
    assert free.total_ns < s.total_ns / 2  # the same loop, iterations overlapped


def test_without_the_decorator_each_iteration_has_its_own_tiles(tmp_path):
    program, s = _schedule(tmp_path, "pipelined")
    assert not program.reuse_buffers
    loads = [x for x in s.slots if x.op == "dma_copy"][0::2]
    assert all(x.ready_ns == 0.0 for x in loads)  # no load waits for another iteration
