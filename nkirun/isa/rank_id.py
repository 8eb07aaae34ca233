"""nki.collectives.rank_id — the rank this program runs as, in a register.

Facts (the NKI 0.6 page, https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/
generated/nki.collectives.rank_id.html): `rank_id()` returns the current rank's id as a
virtual register (nki-library's collectives tests use it as a DMA `scalar_offset`).

Readings: the value is known only at run time (one program serves every rank), so it is a
register written when the instruction runs: the run's rank (`nkirun.simulate(kernel,
ranks=N)`: 0..N-1; otherwise 0). Cost: a sequencer register write (isa/registers.py).
"""
from __future__ import annotations

from nkirun.isa import collective as cc
from nkirun.isa.registers import ENGINE, MOVE_CYCLES, REGISTER
from nkirun.isa.spec import Bound, InstructionDef, NkiApi, Param


def execute(b: Bound, m) -> None:
    m.registers[b["dst"].name] = cc.seat().rank


def cycles(b: Bound, target) -> int:
    return MOVE_CYCLES


SPEC = InstructionDef(
    name="rank_id",
    engine=ENGINE,
    params=(
        Param("dst", REGISTER, required=True, out=True, declares=True,
              doc="the register it declares and sets to the rank (NKI returns it)"),
    ),
    summary="the current rank's id, in a register (nki.collectives)",
    semantics=("Declares register `dst` and sets it to the rank this program runs as: 0..N-1 "
               "in a run of N ranks (nkirun.simulate(kernel, ranks=N), run --ranks N), 0 "
               "otherwise."),
    cost_formula=f"{MOVE_CYCLES} cycles",
    cost_assumed=True,
    execute=execute,
    cycles=cycles,
    source="https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/"
           "nki.collectives.rank_id.html",
    example=("- rank_id: {dst: r}\n"
             "- register_store: {dst: out, src: r}"),
    nki=NkiApi(module="nki.collectives",
               front_end="nkirun.source.kernel.collectives:rank_id"),
)
