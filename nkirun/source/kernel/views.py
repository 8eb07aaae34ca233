"""View arithmetic on tensor handles (indexing, `.reshape`, `.ap`, ...) and their
lowering to IR operands.

A handle's `_index` is the NumPy basic index into its tensor that the view equals, one
item per tensor dim: an int, or (start, count, step); None when no basic index does
(`.ap` with other strides, a reshape that splits dims, a broadcast). `_pattern` and
`_offset` always describe the view exactly.
"""
from __future__ import annotations

from nkirun.source.kernel import consts
from nkirun.source.kernel.tensor import DynSlice, _contiguous, _new_view
from nkirun.source.kernel.unsupported import kernel_error, unsupported


def _bad(message: str, hint: str | None = None):
    return kernel_error("E603", message, hint)


def _view_bad(message: str, hint: str | None = None):
    """A view method's documented constraint not met (NkiTensor, NKI 0.6)."""
    return kernel_error("E604", message, hint)


# ---- indexing ---------------------------------------------------------------------------
def _normalise_key(t, key) -> list:
    key = list(key) if isinstance(key, tuple) else [key]
    if len(key) == len(t._pattern) and all(k.__class__ in _PLAIN for k in key):
        return key  # the common case: one int or slice per dim
    if any(k is None for k in key):
        raise _bad("None (np.newaxis) is not allowed in a tensor index",
                   hint="use .expand_dim(dim)")
    if sum(k is Ellipsis for k in key) > 1:
        raise _bad("an index can hold only one `...`")
    if Ellipsis in key:
        i = key.index(Ellipsis)
        key[i:i + 1] = [slice(None)] * (t.ndim - len(key) + 1)
    if len(key) > t.ndim:
        raise _bad(f"too many indices ({len(key)}) for {t.name} view of shape {list(t.shape)}")
    return key + [slice(None)] * (t.ndim - len(key))


_PLAIN = frozenset({int, slice})


def _item(k, dim: int, axis: int, name: str):
    """(start, count, step) for a slice or nl.ds, or an int for an integer index."""
    if k.__class__ is slice and k.step is None:
        start, stop = k.start, k.stop
        start = 0 if start is None else start
        stop = dim if stop is None else stop
        if 0 <= start < stop <= dim:
            return (start, stop - start, 1)
    if isinstance(k, DynSlice):
        k = slice(k.start, k.start + k.size)
    if isinstance(k, bool) or not isinstance(k, (int, slice)) and not hasattr(k, "__index__"):
        if hasattr(k, "_rec"):
            raise unsupported("indexing with a tensor (dynamic index); use .ap(scalar_offset=...)")
        raise _bad(f"cannot index dimension {axis} of {name} with {k!r}",
                   hint="indices are ints, slices and nl.ds(start, size)")
    if not isinstance(k, slice):
        i = int(k.__index__())
        i = i + dim if i < 0 else i
        if not 0 <= i < dim:
            raise _bad(f"index {int(k)} is out of bounds for dimension {axis} of {name} "
                       f"(size {dim})")
        return i
    step = 1 if k.step is None else k.step
    if step <= 0:
        raise _bad(f"slice step must be positive, got {step}")
    for v in (k.start, k.stop):
        if v is not None and not -dim <= v <= dim:
            raise _bad(f"slice {k.start}:{k.stop} is out of bounds for dimension {axis} of "
                       f"{name} (size {dim})")
    start, stop, _ = k.indices(dim)
    count = max(0, -(-(stop - start) // step))
    if count == 0:
        raise _bad(f"slice {k.start}:{k.stop} selects nothing of dimension {axis} of {name}")
    return (start, count, step)


def index_view(t, key):
    rec = t._rec
    items = [_item(k, n, a, rec.name) for a, (k, n) in enumerate(zip(_normalise_key(t, key),
                                                                      t.shape))]
    offset, pattern = t._offset, []
    for axis, ((stride, _), it) in enumerate(zip(t._pattern, items)):
        if isinstance(it, int):
            offset += it * stride
            if axis == 0 and rec.on_chip:
                pattern.append((stride, 1))
        else:
            offset += it[0] * stride
            pattern.append((stride * it[2], it[1]))
    index = _compose_index(t, items) if t._index is not None else None
    if rec.on_chip and len(pattern) == 1:
        pattern.append((1, 1))  # a (P, 1) tile
    elif not pattern:  # an HBM view keeps at least one dim: the last int becomes 1 long
        pattern.append((1, 1))
        if index is not None:
            last = max(d for d, it in enumerate(index) if isinstance(it, int))
            index = index[:last] + ((index[last], 1, 1),) + index[last + 1:]
    return _new_view(rec, index, offset, tuple(pattern), t._dtype)


def _compose_index(t, items):
    """The basic index of t[items] in tensor coordinates (t's own index is basic)."""
    rec = t._rec
    base = list(t._index)
    visible = [d for d, it in enumerate(base) if not isinstance(it, int)]
    if rec.on_chip and len(visible) == 1 and len(items) == 2:
        visible.append(None)  # the (P, 1) tail of a view that kept only its partition dim
    for d, it in zip(visible, items):
        if d is None:
            continue  # indexing the synthetic tail: 0 or 0:1 leaves it as it is
        start, _, step = base[d]
        if isinstance(it, int):
            pos = start + it * step
            base[d] = (pos, 1, 1) if d == 0 and rec.on_chip else pos
        else:
            base[d] = (start + it[0] * step, it[1], step * it[2])
    return tuple(base)


# ---- view methods ------------------------------------------------------------------------
def _free_pattern(t):
    return t._pattern[1:] if t._rec.on_chip else t._pattern


def reshape(t, shape):
    if any(not isinstance(n, int) or n <= 0 for n in shape if n != -1):
        raise _view_bad(f"reshape: bad shape {shape}")
    total = t.size
    if shape.count(-1) == 1:
        known = 1
        for n in shape:
            known *= n if n != -1 else 1
        shape = tuple(total // known if n == -1 else n for n in shape)
    n = 1
    for s in shape:
        n *= s
    if n != total:
        raise _view_bad(f"reshape: cannot reshape {t.name} view of shape {list(t.shape)} "
                   f"({total} elements) to {list(shape)}")
    if tuple(shape) == t.shape:
        return t
    on_chip = t._rec.on_chip
    if on_chip and shape[0] != t.shape[0]:
        raise _view_bad(f"reshape: on-chip views keep their partition dim ({t.shape[0]}), got "
                   f"{list(shape)}")
    free = _free_pattern(t)
    if not _contiguous(free):
        raise _view_bad(f"reshape: the view of {t.name} is not contiguous",
                   hint="reshape the whole tensor, or use .ap(pattern=...)")
    free_shape = shape[1:] if on_chip else shape
    strides, s = [], 1
    for c in reversed(free_shape):
        strides.insert(0, s)
        s *= c
    pattern = ((t._pattern[0],) if on_chip else ()) + tuple(zip(strides, free_shape))
    return _new_view(t._rec, None, t._offset, pattern, t._dtype)


def access_pattern(t, pattern, offset, scalar_offset, vector_offset, indirect_dim, dtype):
    try:
        pairs = tuple((int(st), int(c)) for st, c in pattern)
    except (TypeError, ValueError):
        raise _view_bad(f".ap: pattern must be a list of [stride, count] pairs, got {pattern!r}")
    if not pairs or any(c <= 0 for _, c in pairs):
        raise _view_bad(f".ap: every count must be positive, got {pattern!r}")
    view_dtype = t._dtype
    start = t._offset
    if dtype is not None:
        view_dtype = consts.to_dtype(dtype)
        if view_dtype is None or view_dtype.nkirun is None:
            raise _view_bad(f".ap: unknown dtype {dtype!r}")
        base = start * t._dtype.itemsize  # the view's start in bytes, counted in the new dtype
        if base % view_dtype.itemsize:
            raise _view_bad(f".ap: the view starts at byte {base}, not a whole {view_dtype} element")
        start = base // view_dtype.itemsize
    if t._rec.on_chip and len(pairs) == 1:
        pairs += ((1, 1),)
    v = _new_view(t._rec, None, start + (0 if offset is None else int(offset)), pairs,
                  view_dtype)
    if scalar_offset is None and vector_offset is None:
        return v
    if scalar_offset is not None and vector_offset is not None:
        raise _view_bad(".ap: give scalar_offset or vector_offset, not both")
    dim = indirect_dim + t.ndim if indirect_dim < 0 else indirect_dim
    if not 0 <= dim < t.ndim:
        raise _view_bad(f".ap: indirect_dim {indirect_dim} is out of range for {t.ndim} dims")
    kind = "vector" if vector_offset is not None else "scalar"
    return _indexed(v, kind, vector_offset if kind == "vector" else scalar_offset,
                    t._pattern[dim][0] * t._dtype.itemsize)


def _indexed(v, kind, index, stride_bytes):
    """v with a runtime index (.ap(scalar_offset/vector_offset), select, vector_select)."""
    rec = v._rec
    if rec.on_chip:
        raise _view_bad("indirect addressing (scalar_offset/vector_offset) needs an HBM tensor")
    from nkirun.source.kernel.control import VirtualRegister
    if not (kind == "scalar" and isinstance(index, VirtualRegister)) and not hasattr(index, "_rec"):
        raise unsupported(f"a {type(index).__name__} as a runtime index (a VirtualRegister)",
                          "give an SBUF tensor holding the index")
    dims = [s * rec.dtype.itemsize for s in rec.strides]
    if stride_bytes not in dims:
        raise _view_bad("the indexed dim's stride is no dim of the tensor",
                   hint="index a dim of the tensor itself, or of a contiguous reshape")
    v._indirect = (kind, index, dims.index(stride_bytes))
    return v


def dynamic_select(t, dim, index):
    dim = dim + t.ndim if dim < 0 else dim
    pattern = t._pattern[:dim] + t._pattern[dim + 1:]
    v = _new_view(t._rec, None, t._offset, pattern or ((1, 1),), t._dtype)
    return _indexed(v, "scalar", index, t._pattern[dim][0] * t._dtype.itemsize)


def vector_select(t, dim, vector_offset):
    if (dim + t.ndim if dim < 0 else dim) != 0:
        raise _view_bad("vector_select needs dim 0")
    rows = vector_offset.shape[0]
    v = _new_view(t._rec, None, t._offset, ((t._pattern[0][0], rows),) + t._pattern[1:],
                  t._dtype)
    return _indexed(v, "vector", vector_offset, t._pattern[0][0] * t._dtype.itemsize)


def reinterpret(t, dtype):
    d = consts.to_dtype(dtype)
    if d is None or d.nkirun is None:
        raise _view_bad(f".view: unknown or unsupported dtype {dtype!r}")
    old = t._dtype
    if d.itemsize == old.itemsize:
        return _new_view(t._rec, None, t._offset, t._pattern, d)
    last_stride, last = t._pattern[-1]
    if last_stride != 1 and last != 1:
        raise _view_bad(".view: the last dim must be contiguous to reinterpret the dtype")
    head = t._pattern[:-1]
    if d.itemsize < old.itemsize:
        r = old.itemsize // d.itemsize
        pattern = tuple((st * r, c) for st, c in head) + ((1, last * r),)
        return _new_view(t._rec, None, t._offset * r, pattern, d)
    r = d.itemsize // old.itemsize
    if last % r or t._offset % r or any(st % r for st, _ in head):
        raise _view_bad(f".view: {list(t.shape)} {old} does not hold whole {d} elements")
    pattern = tuple((st // r, c) for st, c in head) + ((1, last // r),)
    return _new_view(t._rec, None, t._offset // r, pattern, d)


def permute(t, dims):
    if sorted(dims) != list(range(t.ndim)):
        raise _view_bad(f"permute: {dims} is not a permutation of the {t.ndim} dims")
    if t._rec.on_chip and dims[0] != 0:
        raise _view_bad("permute: on chip the partition dim stays first")
    if dims == tuple(range(t.ndim)):
        return t
    return _new_view(t._rec, None, t._offset, tuple(t._pattern[d] for d in dims), t._dtype)


def broadcast(t, dim, size):
    if t.shape[dim] != 1:
        raise _view_bad(f"broadcast: dim {dim} has size {t.shape[dim]}, not 1")
    if t._rec.on_chip and dim == 0:
        raise _view_bad("broadcast: not on the partition dim of an on-chip tensor")
    pattern = list(t._pattern)
    pattern[dim] = (0, size)
    return _new_view(t._rec, None, t._offset, tuple(pattern), t._dtype)


def expand_dim(t, dim):
    if t._rec.on_chip and dim == 0:
        raise _view_bad("expand_dim: not before the partition dim of an on-chip tensor")
    pattern = list(t._pattern)
    pattern.insert(dim, (1, 1))
    return _new_view(t._rec, None, t._offset, tuple(pattern), t._dtype)


def squeeze_dim(t, dim):
    if t.shape[dim] != 1:
        raise _view_bad(f"squeeze_dim: dim {dim} has size {t.shape[dim]}, not 1")
    pattern = list(t._pattern)
    del pattern[dim]
    return _new_view(t._rec, None, t._offset, tuple(pattern), t._dtype)


def reshape_dim(t, dim, shape):
    stride, count = t._pattern[dim]
    if shape.count(-1) == 1:
        known = 1
        for n in shape:
            known *= n if n != -1 else 1
        shape = tuple(count // known if n == -1 else n for n in shape)
    n = 1
    for s in shape:
        n *= s
    if n != count:
        raise _view_bad(f"reshape_dim: {shape} does not have {count} elements")
    new, s = [], stride
    for c in reversed(shape):
        new.insert(0, (s, c))
        s *= c
    pattern = t._pattern[:dim] + tuple(new) + t._pattern[dim + 1:]
    return _new_view(t._rec, None, t._offset, pattern, t._dtype)


def flatten_dims(t, start_dim, end_dim):
    part = t._pattern[start_dim:end_dim + 1]
    if not _contiguous_run(part):
        raise _view_bad(f"flatten_dims: dims {start_dim}..{end_dim} are not contiguous")
    n = 1
    for _, c in part:
        n *= c
    pattern = t._pattern[:start_dim] + ((part[-1][0], n),) + t._pattern[end_dim + 1:]
    return _new_view(t._rec, None, t._offset, pattern, t._dtype)


def _contiguous_run(part) -> bool:
    for (s0, _), (s1, c1) in zip(part, part[1:]):
        if s0 != s1 * c1:
            return False
    return True
