"""Pre-0.2 indirect DMA: an HBM tensor indexed with a tile of indices computed at run time.

NKI's legacy `nl.load` / `nl.store` pages ("indirect DMA access with dynamic index
values") index an HBM tensor with an SBUF tile of integers in one position of the index:
`nl.load(data[idx_tile, i_f])` with idx_tile of shape (P, 1) reads row idx_tile[p] of
`data` into partition p (a gather); `nl.store(data[idx_tile, i_f], value=t)` writes
partition p of t to that row (a scatter). The tile may be a view (`idx_tile[i_p, 0]`)
and may have been computed by the kernel (nki-samples' resize_nearest builds it from
`nisa.iota`, `nl.floor`, `nl.mod`).

How nkirun reads it: the NKI 0.6 form of the same transfer, an access pattern with
`vector_offset` (docs/views.md, "Indirect access"): the other index items (ints,
`nl.arange` arrays) give the pattern as for any index-array view, with the tile's
position contributing the partition entry; the index scales the stride of the dim it
stands in. So `oob_mode` (error by default: an index outside the tensor is E093) and
the run-time bounds checks are those of dma_copy. The tile must be (P, 1) of an integer
dtype in SBUF and give the view's first (partition) dim; the indexed tensor must be in
HBM; one index tile per index (else E607). A mask narrows the transfer's partitions
and, with them, the rows of the index tile.
"""
from __future__ import annotations

import weakref

import numpy as np

from nkirun.source.kernel.unsupported import kernel_error

# id(gathered handle) -> (a weak reference to it, the view with stride 0 where the tile
# stands, the index tile, the byte stride the index scales): to narrow it (a mask) and
# rebuild it. (By id: a handle's `==` is a tile comparison, so no WeakKeyDictionary.)
_GATHERS: dict = {}
_INDEX_DTYPES = ("int32", "uint32", "int16", "uint16", "int8", "uint8")


def gather(t, items: list, at: list):
    """t[items] where items[at[0]] is an index tile."""
    from nkirun.source.kernel.legacy import advanced_pattern
    from nkirun.source.kernel.legacy_mask import index_array
    from nkirun.source.kernel.views import with_pattern
    if len(at) != 1:
        raise kernel_error("E607", "an index with more than one index tile (a runtime-index "
                           "tensor) in it", hint="index one dim with the tile")
    d = at[0]
    idx = items[d]
    if t._rec.on_chip:
        raise kernel_error("E607", "indexing an on-chip tile with an index tile: indirect "
                           "access (a DMA gather) needs an HBM tensor",
                           hint="nki.isa.nc_n_gather / local_gather gather within SBUF")
    shape = tuple(idx.shape)
    if not idx._rec.on_chip or str(idx.dtype) not in _INDEX_DTYPES or len(shape) != 2 \
            or shape[1] != 1:
        raise kernel_error("E607", f"an index tile must be a (P, 1) SBUF tile of an integer "
                           f"dtype (one row index per partition); got {list(shape)} "
                           f"{idx.dtype} in {idx.buffer}")
    P = shape[0]
    items = list(items)
    items[d] = index_array(np.zeros((P, 1), np.int64))  # its place: the partition entry
    pattern, offset = advanced_pattern(list(zip(t.strides, t.shape)), t.offset, items)
    if pattern[0][1] != P:
        raise kernel_error("E607", f"the index tile's {P} partitions must be the first dim "
                           f"of the indexed view (got {[n for _, n in pattern]})",
                           hint="put the partition index arrays as [:, None]")
    base = with_pattern(t, pattern, offset)
    return _indirect(base, idx, t.strides[d] * t._v.dtype.itemsize)


def _indirect(base, idx, stride_bytes: int):
    from nkirun.source.kernel.tensor import _new_view
    from nkirun.views.strided import ViewError
    try:
        v = base._v._indexed("vector", idx, stride_bytes)
    except ViewError as e:
        raise kernel_error("E607", f"indirect access with an index tile: {e}",
                           hint=e.hint) from None
    h = _new_view(base._rec, v, base._dtype)
    key = id(h)
    _GATHERS[key] = (weakref.ref(h, lambda _, k=key: _GATHERS.pop(k, None)), base, idx,
                     stride_bytes)
    return h


def narrowed(v, key: tuple):
    """A gathered view v narrowed by `key` (slices per dim: a mask's rectangle), its index
    tile narrowed to the same partitions; None when v is no gathered view."""
    g = _GATHERS.get(id(v))
    if g is None or g[0]() is not v:
        return None
    from nkirun.source.kernel.views import index_view
    _, base, idx, stride = g
    return _indirect(index_view(base, key), index_view(idx, (key[0], slice(None))), stride)
