"""nki.isa.register_store — store a register's value into a one-element tensor in SBUF or
HBM (the nki.isa.register_store documentation)."""
from __future__ import annotations

import numpy as np

from nkirun.isa.registers import (ENGINE, MEMORY, MEMORY_CYCLES, REGISTER, SCALAR_DTYPES,
                                  scalar_rule)
from nkirun.isa.spec import TILE, Bound, InstructionDef, Param


def execute(b: Bound, m) -> None:
    dst = b["dst"]
    m.write(dst, np.full(dst.shape, m.register(b["src"].name), np.int64))


def cycles(b: Bound, target) -> int:
    return MEMORY_CYCLES


def check(b: Bound):
    yield from scalar_rule(b, "dst")


SPEC = InstructionDef(
    name="register_store",
    engine=ENGINE,
    params=(
        Param("dst", TILE, required=True, out=True, buffers=MEMORY, dtypes=SCALAR_DTYPES,
              doc="a one-element tensor (shape [1] or [1, 1]) in SBUF or HBM"),
        Param("src", REGISTER, required=True, doc="the register read"),
    ),
    summary="store a register's value into a one-element SBUF or HBM tensor",
    semantics=("dst's one element = the register's int32 value, converted to dst's integer "
               "dtype like any integer result."),
    cost_formula=f"{MEMORY_CYCLES} cycles",
    cost_assumed=True,
    execute=execute,
    cycles=cycles,
    check=check,
    source="the nki.isa.register_store documentation",
    constraints=("E653 dst holds exactly one element of an integer dtype up to 32 bits",),
    example=("- register_alloc: {dst: n, x: 7}\n"
             "- register_store: {dst: out, src: n}"),
)
