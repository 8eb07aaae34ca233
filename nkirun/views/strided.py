"""NKI tensor views for the Python front end: `t[...]`, `.ap()`, `.reshape()`, `.view()`,
`.permute()`, `.broadcast()`, ... as NKI 0.6's `NkiTensor` defines them, lowered to the IR.

    v = StridedView.of(decl)                 # the whole tensor (decl: ir.TensorDecl)
    u = v[:, 0:256].reshape((128, 4, 64))    # every method returns a new StridedView
    w = v.ap([[512, 128], [0, 8]], offset=3) # NKI's .ap: [[step, num], ...]
    u.shape, u.strides, u.offset, u.dtype, u.get_pattern(), u.is_contiguous()
    operand = u.to_ir(loc)                   # ir.View: a NumPy basic index when the view
                                             # is one, else an ir.AccessPattern

A view is `shape`, `strides` and `offset` in elements of its `dtype`, counted from the
start of the tensor's storage (NKI's "strided view"); while it is still a NumPy basic index
of the tensor it also keeps that index (`basic`), so plain slicing stays on the fast path.
Methods raise ViewError (message, hint) for what NKI's method docs forbid; bounds and the
hardware rules are checked when the program is checked (views/access.py), located there.

Readings:
  * `.ap(pattern, offset=N)` on a view starts at that view's own storage offset plus N (the
    NkiTensor.ap reference; `out[k].ap(..., offset=0)` in public kernels relies on it),
    with steps relative to the storage (not to the view's strides);
  * `nl.ds(start, size)` is `slice(start, start + size)` (any object with .start/.size);
  * a runtime index (`.ap(scalar_offset=..)`/`.ap(vector_offset=..)`, `select(dim, tensor)`,
    `vector_select(0, tensor)`; the index is a StridedView or an ir.View) makes an indirect
    view of an HBM tensor (views/indirect.py); `indirect_dim` names a dim of the view it is
    called on, whose stride must be the stride of a dim of the declared tensor; such a view
    is final (further view methods raise ViewError);
  * an integer index on an on-chip partition dim keeps it at size 1; on a free dim it drops
    the dim unless fewer than 2 dims would remain (then the last one stays at size 1).
"""
from __future__ import annotations

from math import prod

from nkirun.diagnostics import Loc
from nkirun.hw import dtypes as dt
from nkirun.ir import AccessPattern, Slice, TensorDecl, View, view_at
from nkirun.views.basic_match import match_basic
from nkirun.views.reshape import (ViewError, dim_index, dtype_of, expand_key, infer_shape,
                                   int_index, rearrange, reshape_strides, row_major,
                                   slice_triple)


class StridedView:
    """A view: `shape`, `strides` (elements of `dtype`), `offset` (elements of `dtype` from
    the start of the storage), plus:

    basic     the NumPy basic index of decl this view is (one item per tensor dim: int or
              (start, count, step)), None once the view is no basic index;
    tail      True when an on-chip view keeps a size-1 dim that is no tensor dim;
    indirect  ("scalar" | "vector", the index's ir.View, the tensor dim whose stride the
              index scales, or (0, stride in elements) when no dim has it) for a
              runtime-indexed view (final: no more view methods).
    Immutable by convention (a plain slotted class: kernels make a view per statement)."""

    __slots__ = ("decl", "shape", "strides", "offset", "dtype", "basic", "tail", "indirect")

    def __init__(self, decl: TensorDecl, shape, strides, offset: int, dtype: dt.DType,
                 basic: tuple | None = None, tail: bool = False, indirect: tuple | None = None):
        self.decl, self.shape, self.strides, self.offset = decl, shape, strides, offset
        self.dtype, self.basic, self.tail, self.indirect = dtype, basic, tail, indirect

    def _replace(self, **changes) -> StridedView:
        v = _new_view(StridedView)
        for k in self.__slots__:
            setattr(v, k, changes.get(k, getattr(self, k)))
        return v

    def __repr__(self) -> str:
        return (f"StridedView({self.decl.name}, shape={self.shape}, strides={self.strides}, "
                f"offset={self.offset}, dtype={self.dtype.name})")

    @classmethod
    def of(cls, decl: TensorDecl) -> StridedView:
        shape = tuple(decl.shape)
        return cls(decl, shape, row_major(shape), 0, decl.dtype,
                   tuple((0, n, 1) for n in shape))

    # ---- NkiTensor attributes ------------------------------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return prod(self.shape)

    @property
    def on_chip(self) -> bool:
        return self.decl.on_chip

    def get_pattern(self) -> list[list[int]]:
        return [[s, n] for s, n in zip(self.strides, self.shape)]

    def is_contiguous(self) -> bool:
        dims = list(zip(self.shape, self.strides))[1 if self.on_chip else 0:]
        want = 1
        for n, s in reversed(dims):
            if n != 1 and s != want:
                return False
            want *= n
        return True

    # ---- indexing ------------------------------------------------------------------------------
    def __getitem__(self, key) -> StridedView:
        self._final()
        items = expand_key(key if key.__class__ is tuple else (key,), self.ndim)
        on_chip = self.decl.on_chip
        basic = list(self.basic) if self.basic is not None else None
        dims = None if basic is None else \
            [d for d, b in enumerate(basic) if b.__class__ is tuple] + ([None] if self.tail else [])
        shape, strides, offset, last_int = [], [], self.offset, None
        for axis, item in enumerate(items):
            n, s = self.shape[axis], self.strides[axis]
            d = None if dims is None else dims[axis]
            if item.__class__ is slice:
                start, count, step = (0, n, 1) if item == _ALL else slice_triple(item, n, axis)
                offset += start * s
                shape.append(count)
                strides.append(s * step)
                if d is not None:
                    b0, _, bs = basic[d]
                    basic[d] = (b0 + start * bs, count, bs * step)
                continue
            i = int_index(item, n, axis)
            offset += i * s
            if axis == 0 and on_chip:  # the partition dim stays, at size 1
                shape.append(1)
                strides.append(s)
            else:
                last_int = s
            if d is not None:
                b0, _, bs = basic[d]
                basic[d] = (b0 + i * bs, 1, 1) if (d == 0 and on_chip) else b0 + i * bs
        if len(shape) < (2 if on_chip else 1) and last_int is not None:
            shape.append(1)  # NKI keeps the last dim at size 1
            strides.append(last_int)
        v = StridedView(self.decl, tuple(shape), tuple(strides), offset, self.dtype)
        if basic is not None and self.dtype is self.decl.dtype:
            v.basic, v.tail = _basic_result(basic, on_chip)
        return v

    def slice(self, dim: int, start: int, end: int, step: int = 1) -> StridedView:
        dim = dim_index(dim, self.ndim)
        if not (0 <= start < end <= self.shape[dim]) or step < 1:
            raise ViewError(f"slice({dim}, {start}, {end}, {step}) is out of range for size "
                            f"{self.shape[dim]}", "0 <= start < end <= size and step >= 1")
        key = [slice(None)] * self.ndim
        key[dim] = slice(start, end, step)
        return self[tuple(key)]

    def select(self, dim: int, index) -> StridedView:
        dim = dim_index(dim, self.ndim)
        if not isinstance(index, int):  # a (1, 1) SBUF tensor: a runtime index (HBM only)
            self._final()
            v = self._new(self.shape[:dim] + self.shape[dim + 1:],
                          self.strides[:dim] + self.strides[dim + 1:], self.offset)
            return v._indexed("scalar", index, self.strides[dim] * self.dtype.itemsize)
        if dim == 0 and self.on_chip:
            raise ViewError("select cannot remove the partition dim of an on-chip tensor",
                            "use slice(0, i, i + 1) to keep one partition")
        key = [slice(None)] * self.ndim
        key[dim] = index
        return self[tuple(key)]

    # ---- reshaping -----------------------------------------------------------------------------
    def reshape(self, shape) -> StridedView:
        shape = infer_shape(tuple(shape), self.size)
        if self.on_chip and shape[0] != self.shape[0]:
            raise ViewError(f"reshape must keep the partition dim {self.shape[0]} of an "
                            f"on-chip tensor (got {list(shape)})")
        if shape == self.shape:
            return self
        strides = reshape_strides(self.shape, self.strides, shape)
        if strides is None:
            raise ViewError(f"cannot reshape a view of shape {list(self.shape)} with strides "
                            f"{list(self.strides)} to {list(shape)} without copying",
                            "reshape before slicing or permuting, or copy the data first")
        return self._new(shape, strides, self.offset)

    def reshape_dim(self, dim: int, shape) -> StridedView:
        dim = dim_index(dim, self.ndim)
        shape = infer_shape(tuple(shape), self.shape[dim])
        if dim == 0 and self.on_chip and len(shape) != 1:
            raise ViewError("reshape_dim cannot split the partition dim of an on-chip tensor")
        inner = row_major(shape)
        s = self.strides[dim]
        return self._new(self.shape[:dim] + shape + self.shape[dim + 1:],
                         self.strides[:dim] + tuple(x * s for x in inner)
                         + self.strides[dim + 1:], self.offset)

    def flatten_dims(self, start_dim: int, end_dim: int) -> StridedView:
        a, b = dim_index(start_dim, self.ndim), dim_index(end_dim, self.ndim)
        if a > b or (a == 0 and self.on_chip and b > 0):
            raise ViewError(f"flatten_dims({start_dim}, {end_dim}): need start <= end, and "
                            "start > 0 on an on-chip tensor")
        sub = self.shape[a:b + 1]
        strides = reshape_strides(sub, self.strides[a:b + 1], (prod(sub),))
        if strides is None:
            raise ViewError(f"dims {a}..{b} are not contiguous in memory; flatten_dims needs "
                            "them to be")
        return self._new(self.shape[:a] + (prod(sub),) + self.shape[b + 1:],
                         self.strides[:a] + strides + self.strides[b + 1:], self.offset)

    def expand_dim(self, dim: int) -> StridedView:
        dim = dim_index(dim, self.ndim + 1)
        if dim == 0 and self.on_chip:
            raise ViewError("expand_dim cannot insert before the partition dim of an on-chip "
                            "tensor")
        return self._new(self.shape[:dim] + (1,) + self.shape[dim:],
                         self.strides[:dim] + (0,) + self.strides[dim:], self.offset)

    def squeeze_dim(self, dim: int) -> StridedView:
        dim = dim_index(dim, self.ndim)
        if self.shape[dim] != 1:
            raise ViewError(f"squeeze_dim({dim}): the dim has size {self.shape[dim]}, not 1")
        if dim == 0 and self.on_chip:
            raise ViewError("squeeze_dim cannot remove the partition dim of an on-chip tensor")
        return self._new(self.shape[:dim] + self.shape[dim + 1:],
                         self.strides[:dim] + self.strides[dim + 1:], self.offset)

    def permute(self, dims) -> StridedView:
        dims = tuple(dim_index(d, self.ndim) for d in dims)
        if sorted(dims) != list(range(self.ndim)):
            raise ViewError(f"permute{dims} is not a permutation of 0..{self.ndim - 1}")
        if self.on_chip and dims[0] != 0:
            raise ViewError("permute must keep the partition dim first on an on-chip tensor")
        if dims == tuple(range(self.ndim)):
            return self
        return self._new(tuple(self.shape[d] for d in dims),
                         tuple(self.strides[d] for d in dims), self.offset)

    def broadcast(self, dim: int, size: int) -> StridedView:
        dim = dim_index(dim, self.ndim)
        if self.shape[dim] != 1:
            raise ViewError(f"broadcast({dim}, {size}): the dim has size {self.shape[dim]}; "
                            "only a size-1 dim can be broadcast")
        if dim == 0 and self.on_chip:
            raise ViewError("broadcast cannot repeat the partition dim of an on-chip tensor",
                            "partitions are copied by an instruction (e.g. a DMA from HBM "
                            "with a zero partition step)")
        return self._new(self.shape[:dim] + (size,) + self.shape[dim + 1:],
                         self.strides[:dim] + (0,) + self.strides[dim + 1:], self.offset)

    def rearrange(self, src_pattern, dst_pattern, fixed_sizes=None) -> StridedView:
        return rearrange(self, src_pattern, dst_pattern, fixed_sizes or {})

    # ---- reinterpretation and raw patterns -----------------------------------------------------
    def view(self, dtype) -> StridedView:
        self._final()
        new = dtype_of(dtype)
        old = self.dtype
        if new.itemsize == old.itemsize:
            return self._replace(dtype=new, basic=None, tail=False)
        if self.strides[-1] != 1 and self.shape[-1] != 1:
            raise ViewError("view(dtype) needs the last dim to be contiguous (stride 1)")
        if new.itemsize > old.itemsize:
            r = new.itemsize // old.itemsize
            if self.shape[-1] % r or self.offset % r or any(s % r for s in self.strides[:-1]):
                raise ViewError(f"cannot view {old.name} as {new.name}: the last dim "
                                f"({self.shape[-1]}), the offset and the strides must be "
                                f"multiples of {r}")
            shape = self.shape[:-1] + (self.shape[-1] // r,)
            strides = tuple(s // r for s in self.strides[:-1]) + (1,)
            return StridedView(self.decl, shape, strides, self.offset // r, new)
        r = old.itemsize // new.itemsize
        return StridedView(self.decl, self.shape[:-1] + (self.shape[-1] * r,),
                           tuple(s * r for s in self.strides[:-1]) + (1,),
                           self.offset * r, new)

    reinterpret_cast = view

    def ap(self, pattern, offset=None, scalar_offset=None, vector_offset=None,
           indirect_dim=0, dtype=None) -> StridedView:
        self._final()
        new = dtype_of(dtype) if dtype is not None else self.dtype
        base = self.offset * self.dtype.itemsize
        if base % new.itemsize:
            raise ViewError(f"the view starts at byte {base}, not a whole {new.name} element")
        try:
            pat = [(int(s), int(n)) for s, n in pattern]
        except (TypeError, ValueError):
            raise ViewError(f"pattern must be a list of [step, num] pairs, got {pattern!r}"
                            ) from None
        shape, strides = tuple(n for _, n in pat), tuple(s for s, _ in pat)
        if self.on_chip and len(shape) == 1:
            shape, strides = shape + (1,), strides + (1,)
        v = StridedView(self.decl, shape, strides, base // new.itemsize + (offset or 0), new)
        if scalar_offset is None and vector_offset is None:
            return v
        if scalar_offset is not None and vector_offset is not None:
            raise ViewError("give scalar_offset or vector_offset, not both")
        # indirect_dim names a dim of this view; its stride scales the index
        stride = self.strides[dim_index(indirect_dim, self.ndim)] * self.dtype.itemsize
        vector = vector_offset is not None
        return v._indexed("vector" if vector else "scalar",
                          vector_offset if vector else scalar_offset, stride)

    def vector_select(self, dim: int, vector_offset) -> StridedView:
        """Partition p of the result reads row vector_offset[p] of dim 0 (HBM only)."""
        self._final()
        if dim_index(dim, self.ndim) != 0:
            raise ViewError("vector_select needs dim 0")
        rows = vector_offset.shape[0]
        v = self._new((rows,) + self.shape[1:], self.strides, self.offset)
        return v._indexed("vector", vector_offset, self.strides[0] * self.dtype.itemsize)

    def _indexed(self, kind: str, index, stride_bytes: int) -> StridedView:
        if self.on_chip:
            raise ViewError("indirect addressing needs an HBM tensor")
        d = self.decl
        dims = [prod(d.shape[k + 1:]) * d.dtype.itemsize for k in range(len(d.shape))]
        if stride_bytes in dims:
            where = dims.index(stride_bytes)
        elif stride_bytes > 0 and stride_bytes % d.dtype.itemsize == 0:
            # a reshape of the tensor (HBM is row-major storage): the DMA scales the index
            # by any stride, so the IR carries it (ir.AccessPattern.indirect_stride)
            where = (0, stride_bytes // d.dtype.itemsize)
        else:
            raise ViewError("the indexed dim's stride is not a whole number of the tensor's "
                            "elements", "index a dim of the tensor or of a reshape of it")
        ir_index = index.to_ir() if hasattr(index, "to_ir") else index
        return self._replace(basic=None, tail=False, indirect=(kind, ir_index, where))

    def _final(self) -> None:
        if self.indirect is not None:
            raise ViewError("an indirect (runtime-indexed) view cannot be viewed further",
                            "apply the other view methods before the dynamic index")

    # ---- lowering ------------------------------------------------------------------------------
    @property
    def decl_strides(self) -> tuple[int, ...]:
        return row_major(self.decl.shape)

    def to_ir(self, loc: Loc | None = None) -> View:
        """The operand this view is, for the IR: its basic index, or the basic index it
        equals (views/basic_match.py), else an access pattern. Equal views share one
        index object, so the checker resolves a view that a kernel's loop repeats once."""
        basic = self.basic if self.dtype is self.decl.dtype else None
        if basic is None and self.dtype is self.decl.dtype and self.indirect is None:
            basic = match_basic(self)
        key = (self.decl.name, self.decl.shape, basic) if basic is not None else (
            self.decl.name, self.shape, self.strides, self.offset, self.dtype, self.indirect)
        index = _INDEX.get(key, _MISSING)
        if index is _MISSING:
            index = _index_of(self, basic)
            if len(_INDEX) >= _INDEX_MAX:
                _INDEX.clear()
            _INDEX[key] = index
        return view_at(self.decl.name, index, loc or _NO_LOC)

    # ---- helpers -------------------------------------------------------------------------------
    def _new(self, shape, strides, offset) -> StridedView:
        self._final()
        return StridedView(self.decl, tuple(shape), tuple(strides), offset, self.dtype)


_ALL = slice(None)
_NO_LOC = Loc()
_MISSING = object()
_new_view = object.__new__
# (tensor, basic index) or (tensor, layout) -> the IR index object (see to_ir)
_INDEX: dict = {}
_INDEX_MAX = 200_000


def _basic_result(basic: list, on_chip: bool):
    """(basic index, tail) after indexing: on chip a view keeps >= 2 dims (the resolver
    adds the size-1 tail itself); in HBM >= 1 (the last dim is kept at size 1)."""
    kept = sum(b.__class__ is tuple for b in basic)
    if kept >= (2 if on_chip else 1):
        return tuple(basic), False
    if on_chip:
        return tuple(basic), True
    basic[-1] = (basic[-1], 1, 1)
    return tuple(basic), False


def _index_of(v: StridedView, basic):
    if basic is not None:
        if all(b.__class__ is tuple and b == (0, n, 1) for b, n in zip(basic, v.decl.shape)):
            return None  # the whole tensor
        return tuple(b if b.__class__ is int else
                     Slice(b[0], b[0] + (b[1] - 1) * b[2] + 1, None if b[2] == 1 else b[2])
                     for b in basic)
    kind, index, dim = v.indirect or (None, None, 0)
    dim, stride = dim if dim.__class__ is tuple else (dim, None)  # (see _indexed)
    return AccessPattern(tuple(zip(v.strides, v.shape)), v.offset,
                         None if v.dtype is v.decl.dtype else v.dtype,
                         index if kind == "scalar" else None,
                         index if kind == "vector" else None, dim, stride)
