"""nki.collectives.reduce_scatter — the reduction of a rank-list's srcs, split among them.

Facts (the NKI 0.6 page, https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/
generated/nki.collectives.reduce_scatter.html): `reduce_scatter(srcs, dsts, replica_group,
collective_dim, op)`; src is split into n chunks along collective_dim and the rank at
position i of its rank-list gets the reduction of every rank's chunk i. The shared readings
(matching, the reduction's order and precision, unwritten elements, cost):
isa/collective.py.
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
    if d < len(src.shape) and len(src.shape) == len(dst.shape):
        want = src.shape[:d] + (src.shape[d] // n,) + src.shape[d + 1:]
        if src.shape[d] % n or dst.shape != want:
            yield cc.shape_err(b, f"scattering over {n} ranks along dim {d} needs src's dim "
                               f"{d} to be {n} x dst's (dst {list(want)})", src, dst)
    elif d < len(src.shape):
        yield cc.shape_err(b, "they must have the same number of dims", src, dst)


def execute(b: Bound, m) -> None:
    src, dst, d = b["src"], b["dst"], b["collective_dim"]
    rank = cc.seat().rank
    group = cc.my_list(b["replica_group"], rank) or (rank,)
    parts = cc.meet(b, group, cc.describe(b, "src", "dst", "replica_group", "collective_dim",
                                          "op"), cc.payload_of(m, src))
    me, n = group.index(rank), len(group)
    chunk = [np.array_split(v, n, axis=d)[me] for v, _ in parts]
    helds = [None if h is None else np.array_split(h, n, axis=d)[me] for _, h in parts]
    cc.deliver(m, dst, cc.reduce(b["op"], chunk, dst.dtype), cc.all_held(helds))


def cycles(b: Bound, target) -> int:
    return cc.ring_ns(cc.ring_size(b), cc.nbytes(b["src"]))


SPEC = cc.collective_spec(
    "reduce_scatter", "srcs dsts replica_group collective_dim op",
    "E693 HBM or SBUF, one dtype, src = dst x n along collective_dim",
    "n-1 steps of src's bytes / n",
    params=(
        Param("src", TILE, required=True, buffers=cc.MEMORY,
              doc="this rank's values, n chunks along collective_dim"),
        Param("dst", TILE, required=True, out=True, buffers=cc.MEMORY,
              doc="the reduction of every rank's chunk at this rank's position"),
        cc.group_param(), cc.dim_param(), cc.op_param(),
    ),
    summary="reduce-scatter across the ranks of a rank-list (nki.collectives)",
    semantics=("src is n chunks along collective_dim (n: the rank-list's size); the rank at "
               "position i gets op over every rank's chunk i, folded in the rank-list's "
               "order in float32 (int64 for integers), rounded once to dst's dtype."),
    execute=execute, cycles=cycles, check=check,
    example="- reduce_scatter: {src: a, dst: b, replica_group: [[0]], collective_dim: 0, "
            "op: add}",
)
