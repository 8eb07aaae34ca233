"""nki.isa.scalar_tensor_tensor — Vector engine.

dst = (data op0 operand0) op1 operand1: operand0 a scalar or a (P, 1) tile broadcast along
the free axes, operand1 a tile of data's shape; reverse0/reverse1 put the operand first.
Every input is cast to float32, both operators run in float32 (the intermediate too) and
the result is cast to dst's dtype once.

Readings:
* "Both op0 and op1 must be arithmetic operators ... Bitvec operators are not supported":
  comparisons and logical operators are arithmetic in the NKI operator table, so they are
  accepted (1.0 / 0.0 results); rsqrt, power and divide are not Vector-engine ALU
  operations (the NKI ALU operator table) and are refused by the operator check.
* A unary op0 (abs, reciprocal) ignores operand0, which must then be 0 (as tensor_scalar).
* cost: the legacy table, N or 2N with no MIN_II floor; the fast case needs data and
  operand1 in bfloat16, op0 = subtract, op1 = multiply and N even.
"""
from __future__ import annotations

import numpy as np

from nkirun.hw import alu as ops
from nkirun.isa.common import (flat, same_shape, scratch_of, unary_operand_zero,
                               vector_arith_ops)
from nkirun.isa.spec import (BOOL, OP, TILE, TILE_OR_SCALAR, Bound, InstructionDef, NkiApi, Param,
                             common_tail, out_dtype, elementwise)

URL = ("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/"
       "nki.isa.scalar_tensor_tensor.html")
ARITH_CHOICES = vector_arith_ops()
OP1_CHOICES = tuple(n for n in ARITH_CHOICES if n not in ops.UNARY)

PARAMS = (
    Param("dst", TILE, required=True, out=True, doc="output tile (data's partitions and size)"),
    Param("data", TILE, required=True, doc="input tile, SBUF or PSUM"),
    Param("op0", OP, required=True, choices=ARITH_CHOICES,
          doc="first arithmetic operator, with operand0"),
    Param("operand0", TILE_OR_SCALAR, required=True, per_partition=True,
          doc="scalar or (P, 1) tile broadcast along the free axes"),
    Param("op1", OP, required=True, choices=OP1_CHOICES,
          doc="second arithmetic operator, elementwise with operand1"),
    Param("operand1", TILE, required=True, doc="tile of data's partitions and size"),
    Param("reverse0", BOOL, default=False, doc="compute operand0 op0 data instead"),
    Param("reverse1", BOOL, default=False, doc="compute operand1 op1 (data op0 operand0)"),
    *common_tail(),
)


def check(b: Bound):
    yield from same_shape(b, "dst", "data")
    yield from same_shape(b, "operand1", "data")
    data, other = b.tile("data"), b.tile("operand1")
    if data is not None and other is not None and data.buffer == other.buffer == "psum":
        yield b.err("E320", "data and operand1 are both in PSUM; at most one of them may be",
                    "operand1", hint="copy one of them to SBUF first")
    yield from unary_operand_zero(b, "op0", "operand0", "E321")


def _apply(fn, a, c, out):
    """fn(a, c), into `out` when fn is a NumPy ufunc (saves a temporary of the tile's size)."""
    return fn(a, c, out=out) if out is not None and isinstance(fn, np.ufunc) else fn(a, c)


def execute(b: Bound, m) -> None:
    data = b["data"]
    x = flat(m.read_f32(data))
    scratch = scratch_of(m, data, x)  # a widened copy can take the intermediate in place
    fn0, fn1 = ops.OPS[b["op0"]].fn, ops.OPS[b["op1"]].fn
    with np.errstate(all="ignore"):
        if b["op0"] in ops.UNARY:
            t = fn0(x)
        else:
            t0 = b.tile("operand0")
            v = m.read_f32(t0).reshape(-1, 1) if t0 is not None else np.float32(b["operand0"])
            t = _apply(fn0, v, x, scratch) if b["reverse0"] else _apply(fn0, x, v, scratch)
        w = flat(m.read_f32(b["operand1"]))
        # t is always a new array here (op0 never returns its input), so op1 may overwrite it
        y = _apply(fn1, w, t, t) if b["reverse1"] else _apply(fn1, t, w, t)
    m.write(b["dst"], np.asarray(y, np.float32).reshape(b["dst"].shape), out_dtype(b), b.mask)


def cycles(b: Bound, target) -> int:
    n = b["data"].free_size
    fast = (b["data"].dtype.name == b["operand1"].dtype.name == "bfloat16"
            and b["op0"] == "subtract" and b["op1"] == "multiply" and n % 2 == 0)
    return n if fast else 2 * n


SPEC = InstructionDef(
    name="scalar_tensor_tensor",
    engine="vector",
    params=PARAMS,
    free_split=elementwise,
    summary="dst = (data op0 operand0) op1 operand1: a tensor_scalar step then a tensor_tensor",
    semantics=(
        "Applies op0 with operand0 (a scalar or a (P, 1) tile broadcast along the free axes) "
        "to every element of data, then op1 elementwise with the tile operand1 (data's "
        "shape); reverse0/reverse1 put the operand on the left. All math is float32, the "
        "intermediate included, and the result is cast to dst. Arithmetic operators only "
        "(comparisons give 1.0/0.0); data and operand1 may not both be in PSUM."),
    cost_formula="N Vector cycles when data and operand1 are bfloat16, op0 = subtract, op1 = "
                 "multiply and N is even; otherwise 2*N (N = elements per partition of data)",
    execute=execute,
    cycles=cycles,
    check=check,
    source=f"{URL}; cost: NKI 2.26 (legacy) docstring",
    example="""\
- scalar_tensor_tensor:
    dst: y
    data: x
    op0: subtract
    operand0: row_mean
    op1: multiply
    operand1: gamma""",
    nki=NkiApi("dst data op0 operand0 op1 operand1 reverse0=False reverse1=False"),
)
