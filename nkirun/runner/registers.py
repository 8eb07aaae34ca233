"""The run's side of registers and loops: the order `execute` takes the instructions in
(nkirun/control.py walks the loops, reading bounds and conditions from the machine's
registers) and the run-time register errors."""
from __future__ import annotations

from nkirun.diagnostics import RunError, error
from nkirun.hw.dtypes import to_int32  # noqa: F401  (re-exported)

INT32 = (-(2 ** 31), 2 ** 31 - 1)


class LoopState:
    """The Machine's registers and what a runtime loop needs remembered."""

    def init_loop_state(self) -> None:
        # virtual registers (nki.isa.register_alloc): name -> int32 value, None = unwritten
        self.registers: dict[str, int | None] = {}
        self.trips: dict[str, list[int]] = {}  # loop name -> iterations of each entry
        self.looped: frozenset = frozenset()  # instruction indices inside runtime loops
        self._first_held: dict = {}
        self.walk = None  # the control.Walk of a program with loops (where Ctrl-C stopped)

    def register(self, name: str, where=None) -> int:
        """A register's value; reading one nothing wrote is E655 (run time)."""
        value = self.registers.get(name)
        if value is None:
            raise RunError(unwritten(name, where if where is not None else self.current))
        return value

    def held_first_run(self, b, r):
        """Machine.held(r) as it was when instruction b first ran: a decision the compiler
        makes once per instruction (nc_matmul's auto accumulate) repeats in later iterations
        of a runtime loop."""
        if b.index not in self.looped:
            return self.held(r)
        if b.index not in self._first_held:
            self._first_held[b.index] = self.held(r)
        return self._first_held[b.index]


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
    m.trips, m.walk = w.trips, w
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
