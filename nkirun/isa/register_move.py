"""nki.isa.register_move — move a constant or another register's value into a register
(the nki.isa.register_move documentation). Touches no SBUF, PSUM or HBM."""
from __future__ import annotations

from nkirun.ir import Register
from nkirun.isa.registers import ENGINE, MOVE_CYCLES, REGISTER, REGISTER_OR_INT
from nkirun.isa.spec import Bound, InstructionDef, Param


def execute(b: Bound, m) -> None:
    src = b["src"]
    m.registers[b["dst"].name] = m.register(src.name) if isinstance(src, Register) else src


def cycles(b: Bound, target) -> int:
    return MOVE_CYCLES


SPEC = InstructionDef(
    name="register_move",
    engine=ENGINE,
    params=(
        Param("dst", REGISTER, required=True, out=True, doc="the register written"),
        Param("src", REGISTER_OR_INT, required=True,
              doc="an int32 constant, or a register whose value is copied"),
    ),
    summary="set a register to a constant or to another register's value",
    semantics="dst = src, where src is an int32 immediate or a register.",
    cost_formula=f"{MOVE_CYCLES} cycles",
    cost_assumed=True,
    execute=execute,
    cycles=cycles,
    source="the nki.isa.register_move documentation",
    constraints=("E650 both registers are allocated before use", "E653 a constant fits in int32"),
    example=("- register_alloc: {dst: n}\n"
             "- register_move: {dst: n, src: 10}\n"
             "- register_store: {dst: out, src: n}"),
)
