"""Lowering a tensor handle to an IR operand (the `t[0:128, 3]` operand syntax).

A view made by indexing is its basic index. A view made otherwise (`.reshape`, `.ap`,
`.permute`, ...) is lowered to a basic index too when one selects exactly the same
elements in the same order with the same shape; the others need general access-pattern
operands in the IR (E604 until the IR has them).
"""
from __future__ import annotations

from nkirun.ir import AccessPattern, Slice


def _item_text(it) -> str:
    if isinstance(it, int):
        return str(it)
    start, count, step = it
    stop = start + (count - 1) * step + 1
    return f"{start}:{stop}" if step == 1 else f"{start}:{stop}:{step}"


def index_text(rec, index) -> str:
    if all(not isinstance(it, int) and it[0] == 0 and it[1] == n and it[2] == 1
           for it, n in zip(index, rec.shape)):
        return rec.name
    return f"{rec.name}[{', '.join(_item_text(it) for it in index)}]"


_SLICES: dict = {}  # (start, stop, step) -> Slice: views repeat the same few
_INDICES: dict = {}  # index tuple -> the one shared tuple equal to it


def ir_index(t):
    """The IR View index of handle t: None (the whole tensor), a NumPy basic index, or
    else an AccessPattern (without its runtime index, which the caller adds)."""
    rec = t._rec
    same_dtype = t._dtype is rec.dtype or str(t._dtype) == str(rec.dtype)
    if same_dtype and t._indirect is None:
        index = t._index if t._index is not None else match_basic(t)
        if index is not None:
            if all(not isinstance(it, int) and it[0] == 0 and it[1] == n and it[2] == 1
                   for it, n in zip(index, rec.shape)):
                return None
            key = tuple(it if isinstance(it, int) else _slice(*it) for it in index)
            # one tuple object per distinct index: the checker memoises views by its id
            return _INDICES.setdefault(key, key)
    return AccessPattern(tuple(t._pattern), t._offset,
                         None if same_dtype else t._dtype.nkirun)


def _slice(start, count, step):
    key = (start, count, step)
    s = _SLICES.get(key)
    if s is None:
        s = _SLICES[key] = Slice(start, start + (count - 1) * step + 1,
                                 None if step == 1 else step)
    return s




def match_basic(t):
    """The basic index equal to view `t` (same elements, order and shape), or None."""
    rec = t._rec
    strides, dims = rec.strides, rec.shape
    # the start of every tensor dim, from the offset (mixed radix)
    rest, starts = t._offset, []
    for s in strides:
        starts.append(rest // s)
        rest %= s
    if any(st >= n for st, n in zip(starts, dims)):
        return None
    view = [(s, c) for s, c in t._pattern]
    on_chip = rec.on_chip
    if on_chip and len(view) == 2 and view[1][1] == 1:
        view = view[:1]  # the (P, 1) tail
    index, d = [], 0
    for stride, count in view:
        while d < len(dims) and (count > 1 and (stride % strides[d] or stride < strides[d])):
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
    return index if same_elements(rec, index, t) else None


def same_elements(rec, index, t) -> bool:
    """Whether basic `index` addresses exactly view t's elements in t's shape."""
    offset, pattern = 0, []
    for it, s in zip(index, rec.strides):
        if isinstance(it, int):
            offset += it * s
        else:
            offset += it[0] * s
            pattern.append((s * it[2], it[1]))
    if rec.on_chip and len(pattern) == 1:
        pattern.append((1, 1))
    if offset != t._offset or len(pattern) != len(t._pattern):
        return False
    return all(c == tc and (s == ts or c == 1)
               for (s, c), (ts, tc) in zip(pattern, t._pattern))
