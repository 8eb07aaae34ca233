"""nki.collectives.collective_permute — send src to explicitly named ranks.

Facts (the NKI 0.6 page, https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/
generated/nki.collectives.collective_permute.html): `collective_permute(srcs, dsts,
source_target_pairs)`: each (source, target) pair sends the source rank's src to the target
rank's dst; tensors on HBM only; one tensor per list.

Readings: the ranks that meet are those the pairs name (a rank named by none meets no
one, and its dst is left alone); a rank is the target of at most one pair (E690), and a
rank no pair targets keeps its dst. The shared readings (matching, unwritten elements,
cost): isa/collective.py.
"""
from __future__ import annotations

from nkirun.isa import collective as cc
from nkirun.isa.spec import TILE, Bound, Param

HBM = frozenset({"hbm"})


def check(b: Bound):
    pairs = b["source_target_pairs"]
    if any(len(p) != 2 or min(p) < 0 for p in pairs):
        yield b.err("E690", f"source_target_pairs {list(map(list, pairs))}: each entry is a "
                    "(source, target) pair of ranks >= 0", "source_target_pairs")
    elif len({t for _, t in pairs}) != len(pairs):
        yield b.err("E690", f"source_target_pairs {list(map(list, pairs))} sends two srcs to "
                    "one rank", "source_target_pairs",
                    hint="name each target rank once: [(0, 1), (1, 0)]")
    yield from cc.memory_rules(b, "src", "dst")
    src, dst = b.tile("src"), b.tile("dst")
    if src.shape != dst.shape:
        yield cc.shape_err(b, "collective_permute moves src into dst of the same shape",
                           src, dst)


def participants(b: Bound, rank: int) -> tuple:
    ranks = sorted({r for p in b["source_target_pairs"] for r in p})
    return tuple(ranks) if rank in ranks else (rank,)


def execute(b: Bound, m) -> None:
    src, dst = b["src"], b["dst"]
    rank = cc.seat().rank
    group = participants(b, rank)
    parts = cc.meet(b, group, cc.describe(b, "src", "dst", "source_target_pairs"),
                    cc.payload_of(m, src))
    source = next((s for s, t in b["source_target_pairs"] if t == rank), None)
    if source is not None and source in group:
        values, held = parts[group.index(source)]
        cc.deliver(m, dst, values, held)


def cycles(b: Bound, target) -> int:
    return cc.ring_ns(2, 2 * cc.nbytes(b["src"]))  # one step of the whole src


SPEC = cc.collective_spec(
    "collective_permute", "srcs dsts source_target_pairs",
    "E693 HBM, one dtype, one shape", "one step of src's bytes",
    params=(
        Param("src", TILE, required=True, buffers=HBM, doc="what this rank sends"),
        Param("dst", TILE, required=True, out=True, buffers=HBM,
              doc="what this rank receives (left alone when no pair targets it)"),
        Param("source_target_pairs", cc.RANK_LISTS, required=True,
              doc="[(source, target), ...]: source's src goes to target's dst"),
    ),
    summary="send src to explicitly paired ranks (nki.collectives)",
    semantics=("For each (source, target) pair the target's dst receives the source's src. "
               "The ranks the pairs name meet (the k-th collective of each); a rank no pair "
               "targets keeps its dst."),
    execute=execute, cycles=cycles, check=check,
    example="- collective_permute: {src: a, dst: b, source_target_pairs: [[0, 0]]}",
)
