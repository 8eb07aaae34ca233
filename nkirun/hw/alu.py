"""ALU operators by name, and the special scalar spellings.

One table for every `op`/`op0`/`op1`/`comp_op*`/`reduce_op` argument: users write NumPy
names, optionally prefixed `np.`/`nl.`; each entry knows its class (arithmetic,
comparison, bitwise, logical), whether it may reduce, and how to compute it on float32.
"""
from __future__ import annotations

import math
import sys
from typing import Callable

import numpy as np

from nkirun.records import record

ARITH, COMPARE, BITWISE, LOGICAL = "arithmetic", "comparison", "bitwise", "logical"


@record(frozen=True, slots=True)
class AluOp:
    """An ALU operator (add, max, bitwise_and, ...): its kind and NumPy function."""
    name: str
    kind: str
    fn: Callable  # binary (a, b) -> array, computed on float32 (bitwise: on integers)
    reducible: bool = False
    reduce_fn: Callable | None = None  # ndarray.reduce-like: f(x, axis) -> array
    identity: float | None = None  # accumulator reset value


def _cmp(f):
    # Vector-engine comparisons produce 1.0 / 0.0 in float32
    return lambda a, b: f(a, b).astype(np.float32)


def _logical(f):
    return lambda a, b: f(a != 0, b != 0).astype(np.float32)


def _divide(a, b):
    return np.divide(a, b, dtype=np.float32)


def _mod(a, b):
    # nki.language.mod: "the same sign as the divisor", like numpy.mod (x - floor(x/y)*y,
    # computed exactly); a zero divisor or an infinite dividend gives NaN
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.mod(np.asarray(a, np.float32), np.asarray(b, np.float32))


def _fmod(a, b):
    # nki.language.fmod: "the same sign as the dividend", like numpy.fmod (C's fmod)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.fmod(np.asarray(a, np.float32), np.asarray(b, np.float32))


def _rsqrt(a, b=None):
    return (np.float32(1) / np.sqrt(a)).astype(np.float32)


def _abs(a, b=None):
    return np.abs(a)


def _reciprocal(a, b=None):
    return np.divide(np.float32(1), a, dtype=np.float32)


def _logical_right_shift(a, b):
    # the NKI ALU operator table: right_shift is a *logical* shift (zero fill); an arithmetic
    # right shift is not supported, so signed values shift as their unsigned bit pattern.
    a = np.asarray(a)
    if a.dtype.kind != "i":
        return np.right_shift(a, b)
    u = a.view(a.dtype.str.replace("i", "u"))
    return np.right_shift(u, np.asarray(b).astype(u.dtype)).view(a.dtype)


OPS: dict[str, AluOp] = {o.name: o for o in [
    AluOp("add", ARITH, np.add, True, np.add.reduce, 0.0),
    AluOp("subtract", ARITH, np.subtract, True, None, 0.0),
    AluOp("multiply", ARITH, np.multiply, True, np.multiply.reduce, 1.0),
    AluOp("divide", ARITH, _divide),
    AluOp("maximum", ARITH, np.maximum, True, np.maximum.reduce, -np.inf),
    AluOp("minimum", ARITH, np.minimum, True, np.minimum.reduce, np.inf),
    AluOp("power", ARITH, np.power),
    AluOp("mod", ARITH, _mod),
    AluOp("fmod", ARITH, _fmod),
    AluOp("abs", ARITH, _abs),
    AluOp("rsqrt", ARITH, _rsqrt),
    AluOp("reciprocal", ARITH, _reciprocal),
    AluOp("equal", COMPARE, _cmp(np.equal)),
    AluOp("not_equal", COMPARE, _cmp(np.not_equal)),
    AluOp("less", COMPARE, _cmp(np.less)),
    AluOp("less_equal", COMPARE, _cmp(np.less_equal)),
    AluOp("greater", COMPARE, _cmp(np.greater)),
    AluOp("greater_equal", COMPARE, _cmp(np.greater_equal)),
    AluOp("bitwise_and", BITWISE, np.bitwise_and, True, np.bitwise_and.reduce),
    AluOp("bitwise_or", BITWISE, np.bitwise_or, True, np.bitwise_or.reduce),
    AluOp("bitwise_xor", BITWISE, np.bitwise_xor, True, np.bitwise_xor.reduce),
    AluOp("left_shift", BITWISE, np.left_shift),
    AluOp("right_shift", BITWISE, _logical_right_shift),
    AluOp("invert", BITWISE, lambda a, b=None: np.invert(a)),
    AluOp("logical_and", LOGICAL, _logical(np.logical_and), True),
    AluOp("logical_or", LOGICAL, _logical(np.logical_or), True),
    AluOp("logical_xor", LOGICAL, _logical(np.logical_xor), True),
    AluOp("logical_not", LOGICAL, lambda a, b=None: (a == 0).astype(np.float32)),
    # NKI 0.4+ (trn3, nl.abs_max / nl.abs_min): the signed input of larger (smaller)
    # magnitude, b on a tie; reduce ops of activate2's Scalar accumulator only (the operator
    # table marks them "not a legal reduction op" for the Vector engine)
    AluOp("abs_max", ARITH, lambda a, b: np.where(np.abs(a) > np.abs(b), a, b),
          identity=0.0),
    AluOp("abs_min", ARITH, lambda a, b: np.where(np.abs(a) < np.abs(b), a, b),
          identity=np.inf),
    # nl.bypass: "no operation" (activate2's op0/op1); the first operand passes through
    AluOp("bypass", ARITH, lambda a, b=None: a),
    # average: tensor_partition_reduce's reduction (sum / count); as a binary op, (a + b) / 2
    AluOp("average", ARITH, lambda a, b: (np.add(a, b, dtype=np.float32) * np.float32(0.5)),
          identity=0.0),
]}

# Operators NKI documents (nki.language.mod / fmod) but whose release notes say are no
# hardware instruction: "these APIs work in simulation but fail when compiled for
# Trainium" (W602 where a program uses one).
NOT_ON_HARDWARE = frozenset({"mod", "fmod"})

# Spellings from the seeds and NumPy that name the same operator.
ALIASES = {
    "max": "maximum", "amax": "maximum", "min": "minimum", "amin": "minimum",
    "sum": "add", "mult": "multiply", "mul": "multiply", "sub": "subtract",
    "true_divide": "divide", "remainder": "mod", "bitwise_not": "invert", "pow": "power",
    "is_equal": "equal", "is_gt": "greater", "is_ge": "greater_equal",
    "is_lt": "less", "is_le": "less_equal",
}

COMPARISONS = tuple(n for n, o in OPS.items() if o.kind == COMPARE)
ARITHMETIC = tuple(n for n, o in OPS.items() if o.kind == ARITH)
# Operators that take one operand (tensor_scalar: their operand must be 0, the nki.isa.tensor_scalar documentation)
UNARY = ("abs", "rsqrt", "reciprocal", "invert", "logical_not")
PREFIXES = ("numpy.", "np.", "nl.", "nki.language.", "neuronxcc.nki.language.")


def strip_prefix(name: str) -> str:
    for p in PREFIXES:
        if name.startswith(p):
            return name[len(p):]
    return name


def normalize_op(name: str) -> str | None:
    """The canonical operator name for a user spelling, or None if unknown."""
    if not isinstance(name, str):
        return None
    key = strip_prefix(name.strip())
    key = ALIASES.get(key, key)
    return key if key in OPS else None


# ---- scalars -----------------------------------------------------------------------------
FP32_MIN = float(np.finfo(np.float32).min)
FP32_MAX = float(np.finfo(np.float32).max)
SPECIAL_SCALARS = {
    "inf": float("inf"), "+inf": float("inf"), "-inf": float("-inf"), "nan": float("nan"),
    "fp32.min": FP32_MIN, "fp32.max": FP32_MAX,
    "nl.fp32.min": FP32_MIN, "nl.fp32.max": FP32_MAX,
    "float32.min": FP32_MIN, "float32.max": FP32_MAX,
    "float('-inf')": float("-inf"), "float('inf')": float("inf"),
}


_MAX_FLOAT = sys.float_info.max


def parse_scalar(value) -> float | int | None:
    """A YAML number or special string as a Python number; None if it is not a scalar."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and abs(value) > _MAX_FLOAT:
        return math.inf if value > 0 else -math.inf  # beyond float range, as YAML `1e999`
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str):
        key = value.strip().lower().replace(" ", "")
        if key in SPECIAL_SCALARS:
            return SPECIAL_SCALARS[key]
        try:
            return float(key) if any(c in key for c in ".e") else parse_scalar(int(key, 0))
        except ValueError:
            return None
    return None
