"""nki.isa.memset — fill a tile with one value, on the Vector (default) or GpSimd engine
(nki-reference.md §1.11)."""
from __future__ import annotations

import numpy as np

from .spec import ENUM, SCALAR, TILE, Bound, InstructionDef, Param, common_tail


def execute(b: Bound, m) -> None:
    dst = b["dst"]
    m.write(dst, np.full(dst.shape, b["value"], np.float64 if dst.dtype.is_int else np.float32),
            b.get("dtype"), b.mask)


def engine_of(b: Bound) -> str:
    return "gpsimd" if b.get("engine") == "gpsimd" else "vector"


def cycles(b: Bound, target) -> int:
    dst = b["dst"]
    n = dst.free_size
    if b["value"] == 0 and dst.dtype.name in ("bfloat16", "float16"):
        n = n // 2  # [OLD-ISA]: half the cycles for a zero fill of 2-byte floats
    return max(target.min_ii, n)


SPEC = InstructionDef(
    name="memset",
    engine="vector",
    params=(
        Param("dst", TILE, required=True, out=True, doc="tile to fill"),
        Param("value", SCALAR, required=True, doc="the fill value (cast to dst's dtype)"),
        Param("engine", ENUM, default="unknown", choices=("unknown", "vector", "gpsimd"),
              doc="vector (default) or gpsimd"),
        *common_tail(),
    ),
    summary="fill a tile with a constant",
    semantics="Writes `value`, cast to dst's dtype, into every element of dst.",
    cost_formula="max(MIN_II, N) Vector cycles; max(MIN_II, N/2) for a 0 fill of bf16/fp16",
    execute=execute,
    cycles=cycles,
    engine_of=engine_of,
    source="nki-reference.md §1.11 (memset)",
    example="- memset: {dst: acc, value: 0.0}",
)
