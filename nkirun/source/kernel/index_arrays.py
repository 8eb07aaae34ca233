"""Index arrays (`nl.arange`, `nl.mgrid`: the pre-0.2 API, legacy.py) as strided views: an
affine index expression is a (stride, count) pattern over the tensor (legacy.py says how),
and the handle of such a pattern. Below views.py, legacy.py and legacy_gather.py, which
all build on it."""
from __future__ import annotations

import numpy as np

from nkirun import speed  # the speed switches, beside their plain twins
from nkirun.source.kernel import index_forms
from nkirun.source.kernel.tensor import _new_view
from nkirun.source.kernel.unsupported import kernel_error
from nkirun.views.strided import StridedView


def affine(arr: np.ndarray, shape: tuple):
    """(constant, per-axis coefficient) with arr == c + sum(k_a * pos_a) over `shape`, or
    None when arr is no such function.

    speed.AFFINE_OWN_SHAPE: checked over arr's own shape (a broadcast axis has coefficient
    0 either way): 128 values, not 65,536; twin affine_plain (tests/kernel/test_affine_fast.py)."""
    pad = len(shape) - arr.ndim
    if not speed.AFFINE_OWN_SHAPE or pad < 0 or 0 in shape or arr.size == 0:
        return affine_plain(arr, shape)
    own = arr.reshape((1,) * pad + arr.shape)
    fit = affine_plain(own, own.shape)  # None: not affine
    return fit and (fit[0], [k if m == n else 0 for k, m, n in zip(fit[1], own.shape, shape)])


def affine_plain(arr: np.ndarray, shape: tuple):
    """affine() by its definition: the broadcast array against c + sum(k_a * pos_a)."""
    full = np.broadcast_to(arr, shape)
    c = int(full[(0,) * len(shape)]) if full.size else 0
    coefs = []
    for a, n in enumerate(shape):
        if n == 1:
            coefs.append(0)
            continue
        at = [0] * len(shape)
        at[a] = 1
        coefs.append(int(full[tuple(at)]) - c)
    expect = np.full((1,) * len(shape), c, dtype=np.int64)
    for a, (k, n) in enumerate(zip(coefs, shape)):
        if k:
            expect = expect + k * np.arange(n).reshape([n if i == a else 1
                                                        for i in range(len(shape))])
    return (c, coefs) if np.array_equal(np.broadcast_to(expect, shape), full) else None


def advanced_pattern(shape_strides: list, offset: int, items: list):
    """The (pattern, offset) that index arrays/ints `items` (one per view dim) select from
    a view with (stride, count) pairs `shape_strides` starting at `offset`.

    speed.INDEX_FORMS: from the forms the index arrays carry (index_forms.py) where every
    item has one; twin advanced_pattern_plain (tests/kernel/test_index_forms.py)."""
    if speed.INDEX_FORMS:
        fast = index_forms.pattern(shape_strides, offset, items)
        if fast is not None:
            return fast
    return advanced_pattern_plain(shape_strides, offset, items)


def advanced_pattern_plain(shape_strides: list, offset: int, items: list):
    """advanced_pattern by its definition: each index array proved affine (affine())."""
    if any(isinstance(k, slice) or k is Ellipsis for k in items):
        raise kernel_error("E607", "index arrays (nl.arange/nl.mgrid) mixed with slices or "
                           "`...` in one index", hint="index every dim with an index "
                           "array or an int, or every dim with slices")
    arrays = [np.asarray(k) for k in items]
    try:
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
    except ValueError:
        raise kernel_error("E607", "the index arrays do not broadcast together: "
                           + ", ".join(str(list(a.shape)) for a in arrays)) from None
    if len(shape) == 0:
        shape = (1,)
    strides = [0] * len(shape)
    for (stride, _), arr in zip(shape_strides, arrays):
        fit = affine(arr, shape)
        if fit is None:
            raise kernel_error("E607", "an index expression is not affine in the index "
                               "arrays (nkirun maps it to a strided access pattern)",
                               hint="use index expressions like i * 128 + ix")
        c, coefs = fit
        offset += c * stride
        for a, k in enumerate(coefs):
            strides[a] += k * stride
    return [(s, n) for s, n in zip(strides, shape)], offset


def with_pattern(t, pattern, offset):
    """A view of t's tensor with (stride, count) pairs `pattern` from element `offset`."""
    pattern = [(int(s), int(c)) for s, c in pattern]
    if t._rec.on_chip and len(pattern) == 1:
        pattern.append((1, 1))  # a (P, 1) tile
    v = StridedView(t._v.decl, tuple(c for _, c in pattern), tuple(s for s, _ in pattern),
                    offset, t._v.dtype)
    return _new_view(t._rec, v, t._dtype)
