"""The engines' accumulator registers: ONE model for every instruction that reduces into them
(the nki.isa.reduce_cmd documentation and each instruction's page).

Users: the Vector registers (`m.vector_acc`) are shared by range_select, select_reduce,
tensor_scalar_reduce, tensor_scalar_cumulative and exponential; the Scalar registers
(`m.scalar_acc`) by activation, activation_reduce and activate2. Every one of them goes through
`apply` (tensor_scalar_cumulative, whose scan is its own fold, through `start_value`), so the
reduce_cmd protocol, the masks and the W052 warning live here only.

The register holds one float32 per partition. reduce_cmd: `reset` sets it to the operator's
identity (0 add, 1 multiply, -inf max, +inf min, 0 abs_max, +inf abs_min), `reset_reduce`
resets then folds, `reduce` folds onto the current value (W052 if nothing defined it),
`load_reduce` starts from reduce_init / imm1, `idle` leaves the Scalar registers alone and
makes the Vector ones undefined (the Vector pages: "the accumulator state may still be
modified"). reduce_res receives the register after the instruction, or under idle the
instruction's own reduction.

Two fold orders, because the pages write two different things:
* STREAMED — the page's pseudo-code loop folds element by element from the register,
  `acc = op(acc, x[i])` in row-major order (exponential, activate2; tensor_scalar_cumulative's
  scan). Float32 sums are bit-exact to that loop.
* WHOLE_ROW — the page reduces the row with NumPy first and then combines it with the
  register: activation's `reduce_op(reduce_regs, reduce_op(output, axis=<FreeAxis>))`,
  tensor_scalar_reduce's `reduce_op(dst, axis=<FreeAxis>)`, range_select / select_reduce's
  `np.max(result, axis=1)`. The row reduction is NumPy's own (`np.add.reduce` sums pairwise),
  so the float32 bits equal np.sum of the row; the register is combined once: acc op row.

Readings (the pages leave them open):
* activation's pseudo-code `reduce_regs += result` with `result = regs + sum` would double the
  registers; it is taken as regs := regs + sum (what activation_reduce's page describes).
* max/min/abs_max/abs_min do not depend on the order; NaN propagates (NumPy's maximum).
* abs_max(acc, v) is acc if |acc| > |v| else v (the signed value of larger magnitude, the
  later one on a tie); abs_min likewise with <.
* The values folded are the float32 results before the cast to dst's dtype.
* Masked-off elements (legacy `mask=`) count as the operator's identity in place (-0.0 for
  add, so x + fill == x), and a partition the mask leaves empty keeps its register.
"""
from __future__ import annotations

import numpy as np

from nkirun.isa.mask import active_rows, hide, rows_mask
from nkirun.hw import alu as ops
from nkirun.isa.spec import Bound

STREAMED, WHOLE_ROW = "streamed", "whole_row"
SEQUENTIAL = {"add": np.add, "multiply": np.multiply}  # the fold order fixes the bits
ORDERLESS = {"maximum": np.maximum, "minimum": np.minimum}
# a right identity for hiding masked-off elements: op(a, fill) == a bit for bit
HIDDEN = {"add": -0.0, "multiply": 1.0, "maximum": -np.inf, "minimum": np.inf}


def per_partition_f32(b: Bound, m, key: str, partitions: int) -> np.ndarray:
    """A scalar-or-(P, 1) operand as a (P, 1) float32 array."""
    t = b.tile(key)
    if t is not None:
        return m.read_f32(t).reshape(-1, 1)
    return np.full((partitions, 1), b[key], np.float32)


def identity(op: str) -> np.float32:
    return np.float32(ops.OPS[op].identity)


def row_reduce(op: str, x: np.ndarray) -> np.ndarray:
    """(P, 1): NumPy's own reduction of each row of the float32 (P, N) x (WHOLE_ROW's inner
    `reduce_op(output, axis)`; add is pairwise, exactly np.sum of the row)."""
    if x.shape[1] == 0:
        return np.full((x.shape[0], 1), identity(op), np.float32)
    ufunc = SEQUENTIAL.get(op) or ORDERLESS.get(op)
    if ufunc is not None:
        return ufunc.reduce(np.ascontiguousarray(x), axis=1, keepdims=True)
    return _fold_by_magnitude(op == "abs_max", np.full((x.shape[0], 1), identity(op),
                                                       np.float32), x)


def fold_rows(op: str, start: np.ndarray, x: np.ndarray, order: str = STREAMED) -> np.ndarray:
    """(P, 1): `op` folded over each row of the float32 (P, N) array x from `start` (P, 1),
    in the given order (module docstring)."""
    ufunc = SEQUENTIAL.get(op)
    if ufunc is None:  # max/min/abs_*: the order does not change the result
        if op in ("abs_max", "abs_min"):
            return _fold_by_magnitude(op == "abs_max", start, x)
        return ORDERLESS[op](start, row_reduce(op, x))
    if order == WHOLE_ROW:
        return ufunc(start, row_reduce(op, x))
    if x.shape[1] == 0:
        return start.copy()
    if _is_identity(op, start):
        # op(identity, x0) == x0 bit for bit, except 0 + -0.0 = +0.0: adding +0.0 at the
        # end restores that sign (the sums differ only while every term so far is -0.0)
        r = ufunc.accumulate(x, axis=1)[:, -1:]
        return r + np.float32(0) if op == "add" else r
    t = x.copy()
    t[:, :1] = ufunc(start, t[:, :1])
    ufunc.accumulate(t, axis=1, out=t)
    return t[:, -1:].copy()


def _fold_by_magnitude(larger: bool, start: np.ndarray, x: np.ndarray) -> np.ndarray:
    """acc = acc if |acc| > |v| (abs_min: <) else v, folded over each row, vectorised.

    The new element wins ties and any comparison with NaN, so the result is the element of
    largest (smallest) magnitude after the row's last NaN, the latest one on a tie, or that
    NaN if it is the row's last element; the start value survives only if the row has no
    NaN and it beats every element strictly."""
    p, n = x.shape
    if n == 0:
        return start.copy()
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


def start_value(b: Bound, m, acc, engine: str, op: str, lanes, partitions: int,
                init_key: str | None, cmd: str | None = None) -> np.ndarray:
    """(P, 1) float32: the register before this instruction's elements are folded in.
    `lanes` indexes acc's registers (a slice or an index array, one per partition)."""
    cmd = cmd or b["reduce_cmd"]
    if cmd in ("reset", "reset_reduce"):
        return np.full((partitions, 1), identity(op), np.float32)
    if cmd == "load_reduce":
        return per_partition_f32(b, m, init_key, partitions)
    warn_if_undefined(b, m, engine, ~acc.defined[lanes])
    return acc.value[lanes].copy()


def undefined_warning(b: Bound, engine: str, why: str):
    """THE W052, for the checker's program-wide pass (statically) and for the run (per
    partition): `reduce` folds onto a register nothing defined; `why` says what left it so."""
    return b.warn("W052", f"reduce_cmd=reduce continues from an undefined {engine}-engine "
                  f"accumulator ({why})", "reduce_cmd",
                  hint="start the chain with reset_reduce or load_reduce")


def warn_if_undefined(b: Bound, m, engine: str, undefined: np.ndarray) -> None:
    """The run-time W052 of every accumulator user (`undefined`: one bool per partition the
    instruction folds into)."""
    if undefined.any():
        bad = int(np.flatnonzero(undefined)[0])
        m.warnings.append(undefined_warning(
            b, engine, f"partition {bad}: never reset, or clobbered by an idle op"))


def apply(b: Bound, m, engine: str, op: str, x: np.ndarray, lanes_of: str, order: str,
          init_key: str | None = None, cmd: str | None = None) -> np.ndarray | None:
    """Apply reduce_cmd (b's own, or `cmd` for an instruction with a fixed one) to `engine`'s
    registers with this instruction's float32 results x (P, ...); return what reduce_res
    receives ((P, 1): the register after it, or under idle the instruction's own reduction),
    None under idle without a reduce_res."""
    cmd = cmd or b["reduce_cmd"]
    acc = m.vector_acc if engine == "Vector" else m.scalar_acc
    src = b.tile(lanes_of)
    lanes = np.arange(len(acc.defined))[acc.lanes(src)]
    rows = active_rows(b.mask)  # a partition the mask leaves empty is not touched
    on = lanes if rows is None else lanes[rows]
    x = x.reshape(x.shape[0], -1)
    if b.mask is not None and cmd != "reset":
        x = hide(x, b.mask, HIDDEN.get(op, identity(op)))
    if cmd == "idle":
        if engine == "Vector":  # the Vector pages: "accumulator state unknown" after idle
            acc.defined[on] = False
        if b.tile("reduce_res") is None:
            return None
        if order == WHOLE_ROW:  # `reduce_op(output, axis)` without the register
            return row_reduce(op, x)
        return fold_rows(op, np.full((x.shape[0], 1), identity(op), np.float32), x)
    start = start_value(b, m, acc, engine, op, on, len(on), init_key, cmd)
    kept = x if rows is None else x[rows]
    settle(acc, on, start if cmd == "reset" else fold_rows(op, start, kept, order))
    return acc.value[lanes].copy()


def settle(acc, lanes, value: np.ndarray) -> None:
    """The registers `lanes` hold `value` (P, 1) after an instruction, defined; also for
    tensor_scalar_cumulative, whose scan is its own fold (from start_value)."""
    acc.value[lanes] = value
    acc.defined[lanes] = True


def read_out(b: Bound, m, value: np.ndarray | None, negate: bool = False) -> None:
    """Write `value` (from apply) into reduce_res, if the instruction has one; a partition
    the mask leaves empty keeps its old reduce_res."""
    res = b.tile("reduce_res")
    if res is None or value is None:
        return
    m.write(res, -value if negate else value, None, rows_mask(b.mask, res.shape))
