"""nki.isa.tensor_copy — Vector, Scalar or GpSimd (the nki.isa.tensor_copy documentation).

dst = src. Vector and GpSimd copy the bits when the dtypes match and cast through float32
otherwise; the NeuronCore-v2 Scalar engine always goes through float32 (§1.5 [OLD-ISA]),
the v3 one copies bit-accurately ([ARCH3]).
"""
from __future__ import annotations

from functools import partial

import numpy as np

from nkirun.isa.common import activation_pass, cast_copy_plan, copy_plan, flat, is_nc_v2, same_shape
from nkirun.isa.spec import (ENUM, TILE, Bound, InstructionDef, NkiApi, Param, common_tail,
                             elementwise, out_dtype)

PARAMS = (
    Param("dst", TILE, required=True, out=True,
          doc="output tile (same partitions and elements per partition as src)"),
    Param("src", TILE, required=True, doc="input tile"),
    Param("engine", ENUM, default="unknown", choices=("unknown", "vector", "scalar", "gpsimd"),
          doc="vector (default), scalar or gpsimd (gpsimd cannot touch PSUM)"),
    *common_tail(),
)


def engine_of(b: Bound) -> str:
    e = b.get("engine")
    return e if e in ("scalar", "gpsimd") else "vector"


def _through_f32(b: Bound) -> bool:
    return b.engine == "scalar" and is_nc_v2(b)


def check(b: Bound):
    yield from same_shape(b, "dst", "src")
    if _through_f32(b) and any(b[k].dtype.name in ("int32", "uint32") for k in ("src", "dst")):
        yield b.warn("W240", f"on {b.target.name} the Scalar engine copies through "
                     "float32: 32-bit integers above 2^24 lose precision (and NKI 0.2+ no "
                     "longer allows tensor_copy on this engine)", "engine",
                     hint="use engine: vector or gpsimd for a bit-exact integer copy")


def execute(b: Bound, m) -> None:
    out = out_dtype(b)
    x = flat(m.read(b["src"]))
    if _through_f32(b) or x.dtype != out.np_type:
        x = x.astype(np.float32)  # m.write rounds float32 to the output dtype(s)
    m.write(b["dst"], x.reshape(b["dst"].shape), out, b.mask)


def plan(b: Bound):
    """runner/plan.py's form, no mask: a bit copy (src, the output dtype and dst share one
    storage type, not tfloat32) is one copyto between fixed views; a float-to-float cast
    (the output dtype dst's, not tfloat32) is execute's widening to float32 and the
    store's rounding (common.cast_copy_plan)."""
    src, dst, out = b["src"], b["dst"], out_dtype(b)
    if b.mask is not None or dst.dtype.name == "tfloat32" or out.np_type != dst.dtype.np_type:
        return None
    if not _through_f32(b) and src.dtype.np_type == dst.dtype.np_type:
        return copy_plan(dst, src)
    if src.dtype.is_float and dst.dtype.is_float:
        return cast_copy_plan(dst, src)
    return None


def cycles(b: Bound, target) -> int:
    return max(target.min_ii, b["src"].free_size)  # [OLD-ISA] via §1.5


SPEC = InstructionDef(
    name="tensor_copy",
    engine="vector",
    params=PARAMS,
    free_split=elementwise,
    summary="copy a tile (bit-exact when the dtypes match, else through float32)",
    semantics=(
        "Copies src into dst (same partitions and elements per partition). Vector and GpSimd "
        "copy the bits when src and the output have the same dtype and cast through float32 "
        "otherwise; on trn1/inf2 the Scalar engine always casts through float32."),
    cost_formula="max(MIN_II, N) engine cycles (N = elements per partition of src)",
    execute=execute,
    plan=plan,
    cycles=cycles,
    activation_form=partial(activation_pass, src="src"),
    check=check,
    engine_of=engine_of,
    packed_copy=True,
    source="the nki.isa.tensor_copy documentation",
    example="- tensor_copy: {dst: y, src: acc, engine: vector}",
    nki=NkiApi("dst src engine=unknown"),
)
