"""nki.isa.memset — fill a tile with one value, on the Vector (default) or GpSimd engine
(the nki.isa.memset documentation)."""
from __future__ import annotations

import numpy as np

from nkirun.hw.dtypes import filler, store_cast
from nkirun.isa.spec import (ENUM, INT_LIST, SCALAR, TILE, Bound, InstructionDef, NkiApi, Param,
                             common_tail)


def check(b: Bound):
    # NKI's memset(shape=..., value, dtype) returns a new tile; nkirun writes it through dst
    # (program-format.md), so `shape` (as in the nki.isa.memset documentation's examples) only has to agree
    shape, dst = b.get("shape"), b.tile("dst")
    if dst is not None and dst.dtype.packed > 1 and b["value"] != 0:
        # NKI 0.6 memset: "For x4 packed types ... only value=0 is supported"
        yield b.err("E492", f"value {b['value']!r} cannot fill the x4-packed {dst.dtype.name} "
                    f"tile `{dst.decl.name}`; only 0 is supported", "value",
                    hint="fill with 0, or quantize values with quantize_mx")
    if shape is None or dst is None:
        return
    n = int(np.prod(shape[1:], dtype=np.int64))
    if any(s < 1 for s in shape) or shape[0] != dst.partitions or n != dst.free_size:
        yield b.err("E170", f"shape {list(shape)} does not match dst {list(dst.shape)}",
                    "shape", hint="give dst's shape (same partitions and elements per "
                                  "partition), or leave shape out: dst sets it")


def execute(b: Bound, m) -> None:
    dst = b["dst"]
    m.write(dst, np.full(dst.shape, b["value"], np.float64 if dst.dtype.is_int else np.float32),
            b.get("dtype"), b.mask)


def plan(b: Bound):
    """runner/plan.py's form: the fill value cast once as Machine.write casts it, then
    copied into dst's fixed view (no mask)."""
    if b.mask is not None:
        return None
    dst = b["dst"]

    def build(view):
        d = view(dst)
        value = np.full((1,), b["value"], np.float64 if dst.dtype.is_int else np.float32)
        fill = store_cast(value, dst.dtype, b.get("dtype"))
        return None if d is None else filler(d, fill)
    return build


def engine_of(b: Bound) -> str:
    return "gpsimd" if b.get("engine") == "gpsimd" else "vector"


def cycles(b: Bound, target) -> int:
    dst = b["dst"]
    n = dst.free_size
    if b["value"] == 0 and dst.dtype.name in ("bfloat16", "float16"):
        n = n // 2  # [OLD-ISA]: half the cycles for a zero fill of 2-byte floats
    return max(target.min_ii, n)


def _named_shape(values, first):
    """The pre-0.2 `memset(shape, value, dtype)` (NkiApi.result): the tile it names."""
    shape = values.pop("shape", None)
    return None if shape is None else (tuple(int(n) for n in shape), "sbuf")


SPEC = InstructionDef(
    name="memset",
    engine="vector",
    params=(
        Param("dst", TILE, required=True, out=True, doc="tile to fill"),
        Param("value", SCALAR, required=True, doc="the fill value (cast to dst's dtype)"),
        Param("shape", INT_LIST, doc="optional (NKI's memset(shape=...)): must match dst's "
                                     "partitions and elements per partition"),
        Param("engine", ENUM, default="unknown", choices=("unknown", "vector", "gpsimd"),
              doc="vector (default) or gpsimd"),
        *common_tail(),
    ),
    summary="fill a tile with a constant",
    semantics="Writes `value`, cast to dst's dtype, into every element of dst.",
    cost_formula="max(MIN_II, N) Vector cycles; max(MIN_II, N/2) for a 0 fill of bf16/fp16",
    execute=execute,
    plan=plan,
    cycles=cycles,
    engine_of=engine_of,
    check=check,
    packed_copy=True,
    source="the nki.isa.memset documentation",
    example="- memset: {dst: acc, value: 0.0}",
    nki=NkiApi("dst value engine=unknown", result=_named_shape,
               legacy_signature="shape value dtype"),
)
