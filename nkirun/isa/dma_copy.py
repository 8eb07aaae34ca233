"""nki.isa.dma_copy — a DMA transfer between HBM and SBUF views (the nki.isa.dma_copy documentation).

dst = src over the same number of elements in row-major order (shapes may differ), with
dtype conversion through float32.

dge_mode (none/swdge/hwdge/unknown) says who builds the descriptors (§1.16 [NEW-ISA]): it
changes no value. hwdge is the hardware DGE of NeuronCore-v3 on ([ARCH3]) and, from NKI
0.3.0 on, copies without casting ([MIG]): nkirun follows the new API, so a hwdge copy
between different dtypes is an error on every target.

Indirect addressing (NKI 0.6 dma_copy docstring): src or dst may be an access pattern with
`vector_offset=idx` (a (P, 1) SBUF index: partition p moves row idx[p] of the HBM tensor;
gather or scatter) or `scalar_offset=s, indirect_dim=d` (one index for every partition);
views/indirect.py. oob_mode says what an index outside the tensor does: error (E093, the
default) or skip (each row — one index of the pattern's first entry — that would
leave the tensor is not moved, with vector and scalar offsets alike; dst keeps its values
there). Static views are bounds-checked before the run (E031/E038).

NKI 0.6 keywords (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/
nki.isa.dma_copy.html): `priority` 0-3 is a NeuronCore-v4 QoS level (no effect on values);
`engine` (sync or scalar) picks the sequencer that triggers a hardware-DGE transfer and is
only valid with dge_mode hwdge. `dst_rmw_op` and `unique_indices` were removed in NKI 0.3.0
(accumulate with dma_compute): they are refused with E390 naming the release.
"""
from __future__ import annotations

from nkirun.isa.common import DMA_COST_FORMULA, dma_check, dma_cycles, dma_execute, dma_plan, is_nc_v2
from nkirun.isa.dma_rules import DGE_ENGINES, engine_rule, priority_rules, single_column_index
from nkirun.isa.removed import NKI_030
from nkirun.isa.spec import ENUM, INT, MASK, TILE, Bound, InstructionDef, NkiApi, Param

DMA_BUFFERS = frozenset({"hbm", "sbuf"})  # reading PSUM by DMA is unsupported (§1.16 [MIG])


DGE_MODES = ("unknown", "none", "swdge", "hwdge")
OOB_MODES = ("error", "skip")


def check(b: Bound):
    yield from dma_check(b)
    yield from priority_rules(b)
    yield from engine_rule(b)
    yield from single_column_index(b, ("src", "dst"))
    if b.get("dge_mode") != "hwdge":
        return
    if is_nc_v2(b):  # the hardware DGE exists from NeuronCore-v3 on (§1.16 [ARCH3])
        yield b.err("E181", f"dge_mode hwdge needs a NeuronCore-v3 target (trn2); "
                    f"{b.target.name} has no hardware DGE", "dge_mode",
                    hint="use dge_mode: swdge (or unknown), or target: trn2")
    dst, src = b.tile("dst"), b.tile("src")
    if dst is not None and src is not None and dst.dtype != src.dtype:
        # §1.16 [MIG]: from NKI 0.3.0 on, a hwdge transfer does not cast
        yield b.err("E182", f"dge_mode hwdge copies without casting, but src is "
                    f"{src.dtype.name} and dst is {dst.dtype.name}", "dge_mode",
                    hint="give src and dst the same dtype, or use dge_mode: swdge to cast "
                         "through float32")


SPEC = InstructionDef(
    name="dma_copy",
    engine="dma",
    params=(
        Param("dst", TILE, required=True, out=True, buffers=DMA_BUFFERS,
              doc="HBM or SBUF destination view"),
        Param("src", TILE, required=True, buffers=DMA_BUFFERS, doc="HBM or SBUF source view"),
        Param("priority", INT, doc="DMA QoS level 0-3, lower is higher (NeuronCore-v4 only); "
                                   "changes no value"),
        Param("mask", MASK, doc="compile-time predicate over dst; masked-off elements keep "
                                  "their value"),
        Param("oob_mode", ENUM, default="error", choices=OOB_MODES,
              doc="an indirect (vector_offset/scalar_offset) index outside the tensor: "
                  "error (E093) or skip that transfer; static views are checked statically"),
        Param("dge_mode", ENUM, default="unknown", choices=DGE_MODES,
              doc="who builds the DMA descriptors; hwdge (trn2) needs src and dst of one "
                  "dtype"),
        Param("engine", ENUM, default="unknown", choices=DGE_ENGINES,
              doc="sync or scalar: the sequencer that triggers a hwdge transfer (only with "
                  "dge_mode hwdge); changes no value"),
    ),
    summary="copy between HBM and SBUF views",
    semantics=(
        "Copies src to dst element by element in row-major order; both must hold the same "
        "number of elements (their shapes may differ). Different dtypes convert through "
        "float32. PSUM "
        "cannot be a DMA source or destination here: copy through SBUF. dge_mode, engine and "
        "priority change no value (hwdge: trn2 on, no casting; priority: trn3). An indirect access pattern on an HBM side "
        "(`h.ap([[F, P], [1, F]], vector_offset=idx)`: partition p moves row idx[p]; "
        "`scalar_offset=s, indirect_dim=d`: row s[0, 0] of dim d for all) gathers or "
        "scatters at run time; oob_mode: error (E093) or skip for an index outside it."),
    cost_formula=DMA_COST_FORMULA,
    execute=dma_execute,
    direct_storage=True,  # (dma_execute asks m.view whether its scratch aliases the dst)
    plan=dma_plan,
    cycles=dma_cycles,
    check=check,
    same_partitions=(),
    packed_copy=True,
    source="https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/"
           "nki.isa.dma_copy.html",
    example="- dma_copy: {dst: out_hbm, src: tile}",
    nki=NkiApi("dst src priority=None oob_mode=error dge_mode=unknown engine=unknown",
               removed=(("dst_rmw_op", NKI_030, "accumulate with dma_compute: {dst: d, srcs: "
                                                "[d, s], reduce_op: add}"),
                        ("unique_indices", NKI_030, "dma_compute takes unique_indices"))),
)
