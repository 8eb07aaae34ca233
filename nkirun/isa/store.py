"""nl.store — a DMA transfer from an on-chip tile (SBUF or PSUM) to HBM."""
from __future__ import annotations

from nkirun.isa.common import DMA_COST_FORMULA, dma_check, dma_cycles, dma_execute, dma_plan
from nkirun.isa.spec import MASK, TILE, InstructionDef, NkiApi, Param

SPEC = InstructionDef(
    name="store",
    engine="dma",
    params=(
        Param("dst", TILE, required=True, out=True, buffers=frozenset({"hbm"}),
              doc="HBM destination view"),
        Param("src", TILE, required=True, buffers=frozenset({"sbuf", "psum"}),
              doc="SBUF or PSUM source tile"),
        Param("mask", MASK, doc="compile-time predicate over the source tile"),
    ),
    summary="copy an on-chip tile (SBUF/PSUM) to an HBM tensor (view)",
    semantics=("Copies src to dst element by element in row-major order (both must hold the "
               "same number of elements). Different dtypes convert through float32. A PSUM "
               "source costs an extra copy on hardware (NKI inserts it)."),
    cost_formula=DMA_COST_FORMULA,
    execute=dma_execute,
    direct_storage=True,  # (dma_execute asks m.view whether its scratch aliases the dst)
    plan=dma_plan,
    cycles=dma_cycles,
    check=dma_check,
    same_partitions=(),
    mask_on="src",  # the mask indexes the on-chip tile being stored (docs/masks.md)
    packed_copy=True,
    source="the nki.isa.store documentation",
    example="- store: {dst: y, src: t}",
    nki=NkiApi(module="nki.language"),
)
