"""nki.isa.range_select — Vector engine (the nki.isa.range_select documentation).

out[p, i] = on_true_tile[p, i] if comp_op0(range_start + i, bound0[p]) and
comp_op1(range_start + i, bound1[p]) else on_false_value; optional max-reduction into the
shared Vector-engine accumulator.
"""
from __future__ import annotations

import numpy as np

from nkirun.hw import dtypes as dt
from nkirun.hw.alu import FP32_MIN
from nkirun.isa import accumulators as accs
from nkirun.isa.common import COMPARE_UFUNCS, flat, same_shape
from nkirun.isa.spec import (ENUM, INT, OP, REDUCE_CMDS, SCALAR, TILE, Bound, InstructionDef,
                             NkiApi, Param, common_tail, out_dtype)

COMPARE_OPS = ("equal", "less", "less_equal", "greater", "greater_equal")
INDEX_LIMIT = 2**24  # the index comparison is done in fp32

PARAMS = (
    Param("dst", TILE, required=True, out=True, doc="output tile (same shape as on_true_tile)"),
    Param("on_true_tile", TILE, required=True, dtypes=dt.FLOAT_NAMES,
          doc="input tile to select from (a float dtype)"),
    Param("comp_op0", OP, required=True, choices=COMPARE_OPS, doc="first comparison operator"),
    Param("comp_op1", OP, required=True, choices=COMPARE_OPS, doc="second comparison operator"),
    Param("bound0", TILE, required=True, dtypes=frozenset({"float32"}), per_partition=True,
          doc="float32 (P, 1) bound for comp_op0"),
    Param("bound1", TILE, required=True, dtypes=frozenset({"float32"}), per_partition=True,
          doc="float32 (P, 1) bound for comp_op1"),
    Param("reduce_cmd", ENUM, default="idle", choices=REDUCE_CMDS,
          doc="what to do with the shared Vector-engine accumulator"),
    Param("reduce_res", TILE, out=True, per_partition=True, dtypes=dt.FLOAT_NAMES,
          doc="(P, 1) tile receiving the accumulated max"),
    Param("reduce_op", OP, default="maximum", choices=("maximum",),
          doc="reduction operator; only max is supported"),
    Param("range_start", INT, default=0, doc="offset added to the free index before comparing"),
    Param("on_false_value", SCALAR, default=FP32_MIN,
          doc="fill for unselected elements; the hardware requires FP32_MIN"),
    *common_tail(),
)


def is_fp32_min(v: float) -> bool:
    """Whether v is FP32_MIN as a float32 bit pattern (the page's wording), so the number
    -3.4028235e38 that the pages print counts as well as fp32.min."""
    with np.errstate(over="ignore"):  # -1e39 becomes -inf: not FP32_MIN
        return np.float32(v) == np.float32(FP32_MIN)


def check(b: Bound):
    yield from same_shape(b, "dst", "on_true_tile")
    if not is_fp32_min(b["on_false_value"]):
        yield b.err("E101", f"on_false_value must be FP32_MIN (got {b['on_false_value']!r})",
                    "on_false_value", hint="write on_false_value: fp32.min (a hardware constraint)")
    src = b.tile("on_true_tile")
    if src is not None:
        start, n = b["range_start"], src.free_size
        if not (-INDEX_LIMIT < start and start + n < INDEX_LIMIT):
            yield b.err("E102", f"range_start + free size = {start + n} must stay within 2^24 "
                        "(the index is compared in fp32)", "range_start",
                        hint=f"allowed: {-INDEX_LIMIT} < range_start and "
                             f"range_start + {n} < {INDEX_LIMIT}")
    res, dst = b.tile("reduce_res"), b.tile("dst")
    out = b.get("dtype") or (dst.dtype if dst else None)
    if res is not None and out is not None and res.dtype.name != "float32" \
            and out.name in ("bfloat16", "float16", "float8_e4m3", "float8_e4m3fn", "float8_e5m2"):
        yield b.warn("W103", f"reduce_res is {res.dtype.name} while the output is {out.name}: "
                     "fully unselected rows become -inf (NaN in float8_e4m3fn), and a later "
                     "`x - max` gives NaN",
                     "reduce_res", hint="declare reduce_res as float32 (the page's numerical "
                                         "stability note)")


def execute(b: Bound, m) -> None:
    src = b["on_true_tile"]
    x = flat(m.read_f32(src))
    n = x.shape[1]
    start = b["range_start"]
    idx = np.arange(start, start + n, dtype=np.float32)[None, :]
    lo, hi = m.read_f32(b["bound0"]), m.read_f32(b["bound1"])
    keep = COMPARE_UFUNCS[b["comp_op0"]](idx, lo)
    keep &= COMPARE_UFUNCS[b["comp_op1"]](idx, hi)
    # keep is one index range per partition: `regular` (machine.select_into)
    out = m.write_select(b["dst"], keep, x, np.float32(b["on_false_value"]), out_dtype(b), b.mask,
                         regular=True)
    # np.max of the row, combined with the register: order-free
    accs.read_out(b, m, accs.apply(b, m, "Vector", "maximum", out, "on_true_tile", accs.WHOLE_ROW))


def cycles(b: Bound, target) -> int:
    return max(target.min_ii, b["on_true_tile"].free_size)


SPEC = InstructionDef(
    name="range_select",
    engine="vector",
    params=PARAMS,
    summary="select elements whose free index lies in a per-partition range; optional max",
    semantics=(
        "For each element, compares its free index + range_start (in fp32) with bound0 using "
        "comp_op0 and with bound1 using comp_op1; where both hold the element of on_true_tile "
        "is kept, elsewhere on_false_value (FP32_MIN) is written. With reduce_cmd the "
        "per-partition max of the selected float32 values (before the output cast) is folded "
        "into the Vector-engine accumulator shared with select_reduce; reduce_res receives it."),
    cost_formula="max(MIN_II, N) Vector cycles, N = elements per partition of on_true_tile",
    execute=execute,
    cycles=cycles,
    check=check,
    accumulator="vector",
    source="the nki.isa.range_select documentation",
    example="""\
- range_select:
    dst: r
    on_true_tile: t
    comp_op0: greater_equal
    comp_op1: less
    bound0: lo
    bound1: hi
    reduce_cmd: reset_reduce
    reduce_res: m
    reduce_op: max
    range_start: 0
    on_false_value: fp32.min""",
    nki=NkiApi("dst on_true_tile comp_op0 comp_op1 bound0 bound1 reduce_cmd=reset_reduce "
               "reduce_res=None reduce_op=maximum range_start=0 on_false_value=..."),
)
