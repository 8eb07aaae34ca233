"""nki.isa.dma_copy — a DMA transfer between HBM and SBUF views (nki-reference.md §1.16).

dst = src over the same number of elements in row-major order (shapes may differ), with
dtype conversion through float32; dst_rmw_op=add accumulates into dst instead.
"""
from __future__ import annotations

from .common import DMA_COST_FORMULA, dma_check, dma_cycles, dma_execute
from .spec import MASK, OP, TILE, Bound, InstructionDef, Param

DMA_BUFFERS = frozenset({"hbm", "sbuf"})  # reading PSUM by DMA is unsupported (§1.16 [MIG])


def execute(b: Bound, m) -> None:
    if b.get("dst_rmw_op") is None:
        dma_execute(b, m)
        return
    dst = b["dst"]  # read-modify-write: dst + src in float32, cast back to dst
    total = m.read_f32(dst) + m.read_f32(b["src"]).reshape(dst.shape)
    m.write(dst, total, None, b.mask)


def reads_out(b: Bound):
    return ("dst",) if b.get("dst_rmw_op") is not None else ()


SPEC = InstructionDef(
    name="dma_copy",
    engine="dma",
    params=(
        Param("dst", TILE, required=True, out=True, buffers=DMA_BUFFERS,
              doc="HBM or SBUF destination view"),
        Param("src", TILE, required=True, buffers=DMA_BUFFERS, doc="HBM or SBUF source view"),
        Param("mask", MASK, doc="compile-time predicate over dst; masked-off elements keep "
                                  "their value"),
        Param("dst_rmw_op", OP, choices=("add",),
              doc="add: accumulate src into dst (the only read-modify-write op)"),
    ),
    summary="copy between HBM and SBUF views (optionally accumulating into dst)",
    semantics=(
        "Copies src to dst element by element in row-major order; both must hold the same "
        "number of elements (their shapes may differ). Different dtypes convert through "
        "float32. With dst_rmw_op: add, dst becomes dst + src (float32, cast to dst). PSUM "
        "cannot be a DMA source or destination here: copy through SBUF."),
    cost_formula=DMA_COST_FORMULA,
    execute=execute,
    cycles=dma_cycles,
    check=dma_check,
    same_partitions=(),
    reads_out=reads_out,
    source="nki-reference.md §1.16 (dma_copy)",
    example="- dma_copy: {dst: out_hbm, src: tile}",
)
