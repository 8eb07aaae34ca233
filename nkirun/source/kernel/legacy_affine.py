"""The pre-0.2 call forms (legacy.py) of instructions, turned into the keywords nki.isa's
instructions take. An instruction names the forms it accepts in its spec
(`SPEC.nki.legacy`, isa/nki_api.py), and the old spellings of a keyword's value
(`SPEC.nki.aliases`); FORMS below holds each form's adapter, so nothing here names an
instruction.

Readings: `pred` is the boolean array of a comparison of index expressions (`q_pos >=
k_pos`); nkirun finds `offset + m * p + c * f >= 0` (c = +1 or -1) that gives exactly that
array, else E607. `iota(expr)` is the affine form `offset + m * p + sum(k_a * i_a)` of the
expression's values, else E607.
"""
from __future__ import annotations

import numpy as np

from nkirun.isa import REGISTRY
from nkirun.source.kernel.legacy import affine, is_index_array
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


# ---- the forms an instruction's spec names (SPEC.nki.legacy) ------------------------------
def _index_expression(values: dict) -> None:
    """`iota(expr, dtype)`: the pattern given as an index expression."""
    if is_index_array(values.get("pattern")):
        iota_from_expr(values)


def _predicate(values: dict) -> None:
    """`affine_select(pred=..., on_true_tile=..., on_false_value=...)`."""
    if "pred" in values:
        affine_from_pred(values)  # it also read PSUM: through an SBUF copy
        from nkirun.source.kernel.convenience import _in_sbuf
        values["on_true_tile"] = _in_sbuf(values.get("on_true_tile"))


def _column_broadcast(values: dict) -> None:
    """Pre-0.2 `nisa.tensor_tensor(x, col, op)` with a (P, 1) `col` and a (P, F, ...) `x`
    (nki-samples' double_row_matmul dequantizes so): the column is read along x's free
    dims through a zero-step view, which gives each element x op col[p]."""
    if "dst" in values:
        return
    from nkirun.source.kernel.convenience import column_broadcast
    from nkirun.source.kernel.tensor import ndarray
    a, b = values.get("data1"), values.get("data2")
    if not (isinstance(a, ndarray) and isinstance(b, ndarray)) or a.shape == b.shape:
        return
    for key, col, other in (("data2", b, a), ("data1", a, b)):
        if col.shape == (other.shape[0], 1) and len(other.shape) >= 2:
            values[key] = column_broadcast(col, other.shape)
            return


# name -> (adapter, whether a keyword-only call may hold the form: such an instruction's
# calls all take isa_shim's general path)
FORMS = {
    "index_expression": (_index_expression, True),
    "predicate": (_predicate, True),
    "column_broadcast": (_column_broadcast, False),  # only without dst=
}
_ADAPTERS: dict = {}  # op -> (its spec, its adapters: the forms, then the alias rewrites)


def adapters(op: str) -> tuple:
    """The adapters of `op`'s pre-0.2 forms and value aliases, built once per spec (tests
    may substitute one)."""
    spec = REGISTRY.get(op)
    hit = _ADAPTERS.get(op)
    if hit is None or hit[0] is not spec:
        api = spec.nki
        hit = _ADAPTERS[op] = (spec, tuple(FORMS[name][0] for name in api.legacy)
                               + tuple(_alias(*a) for a in api.aliases))
    return hit[1]


def _alias(keyword: str, old: str, new: str):
    def rename(values: dict) -> None:
        if values.get(keyword) == old:
            values[keyword] = new
    return rename


def general_only(op: str, given: tuple) -> bool:
    """Whether a call of `op` by the keywords `given` may hold a pre-0.2 form (or an old
    spelling of a value): isa_shim then takes its general path."""
    api = REGISTRY[op].nki
    return any(FORMS[name][1] for name in api.legacy) or \
        any(keyword in given for keyword, _, _ in api.aliases)
