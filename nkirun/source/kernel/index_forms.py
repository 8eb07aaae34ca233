"""The affine form an index array carries (speed.INDEX_FORMS): `nl.arange` and the index
expressions built from it by `+`, `-`, `*` with ints, by `[:, None]`-style indexing and by
unary minus know, as they are made, the (c, per-axis coefficient) that index_arrays.affine
would otherwise prove by comparing the whole array against it. A tensor indexed with such
arrays then becomes its strided view in a few Python operations instead of a dozen NumPy
calls per array (NKIBench kernels index every operand this way).

A form is (c, coefs): arr == c + sum(coefs[a] * pos_a) over arr's own shape, coefs[a] == 0
on every axis of size 1 (as affine_plain reports it). Only arrays whose values nobody can
change carry one: a form array is read-only (NKI's index expressions are immutable too;
`ix += 1` rebinds, legacy_mask.IndexArray). Anything else made from a form array (a
reshape, `.T`, a comparison, a float) carries none and takes the plain path.
"""
from __future__ import annotations

import operator

import numpy as np

_INT64 = 2 ** 63
_INTS = (int, np.integer)


def _small(c: int, coefs, shape) -> bool:
    """Every value of the form fits in int64 (NumPy would have wrapped otherwise)."""
    return abs(c) + sum(abs(k) * (n - 1) for k, n in zip(coefs, shape)) < _INT64


def of_arange(arr: np.ndarray, start, step):
    """The form of np.arange(start, stop, step) (arr), or None."""
    if arr.dtype != np.int64 or arr.ndim != 1:
        return None
    c, n = int(start), arr.shape[0]
    k = int(step) if n > 1 else 0
    return (c, (k,)) if abs(c) + abs(k) * n < _INT64 else None


def of_index(form, shape: tuple, key, out_shape: tuple):
    """The form of arr[key] for arr (of `shape`, form `form`): basic indexing by None,
    ints, slices and `...`; None for any other key or when the result is not the shape
    this reading expects."""
    c, coefs = form
    items = key if key.__class__ is tuple else (key,)
    if len(items) == len(shape) + 1 and len(out_shape) == len(items):  # [:, None] and alike
        out, axis = [], 0
        for k in items:
            if k is None:
                out.append(0)
            elif k.__class__ is slice and k.start is None and k.stop is None and \
                    k.step is None:
                out.append(coefs[axis])
                axis += 1
            else:
                break
        else:
            if axis == len(shape):
                return (c, tuple(out))
    if sum(k is Ellipsis for k in items) > 1:
        return None
    used = sum(k is not None and k is not Ellipsis for k in items)
    out: list = []
    axis = 0
    for k in items:
        if k is None:
            out.append(0)
        elif k is Ellipsis:
            rest = len(shape) - used
            out += coefs[axis:axis + rest]
            axis += rest
        elif axis >= len(shape):
            return None
        elif k.__class__ is slice:
            start, stop, step = k.indices(shape[axis])
            count = len(range(start, stop, step))
            c += coefs[axis] * start if count else 0
            out.append(coefs[axis] * step if count > 1 else 0)
            axis += 1
        elif isinstance(k, _INTS) and not isinstance(k, (bool, np.bool_)):
            i = int(k)
            c += coefs[axis] * (i + shape[axis] if i < 0 else i)
            axis += 1
        else:
            return None
    out += coefs[axis:]
    if len(out) != len(out_shape):
        return None
    if 0 in out_shape:
        return None
    return (c, tuple(out))


_LINEAR = {np.add: operator.add, np.subtract: operator.sub}


def of_ufunc(ufunc, inputs, out: np.ndarray):
    """The form of ufunc(*inputs) (out), for +, - and * of form arrays and ints; or None."""
    if out.dtype != np.int64 or 0 in out.shape:
        return None
    forms = []
    for x in inputs:
        f = getattr(x, "_form", None)
        if f is not None:
            pad = out.ndim - len(f[1])
            forms.append((f[0], (0,) * pad + f[1]))
        elif isinstance(x, _INTS) and not isinstance(x, (bool, np.bool_)):
            forms.append(int(x))
        else:
            return None
    if ufunc in _LINEAR and len(forms) == 2:
        a, b = (f if f.__class__ is tuple else (f, (0,) * out.ndim) for f in forms)
        fn = _LINEAR[ufunc]
        form = (fn(a[0], b[0]), tuple(fn(x, y) for x, y in zip(a[1], b[1])))
    elif ufunc is np.multiply and len(forms) == 2 and \
            sum(f.__class__ is tuple for f in forms) == 1:
        (c, coefs), = (f for f in forms if f.__class__ is tuple)
        s, = (f for f in forms if f.__class__ is not tuple)
        form = (c * s, tuple(k * s for k in coefs))
    elif ufunc is np.negative and len(forms) == 1 and forms[0].__class__ is tuple:
        c, coefs = forms[0]
        form = (-c, tuple(-k for k in coefs))
    elif ufunc is np.positive and len(forms) == 1 and forms[0].__class__ is tuple:
        form = forms[0]
    else:
        return None
    c, coefs = form
    coefs = tuple(k if n > 1 else 0 for k, n in zip(coefs, out.shape))
    return (c, coefs) if _small(c, coefs, out.shape) else None


def pattern(shape_strides: list, offset: int, items: list):
    """index_arrays.advanced_pattern's (pattern, offset) from the items' forms (every item
    an int or a form array), or None: the plain path then answers (and raises its errors)."""
    forms = []
    for k in items:
        f = getattr(k, "_form", None)
        if f is not None:
            forms.append((f[0], f[1], k.shape))
        elif k.__class__ is int and -_INT64 <= k < _INT64:
            forms.append((k, (), ()))
        else:
            return None
    ndim = max(len(s) for _, _, s in forms)
    if ndim == 0:
        shape = [1]
        ndim = 1
    else:
        shape = [1] * ndim
        for _, _, s in forms:
            for a, n in enumerate(s, ndim - len(s)):
                if n != 1:
                    if shape[a] != 1 and shape[a] != n:
                        return None  # (the plain path's E607)
                    shape[a] = n
    strides = [0] * ndim
    for (stride, _), (c, coefs, s) in zip(shape_strides, forms):
        offset += c * stride
        for a, k in enumerate(coefs, ndim - len(coefs)):
            if k:
                strides[a] += k * stride
    return [(s, n) for s, n in zip(strides, shape)], offset
