"""Kernels of our own around nki.collectives, written to a file and imported (their
diagnostics name kernel lines), and NumPy references, for tests/isa/test_<collective>.py
and tests/runner/test_ranks.py."""
from __future__ import annotations

import importlib.util
import textwrap
import threading

import ml_dtypes
import numpy as np

BF16 = np.dtype(ml_dtypes.bfloat16)
HANG_GUARD_S = 300  # a deadlock must be reported, not waited out: far above any real run

SOURCE = """\
import nki
import nki.collectives as ncc
import nki.isa as nisa
import nki.language as nl


def _hbm(shape, dtype):
    return nl.ndarray(shape, dtype=dtype, buffer=nl.shared_hbm)


@nki.jit
def gather(x, group, n):
    H, W = x.shape
    src, dst, out = _hbm(x.shape, x.dtype), _hbm((H * n, W), x.dtype), _hbm((H * n, W), x.dtype)
    nisa.dma_copy(dst=src, src=x)
    ncc.all_gather(srcs=[src], dsts=[dst], replica_group=group, collective_dim=0)
    nisa.dma_copy(dst=out, src=dst)
    return out


@nki.jit
def gather_sbuf(x, group, n):
    P, W = x.shape
    t = nl.ndarray((P, W), dtype=x.dtype, buffer=nl.sbuf)
    g = nl.ndarray((P, W * n), dtype=x.dtype, buffer=nl.sbuf)
    out = _hbm((P, W * n), x.dtype)
    nisa.dma_copy(dst=t, src=x)
    ncc.all_gather(srcs=[t], dsts=[g], replica_group=group, collective_dim=1)
    nisa.dma_copy(dst=out, src=g)
    return out


@nki.jit
def gather_per_core(x, group, n):
    # lnc=2: core c gathers its own tile x[c] from core c of every rank
    C, P, W = x.shape
    c = nl.program_id(0)
    t = nl.ndarray((P, W), dtype=x.dtype, buffer=nl.sbuf)
    g = nl.ndarray((P, W * n), dtype=x.dtype, buffer=nl.sbuf)
    out = _hbm((C, P, W * n), x.dtype)
    nisa.dma_copy(dst=t, src=x[c])
    ncc.all_gather(srcs=[t], dsts=[g], replica_group=group, collective_dim=1)
    nisa.dma_copy(dst=out[c], src=g)
    return out


@nki.jit
def reduce(x, group, op):
    src, dst, out = _hbm(x.shape, x.dtype), _hbm(x.shape, x.dtype), _hbm(x.shape, x.dtype)
    nisa.dma_copy(dst=src, src=x)
    ncc.all_reduce(srcs=[src], dsts=[dst], replica_group=group, op=op)
    nisa.dma_copy(dst=out, src=dst)
    return out


@nki.jit
def scatter(x, group, n):
    H, W = x.shape
    src, dst, out = _hbm(x.shape, x.dtype), _hbm((H // n, W), x.dtype), _hbm((H // n, W), x.dtype)
    nisa.dma_copy(dst=src, src=x)
    ncc.reduce_scatter(srcs=[src], dsts=[dst], replica_group=group, collective_dim=0,
                       op=nl.add)
    nisa.dma_copy(dst=out, src=dst)
    return out


@nki.jit
def exchange(x, group):
    src, dst, out = _hbm(x.shape, x.dtype), _hbm(x.shape, x.dtype), _hbm(x.shape, x.dtype)
    nisa.dma_copy(dst=src, src=x)
    ncc.all_to_all(srcs=[src], dsts=[dst], replica_group=group, collective_dim=0)
    nisa.dma_copy(dst=out, src=dst)
    return out


@nki.jit
def permute(x, pairs):
    src, dst, out = _hbm(x.shape, x.dtype), _hbm(x.shape, x.dtype), _hbm(x.shape, x.dtype)
    nisa.dma_copy(dst=src, src=x)
    nisa.dma_copy(dst=dst, src=x)
    ncc.collective_permute(srcs=[src], dsts=[dst], source_target_pairs=pairs)
    nisa.dma_copy(dst=out, src=dst)
    return out


@nki.jit
def whoami(table):
    # rank r copies row r of table: rank_id as a DMA scalar_offset
    _, W = table.shape
    out = _hbm((1, W), table.dtype)
    r = ncc.rank_id()
    nisa.dma_copy(dst=out, src=table.ap(pattern=[[W, 1], [1, W]], scalar_offset=r,
                                        indirect_dim=0))
    return out


@nki.jit
def maybe_reduce(x, group, join):
    # a rank with join=False never reaches the all_reduce: the others wait forever
    src, dst, out = _hbm(x.shape, x.dtype), _hbm(x.shape, x.dtype), _hbm(x.shape, x.dtype)
    nisa.dma_copy(dst=src, src=x)
    nisa.dma_copy(dst=dst, src=x)
    if join:
        ncc.all_reduce(srcs=[src], dsts=[dst], replica_group=group, op=nl.add)
    nisa.dma_copy(dst=out, src=dst)
    return out


@nki.jit
def reduce_then_gather(x, group, n, gather_first):
    # with gather_first on some ranks only, the first collectives differ: a mismatch
    H, W = x.shape
    src, red = _hbm(x.shape, x.dtype), _hbm(x.shape, x.dtype)
    gat, out = _hbm((H * n, W), x.dtype), _hbm((H * n, W), x.dtype)
    nisa.dma_copy(dst=src, src=x)
    if gather_first:
        ncc.all_gather(srcs=[src], dsts=[gat], replica_group=group, collective_dim=0)
        ncc.all_reduce(srcs=[src], dsts=[red], replica_group=group, op=nl.add)
    else:
        ncc.all_reduce(srcs=[src], dsts=[red], replica_group=group, op=nl.add)
        ncc.all_gather(srcs=[red], dsts=[gat], replica_group=group, collective_dim=0)
    nisa.dma_copy(dst=out, src=gat)
    return out
"""


def kernels(tmp_path_factory):
    """The module of SOURCE, imported from a file of its own."""
    path = tmp_path_factory.mktemp("collectives") / "cc_kernels.py"
    path.write_text(textwrap.dedent(SOURCE))
    spec = importlib.util.spec_from_file_location("cc_kernels", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def group(*lists):
    from nkirun.source.kernel.collectives import ReplicaGroup
    return ReplicaGroup([list(g) for g in lists])


def inputs(n: int, shape=(4, 8), dtype=np.float32, seed=0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32).astype(dtype) for _ in range(n)]


def summed(xs: list, dtype) -> np.ndarray:
    """The reference all-reduce: float32 sums in rank order, rounded once to dtype."""
    acc = xs[0].astype(np.float32)
    for x in xs[1:]:
        acc = acc + x.astype(np.float32)
    return acc.astype(dtype)


def bounded(fn):
    """fn() in a thread that must end (a hang fails the test instead of the suite)."""
    box: dict = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as e:  # (handed to the test)
            box["error"] = e
    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(HANG_GUARD_S)
    assert not t.is_alive(), "the multi-rank run hung"
    if "error" in box:
        raise box["error"]
    return box["value"]
