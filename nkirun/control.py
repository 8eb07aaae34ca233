"""Runtime control flow: the order in which a program's instructions run.

A program is a flat list of instructions plus `Program.loops`, each a span of that list
(ir.Loop). Every pass that looks at instructions one by one sees each loop body once;
this module is the one place that knows how the spans repeat:

* `run_order` (run): the instruction indices in execution order, reading the loop bounds
  and while-conditions from the machine's registers as it goes;
* `assumed_order` (cost without data): the same with each dynamic loop's trip count
  given (`--trip NAME=N`), static `for` loops counted from their constant bounds;
* `loop_tree` / `enclosing`: the nesting, for the checker.

Readings (the nki.language.fori_loop / while_loop / dynamic_range documentation):
- A `for` loop reads its start and stop once, when it is entered (like Python's `range`);
  its index register is set to the iteration value before each iteration, so writing to it
  in the body does not change the loop.
- A `while` loop tests its condition register before each iteration (a zero never runs
  the body); after each iteration the condition takes the value of the `next` register
  (the register the body function returns).
- A loop that runs more than MAX_ITERATIONS times on one entry is stopped with E661
  rather than hanging; a walk as a whole stops at the instruction budget
  (nkirun/limits.py: each trip counts the instructions of its own body, at least one),
  E662 naming the loop, so nested loops end too.
"""
from __future__ import annotations

import os

from nkirun.diagnostics import RunError, error
from nkirun.ir import Loop, Program, Register
from nkirun.limits import max_instructions
from nkirun.progress import Progress

MAX_ITERATIONS = 1_000_000  # per entry of one loop: a while loop whose condition never clears


def loop_tree(loops) -> list:
    """[(loop, children)] for the outermost loops, each child list the same shape."""
    roots: list = []
    stack: list = []
    for lp in sorted(loops, key=lambda x: (x.first, -x.end)):  # (stable: ties keep order)
        while stack and not (stack[-1][0].first <= lp.first and lp.end <= stack[-1][0].end):
            stack.pop()
        node = (lp, [])
        (stack[-1][1] if stack else roots).append(node)
        stack.append(node)
    return roots


def enclosing(loops, index: int) -> list[Loop]:
    """The loops whose body holds instruction `index`, outermost first."""
    return sorted((lp for lp in loops if lp.first <= index < lp.end),
                  key=lambda x: (x.first, -x.end))


def static_trips(lp: Loop) -> int | None:
    """A `for` loop's trip count when its bounds are constants, else None."""
    if lp.kind != "for" or isinstance(lp.start, Register) or isinstance(lp.stop, Register):
        return None
    return max(0, -(-(lp.stop - lp.start) // lp.step))


class Walk:
    """One walk of the control flow. `read(name, loop)` gives a register's value;
    `trips[name]` collects the iterations of each entry of each loop."""

    def __init__(self, program: Program, read, write, assumed: dict | None = None,
                 what: str | None = None):
        self.program, self.read, self.write = program, read, write
        self.assumed = assumed  # loop name -> trip count (cost without data), or None
        self.trips: dict[str, list[int]] = {lp.name: [] for lp in program.loops}
        self.tree = loop_tree(program.loops)
        self.weight = _trip_weights(self.tree)  # loop name -> budget steps per trip
        self.steps, self.limit = 0, max_instructions()
        self.at: list = []  # [loop, trips so far] of the loops being walked, outermost first
        # (`what`: a progress line of its own; a run has runner/watch.py's bar)
        name = os.path.basename(program.path or "") or "the program"
        self.progress = Progress(f"{what} {name}", live=what is not None)
        self.next_tick = min(_TICK, self.limit + 1)

    def indices(self, count: int, first: int = 0, core: int | None = None):
        """Instruction indices first..count-1 in execution order (a two-core program walks
        each core's span of indices with its own loops (`core`), on its own registers)."""
        tree = self.tree if core is None else [n for n in self.tree if n[0].core == core]
        try:
            yield from self._span(first, count, tree)
        finally:
            self.progress.close()

    def _span(self, lo: int, hi: int, children):
        i = lo
        for lp, kids in children:
            yield from range(i, lp.first)
            yield from self._loop(lp, kids)
            i = lp.end
        yield from range(i, hi)

    def _loop(self, lp: Loop, kids):
        here = [lp, 0]
        self.at.append(here)
        if self.assumed is not None:
            trips = static_trips(lp)
            trips = self.assumed[lp.name] if trips is None else trips
            for _ in range(trips):
                self._step(here)
                yield from self._span(lp.first, lp.end, kids)
        elif lp.kind == "for":
            value = self._value(lp.start, lp)
            stop = self._value(lp.stop, lp)
            while value < stop:
                self._count(here)
                self.write(lp.index, value)
                yield from self._span(lp.first, lp.end, kids)
                value += lp.step
        else:
            while self.read(lp.cond, lp) != 0:
                self._count(here)
                yield from self._span(lp.first, lp.end, kids)
                if lp.next is not None and lp.next != lp.cond:
                    self.write(lp.cond, self.read(lp.next, lp))
        self.at.pop()
        self.trips[lp.name].append(here[1])

    def _value(self, v, lp: Loop) -> int:
        return self.read(v.name, lp) if isinstance(v, Register) else v

    def _count(self, here: list) -> None:
        lp = here[0]
        if here[1] >= MAX_ITERATIONS:
            raise RunError(error(
                "E661", f"loop `{lp.name}` ran {MAX_ITERATIONS:,} iterations without ending",
                lp.loc, lp.first,
                hint="a while loop ends when its condition register becomes 0: write the "
                     "register the body returns (register_load / register_move) in the body"))
        self._step(here)

    def _step(self, here: list) -> None:
        """One more trip of here[0]: within the budget, and shown on the progress line."""
        here[1] += 1
        self.steps += self.weight[here[0].name]
        if self.steps >= self.next_tick:
            if self.steps > self.limit:
                self.progress.close()
                raise RunError(self._over_budget(here[0]))
            self.progress.tick(self.steps, self.where())
            self.next_tick = min(self.steps + _TICK, self.limit + 1)

    def where(self) -> str:
        """The loops being walked and their trips so far: `loop i trip 3, loop j trip 7`."""
        return ", ".join(f"loop {lp.name} trip {n:,}" for lp, n in self.at)

    def close(self) -> None:
        self.progress.close()

    def _over_budget(self, lp: Loop):
        return error(
            "E662", f"the loops reached the budget of {self.limit:,} instructions in loop "
            f"`{lp.name}` ({self.where()})", lp.loc, lp.first,
            hint="loops that run longer than intended (a bound from the wrong register?); "
                 "if the run is meant to be this long, raise the budget: --max-instructions "
                 "N (API: max_instructions=N)")


_TICK = 4096  # budget steps between two looks at the budget and the clock


def _trip_weights(tree) -> dict:
    """Loop name -> what one trip costs against the budget: the instructions of its own
    body (not those of loops nested in it, which count their own trips), at least 1."""
    out = {}
    for lp, kids in tree:
        own = (lp.end - lp.first) - sum(k.end - k.first for k, _ in kids)
        out[lp.name] = max(1, own)
        out.update(_trip_weights(kids))
    return out


def assumed_order(program: Program, count: int, trips: dict) -> tuple[list[int], dict]:
    """Execution order with the trip counts `trips` (loop name -> N) for the dynamic
    loops: (indices, per-loop iteration lists). A dynamic loop missing from `trips` is E657."""
    missing = [lp for lp in program.loops if static_trips(lp) is None and lp.name not in trips]
    if missing:
        raise RunError(*[missing_trip(lp) for lp in missing])
    w = Walk(program, None, None, assumed=trips, what="expanding the loops of")
    return list(w.indices(count)), w.trips


def missing_trip(lp: Loop, why: str = ""):
    bound = lp.stop if lp.kind == "for" and isinstance(lp.stop, Register) else (
        lp.start if lp.kind == "for" else Register(lp.cond))
    return error("E657", f"loop `{lp.name}`: its trip count depends on register `{bound}`, "
                 f"known only at run time{why}", lp.loc, lp.first,
                 hint=f"give the data its inputs (run the program's control flow to count "
                      f"them), or assume a count: --trip {lp.name}=N")


def summary(program: Program, trips: dict, source: dict) -> list[dict]:
    """One row per loop for the cost report: name, kind, location, entries, iterations and
    where the count came from ("static", "data" or "assumed")."""
    rows = []
    for lp in program.loops:
        counts = trips.get(lp.name, [])
        rows.append({"name": lp.name, "kind": lp.kind, "line": lp.loc.line,
                     "entries": len(counts), "iterations": sum(counts),
                     "trips": source.get(lp.name, "static")})
        if program.cores > 1:  # (each core walks its own loops)
            rows[-1]["core"] = lp.core
    return rows
