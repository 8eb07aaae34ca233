"""nki.isa.max8 — the 8 largest values of each partition, in descending order.

Facts (the nki.isa.max8 documentation; used by the examples of the nki.isa.max8 documentation):
* src: up to 5-D, 8..16,384 elements per partition, free dims flattened; the values are
  converted to float32; the result is a (P, 8) tile with the same partitions as src.
* cost: "N engine cycles", N = elements per partition of src (the legacy docstring has no
  MIN_II term here, so nkirun uses N as written).
* the engine is not named (§1.12, §8): Vector is assumed, like the sibling 8-wide
  instructions nc_match_replace8 and nc_find_index8.
* mask (page 003, example 3): the predicate is written over src's indices; masked-off src
  elements take no part, and a partition with nothing selected keeps its dst row.

Readings where the docs are silent (the same as tests/reference.py):
* NaN counts as larger than +inf, so a NaN in a partition comes out first.
* -0.0 and +0.0 are ranked as -0.0 < +0.0 (a total order over the bit patterns), so the
  output never depends on where the zeros sit in src.
"""
from __future__ import annotations

import numpy as np

from nkirun.isa.mask import MaskError, evaluate, hide, rows_mask
from nkirun.isa.fast.top8 import top8
from nkirun.isa.common import flat
from nkirun.isa.nki_api import per_partition
from nkirun.isa.spec import MASK, TILE, Bound, InstructionDef, NkiApi, Param, common_tail, out_dtype

K = 8  # values per partition
MAX_N = 16384  # §1.12: "between 8 and 16,384 inclusive"
MAX_DIMS = 5  # §1.12 (legacy API): src up to 5-D

PARAMS = (
    Param("dst", TILE, required=True, out=True, doc="(P, 8) tile receiving the 8 largest values"),
    Param("src", TILE, required=True,
          doc="tile to search: up to 5-D, 8..16384 elements per partition"),
    Param("mask", MASK, doc="predicate over src's indices (page 003, example 3): only the "
                            "selected elements take part; a partition with none keeps dst"),
    *common_tail(mask=False),
)


def check(b: Bound):
    src, dst = b.tile("src"), b.tile("dst")
    if len(src.shape) > MAX_DIMS:
        yield b.err("E151", f"src has {len(src.shape)} dimensions; at most {MAX_DIMS} "
                    "(partition + 4 free) allowed", "src")
    if not K <= src.free_size <= MAX_N:
        yield b.err("E150", f"src has {src.free_size} elements per partition; "
                    f"{K}..{MAX_N} allowed", "src",
                    hint="split the free axis into chunks of at most 16384" if src.free_size
                    > MAX_N else "max8 needs at least 8 elements per partition")
    if dst.free_size != K:
        yield b.err("E152", f"dst must hold 8 elements per partition, shape (P, 8); got "
                    f"{list(dst.shape)}", "dst", hint="e.g. a (P, 8) tile or t[:, 0:8]")
    if b.get("mask") is not None:
        try:
            sel = evaluate(b["mask"], src.shape).reshape(src.partitions, -1).sum(axis=1)
        except MaskError:
            return  # reported as E045 by the generic mask compiler
        short = np.flatnonzero((sel > 0) & (sel < K))
        if short.size:
            p = int(short[0])
            yield b.err("E153", f"the mask leaves partition {p} with {int(sel[p])} element(s) "
                        "of src; a selected partition needs at least 8", "mask",
                        hint="widen the mask's free range, or exclude the partition")


def definition(x: np.ndarray) -> np.ndarray:
    """(P, N) float32 -> (P, 8): each partition's 8 largest values, largest first, NaN
    above everything and -0.0 below +0.0 — the order `fast.top8.top8` must give."""
    def rank(f):  # NaN above all (by payload), then value, then +0.0 above -0.0
        if np.isnan(f):
            return (1, int(np.float32(f).view(np.uint32)) & 0x7FFFFFFF, 0.0, 0)
        return (0, 0, float(f), int(not np.signbit(f)))
    return np.array([sorted(row, key=rank, reverse=True)[:K] for row in x], np.float32)


def execute(b: Bound, m) -> None:
    dst = b["dst"]
    x = np.ascontiguousarray(flat(m.read_f32(b["src"])))
    x = hide(x, b.mask, -np.inf)  # masked-off elements rank last; >= 8 remain (E153)
    m.write(dst, top8(x).reshape(dst.shape), out_dtype(b), rows_mask(b.mask, dst.shape))


def cycles(b: Bound, target) -> int:
    return b["src"].free_size  # "N engine cycles" (§1.12), no MIN_II term in the source


SPEC = InstructionDef(
    name="max8",
    engine="vector",
    params=PARAMS,
    summary="the 8 largest values of each partition, in descending order",
    semantics=(
        "Flattens src's free dimensions and writes the 8 largest values of each partition to "
        "dst in descending order, compared as float32 and cast to dst's dtype. NaN ranks above "
        "+inf and -0.0 below +0.0 (undocumented; nkirun's choice). With a mask (over src's "
        "indices) only the selected elements take part, and unselected partitions keep dst."),
    cost_formula="N engine cycles, N = elements per partition of src",
    execute=execute,
    cycles=cycles,
    check=check,
    mask_on="src",
    cost_note="the docs give 'N engine cycles' without a MIN_II term and without naming the "
              "engine; Vector is assumed (the nki.isa.max8 documentation)",
    source="the nki.isa.max8 documentation; the nki.isa.max8 documentation examples",
    example="- max8: {dst: top, src: t}",
    nki=NkiApi("dst src", result=per_partition(8)),  # pre-0.2: the (P, 8) maxima
)
