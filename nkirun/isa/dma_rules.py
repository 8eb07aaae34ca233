"""Rules the DMA instructions share (dma_copy, dma_transpose, dma_compute): the NeuronCore
generation of the target, `priority`, and the `engine` that triggers a hardware-DGE transfer.

Facts (NKI 0.6 API pages of dma_copy / dma_transpose,
https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.isa.dma_copy.html):
* priority: "DMA quality-of-service priority level 0-3 where lower is higher priority
  (NeuronCore-v4+ only)"; it changes no value.
* dma_copy engine: "the engine to use for HWDGE descriptor generation: engine.sync or
  engine.scalar. Only valid when dge_mode=hwdge"; unknown by default.
"""
from __future__ import annotations

from nkirun.isa.spec import Bound

PRIORITIES = range(4)
DGE_ENGINES = ("unknown", "sync", "scalar")


def target_of(b: Bound):
    """The program's Target: b.target when bind attaches the typed Target, else the name
    bind records in b.extra["target"]."""
    t = getattr(b, "target", None)
    if t is None or isinstance(t, str):
        from nkirun.hw.targets import DEFAULT_TARGET, TARGETS
        t = TARGETS[t or (getattr(b, "extra", None) or {}).get("target", DEFAULT_TARGET)]
    return t


def core_version(b: Bound) -> int:
    """The NeuronCore generation of the program's target (2 for trn1/inf2, 3 for trn2, ...)."""
    return int(target_of(b).core.rsplit("v", 1)[1])  # "NeuronCore-v3"


def target_name(b: Bound) -> str:
    return target_of(b).name


def priority_rules(b: Bound):
    """E396: priority outside 0..3; E397: priority below NeuronCore-v4."""
    p = b.get("priority")
    if p is None:
        return
    if p not in PRIORITIES:
        yield b.err("E396", f"priority {p} is not a DMA priority level", "priority",
                    hint="allowed: 0, 1, 2, 3 (lower is higher priority)")
    elif core_version(b) < 4:
        yield b.err("E397", f"priority needs a NeuronCore-v4 target; {target_name(b)} is "
                    f"NeuronCore-v{core_version(b)}", "priority",
                    hint="leave priority unset (the QoS levels exist from NeuronCore-v4 on)")


def hwdge_target_rule(b: Bound, code: str):
    """`code`: dge_mode hwdge on a NeuronCore-v2 target (the hardware DGE is v3 on)."""
    if b.get("dge_mode") == "hwdge" and core_version(b) < 3:
        yield b.err(code, f"dge_mode hwdge needs a NeuronCore-v3 target (trn2); "
                    f"{target_name(b)} has no hardware DGE", "dge_mode",
                    hint="use dge_mode: unknown (or swdge), or target: trn2")


def engine_rule(b: Bound):
    """E398: an explicit DGE trigger engine without dge_mode hwdge."""
    e = b.get("engine", "unknown")
    if e != "unknown" and b.get("dge_mode") != "hwdge":
        yield b.err("E398", f"engine {e} picks the sequencer that triggers the hardware DGE; it "
                    "is only valid with dge_mode: hwdge", "engine",
                    hint="add dge_mode: hwdge, or leave engine unset")


def indirect_of(r):
    """The Indirect part of a view's access pattern (views/indirect.py), or None."""
    return None if r is None or r.ap is None else r.ap.indirect


def single_column_index(b: Bound, keys: tuple[str, ...]):
    """E593: a vector_offset index other than (P, 1) outside dma_transpose (dma_copy and
    dma_compute take one index per partition; dma_transpose reads (I0, I1) tiles)."""
    for key in keys:
        for r in (b.get(key) if isinstance(b.get(key), tuple) else (b.tile(key),)):
            ind = indirect_of(r)
            if ind is not None and ind.per_partition and ind.index.shape != (r.shape[0], 1):
                yield b.err("E593", f"the vector_offset index `{ind.view}` is "
                            f"{list(ind.index.shape)}; {b.op} takes one index per partition, "
                            f"({r.shape[0]}, 1)", key,
                            hint="larger index tiles read column by column are dma_transpose's")


def indirect_transpose_rules(b: Bound, src):
    """The NKI page's "DMA Indirect Transpose Constraints" for a src with vector_offset:
    E590 (src), E591 (indices), E592 (generation)."""
    ind = src.ap.indirect
    if not ind.per_partition:
        yield b.err("E590", "the indirect transpose gathers rows with vector_offset; a "
                    "scalar_offset src is not one of its forms", "src",
                    hint="src: h.ap([[row, F], [1, P]], vector_offset=idx)")
        return
    shape = src.shape
    if len(shape) == 4 and 1 not in (shape[1], shape[2]):
        yield b.err("E590", f"a 4-D indirect src needs dim 1 or dim 2 of size 1; got "
                    f"{list(shape)}", "src")
    if shape[-1] > 128:
        yield b.err("E590", f"the indirect transpose needs src.shape[-1] <= 128; got "
                    f"{shape[-1]}", "src", hint="gather at most 128 columns per instruction")
    if shape[0] % 16:
        yield b.err("E590", f"the indirect transpose gathers a multiple of 16 rows "
                    f"(src.shape[0] % 16 == 0); got {shape[0]}", "src")
    if src.dtype.itemsize == 4:  # (1- and 8-byte dtypes: E434, as for the direct form)
        yield b.err("E590", f"the indirect transpose moves 2-byte elements; src is "
                    f"{src.dtype.name}", "src", hint="bfloat16 or float16")
    yield from _transpose_index_rules(b, ind, shape[0])
    if core_version(b) < 3:
        yield b.err("E592", f"the indirect transpose needs NeuronCore-v3 or newer (trn2+); "
                    f"{target_name(b)} is NeuronCore-v{core_version(b)}", "src",
                    hint="target: trn2 or trn3")


def _transpose_index_rules(b: Bound, ind, rows: int):
    """E591: the index tile of an indirect transpose."""
    idx = ind.index
    where = f"the index `{ind.view}` {list(idx.shape)}"
    if idx.dtype.name != "uint32":
        yield b.err("E591", f"{where} is {idx.dtype.name}; the indirect transpose's indices "
                    "are uint32", "src", hint="declare the index tensor uint32")
    i0, i1 = idx.shape[0], (idx.shape[1] if len(idx.shape) > 1 else 1)
    if len(idx.shape) != 2:
        yield b.err("E591", f"{where} must be 2-D", "src")
    elif not (16 <= i0 <= 128 and i0 % 16 == 0):
        yield b.err("E591", f"{where}: indices.shape[0] must be a multiple of 16 in [16, 128]",
                    "src")
    elif i1 > 1 and i0 != 128:
        yield b.err("E591", f"{where}: with more than one column, indices.shape[0] must be "
                    "128", "src")
    if i0 * i1 < rows:
        yield b.err("E591", f"{where} holds {i0 * i1} indices for {rows} src rows", "src",
                    hint="one index per gathered row")


# ---- dma_compute's read-modify-write forms ------------------------------------------------
def is_rmw(dst, srcs) -> bool:
    return indirect_of(dst) is not None or any(indirect_of(r) is not None for r in srcs)


def same_view(a, c) -> bool:
    """Whether two views address the same elements of the same tensor (an indirect one:
    with the same index view)."""
    if a.decl.name != c.decl.name or a.shape != c.shape or a.box != c.box:
        return False
    if (a.ap is None) != (c.ap is None):
        return False
    if a.ap is None:
        return True
    ia, ic = a.ap.indirect, c.ap.indirect
    return (a.ap.byte_offset, a.ap.byte_strides) == (c.ap.byte_offset, c.ap.byte_strides) and \
        (ia is None) == (ic is None) and (ia is None or str(ia.view) == str(ic.view))


def rmw_rules(b: Bound, dst, srcs):
    """E594: the page's read-modify-write forms. Scatter: dst an HBM view with vector_offset,
    one source that same view, the other in SBUF. Gather: dst in SBUF, one source an HBM
    view with vector_offset, the other dst itself. Both: 2 sources, unique_indices True."""
    if len(srcs) != 2:
        yield b.err("E594", f"a read-modify-write (a vector_offset view) takes exactly 2 "
                    f"sources; got {len(srcs)}", "srcs", hint="[dst view, data]")
        return
    if not b["unique_indices"]:
        yield b.err("E594", "unique_indices false: non-unique read-modify-write indices are "
                    "not supported", "unique_indices", hint="leave unique_indices at true")
    if any(i is not None and not i.per_partition for i in map(indirect_of, (dst, *srcs))):
        yield b.err("E594", "the read-modify-write forms index with vector_offset, not "
                    "scalar_offset", "srcs")
        return
    if indirect_of(dst) is not None:  # scatter
        matching = [i for i, r in enumerate(srcs) if same_view(r, dst)]
        other = srcs[1 - matching[0]] if matching else None
        if not matching or other.buffer != "sbuf" or indirect_of(other) is not None:
            yield b.err("E594", "scatter read-modify-write: one source must be dst's own "
                        "vector_offset view and the other an SBUF tile", "srcs",
                        hint="srcs: [<dst's view>, <sbuf data>]")
        return
    gathered = [i for i, r in enumerate(srcs) if indirect_of(r) is not None]
    if dst.buffer != "sbuf" or len(gathered) != 1 or not same_view(srcs[1 - gathered[0]], dst):
        yield b.err("E594", "gather read-modify-write: dst must be in SBUF, one source an HBM "
                    "vector_offset view and the other dst itself", "srcs",
                    hint="srcs: [dst, h.ap([[F, P], [1, F]], vector_offset=idx)]")
