"""nki.collectives.all_gather — every rank of a rank-list gets all their srcs, concatenated.

Facts (the NKI 0.6 page, https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/
generated/nki.collectives.all_gather.html): `all_gather(srcs, dsts, replica_group,
collective_dim)`; dst is the rank-list's srcs concatenated along collective_dim (0 on HBM,
0 or 1 on SBUF); HBM or SBUF, not mixed. The shared readings (matching, unwritten
elements, coalesced calls, cost): isa/collective.py.
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
        want = src.shape[:d] + (src.shape[d] * n,) + src.shape[d + 1:]
        if dst.shape != want:
            yield cc.shape_err(b, f"gathering {n} ranks along dim {d} needs dst {list(want)}",
                               src, dst)
    elif d < len(src.shape):
        yield cc.shape_err(b, "they must have the same number of dims", src, dst)


def execute(b: Bound, m) -> None:
    src, dst, d = b["src"], b["dst"], b["collective_dim"]
    group = cc.my_list(b["replica_group"], cc.seat().rank)
    parts = cc.meet(b, group or (cc.seat().rank,), cc.describe(b, "src", "dst",
                    "replica_group", "collective_dim"), cc.payload_of(m, src))
    values = np.concatenate([v for v, _ in parts], axis=d)
    helds = [h if h is not None else np.ones(v.shape, bool) for v, h in parts]
    held = None if all(h is None for _, h in parts) else np.concatenate(helds, axis=d)
    cc.deliver(m, dst, values, held)


def cycles(b: Bound, target) -> int:
    return cc.ring_ns(cc.ring_size(b), cc.nbytes(b["dst"]))


SPEC = cc.collective_spec(
    "all_gather", "srcs dsts replica_group collective_dim",
    "E693 HBM or SBUF, one dtype, dst = src x n along collective_dim",
    "n-1 steps of dst's bytes / n",
    params=(
        Param("src", TILE, required=True, buffers=cc.MEMORY, doc="this rank's part"),
        Param("dst", TILE, required=True, out=True, buffers=cc.MEMORY,
              doc="every rank's src of the rank-list, concatenated along collective_dim"),
        cc.group_param(), cc.dim_param(),
    ),
    summary="all-gather across the ranks of a rank-list (nki.collectives)",
    semantics=("Each rank's dst is the srcs of its rank-list's ranks, in the rank-list's "
               "order, concatenated along collective_dim. The k-th collective of a rank meets "
               "the k-th of the others of its rank-list; they must call the same one (E691) "
               "and all reach it (E692)."),
    execute=execute, cycles=cycles, check=check,
    example="- all_gather: {src: a, dst: b, replica_group: [[0]], collective_dim: 0}",
)
