"""The engines' accumulator registers under the new API's `reduce_cmd` (the NKI reduce_cmd documentation).

Used by the instructions that fold their results into a per-partition register and may
start from a loaded value (`load_reduce`): exponential, tensor_scalar_reduce and
tensor_scalar_cumulative on the Vector engine, activate2 (and activation_reduce, through
activation) on the Scalar engine. range_select / select_reduce keep their own max-only
protocol (common.vector_reduce); every one of them shares `m.vector_acc`.

The register holds one float32 per partition. Which operator it folds with is the current
instruction's: a chain may switch operators, as hardware would let it (no warning).

Readings (the pages leave them open):
* The fold is sequential in element order (flattened free axes, row-major), starting from
  the register: `acc = op(acc, x[0])`, then `op(acc, x[1])`, ... as the pages' pseudo-code
  loops write it, so float32 sums are bit-exact to that loop, not pairwise.
* max/min/abs_max/abs_min do not depend on the order; NaN propagates (NumPy's maximum).
* abs_max(acc, v) is acc if |acc| > |v| else v (nl.abs_max: the signed value of larger
  magnitude, the second on a tie); abs_min likewise with <. The register's identity is 0
  for abs_max and +inf for abs_min.
* The values folded are the float32 results before the cast to dst's dtype.
"""
from __future__ import annotations

import numpy as np

from nkirun.diagnostics import warning
from nkirun.hw import alu as ops
from nkirun.isa.spec import Bound

SEQUENTIAL = {"add": np.add, "multiply": np.multiply}  # the fold order fixes the bits
ORDERLESS = {"maximum": np.maximum, "minimum": np.minimum}


def per_partition_f32(b: Bound, m, key: str, partitions: int) -> np.ndarray:
    """A scalar-or-(P, 1) operand as a (P, 1) float32 array."""
    t = b.tile(key)
    if t is not None:
        return m.read_f32(t).reshape(-1, 1)
    return np.full((partitions, 1), b[key], np.float32)


def identity(op: str) -> np.float32:
    return np.float32(ops.OPS[op].identity)


def fold_rows(op: str, start: np.ndarray, x: np.ndarray) -> np.ndarray:
    """(P, 1): `op` folded over each row of the float32 (P, N) array x, from `start` (P, 1)."""
    ufunc = SEQUENTIAL.get(op)
    if ufunc is not None:
        if _is_identity(op, start):
            # op(identity, x0) == x0 bit for bit, except 0 + -0.0 = +0.0: adding +0.0 at the
            # end restores that sign (the sums differ only while every term so far is -0.0)
            r = ufunc.accumulate(x, axis=1)[:, -1:]
            return r + np.float32(0) if op == "add" else r
        t = x.copy()
        t[:, :1] = ufunc(start, t[:, :1])
        ufunc.accumulate(t, axis=1, out=t)
        return t[:, -1:].copy()
    if op in ("abs_max", "abs_min"):
        return _fold_by_magnitude(op == "abs_max", start, x)
    ufunc = ORDERLESS[op]
    return ufunc(start, ufunc.reduce(x, axis=1, keepdims=True))


def _fold_by_magnitude(larger: bool, start: np.ndarray, x: np.ndarray) -> np.ndarray:
    """acc = acc if |acc| > |v| (abs_min: <) else v, folded over each row, vectorised.

    The new element wins ties and any comparison with NaN, so the result is the element of
    largest (smallest) magnitude after the row's last NaN, the latest one on a tie, or that
    NaN if it is the row's last element; the start value survives only if the row has no
    NaN and it beats every element strictly."""
    p, n = x.shape
    nan = np.isnan(x)
    after_nan = np.maximum.accumulate(nan[:, ::-1], axis=1)[:, ::-1]  # a NaN at or after i
    key = np.abs(x) if larger else -np.abs(x)
    key = np.where(after_nan, -np.inf, key)  # elements up to the last NaN are forgotten
    last = n - 1 - np.argmax(key[:, ::-1], axis=1)  # the latest position of the best key
    rows = np.arange(p)
    best = x[rows, last][:, None]
    s = np.abs(start) if larger else -np.abs(start)
    keep_start = ~nan.any(axis=1, keepdims=True) & (s > key[rows, last][:, None])
    out = np.where(keep_start, start, best)
    return np.where(nan[:, -1:], x[:, -1:], out).astype(np.float32)


def _is_identity(op: str, start: np.ndarray) -> bool:
    """Whether every lane of `start` is op's identity (+0.0 for add, 1.0 for multiply)."""
    ident = identity(op)
    return bool((start == ident).all() and not np.signbit(start).any())


def start_value(b: Bound, m, acc, engine: str, op: str, lanes: slice, partitions: int,
                init_key: str | None) -> np.ndarray:
    """(P, 1) float32: the register before this instruction's elements are folded in."""
    cmd = b["reduce_cmd"]
    if cmd in ("reset", "reset_reduce"):
        return np.full((partitions, 1), identity(op), np.float32)
    if cmd == "load_reduce":
        return per_partition_f32(b, m, init_key, partitions)
    warn_if_undefined(b, m, engine, ~acc.defined[lanes])
    return acc.value[lanes].copy()


def warn_if_undefined(b: Bound, m, engine: str, undefined: np.ndarray) -> None:
    """The run-time W052 of every accumulator user: `reduce` continues from lanes nothing
    defined (`undefined`: one bool per partition the instruction folds into)."""
    if undefined.any():
        bad = int(np.flatnonzero(undefined)[0])
        m.warnings.append(warning(
            "W052", f"{b.op}: reduce_cmd=reduce continues from an undefined {engine}-engine "
            f"accumulator (partition {bad}: never reset, or clobbered by an idle op)",
            b.loc("reduce_cmd"), b.index, hint="start the chain with reset_reduce or load_reduce"))


def fold(b: Bound, m, acc, engine: str, op: str, x: np.ndarray, lanes_of: str,
         init_key: str | None = None) -> np.ndarray | None:
    """Apply b's reduce_cmd to `acc` with the float32 (P, N) results x; return the register
    after this instruction ((P, 1)), or, under idle, this instruction's own fold from the
    identity when it has a reduce_res to receive it (None without one)."""
    cmd = b["reduce_cmd"]
    src = b.tile(lanes_of)
    lanes = acc.lanes(src)
    if cmd == "idle":
        if engine == "Vector":  # [NEW-ISA] exponential: "accumulator state unknown"
            acc.defined[lanes] = False
        if b.tile("reduce_res") is None:
            return None
        return fold_rows(op, np.full((src.partitions, 1), identity(op), np.float32), x)
    start = start_value(b, m, acc, engine, op, lanes, src.partitions, init_key)
    value = start if cmd == "reset" else fold_rows(op, start, x)
    acc.value[lanes] = value
    acc.defined[lanes] = True
    return value
