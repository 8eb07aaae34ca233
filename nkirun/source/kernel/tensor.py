"""`nl.ndarray`: a tensor handle, and the views NKI derives from it.

A handle is its tensor (`TensorRec`) and one `views.strided.StridedView` of it: the
access-pattern view model every front end shares (shape, strides and offset in elements,
the NumPy basic index while the view is one). Indexing and the view methods are
StridedView's; `views.py` turns its ViewErrors into located kernel diagnostics (E603 for
an index, E604 for a view method's constraint). A view reaches the IR through
`StridedView.to_ir`: the basic index when one is equal, else an `ir.AccessPattern`.

Readings (NKI 0.6 `NkiTensor.__getitem__`): on chip an integer on the partition dim keeps
it as a size-1 dim and a view keeps at least two dims (a (P, 1) tile); in HBM an integer
removes its dim. Slices are NumPy slices, but a start or stop beyond the dim is an error
rather than silently clamped.
"""
from __future__ import annotations

import itertools
import threading

from nkirun.source.kernel import consts
from nkirun.source.kernel.unsupported import here, kernel_error, unsupported
from nkirun.views.strided import StridedView


class _Decl:
    """What a StridedView needs of its tensor (the IR TensorDecl comes later)."""

    __slots__ = ("name", "shape", "dtype", "on_chip")

    def __init__(self, name, shape, dtype, on_chip):
        self.name, self.shape, self.dtype, self.on_chip = name, shape, dtype, on_chip


class TensorRec:
    """One allocated tensor: what becomes a TensorDecl when an instruction first uses it."""

    __slots__ = ("name", "shape", "dtype", "buffer", "loc", "init", "declared", "strides",
                 "decl", "whole", "on_chip", "core", "layout", "compared")

    def __init__(self, name, shape, dtype, buffer, loc, init=None, core=None):
        self.name, self.shape, self.dtype, self.buffer = name, shape, dtype, buffer
        self.loc, self.init, self.declared = loc, init, False
        self.core = core  # two-core traces: the core owning a non-shared tensor
        self.compared = False  # the result of a comparison (no truth value: __bool__)
        self.on_chip = buffer.ir != "hbm"
        self.decl = _Decl(name, shape, dtype.nkirun, self.on_chip)
        self.whole = whole_view(self.decl)  # the view of the whole tensor
        self.strides = self.whole.strides
        # a small int naming (buffer, shape, dtype): equal for equal layouts (call_forms.py)
        self.layout = _layout_id((buffer, shape, dtype))


_LAYOUT_IDS: dict = {}  # (buffer, shape, dtype) -> TensorRec.layout
LAYOUT_IDS_MAX = 10_000  # a long-lived caller tracing ever new shapes stays bounded
_NEXT_LAYOUT = itertools.count()  # (ids are never reused: a cleared table cannot alias)


def _layout_id(key: tuple) -> int:
    hit = _LAYOUT_IDS.get(key)
    return hit if hit is not None else new_id(_LAYOUT_IDS, key, _NEXT_LAYOUT, LAYOUT_IDS_MAX)


def new_id(table: dict, key, counter, limit: int) -> int:
    """A new id for `key` in a bounded interning table, cleared when full (a long-lived
    caller stays bounded); the ids come from `counter`, so a cleared table cannot alias."""
    if len(table) >= limit:
        table.clear()
    hit = table[key] = next(counter)
    return hit


def rec_kind(rec: TensorRec) -> tuple:
    """What a TensorRec takes from its buffer, shape and dtype alone (rec_of_kind's input:
    a loop allocates tiles of one layout over and over)."""
    return (rec.shape, rec.dtype, rec.buffer, rec.on_chip, rec.decl.dtype, rec.whole.strides,
            rec.whole.basic, rec.layout)


_new = object.__new__


def rec_of_kind(name: str, kind: tuple, loc, core=None) -> TensorRec:
    """`TensorRec(name, shape, dtype, buffer, loc, None, core)` (the plain definition) for
    the layout `kind` (rec_kind of an earlier TensorRec of that buffer, shape and dtype),
    every slot filled without working the layout out again
    (tests/kernel/test_fast_trace.py compares the slots)."""
    shape, dtype, buffer, on_chip, nkirun_dtype, strides, basic, layout = kind
    r = _new(TensorRec)
    r.name, r.shape, r.dtype, r.buffer, r.loc, r.init, r.declared = \
        name, shape, dtype, buffer, loc, None, False
    r.core, r.compared, r.on_chip, r.strides, r.layout = core, False, on_chip, strides, layout
    d = r.decl = _new(_Decl)
    d.name, d.shape, d.dtype, d.on_chip = name, shape, nkirun_dtype, on_chip
    w = r.whole = _new(StridedView)
    w.decl, w.shape, w.strides, w.offset, w.dtype, w.basic, w.tail, w.indirect = \
        d, shape, strides, 0, nkirun_dtype, basic, False, None
    return r


_WHOLE: dict = {}  # shape -> (strides, basic index) of the whole-tensor view


def whole_view(decl) -> StridedView:
    """`StridedView.of(decl)` (the plain definition), its layout remembered per shape: a
    loop allocates tiles of the same few shapes."""
    hit = _WHOLE.get(decl.shape)
    if hit is None or decl.shape.__class__ is not tuple:
        v = StridedView.of(decl)
        if decl.shape.__class__ is tuple and len(_WHOLE) < 10_000:
            _WHOLE[decl.shape] = (v.strides, v.basic)
        return v
    v = _new_strided(StridedView)
    v.decl, v.shape, v.offset, v.dtype, v.tail, v.indirect = decl, decl.shape, 0, \
        decl.dtype, False, None
    v.strides, v.basic = hit
    return v


_new_strided = object.__new__


class DynSlice:
    """`nl.ds(start, size)`."""

    __slots__ = ("start", "size")

    def __init__(self, start, size):
        if (start.__class__ is not int or size.__class__ is not int) and not all(
                isinstance(v, int) and not isinstance(v, bool) for v in (start, size)):
            raise unsupported("nl.ds with a run-time (register or tensor) start")
        self.start, self.size = start, size

    def __repr__(self) -> str:
        return f"nl.ds({self.start}, {self.size})"


class _TraceStack(threading.local):
    """The traces under way in this thread, innermost last (session._CURRENT): a list a
    thread sees alone, so another thread's trace is never this thread's `current()`."""

    def __init__(self):
        self.items: list = []

    def __bool__(self) -> bool:
        return bool(self.items)

    def __getitem__(self, i):
        return self.items[i]

    def append(self, tracer) -> None:
        self.items.append(tracer)

    def pop(self):
        return self.items.pop()


TRACERS = _TraceStack()


def current():
    """The innermost trace under way in this thread (session.Tracer)."""
    if not TRACERS:
        raise kernel_error("E603", "this nki call is only valid inside a kernel that nkirun "
                           "traces (nkirun run/check/cost KERNEL.py::FUNCTION, or "
                           "nkirun.simulate(kernel))")
    return TRACERS[-1]


def tracing() -> bool:
    return bool(TRACERS)


# What a handle's operators and view methods do, given at set-up by the modules built on
# this one (`provide`: views.py indexing and view methods, tile_ops.py assignment and tile
# arithmetic), so tensor.py imports none of them.
_index_view = _view_method = _nkirun_dtype = _assign = _inplace = _block_buffer = \
    _binary = _negative = _broadcast_to = None


def provide(**operations) -> None:
    """Set-up: the functions behind ndarray's operators (names as in this module, without
    the underscore)."""
    for name, fn in operations.items():
        if "_" + name not in globals() or not callable(fn):
            raise ValueError(f"tensor.provide: no operation {name!r}")
        globals()["_" + name] = fn
        if name == "index_view":  # `t[key]` calls it with no frame of its own in between
            ndarray.__getitem__ = fn


_NO_INDEX = object()  # a handle's IR index not computed yet
_INT = frozenset({int})


def _new_view(rec, view: StridedView, dtype=None):
    """A handle on `view` of rec's tensor (`dtype`: the nl dtype, default rec's)."""
    v = object.__new__(ndarray)
    v._rec, v._v = rec, view
    v._dtype = dtype or rec.dtype
    v._ir, v._lk = _NO_INDEX, None  # (_lk: views.index_view's layout token, when asked)
    return v


class ndarray:
    """A tensor (or a view of one) in HBM, SBUF or PSUM. `nl.ndarray(shape, dtype,
    buffer=nl.sbuf, name='')` allocates a new tensor on every call."""

    __slots__ = ("_rec", "_v", "_dtype", "_ir", "_lk", "__weakref__")

    def __new__(cls, shape, dtype, buffer=consts.sbuf, name="", address=None, **_legacy):
        if shape.__class__ is list:
            shape = tuple(shape)  # `[2] + [nl.par_dim(P), F]`: a list names a shape too
        if shape.__class__ is tuple and not _INT.issuperset(map(type, shape)):  # not all int
            blocks = _block_buffer(shape, dtype, buffer, name)
            if blocks is not None:
                return blocks
            shape = tuple(int(n) if isinstance(n, int) else n for n in shape)  # nl.par_dim
        tracer = TRACERS.items[-1] if TRACERS.items else current()
        if address is not None:  # a pinned address: nothing of this kernel spills
            tracer.placement = "explicit"
        rec = tracer.allocate(shape, dtype, buffer, name)
        v = _new(ndarray)
        v._rec, v._v, v._dtype, v._ir, v._lk = rec, rec.whole, rec.dtype, None, None  # whole
        return v

    # ---- attributes ----------------------------------------------------------------------
    @property
    def shape(self) -> tuple:
        return self._v.shape

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
        return len(self._v.shape)

    @property
    def size(self) -> int:
        return self._v.size

    @property
    def strides(self) -> tuple:
        return self._v.strides

    @property
    def offset(self) -> int:
        return self._v.offset

    @property
    def base_tensor(self):  # (not among NKI's documented attributes; nki-library reads it
        rec = self._rec     # of kernel parameters): the tensor viewed, whole, in its dtype
        return self if self._v is rec.whole and self._dtype is rec.dtype else \
            _new_view(rec, rec.whole)

    def get_pattern(self) -> list: return self._v.get_pattern()  # noqa: E704
    def is_contiguous(self) -> bool: return self._v.is_contiguous()  # noqa: E704
    def is_indirect(self) -> bool: return self._v.indirect is not None  # noqa: E704

    def to_ir(self):
        """The IR View of this handle (for a runtime index inside another view)."""
        return current().operand(self, here())

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        return (f"nl.ndarray(name={self.name!r}, shape={self.shape}, dtype={self.dtype}, "
                f"buffer={self.buffer!r})")

    def __bool__(self):
        # A tensor is truthy as a Python object (`if bias:` tests that one was given, as
        # nki-library kernels do under NKI); a comparison's result has no truth value while
        # tracing: `if a < b:` would branch on data only the run knows.
        if self._rec.compared:
            raise kernel_error("E603", f"the comparison result `{self.name}` has no truth "
                               "value while tracing (its contents are only known when the "
                               "program runs)", hint="select with nl.where, or mask with it")
        return True

    # ---- indexing ------------------------------------------------------------------------
    def __getitem__(self, key):  # (views.py's index_view itself, once provided)
        return _index_view(self, key)

    def __setitem__(self, key, value):
        _assign(self, key, value)

    # ---- tile arithmetic and in-place updates (the pre-0.2 API: tile_ops.py) -------------
    def _arith(self, other, op, reverse=False):
        return _binary(op)(other, self) if reverse else _binary(op)(self, other)

    def __add__(self, o): return self._arith(o, "add")  # noqa: E704
    def __radd__(self, o): return self._arith(o, "add", True)  # noqa: E704
    def __sub__(self, o): return self._arith(o, "subtract")  # noqa: E704
    def __rsub__(self, o): return self._arith(o, "subtract", True)  # noqa: E704
    def __mul__(self, o): return self._arith(o, "multiply")  # noqa: E704
    def __rmul__(self, o): return self._arith(o, "multiply", True)  # noqa: E704
    def __truediv__(self, o): return self._arith(o, "divide")  # noqa: E704
    def __rtruediv__(self, o): return self._arith(o, "divide", True)  # noqa: E704
    def __pow__(self, o): return self._arith(o, "power")  # noqa: E704
    def __mod__(self, o): return self._arith(o, "mod")  # noqa: E704
    def __rmod__(self, o): return self._arith(o, "mod", True)  # noqa: E704

    # comparisons are nl.less & co. (1 where true, 0 elsewhere); `a < 3` and `3 > a` alike.
    # A tile stays hashable by identity (it is a handle, not a value).
    def __lt__(self, o): return self._arith(o, "less")  # noqa: E704
    def __le__(self, o): return self._arith(o, "less_equal")  # noqa: E704
    def __gt__(self, o): return self._arith(o, "greater")  # noqa: E704
    def __ge__(self, o): return self._arith(o, "greater_equal")  # noqa: E704
    def __eq__(self, o): return self._compare_eq(o, "equal")  # noqa: E704
    def __ne__(self, o): return self._compare_eq(o, "not_equal")  # noqa: E704
    __hash__ = object.__hash__

    def _compare_eq(self, other, op):
        if not isinstance(other, ndarray) and not isinstance(other, (int, float)) \
                or isinstance(other, bool):
            return NotImplemented  # `t == None`, `t == "x"`: Python's identity rule
        return self._arith(other, op)

    def __neg__(self): return _negative(self)  # noqa: E704
    def _inplace(self, other, op): return _inplace(self, other, op)  # noqa: E704

    def __iadd__(self, o): return self._inplace(o, "add")  # noqa: E704
    def __isub__(self, o): return self._inplace(o, "subtract")  # noqa: E704
    def __imul__(self, o): return self._inplace(o, "multiply")  # noqa: E704

    def broadcast_to(self, shape): return _broadcast_to(self, shape)  # noqa: E704

    def __iter__(self):
        raise kernel_error("E603", "a tensor cannot be iterated while tracing",
                           hint="index it with t[i] or slices instead")

    # ---- view methods (StridedView's, through views.py) -----------------------------------
    def reshape(self, shape, *more):
        if isinstance(shape, int):
            shape = (shape, *more)
        return _view_method(self, "reshape", (tuple(shape),), None)

    def ap(self, pattern, offset=None, scalar_offset=None, vector_offset=None,
           indirect_dim=0, dtype=None):
        return _view_method(self, "ap", (pattern, offset, scalar_offset, vector_offset,
                            indirect_dim, None if dtype is None else _nkirun_dtype(dtype, ".ap")),
                            dtype)

    def view(self, dtype):
        return _view_method(self, "view", (_nkirun_dtype(dtype, ".view"),), dtype)

    reinterpret_cast = view

    def slice(self, dim, start, end, step=1):
        return _view_method(self, "slice", (dim, start, end, step), None)

    def select(self, dim, index):
        return _view_method(self, "select", (dim, index), None)

    def permute(self, dims):
        return _view_method(self, "permute", (tuple(dims),), None)

    def broadcast(self, dim, size):
        return _view_method(self, "broadcast", (dim, size), None)

    def expand_dim(self, dim):
        return _view_method(self, "expand_dim", (dim,), None)

    def squeeze_dim(self, dim):
        return _view_method(self, "squeeze_dim", (dim,), None)

    def reshape_dim(self, dim, shape):
        return _view_method(self, "reshape_dim", (dim, tuple(shape)), None)

    def flatten_dims(self, start_dim, end_dim):
        return _view_method(self, "flatten_dims", (start_dim, end_dim), None)

    def vector_select(self, dim, vector_offset):
        return _view_method(self, "vector_select", (dim, vector_offset), None)

    def rearrange(self, src_pattern, dst_pattern, fixed_sizes=None):
        return _view_method(self, "rearrange", (src_pattern, dst_pattern, fixed_sizes), None)

    def indirect(self, index, num_elem=None):
        raise unsupported("NkiTensor.indirect (tensor indirection, NeuronCore-v4)")

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise unsupported(f"nki.language.NkiTensor.{name}")


NkiTensor = ndarray

