"""nki.collectives.collective_permute_implicit_current_processing_rank_id — in a ring
algorithm, whose data a rank holds at an iteration, in a register.

Facts (the NKI 0.6 page, https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/
generated/nki.collectives.collective_permute_implicit_current_processing_rank_id.html):
`(iteration_id, replica_group, channel_id=0)` (NKI 0.2 also took `num_channels`; 0.3
removed it); at iteration 0 it is the rank's own id; at later iterations the rank whose
data arrived from the predecessors, progressing around the ring; a scalar register (for an
access pattern's scalar_offset); channel_id 0 to num_channels-1, at most 4 channels.

Readings: with collective_permute_implicit's ring (the rank-list in its order), after i
steps a rank at position p holds the data of the rank at position p - i (mod n): the
register gets that rank's id. Every channel uses the same ring. iteration_id is an int
(0 or more) or a register (a runtime loop's index), taken mod n. num_channels, when a
kernel still gives it, only bounds channel_id. A rank outside every rank-list is its own
ring of one.
"""
from __future__ import annotations

from nkirun.isa import collective as cc
from nkirun.isa.registers import ENGINE, MOVE_CYCLES, REGISTER, REGISTER_OR_INT
from nkirun.isa.spec import INT, Bound, InstructionDef, NkiApi, Param

NAME = "collective_permute_implicit_current_processing_rank_id"


def check(b: Bound):
    yield from cc.group_rules(b)
    yield from cc.channel_rules(b)
    step = b["iteration_id"]
    if isinstance(step, int) and step < 0:
        yield b.err("E693", f"iteration_id {step}: ring iterations count from 0",
                    "iteration_id", hint="iteration_id=0 is the rank's own data")


def execute(b: Bound, m) -> None:
    rank = cc.seat().rank
    group = cc.my_list(b["replica_group"], rank) or (rank,)
    step = b["iteration_id"]
    step = step if isinstance(step, int) else m.register(step.name)
    m.registers[b["dst"].name] = group[(group.index(rank) - step) % len(group)]


def cycles(b: Bound, target) -> int:
    return MOVE_CYCLES


SPEC = InstructionDef(
    name=NAME,
    engine=ENGINE,
    params=(
        Param("dst", REGISTER, required=True, out=True, declares=True,
              doc="the register it declares and sets (NKI returns it)"),
        Param("iteration_id", REGISTER_OR_INT, required=True,
              doc="the ring iteration (0: the rank's own data)"),
        cc.group_param(),
        Param("channel_id", INT, default=0, doc="the channel (0..3)"),
        Param("num_channels", INT, doc="NKI 0.2's count of channels (optional): bounds "
              "channel_id"),
    ),
    summary="the rank whose data a ring algorithm holds at an iteration, in a register",
    semantics=("Declares register `dst` and sets it to the id of the rank at position "
               "(p - iteration_id) mod n of the caller's rank-list (p: the caller's "
               "position, n: the rank-list's size): whose data arrived after that many "
               "collective_permute_implicit steps."),
    cost_formula=f"{MOVE_CYCLES} cycles",
    cost_assumed=True,
    execute=execute,
    cycles=cycles,
    check=check,
    source=f"{cc.NKI_API_PAGES}/nki.collectives.{NAME}.html",
    constraints=(cc.GROUP_RULE, "E693 channel_id 0..3 (below num_channels if given); "
                 "iteration_id 0 or more"),
    example=(f"- {NAME}: {{dst: r, iteration_id: 0, replica_group: [[0]]}}\n"
             "- register_store: {dst: out, src: r}"),
    nki=NkiApi("iteration_id replica_group channel_id=0",
               module="nki.collectives",
               front_end=f"nkirun.source.kernel.collectives:{NAME}"),
)
