"""nki.isa.iota — GpSimd engine (the nki.isa.iota documentation).

dst[c, i] = offset + c*channel_multiplier + pattern(i), computed in int32 and cast to dst's
dtype; the pattern is the same front-padded 4-D [step, num] walk as affine_select's.
"""
from __future__ import annotations

import numpy as np

from nkirun.isa.common import pattern_rules, pattern_values
from nkirun.isa.removed import NKI_020
from nkirun.isa.spec import DTYPE, INT, MASK, PATTERN, TILE, Bound, InstructionDef, NkiApi, Param


def check(b: Bound):
    yield from pattern_rules(b, ("E160", "E161", "E162", "E163"))


def execute(b: Bound, m) -> None:
    dst = b["dst"]
    values = pattern_values(b["pattern"], b["offset"], b["channel_multiplier"], dst.partitions)
    # check() keeps every value within int32; m.write casts int32 -> dst (floats RNE,
    # integers saturate)
    m.write(dst, values.astype(np.int32).reshape(dst.shape), b.get("dtype"), b.mask)


def cycles(b: Bound, target) -> int:
    return target.gpsimd_start + b["dst"].free_size


SPEC = InstructionDef(
    name="iota",
    engine="gpsimd",
    params=(
        Param("dst", TILE, required=True, out=True, buffers=frozenset({"sbuf"}),
              doc="output tile in SBUF (§1.10: SBUF only)"),
        Param("pattern", PATTERN, required=True,
              doc="[[step, num], ...], up to 4 pairs (w, z, y, x), padded at the front"),
        Param("offset", INT, default=0, doc="int32 added to every value"),
        Param("channel_multiplier", INT, default=0,
              doc="int32 multiplier of the partition (channel) index"),
        Param("mask", MASK, doc="legacy predicate over dst's indices (the nki.isa.iota documentation; "
                                "docs/masks.md); masked-off dst elements keep their value"),
        Param("dtype", DTYPE, doc="legacy iota(expr, dtype): cast the int32 values to this "
                                  "dtype first (dst's own dtype applies last)"),
    ),
    summary="fill a tile with an affine function of the partition and free indices",
    semantics=(
        "Writes offset + partition*channel_multiplier + w*step_w + z*step_z + y*step_y + "
        "x*step_x, computed in int32, into each element (the pattern padded at the front "
        "to 4-D, x fastest), cast to dst's dtype."),
    cost_formula="150 + N GpSimd cycles, N = elements per partition of dst",
    execute=execute,
    cycles=cycles,
    check=check,
    source="the nki.isa.iota documentation",
    example="- iota: {dst: idx, pattern: [[1, 512]], offset: 0, channel_multiplier: 512}",
    nki=NkiApi("dst pattern offset=0 channel_multiplier=0",
               legacy=("index_expression",),  # pre-0.2 `iota(expr, dtype)`
               removed=(("expr", NKI_020, "give the affine expression as pattern, offset and "
                                          "channel_multiplier"),)),
)
