"""Whether a strided view (views/strided.py) is a NumPy basic index in disguise: a view
made by `.ap`, `.reshape`, an index array, ... that selects exactly the elements of some
`t[a:b, c, ...]` in the same order and shape is lowered as that basic index, the IR's
fast path (no access pattern to check, resolve and bound-box)."""
from __future__ import annotations


def match_basic(v):
    """The basic index (one item per tensor dim: an int, or (start, count, step)) equal
    to StridedView `v`, or None."""
    decl = v.decl
    dims = tuple(decl.shape)
    strides = v.decl_strides
    rest, starts = v.offset, []
    for s in strides:  # the start of every tensor dim, from the offset (mixed radix)
        starts.append(rest // s)
        rest %= s
    if any(st >= n for st, n in zip(starts, dims)):
        return None
    view = list(zip(v.strides, v.shape))
    on_chip = decl.on_chip
    if on_chip and len(view) == 2 and view[1][1] == 1:
        view = view[:1]  # the (P, 1) tail
    index, d = [], 0
    for stride, count in view:
        while d < len(dims) and count > 1 and (stride % strides[d] or stride < strides[d]):
            index.append(starts[d])
            d += 1
        if d == len(dims):
            return None
        step = stride // strides[d] if count > 1 else 1
        if count == 1 and not (on_chip and d == 0) and dims[d] > 1 and strides[d] != stride:
            return None
        if starts[d] + (count - 1) * step >= dims[d]:
            return None
        index.append((starts[d], count, step))
        d += 1
    index += starts[d:]
    if on_chip and isinstance(index[0], int):
        return None
    index = tuple(index)
    return index if _same_elements(v, strides, index) else None


def _same_elements(v, strides, index) -> bool:
    """Whether basic `index` addresses exactly view v's elements in v's shape."""
    offset, pattern = 0, []
    for it, s in zip(index, strides):
        if isinstance(it, int):
            offset += it * s
        else:
            offset += it[0] * s
            pattern.append((s * it[2], it[1]))
    if v.decl.on_chip and len(pattern) == 1:
        pattern.append((1, 1))
    if offset != v.offset or len(pattern) != len(v.shape):
        return False
    return all(c == tc and (s == ts or c == 1)
               for (s, c), ts, tc in zip(pattern, v.strides, v.shape))
