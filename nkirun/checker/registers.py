"""Which names are registers: the `dst` of every register_alloc and the index of every
`for` loop (nki.isa.register_alloc; nl.fori_loop / dynamic_range pass the index as a
register). Computed once per Program."""
from __future__ import annotations

from nkirun.ir import Program, Register

_LAST: list = [None, None]  # (program, its registers): bind asks once per indirect view


def declared(program: Program) -> dict:
    """register name -> (the instruction index or loop that declares it first, its Loc)."""
    if _LAST[0] is program:
        return _LAST[1]
    out: dict = {}
    for inst in program.instructions:
        if inst.op == "register_alloc":
            dst = inst.args.get("dst")
            if isinstance(dst, Register):
                out.setdefault(dst.name, (inst.index, inst.arg_loc("dst")))
    for lp in program.loops:
        if lp.kind == "for" and lp.index is not None:
            out.setdefault(lp.index, (lp.first, lp.key_loc("index")))
    _LAST[:] = [program, out]
    return out


def uses_registers(program: Program) -> bool:
    """Whether any instruction is a register instruction (the checks of checker/control.py
    apply)."""
    return any(inst.op.startswith("register_") for inst in program.instructions)
