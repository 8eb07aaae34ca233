"""nki.isa.dma_transpose — DMA engines: a permuting copy into SBUF.

Facts (NKI 0.6 API page, https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/
generated/nki.isa.dma_transpose.html; Trainium2 arch guide "DMA Transpose"; NKI release notes):
* the permutation follows the rank of src: 2-D (1, 0), 3-D (2, 1, 0), 4-D (3, 1, 2, 0); `axes`
  (optional) names it: dst axis i is src axis axes[i] (np.transpose).
* dst in SBUF, src in HBM or SBUF; src.dtype == dst.dtype; dst.shape must be the transposed
  src shape exactly, rank included (NKI 0.5.0 stopped padding a lower-rank dst).
* direct transpose: dge_mode unknown or hwdge. hwdge adds: 2-D src.shape[0] == 16; 3-D/4-D
  src.shape[0] in {1, 2, 4, 8, 16} and src.shape[0] * src.shape[-2] a multiple of 16;
  src.shape[-1] <= 128; a 2-byte dtype. The hardware DGE exists from NeuronCore-v3 on.
* the DMA engines transpose 2-byte and 4-byte dtypes bit-accurately (Trainium2 arch guide).
* priority 0-3 is NeuronCore-v4 only; oob_mode skip is "only valid when src uses indirect
  indexing".
* cost: no formula. The arch guide: a transpose reaches up to 90% of a copy's DMA throughput
  HBM->SBUF and 50% SBUF->SBUF. nkirun charges the DMA copy model (targets.py) for the bytes
  divided by that efficiency (an assumption; the same factors on every target).
* indirect transpose (src an HBM access pattern with vector_offset, lowered to the software
  DGE): flat_indices = indices.T.flatten()[:src.shape[0]], gathered = src[flat_indices],
  dst = transpose(gathered). Its rules: dge_mode unknown or swdge; a 4-D src has dim 1 or 2
  of size 1; src.shape[-1] <= 128; src.shape[0] a multiple of 16; 2-byte dtype; src in HBM;
  indices 2-D uint32 in SBUF with shape[0] a multiple of 16 in [16, 128], exactly 128 when
  it has more than one column, and at least src.shape[0] of them; NeuronCore-v3+.

Readings:
* The indirect view is nkirun's `.ap(..., vector_offset=idx)` (docs/views.md): row k0 of
  the view is row flat_indices[k0] of the indexed dim. oob_mode skip leaves the dst column
  (the last dst axis) of a skipped row as it was; error stops the run with E093.
* A direct transpose with dge_mode swdge, or oob_mode skip without an indirect src, is
  refused (E435): the page allows neither. dge_mode none (static descriptors the compiler
  writes, no DGE at run time) is accepted: nki-library's MLP and norm TKG kernels transpose
  that way and pass their tests on hardware.
* A 1-byte or 8-byte dtype is refused on every DGE mode (the engines transpose 2- and 4-byte
  elements only); hwdge also refuses 4-byte ones, as its constraint list says.
"""
from __future__ import annotations

import numpy as np

from nkirun.isa.common import dma_cycles
from nkirun.isa.dma_rules import (hwdge_target_rule, indirect_of, indirect_transpose_rules,
                                   priority_rules)
from nkirun.isa.spec import ENUM, INT, INT_LIST, TILE, Bound, InstructionDef, NkiApi, Param

PERMUTATIONS = {2: (1, 0), 3: (2, 1, 0), 4: (3, 1, 2, 0)}
HBM_TO_SBUF_EFFICIENCY, SBUF_TO_SBUF_EFFICIENCY = 0.9, 0.5
HWDGE_LEADING = (1, 2, 4, 8, 16)

PARAMS = (
    Param("dst", TILE, required=True, out=True, buffers=frozenset({"sbuf"}),
          doc="SBUF tile of the transposed shape"),
    Param("src", TILE, required=True, buffers=frozenset({"hbm", "sbuf"}),
          doc="HBM or SBUF tensor, 2-D to 4-D, dst's dtype (2 or 4 bytes)"),
    Param("axes", INT_LIST, doc="(1, 0), (2, 1, 0) or (3, 1, 2, 0): must match src's rank; "
                                "default: the one for src's rank"),
    Param("priority", INT, doc="DMA QoS level 0-3 (NeuronCore-v4 only); changes no value"),
    Param("dge_mode", ENUM, default="unknown", choices=("unknown", "hwdge", "swdge", "none"),
          doc="direct: unknown or hwdge (trn2+: hardware DGE, extra shape rules); indirect "
              "(src with vector_offset): unknown or swdge"),
    Param("oob_mode", ENUM, default="error", choices=("error", "skip"),
          doc="an indirect index outside src: error (E093) or skip (that row's dst column "
              "keeps its values); skip needs an indirect src"),
)


def permutation(b: Bound) -> tuple[int, ...] | None:
    src = b.tile("src")
    return PERMUTATIONS.get(len(src.shape)) if src is not None else None


def check(b: Bound):
    src, dst = b.tile("src"), b.tile("dst")
    yield from priority_rules(b)
    rank, perm = len(src.shape), permutation(b)
    if perm is None:
        yield b.err("E430", f"src has {rank} dimensions {list(src.shape)}; dma_transpose takes "
                    "2-D, 3-D or 4-D tiles", "src")
        return
    axes = b.get("axes")
    if axes is not None and tuple(axes) != perm:
        yield b.err("E431", f"axes {list(axes)} is not the transpose of a {rank}-D src",
                    "axes", hint=f"for a {rank}-D src use axes {list(perm)} (or leave it out); "
                                 "supported: (1, 0), (2, 1, 0), (3, 1, 2, 0)")
    want = tuple(src.shape[a] for a in perm)
    if tuple(dst.shape) != want:
        yield b.err("E432", f"dst is {list(dst.shape)} but src {list(src.shape)} transposed "
                    f"by {list(perm)} is {list(want)}", "dst",
                    hint="declare or view dst with exactly that shape (the same rank as src)")
    if src.dtype != dst.dtype:
        yield b.err("E433", f"src is {src.dtype.name} and dst {dst.dtype.name}; dma_transpose "
                    "does not cast", "dst", hint="give dst the dtype of src")
    size, mode = src.dtype.itemsize, b.get("dge_mode")
    if size not in (2, 4) or (mode == "hwdge" and size != 2):
        allowed = "2-byte" if mode == "hwdge" else "2- or 4-byte"
        yield b.err("E434", f"src is {src.dtype.name} ({size} byte{'s' * (size > 1)}); "
                    f"dma_transpose{' with hwdge' * (mode == 'hwdge')} moves {allowed} "
                    "elements", "src", hint="bfloat16 / float16 (or float32 without hwdge)")
    yield from _form_rules(b, src, mode)
    yield from hwdge_target_rule(b, "E436")
    if mode == "hwdge" and indirect_of(src) is None:  # (indirect + hwdge: E435 above)
        yield from hwdge_shape_rules(b, src)


def _form_rules(b: Bound, src, mode: str):
    """E435: the DGE modes of each form (direct: unknown/hwdge; indirect, src with
    vector_offset: unknown/swdge), and oob_mode skip only for the indirect one."""
    if indirect_of(src) is not None:
        if mode not in ("unknown", "swdge"):
            yield b.err("E435", f"dge_mode {mode}: the indirect (gather) transpose runs on the "
                        "software DGE", "dge_mode", hint="dge_mode unknown or swdge")
        yield from indirect_transpose_rules(b, src)
        return
    if mode == "swdge":
        yield b.err("E435", f"dge_mode {mode}: a direct transpose (src without vector_offset) "
                    "is lowered to the hardware DGE, to static descriptors (none) or left to "
                    "the compiler", "dge_mode",
                    hint="dge_mode unknown, hwdge or none; swdge is the indirect form's")
    if b.get("oob_mode") == "skip":
        yield b.err("E435", "oob_mode skip is only valid when src uses indirect indexing "
                    "(vector_offset)", "oob_mode", hint="leave oob_mode at error")


def hwdge_shape_rules(b: Bound, src):
    lead, last = src.shape[0], src.shape[-1]
    if len(src.shape) == 2 and lead != 16:
        yield b.err("E437", f"with hwdge a 2-D src needs 16 rows (src.shape[0] == 16); got "
                    f"{lead}", "src", hint="use dge_mode: unknown, or transpose 16 rows at a time")
    elif len(src.shape) > 2 and (lead not in HWDGE_LEADING or (lead * src.shape[-2]) % 16):
        yield b.err("E437", f"with hwdge a {len(src.shape)}-D src needs src.shape[0] in "
                    f"{{1, 2, 4, 8, 16}} and src.shape[0] * src.shape[-2] a multiple of 16; got "
                    f"{list(src.shape)}", "src", hint="use dge_mode: unknown")
    if last > 128:
        yield b.err("E437", f"with hwdge src.shape[-1] must be at most 128; got {last}", "src",
                    hint="transpose at most 128 columns per instruction")


def execute(b: Bound, m) -> None:
    src = b["src"]
    values = m.read(src)  # the same dtype on both sides: a bit-exact permutation
    perm = permutation(b)
    keep = None
    if indirect_of(src) is not None:  # oob_mode skip: a skipped row's dst column keeps
        _, rows = m.indirect_rows(src)
        if rows is not None:
            keep = np.transpose(np.broadcast_to(
                rows.reshape((-1,) + (1,) * (len(src.shape) - 1)), src.shape), perm)
    m.write(b["dst"], np.transpose(values, perm), None, keep)


def streamed_bytes(b: Bound) -> float:
    """The copy's bytes divided by the transpose's efficiency (the engines stream more)."""
    src = b["src"]
    eff = SBUF_TO_SBUF_EFFICIENCY if src.decl.on_chip else HBM_TO_SBUF_EFFICIENCY
    return src.size * src.dtype.itemsize / eff


def _permuted(values, first):
    """The pre-0.2 result of a call without dst= (NkiApi.result): src permuted by `axes`,
    or by the default permutation of its rank, in SBUF."""
    perm = values.get("axes") or PERMUTATIONS.get(len(first.shape))
    if perm is None or len(perm) != len(first.shape):
        return None
    return tuple(first.shape[a] for a in perm), "sbuf"


SPEC = InstructionDef(
    name="dma_transpose",
    engine="dma",
    params=PARAMS,
    summary="transpose an HBM or SBUF tile into SBUF with the DMA engines",
    semantics=(
        "Writes np.transpose(src, axes) into dst bit for bit, with axes (1, 0) for a 2-D src, "
        "(2, 1, 0) for 3-D and (3, 1, 2, 0) for 4-D: the innermost src dimension becomes dst's "
        "partition dimension. src and dst have one dtype (2 or 4 bytes; 2 with hwdge). With "
        "an indirect src (an HBM `.ap` with vector_offset=idx, idx (P, 1) or (128, N) read "
        "column by column) the rows are gathered first: dst = transpose(src[idx]); "
        "oob_mode skip leaves a skipped row's dst column alone."),
    cost_formula="DMA ns: the copy model (fixed + bytes / bandwidth) with bytes / 0.9 from "
                 "HBM, bytes / 0.5 from SBUF (transpose efficiency)",
    execute=execute,
    cycles=dma_cycles,
    dma_bytes=streamed_bytes,
    check=check,
    same_partitions=(),
    cost_assumed=True,
    cost_note="no documented formula: the Trainium2 arch guide's 90% (HBM->SBUF) / 50% "
              "(SBUF->SBUF) of copy throughput, applied on every target",
    source="https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/"
           "nki.isa.dma_transpose.html",
    example="- dma_transpose: {dst: kT, src: k_hbm}",
    nki=NkiApi("dst src axes=None priority=None dge_mode=unknown oob_mode=error",
               result=_permuted),
)
