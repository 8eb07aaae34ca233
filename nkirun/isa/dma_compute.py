"""nki.isa.dma_compute — the DMA engines' compute: dst = srcs[0] + srcs[1] + ... in float32.

Facts (NKI 0.6 API page, https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/
generated/nki.isa.dma_compute.html; NKI release notes 0.3.0 / 0.4.0 / 0.5.0):
* dst = reduce_op(srcs[0] * scales[0], srcs[1] * scales[1], ...); only reduce_op add is
  supported and every scale must be 1.0 (scales None means all 1.0). NKI 0.3.0 swapped the
  positions of scales and reduce_op and made scales optional; NKI 0.4.0 removed a "fictional
  additive scale mode".
* the DMA engines cast every input to float32, compute in float32 and cast the result to
  dst's dtype; srcs and dst in HBM or SBUF, any dtypes; each src holds exactly dst's element
  count; at most 16 sources.
* read-modify-write scatter/gather needs a source with vector_offset (an indirect access
  pattern), exactly 2 sources and unique_indices True; oob_mode skip is "only valid with
  indirect indexing" (NKI 0.5.0 validation).
* cost: no formula. The Trainium3 arch guide: SBUF near-memory accumulation runs at the full
  DMA rate on NeuronCore-v4, half of it before.

Readings:
* Sources are added in list order, each sum rounded to float32: ((s0 + s1) + s2) + ...
* Element counts must match; shapes may differ (row-major order, like dma_copy).
* Read-modify-write (the page): scatter, dst an HBM `.ap(..., vector_offset=idx)` view and
  srcs [that same view, an SBUF tile]: dst[idx] = dst[idx] + data; gather, dst in SBUF and
  srcs [dst, an HBM vector_offset view]: dst = dst + src[idx]. Exactly 2 sources, scales 1.0,
  unique_indices true, vector_offset (not scalar_offset); anything else with an indirect view
  is E594; oob_mode skip without one is E443. Under skip a partition whose index is outside
  the tensor keeps its dst values; oob_mode error stops with E093.
* Repeated scatter indices (which NKI does not support) warn W590 at run time: every
  partition reads its row before any writes it, so the highest partition's sum stays.
* Cost (an assumption): the DMA copy model (targets.py) for the bytes read from every source,
  twice as long when dst is in SBUF on NeuronCore-v2/v3 (the half-rate accumulation).
"""
from __future__ import annotations

import numpy as np

from nkirun.isa.common import dma_cycles
from nkirun.diagnostics import warning
from nkirun.isa.dma_rules import core_version, indirect_of, is_rmw, rmw_rules, single_column_index
from nkirun.isa.spec import BOOL, ENUM, NUMBER_LIST, OP, TILE, TILE_LIST, Bound, InstructionDef, \
    NkiApi, Param

DMA_BUFFERS = frozenset({"hbm", "sbuf"})
MAX_SOURCES = 16

PARAMS = (
    Param("dst", TILE, required=True, out=True, buffers=DMA_BUFFERS,
          doc="HBM or SBUF destination"),
    Param("srcs", TILE_LIST, required=True, buffers=DMA_BUFFERS,
          doc="1 to 16 HBM/SBUF views, each with dst's element count"),
    Param("reduce_op", OP, required=True, choices=("add",), doc="add (the only one supported)"),
    Param("scales", NUMBER_LIST, doc="one scale per source; all must be 1.0 (default)"),
    Param("unique_indices", BOOL, default=True,
          doc="the read-modify-write indices are unique; must be true (false: E594)"),
    Param("oob_mode", ENUM, default="error", choices=("error", "skip"),
          doc="out-of-bounds indirect indices; skip needs an indirect (vector_offset) source"),
)


def check(b: Bound):
    dst, srcs = b.tile("dst"), b.get("srcs") or ()
    if len(srcs) > MAX_SOURCES:
        yield b.err("E440", f"{len(srcs)} sources; dma_compute takes at most {MAX_SOURCES}",
                    "srcs", hint="sum in several steps")
    scales = b.get("scales")
    if scales is not None and len(scales) != len(srcs):
        yield b.err("E441", f"scales has {len(scales)} entries for {len(srcs)} sources",
                    "scales", hint="one scale per source, or leave scales out")
    elif scales is not None and any(s != 1.0 for s in scales):
        bad = next(s for s in scales if s != 1.0)
        yield b.err("E441", f"scale {bad} is not supported: every scale must be 1.0", "scales",
                    hint="scale the sources first (e.g. tensor_scalar), or leave scales out")
    for i, r in enumerate(srcs):
        if dst is not None and r.size != dst.size:
            yield b.err("E442", f"srcs[{i}] ({r.decl.name}, {list(r.shape)}) holds {r.size} "
                        f"elements but dst {list(dst.shape)} holds {dst.size}", "srcs",
                        hint="every source needs dst's element count")
    yield from single_column_index(b, ("dst", "srcs"))
    if dst is not None and srcs and is_rmw(dst, srcs):
        yield from rmw_rules(b, dst, srcs)
    elif b.get("oob_mode") == "skip":
        yield b.err("E443", "oob_mode skip is only valid with indirect indexing (a "
                    "vector_offset dst or source: the read-modify-write forms)", "oob_mode",
                    hint="leave oob_mode at error")


def execute(b: Bound, m) -> None:
    dst = b["dst"]
    if is_rmw(dst, b["srcs"]):
        return _execute_rmw(b, m, dst)
    xs = [m.read_f32(r).reshape(dst.shape) for r in b["srcs"]]
    out = m.direct_view(dst, dst.shape) if dst.dtype.name == "float32" else None
    direct = out is not None and not any(np.may_share_memory(out, x) for x in xs)
    if len(xs) == 1:
        total = xs[0]
    else:  # in list order, each partial sum rounded to float32
        total = np.add(xs[0], xs[1], out=out if direct else None)
        for x in xs[2:]:
            np.add(total, x, out=total)
    if direct and len(xs) > 1:
        m.mark_written(dst)
        return
    m.write(dst, total)


def _execute_rmw(b: Bound, m, dst) -> None:
    """dst = srcs[0] + srcs[1] through the vector_offset view (gathered, added in float32,
    written back: a scatter into dst's rows, or into the SBUF dst). Under oob_mode skip a
    skipped partition keeps its dst values."""
    srcs = b["srcs"]
    x0, x1 = (m.read_f32(r).reshape(dst.shape) for r in srcs)
    gathered = next(r for r in (dst, *srcs) if indirect_of(r) is not None)
    _, keep = m.indirect_rows(gathered)
    if indirect_of(dst) is not None:
        warn_duplicate_rows(b, m, dst)
    mask = None if keep is None else np.broadcast_to(
        keep.reshape((-1,) + (1,) * (len(gathered.shape) - 1)), gathered.shape).reshape(dst.shape)
    m.write(dst, np.add(x0, x1), None, mask)


def warn_duplicate_rows(b: Bound, m, dst) -> None:
    """W590: a scatter read-modify-write whose indices repeat: every partition reads the row
    before any writes it, so one update wins (NKI requires unique indices)."""
    idx = m.read(dst.ap.indirect.index).reshape(-1)
    values, counts = np.unique(idx, return_counts=True)
    if (counts > 1).any():
        v = int(values[np.argmax(counts > 1)])
        m.warnings.append(warning(
            "W590", f"{b.title}: scatter read-modify-write index {v} appears "
            f"{int(counts.max())} times; NKI requires unique indices, and nkirun keeps only "
            "the highest partition's sum for that row", b.loc("dst"), b.index,
            hint="make the indices unique, or accumulate the duplicates first"))


def streamed_bytes(b: Bound) -> float:
    """All sources' bytes, twice into SBUF before NeuronCore-v4 (half-rate accumulation)."""
    nbytes = sum(r.size * r.dtype.itemsize for r in b["srcs"])
    return nbytes * (2 if b["dst"].decl.on_chip and core_version(b) < 4 else 1)


SPEC = InstructionDef(
    name="dma_compute",
    engine="dma",
    params=PARAMS,
    summary="sum several HBM/SBUF tensors into dst with the DMA engines (float32)",
    semantics=(
        "dst = srcs[0] + srcs[1] + ... element by element in row-major order, every source "
        "cast to float32 and the partial sums taken in list order in float32, the result "
        "cast to dst's dtype. Only reduce_op add and scales of 1.0 are supported. With a "
        "vector_offset view it is a read-modify-write of exactly two sources: scatter "
        "(dst = srcs [dst's HBM view, SBUF data]) or gather (SBUF dst, srcs [dst, an HBM "
        "view]); rows whose index is out of bounds are skipped under oob_mode skip."),
    cost_formula="DMA ns: the copy model (fixed + bytes / bandwidth) for the bytes of all "
                 "sources; x2 into SBUF before NeuronCore-v4",
    execute=execute,
    cycles=dma_cycles,
    dma_bytes=streamed_bytes,
    check=check,
    same_partitions=(),
    cost_assumed=True,
    cost_note="no documented formula: the DMA copy model, with the Trainium3 arch guide's "
              "half-rate SBUF accumulation before NeuronCore-v4",
    source="https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/"
           "nki.isa.dma_compute.html",
    example="- dma_compute: {dst: acc, srcs: [acc, part], reduce_op: add}",
    nki=NkiApi("dst srcs reduce_op scales=None unique_indices=True oob_mode=error"),
)
