"""The run's side of registers and loops: the order `execute` takes the instructions in
(nkirun/control.py walks the loops, reading bounds and conditions from the machine's
registers) and the run-time register errors."""
from __future__ import annotations

from nkirun.diagnostics import error

INT32 = (-(2 ** 31), 2 ** 31 - 1)


def order(program, bound, m):
    """The bound instructions in execution order: `bound` itself for straight-line code,
    else a walk of the loops (its per-loop iteration counts kept as `m.trips`)."""
    if not program.loops:
        return bound
    from nkirun.control import Walk
    by_index = {b.index: b for b in bound}

    def read(name, loop):
        return m.register(name, loop)

    def write(name, value):
        m.registers[name] = value

    w = Walk(program, read, write)
    m.trips = w.trips
    m.looped = frozenset(i for lp in program.loops for i in range(lp.first, lp.end))
    return (by_index[i] for i in w.indices(max(by_index, default=-1) + 1) if i in by_index)


def unwritten(name: str, where):
    """E655: a register read before anything wrote it (`where`: a Bound or a Loop)."""
    if where is None:
        loc, index, what = None, None, "the program"
    elif hasattr(where, "spec"):  # a Bound
        loc, index, what = where.loc(), where.index, where.op
    else:  # an ir.Loop
        loc, index, what = where.loc, where.first, f"loop `{where.name}`"
    return error("E655", f"{what} reads register `{name}` before anything wrote it", loc,
                 index, hint="give register_alloc a value, or register_move / register_load "
                             "into it first")


def to_int32(value: int) -> int:
    """A register holds 32 bits: wrap like the hardware's two's-complement register."""
    return (int(value) + 2 ** 31) % 2 ** 32 - 2 ** 31
