"""Views of tensor handles: NKI's indexing and view methods are those of
`views.strided.StridedView` (the one view model of every front end); this module wraps
their results in handles and their ViewErrors in located diagnostics (E603 for an index,
E604 for a view method's documented constraint), and adds the index arrays of the pre-0.2
API (`nl.arange`, legacy.py).
"""
from __future__ import annotations

import itertools

import numpy as np

from nkirun import speed  # the speed switches, beside their plain twins
from nkirun.source.kernel import consts, tensor
from nkirun.source.kernel.index_arrays import advanced_pattern, with_pattern
from nkirun.source.kernel.legacy_gather import gather
from nkirun.source.kernel.legacy_mask import IndexArray
from nkirun.source.kernel.lowering import lowered_index
from nkirun.source.kernel.tensor import DynSlice as _DS
from nkirun.source.kernel.tensor import _new_view, ndarray
from nkirun.source.kernel.unsupported import here, kernel_error, unsupported
from nkirun.views.reshape import EmptySlice, ViewError
from nkirun.views.strided import StridedView

_ARRAY = np.ndarray
_PLAIN = frozenset({int, slice})


def index_view(t, key):
    """`t[key]`: `index_view_plain`, memoised for keys of ints, slices of ints, nl.ds and
    index arrays that carry their affine form (nl.arange expressions, speed.INDEX_FORMS) on
    the layout of t's view and tensor (a loop indexes same-layout views with the same keys
    over and over). The layout is a small int the handle keeps (`_lk`, `_layout_token`),
    the key a flat tuple (`_hashable_key`; slices are unhashable before Python 3.12)."""
    lk = t._lk
    if lk is None:
        lk = t._lk = _layout_token(t)
    hk = _hashable_key(key, lk) if lk is not False else None
    if hk is None:
        return index_view_plain(t, key)
    hit = _LAYOUTS.get(hk)
    rec = t._rec
    if hit is None:
        out = index_view_plain(t, key)
        if out.__class__ is EmptyView:
            return out
        w = out._v
        if len(_LAYOUTS) >= _LAYOUTS_MAX:
            _LAYOUTS.clear()
        if t._dtype is rec.dtype and w.indirect is None and speed.LOWERED_INDEX:
            try:
                out._ir = lowered_index(out)  # (a function of the memo key: rec.layout in it)
            except ViewError:  # (left to the instruction that uses the view, as before)
                pass
        _LAYOUTS[hk] = (w.shape, w.strides, w.offset, w.basic, w.tail, out._ir,
                        _layout_token(out))
        return out
    v = t._v
    w = _new_strided(StridedView)
    w.decl, w.dtype, w.indirect = v.decl, v.dtype, None
    w.shape, w.strides, w.offset, w.basic, w.tail, index, token = hit
    h = _new_handle(ndarray)  # _new_view(rec, w, t._dtype) with its IR index, inline
    h._rec, h._v, h._dtype, h._ir, h._lk = rec, w, t._dtype, index, token
    return h


# (layout token, the key's items) -> (shape, strides, offset, basic, tail) of the indexed
# view, its IR index (session.lowered_index) when it has the tensor's dtype, its token
_LAYOUTS: dict = {}
_LAYOUTS_MAX = 100_000
_SLICE_END = frozenset({int, type(None)})
_new_strided = _new_handle = object.__new__
# (view layout, tensor layout) -> token; a token is never reused, so that a memo entry
# stays right when this table is cleared (a layout then gets a new token)
_TOKENS: dict = {}
_NEXT_TOKEN = itertools.count(1)


def _layout_token(t):
    """A small int naming the layout of handle t's view and tensor: what index_view's
    result depends on besides the key and the tensor's identity (False: an indirect view,
    never remembered)."""
    v = t._v
    if v.indirect is not None:
        return False
    layout = (v.shape, v.strides, v.offset, v.dtype.name, v.basic, v.tail, v.decl.on_chip,
              v.dtype is v.decl.dtype, t._rec.layout)
    token = _TOKENS.get(layout)
    return token if token is not None else tensor.new_id(_TOKENS, layout, _NEXT_TOKEN,
                                                         _LAYOUTS_MAX)


_T_SLICE, _T_DS, _T_IX = object(), object(), object()  # tags of a flat key's items


def _hashable_key(key, head=None):
    """A key of ints, slices of ints/None, `nl.ds` and form index arrays as a flat hashable
    tuple after `head`; None for anything else. (An int is itself; a slice is _T_SLICE,
    start, stop, step; an nl.ds, whose start and size are ints, _T_DS, start, size; an index
    array with its affine form (index_forms.py), whose values the form and its shape
    determine, _T_IX, form, shape: each tag says how many items follow it, so that
    different keys never give equal tuples.)"""
    out = [head]
    for k in (key if key.__class__ is tuple else (key,)):
        c = k.__class__
        if c is int:
            out.append(k)
        elif c is slice:
            a, b, s = k.start, k.stop, k.step
            if a.__class__ not in _SLICE_END or b.__class__ not in _SLICE_END or \
                    s.__class__ not in _SLICE_END:
                return None
            out += (_T_SLICE, a, b, s)
        elif c is _DS:
            out += (_T_DS, k.start, k.size)
        elif c is IndexArray and k._form is not None:
            out += (_T_IX, k._form, k.shape)
        else:
            return None
    return tuple(out)


def index_view_plain(t, key):
    """`t[key]` through StridedView (the plain definition index_view memoises)."""
    items = key if key.__class__ is tuple else tuple(key) if isinstance(key, tuple) \
        else (key,)  # a tuple subclass: `t[nl.mgrid[0:P, 0:F]]` indexes with the grids
    if not all(k.__class__ in _PLAIN for k in items):
        if any(isinstance(k, _ARRAY) for k in items) or \
                any(hasattr(k, "_rec") for k in items) and not t._rec.on_chip:
            return _advanced(t, list(items))
        items = tuple(_plain(k, t) for k in items)
    try:
        v = t._v[items]
    except EmptySlice as e:
        return EmptyView(f"{t.name}{list(t.shape)}: {e}", here().line)
    except ViewError as e:
        raise kernel_error("E603", f"{t.name}{list(t.shape)}: {e}", hint=e.hint) from None
    return _new_view(t._rec, v, t._dtype)


class EmptyView:
    """`t[a:a]`: a view of no element. Making one is not an error (Python and the compiler
    accept an empty slice nothing reads); any use of it is E603, located at the use."""

    __slots__ = ("_why", "_line")

    def __init__(self, why: str, line: int):
        self._why, self._line = why, line

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise kernel_error("E603", f"{self._why} (the empty view made at line {self._line} "
                           "is used here)", hint="an instruction needs at least one element")

    def __getitem__(self, key):
        return self.__getattr__("index")

    def __repr__(self) -> str:
        return f"<empty view: {self._why}>"


def _plain(k, t):
    """An index item as StridedView takes it: int, slice, `...` or nl.ds."""
    if k is None:
        raise kernel_error("E603", "None (np.newaxis) is not allowed in a tensor index",
                           hint="use .expand_dim(dim)")
    if hasattr(k, "_rec"):
        raise unsupported("indexing with a tensor (dynamic index); use .ap(scalar_offset=...)")
    if k.__class__ is slice:
        for end in (k.start, k.stop):
            if end.__class__ is not int and end is not None and hasattr(end, "__index__"):
                k = slice(*(None if x is None else x.__index__()
                            for x in (k.start, k.stop, k.step)))
                break
        return k
    if k is Ellipsis or hasattr(k, "size") and hasattr(k, "start"):
        return k
    if hasattr(k, "__index__") and not isinstance(k, bool):
        return k.__index__()
    raise kernel_error("E603", f"cannot index {t.name} with {k!r}",
                       hint="indices are ints, slices and nl.ds(start, size)")


def view_method(t, name: str, args: tuple, nl_dtype=None):
    """`view_method_plain`, memoised as index_view is: for arguments of ints, None and
    lists or tuples of them (a loop calls `.ap(pattern, offset)`, `.reshape(shape)` on
    same-layout views over and over), keyed on the layout token of t (`_layout_token`)."""
    lk = t._lk
    if lk is None:
        lk = t._lk = _layout_token(t)
    hk = _hashable_args(args) if nl_dtype is None and lk is not False else None
    if hk is None:
        return view_method_plain(t, name, args, nl_dtype)
    memo = (lk, name, hk)
    hit = _METHODS.get(memo)
    if hit is None:
        out = view_method_plain(t, name, args)
        w = out._v
        if len(_METHODS) >= _LAYOUTS_MAX:
            _METHODS.clear()
        if out is t:
            _METHODS[memo] = _SAME
        elif w.indirect is None and w.decl is t._v.decl:
            _METHODS[memo] = (w.shape, w.strides, w.offset, w.dtype, w.basic, w.tail,
                              _layout_token(out))
        return out
    if hit is _SAME:
        return t
    w = _new_strided(StridedView)
    w.decl, w.indirect = t._v.decl, None
    w.shape, w.strides, w.offset, w.dtype, w.basic, w.tail, token = hit
    h = _new_view(t._rec, w, t._dtype)
    h._lk = token
    return h


# (layout token, method, its arguments) -> the new view's fields and token (or _SAME)
_METHODS: dict = {}
_SAME = object()
_ARG_ATOMS = frozenset({int, type(None)})


def _hashable_args(args):
    """A view method's arguments as a hashable tuple when they are ints, None and lists or
    tuples of them (tagged apart); None for anything else."""
    out = []
    for a in args:
        c = a.__class__
        if c in _ARG_ATOMS:
            out.append(a)
        elif c is list or c is tuple:
            inner = _hashable_args(a)
            if inner is None:
                return None
            out.append((c is list, inner))
        else:
            return None
    return tuple(out)


def view_method_plain(t, name: str, args: tuple, nl_dtype=None):
    """t.<name>(*args) through StridedView; nl_dtype names the view's dtype for the kernel."""
    if name in _RUNTIME_INDEXED:
        scalar, vector = _RUNTIME_INDEXED[name]
        _runtime_index(None if scalar is None else args[scalar],
                       None if vector is None else args[vector])
    try:
        v = getattr(t._v, name)(*args)
    except ViewError as e:
        raise kernel_error("E604", f"{name}: {e}", hint=e.hint) from None
    if v is t._v:
        return t
    return _new_view(t._rec, v, consts.to_dtype(nl_dtype) if nl_dtype is not None
                     else t._dtype)


# the positions of (scalar index, vector index) arguments of the view methods taking one
_RUNTIME_INDEXED = {"ap": (2, 3), "select": (1, None), "vector_select": (None, 1)}


def _runtime_index(scalar, vector=None):
    """A runtime index is a tensor (or, as a scalar_offset, a register: kernel/control.py)."""
    for index, registers in ((scalar, True), (vector, False)):
        if index is None or isinstance(index, (int, ndarray)) or \
                registers and hasattr(index, "register_view"):  # (control.VirtualRegister)
            continue
        raise unsupported(f"a {type(index).__name__} as a runtime index",
                          "give an SBUF tensor holding the index")


def nkirun_dtype(dtype, what: str):
    d = consts.to_dtype(dtype)
    if d is None or d.nkirun is None:
        raise kernel_error("E604", f"{what}: unknown or unsupported dtype {dtype!r}")
    return d.nkirun


def _advanced(t, items):
    """t indexed with nl.arange/nl.mgrid index arrays (legacy.py)."""
    tiles = [i for i, k in enumerate(items) if hasattr(k, "_rec")]
    if tiles:  # a runtime index tile: an indirect DMA (legacy_gather.py)
        return gather(t, items, tiles)
    items = [k.__index__() if hasattr(k, "__index__") and not isinstance(k, _ARRAY) else k
             for k in items]
    if len(items) != t.ndim:
        raise kernel_error("E603", f"an index with index arrays needs one item per dim "
                           f"({t.ndim}), got {len(items)}")
    pattern, offset = advanced_pattern(list(zip(t.strides, t.shape)), t.offset, items)
    return with_pattern(t, pattern, offset)


# a handle's indexing and view methods (tensor.py, below this module) are these
tensor.provide(index_view=index_view, view_method=view_method, nkirun_dtype=nkirun_dtype)
