"""Costing a loop of very many trips without scheduling every trip: its steady state.

When the trips of a program's loops (static bounds, or `--trip`/`trips=`) would expand to
more than EXTRAPOLATE_ABOVE instructions, each loop (an inner one on each entry) is
scheduled trip by trip
until SAME_TRIPS consecutive trips are the same schedule shifted in time (every slot: the
same engine, queues, cycles and reason to wait, its start, end and readiness later by one
period, what it waited on one trip later). The scheduler is time-shift invariant, so from
there on every trip repeats the last one a period later: the remaining trips are not
scheduled but counted (`Repeat`), the scheduler's state is moved past them (everything
the loop's trips own, later by their time and positions), and the rest of the program is
scheduled from that state. The result equals the full expansion wherever the trips are
periodic (tests/schedule/test_steady_state.py compares them); a loop that shows no period
within SAMPLE_TRIPS trips is scheduled in full, within the instruction budget (E662).

Known difference: the DMA engines remember the gaps between earlier transfers; after
extrapolated trips those gaps are closed (as their own history limit closes the oldest),
so a later transfer that depends on nothing cannot start in such a gap.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from nkirun.isa.bound import Bound
from nkirun.control import loop_tree, static_trips
from nkirun.diagnostics import RunError, error
from nkirun.limits import max_instructions

EXTRAPOLATE_ABOVE = 1_000_000  # expanded instructions above which trips are extrapolated
SAMPLE_TRIPS = 64  # trips scheduled at most while looking for the steady state
SAME_TRIPS = 3  # consecutive trips that must match (two equal periods)
_REL = 1e-9  # times are floats: "equal" up to this relative difference


@dataclass
class Repeat:
    """Trips of `loop` that were not scheduled: the slots slots[first:first + count] (the
    last trip scheduled, with the Repeats of its inner loops) again `times` times, each
    `shift_ns` later and `index_shift` positions further in the run."""
    loop: str
    first: int
    count: int
    shift_ns: float
    index_shift: int
    times: int

    def holds(self, position: int) -> bool:
        return self.first <= position < self.first + self.count


def weights(slots: list, repeats: list) -> list[int]:
    """How many times each scheduled slot runs: once, times (1 + times) of every Repeat
    whose trip holds it (an inner loop's repeated trips inside an outer loop's)."""
    w = [1] * len(slots)
    for r in repeats:
        for j in range(r.first, r.first + r.count):
            w[j] *= 1 + r.times
    return w


def repeat_ends(slots: list, repeats: list) -> list[float]:
    """Each Repeat's last trip's end: its trip's end (with its inner Repeats') plus its
    trips times its period."""
    ends: dict = {}

    def end(k: int) -> float:
        if k not in ends:
            r = repeats[k]
            inner = [end(q) for q, c in enumerate(repeats) if q != k and r.holds(c.first)
                     and c.first + c.count <= r.first + r.count]
            ends[k] = max([s.end_ns for s in slots[r.first:r.first + r.count]] + inner,
                          default=0.0) + r.times * r.shift_ns
        return ends[k]
    return [end(k) for k in range(len(repeats))]


class SteadyPlan(list):
    """What trips.expand gives instead of the expanded list when the trips are too many:
    the bound instructions once each, with the loops and their trip counts; schedule()
    schedules it with `schedule_plan`."""

    def __init__(self, program, bound, trips: dict, rows: list):
        super().__init__(bound)
        self.program, self.trips = program, trips
        self.rows = rows  # the loops' summary rows: an extrapolated loop says so in its row


def expanded_length(program, bound, trips: dict) -> int:
    """How many instructions the full expansion would schedule."""
    present = {b.index for b in bound}
    count = max(present, default=-1) + 1

    def span(lo, hi, kids):
        n, i = 0, lo
        for lp, sub in kids:
            n += sum(1 for k in range(i, lp.first) if k in present)
            n += _trips(lp, trips) * span(lp.first, lp.end, sub)
            i = lp.end
        return n + sum(1 for k in range(i, hi) if k in present)
    return span(0, count, loop_tree(program.loops))


def summary_rows(program, trips: dict, source: dict) -> list[dict]:
    """control.summary's rows, from the trip counts (not a list of every entry's)."""
    rows = []

    def walk(kids, entries):
        for lp, sub in kids:
            n = _trips(lp, trips)
            rows.append({"name": lp.name, "kind": lp.kind, "line": lp.loc.line,
                         "entries": entries, "iterations": entries * n,
                         "trips": source.get(lp.name, "static")})
            walk(sub, entries * n)
    walk(loop_tree(program.loops), 1)
    order = {lp.name: k for k, lp in enumerate(program.loops)}
    return sorted(rows, key=lambda r: order[r["name"]])


def _trips(lp, trips: dict) -> int:
    n = static_trips(lp)
    return trips[lp.name] if n is None else n


def schedule_plan(plan: SteadyPlan, scheduler, progress=None) -> object:
    """The Schedule of `plan` on `scheduler` (a scheduler._Scheduler), with its Repeats;
    `progress`: a progress.Progress told every few thousand instructions."""
    program, trips = plan.program, plan.trips
    by_index = {b.index: b for b in plan}
    state = _Placer(scheduler, by_index, progress)
    count = max(by_index, default=-1) + 1
    i = 0
    for lp, kids in loop_tree(program.loops):
        state.straight(i, lp.first)
        _loop(state, lp, kids, _trips(lp, trips), trips, plan.rows)
        i = lp.end
    state.straight(i, count)
    sched = scheduler.sched
    sched.repeats = state.repeats
    return sched


class _Placer:
    """Places instruction copies at consecutive run positions, within the budget."""

    def __init__(self, scheduler, by_index: dict, progress=None):
        self.s, self.by_index, self.progress = scheduler, by_index, progress
        self.pos, self.placed, self.limit = 0, 0, max_instructions()
        self.repeats: list[Repeat] = []

    def place(self, i: int) -> None:
        b = self.by_index.get(i)
        if b is None:
            return
        if self.placed >= self.limit:
            raise RunError(error(
                "E662", f"the cost's loops reached the budget of {self.limit:,} "
                f"instructions, with no steady state to extrapolate from", b.loc(),
                b.inst.index, hint="raise the budget: --max-instructions N (API: "
                                   "max_instructions=N)"))
        self.s.place(Bound(replace(b.inst, index=self.pos), b.spec, b.args, b.mask,
                           b.engine, b.target))
        self.pos += 1
        self.placed += 1
        if self.progress is not None and not self.placed & 4095:
            self.progress.tick(self.placed, f"run position {self.pos:,}")

    def straight(self, lo: int, hi: int) -> None:
        for i in range(lo, hi):
            self.place(i)


def _trip(state: _Placer, lp, kids, trips: dict, rows: list) -> None:
    """One trip of lp's body; its inner loops each from their own steady state."""
    i = lp.first
    for sub, subkids in kids:
        state.straight(i, sub.first)
        _loop(state, sub, subkids, _trips(sub, trips), trips, rows)
        i = sub.end
    state.straight(i, lp.end)


def _loop(state: _Placer, lp, kids, n: int, trips: dict, rows: list) -> None:
    """The n trips of a loop: scheduled until its steady state, then counted."""
    slots = state.s.sched.slots
    loop_pos = state.pos
    seen = []  # per trip scheduled: (first slot, slot count, first position)
    for t in range(n):
        seen.append((len(slots), 0, state.pos))
        _trip(state, lp, kids, trips, rows)
        seen[-1] = (seen[-1][0], len(slots) - seen[-1][0], seen[-1][2])
        left = n - t - 1
        if left and len(seen) >= SAME_TRIPS and t < SAMPLE_TRIPS:
            period = _period(slots, seen[-SAME_TRIPS:])
            if period is not None:
                shift, step = period
                first, size, _ = seen[-1]
                state.s.advance(loop_pos, shift * left, step * left)
                state.pos += step * left
                state.repeats.append(Repeat(lp.name, first, size, shift, step, left))
                for row in rows:
                    if row["name"] == lp.name:
                        row["extrapolated"] = {"trips_scheduled": t + 1, "period_ns": shift}
                return


def _period(slots, trips) -> tuple | None:
    """(time shift, position shift) if each of `trips` is the one before it shifted by the
    same amounts, else None."""
    found = None
    for a, b in zip(trips, trips[1:]):
        if a[1] != b[1]:
            return None
        step = b[2] - a[2]
        shift = slots[b[0]].start_ns - slots[a[0]].start_ns if a[1] else 0.0
        if found is not None and (step != found[1] or not _close(shift, found[0], shift)):
            return None
        found = (shift, step)
        for j in range(a[1]):
            if not _same(slots[a[0] + j], slots[b[0] + j], shift, step):
                return None
    return found


def _same(x, y, shift: float, step: int) -> bool:
    if (x.op, x.engine, x.queue, x.queues, x.cycles, x.wait_kind, x.wait_tensor, x.tensors,
            x.busy_ns) != (y.op, y.engine, y.queue, y.queues, y.cycles, y.wait_kind,
                           y.wait_tensor, y.tensors, y.busy_ns):
        return False
    if (x.waited_on is None) != (y.waited_on is None) or (
            x.waited_on is not None and y.waited_on - x.waited_on != step):
        return False
    return all(_close(getattr(y, f), getattr(x, f) + shift, shift) or (
        f == "ready_ns" and getattr(x, f) == getattr(y, f) == 0.0)  # (no data to wait for)
        for f in ("start_ns", "end_ns", "ready_ns"))


def _close(a: float, b: float, scale: float) -> bool:
    return math.isclose(a, b, rel_tol=_REL, abs_tol=_REL * max(1.0, abs(scale)))
