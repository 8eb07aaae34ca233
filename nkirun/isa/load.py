"""nl.load — a DMA transfer from HBM into an on-chip tile (SBUF)."""
from __future__ import annotations

from nkirun.isa.common import DMA_COST_FORMULA, dma_check, dma_cycles, dma_execute, dma_plan
from nkirun.isa.spec import MASK, TILE, InstructionDef, NkiApi, Param

SPEC = InstructionDef(
    name="load",
    engine="dma",
    params=(
        Param("dst", TILE, required=True, out=True, buffers=frozenset({"sbuf"}),
              doc="SBUF destination tile"),
        Param("src", TILE, required=True, buffers=frozenset({"hbm"}), doc="HBM source view"),
        Param("mask", MASK, doc="compile-time predicate; masked-off dst elements keep "
                                  "their value"),
    ),
    summary="copy an HBM tensor (view) into an SBUF tile",
    semantics=("Copies src to dst element by element in row-major order (both must hold the "
               "same number of elements). Different dtypes convert through float32, like the "
               "DMA engines' casting."),
    cost_formula=DMA_COST_FORMULA,
    execute=dma_execute,
    direct_storage=True,  # (dma_execute asks m.view whether its scratch aliases the dst)
    plan=dma_plan,
    cycles=dma_cycles,
    check=dma_check,
    same_partitions=(),
    packed_copy=True,
    value_load=True,  # nl.load: the compiler keeps a repeated load's tile (recompute.py)
    source="the nki.isa.load documentation",
    example="- load: {dst: t, src: x}",
    # nl.load's result assigned into a tile of another dtype is a dma_copy, as nl.load(dtype=)
    nki=NkiApi(module="nki.language", recast="dma_copy"),
)
