"""nki.isa.reciprocal — Vector engine.

dst = 1.0 / data, elementwise: the input is cast to float32, the reciprocal is computed in
float32 and cast to dst's dtype.

Readings:
* "computes the reciprocal in float32 math" with "higher precision" than the Scalar engine's
  polynomial (NKI engine-selection note): nkirun takes the correctly rounded IEEE float32
  quotient 1/x, so 1/0 = +inf, 1/-0 = -inf, 1/inf = 0 and NaN stays NaN.
* dtype= (the legacy keyword) casts before the store; mask= is the legacy predicate.
"""
from __future__ import annotations

from functools import partial

import numpy as np

from nkirun.isa.common import activation_pass, flat, same_shape
from nkirun.isa.spec import TILE, Bound, InstructionDef, NkiApi, Param, common_tail, out_dtype

URL = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.isa.reciprocal.html"

PARAMS = (
    Param("dst", TILE, required=True, out=True,
          doc="output tile, SBUF or PSUM (same partitions and elements as data)"),
    Param("data", TILE, required=True, doc="input tile, SBUF or PSUM, any dtype"),
    *common_tail(),
)


def check(b: Bound):
    yield from same_shape(b, "dst", "data")


def execute(b: Bound, m) -> None:
    x = flat(m.read_f32(b["data"]))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        y = np.divide(np.float32(1), x, dtype=np.float32)
    m.write(b["dst"], y.reshape(b["dst"].shape), out_dtype(b), b.mask)


def cycles(b: Bound, target) -> int:
    # [OLD-ISA] reciprocal: the Vector engine is ~8x slower than activation(reciprocal)
    return max(target.min_ii, 8 * b["data"].free_size)


SPEC = InstructionDef(
    name="reciprocal",
    engine="vector",
    params=PARAMS,
    summary="dst = 1.0 / data elementwise on the Vector engine (float32 math)",
    semantics=(
        "Casts data to float32, computes the correctly rounded float32 reciprocal 1/x of "
        "every element (1/0 = inf, 1/-0 = -inf, 1/inf = 0, NaN stays NaN) and casts it to "
        "dst's dtype. It is more precise and about 8x slower than activation(op: "
        "reciprocal) on the Scalar engine for large tiles."),
    cost_formula="max(MIN_II, 8*N) Vector cycles (N = elements per partition of data)",
    execute=execute,
    cycles=cycles,
    activation_form=partial(activation_pass, src="data"),
    check=check,
    source=f"{URL}; legacy cost formula: NKI 2.26 nki.isa.reciprocal docstring",
    example="""\
- reciprocal:
    dst: inv
    data: x""",
    nki=NkiApi("dst data"),
)
