"""`mask=`: the legacy NKI compile-time execution predicate.

Spelling: a string of comparisons joined by `and` (or `&`), each side an affine integer
expression of the index names
  p            the partition index within the instruction's dst tile (0-based)
  f            the flattened free index of dst (row-major)
  f0, f1, ...  the index along each free dimension of dst
e.g. `mask: "p < 64 and f < 256"`. Elements where it is false are neither computed
nor written: dst keeps its previous value there.

The index space is the operand named by the instruction's `SPEC.mask_on`: dst for most
instructions; the input for those whose page applies the mask to an input (max8: src,
nc_match_replace8 / nc_find_index8: data). Reductions see only the unmasked elements, and
a partition with no unmasked element is not touched at all (its dst row, reduce_res
element and accumulator lane keep their values). See docs/masks.md.
"""
from __future__ import annotations

import ast
import warnings

import numpy as np

from nkirun.diagnostics import Diagnostic, error, warning

_CMP = {ast.Lt: np.less, ast.LtE: np.less_equal, ast.Gt: np.greater,
        ast.GtE: np.greater_equal, ast.Eq: np.equal, ast.NotEq: np.not_equal}
_BIN = {ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply,
        ast.FloorDiv: np.floor_divide, ast.Mod: np.mod}


class MaskError(ValueError):
    pass


def _names(shape) -> dict[str, np.ndarray]:
    """Index grids (broadcastable to `shape`) for p, f, f0.. ."""
    nd = len(shape)
    grids = {}
    for axis in range(nd):
        g = np.arange(shape[axis]).reshape([-1 if a == axis else 1 for a in range(nd)])
        grids["p" if axis == 0 else f"f{axis - 1}"] = g
    free = shape[1:]
    f = np.arange(int(np.prod(free)) if free else 1).reshape((1,) + tuple(free))
    grids["f"] = f
    return grids


_MAX_VALUE = 2**62


def _max_abs(x) -> int:
    if isinstance(x, np.ndarray):
        return int(np.abs(x).max()) if x.size else 0
    return abs(int(x))


def _eval(node, env):
    if isinstance(node, ast.Expression):
        return _eval(node.body, env)
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
        out = _eval(node.values[0], env)
        for v in node.values[1:]:
            out = np.logical_and(out, _eval(v, env))
        return out
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitAnd):
        return np.logical_and(_eval(node.left, env), _eval(node.right, env))
    if isinstance(node, ast.Compare):
        out, left = None, _eval(node.left, env)
        for op, comp in zip(node.ops, node.comparators):
            if type(op) not in _CMP:
                raise MaskError("comparisons allowed: <, <=, >, >=, ==, !=")
            right = _eval(comp, env)
            c = _CMP[type(op)](left, right)
            out = c if out is None else np.logical_and(out, c)
            left = right
        return out
    if isinstance(node, ast.BinOp) and type(node.op) in _BIN:
        left, right = _eval(node.left, env), _eval(node.right, env)
        a, b = _max_abs(left), _max_abs(right)
        bound = a * b if isinstance(node.op, ast.Mult) else a + b
        if bound > _MAX_VALUE:  # int64 arithmetic would wrap silently
            raise MaskError(f"a value of the mask can reach {bound:.3g}, beyond the "
                            f"{_MAX_VALUE:.3g} index arithmetic allows")
        if type(node.op) in (ast.FloorDiv, ast.Mod) and np.any(np.equal(right, 0)):
            raise MaskError("the mask divides by zero (`//` or `%` by an expression that is 0)")
        return _BIN[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_eval(node.operand, env)
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and \
            not isinstance(node.value, bool):
        if abs(node.value) > MAX_CONSTANT:
            raise MaskError(f"the constant {_short(node.value)} is out of range (at most "
                            f"{MAX_CONSTANT:,} in magnitude: masks compare indices)")
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in env:
            raise MaskError(f"unknown index name `{node.id}`; allowed: " + ", ".join(env))
        return env[node.id]
    raise MaskError("a mask is comparisons of affine index expressions joined by `and`")


MAX_CONSTANT = 2**31 - 1  # masks compare indices (< 2**24 elements): int32 is plenty
MAX_MASK_CHARS = 4096  # a longer predicate is not a hand-written mask; bounds the parser too


def _short(v: int) -> str:
    s = str(v) if abs(v) < 10**30 else f"{str(v)[:12]}... ({len(str(abs(v)))} digits)"
    return s


def evaluate(text: str, shape: tuple[int, ...]) -> np.ndarray:
    """The boolean mask of `shape` for predicate `text` (raises MaskError)."""
    if len(text) > MAX_MASK_CHARS:
        raise MaskError(f"the mask is {len(text):,} characters long, over the "
                        f"{MAX_MASK_CHARS:,} a predicate may have")
    try:
        return _evaluate(text, shape)
    except MaskError:
        raise
    except (RecursionError, MemoryError):
        raise MaskError("the mask is nested too deeply to evaluate") from None
    except (OverflowError, ValueError) as e:  # e.g. a product of constants beyond int64
        raise MaskError(f"a value of the mask is out of range ({e})") from None


def _evaluate(text: str, shape: tuple[int, ...]) -> np.ndarray:
    # `&` means `and` here (there are no bitwise operators), so `p < 64 & f < 256` needs no
    # parentheses, unlike the same expression in Python/NKI
    src = text.replace("&&", "&").replace("&", " and ")
    try:
        with warnings.catch_warnings():  # e.g. "invalid decimal literal" for `f < 3x`
            warnings.simplefilter("ignore")
            tree = ast.parse(src.strip(), mode="eval")
    except SyntaxError as e:
        raise MaskError(f"cannot parse mask {text!r}: {e.msg}") from None
    out = _eval(tree, _names(shape))
    if not isinstance(out, np.ndarray) or out.dtype != bool:
        raise MaskError("a mask must be a comparison such as `p < 64`")
    return np.broadcast_to(out, shape).copy()


def compile_mask(b) -> tuple[np.ndarray | None, Diagnostic | None]:
    """The boolean mask of a bound instruction, shaped like its `SPEC.mask_on` operand."""
    space = b.tile(b.spec.mask_on)
    if space is None:
        return None, None
    try:
        m = evaluate(b["mask"], space.shape)
    except MaskError as e:
        return None, error("E045", f"{b.op}: {e}", b.loc("mask"), b.index,
                           hint=f'e.g. mask: "p < 64 and f < 256" (p, f, f0.. index '
                                f'{b.spec.mask_on})')
    if not m.any():
        return m, warning("W046", f"{b.op}: the mask selects no element of {b.spec.mask_on} "
                          f"{list(space.shape)}: the instruction does nothing", b.loc("mask"),
                          b.index, hint="p indexes partitions, f the flattened free index")
    return m, None


# ---- helpers for instruction modules ----------------------------------------------------
def hide(values: np.ndarray, mask: np.ndarray | None, fill) -> np.ndarray:
    """`values` with the masked-off elements replaced by `fill` (a reduction's identity),
    so that a reduction over the result sees only the unmasked elements."""
    if mask is None:
        return values
    return np.where(mask.reshape(values.shape), values, values.dtype.type(fill))


def active_rows(mask: np.ndarray | None) -> np.ndarray | None:
    """(P,) bool: the partitions with at least one unmasked element (None: no mask)."""
    return None if mask is None else mask.reshape(mask.shape[0], -1).any(axis=1)


def rows_mask(mask: np.ndarray | None, shape) -> np.ndarray | None:
    """The write mask for a per-partition result of `shape` (reduce_res, max8's dst, ...):
    True on the partitions the mask leaves active, so the others keep their values."""
    rows = active_rows(mask)
    if rows is None:
        return None
    return np.broadcast_to(rows.reshape((-1,) + (1,) * (len(shape) - 1)), tuple(shape))


def fold_input(values: np.ndarray, sel: np.ndarray, fill) -> np.ndarray:
    """(..., N) values and selection -> (..., N+1) for an exact masked left fold along the last
    axis: position 0 holds the first selected value, the rest the selected values in order
    with every other slot (including the moved one) set to `fill`, a right identity of the
    operator (op(a, fill) == a bit for bit: -0.0 for add, 0.0 for subtract, 1.0 multiply,
    -inf max, +inf min). Folding the result applies op to exactly the selected values, in
    order; a group with nothing selected gives junk, which its caller must not write."""
    first = sel.argmax(axis=-1)[..., None]
    lead = np.take_along_axis(values, first, axis=-1)
    rest = np.where(sel, values, np.asarray(fill).astype(values.dtype))
    np.put_along_axis(rest, first, np.asarray(fill).astype(values.dtype), axis=-1)
    return np.concatenate([lead, rest], axis=-1)
