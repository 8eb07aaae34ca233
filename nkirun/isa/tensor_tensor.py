"""nki.isa.tensor_tensor — Vector engine, or GpSimd (the nki.isa.tensor_tensor documentation).

dst = op(data1, data2) elementwise over two tiles of the same shape (no broadcasting).
Arithmetic and comparison operators compute in float32 (comparisons give 1.0 / 0.0);
bitwise operators need integer dtypes and act on the integer bits, with no float cast.
"""
from __future__ import annotations

from functools import partial

import numpy as np

from nkirun.hw import alu as ops
from nkirun.isa.common import flat, same_shape, widened_ufunc_plan
from nkirun.isa.spec import (ENUM, OP, TILE, Bound, InstructionDef, NkiApi, Param, common_tail,
                             out_dtype, elementwise)

BINARY_OPS = tuple(n for n in ops.OPS if n not in ops.UNARY)
INT32 = ("int32", "uint32")
FAST_BF16_OPS = ("add", "multiply", "subtract")

PARAMS = (
    Param("dst", TILE, required=True, out=True, doc="output tile (same shape as the inputs)"),
    Param("data1", TILE, required=True, doc="first input tile"),
    Param("data2", TILE, required=True, doc="second input tile (same shape as data1)"),
    Param("op", OP, required=True, choices=BINARY_OPS, doc="binary operator (ops table)"),
    Param("engine", ENUM, default="unknown", choices=("unknown", "vector", "gpsimd"),
          doc="vector (default) or gpsimd; power and int32 add/subtract/multiply pick gpsimd"),
    *common_tail(),
)


def _int32_arith(b: Bound) -> bool:
    return b["op"] in FAST_BF16_OPS and all(b[k].dtype.name in INT32 for k in ("data1", "data2"))


def engine_of(b: Bound) -> str:
    """§1.2: power, and int32 add/multiply/subtract run on GpSimd; a PSUM operand keeps
    integer arithmetic on Vector ([NEW-ISA]); otherwise Vector unless engine= says so."""
    if b.get("engine") in ("vector", "gpsimd"):
        return b["engine"]
    if b["op"] == "power":
        return "gpsimd"
    if _int32_arith(b) and not any(b[k].buffer == "psum" for k in ("data1", "data2", "dst")):
        return "gpsimd"
    return "vector"


def check(b: Bound):
    yield from same_shape(b, "data1", "data2")
    yield from same_shape(b, "dst", "data1")
    if b["data1"].buffer == "psum" and b["data2"].buffer == "psum":
        yield b.err("E210", "data1 and data2 are both in PSUM; at most one input may be",
                    "data2", hint="copy one of them to SBUF first (the nki.isa.tensor_tensor documentation)")
    if b["op"] == "power" and b.engine != "gpsimd":
        yield b.err("E211", "power runs only on the GpSimd engine", "engine",
                    hint="drop `engine: vector` (the nki.isa.tensor_tensor documentation)")
    if ops.OPS[b["op"]].kind == ops.BITWISE:
        for key in ("data1", "data2", "dst"):
            if b[key].dtype.is_float:
                yield b.err("E212", f"bitwise operator {b['op']} needs integer dtypes; `{key}` "
                            f"is {b[key].dtype.name}", key,
                            hint="bitwise operators act on integer bits (the nki.isa.tensor_tensor documentation)")
    if b["op"] == "divide":
        yield b.warn("W213", "divide is not a hardware ALU instruction at the NKI level "
                     "(the nki.isa.tensor_tensor documentation); nkirun computes an exact float32 division", "op",
                     hint="multiply by a reciprocal (activation or tensor_scalar reciprocal) as "
                          "a kernel on hardware would")


def compute(op: str, engine: str, a: np.ndarray, c: np.ndarray, exact_ints: bool):
    """op(a, c) with the arithmetic the engine uses (a and c in their storage dtypes)."""
    o = ops.OPS[op]
    if o.kind == ops.BITWISE:
        return o.fn(a, c)  # raw integer bits, NumPy's integer promotion
    if exact_ints and engine == "gpsimd" and op in FAST_BF16_OPS:
        # GpSimd computes 32-bit integer add/subtract/multiply natively (§1.2, §8); nkirun
        # takes the exact result and lets the store saturate it to dst's dtype.
        return o.fn(a.astype(np.int64), c.astype(np.int64))
    return o.fn(a.astype(np.float32, copy=False), c.astype(np.float32, copy=False))


def definition(b: Bound, m) -> None:
    """The plain path: compute, then store through m.write (casts, mask)."""
    a, c = flat(m.read(b["data1"])), flat(m.read(b["data2"]))
    y = compute(b["op"], b.engine, a, c, _int32_arith(b))
    m.write(b["dst"], y.reshape(b["dst"].shape), out_dtype(b), b.mask)


_F32 = np.dtype(np.float32)
_INTO = {n: ops.OPS[n].fn for n in ("add", "subtract", "multiply", "maximum", "minimum")}


def execute(b: Bound, m) -> None:
    """definition(b, m); float32 add/subtract/multiply/max/min without a mask are computed
    straight into dst (the same ufunc on the same float32 values: the same bits, without
    the temporary and its copy; NumPy gives ufuncs whose output overlaps an input the
    result of non-overlapping operands). tests/isa/test_fast_definitions.py checks it."""
    args = b.args
    ufunc = _INTO.get(args["op"]) if b.mask is None else None
    dst = args["dst"]
    if ufunc is None or dst.ap is not None or dst.dtype.name != "float32" or \
            args["dtype"] not in (None, dst.dtype):
        return definition(b, m)
    a, c = flat(m.read(args["data1"])), flat(m.read(args["data2"]))
    out = m.direct_view(dst, a.shape) if a.dtype is _F32 and c.dtype is _F32 else None
    if out is None:
        y = compute(args["op"], b.engine, a, c, _int32_arith(b))
        m.write(dst, y.reshape(dst.shape), out_dtype(b), None)
        return
    ufunc(a, c, out=out)
    m.mark_written(dst)


def plan(b: Bound):
    """execute's form for runner/plan.py: add/subtract/multiply/max/min of float operands
    into a float dst (not tfloat32), no mask, no other dtype=. All float32: the ufunc on
    views fixed when the plan is built, straight into dst. Otherwise the operands are
    widened to float32 (exact), the ufunc computes in float32 and the result is cast into
    dst as Machine.write casts (NumPy's round to nearest even): definition's values."""
    args = b.args
    ufunc = _INTO.get(args["op"])
    dst, d1, d2 = args["dst"], args["data1"], args["data2"]
    if ufunc is None or b.mask is not None or args["dtype"] not in (None, dst.dtype) or \
            dst.dtype.name == "tfloat32" or \
            not dst.dtype.is_float == d1.dtype.is_float == d2.dtype.is_float is True:
        return None
    if dst.dtype.name == d1.dtype.name == d2.dtype.name == "float32":
        def build(view):
            a, out = view(d1, _flat_shape(d1)), view(dst, _flat_shape(d1))
            c = view(d2, _flat_shape(d2))
            return None if a is None or c is None or out is None else \
                partial(ufunc, a, c, out=out)
        return build

    return widened_ufunc_plan(ufunc, dst, d1, d2, _flat_shape(d1))


def _flat_shape(r) -> tuple:
    return (r.shape[0], r.size // r.shape[0])


def contiguous(r) -> bool:
    """Whether the view's innermost free dimension has stride 1 in its tensor's storage."""
    if r.ap is not None:  # an access pattern: its innermost stepping free dim
        steps = [s for s, n in zip(r.ap.byte_strides[1:], r.ap.shape[1:]) if n > 1]
        return not steps or steps[-1] == r.ap.dtype.itemsize
    free = [i for i, ix in enumerate(r.np_index) if isinstance(ix, slice)][1:]
    if not free:
        return True
    k = free[-1]
    return r.box[k][2] == 1 and all(d == 1 for d in r.decl.shape[k + 1:])


def cycles(b: Bound, target) -> int:
    """[OLD-ISA] via the nki.isa.tensor_tensor documentation"""
    n = b["data1"].free_size
    in_psum = sum(b[k].buffer == "psum" for k in ("data1", "data2"))
    tiles = [b[k] for k in ("data1", "data2", "dst")]
    fast = (in_psum == 0 and b["op"] in FAST_BF16_OPS
            and all(t.dtype.name == "bfloat16" and contiguous(t) for t in tiles)
            and (b.get("dtype") is None or b["dtype"].name == "bfloat16"))
    return max(target.min_ii, n if in_psum == 1 or fast else 2 * n)


SPEC = InstructionDef(
    name="tensor_tensor",
    engine="vector",
    params=PARAMS,
    free_split=elementwise,
    summary="elementwise op of two tiles of the same shape",
    semantics=(
        "dst = op(data1, data2) element by element; data1, data2 and dst have the same "
        "partitions and elements per partition (no broadcasting: use tensor_scalar). "
        "Arithmetic and comparisons run in float32 (comparisons give 1.0/0.0) and are cast to "
        "dst; bitwise operators need integer dtypes and use the integer bits. At most one "
        "input may be in PSUM. power, and int32/uint32 add/subtract/multiply (exact integer "
        "math, saturated to dst), run on GpSimd. divide is accepted (exact float32) with a "
        "warning: it is no hardware instruction at the NKI level."),
    cost_formula="max(MIN_II, N) with one input in PSUM, or all-bf16 contiguous "
                 "add/subtract/multiply in SBUF; otherwise max(MIN_II, 2N) (N = elements per "
                 "partition)",
    execute=execute,
    plan=plan,
    cycles=cycles,
    check=check,
    engine_of=engine_of,
    source="the nki.isa.tensor_tensor documentation, §2.2 (operators)",
    example="- tensor_tensor: {dst: c, data1: a, data2: b, op: multiply}",
    # pre-0.2 `tensor_tensor(x, col, op)` without dst=: a (P, 1) col read along x's free dims
    nki=NkiApi("dst data1 data2 op engine=unknown", legacy=("column_broadcast",)),
)
