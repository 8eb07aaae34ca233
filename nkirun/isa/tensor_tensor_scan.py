"""nki.isa.tensor_tensor_scan — a two-operator scan along the free axis (the nki.isa.tensor_tensor_scan documentation).

Per partition, with the free dims flattened (page 004):
    r[0] = op1(op0(data0[0], initial), data1[0])
    r[i] = op1(op0(data0[i], r[i-1]), data1[i])
reverse0 swaps op0's operands (data0 becomes its rhs), reverse1 swaps op1's (data1 becomes
its lhs).

Facts (page 004; the nki.isa.tensor_tensor_scan documentation):
* data0 and data1: same partitions and elements per partition, not both in PSUM.
* initial: a float32 compile-time scalar, or a (P, 1) tile (e.g. `c[:, 511]`, the last
  column of a previous scan, as in the page's example).
* op0/op1: binary arithmetic operators. nkirun allows the arithmetic rows of the operator
  table that the Vector engine runs (the nki.isa.tensor_tensor_scan documentation): add, subtract, multiply,
  maximum, minimum (not power, which is GpSimd-only, nor divide, which NKI does not offer).
* the engine computes in float32 and casts the results to the output dtype. The running
  value is kept in float32: only what is written is rounded (the page's "computation in
  float32 math"; the same reading as tests/reference.py).
* cost: max(MIN_II, 2N) Vector cycles, N = elements per partition of data0.

Readings:
* output dtype: `dtype` if given, else dst's dtype — every nkirun instruction writes
  through dst (program-format.md), so the page's "highest-precision input" default does
  not arise.
* mask (over dst's indices): the scan runs over the selected elements of each partition in
  order, skipping the others (the running value passes over them unchanged), which is the
  legacy "smaller instruction" for a box mask; unselected elements of dst are not written.
* which NaN (sign, payload) an operation on NaN/inf yields is not documented for the
  hardware; nkirun gives NumPy's float32 result for the page's operand order.
"""
from __future__ import annotations

import numpy as np

from nkirun.hw import alu as ops
from nkirun.checker.mask import active_rows
from nkirun.isa.common import flat, float32_scalar, same_shape
from nkirun.isa.spec import BOOL, OP, TILE, TILE_OR_SCALAR, Bound, InstructionDef, Param, common_tail, \
    out_dtype

SCAN_OPS = tuple(n for n in ops.ARITHMETIC
                 if n in ("add", "subtract", "multiply", "maximum", "minimum"))

PARAMS = (
    Param("dst", TILE, required=True, out=True,
          doc="output tile (same partitions and elements per partition as data0)"),
    Param("data0", TILE, required=True, doc="lhs of op0 (rhs with reverse0)"),
    Param("data1", TILE, required=True, doc="rhs of op1 (lhs with reverse1)"),
    Param("initial", TILE_OR_SCALAR, required=True, per_partition=True,
          doc="starting value: a float32 scalar or a (P, 1) tile such as c[:, 511]"),
    Param("op0", OP, required=True, choices=SCAN_OPS, doc="combines data0 with the running value"),
    Param("op1", OP, required=True, choices=SCAN_OPS, doc="combines op0's result with data1"),
    Param("reverse0", BOOL, default=False, doc="swap op0's operands: op0(previous, data0)"),
    Param("reverse1", BOOL, default=False, doc="swap op1's operands: op1(data1, op0 result)"),
    *common_tail(),
)


def check(b: Bound):
    d0, d1 = b.tile("data0"), b.tile("data1")
    if d0.buffer == "psum" and d1.buffer == "psum":
        yield b.err("E140", "data0 and data1 are both in PSUM; at most one of them may be",
                    "data1", hint="copy one of them to SBUF first (page 004: SBUF+SBUF, "
                                  "SBUF+PSUM or PSUM+SBUF)")
    yield from same_shape(b, "data0", "data1", code="E141")
    yield from same_shape(b, "dst", "data0", code="E142")
    # page 004: a scalar initial is "a float32 compile-time scalar constant"
    yield from float32_scalar(b, "initial", "E143")


def scan(d0: np.ndarray, d1: np.ndarray, init: np.ndarray, op0: str, op1: str,
         reverse0: bool, reverse1: bool, valid: np.ndarray | None = None) -> np.ndarray:
    """(P, F) float32 operands, (P,) float32 initial -> (P, F) float32 scan.

    The recurrence is inherently sequential along F; each step works on all partitions at
    once, on contiguous rows of transposed (F, P) tiles, so that every step is two float32
    ufunc calls writing straight into the result row (out=), no temporaries.

    Which NaN comes out of an op on two NaNs is the first operand's in the page's NumPy loop
    (its column operands are strided, so NumPy runs its scalar loop), but NumPy's SIMD loop
    over contiguous rows may hand back the second one for add/multiply. So a result holding
    a NaN is recomputed with that rule applied explicitly (rare: the fast path stays).
    """
    out = _scan(d0, d1, init, op0, op1, reverse0, reverse1, valid, False)
    if np.isnan(out).any():
        out = _scan(d0, d1, init, op0, op1, reverse0, reverse1, valid, True)
    return out


def _first_nan(f, x: np.ndarray, y: np.ndarray, out: np.ndarray, quiet: bool) -> None:
    """out = f(x, y), where two NaN operands give x's NaN: quieted for arithmetic (an x86
    scalar op), as is for maximum/minimum (NumPy's scalar loop returns x itself)."""
    f(x, y, out=out)
    both = np.isnan(x) & np.isnan(y)
    if both.any():
        bits = np.broadcast_to(x, out.shape).view(np.uint32)
        if quiet:
            bits = bits | np.uint32(0x00400000)
        np.copyto(out, bits.view(np.float32), where=both)


BLOCK = 128  # free-axis elements transposed at a time (a (BLOCK, P) float32 tile: 64 KiB)


def _scan(d0, d1, init, op0, op1, reverse0, reverse1, valid, exact_nan: bool) -> np.ndarray:
    """The recurrence; returns (P, F) float32. See `scan`.

    The free axis is walked in blocks of BLOCK elements, each transposed into small (BLOCK, P)
    tiles that stay in cache. Transposing whole (P, F) arrays instead costs more than the
    scan's own arithmetic: at 128x16384, ~15 ms to bring the (F, P) result back to (P, F)
    (NumPy walks the strided side one element at a time), against ~1 ms in blocks
    (docs/performance.md).
    """
    f0, f1 = ops.OPS[op0].fn, ops.OPS[op1].fn
    if exact_nan:
        q0, q1 = (op not in ("maximum", "minimum") for op in (op0, op1))
        f0 = lambda x, y, out, f=f0, q=q0: _first_nan(f, x, y, out, q)  # noqa: E731
        f1 = lambda x, y, out, f=f1, q=q1: _first_nan(f, x, y, out, q)  # noqa: E731
    # the loop always calls f0(data0, previous) and f1(op0 result, data1): a reversed op
    # gets its operands swapped back here, outside the loop
    if reverse0:
        f0 = lambda x, y, out, f=f0: f(y, x, out=out)  # noqa: E731
    if reverse1:
        f1 = lambda x, y, out, f=f1: f(y, x, out=out)  # noqa: E731
    p, n = d0.shape
    out = np.empty((p, n), np.float32)
    a, c, r = (np.empty((BLOCK, p), np.float32) for _ in range(3))
    skip = None if valid is None else np.empty((BLOCK, p), bool)
    t = np.empty(p, np.float32)  # op0's result: never `out=` one of op1's operands, as NumPy
    # may then swap a commutative op's operands, which changes which NaN comes through
    prev = init
    for j in range(0, n, BLOCK):
        k = min(BLOCK, n - j)
        np.copyto(a[:k], d0[:, j:j + k].T)
        np.copyto(c[:k], d1[:, j:j + k].T)
        if skip is not None:
            np.logical_not(valid[:, j:j + k].T, out=skip[:k])
        for i, (ai, ci, o) in enumerate(zip(a[:k], c[:k], r[:k])):
            f0(ai, prev, out=t)  # out= by keyword: np.maximum deprecates a third
            f1(t, ci, out=o)  # positional argument
            if skip is not None:
                np.copyto(o, prev, where=skip[i])  # unselected: the running value passes over
            prev = o
        out[:, j:j + k] = r[:k].T
        prev = prev.copy()  # r is refilled by the next block
    return out


def execute(b: Bound, m) -> None:
    dst = b["dst"]
    rows = active_rows(b.mask)
    d0 = flat(m.read_f32(b["data0"]))
    d1 = flat(m.read_f32(b["data1"]))
    init = b["initial"]
    if isinstance(init, float):
        init = np.full(d0.shape[0], init, np.float32)
    else:
        init = np.array(m.read_f32(init, rows), dtype=np.float32).reshape(-1)
    valid = None if b.mask is None else flat(b.mask)
    r = scan(d0, d1, init, b["op0"], b["op1"], b["reverse0"], b["reverse1"], valid)
    m.write(dst, r.reshape(dst.shape), out_dtype(b), b.mask)


def cycles(b: Bound, target) -> int:
    return max(target.min_ii, 2 * b["data0"].free_size)


SPEC = InstructionDef(
    name="tensor_tensor_scan",
    engine="vector",
    params=PARAMS,
    summary="scan along the free axis: r[i] = op1(op0(data0[i], r[i-1]), data1[i])",
    semantics=(
        "For each partition, with the free dims flattened, computes r[i] = op1(op0(data0[i], "
        "r[i-1]), data1[i]) starting from r[-1] = initial (a scalar or a (P, 1) tile); "
        "reverse0/reverse1 swap the operands of op0/op1. Everything is computed in float32 "
        "(the running value too); results are cast to dtype, else dst's dtype."),
    cost_formula="max(MIN_II, 2N) Vector cycles, N = elements per partition of data0",
    execute=execute,
    cycles=cycles,
    check=check,
    source="the nki.isa.tensor_tensor_scan documentation; the nki.isa.tensor_tensor_scan documentation",
    example="""\
- tensor_tensor_scan:
    dst: "c[:, 0:512]"
    data0: "a[:, 0:512]"
    data1: "b[:, 0:512]"
    initial: 0
    op0: multiply
    op1: add
- tensor_tensor_scan:
    dst: "c[:, 512:1024]"
    data0: "a[:, 512:1024]"
    data1: "b[:, 512:1024]"
    initial: "c[:, 511]"
    op0: multiply
    op1: add""",
)
