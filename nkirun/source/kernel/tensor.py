"""`nl.ndarray`: a tensor handle, and the views NKI derives from it.

Every handle is an access pattern over its tensor's storage, as NKI 0.6 defines views
(`.ap`): an element offset and `[stride, count]` pairs in row-major element units (on
chip, the partition stride is the per-partition free size). Views made by indexing also
keep the NumPy basic index they correspond to, which is how they reach the IR (the
operand syntax `t[0:128, 3]` the YAML and text front ends share). A view that no basic
index describes (`.reshape` of a slice, `.ap` with other strides, broadcasts) is lowered
by `lower.py`.

Readings (NKI 0.6 `NkiTensor.__getitem__`): on chip an integer on the partition dim keeps
it as a size-1 dim and a view keeps at least two dims (a (P, 1) tile); in HBM an integer
removes its dim. Slices are NumPy slices, but a start or stop beyond the dim is an error
rather than silently clamped.
"""
from __future__ import annotations

from nkirun.source.kernel import consts
from nkirun.source.kernel.unsupported import kernel_error, unsupported


class TensorRec:
    """One allocated tensor: what becomes a TensorDecl when an instruction first uses it."""

    __slots__ = ("name", "shape", "dtype", "buffer", "loc", "init", "declared", "strides",
                 "whole", "pattern", "core")

    def __init__(self, name, shape, dtype, buffer, loc, init=None, core=None):
        self.name, self.shape, self.dtype, self.buffer = name, shape, dtype, buffer
        self.loc, self.init, self.declared = loc, init, False
        self.core = core  # two-core traces: the core owning a non-shared tensor
        layout = _LAYOUTS.get(shape)
        if layout is None:  # (a loop allocates the same few shapes: share their tuples)
            layout = _LAYOUTS[shape] = _layout(shape)
        self.strides, self.whole, self.pattern = layout

    @property
    def on_chip(self) -> bool:
        return self.buffer.ir != "hbm"


_LAYOUTS: dict = {}  # shape -> (strides, whole, pattern); tuples of ints: safe to share


def _layout(shape) -> tuple:
    """Row-major element strides, the basic index of the whole tensor, and its access
    pattern ((stride, count) per dim)."""
    strides, s = [], 1
    for n in reversed(shape):
        strides.append(s)
        s *= n
    strides = tuple(reversed(strides))
    return strides, tuple((0, n, 1) for n in shape), tuple(zip(strides, shape))


class DynSlice:
    """`nl.ds(start, size)`."""

    __slots__ = ("start", "size")

    def __init__(self, start, size):
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (start, size)):
            raise unsupported("nl.ds with a run-time (register or tensor) start")
        self.start, self.size = start, size

    def __repr__(self) -> str:
        return f"nl.ds({self.start}, {self.size})"


_NO_INDEX = object()  # a handle's IR index not computed yet


def _new_view(rec, index, offset, pattern, dtype=None):
    v = object.__new__(ndarray)
    v._rec, v._index, v._offset, v._pattern = rec, index, offset, pattern
    v._dtype = dtype or rec.dtype
    v._ir = _NO_INDEX
    v._indirect = None  # (kind, index handle, tensor dim) of a runtime-indexed view
    return v


class ndarray:
    """A tensor (or a view of one) in HBM, SBUF or PSUM. `nl.ndarray(shape, dtype,
    buffer=nl.sbuf, name='')` allocates a new tensor on every call."""

    __slots__ = ("_rec", "_index", "_offset", "_pattern", "_dtype", "_ir", "_indirect",
                 "__weakref__")

    def __new__(cls, shape, dtype, buffer=consts.sbuf, name="", address=None):
        from nkirun.source.kernel.session import current
        rec = current().allocate(shape, dtype, buffer, name)
        v = _new_view(rec, rec.whole, 0, rec.pattern)
        v._ir = None  # the whole tensor
        return v

    # ---- attributes ----------------------------------------------------------------------
    @property
    def shape(self) -> tuple:
        return tuple(c for _, c in self._pattern)

    @property
    def dtype(self):
        return self._dtype

    @property
    def buffer(self):
        return self._rec.buffer

    @property
    def name(self) -> str:
        return self._rec.name

    @property
    def ndim(self) -> int:
        return len(self._pattern)

    @property
    def size(self) -> int:
        n = 1
        for _, c in self._pattern:
            n *= c
        return n

    @property
    def strides(self) -> tuple:
        return tuple(s for s, _ in self._pattern)

    @property
    def offset(self) -> int:
        return self._offset

    def get_pattern(self) -> list:
        return [[s, c] for s, c in self._pattern]

    def is_contiguous(self) -> bool:
        return _contiguous(self._pattern[1:] if self._rec.on_chip else self._pattern)

    def is_indirect(self) -> bool:
        return self._indirect is not None

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        return (f"nl.ndarray(name={self.name!r}, shape={self.shape}, dtype={self.dtype}, "
                f"buffer={self.buffer!r})")

    def __bool__(self):
        raise kernel_error("E603", "a tensor has no truth value while tracing (its contents "
                           "are only known when the program runs)")

    # ---- indexing ------------------------------------------------------------------------
    def __getitem__(self, key):
        from nkirun.source.kernel.views import index_view
        return index_view(self, key)

    def __setitem__(self, key, value):
        raise unsupported("assigning into a tensor (t[...] = value); use nisa.tensor_copy")

    def __iter__(self):
        raise kernel_error("E603", "a tensor cannot be iterated while tracing",
                           hint="index it with t[i] or slices instead")

    # ---- view methods (views.py) ---------------------------------------------------------
    def reshape(self, shape, *more):
        from nkirun.source.kernel.views import reshape
        if isinstance(shape, int):
            shape = (shape, *more)
        return reshape(self, tuple(shape))

    def ap(self, pattern, offset=None, scalar_offset=None, vector_offset=None,
           indirect_dim=0, dtype=None):
        from nkirun.source.kernel.views import access_pattern
        return access_pattern(self, pattern, offset, scalar_offset, vector_offset,
                              indirect_dim, dtype)

    def view(self, dtype):
        from nkirun.source.kernel.views import reinterpret
        return reinterpret(self, dtype)

    reinterpret_cast = view

    def slice(self, dim, start, end, step=1):
        key = [slice(None)] * self.ndim
        key[dim] = slice(start, end, step)
        return self[tuple(key)]

    def select(self, dim, index):
        if isinstance(index, ndarray):
            from nkirun.source.kernel.views import dynamic_select
            return dynamic_select(self, dim, index)
        key = [slice(None)] * self.ndim
        key[dim] = index
        return self[tuple(key)]

    def permute(self, dims):
        from nkirun.source.kernel.views import permute
        return permute(self, tuple(dims))

    def broadcast(self, dim, size):
        from nkirun.source.kernel.views import broadcast
        return broadcast(self, dim, size)

    def expand_dim(self, dim):
        from nkirun.source.kernel.views import expand_dim
        return expand_dim(self, dim)

    def squeeze_dim(self, dim):
        from nkirun.source.kernel.views import squeeze_dim
        return squeeze_dim(self, dim)

    def reshape_dim(self, dim, shape):
        from nkirun.source.kernel.views import reshape_dim
        return reshape_dim(self, dim, tuple(shape))

    def flatten_dims(self, start_dim, end_dim):
        from nkirun.source.kernel.views import flatten_dims
        return flatten_dims(self, start_dim, end_dim)

    def vector_select(self, dim, vector_offset):
        from nkirun.source.kernel.views import vector_select
        return vector_select(self, dim, vector_offset)

    def indirect(self, index, num_elem=None):
        raise unsupported("NkiTensor.indirect (tensor indirection, NeuronCore-v4)")

    def rearrange(self, src_pattern, dst_pattern, fixed_sizes=None):
        raise unsupported("NkiTensor.rearrange")

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise unsupported(f"nki.language.NkiTensor.{name}")


def _contiguous(pattern) -> bool:
    expect = 1
    for stride, count in reversed(pattern):
        if count != 1 and stride != expect:
            return False
        expect *= count
    return True


NkiTensor = ndarray
