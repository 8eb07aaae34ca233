"""nki.isa.tensor_scalar — Vector, Scalar or GpSimd (the nki.isa.tensor_scalar documentation).

dst = (data op0 operand0) op1 operand1, each operand a compile-time scalar or a (P, 1)
tile broadcast along the free axis; reverse0/reverse1 swap an operator's operands.
Arithmetic runs in float32 (the intermediate too); bitwise operators need integer dtypes
and act on the integer bits.
"""
from __future__ import annotations

from functools import partial

import numpy as np

from nkirun.hw import alu as ops
from nkirun.isa.common import activation_pass, flat, is_nc_v2, same_shape
from nkirun.isa.spec import (BOOL, ENUM, OP, TILE, TILE_OR_SCALAR, Bound, InstructionDef, NkiApi,
                             Param, common_tail, out_dtype, elementwise)

# §1.3 [OLD-ISA][NEW-ISA]: the only (op0, op1) pairs the Scalar engine runs (trn2 on)
SCALAR_ENGINE_PAIRS = (("multiply", "add"), ("multiply", None), ("add", None))

PARAMS = (
    Param("dst", TILE, required=True, out=True, doc="output tile (same shape as data)"),
    Param("data", TILE, required=True, doc="input tile"),
    Param("op0", OP, required=True, doc="first operator (ops table)"),
    Param("operand0", TILE_OR_SCALAR, required=True, per_partition=True,
          doc="scalar or (P, 1) tile (float32 for arithmetic ops); 0 for a unary op0 (abs, "
              "rsqrt, ...)"),
    Param("reverse0", BOOL, default=False, doc="compute operand0 op0 data instead"),
    Param("op1", OP, doc="optional second operator, of the same class as op0"),
    Param("operand1", TILE_OR_SCALAR, per_partition=True,
          doc="scalar or (P, 1) tile for op1 (float32 for arithmetic ops)"),
    Param("reverse1", BOOL, default=False, doc="compute operand1 op1 tmp instead"),
    Param("engine", ENUM, default="unknown", choices=("unknown", "vector", "scalar", "gpsimd"),
          doc="vector (default); scalar for multiply/add on trn2; gpsimd for rsqrt"),
    *common_tail(),
)


def _ops(b: Bound):
    return [(b["op0"], "operand0", "reverse0")] + (
        [(b["op1"], "operand1", "reverse1")] if b.get("op1") else [])


def engine_of(b: Bound) -> str:
    if b.get("engine") in ("vector", "scalar", "gpsimd"):
        return b["engine"]
    # rsqrt is a GpSimd/Scalar ALU op, not a Vector one (§2.2), and the Scalar engine runs
    # only multiply/add here, so tensor_scalar(rsqrt) goes to GpSimd (§1.3 engine param)
    return "gpsimd" if b["op0"] == "rsqrt" else "vector"


def _is_bitwise(op) -> bool:
    return ops.OPS[op].kind == ops.BITWISE


def check(b: Bound):
    yield from same_shape(b, "dst", "data")
    op0, op1 = b["op0"], b.get("op1")
    if (op1 is None) != (b.get("operand1") is None):
        key = "op1" if op1 is not None else "operand1"
        yield b.err("E221", "op1 and operand1 go together: give both or neither", key)
    if op1 is not None and _is_bitwise(op0) != _is_bitwise(op1):
        yield b.err("E220", f"op0 ({op0}) and op1 ({op1}) must be of the same class (both "
                    "bitwise or both arithmetic)", "op1", hint="split it into two tensor_scalar")
    for op, key, _ in _ops(b):
        if op in ops.UNARY and (b.tile(key) is not None or b.get(key) not in (0, 0.0, None)):
            yield b.err("E222", f"{op} is unary: {key} must be 0 (got {b.inst.args.get(key)})",
                        key, hint=f"write {key}: 0")
    yield from _engine_rules(b, op0, op1)
    if _is_bitwise(op0):
        yield from _bitwise_rules(b)
    else:
        yield from _fp32_operands(b)
    for op, key, _ in _ops(b):
        if op == "divide":
            yield b.warn("W228", "divide is not a hardware ALU instruction at the NKI level "
                         "(the nki.isa.tensor_scalar documentation); nkirun computes an exact float32 division",
                         "op0" if key == "operand0" else "op1",
                         hint="multiply by a reciprocal (activation or tensor_scalar "
                              "reciprocal) as a kernel on hardware would")


def _fp32_operands(b: Bound):
    """§1.3 [NEW-ISA]: with arithmetic operators the operand tiles must be float32.

    Reading: a bfloat16/float16 column is a warning (W600), computed as the float32 it
    widens to exactly: nki-library's bwmm_shard_on_block passes bfloat16 expert-affinity
    columns in configurations its own tests run. Other dtypes stay E227."""
    for _, key, _ in _ops(b):
        t = b.tile(key)
        if t is not None and t.dtype.name in ("bfloat16", "float16"):
            yield b.warn("W600", f"{key} is {t.dtype.name}; the nki.isa.tensor_scalar "
                         "documentation asks for float32 operand tiles (nkirun reads it as "
                         "the float32 it widens to)", key,
                         hint=f"copy {key} to a float32 (P, 1) tile first (tensor_copy)")
        elif t is not None and t.dtype.name != "float32":
            yield b.err("E227", f"{key} is {t.dtype.name}; arithmetic tensor_scalar needs "
                        "float32 operand tiles (the new API)", key,
                        hint=f"copy {key} to a float32 (P, 1) tile first (tensor_copy), or "
                             "pass a number")


def _engine_rules(b: Bound, op0, op1):
    target = b.target.name
    if b.engine == "scalar":
        if is_nc_v2(b):
            yield b.err("E223", f"tensor_scalar does not run on the Scalar engine on {target} "
                        "(add/multiply on Scalar need NeuronCore-v3)", "engine",
                        hint="use engine: vector, or target: trn2")
        elif (op0, op1) not in SCALAR_ENGINE_PAIRS:
            yield b.err("E223", f"the Scalar engine runs only (multiply, add), (multiply) and "
                        f"(add); got ({op0}{', ' + op1 if op1 else ''})", "engine",
                        hint="use engine: vector (the nki.isa.tensor_scalar documentation)")
    elif b.engine == "gpsimd" and (op0 != "rsqrt" or op1 is not None):
        yield b.err("E224", "tensor_scalar runs on GpSimd only for a single rsqrt", "engine",
                    hint="use engine: vector (the nki.isa.tensor_scalar documentation)")
    elif b.engine == "vector" and "rsqrt" in (op0, op1):
        yield b.err("E225", "rsqrt is not a Vector-engine operator (GpSimd or Scalar only)",
                    "op0" if op0 == "rsqrt" else "op1",
                    hint="use engine: gpsimd, or activation(op: rsqrt) on the Scalar engine")


def _bitwise_rules(b: Bound):
    """§1.3: bitwise ops run on Vector with integer dtypes, no casting."""
    for key in ("data", "dst"):
        if b[key].dtype.is_float:
            yield b.err("E226", f"bitwise operators need integer dtypes; `{key}` is "
                        f"{b[key].dtype.name}", key)
    for _, key, _ in _ops(b):
        t, v = b.tile(key), b.get(key)
        if t is not None and t.dtype.is_float:
            yield b.err("E226", f"bitwise operators need an integer {key}; it is "
                        f"{t.dtype.name}", key)
        elif t is None and b["data"].dtype.is_int:
            info = np.iinfo(b["data"].dtype.np_type)
            if not (float(v).is_integer() and info.min <= v <= info.max):
                yield b.err("E226", f"{key} {v!r} must be an integer that fits "
                            f"{b['data'].dtype.name} for a bitwise operator", key,
                            hint=f"allowed: integers in {info.min}..{info.max}")


def _operand(b: Bound, m, key: str, like: np.ndarray, bitwise: bool):
    t = b.tile(key)
    if t is not None:
        return m.read(t) if bitwise else m.read_f32(t)
    return np.asarray(int(b[key]), like.dtype) if bitwise else np.float32(b[key])


def execute(b: Bound, m) -> None:
    bitwise = _is_bitwise(b["op0"])
    x = flat(m.read(b["data"]))
    if not bitwise:
        x = x.astype(np.float32, copy=False)
    for op, key, rev in _ops(b):
        fn = ops.OPS[op].fn
        if op in ops.UNARY:
            x = fn(x)
            continue
        v = _operand(b, m, key, x, bitwise)
        x = fn(v, x) if b[rev] else fn(x, v)
    m.write(b["dst"], x.reshape(b["dst"].shape), out_dtype(b), b.mask)


def cycles(b: Bound, target) -> int:
    return max(target.min_ii, b["data"].free_size)  # one op costs the same as two [OLD-ISA]


SPEC = InstructionDef(
    name="tensor_scalar",
    engine="vector",
    params=PARAMS, free_split=elementwise,
    summary="(data op0 operand0) op1 operand1, operands scalars or (P, 1) tiles",
    semantics=(
        "Applies op0 with operand0 (a scalar or a (P, 1) tile broadcast along the free axis) "
        "to every element, then optionally op1 with operand1; reverse0/reverse1 put the "
        "operand first. Arithmetic runs in float32 (also between the two ops) and is cast to "
        "dst; bitwise operators need integer dtypes and use the integer bits. op0 and op1 "
        "must be of the same class; with arithmetic ops an operand tile must be float32 (the "
        "new API). divide is accepted (exact float32) with a warning: it is no hardware "
        "instruction at the NKI level. Engines: Vector by default; Scalar (trn2) only for "
        "(multiply, add), (multiply), (add); GpSimd only for rsqrt."),
    cost_formula="max(MIN_II, N) engine cycles (N = elements per partition of data)",
    execute=execute,
    cycles=cycles,
    activation_form=partial(activation_pass, src="data", ops=("op0", "op1")),
    check=check,
    engine_of=engine_of,
    source="the nki.isa.tensor_scalar documentation, §2.2 (operators)",
    example="""\
- tensor_scalar:
    dst: y
    data: x
    op0: multiply
    operand0: scale_col
    op1: add
    operand1: 2.5""",
    nki=NkiApi("dst data op0 operand0 reverse0=False op1=None operand1=None reverse1=False "
               "engine=unknown"),
)
