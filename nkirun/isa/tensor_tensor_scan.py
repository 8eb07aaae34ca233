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
from nkirun.isa.mask import active_rows
from nkirun.isa.common import flat, float32_scalar, same_shape
from nkirun.isa.fast.scan import scan
from nkirun.isa.spec import (BOOL, OP, TILE, TILE_OR_SCALAR, Bound, InstructionDef, NkiApi, Param,
                             common_tail, out_dtype)

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


def definition(d0, d1, init, op0: str, op1: str, reverse0: bool, reverse1: bool,
               valid=None) -> np.ndarray:
    """The page's loop, the definition `fast.scan.scan` must equal: (P, F) float32 operands
    and (P,) initial -> (P, F) float32; an unselected element passes the running value on."""
    f0, f1 = ops.OPS[op0].fn, ops.OPS[op1].fn
    out = np.empty(d0.shape, np.float32)
    for p in range(d0.shape[0]):
        prev = np.float32(init[p])
        for i in range(d0.shape[1]):
            if valid is None or valid[p, i]:
                t = f0(prev, d0[p, i]) if reverse0 else f0(d0[p, i], prev)
                prev = f1(d1[p, i], t) if reverse1 else f1(t, d1[p, i])
            out[p, i] = prev
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
    nki=NkiApi("dst data0 data1 initial op0 op1 reverse0=False reverse1=False"),
)
