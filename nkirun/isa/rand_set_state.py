"""nki.isa.rand_set_state — load per-lane PRNG states into the GpSimd (default) or Vector
engine.

Facts (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.isa.rand_set_state.html):
* src_seeds is a uint32 SBUF tile; partition p seeds compute lane p; each partition holds
  one XORWOW state of 6 values (GpSimd) or four of them, 24 values (Vector);
* NeuronCore-v3 and later; engine vector from NeuronCore-v4 (trn3) on;
* the state persists for the rest of the kernel.

nkirun's model (hw/prng.py) takes the values as its states (x0..x4 and the Weyl counter d
of each, state after state), so rand_get_state returns them unchanged and the numbers that
follow replay exactly in nkirun; they are not the hardware's numbers. Lanes outside the
tile's partitions keep their states.
Cost: no formula; nkirun assumes max(MIN_II, N) engine cycles (N = 6 or 24).
"""
from __future__ import annotations

import numpy as np

from nkirun.hw.prng import STREAMS, WORDS, lanes_of, machine_prng
from nkirun.isa.common import require_core
from nkirun.isa.spec import ENUM, TILE, Bound, InstructionDef, NkiApi, Param

ENGINES = ("gpsimd", "vector")
U32 = frozenset({"uint32"})


def engine_of(b: Bound) -> str:
    return "vector" if b.get("engine") == "vector" else "gpsimd"


def state_rules(b: Bound, key: str, code: str):
    """The NeuronCore generation and the per-lane state size, shared with rand_get_state."""
    yield from require_core(b, 3, "E493", None, f"{b.op}")
    if b.engine == "vector":
        yield from require_core(b, 4, "E493", "engine", f"{b.op} on the Vector engine")
    r, words = b.tile(key), STREAMS[b.engine] * WORDS
    if r is not None and (r.free_size != words or len(r.shape) != 2):
        yield b.err(code, f"{key} {list(r.shape)} must be a 2-D [P, {words}] tile: the "
                    f"{b.engine} engine's XORWOW state per lane is {words} uint32 values", key,
                    hint=f"declare it [P, {words}]")


def state_spec(name: str, key: str, param: Param, verb: str, **own) -> InstructionDef:
    """The InstructionDef fields rand_set_state and rand_get_state share: the engine choice,
    the assumed cost over the `key` tile, the source page and the generation constraint."""
    def cycles(b: Bound, target) -> int:
        return max(target.min_ii, b[key].free_size)

    return InstructionDef(
        name=name,
        engine="gpsimd",
        params=(param, Param("engine", ENUM, default="gpsimd", choices=ENGINES,
                             doc="gpsimd (default) or vector (trn3)")),
        summary=f"{verb} per-lane PRNG states (GpSimd or, on trn3, Vector; nkirun's model)",
        cost_formula="max(MIN_II, N) engine cycles (N = 6 or 24 values per lane)",
        cost_assumed=True,
        cost_note="no documented formula",
        cycles=cycles,
        engine_of=engine_of,
        source="https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/"
               f"nki.isa.{name}.html",
        example=f"- {name}: {{{key}: state, engine: gpsimd}}",
        **own)


GENERATIONS = "NeuronCore-v3+ (trn2, trn3); engine vector needs NeuronCore-v4 (trn3) (E493)"


def check(b: Bound):
    yield from state_rules(b, "src_seeds", "E560")


def execute(b: Bound, m) -> None:
    src = b["src_seeds"]
    words = np.ascontiguousarray(m.read(src)).reshape(src.partitions, -1)
    machine_prng(m, b.engine).set(lanes_of(src), words)


SPEC = state_spec(
    "rand_set_state", "src_seeds",
    Param("src_seeds", TILE, required=True, buffers=frozenset({"sbuf"}), dtypes=U32,
          doc="uint32 SBUF tile (P, 6) for gpsimd or (P, 24) for vector: lane p's state"),
    "load",
    semantics=(
        "Sets the random number generator state of each compute lane p of the engine from "
        "partition p of src_seeds: one XORWOW state (6 uint32: x0..x4, d) on GpSimd, four "
        "(24 uint32) on the Vector engine. rand_get_state reads them back unchanged, and the "
        "random numbers that follow replay. nkirun models the generator: reproducible in "
        "nkirun, NOT the hardware's numbers. NeuronCore-v3+ (vector: v4)."),
    execute=execute,
    check=check,
    constraints=(
        GENERATIONS,
        "src_seeds holds 6 uint32 per partition (gpsimd) or 24 (vector) (E560)",
    ),
    nki=NkiApi("src_seeds engine=gpsimd"),
)
