"""nki.isa.tensor_scalar_cumulative — Vector engine.

Per partition, along the free axes in element order: reg = op1(op0(src[i], imm0), reg) and
dst[i] = reg, where reg is the Vector-engine accumulator register shared with range_select,
select_reduce, exponential and tensor_scalar_reduce. reduce_cmd=reset_reduce (default)
starts reg at op1's identity (0 for add/subtract, 1 for multiply, -inf for max, +inf for
min), load_reduce at imm1, reduce at the register's current value (chaining).

Readings:
* The page's pseudo-code is taken literally: op1's first operand is the new value and its
  second the register, so subtract gives reg = value - reg (an alternating sum), not
  reg - value.
* The register is float32; dst receives each register value cast to its dtype.
* The scan is computed with NumPy's accumulate along the free axis (vectorised over
  partitions and elements). For subtract, reg_i = v_i - reg_(i-1) is the running sum of
  (-1)^i v_i with every odd term's sign flipped back, which is exact in round-to-nearest
  except that an exactly-zero odd-position result may come out as -0.0 instead of +0.0;
  maximum/minimum's accumulate puts the register first, which decides a +0.0/-0.0 tie
  differently. The rows where either can happen are redone by the page's loop
  (`plain_scan`), so every bit, the sign of zero included, is the loop's.
* imm1 given with reduce_cmd reduce or reset_reduce is not used (the SDK's own example
  chains a reduce call that still passes imm1).
* cost: the page gives none; max(MIN_II, N) Vector cycles is assumed (one input stream).
"""
from __future__ import annotations

import numpy as np

from nkirun.hw import alu as ops
from nkirun.isa import accumulators as accs
from nkirun.isa.common import (flat, same_shape, scratch_of, unary_operand_zero,
                               vector_arith_ops)
from nkirun.isa.spec import ENUM, OP, TILE, TILE_OR_SCALAR, Bound, InstructionDef, NkiApi, Param

URL = ("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/"
       "nki.isa.tensor_scalar_cumulative.html")
F32 = frozenset({"float32"})
# "BF16, FP16, FP32, FP8, UINT8, UINT16, INT8, INT16"; INT32/UINT32 are an ISA limitation
# (FP8: float8_e4m3fn too, on trn3, the only target that has it)
DTYPES = frozenset({"bfloat16", "float16", "float32", "float8_e4m3", "float8_e4m3fn",
                    "float8_e5m2", "uint8", "uint16", "int8", "int16"})
OP0_CHOICES = vector_arith_ops()
SCANS = {"add": np.add, "multiply": np.multiply, "maximum": np.maximum, "minimum": np.minimum}

PARAMS = (
    Param("dst", TILE, required=True, out=True, dtypes=DTYPES,
          doc="output tile: every register value (not int32/uint32)"),
    Param("src", TILE, required=True, dtypes=DTYPES, doc="input tile (not int32/uint32)"),
    Param("op0", OP, required=True, choices=OP0_CHOICES,
          doc="arithmetic operator applied with imm0"),
    Param("op1", OP, required=True, choices=("add", "subtract", "multiply", "maximum", "minimum"),
          doc="cumulative operator: add, subtract, multiply, max or min"),
    Param("imm0", TILE_OR_SCALAR, required=True, per_partition=True, dtypes=F32,
          doc="float32 scalar or (P, 1) float32 tile for op0"),
    Param("imm1", TILE_OR_SCALAR, per_partition=True, dtypes=F32,
          doc="float32 scalar or (P, 1) tile: the register's start under load_reduce"),
    Param("reduce_cmd", ENUM, default="reset_reduce",
          choices=("reset_reduce", "reduce", "load_reduce"),
          doc="reset_reduce (default), reduce (continue the register) or load_reduce (imm1)"),
)


def check(b: Bound):
    yield from same_shape(b, "dst", "src")
    if b["reduce_cmd"] == "load_reduce" and b.args.get("imm1") is None:
        yield b.err("E340", "reduce_cmd=load_reduce needs imm1 (the register's start value)",
                    "reduce_cmd", hint="add imm1: a number or a (P, 1) float32 tile")
    yield from unary_operand_zero(b, "op0", "imm0", "E341")


def plain_scan(op1: str, start: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The page's loop, one column at a time for every row: reg = op1(v_i, reg); v_i = reg
    (in place in v). The definition `scan` is tested equal to."""
    fn, reg = ops.OPS[op1].fn, start
    for i in range(v.shape[1]):
        reg = v[:, i:i + 1] = fn(v[:, i:i + 1], reg)
    return v


def scan(op1: str, start: np.ndarray, v: np.ndarray) -> np.ndarray:
    """reg_i = op1(v_i, reg_(i-1)) from reg_(-1) = start, over the rows of v (P, N), in
    place in v (which the caller owns): NumPy's accumulate, with the rows where it can
    differ from the loop in a zero's sign redone by plain_scan (rare)."""
    if op1 == "subtract":  # exact but for the sign of an odd-position zero (docstring)
        orig = v.copy()
        v[:, 1::2] *= np.float32(-1)
        v[:, :1] -= start
        np.add.accumulate(v, axis=1, out=v)
        v[:, 1::2] *= np.float32(-1)
        redo = (v[:, 1::2] == 0).any(axis=1)
    else:
        redo = _zero_ties(op1, start, v)
        orig = v[redo] if redo.any() else None
        ufunc = SCANS[op1]
        v[:, :1] = ufunc(v[:, :1], start)
        ufunc.accumulate(v, axis=1, out=v)
    if redo.any():
        v[redo] = plain_scan(op1, start[redo], orig[redo] if op1 == "subtract" else orig)
    return v


def _zero_ties(op1: str, start: np.ndarray, v: np.ndarray) -> np.ndarray:
    """(P,) bool: rows where max/min meet +0.0 and -0.0, a tie whose winner depends on the
    operand order (the loop keeps the register; accumulate takes the new value)."""
    if op1 not in ("maximum", "minimum"):
        return np.zeros(v.shape[0], bool)
    x = np.concatenate([start, v], axis=1)
    zero, neg = x == 0, np.signbit(x)
    return (zero & neg).any(axis=1) & (zero & ~neg).any(axis=1)


def execute(b: Bound, m) -> None:
    src = b["src"]
    x = flat(m.read_f32(src))
    fn = ops.OPS[b["op0"]].fn
    with np.errstate(all="ignore"):
        # op0 returns a new array (never its input: bypass is not offered), which the scan
        # may overwrite; a widened copy of src may take it in place
        if b["op0"] in ops.UNARY:
            v = np.asarray(fn(x), np.float32)
        else:
            imm0 = accs.per_partition_f32(b, m, "imm0", src.partitions)
            out = scratch_of(m, src, x) if isinstance(fn, np.ufunc) else None
            v = np.asarray(fn(x, imm0, out=out), np.float32) if out is not None else \
                np.asarray(fn(x, imm0), np.float32)
        acc = m.vector_acc
        lanes = acc.lanes(src)
        start = accs.start_value(b, m, acc, "Vector", b["op1"], lanes, src.partitions, "imm1")
        reg = scan(b["op1"], start, v)
    accs.settle(acc, lanes, reg[:, -1:])
    m.write(b["dst"], reg.reshape(b["dst"].shape))


def cycles(b: Bound, target) -> int:
    return max(target.min_ii, b["src"].free_size)


SPEC = InstructionDef(
    name="tensor_scalar_cumulative",
    engine="vector",
    params=PARAMS,
    summary="running op1 of (src op0 imm0) along the free axes, through the Vector accumulator",
    semantics=(
        "For every partition, in element order: reg = op1(src[i] op0 imm0, reg) and dst[i] "
        "= reg (float32 register, cast to dst). reg starts at op1's identity (reset_reduce, "
        "the default), at imm1 (load_reduce) or where the shared Vector-engine accumulator "
        "left it (reduce); it ends holding the last value, for a following instruction. "
        "subtract is taken as the page writes it: reg = value - reg. int32/uint32 tiles are "
        "not supported (ISA limitation)."),
    cost_formula="max(MIN_II, N) Vector cycles (N = elements per partition of src; assumed)",
    execute=execute,
    cycles=cycles,
    check=check,
    cost_assumed=True,
    cost_note="the page gives no formula: one input stream, as tensor_scalar",
    accumulator="vector",
    source=URL,
    example="""\
- tensor_scalar_cumulative:
    dst: running
    src: x
    op0: multiply
    imm0: 1.0
    op1: add
    reduce_cmd: reset_reduce""",
    nki=NkiApi("dst src op0 op1 imm0 imm1=None reduce_cmd=reset_reduce"),
)
