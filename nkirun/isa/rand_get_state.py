"""nki.isa.rand_get_state — store the per-lane PRNG states of the GpSimd (default) or
Vector engine.

Facts (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.isa.rand_get_state.html):
* dst is a uint32 tile; partition p receives compute lane p's state: 6 values (GpSimd) or
  24 (Vector: four XORWOW states);
* dst in SBUF (NeuronCore-v3) or SBUF/PSUM (NeuronCore-v4); GpSimd cannot reach PSUM;
* NeuronCore-v3 and later; engine vector from NeuronCore-v4 (trn3) on.

nkirun returns its model's states (hw/prng.py; x0..x4 and the Weyl counter d, state after
state): what rand_set_state loaded, advanced by the numbers drawn since. They round-trip
(rand_set_state of them replays the sequence) but are not the hardware's states.
Cost: no formula; nkirun assumes max(MIN_II, N) engine cycles (N = 6 or 24).
"""
from __future__ import annotations

from nkirun.hw.prng import lanes_of, machine_prng, note_model
from nkirun.isa.rand_set_state import GENERATIONS, U32, state_rules, state_spec
from nkirun.isa.spec import TILE, Bound, NkiApi, Param


def check(b: Bound):
    # (PSUM needs the v4 Vector engine: GpSimd cannot reach it (E044), and engine vector
    # is itself v4-only (E493))
    yield from state_rules(b, "dst", "E570")


def execute(b: Bound, m) -> None:
    dst = b["dst"]
    note_model(b, m)  # the states are the model's (W580, once per run)
    m.write(dst, machine_prng(m, b.engine).get(lanes_of(dst)).reshape(dst.shape))


SPEC = state_spec(
    "rand_get_state", "dst",
    Param("dst", TILE, required=True, out=True, dtypes=U32,
          doc="uint32 tile (P, 6) for gpsimd or (P, 24) for vector; SBUF (PSUM: trn3 vector)"),
    "store",
    semantics=(
        "Writes each compute lane p's random number generator state into partition p of "
        "dst: 6 uint32 (x0..x4, d) on GpSimd, 24 (four states) on the Vector engine. "
        "rand_set_state of these values replays the numbers that follow. nkirun models the "
        "generator: the states round-trip in nkirun but are NOT the hardware's. "
        "NeuronCore-v3+ (vector: v4)."),
    execute=execute,
    check=check,
    random=True,
    constraints=(
        GENERATIONS,
        ("dst holds 6 uint32 per partition (gpsimd) or 24 (vector) (E570); PSUM only from the "
         "Vector engine"),
        "the states are nkirun's model's, not the hardware's (W580 at run time)",
    ),
    nki=NkiApi("dst engine=gpsimd"),
)
