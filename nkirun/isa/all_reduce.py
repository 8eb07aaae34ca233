"""nki.collectives.all_reduce — every rank of a rank-list gets the reduction of their srcs.

Facts (the NKI 0.6 page, https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/
generated/nki.collectives.all_reduce.html): `all_reduce(srcs, dsts, replica_group, op)`,
op one of nl.add, nl.minimum, nl.maximum; HBM or SBUF, not mixed. The shared readings
(matching, the reduction's order and precision, unwritten elements, cost):
isa/collective.py.
"""
from __future__ import annotations

from nkirun.isa import collective as cc
from nkirun.isa.spec import TILE, Bound, Param


def check(b: Bound):
    yield from cc.group_rules(b)
    yield from cc.memory_rules(b, "src", "dst")
    src, dst = b.tile("src"), b.tile("dst")
    if src.shape != dst.shape:
        yield cc.shape_err(b, "all_reduce writes dst in src's shape", src, dst)


def execute(b: Bound, m) -> None:
    src, dst = b["src"], b["dst"]
    rank = cc.seat().rank
    parts = cc.meet(b, cc.my_list(b["replica_group"], rank) or (rank,),
                    cc.describe(b, "src", "dst", "replica_group", "op"), cc.payload_of(m, src))
    values = cc.reduce(b["op"], [v for v, _ in parts], dst.dtype)
    cc.deliver(m, dst, values, cc.all_held([h for _, h in parts]))


def cycles(b: Bound, target) -> int:
    return cc.ring_ns(cc.ring_size(b), cc.nbytes(b["dst"]), rounds=2)


SPEC = cc.collective_spec(
    "all_reduce", "srcs dsts replica_group op",
    "E693 HBM or SBUF, one dtype, dst in src's shape",
    "2(n-1) steps (reduce-scatter then all-gather)",
    params=(
        Param("src", TILE, required=True, buffers=cc.MEMORY, doc="this rank's values"),
        Param("dst", TILE, required=True, out=True, buffers=cc.MEMORY,
              doc="the reduction of the rank-list's srcs (src's shape)"),
        cc.group_param(), cc.op_param(),
    ),
    summary="all-reduce across the ranks of a rank-list (nki.collectives)",
    semantics=("Each rank's dst is op over its rank-list's srcs, elementwise, folded in the "
               "rank-list's order in float32 (int64 for integer dtypes) and rounded once to "
               "dst's dtype. The k-th collective of a rank meets the k-th of the others of "
               "its rank-list (E691, E692)."),
    execute=execute, cycles=cycles, check=check,
    example="- all_reduce: {src: a, dst: b, replica_group: [[0]], op: add}",
)
