"""Index and shape arithmetic of views (views/strided.py): ints, slices, `...` and
`nl.ds`, row-major strides, -1 inference, NumPy's no-copy reshape, and
`NkiTensor.rearrange` (einops style): split, permute, merge.

    v.rearrange(('b', ('h', 'w')), ('b', 'w', 'h'), {'h': 4})   # (128, 24) -> (128, 6, 4)

Each pattern entry is a dim name or a tuple of names (a group: split in the source, merged
in the destination). It lowers to reshape_dim, permute and flatten_dims, so it obeys their
rules (the partition dim stays first; merged dims must be contiguous).
"""
from __future__ import annotations

from math import prod

from nkirun.hw import dtypes as dt


class ViewError(ValueError):
    """A view method refused what NKI's method docs forbid (message, hint)."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


def rearrange(view, src, dst, fixed: dict):
    """`view.rearrange(src, dst, fixed_sizes)` as reshape_dim, permute and flatten_dims."""
    src, dst = tuple(src), tuple(dst)
    if len(src) != view.ndim:
        raise ViewError(f"rearrange: the source pattern has {len(src)} entries for a view of "
                        f"{view.ndim} dims")
    names, v = [], view
    for i in reversed(range(len(src))):  # split from the last dim so indices stay valid
        entry = src[i]
        group = (entry,) if isinstance(entry, str) else tuple(entry)
        sizes = [fixed.get(n, -1) for n in group]
        if len(group) == 1:
            sizes = [view.shape[i]]
        elif sizes.count(-1) > 1:
            raise ViewError(f"rearrange: give the sizes of all but one of {group} in "
                            "fixed_sizes")
        if len(group) > 1:
            v = v.reshape_dim(i, tuple(sizes))
        names = list(group) + names
    flat_dst = [n for e in dst for n in ((e,) if isinstance(e, str) else tuple(e))]
    if sorted(flat_dst) != sorted(names) or len(set(names)) != len(names):
        raise ViewError(f"rearrange: {dst} must name exactly the dims of {src}, once each")
    v = v.permute(tuple(names.index(n) for n in flat_dst))
    pos, spans = 0, []
    for e in dst:
        k = 1 if isinstance(e, str) else len(e)
        spans.append((pos, pos + k - 1))
        pos += k
    for a, b in reversed(spans):
        if b > a:
            v = v.flatten_dims(a, b)
    assert prod(v.shape) == view.size
    return v

def row_major(shape) -> tuple[int, ...]:
    shape = tuple(shape)
    hit = _ROW_MAJOR.get(shape)
    if hit is None:
        hit = _row_major(shape)
        if len(_ROW_MAJOR) < 4096:
            _ROW_MAJOR[shape] = hit
    return hit


_ROW_MAJOR: dict = {}  # shape -> its row-major strides (kernels allocate the same few)


def _row_major(shape) -> tuple[int, ...]:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return tuple(reversed(out))


def infer_shape(shape: tuple, total: int) -> tuple:
    if shape.count(-1) > 1:
        raise ViewError("at most one -1 in a shape")
    if -1 in shape:
        rest = prod(n for n in shape if n != -1)
        if rest == 0 or total % rest:
            raise ViewError(f"cannot infer -1 in {list(shape)} for {total} elements")
        shape = tuple(total // rest if n == -1 else n for n in shape)
    if prod(shape) != total or any(n < 1 for n in shape):
        raise ViewError(f"shape {list(shape)} does not hold {total} elements")
    return shape


def reshape_strides(old, old_strides, new):
    """NumPy's no-copy reshape: strides for `new` over the same elements, or None."""
    old = [(n, s) for n, s in zip(old, old_strides) if n != 1]
    # size-1 dims take any stride; each run of the other new dims must cover a run of old
    # dims that is contiguous in memory
    result, oi, ni = [0] * len(new), 0, 0
    new_idx = [k for k, n in enumerate(new) if n != 1]
    while ni < len(new_idx):
        group_new, size_new = [new_idx[ni]], new[new_idx[ni]]
        group_old, size_old = [oi], old[oi][0] if oi < len(old) else 0
        while size_new != size_old:
            if size_new < size_old:
                ni += 1
                group_new.append(new_idx[ni])
                size_new *= new[new_idx[ni]]
            else:
                oi += 1
                group_old.append(oi)
                size_old *= old[oi][0]
        for a, b in zip(group_old, group_old[1:]):
            if old[a][1] != old[b][1] * old[b][0]:
                return None
        stride = old[group_old[-1]][1]
        for k in reversed(group_new):
            result[k] = stride
            stride *= new[k]
        oi += 1
        ni += 1
    return tuple(result)

class EmptySlice(ViewError):
    """A slice that selects nothing: an error where an instruction uses the view (kernels
    may make one they never use, as Python and the compiler allow)."""


def dim_index(d: int, ndim: int) -> int:
    if not -ndim <= d < ndim:
        raise ViewError(f"dim {d} is out of range for {ndim} dims")
    return d + ndim if d < 0 else d


def int_index(i, n: int, axis: int) -> int:
    if isinstance(i, bool) or not isinstance(i, int):
        if hasattr(i, "__index__"):
            i = i.__index__()
        else:
            raise ViewError(f"index {i!r} on dim {axis}: only ints, slices, `...` and nl.ds "
                            "are supported")
    if not -n <= i < n:
        raise ViewError(f"index {i} is out of bounds for dim {axis} (size {n})",
                        f"allowed: {-n}..{n - 1}")
    return i + n if i < 0 else i


def slice_triple(item: slice, n: int, axis: int) -> tuple[int, int, int]:
    step = 1 if item.step is None else item.step
    if step < 1:
        raise ViewError(f"slice step must be positive on dim {axis} (got {step})")
    for end in (item.start, item.stop):
        if end is not None and not -n <= end <= n:  # NKI refuses, NumPy would clamp
            raise ViewError(f"slice {item.start}:{item.stop} is out of bounds for dim "
                            f"{axis} (size {n})", f"allowed: {-n}..{n}")
    start, stop, _ = item.indices(n)
    count = max(0, -(-(stop - start) // step))
    if count == 0:
        raise EmptySlice(f"slice {item.start}:{item.stop} selects nothing of dim {axis} "
                         f"(size {n})")
    return start, count, step


def expand_key(key: tuple, ndim: int) -> tuple:
    """One int or slice per dim: `...` expanded, `nl.ds` as a slice, missing dims `:`."""
    if len(key) == ndim and all(k.__class__ is slice or k.__class__ is int for k in key):
        return key  # the common case
    if any(k is Ellipsis for k in key):
        i = key.index(Ellipsis)
        fill = ndim - (len(key) - 1)
        key = key[:i] + (slice(None),) * fill + key[i + 1:]
    if len(key) > ndim:
        raise ViewError(f"{len(key)} indices for a view of {ndim} dims")
    return tuple(_as_slice(k) for k in key) + (slice(None),) * (ndim - len(key))


def _as_slice(k):
    if k.__class__ is not slice and hasattr(k, "start") and hasattr(k, "size"):
        return slice(k.start, k.start + k.size)  # nl.ds(start, size)
    return k


def dtype_of(d) -> dt.DType:
    if isinstance(d, dt.DType):
        return d
    got = dt.lookup(str(getattr(d, "name", d)))
    if got is None:
        raise ViewError(f"unknown dtype {d!r}")
    return got
