"""nki.isa.register_alloc — allocate a virtual register, optionally with a value (the
nki.isa.register_alloc documentation).

NKI returns the register (`r = nisa.register_alloc(0)`); in a program it is named by
`dst`, which declares it: `- register_alloc: {dst: r, x: 0}`. Without `x` the register
holds nothing until register_move or register_load writes it (reading it first is E655).
Allocating a name again (e.g. in a loop body) re-initialises the same register.
"""
from __future__ import annotations

from nkirun.isa.registers import ENGINE, MOVE_CYCLES, REGISTER, REGISTER_OR_INT
from nkirun.isa.spec import Bound, InstructionDef, NkiApi, Param


def execute(b: Bound, m) -> None:
    m.registers[b["dst"].name] = b.get("x")  # None: allocated, not yet written


def cycles(b: Bound, target) -> int:
    return MOVE_CYCLES


def check(b: Bound):
    if b.get("x") is not None and not isinstance(b["x"], int):
        yield b.err("E653", "`x` must be a compile-time integer (register_move copies a "
                    "register)", "x", hint="allocate without x, then register_move")


SPEC = InstructionDef(
    name="register_alloc",
    engine=ENGINE,
    params=(
        Param("dst", REGISTER, required=True, out=True, declares=True,
              doc="the name of the register this allocates (NKI returns it)"),
        Param("x", REGISTER_OR_INT, doc="optional initial value, an int32 immediate"),
    ),
    summary="allocate a 32-bit virtual register, optionally initialised",
    semantics=("Declares register `dst` (a 32-bit integer of the engine sequencers) and sets "
               "it to `x` when given; without `x` it holds nothing until written."),
    cost_formula=f"{MOVE_CYCLES} cycles",
    cost_assumed=True,
    execute=execute,
    cycles=cycles,
    check=check,
    source="the nki.isa.register_alloc documentation",
    constraints=("E653 `x` is an integer that fits in int32",),
    example=("- register_alloc: {dst: n, x: 5}\n"
             "- register_store: {dst: out, src: n}"),
    nki=NkiApi(front_end="nkirun.source.kernel.control:register_alloc"),  # returns it
)
