"""nki.isa.register_load — load one 32-bit scalar from SBUF or HBM into a register (the
nki.isa.register_load documentation): the way a value computed at run time (a count, a
flag) becomes a loop bound, a while condition or a scalar_offset."""
from __future__ import annotations

from nkirun.isa.registers import (ENGINE, MEMORY, MEMORY_CYCLES, REGISTER, SCALAR_DTYPES,
                                  scalar_rule)
from nkirun.isa.spec import TILE, Bound, InstructionDef, Param
from nkirun.hw.dtypes import to_int32


def execute(b: Bound, m) -> None:
    value = m.read(b["src"], strict=True).reshape(-1)[0]  # (garbage: E090 here)
    m.registers[b["dst"].name] = to_int32(value)


def cycles(b: Bound, target) -> int:
    return MEMORY_CYCLES


def check(b: Bound):
    yield from scalar_rule(b, "src")


SPEC = InstructionDef(
    name="register_load",
    engine=ENGINE,
    params=(
        Param("dst", REGISTER, required=True, out=True, doc="the register written"),
        Param("src", TILE, required=True, buffers=MEMORY, dtypes=SCALAR_DTYPES,
              doc="a one-element tensor (shape [1] or [1, 1]) in SBUF or HBM"),
    ),
    summary="load a 32-bit integer from SBUF or HBM into a register",
    semantics=("dst = src's one element, an integer of at most 32 bits (an unsigned value "
               "above 2**31-1 wraps to int32, the register's width)."),
    cost_formula=f"{MEMORY_CYCLES} cycles",
    cost_assumed=True,
    execute=execute,
    cycles=cycles,
    check=check,
    source="the nki.isa.register_load documentation",
    constraints=("E653 src holds exactly one element of an integer dtype up to 32 bits",),
    example=("- register_alloc: {dst: n}\n"
             "- register_load: {dst: n, src: count}"),
)
