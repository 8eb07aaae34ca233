"""Which names are registers: the operand of every instruction whose spec declares the
register it names (`Param.declares`: register_alloc's dst) and the index of every `for`
loop (nl.fori_loop / dynamic_range pass the index as a register). Computed once per
Program."""
from __future__ import annotations

from nkirun.ir import Program, Register
from nkirun.isa import REGISTRY

_FACTS: dict = {}  # op -> _facts(op)

_LAST: list = [None, None]  # (program, its registers): bind asks once per indirect view


def declared(program: Program) -> dict:
    """register name -> (the instruction index or loop that declares it first, its Loc)."""
    if _LAST[0] is program:
        return _LAST[1]
    out: dict = {}
    keys = {op: declaring(op) for op in {inst.op for inst in program.instructions}}
    for inst in program.instructions:
        key = keys[inst.op]
        if key is not None:
            dst = inst.args.get(key)
            if isinstance(dst, Register):
                out.setdefault(dst.name, (inst.index, inst.arg_loc(key)))
    for lp in program.loops:
        if lp.kind == "for" and lp.index is not None:
            out.setdefault(lp.index, (lp.first, lp.key_loc("index")))
    _LAST[:] = [program, out]
    return out


def uses_registers(program: Program) -> bool:
    """Whether any instruction is a register instruction (the checks of checker/control.py
    apply): one with a register operand."""
    return any(_facts(op)[2] for op in {inst.op for inst in program.instructions})


def declaring(op: str) -> str | None:
    """The keyword of the register `op` declares (Param.declares), or None."""
    return _facts(op)[1]


def _facts(op: str) -> tuple:
    """(spec, the keyword it declares a register by, whether it has register operands),
    found once per spec (tests may substitute one)."""
    spec = REGISTRY.get(op)
    hit = _FACTS.get(op)
    if hit is None or hit[0] is not spec:
        params = spec.params if spec is not None else ()
        hit = _FACTS[op] = (spec, next((p.name for p in params if p.declares), None),
                            any(p.kind.is_register for p in params))
    return hit
