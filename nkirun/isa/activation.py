"""nki.isa.activation — Scalar engine (the nki.isa.activation documentation).

dst = op(data * scale + bias), computed in float32 and cast to dst; optionally the free-axis
sum of the result is added into the Scalar engine's own per-partition accumulator
(reduce_op=add, reduce_cmd, reduce_res). The page's pseudo-code reduces the row with NumPy and
adds it to the register once: the row sum is np.sum's (pairwise) bits (isa/accumulators.py,
WHOLE_ROW, also for the readings of reduce_cmd and masks).

Numerics: the hardware evaluates these functions with piece-wise polynomial approximations
(§2.3), which nkirun does not model. nkirun evaluates each function exactly (in float64) and
rounds once to float32, so results are close to the hardware's but not bit-identical to it,
and are the same on every CPU. The affine step data*scale + bias is two float32 operations.
"""
from __future__ import annotations

import numpy as np

from nkirun.hw import dtypes as dt
from nkirun.hw.activation_functions import (  # noqa: F401  (ACTIVATIONS, ALIASES re-exported)
    ACTIVATIONS, ALIASES, evaluate, outside_valid_range)
from nkirun.diagnostics import warning
from nkirun.isa import accumulators as accs
from nkirun.isa.common import flat, is_nc_v2, same_shape
from nkirun.isa.spec import (ENUM, OP, REDUCE_CMDS, TILE, TILE_OR_SCALAR, Bound, InstructionDef,
                             NkiApi, Param, common_tail, out_dtype)


# ---- the instruction --------------------------------------------------------------------------
BIAS_DTYPES = frozenset({"float32", "float16", "bfloat16"})  # §1.1 [OLD-ISA]

PARAMS = (
    Param("dst", TILE, required=True, out=True, doc="output tile (same P and elements as data)"),
    Param("op", ENUM, required=True, choices=tuple(ACTIVATIONS) + tuple(ALIASES),
          doc="activation function (exp, tanh, gelu, ...); np./nl. prefixes accepted"),
    Param("data", TILE, required=True, doc="input tile (SBUF or PSUM, any dtype)"),
    Param("bias", TILE_OR_SCALAR, per_partition=True, dtypes=BIAS_DTYPES,
          doc="(P, 1) fp32/fp16/bf16 tile added after scaling; a scalar only from trn2 on"),
    Param("scale", TILE_OR_SCALAR, default=1.0, per_partition=True,
          dtypes=frozenset({"float32"}), doc="scalar or (P, 1) float32 tile multiplying data"),
    Param("reduce_op", OP, choices=("add",), doc="free-axis reduction; only add is supported"),
    Param("reduce_res", TILE, out=True, per_partition=True, dtypes=dt.FLOAT_NAMES,
          doc="(P, 1) tile receiving the Scalar-engine accumulator"),
    Param("reduce_cmd", ENUM, default="idle", choices=REDUCE_CMDS,
          doc="what to do with the Scalar engine's accumulator registers"),
    *common_tail(),
)


def check(b: Bound):
    yield from same_shape(b, "dst", "data")
    if is_nc_v2(b):
        target = b.target.name
        if b.get("bias") is not None and not b.tile("bias"):
            # §1.1: on NC-v2 bias must be a (P,1) tile; a scalar bias is NC-v3+ ([NEW-ISA])
            yield b.err("E200", f"a scalar bias needs NeuronCore-v3 (trn2); on {target} bias "
                        "must be a (P, 1) tile", "bias",
                        hint="put the value in a (P, 1) tile (memset) or use target: trn2")
        if ALIASES.get(b["op"], b["op"]) == "reciprocal" and b.get("bias") is not None:
            # §1.1 / [OLD-SHARED] engine-selection note
            yield b.err("E201", f"activation(reciprocal) does not support bias on {target}",
                        "bias", hint="add the bias first (tensor_scalar), or use target: trn2")


def _per_partition(b: Bound, m, key: str):
    v = b.get(key)
    return m.read_f32(v) if b.tile(key) else np.float32(v)


def warn_outside_valid_range(b: Bound, m, name: str, z: np.ndarray, what: str) -> None:
    """W202 (run time) when an input `z` of function `name` lies outside its valid range
    (masked-off elements excepted); shared with activate2."""
    if ACTIVATIONS[name].valid is None:  # every input is valid: no scan
        return
    bad = outside_valid_range(name, z)
    if b.mask is not None:
        bad &= flat(b.mask)
    if not bad.any():
        return
    p, i = (int(k) for k in np.argwhere(bad)[0])
    lo, hi = ACTIVATIONS[name].valid
    m.warnings.append(warning(
        "W202", f"{b.op}({name}): {int(bad.sum())} input value(s) ({what}) lie outside the "
        f"valid range [{lo:g}, {hi:g}], first {float(z[p, i])!r} at partition {p}, free index "
        f"{i}; hardware results there are invalid (nkirun computes the exact function)",
        b.loc("op"), b.index, hint="the nki.isa.activation documentation lists each function's valid input range"))


def execute(b: Bound, m, reduce_cmd: str | None = None) -> None:
    """reduce_cmd: the command to apply instead of b's own (activation_reduce's
    reset_reduce: that instruction has no reduce_cmd keyword)."""
    name = ALIASES.get(b["op"], b["op"])
    z = flat(m.read_f32(b["data"]))
    if b.tile("scale") is not None or b["scale"] != 1.0:  # x * 1.0 is x, bit for bit
        z = z * _per_partition(b, m, "scale")
    if b.get("bias") is not None:
        z = z + _per_partition(b, m, "bias")
    warn_outside_valid_range(b, m, name, z, "data*scale+bias")
    y = evaluate(name, z)
    if (reduce_cmd or b["reduce_cmd"]) != "idle" or b.tile("reduce_res") is not None:
        # the page: reduce_op(reduce_regs, reduce_op(output, axis=<FreeAxis>)); add only
        accs.read_out(b, m, accs.apply(b, m, "Scalar", "add", y, "data", accs.WHOLE_ROW,
                                       cmd=reduce_cmd))
    m.write(b["dst"], y.reshape(b["dst"].shape), out_dtype(b), b.mask)


def _free_split(b: Bound) -> bool:
    """Elementwise unless it also reduces along the free axis (checker/capacity.py)."""
    return b.tile("reduce_res") is None and b.get("reduce_cmd", "idle") == "idle"


def cycles(b: Bound, target) -> int:
    n = max(target.min_ii, b["data"].free_size)
    # reading the accumulator out is a separate ActReadAccumulator, ~MIN_II cycles ([ARCH2])
    return n + target.min_ii if b.tile("reduce_res") is not None else n


SPEC = InstructionDef(
    name="activation",
    engine="scalar",
    params=PARAMS,
    free_split=_free_split,
    summary="dst = op(data * scale + bias) on the Scalar engine, optional row-sum reduction",
    semantics=(
        "Computes op(data*scale + bias) elementwise in float32 (scale: scalar or (P, 1) "
        "float32 tile; bias: (P, 1) tile, or a scalar from trn2 on) and casts to dst. With "
        "reduce_cmd reduce/reset_reduce the float32 row sums of the result (over all free "
        "axes, np.sum's pairwise bits, as the page's NumPy reduction) are added into the Scalar engine's 128 accumulator registers (reset to 0); "
        "reduce_res receives them. nkirun evaluates each function exactly and rounds to "
        "float32; hardware uses polynomial approximations, so results are close, not "
        "bit-identical, and inputs outside a function's valid range warn (W202)."),
    cost_formula="max(MIN_II, N) Scalar cycles, + MIN_II when reduce_res is given "
                 "(N = elements per partition of data)",
    execute=execute,
    cycles=cycles,
    check=check,
    accumulator="scalar",
    source="the nki.isa.activation documentation, §2.3 (functions), §4 (Scalar accumulator)",
    example="""\
- activation:
    dst: e
    op: exp
    data: scores
    bias: neg_max
    scale: 1.0
    reduce_op: add
    reduce_cmd: reset_reduce
    reduce_res: rowsum""",
    nki=NkiApi("dst op data bias=None scale=1.0 reduce_op=None reduce_res=None reduce_cmd=idle"),
)
