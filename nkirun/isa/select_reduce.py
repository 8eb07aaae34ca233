"""nki.isa.select_reduce — Vector engine (the nki.isa.select_reduce documentation).

dst = where(predicate != 0, on_true, on_false) (predicate negated with reverse_pred), with an
optional max-reduction into the Vector-engine accumulator shared with range_select.

Readings of the page:
* reverse_pred: the page writes `~predicate`; on an integer tile a bitwise NOT would leave
  both 0 and 1 "true", so it is read as a logical NOT (nonzero = True), which is what the
  page's Example 3 describes ("select on_true where predicate is FALSE").
* on_false: "dtype must be float32 if on_false is a scalar" constrains scalars only; a (P, 1)
  tile of any dtype is accepted and read as float32, like every Vector-engine input.
* cost: the page gives none (the nki.isa.select_reduce documentation); max(MIN_II, N) is assumed, as for
  range_select, its accumulator sibling.
"""
from __future__ import annotations

import numpy as np

from nkirun.hw import dtypes as dt
from nkirun.isa import accumulators as accs
from nkirun.isa.common import flat, float32_scalar, same_shape
from nkirun.isa.spec import (BOOL, ENUM, OP, REDUCE_CMDS, TILE, TILE_OR_SCALAR, Bound,
                             InstructionDef, NkiApi, Param, common_tail, out_dtype)

PREDICATE_DTYPES = frozenset({"int8", "uint8", "int16", "uint16"})  # page 001
ON_TRUE_DTYPES = frozenset(dt.DTYPES) - {"tfloat32", "int32", "uint32"}  # page 001

PARAMS = (
    Param("dst", TILE, required=True, out=True,
          doc="output tile in SBUF or PSUM (same shape as on_true)"),
    Param("predicate", TILE, required=True, dtypes=PREDICATE_DTYPES,
          doc="int8/uint8/int16/uint16 tile; nonzero selects on_true"),
    Param("on_true", TILE, required=True, dtypes=ON_TRUE_DTYPES,
          doc="tile to select from where the predicate holds (not tfloat32/int32/uint32)"),
    Param("on_false", TILE_OR_SCALAR, required=True, per_partition=True,
          doc="float32 scalar, or a (P, 1) tile, used where the predicate does not hold"),
    Param("reduce_res", TILE, out=True, per_partition=True, dtypes=dt.FLOAT_NAMES,
          doc="(P, 1) float tile receiving the accumulated max"),
    Param("reduce_cmd", ENUM, default="idle", choices=REDUCE_CMDS,
          doc="what to do with the shared Vector-engine accumulator"),
    Param("reduce_op", OP, default="maximum", choices=("maximum",),
          doc="reduction operator; only max is supported"),
    Param("reverse_pred", BOOL, default=False,
          doc="select on_true where the predicate is zero instead"),
    *common_tail(),
)


def check(b: Bound):
    yield from same_shape(b, "dst", "on_true")
    yield from same_shape(b, "predicate", "on_true")
    on_true, pred = b.tile("on_true"), b.tile("predicate")
    if on_true is not None and pred is not None \
            and on_true.buffer == "psum" and pred.buffer == "psum":
        yield b.err("E110", "on_true and predicate are both in PSUM; at most one of them may be",
                    "predicate", hint="copy one of them to SBUF first")
    yield from float32_scalar(b, "on_false", "E111")  # "must be float32 if ... a scalar"


def execute(b: Bound, m) -> None:
    x = flat(m.read_f32(b["on_true"]))
    keep = flat(m.read(b["predicate"])) != 0
    if b["reverse_pred"]:
        keep = ~keep
    f = b["on_false"]
    fill = np.float32(f) if isinstance(f, float) else m.read_f32(f).reshape(-1, 1)
    out = m.write_select(b["dst"], keep, x, fill, out_dtype(b), b.mask)
    # np.max of the row, combined with the register: order-free
    accs.read_out(b, m, accs.apply(b, m, "Vector", "maximum", out, "on_true", accs.WHOLE_ROW))


def cycles(b: Bound, target) -> int:
    return max(target.min_ii, b["on_true"].free_size)


SPEC = InstructionDef(
    name="select_reduce",
    engine="vector",
    params=PARAMS,
    summary="select on_true where a predicate tile is nonzero, else on_false; optional max",
    semantics=(
        "Where predicate is nonzero (zero, with reverse_pred) the element of on_true is kept, "
        "elsewhere on_false (a float32 scalar or one value per partition) is written. With "
        "reduce_cmd the per-partition max of the selected float32 values (before the output "
        "cast) is folded into the Vector-engine accumulator shared with range_select; "
        "reduce_res receives it."),
    cost_formula="max(MIN_II, N) Vector cycles, N = elements per partition of on_true",
    execute=execute,
    cycles=cycles,
    check=check,
    accumulator="vector",
    cost_assumed=True,
    cost_note="the page documents no cost; assumed equal to range_select's max(MIN_II, N)",
    source="the nki.isa.select_reduce documentation",
    example="""\
- select_reduce:
    dst: r
    predicate: keep
    on_true: t
    on_false: fp32.min
    reduce_cmd: reset_reduce
    reduce_res: m
    reduce_op: max""",
    nki=NkiApi("dst predicate on_true on_false reduce_res=None reduce_cmd=idle "
               "reduce_op=maximum reverse_pred=False"),
)
