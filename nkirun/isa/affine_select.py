"""nki.isa.affine_select — GpSimd engine (the nki.isa.affine_select documentation).

dst[c, i] = on_true_tile[c, i] if cmp_op(offset + c*channel_multiplier + pattern(i), 0)
else on_false_value, with the free index i walking the (front-padded) 4-D pattern.

Readings of the page:
* Signature: the page lists `offset` and `channel_multiplier` without defaults; the new API
  moved `offset` to a keyword with default 0 (the nki.isa.affine_select documentation, [MIG] 0.3.0), so nkirun
  makes `offset` optional (0) and `channel_multiplier` required. `name=` is not accepted.
* cmp_op: the page only says "comparison operator" (default np.equal), so all six
  comparisons are accepted (equal, not_equal, less, less_equal, greater, greater_equal).
* Data types: selected elements go through FP32 only "if the data type of on_true_tile
  differs from that of dst"; with equal dtypes they are copied unchanged (this matters for
  int32/uint32 beyond 2^24). on_false_value is a float32 cast to dst's dtype.
* The page's "dst has the same size in every dimension" remark is illustrative: only the
  element count per partition has to match the pattern.
"""
from __future__ import annotations

import numpy as np

from nkirun.hw import dtypes as dt
from nkirun.hw.alu import COMPARISONS
from nkirun.isa.common import (COMPARE_UFUNCS, flat, float32_scalar, pattern_rules, pattern_terms,
                     same_shape)
from nkirun.isa.removed import NKI_020
from nkirun.isa.spec import (INT, MASK, OP, PATTERN, SCALAR, TILE, Bound, InstructionDef, NkiApi,
                             Param)

SBUF = frozenset({"sbuf"})  # page 002: "The output dst tile must be in SBUF" (input too)

PARAMS = (
    Param("dst", TILE, required=True, out=True, buffers=SBUF,
          doc="output tile in SBUF (same partitions and elements per partition as the input)"),
    Param("pattern", PATTERN, required=True,
          doc="[[step, num], ...], up to 4 pairs (w, z, y, x), padded at the front with [0, 1]"),
    Param("offset", INT, default=0, doc="int32 added to every affine value"),
    Param("channel_multiplier", INT, required=True,
          doc="int32 multiplier of the partition (channel) index"),
    Param("on_true_tile", TILE, required=True, buffers=SBUF,
          doc="input tile in SBUF, copied where the predicate holds"),
    Param("on_false_value", SCALAR, required=True,
          doc="float32 value written where the predicate does not hold"),
    Param("cmp_op", OP, default="equal", choices=COMPARISONS,
          doc="compares each affine value with 0 (default equal)"),
    Param("mask", MASK, doc="legacy predicate over dst's indices (the nki.isa.affine_select documentation; "
                            "docs/masks.md); masked-off dst elements keep their value"),
)


def check(b: Bound):
    yield from same_shape(b, "dst", "on_true_tile")
    yield from pattern_rules(b, ("E120", "E121", "E122", "E123"))
    yield from float32_scalar(b, "on_false_value", "E124")  # "must be float32"


def execute(b: Bound, m) -> None:
    src, dst = b["on_true_tile"], b["dst"]
    part, free = pattern_terms(b["pattern"], b["offset"], b["channel_multiplier"],
                               dst.partitions)
    # part + free `cmp` 0  <=>  free `cmp` -part (exact in int64): compares broadcast
    # (1, N) against (P, 1) without building the (P, N) values
    keep = COMPARE_UFUNCS[b["cmp_op"]](free, -part)
    fill = np.float32(b["on_false_value"])
    x = flat(m.read(src))
    # keep follows an affine bound, in long runs: `regular` (machine.select_into)
    if src.dtype.name == dst.dtype.name:  # selected elements: a raw copy
        m.write_select(dst, keep, x, dt.cast(fill, dst.dtype), None, b.mask, regular=True)
    else:  # through FP32, cast to dst by the write
        m.write_select(dst, keep, dt.to_f32(x), fill, None, b.mask, regular=True)


def cycles(b: Bound, target) -> int:
    return target.gpsimd_start + b["dst"].free_size


SPEC = InstructionDef(
    name="affine_select",
    engine="gpsimd",
    params=PARAMS,
    summary="keep elements where an affine function of (partition, free index) compares "
            "true with 0, else a constant",
    semantics=(
        "Generates offset + partition*channel_multiplier + w*step_w + z*step_z + y*step_y + "
        "x*step_x in int32 for every element (the pattern padded at the front to 4-D, x "
        "fastest) and compares it with 0 using cmp_op. Where it holds the element of "
        "on_true_tile is copied (through FP32 only if the dtypes differ), elsewhere the "
        "float32 on_false_value cast to dst's dtype. Typical use: a causal mask."),
    cost_formula="GPSIMD_START + N GpSimd cycles, GPSIMD_START ~ 150, N = elements per "
                 "partition",
    execute=execute,
    cycles=cycles,
    check=check,
    source="the nki.isa.affine_select documentation; cost: the nki.isa.affine_select documentation [OLD-ISA]",
    example="""\
- affine_select:
    dst: masked
    pattern: [[-1, 128]]
    offset: 0
    channel_multiplier: 1
    on_true_tile: scores
    on_false_value: fp32.min
    cmp_op: greater_equal""",
    nki=NkiApi("dst pattern channel_multiplier on_true_tile on_false_value cmp_op=equal "
               "offset=0", legacy=("predicate",),  # pre-0.2 `pred=` (a boolean array)
               removed=(("pred", NKI_020, "give the affine predicate as pattern, "
                                          "channel_multiplier, offset and cmp_op"),)),
)
