"""The activation functions of the Scalar engine (`op=` of activation and its relatives).

Names and valid input ranges follow the NKI activation-function tables
(https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/nki/api/nki.language.html).
The hardware evaluates them with piece-wise polynomial approximations, which nkirun does not
model: each function is evaluated exactly in float64 and rounded once to float32, so results
are close to the hardware's, not bit-identical, and the same on every CPU. NumPy has no erf,
so it is here (a series and a continued fraction, accurate to ~1e-15).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np


def _erfc_tail(a: np.ndarray) -> np.ndarray:
    """erfc(a) for a >= 2 from its continued fraction
    erfc(a) = e^-a^2/sqrt(pi) / (a + (1/2)/(a + 1/(a + (3/2)/(a + ...)))), 60 terms."""
    t = a.copy()
    for k in range(60, 0, -1):
        t = a + (k / 2.0) / t
    return np.exp(-a * a) / math.sqrt(math.pi) / t


def _erf(x: np.ndarray) -> np.ndarray:
    """erf in float64 (NumPy has none): the Maclaurin series for |x| < 3, where the
    alternating terms lose at most ~3 of 16 digits, and 1 - erfc(|x|) beyond."""
    x = np.asarray(x, np.float64)
    out = np.empty_like(x)
    small = np.abs(x) < 3.0
    xs = x[small]
    term, total, x2 = xs.copy(), xs.copy(), xs * xs
    for n in range(1, 60):  # x^(2n+1) (-1)^n / (n! (2n+1)); 60 terms reach 1e-17 at |x| = 3
        term *= x2
        term *= -1.0 / n
        total += term / (2 * n + 1)
        if n % 8 == 0 and not (np.abs(term) > 1e-17).any():
            break
    out[small] = total * (2.0 / math.sqrt(math.pi))
    big = ~small  # also NaN (compares False above): erfc_tail(NaN) is NaN
    xb = x[big]
    out[big] = np.sign(xb) * (1.0 - _erfc_tail(np.abs(xb)))
    return out


def _erfc(x: np.ndarray) -> np.ndarray:
    """erfc without the cancellation of 1 - erf(x) for large x (gelu's far negative side)."""
    x = np.asarray(x, np.float64)
    tail = x >= 2.0  # the continued fraction is accurate to 1e-15 from 2 on
    out = np.array(1.0 - _erf(np.where(tail, 0.0, x)))
    out[tail] = _erfc_tail(x[tail])
    return out


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _softplus(x):
    return np.logaddexp(0.0, x)


_SQRT2, _SQRT_2_PI = math.sqrt(2.0), math.sqrt(2.0 / math.pi)


@dataclass(frozen=True, slots=True)
class Act:
    fn: Callable  # float64 -> float64, rounded to float32 by the caller
    valid: tuple[float, float] | None = None  # input range outside which hardware is invalid
    on_abs: bool = False  # the valid range applies to |x| (reciprocal: ±[2^-42, 2^42])


# Names and valid input ranges ([OLD-SHARED]/[NEW-SHARED] activation tables).
ACTIVATIONS: dict[str, Act] = {
    "copy": Act(lambda x: x),
    "square": Act(lambda x: x * x),
    "exp": Act(np.exp),
    "log": Act(np.log, (2.0**-64, 2.0**64)),
    "tanh": Act(np.tanh),
    "sigmoid": Act(_sigmoid),
    "relu": Act(lambda x: np.maximum(x, 0.0)),
    "gelu": Act(lambda x: 0.5 * x * _erfc(-x / _SQRT2)),
    "gelu_dx": Act(lambda x: 0.5 * _erfc(-x / _SQRT2)
                   + x * np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)),
    "gelu_apprx_tanh": Act(lambda x: 0.5 * x * (1.0 + np.tanh(_SQRT_2_PI
                                                               * (x + 0.044715 * x**3)))),
    "gelu_apprx_sigmoid": Act(lambda x: x * _sigmoid(1.702 * x)),
    # (NKI 0.4+ table): d/dx of x * sigmoid(1.702 x)
    "gelu_apprx_sigmoid_dx": Act(lambda x: _sigmoid(1.702 * x)
                                 * (1.0 + 1.702 * x * (1.0 - _sigmoid(1.702 * x)))),
    "silu": Act(lambda x: x * _sigmoid(x)),
    "silu_dx": Act(lambda x: _sigmoid(x) * (1.0 + x * (1.0 - _sigmoid(x)))),
    "softplus": Act(_softplus),
    "mish": Act(lambda x: x * np.tanh(_softplus(x))),
    "erf": Act(_erf),
    "erf_dx": Act(lambda x: 2.0 / math.sqrt(math.pi) * np.exp(-x * x)),
    "sign": Act(np.sign),
    "abs": Act(np.abs),
    "sqrt": Act(np.sqrt, (2.0**-116, 2.0**118)),
    "rsqrt": Act(lambda x: 1.0 / np.sqrt(x), (2.0**-87, 2.0**97)),
    "reciprocal": Act(lambda x: 1.0 / x, (2.0**-42, 2.0**42), on_abs=True),
    "sin": Act(np.sin, (-math.pi, math.pi)),
    "arctan": Act(np.arctan, (-math.pi / 2, math.pi / 2)),
}
ALIASES = {"identity": "copy", "bypass": "copy", "absolute": "abs"}


def evaluate(name: str, z: np.ndarray) -> np.ndarray:
    """The activation `name` of float32 input z, as float32."""
    name = ALIASES.get(name, name)
    if name == "copy":
        return z  # bit-exact
    return ACTIVATIONS[name].fn(z.astype(np.float64)).astype(np.float32)


def outside_valid_range(name: str, z: np.ndarray) -> np.ndarray:
    """Boolean mask of finite-or-infinite inputs outside the function's valid range."""
    act = ACTIVATIONS[ALIASES.get(name, name)]
    if act.valid is None:
        return np.zeros(z.shape, bool)
    v = np.abs(z) if act.on_abs else z
    lo, hi = act.valid
    return (v < lo) | (v > hi)  # NaN compares False: not flagged
