"""Indirect (runtime-indexed) access patterns for DMA: `.ap(..., vector_offset=idx)` and
`.ap(..., scalar_offset=s, indirect_dim=d)` (nki.isa.dma_copy "Indirect addressing").

    h.ap([[F, P], [1, F]], vector_offset=idx)             # gather: partition p reads row idx[p]
    h.ap([[1, F]], scalar_offset=s, indirect_dim=0)       # one dynamic row for all partitions

The indexed tensor must be in HBM. The index is an SBUF view of an integer dtype: (P, 1)
for vector_offset (P = the pattern's first num), one element for scalar_offset. Element
(k0, k1, ...) is storage element

    offset + idx * S + sum(step_i * k_i)      S = the stride of dim `indirect_dim` of the
                                              tensor (row-major, in elements of dtype)

where for vector_offset idx = idx[k0] replaces the first entry's own step (each partition
gets its own row), and for scalar_offset idx is the one value and every entry steps as
written. Which elements an index selects is known only at run time: the checker bounds the
pattern with index 0, the scheduler assumes the whole tensor is touched, and the run checks
every address (oob_mode=error: E093; skip: the rows that leave the tensor are not
copied, below).

A vector_offset index is (P, 1); dma_transpose's indirect form also takes a 2-D (I0, I1)
index whose columns are read one after another (`indices.T.flatten()[:P]`, its NKI page).

Readings: duplicate indices in a vector scatter write the same row more than once; the
highest partition's value is kept (NumPy assignment order; NKI does not say).
oob_mode=skip "skip[s] the DMA transfer for a given dynamic address or index when it is
out of bound" (nki.isa.dma_copy): the unit a transfer moves or skips is one row, i.e. one
index along the pattern's first entry (a partition of the on-chip side). With
vector_offset a row is out of bounds when its own index sends it outside the tensor; with
scalar_offset every row shares the index, and the rows whose addresses stay inside the
tensor are moved while those that leave it are skipped (nki-library's indexed_flatten
writes blocks at a dynamic offset this way: its reference keeps the blocks that fit).
A row partly outside the tensor is skipped whole.
"""
from __future__ import annotations

import dataclasses
from math import prod

import numpy as np

from nkirun.records import record
from nkirun.diagnostics import RunError, error

INDEX_DTYPES = frozenset({"int32", "uint32", "int16", "uint16", "int8", "uint8"})


@record(frozen=True, slots=True)
class Indirect:
    """The indirect part of an access pattern: the index tensor's view and its step."""
    view: object  # ir.View of the index tensor
    per_partition: bool  # vector_offset (one index per partition) or scalar_offset
    stride_bytes: int  # bytes one index step moves (dim `indirect_dim` of the tensor)
    index: object = None  # its Resolved, filled in by bind_index
    register: str | None = None  # scalar_offset from a register (nki.isa.register_alloc)


def static_part(ap, decl, dtype):
    """(Indirect, the pattern to bound statically) or (None, error message)."""
    if ap.scalar_offset is not None and ap.vector_offset is not None:
        return None, "give scalar_offset or vector_offset, not both"
    if decl.on_chip:
        return None, "indirect addressing needs the indexed tensor in HBM"
    if not 0 <= ap.indirect_dim < len(decl.shape):
        return None, (f"indirect_dim {ap.indirect_dim} is not a dim of `{decl.name}` "
                      f"({len(decl.shape)} dims)")
    stride = (prod(decl.shape[ap.indirect_dim + 1:]) if ap.indirect_stride is None
              else ap.indirect_stride) * decl.dtype.itemsize
    if stride % dtype.itemsize:
        return None, f"the indexed dim's stride is not a whole number of {dtype.name} elements"
    vector = ap.vector_offset is not None
    pattern = ap.pattern
    if vector:  # the first entry counts partitions; its step is the index's
        pattern = ((0, pattern[0][1]),) + pattern[1:]
    view = ap.vector_offset if vector else ap.scalar_offset
    return Indirect(view, vector, stride), pattern


def bind_index(r, tensors: dict, resolve, registers=frozenset()):
    """Resolve the index view of an indirect pattern view `r`: (r with it, None) or
    (None, error message). A scalar_offset naming a register (not a tensor) reads it."""
    ind = r.ap.indirect
    if ind.view.tensor in registers and ind.view.tensor not in tensors:
        if ind.per_partition or ind.view.index is not None:
            return None, (f"register `{ind.view.tensor}` can only be a scalar_offset, "
                          "as a plain name")
        ap = dataclasses.replace(r.ap, indirect=dataclasses.replace(
            ind, register=ind.view.tensor))
        return dataclasses.replace(r, ap=ap), None
    decl = tensors.get(ind.view.tensor)
    if decl is None:
        return None, f"unknown index tensor `{ind.view.tensor}`"
    idx, d = resolve(ind.view, decl)
    if d is not None:
        return None, d.message
    if idx.buffer != "sbuf" or idx.dtype.name not in INDEX_DTYPES:
        return None, (f"the index `{ind.view}` must be an SBUF view of an integer dtype (got "
                      f"{idx.dtype.name} in {idx.buffer})")
    want = (r.ap.shape[0], 1) if ind.per_partition else None
    # dma_transpose's gather takes any 2-D (I0, I1) index holding at least P values, read
    # column by column (indices.T.flatten()[:P]); its own rules (isa/dma_rules.py) bound it,
    # and dma_copy / dma_compute insist on (P, 1) (E593)
    columns = ind.per_partition and len(idx.shape) == 2 and \
        idx.shape[0] * idx.shape[1] >= r.ap.shape[0]
    if not columns and ((want is not None and idx.shape != want)
                        or (want is None and idx.size != 1)):
        return None, (f"the index `{ind.view}` must have shape {list(want) if want else [1, 1]}"
                      f" (got {list(idx.shape)})")
    ap = dataclasses.replace(r.ap, indirect=dataclasses.replace(ind, index=idx))
    return dataclasses.replace(r, ap=ap), None


def offsets(r, index_values: np.ndarray, static: np.ndarray, oob_mode: str, where):
    """Byte offsets of every element for these index values, and which rows (one per index
    of the pattern's first entry) stay in bounds: (offsets, keep) with keep a (P,) bool
    array, or None when everything is in bounds. Raises E093 for oob_mode=error."""
    ind, isz, nbytes = r.ap.indirect, r.ap.dtype.itemsize, r.decl.nbytes
    idx = index_values.astype(np.int64)
    # (P, 1), or dma_transpose's (I0, I1) index taken column by column: indices.T.flatten()
    idx = idx.T.reshape(-1)[:static.shape[0]] if ind.per_partition else idx.reshape(-1)
    if ind.per_partition:
        off = static + (idx * ind.stride_bytes).reshape((-1,) + (1,) * (static.ndim - 1))
    else:
        off = static + idx[0] * ind.stride_bytes
    if _inside(static, idx if ind.per_partition else idx[:1], ind.stride_bytes, isz, nbytes):
        return off, None
    bad = (off < 0) | (off + isz > nbytes)
    if not bad.any():
        return off, None
    rows = bad.reshape(bad.shape[0], -1).any(axis=1)
    if oob_mode != "skip":
        first = int(np.argmax(rows)) if ind.per_partition else 0
        value = int(idx[first]) if ind.per_partition else int(idx[0])
        b = where
        raise RunError(error(
            "E093", f"{b.op if b else 'dma'}: index {value} (from `{ind.view}`"
            + (f", partition {first}" if ind.per_partition else "")
            + f") addresses outside `{r.decl.name}`",
            b.loc() if b else None, b.index if b else None,
            hint="oob_mode: skip leaves out-of-bounds transfers out"))
    return np.where(bad, 0, off), ~rows


def _inside(static: np.ndarray, idx: np.ndarray, stride: int, isz: int, nbytes: int) -> bool:
    """Whether every element is inside the tensor, from the pattern's lowest and highest
    offsets and the index's extremes (a few passes fewer than testing each element; where
    it says no, the elements are tested one by one)."""
    if static.size == 0 or idx.size == 0:
        return False
    lo, hi = int(static.min()), int(static.max())
    moves = (int(idx.min()) * stride, int(idx.max()) * stride)
    return lo + min(moves) >= 0 and hi + isz + max(moves) <= nbytes
