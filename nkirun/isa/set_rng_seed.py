"""nki.isa.set_rng_seed — seed the Vector engine's pseudo-random number generator.

Facts (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.isa.set_rng_seed.html):
* src_seeds is a [1, 1] tensor in SBUF or PSUM holding one 32-bit value;
* the same seed gives the same sequence of random numbers (rng on the Vector engine, and
  the other Vector random instructions: dropout, rand2); the state persists for the rest of
  the kernel.

nkirun's model (hw/prng.py) expands the seed's 32 bits into every lane's states with
SplitMix64: the same seed replays the same numbers in nkirun, but the numbers are not the
hardware's. Reading: the value's bits are the seed (int32 -1 and uint32 4294967295 are the
same seed; a float32 seed is taken by its bit pattern).
Cost: no formula; nkirun assumes MIN_II Vector cycles.
"""
from __future__ import annotations

import numpy as np

from nkirun.hw.prng import machine_prng
from nkirun.isa.spec import TILE, Bound, InstructionDef, NkiApi, Param

SEED_DTYPES = frozenset({"int32", "uint32", "float32"})


def check(b: Bound):
    src = b.tile("src_seeds")
    if src.shape != (1, 1):
        yield b.err("E550", f"src_seeds {list(src.shape)} must be a [1, 1] tensor (one "
                    "32-bit seed)", "src_seeds", hint="use a view such as seed[0:1, 0:1]")


def execute(b: Bound, m) -> None:
    value = np.ascontiguousarray(m.read(b["src_seeds"])).view(np.uint32).reshape(-1)[0]
    machine_prng(m, "vector").seed(int(value))


def cycles(b: Bound, target) -> int:
    return target.min_ii


SPEC = InstructionDef(
    name="set_rng_seed",
    engine="vector",
    params=(Param("src_seeds", TILE, required=True, dtypes=SEED_DTYPES,
                  doc="[1, 1] SBUF/PSUM tensor holding the 32-bit seed"),),
    summary="seed the Vector engine's PRNG from a [1, 1] 32-bit value (nkirun's model)",
    semantics=(
        "Resets every lane of the Vector engine's random number generator from one 32-bit "
        "seed. Afterwards rng (engine vector), dropout and rand2 produce the same sequence "
        "for the same seed. nkirun models the generator: the sequence is reproducible in "
        "nkirun but is NOT the hardware's."),
    cost_formula="MIN_II Vector cycles",
    cost_assumed=True,
    cost_note="no documented formula",
    execute=execute,
    cycles=cycles,
    check=check,
    constraints=(
        "src_seeds is a [1, 1] tensor (E550) of a 32-bit dtype",
    ),
    source="https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/"
           "nki.isa.set_rng_seed.html",
    example="- set_rng_seed: {src_seeds: seed}",
    nki=NkiApi("src_seeds"),
)
