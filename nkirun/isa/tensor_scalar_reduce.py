"""nki.isa.tensor_scalar_reduce — Vector engine.

dst = data op0 operand0 (one tensor_scalar operator, operand0 a scalar or (P, 1) tile), and
the result reduced along all free axes with reduce_op (add, multiply, max, min) through the
Vector-engine accumulator shared with range_select, select_reduce, exponential and
tensor_scalar_cumulative; reduce_res (optional since NKI 0.6) receives the register.

Readings:
* reduce_cmd: reset_reduce (default) resets the register to reduce_op's identity (0, 1,
  -inf, +inf), load_reduce loads reduce_init, reduce continues. The page writes the
  reduction as NumPy's `reduce_op(dst, axis=<FreeAxis>)`: each row is reduced as NumPy does
  (add: pairwise, bit-equal to np.sum of the row) and then combined once with the register
  (isa/accumulators.py, WHOLE_ROW), over the float32 results before the cast to dst.
* reduce_res_negate negates what is written to reduce_res, not the register (the page).
* reverse0 is "not supported yet" on hardware: reverse0: true is refused (E332).
* operand0 "must be None or 0" for a unary op0: omitting it (or null) is accepted then;
  a binary op0 without it is E333.
* legacy dtype= casts dst's values before the store; the reduction is unaffected.
"""
from __future__ import annotations

import numpy as np

from nkirun.hw import alu as ops
from nkirun.hw import dtypes as dt
from nkirun.isa import accumulators as accs
from nkirun.isa.common import (flat, same_shape, scratch_of, unary_operand_zero,
                               vector_arith_ops)
from nkirun.isa.spec import (BOOL, DTYPE, ENUM, OP, TILE, TILE_OR_SCALAR, Bound, InstructionDef,
                             NkiApi, Param, out_dtype)

URL = ("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/"
       "nki.isa.tensor_scalar_reduce.html")
F32 = frozenset({"float32"})
OP0_CHOICES = vector_arith_ops()
REDUCE_OPS = ("add", "multiply", "maximum", "minimum")

PARAMS = (
    Param("dst", TILE, required=True, out=True, doc="output tile of data op0 operand0"),
    Param("data", TILE, required=True, doc="input tile, SBUF or PSUM"),
    Param("op0", OP, required=True, choices=OP0_CHOICES, doc="arithmetic operator"),
    Param("operand0", TILE_OR_SCALAR, per_partition=True, dtypes=F32,
          doc="scalar or (P, 1) float32 tile; 0 or null for a unary op0 (abs, reciprocal, ...)"),
    Param("reduce_op", OP, required=True, choices=REDUCE_OPS,
          doc="free-axis reduction: add, multiply, max or min"),
    Param("reduce_res", TILE, out=True, per_partition=True, dtypes=dt.FLOAT_NAMES,
          doc="(P, 1) tile receiving the register (omit it to keep chaining)"),
    Param("reverse0", BOOL, default=False, doc="operand0 op0 data; not supported by hardware"),
    Param("reduce_cmd", ENUM, default="reset_reduce",
          choices=("reset_reduce", "reduce", "load_reduce"),
          doc="reset_reduce (default), reduce (continue) or load_reduce (from reduce_init)"),
    Param("reduce_init", TILE_OR_SCALAR, per_partition=True, dtypes=F32,
          doc="float32 scalar or (P, 1) tile loaded by load_reduce"),
    Param("reduce_res_negate", BOOL, default=False,
          doc="write -register to reduce_res (the register keeps its sign)"),
    Param("dtype", DTYPE, doc="legacy: cast dst's values to this dtype before the store"),
)


def check(b: Bound):
    yield from same_shape(b, "dst", "data")
    yield from unary_operand_zero(b, "op0", "operand0", "E330")
    if b["op0"] not in ops.UNARY and b.args.get("operand0") is None:
        yield b.err("E333", f"{b['op0']} needs operand0 (a number or a (P, 1) float32 tile)",
                    "op0", hint="add operand0")
    if b["reverse0"]:
        yield b.err("E332", "reverse0 is \"not supported yet\" (the NKI 0.6 page)",
                    "reverse0",
                    hint="use tensor_scalar with reverse0, then tensor_reduce")
    has_init = b.args.get("reduce_init") is not None
    if b["reduce_cmd"] == "load_reduce" and not has_init:
        yield b.err("E331", "reduce_cmd=load_reduce needs reduce_init (the value to load)",
                    "reduce_cmd", hint="add reduce_init: a number or a (P, 1) float32 tile")
    elif b["reduce_cmd"] != "load_reduce" and has_init:
        yield b.err("E331", f"reduce_init is only used by reduce_cmd=load_reduce (reduce_cmd "
                    f"is {b['reduce_cmd']})", "reduce_init",
                    hint="write reduce_cmd: load_reduce, or drop reduce_init")


def execute(b: Bound, m) -> None:
    data = b["data"]
    x = flat(m.read_f32(data))
    fn = ops.OPS[b["op0"]].fn
    with np.errstate(all="ignore"):
        if b["op0"] in ops.UNARY:
            y = fn(x)
        else:
            v = accs.per_partition_f32(b, m, "operand0", data.partitions)
            out = scratch_of(m, data, x) if isinstance(fn, np.ufunc) else None
            y = fn(x, v, out=out) if out is not None else fn(x, v)
        y = np.asarray(y, np.float32)
        # the page: reduce_res = reduce_op(dst, axis=<FreeAxis>), a NumPy reduction
        value = accs.apply(b, m, "Vector", b["reduce_op"], y, "data", accs.WHOLE_ROW,
                           "reduce_init")
    m.write(b["dst"], y.reshape(b["dst"].shape), out_dtype(b))
    accs.read_out(b, m, value, negate=b["reduce_res_negate"])


def cycles(b: Bound, target) -> int:
    return max(target.min_ii, b["data"].free_size) + target.min_ii  # [OLD-ISA]


SPEC = InstructionDef(
    name="tensor_scalar_reduce",
    engine="vector",
    params=PARAMS,
    summary="dst = data op0 operand0, reduced along the free axes into the Vector accumulator",
    semantics=(
        "Applies op0 with operand0 (a scalar or (P, 1) float32 tile) to every element in "
        "float32 and casts the result to dst; each row of the float32 results is also "
        "reduced with reduce_op (add, multiply, max, min) as NumPy's reduce_op(dst, axis) "
        "does (np.sum's pairwise bits) and combined once with the Vector-engine "
        "accumulator shared with range_select, select_reduce, exponential and "
        "tensor_scalar_cumulative: reset_reduce (default) starts from reduce_op's identity, "
        "load_reduce from reduce_init, reduce from the register. reduce_res receives the "
        "register (negated with reduce_res_negate); leave it out to keep chaining."),
    cost_formula="max(MIN_II, N) + MIN_II Vector cycles (N = elements per partition of data)",
    execute=execute,
    cycles=cycles,
    check=check,
    accumulator="vector",
    source=f"{URL}; cost: NKI 2.26 (legacy) docstring",
    example="""\
- tensor_scalar_reduce:
    dst: y
    data: x
    op0: multiply
    operand0: 0.5
    reduce_op: add
    reduce_res: rowsum""",
    nki=NkiApi("dst data op0 operand0 reduce_op reduce_res=None reverse0=False "
               "reduce_cmd=reset_reduce reduce_init=None reduce_res_negate=False"),
)
