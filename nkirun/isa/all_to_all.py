"""nki.collectives.all_to_all — each rank sends its i-th chunk to the i-th rank of its list.

Facts (the NKI 0.6 page, https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/
generated/nki.collectives.all_to_all.html): `all_to_all(srcs, dsts, replica_group,
collective_dim)`: src is split into n chunks along collective_dim; chunk i goes to the
rank at position i; dst (src's shape) holds, at chunk j, what the rank at position j sent
this one. The shared readings (matching, unwritten elements, cost): isa/collective.py.
"""
from __future__ import annotations

import numpy as np

from nkirun.isa import collective as cc
from nkirun.isa.spec import TILE, Bound, Param


def check(b: Bound):
    yield from cc.group_rules(b)
    yield from cc.memory_rules(b, "src", "dst")
    yield from cc.dim_rules(b)
    src, dst, d, n = b.tile("src"), b.tile("dst"), b["collective_dim"], cc.ring_size(b)
    if src.shape != dst.shape:
        yield cc.shape_err(b, "all_to_all writes dst in src's shape", src, dst)
    elif d < len(src.shape) and src.shape[d] % n:
        yield cc.shape_err(b, f"dim {d} ({src.shape[d]}) must split into {n} equal chunks",
                           src, dst)


def execute(b: Bound, m) -> None:
    src, dst, d = b["src"], b["dst"], b["collective_dim"]
    rank = cc.seat().rank
    group = cc.my_list(b["replica_group"], rank) or (rank,)
    parts = cc.meet(b, group, cc.describe(b, "src", "dst", "replica_group", "collective_dim"),
                    cc.payload_of(m, src))
    me, n = group.index(rank), len(group)
    values = np.concatenate([np.array_split(v, n, axis=d)[me] for v, _ in parts], axis=d)
    held = None
    if any(h is not None for _, h in parts):
        held = np.concatenate([np.array_split(np.ones(v.shape, bool) if h is None else h, n,
                                              axis=d)[me] for v, h in parts], axis=d)
    cc.deliver(m, dst, values, held)


def cycles(b: Bound, target) -> int:
    return cc.ring_ns(cc.ring_size(b), cc.nbytes(b["src"]))


SPEC = cc.collective_spec(
    "all_to_all", "srcs dsts replica_group collective_dim",
    "E693 HBM or SBUF, one dtype, one shape split into n chunks",
    "n-1 steps of src's bytes / n",
    params=(
        Param("src", TILE, required=True, buffers=cc.MEMORY,
              doc="n chunks along collective_dim, chunk i for the rank at position i"),
        Param("dst", TILE, required=True, out=True, buffers=cc.MEMORY,
              doc="chunk j: what the rank at position j sent this rank"),
        cc.group_param(), cc.dim_param(),
    ),
    summary="all-to-all exchange of chunks within a rank-list (nki.collectives)",
    semantics=("src and dst are n chunks along collective_dim (n: the rank-list's size); "
               "chunk j of the dst of the rank at position i is chunk i of the src of the "
               "rank at position j."),
    execute=execute, cycles=cycles, check=check,
    example="- all_to_all: {src: a, dst: b, replica_group: [[0]], collective_dim: 0}",
)
