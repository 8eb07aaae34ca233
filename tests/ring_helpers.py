"""Kernels of our own built on nki.collectives' implicit ring permutes (written to a file and
imported, so diagnostics name kernel lines), for tests/isa/test_collective_permute_implicit*.
The references they are compared with are plain NumPy: an all-gather is np.stack, a
reduce-scatter a float32 sum."""
from __future__ import annotations

import importlib.util

RING_SOURCE = """\
import nki
import nki.collectives as ncc
import nki.isa as nisa
import nki.language as nl


def _hbm(shape, dtype):
    return nl.ndarray(shape, dtype=dtype, buffer=nl.shared_hbm)


@nki.jit
def ring_gather(x, zeros, group, n):
    # an all-gather as a ring on C channels (x: C blocks of H x W; channel c moves block c):
    # at iteration i a rank holds the blocks of the rank that
    # collective_permute_implicit_current_processing_rank_id names, and stores them in its
    # row of out (rows, C, H, W); rows of other rank-lists keep zeros' values
    C, H, W = x.shape
    out = _hbm(zeros.shape, x.dtype)
    nisa.dma_copy(dst=out, src=zeros)
    bufs = [[_hbm((H, W), x.dtype) for _ in range(2)] for _ in range(C)]
    for c in range(C):
        nisa.dma_copy(dst=bufs[c][0], src=x[c])
    for i in range(n):
        for c in range(C):
            whose = ncc.collective_permute_implicit_current_processing_rank_id(
                iteration_id=i, replica_group=group, channel_id=c)
            nisa.dma_copy(dst=out.ap(pattern=[[W, H], [1, W]], offset=c * H * W,
                                     scalar_offset=whose, indirect_dim=0), src=bufs[c][i % 2])
        if i + 1 < n:
            ncc.collective_permute_implicit(
                srcs_by_channel=[[bufs[c][i % 2]] for c in range(C)],
                dsts_by_channel=[[bufs[c][(i + 1) % 2]] for c in range(C)],
                replica_group=group, channel_ids=list(range(C)))
    return out


@nki.jit
def ring_gather_runtime_loop(x, zeros, group, n):
    # the one-channel ring all-gather in a runtime loop: iteration_id is the loop's register
    H, W = x.shape
    out, buf, nxt = _hbm(zeros.shape, x.dtype), _hbm((H, W), x.dtype), _hbm((H, W), x.dtype)
    nisa.dma_copy(dst=out, src=zeros)
    nisa.dma_copy(dst=buf, src=x)
    for i in nl.dynamic_range(n):
        whose = ncc.collective_permute_implicit_current_processing_rank_id(
            iteration_id=i, replica_group=group)
        nisa.dma_copy(dst=out.ap(pattern=[[W, H], [1, W]], scalar_offset=whose,
                                 indirect_dim=0), src=buf)
        ncc.collective_permute_implicit(srcs_by_channel=[[buf]], dsts_by_channel=[[nxt]],
                                        replica_group=group)
        nisa.dma_copy(dst=buf, src=nxt)
    return out


@nki.jit
def ring_step(x, group, channels):
    # one ring step on `channels` channels: channel c moves x[c]
    C, H, W = x.shape
    src, dst = _hbm((C, H, W), x.dtype), _hbm((C, H, W), x.dtype)
    nisa.dma_copy(dst=src, src=x)
    nisa.dma_copy(dst=dst, src=x)
    ncc.collective_permute_implicit(srcs_by_channel=[[src[c]] for c in range(channels)],
                                    dsts_by_channel=[[dst[c]] for c in range(channels)],
                                    replica_group=group, channel_ids=list(range(channels)))
    return dst


@nki.jit
def ring_step_from(x, group, first_channel):
    src, dst = _hbm(x.shape, x.dtype), _hbm(x.shape, x.dtype)
    nisa.dma_copy(dst=src, src=x)
    ncc.collective_permute_implicit(srcs_by_channel=[[src]], dsts_by_channel=[[dst]],
                                    replica_group=group, channel_ids=[first_channel])
    return dst


@nki.jit
def ring_reduce_step(a, b, group, op):
    # one reducing ring step on as many channels as a has blocks
    C = a.shape[0]
    src0, src1 = _hbm(a.shape, a.dtype), _hbm(a.shape, a.dtype)
    dst = _hbm(a.shape, a.dtype)
    nisa.dma_copy(dst=src0, src=a)
    nisa.dma_copy(dst=src1, src=b)
    ncc.collective_permute_implicit_reduce(
        srcs0_by_channel=[[src0[c]] for c in range(C)],
        srcs1_by_channel=[[src1[c]] for c in range(C)],
        dsts_by_channel=[[dst[c]] for c in range(C)], replica_group=group, op=op,
        channel_ids=list(range(C)))
    return dst


@nki.jit
def ring_step_or_reduce(x, group, reduce):
    # reduce on some ranks only: the ranks call different collectives
    src, dst = _hbm(x.shape, x.dtype), _hbm(x.shape, x.dtype)
    nisa.dma_copy(dst=src, src=x)
    if reduce:
        ncc.collective_permute_implicit_reduce(srcs0_by_channel=[[src]],
                                               srcs1_by_channel=[[src]],
                                               dsts_by_channel=[[dst]], replica_group=group,
                                               op=nl.add)
    else:
        ncc.collective_permute_implicit(srcs_by_channel=[[src]], dsts_by_channel=[[dst]],
                                        replica_group=group)
    return dst


@nki.jit
def ring_reduce_scatter(x, zeros, group, n):
    # x: n chunks of H x W. At step s a rank adds chunk `whose(s + 1)` of its x to the
    # partial sum it received and passes it on; after n - 1 steps it holds the partial sum
    # of its own chunk over the other ranks, and adds its own chunk `whose(0)`.
    N, H, W = x.shape
    acc = [_hbm((H, W), x.dtype) for _ in range(2)]
    part, out = _hbm((H, W), x.dtype), _hbm((H, W), x.dtype)
    nisa.dma_copy(dst=acc[0], src=zeros)
    for s in range(n - 1):
        whose = ncc.collective_permute_implicit_current_processing_rank_id(
            iteration_id=s + 1, replica_group=group)
        nisa.dma_copy(dst=part, src=x.ap(pattern=[[W, H], [1, W]], scalar_offset=whose,
                                         indirect_dim=0))
        ncc.collective_permute_implicit_reduce(
            srcs0_by_channel=[[part]], srcs1_by_channel=[[acc[s % 2]]],
            dsts_by_channel=[[acc[(s + 1) % 2]]], replica_group=group, op=nl.add)
    mine = ncc.collective_permute_implicit_current_processing_rank_id(
        iteration_id=0, replica_group=group)
    a = nl.ndarray((H, W), dtype=x.dtype, buffer=nl.sbuf)
    b = nl.ndarray((H, W), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=acc[(n - 1) % 2])
    nisa.dma_copy(dst=b, src=x.ap(pattern=[[W, H], [1, W]], scalar_offset=mine,
                                  indirect_dim=0))
    nisa.tensor_tensor(dst=a, data1=a, data2=b, op=nl.add)
    nisa.dma_copy(dst=out, src=a)
    return out
"""


def ring_kernels(tmp_path_factory):
    """The module of RING_SOURCE, imported from a file of its own."""
    path = tmp_path_factory.mktemp("ring") / "cc_ring.py"
    path.write_text(RING_SOURCE)
    spec = importlib.util.spec_from_file_location("cc_ring", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
