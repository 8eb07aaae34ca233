"""nki.isa.rng — Vector (default) or GpSimd engine: 32 random bits per element, truncated to
dst's integer dtype (its least significant bits).

Facts (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.isa.rng.html):
* dst int8/int16/int32/uint8/uint16/uint32, in SBUF or PSUM (GpSimd: SBUF only);
* engine vector (default) on every NeuronCore; gpsimd from NeuronCore-v3 (trn2) on;
* set_rng_seed seeds the Vector engine's generator, rand_set_state either engine's.

The hardware generator's bits are not documented: nkirun draws from its own seeded model
(hw/prng.py: per-lane XORWOW states, the Vector engine's four per lane), so values are
reproducible in nkirun and have the documented distribution, but they are not the
hardware's bits. Every run that uses it says so (W580), and `run --expect` marks outputs
derived from random values.

Cost: no formula; nkirun assumes max(MIN_II, N) engine cycles, and max(MIN_II, N/4) for
the NeuronCore-v4 Vector engine, which "can produce 4x 32-bit PRNG values per compute lane
per engine cycle" (Trainium3 guide).
"""
from __future__ import annotations

import numpy as np

from nkirun.hw.prng import draw_bits
from nkirun.isa.common import require_core
from nkirun.isa.spec import ENUM, TILE, Bound, InstructionDef, NkiApi, Param

INT_DTYPES = frozenset({"int8", "int16", "int32", "uint8", "uint16", "uint32"})
PARAMS = (
    Param("dst", TILE, required=True, out=True, dtypes=INT_DTYPES,
          doc="integer tile to fill with random bits (SBUF or PSUM; GpSimd: SBUF)"),
    Param("engine", ENUM, default="vector", choices=("vector", "gpsimd", "unknown"),
          doc="vector (default) or gpsimd (NeuronCore-v3 and later)"),
)


def engine_of(b: Bound) -> str:
    return "gpsimd" if b.get("engine") == "gpsimd" else "vector"


def check(b: Bound):
    if b.engine == "gpsimd":
        yield from require_core(b, 3, "E493", "engine", "rng on the GpSimd engine")


def execute(b: Bound, m) -> None:
    dst = b["dst"]
    bits = draw_bits(b, m, b.engine, dst)  # (P, N) uint32
    width = dst.dtype.itemsize * 8  # keep the least significant bits, then reinterpret
    low = bits.astype(np.dtype(f"u{dst.dtype.itemsize}")) if width < 32 else bits
    m.write(dst, low.view(dst.dtype.np_type).reshape(dst.shape))


def cycles(b: Bound, target) -> int:
    n = b["dst"].free_size
    if b.engine == "vector" and target.version >= 4:
        n = -(-n // 4)
    return max(target.min_ii, n)


SPEC = InstructionDef(
    name="rng",
    engine="vector",
    params=PARAMS,
    summary="fill an integer tile with pseudo-random bits (nkirun's PRNG model)",
    semantics=(
        "Writes 32 pseudo-random bits per element of dst, truncated to dst's integer dtype "
        "(its least significant bits). The values come from nkirun's seeded model of the "
        "engine's generator (per-partition states; set_rng_seed / rand_set_state / "
        "rand_get_state drive it): reproducible and uniformly distributed, but NOT the "
        "hardware's bits, so compare statistics, not values, with a device run."),
    cost_formula="max(MIN_II, N) engine cycles; max(MIN_II, N/4) on the trn3 Vector engine",
    cost_assumed=True,
    cost_note="no documented formula; the Trainium3 guide: 4 random 32-bit values per lane "
              "per cycle on the v4 Vector engine",
    execute=execute,
    cycles=cycles,
    check=check,
    engine_of=engine_of,
    random=True,
    constraints=(
        "engine gpsimd needs NeuronCore-v3+ (trn2, trn3) (E493) and an SBUF dst (E044)",
        "values come from nkirun's PRNG model, not the hardware's bits (W580 at run time)",
    ),
    source="https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/"
           "nki.isa.rng.html",
    example="- rng: {dst: bits}",
    nki=NkiApi("dst engine=vector"),
)
