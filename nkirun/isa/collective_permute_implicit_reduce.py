"""nki.collectives.collective_permute_implicit_reduce — a ring step that sends op(src0,
src1) to the successor and receives the predecessor's into dst.

Facts (the NKI 0.6 page, https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/
generated/nki.collectives.collective_permute_implicit_reduce.html):
`collective_permute_implicit_reduce(srcs0_by_channel, srcs1_by_channel, dsts_by_channel,
replica_group, op, channel_ids=[0])`: each rank reduces its local sources with
op(srcs0[i], srcs1[i]), sends the result to its successor and receives its predecessor's
into dsts[i].

Readings: as collective_permute_implicit (the ring is the rank-list in its order, one
instruction per channel, channels consecutive from 0); op is computed in float32 (int64
for integers) and rounded once, to dst's dtype (isa/collective.py); an element unwritten
in src0 or src1 arrives unwritten.
"""
from __future__ import annotations

from nkirun.isa import collective as cc
from nkirun.isa.spec import INT, TILE, Bound, Param


def check(b: Bound):
    yield from cc.group_rules(b)
    yield from cc.memory_rules(b, "src0", "src1", "dst")
    yield from cc.channel_rules(b)
    a, c, dst = b.tile("src0"), b.tile("src1"), b.tile("dst")
    if not a.shape == c.shape == dst.shape:
        yield cc.shape_err(b, f"src1 has shape {list(c.shape)}; src0, src1 and dst have one "
                           "shape", a, dst)


def execute(b: Bound, m) -> None:
    rank = cc.seat().rank
    group = cc.my_list(b["replica_group"], rank) or (rank,)
    (v0, h0), (v1, h1) = cc.payload_of(m, b["src0"]), cc.payload_of(m, b["src1"])
    mine = (cc.reduce(b["op"], [v0, v1], b["dst"].dtype), cc.all_held([h0, h1]))
    parts = cc.meet(b, group, cc.describe(b, "src0", "src1", "dst", "replica_group", "op",
                                          "channel_id"), mine)
    values, held = parts[group.index(rank) - 1]
    cc.deliver(m, b["dst"], values, held)


def cycles(b: Bound, target) -> int:
    return cc.ring_ns(2, 2 * cc.nbytes(b["dst"]))


SPEC = cc.collective_spec(
    "collective_permute_implicit_reduce",
    "srcs0_by_channel srcs1_by_channel dsts_by_channel replica_group op",
    "E693 HBM or SBUF, one dtype, one shape; channels 0..3, consecutive from 0",
    "one step of dst's bytes",
    params=(
        Param("src0", TILE, required=True, buffers=cc.MEMORY, doc="op's left operand"),
        Param("src1", TILE, required=True, buffers=cc.MEMORY, doc="op's right operand"),
        Param("dst", TILE, required=True, out=True, buffers=cc.MEMORY,
              doc="op(src0, src1) of the predecessor"),
        cc.group_param(), cc.op_param(),
        Param("channel_id", INT, default=0, doc="the channel (0..3) this transfer uses"),
    ),
    summary="ring step of op(src0, src1): to the successor, the predecessor's into dst",
    semantics=("Each rank computes op(src0, src1) (float32, int64 for integers) and sends it "
               "to its successor in its rank-list; dst receives the predecessor's, rounded "
               "to dst's dtype."),
    execute=execute, cycles=cycles, check=check,
    example="- collective_permute_implicit_reduce: {src0: a, src1: a, dst: b, "
            "replica_group: [[0]], op: add}",
)
