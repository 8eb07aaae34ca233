"""nki.isa.rand2 — Vector engine, NeuronCore-v4 (trn3) only: uniform random values in
[min, max].

Facts (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.isa.rand2.html):
* float32 values uniform over [min, max], converted to dst's dtype: float8_e4m3,
  float8_e5m2, float16, bfloat16, float32, tfloat32, int8, int16, int32, uint8, uint16 or
  uint32; dst in SBUF or PSUM;
* min and max are float32, each a scalar or a (P, 1) vector; min < max;
* XORWOW, four 32-bit values per lane per cycle (Trainium3 guide).

The hardware generator's bits are not documented: nkirun draws one 32-bit value per element
from its seeded model of the Vector engine's PRNG (hw/prng.py), u = top 24 bits / 2^24 in
[0, 1), and writes min + u * (max - min) computed in float32, then cast to dst's dtype as
every instruction casts (integers: round half to even, saturating). Reproducible, uniformly
distributed, but not the hardware's values (W580 at run time; `run --expect` marks outputs
derived from them).

Reading: tile bounds with min >= max are not refused at run time: the formula applies.
Cost: no formula; nkirun assumes max(MIN_II, N/4) Vector cycles (four values per cycle).
"""
from __future__ import annotations

import numpy as np

from nkirun.hw.prng import draw_bits, uniform01
from nkirun.isa.common import float32_scalar, require_core
from nkirun.isa.spec import TILE, TILE_OR_SCALAR, Bound, InstructionDef, NkiApi, Param

OUT_DTYPES = frozenset({"float8_e4m3", "float8_e5m2", "float16", "bfloat16", "float32",
                        "tfloat32", "int8", "int16", "int32", "uint8", "uint16", "uint32"})
F32 = frozenset({"float32"})
PARAMS = (
    Param("dst", TILE, required=True, out=True, dtypes=OUT_DTYPES,
          doc="output tile (SBUF or PSUM)"),
    Param("min", TILE_OR_SCALAR, required=True, per_partition=True, dtypes=F32,
          doc="lower bound: a float32 number or a (P, 1) float32 tile"),
    Param("max", TILE_OR_SCALAR, required=True, per_partition=True, dtypes=F32,
          doc="upper bound: a float32 number or a (P, 1) float32 tile"),
)


def check(b: Bound):
    yield from require_core(b, 4, "E493")
    yield from float32_scalar(b, "min", "E541")
    yield from float32_scalar(b, "max", "E541")
    lo, hi = b.get("min"), b.get("max")
    if isinstance(lo, float) and isinstance(hi, float) and not lo < hi:
        yield b.err("E540", f"min {lo!r} must be less than max {hi!r}", "min")


def _bound(m, v):
    return np.float32(v) if isinstance(v, float) else m.read_f32(v)


def execute(b: Bound, m) -> None:
    dst = b["dst"]
    lo, hi = _bound(m, b["min"]), _bound(m, b["max"])
    u = uniform01(draw_bits(b, m, "vector", dst))
    m.write(dst, (lo + u * (hi - lo)).reshape(dst.shape))


def cycles(b: Bound, target) -> int:
    return max(target.min_ii, -(-b["dst"].free_size // 4))


SPEC = InstructionDef(
    name="rand2",
    engine="vector",
    params=PARAMS,
    summary="uniform random values in [min, max] (trn3 only; nkirun's PRNG model)",
    semantics=(
        "Writes min + u * (max - min) into each element of dst, u uniform in [0, 1), in "
        "float32, then cast to dst's dtype. min and max are numbers or (P, 1) float32 tiles. "
        "u comes from nkirun's seeded model of the Vector engine's XORWOW generator "
        "(set_rng_seed / rand_set_state drive it): the documented distribution, NOT the "
        "hardware's bits. NeuronCore-v4 (trn3) only."),
    cost_formula="max(MIN_II, N/4) Vector cycles (N = elements per partition)",
    cost_assumed=True,
    cost_note="no documented formula; the Trainium3 guide: four 32-bit random values per "
              "lane per cycle",
    execute=execute,
    cycles=cycles,
    check=check,
    random=True,
    constraints=(
        "NeuronCore-v4 only: target trn3 (E493)",
        "scalar min < max (E540); scalars are float32 values (E541)",
        "values come from nkirun's PRNG model, not the hardware's bits (W580 at run time)",
    ),
    source="https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/"
           "nki.isa.rand2.html",
    example="- rand2: {dst: noise, min: -1.0, max: 1.0}",
    nki=NkiApi("dst min max"),
)
