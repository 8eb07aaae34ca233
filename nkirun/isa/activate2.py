"""nki.isa.activate2 — Scalar engine, NeuronCore-v4 (trn3) only.

dst = op((data op0 imm0) op1 imm1, relu_param), with one of six (op0, op1) pairs (bypass =
no operation), then an optional reduction with reduce_op (add, max, min, abs_max, abs_min)
into the Scalar engine's accumulator registers shared with activation and
activation_reduce.

Readings:
* Stage 1 is two float32 operations (imm0/imm1: scalars or (P, 1) tiles); stage 2 is
  activation's function table, exact and rounded once to float32 (activation's numerics
  and W202 valid-range warning); prelu(x) = x for x >= 0, relu_param * x below (one
  float32 multiply); relu_param is not used by the other functions.
* reduce_cmd: reset sets the registers to reduce_op's identity (add 0, max -inf, min +inf,
  abs_max 0, abs_min +inf; 0 without reduce_op), reset_reduce resets then folds, reduce
  folds onto the registers, idle leaves them alone. The fold follows the page's loop,
  `accumulator = reduce_op(accumulator, dst[i])` in element order, over the float32 results
  before the cast to dst (isa/accumulators.py); abs_max(a, b) = max(|a|, |b|).
* reduce_res with idle receives this instruction's own reduction (as activation's).
* cost: the page gives none; activation's is assumed: max(MIN_II, N), + MIN_II to read the
  registers out into reduce_res.
"""
from __future__ import annotations

import numpy as np

from nkirun.hw import alu as ops
from nkirun.hw import dtypes as dt
from nkirun.isa import accumulators as accs
from nkirun.isa import activation
from nkirun.isa.activation import ACTIVATIONS, ALIASES, evaluate, warn_outside_valid_range
from nkirun.isa.common import flat, needs_nc_v4, same_shape, scratch_of
from nkirun.isa.spec import (BOOL, ENUM, OP, TILE, TILE_OR_SCALAR, Bound, InstructionDef, NkiApi,
                             Param)

URL = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.isa.activate2.html"
PAIRS = (("multiply", "add"), ("multiply", "subtract"), ("multiply", "bypass"),
         ("add", "bypass"), ("subtract", "bypass"), ("bypass", "bypass"))
REDUCE_OPS = ("add", "maximum", "minimum", "abs_max", "abs_min")

PARAMS = (
    Param("dst", TILE, required=True, out=True, doc="output tile, SBUF or PSUM"),
    Param("op", ENUM, required=True, choices=tuple(ACTIVATIONS) + ("prelu",) + tuple(ALIASES),
          doc="activation function (activation's table, plus prelu)"),
    Param("data", TILE, required=True, doc="input tile, SBUF or PSUM"),
    Param("imm0", TILE_OR_SCALAR, required=True, per_partition=True,
          doc="scalar or (P, 1) tile for op0"),
    Param("imm1", TILE_OR_SCALAR, required=True, per_partition=True,
          doc="scalar or (P, 1) tile for op1"),
    Param("op0", OP, required=True, choices=("multiply", "add", "subtract", "bypass"),
          doc="first operator: multiply, add, subtract or bypass"),
    Param("op1", OP, required=True, choices=("add", "subtract", "bypass"),
          doc="second operator: add, subtract or bypass"),
    Param("relu_param", TILE_OR_SCALAR, default=0.0, per_partition=True,
          doc="parameter of a parameterised function (prelu's negative slope)"),
    Param("reverse0", BOOL, default=False, doc="imm0 op0 data instead of data op0 imm0"),
    Param("reverse1", BOOL, default=False, doc="imm1 op1 value instead of value op1 imm1"),
    Param("reduce_op", OP, choices=REDUCE_OPS,
          doc="free-axis reduction: add, max, min, abs_max or abs_min"),
    Param("reduce_res", TILE, out=True, per_partition=True, dtypes=dt.FLOAT_NAMES,
          doc="(P, 1) tile receiving the registers"),
    Param("reduce_cmd", ENUM, default="idle", choices=("idle", "reset", "reduce", "reset_reduce"),
          doc="what to do with the Scalar engine's accumulator registers"),
)


def check(b: Bound):
    yield from needs_nc_v4(b, "E310")
    yield from same_shape(b, "dst", "data")
    op0, op1 = b["op0"], b["op1"]
    if (op0, op1) not in PAIRS:
        yield b.err("E311", f"(op0, op1) = ({op0}, {op1}) is not one of the six pairs the "
                    "engine runs", "op1", hint="allowed: " + ", ".join(
                        f"({a}, {c})" for a, c in PAIRS))
    t0, t1 = b.tile("imm0"), b.tile("imm1")
    if t0 is not None and t1 is not None and t0.dtype.name != t1.dtype.name:
        yield b.err("E312", f"imm0 is {t0.dtype.name} and imm1 is {t1.dtype.name}; tile "
                    "immediates must share their dtype", "imm1")
    for flag, op in (("reverse0", op0), ("reverse1", op1)):
        if b[flag] and op == "bypass":
            yield b.err("E313", f"{flag} needs its operator set (it is bypass)", flag,
                        hint=f"drop {flag}, or set the operator")
    if b.get("reduce_op") is None and (b["reduce_cmd"] in ("reduce", "reset_reduce")
                                       or b.tile("reduce_res") is not None):
        yield b.err("E314", "a reduction (reduce_cmd reduce/reset_reduce or reduce_res) needs "
                    "reduce_op", "reduce_cmd", hint="add reduce_op: add (or max, min, abs_max, "
                                                    "abs_min)")


def _step(b: Bound, m, op: str, key: str, reverse: str, x: np.ndarray, out) -> np.ndarray:
    """x op imm (imm op x with reverse), into `out` if given (a scratch array of x's shape)."""
    if op == "bypass":
        return x
    v = accs.per_partition_f32(b, m, key, x.shape[0])
    fn = ops.OPS[op].fn  # multiply, add, subtract: NumPy ufuncs
    return fn(v, x, out=out) if b[reverse] else fn(x, v, out=out)


def _activate(b: Bound, m, z: np.ndarray) -> np.ndarray:
    name = ALIASES.get(b["op"], b["op"])
    if name == "prelu":
        alpha = accs.per_partition_f32(b, m, "relu_param", z.shape[0])
        return np.where(z >= 0, z, alpha * z).astype(np.float32)
    warn_outside_valid_range(b, m, name, z, "(data op0 imm0) op1 imm1")
    return evaluate(name, z)


def execute(b: Bound, m) -> None:
    x = flat(m.read_f32(b["data"]))
    scratch = scratch_of(m, b["data"], x)  # a widened copy of data may be overwritten
    with np.errstate(all="ignore"):
        z = _step(b, m, b["op0"], "imm0", "reverse0", x, scratch)
        z = _step(b, m, b["op1"], "imm1", "reverse1", z, scratch if z is x else z)
        y = _activate(b, m, np.asarray(z, np.float32))
        # the page's loop: accumulator = reduce_op(accumulator, dst[i])
        value = accs.apply(b, m, "Scalar", b.get("reduce_op") or "add", y, "data", accs.STREAMED)
    m.write(b["dst"], y.reshape(b["dst"].shape))
    accs.read_out(b, m, value)


SPEC = InstructionDef(
    name="activate2",
    engine="scalar",
    params=PARAMS,
    summary="op((data op0 imm0) op1 imm1) on the Scalar engine, reduce with add/max/min (trn3)",
    semantics=(
        "Stage 1: (data op0 imm0) op1 imm1 in float32 (imm0/imm1 scalars or (P, 1) tiles; "
        "reverse0/reverse1 put the immediate first), one of the pairs (multiply, add), "
        "(multiply, subtract), (multiply, bypass), (add, bypass), (subtract, bypass), "
        "(bypass, bypass). Stage 2: the activation function op (prelu uses relu_param). "
        "Stage 3: with reduce_cmd the float32 results are folded with reduce_op (add, max, "
        "min, abs_max, abs_min) into the Scalar engine's registers shared with activation; "
        "reset sets them to reduce_op's identity; reduce_res reads them out. "
        "NeuronCore-v4 (trn3) only."),
    cost_formula="max(MIN_II, N) Scalar cycles, + MIN_II with reduce_res (N = elements per "
                 "partition of data; assumed, as activation)",
    execute=execute,
    cycles=activation.cycles,  # assumed: activation's (+ MIN_II for the reduce_res read-out)
    check=check,
    cost_assumed=True,
    cost_note="the page gives no formula; activation's is used",
    accumulator="scalar",
    source=URL,
    example="""\
- activate2:
    dst: y
    op: gelu
    data: x
    imm0: 2.0
    imm1: 0.5
    op0: multiply
    op1: add
    reduce_op: maximum
    reduce_cmd: reset_reduce
    reduce_res: row_max""",
    nki=NkiApi("dst op data imm0 imm1 op0 op1 relu_param=0.0 reverse0=False reverse1=False "
               "reduce_op=None reduce_res=None reduce_cmd=idle"),
)
