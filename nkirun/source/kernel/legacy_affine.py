"""The pre-0.2 instructions that took index expressions (legacy.py): `affine_select(pred=)`
and `iota(expr)`, turned into the affine patterns nki.isa's instructions take.

Readings: `pred` is the boolean array of a comparison of index expressions (`q_pos >=
k_pos`); nkirun finds `offset + m * p + c * f >= 0` (c = +1 or -1) that gives exactly that
array, else E607. `iota(expr)` is the affine form `offset + m * p + sum(k_a * i_a)` of the
expression's values, else E607.
"""
from __future__ import annotations

import numpy as np

from nkirun.source.kernel.legacy import affine
from nkirun.source.kernel.unsupported import kernel_error


def affine_from_pred(values: dict) -> None:
    """Replace the pre-0.2 `pred=` (a boolean array from comparing index expressions, such
    as `q_pos >= k_pos`) by the affine form nki.isa.affine_select takes: the predicate
    `offset + channel_multiplier * p + step * f >= 0` that gives exactly the same array."""
    pred = np.asarray(values.pop("pred"))
    tile = values.get("on_true_tile")
    shape = tuple(tile.shape) if hasattr(tile, "shape") else pred.shape
    if pred.dtype != bool or len(shape) != 2:
        raise kernel_error("E607", "affine_select(pred=...): nkirun takes a predicate over a "
                           "2-D (P, F) tile made by comparing index expressions")
    m = np.broadcast_to(pred, shape)
    fit = _half_plane(m)
    if fit is None:
        raise kernel_error("E607", "affine_select(pred=...): the predicate is no half-plane "
                           "`a + b * p + c * f >= 0` of the tile's indices",
                           hint="compare two affine index expressions (q_pos >= k_pos)")
    offset, multiplier, step = fit
    values.update(pattern=[[step, shape[1]]], channel_multiplier=multiplier, offset=offset,
                  cmp_op="greater_equal")


def _half_plane(m: np.ndarray):
    """(offset, multiplier, step) with m == (offset + multiplier*p + step*f >= 0), or None."""
    P, F = m.shape
    counts = m.sum(axis=1)
    f = np.arange(F)[None, :]
    p = np.arange(P)[:, None]
    for step in (-1, 1):  # true on a prefix of each row (f <= t_p) or a suffix (f >= s_p)
        edge = counts - 1 if step == -1 else F - counts  # t_p, or s_p
        inner = np.flatnonzero((counts > 0) & (counts < F))
        slopes = [edge[inner[1]] - edge[inner[0]]] if len(inner) > 1 and \
            (edge[inner[1]] - edge[inner[0]]) % (inner[1] - inner[0]) == 0 else [1, 0, -1]
        if len(inner) > 1:
            slopes = [(edge[inner[1]] - edge[inner[0]]) // (inner[1] - inner[0])]
        for slope in slopes:
            base = int(edge[inner[0]] - slope * inner[0]) if len(inner) else \
                (F - 1 if m[0].all() else -1) if step == -1 else (0 if m[0].all() else F)
            if step == -1:
                offset, multiplier = base, int(slope)  # base + slope*p - f >= 0
            else:
                offset, multiplier = -base, -int(slope)  # f - (base + slope*p) >= 0
            if np.array_equal(offset + multiplier * p + step * f >= 0, m):
                return offset, multiplier, step
    return None


def iota_from_expr(values: dict) -> None:
    """The pre-0.2 `nisa.iota(expr, dtype)`: a tile holding an index expression's values,
    as the affine pattern nki.isa.iota takes (`offset + channel_multiplier * p + ...`)."""
    arr = np.asarray(values.pop("pattern"))
    shape = arr.shape if arr.ndim >= 2 else (arr.shape[0], 1) if arr.ndim else (1, 1)
    fit = affine(arr.reshape(shape), shape)
    if fit is None:
        raise kernel_error("E607", "nisa.iota(expr): the expression is not affine in the "
                           "index arrays")
    c, coefs = fit
    values.update(pattern=[[k, n] for k, n in zip(coefs[1:], shape[1:])], offset=c,
                  channel_multiplier=coefs[0], _legacy_shape=shape)
