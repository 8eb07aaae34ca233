"""nki.collectives.collective_permute_implicit — one step of a ring: each rank sends src to
its successor in its rank-list and receives its predecessor's into dst.

Facts (the NKI 0.6 page, https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/
generated/nki.collectives.collective_permute_implicit.html):
`collective_permute_implicit(srcs_by_channel, dsts_by_channel, replica_group,
channel_ids=[0])`: each rank sends to its successor and receives from its predecessor in
the ring; one tensor per channel; channel_ids consecutive from 0; at most 4 channels (2
for replica groups that are not all of a node's devices). Which rank's data arrived:
collective_permute_implicit_current_processing_rank_id.

Readings: the ring is the rank-list in its order (the successor of its last rank is its
first); a call is one instruction per channel (source/kernel/collectives.py checks the
channel_ids), each its own meeting, every channel the same ring. nkirun knows no node
topology: the 2-channel limit of smaller groups is not checked. The shared readings
(matching, unwritten elements, cost): isa/collective.py.
"""
from __future__ import annotations

from nkirun.isa import collective as cc
from nkirun.isa.spec import INT, TILE, Bound, Param


def check(b: Bound):
    yield from cc.group_rules(b)
    yield from cc.memory_rules(b, "src", "dst")
    yield from cc.channel_rules(b)
    src, dst = b.tile("src"), b.tile("dst")
    if src.shape != dst.shape:
        yield cc.shape_err(b, "a ring step moves src into a dst of the same shape", src, dst)


def execute(b: Bound, m) -> None:
    src, dst = b["src"], b["dst"]
    rank = cc.seat().rank
    group = cc.my_list(b["replica_group"], rank) or (rank,)
    parts = cc.meet(b, group, cc.describe(b, "src", "dst", "replica_group", "channel_id"),
                    cc.payload_of(m, src))
    values, held = parts[group.index(rank) - 1]  # the predecessor's (the last's, for the first)
    cc.deliver(m, dst, values, held)


def cycles(b: Bound, target) -> int:
    return cc.ring_ns(2, 2 * cc.nbytes(b["src"]))  # one step of the whole src


SPEC = cc.collective_spec(
    "collective_permute_implicit", "srcs_by_channel dsts_by_channel replica_group",
    "E693 HBM or SBUF, one dtype, one shape; channels 0..3, consecutive from 0",
    "one step of src's bytes",
    params=(
        Param("src", TILE, required=True, buffers=cc.MEMORY,
              doc="what this rank sends to its successor"),
        Param("dst", TILE, required=True, out=True, buffers=cc.MEMORY,
              doc="what its predecessor sent"),
        cc.group_param(),
        Param("channel_id", INT, default=0, doc="the channel (0..3) this transfer uses"),
    ),
    summary="one ring step: src to the successor, the predecessor's src into dst",
    semantics=("Within each rank-list (a ring in its order), the rank at position i "
               "receives into dst the src of the rank at position i-1 (the first receives "
               "the last's). The k-th collective of a rank meets the k-th of the others of "
               "its rank-list (E691, E692)."),
    execute=execute, cycles=cycles, check=check,
    example="- collective_permute_implicit: {src: a, dst: b, replica_group: [[0]]}",
)
