"""Costing a program with runtime loops: the bound instructions repeated as they run.

The scheduler places a straight list of instructions. A loop body is in the program once;
this layer hands the scheduler the body once per iteration, in execution order, each copy
numbered by its position in that order (the cost report's instruction numbers are then
positions in the run; `line` still names the source). The trip counts come from

* the loop itself, for a `for` loop with constant bounds ("static");
* `--trip NAME=N` (API: trips={"NAME": N}), an assumption applied to every entry of the
  loop and stated in the report ("assumed");
* else the data: the program runs (its `file:`/`fill:`/`data:` tensors, a kernel's
  `--input`s) and the order it really took is costed ("data");

and a loop none of these can count is E657, naming it. Branching itself costs nothing and
waits for nothing in this model (the sequencers' register reads are not scheduled).
"""
from __future__ import annotations

from dataclasses import replace

from nkirun.isa.bound import Bound
from nkirun.control import assumed_order, missing_trip, static_trips, summary
from nkirun.diagnostics import NkirunError, RunError, error
from nkirun.schedule import steady


def expand(program, bound, trips: dict | None = None, run=None) -> tuple[list, list]:
    """(the bound instructions in execution order, one summary row per loop).
    `run()`: executes the program on its data and returns the Machine (None: no data)."""
    if not program.loops:
        return bound, []
    trips = _both_cores(program, dict(trips or {}))
    _check_trips(program, trips)
    dynamic = [lp for lp in program.loops if static_trips(lp) is None]
    count = max((b.index for b in bound), default=-1) + 1
    if (trips or not dynamic) and program.cores == 1 and not _missing(program, trips) \
            and steady.expanded_length(program, bound, trips) > steady.EXTRAPOLATE_ABOVE:
        rows = steady.summary_rows(program, trips, {lp.name: "assumed" for lp in dynamic})
        return steady.SteadyPlan(program, bound, trips, rows), rows  # (schedule() knows it)
    if trips or not dynamic:
        order, counts = assumed_order(program, count, trips)
        source = {lp.name: "assumed" for lp in dynamic}
    elif run is None:
        raise RunError([missing_trip(lp) for lp in dynamic])
    else:
        order, counts = _from_data(program, run, dynamic)
        source = {lp.name: "data" for lp in dynamic}
    by_index = {b.index: b for b in bound}
    seq = [by_index[i] for i in order if i in by_index]
    if len(seq) != len(set(map(id, seq))):  # repeated: each copy its own position
        seq = [Bound(replace(b.inst, index=k), b.spec, b.args, b.mask, b.engine, b.target)
               for k, b in enumerate(seq)]
    return seq, summary(program, counts, source)


def _missing(program, trips: dict) -> bool:
    """Whether a dynamic loop has no trip count (assumed_order says which: E657)."""
    return any(static_trips(lp) is None and lp.name not in trips for lp in program.loops)


def _both_cores(program, trips: dict) -> dict:
    """`--trip NAME=N` where NAME is no loop's name but the loops of both cores are
    NAME@core0 and NAME@core1 (a kernel traced once per core): N for each of them."""
    names = {lp.name for lp in program.loops}
    out = {}
    for name, n in trips.items():
        per_core = [x for x in names if "@core" in x and x.rsplit("@core", 1)[0] == name]
        if name in names or not per_core:
            out[name] = n
        else:
            out.update({x: n for x in per_core})
    return out


def _from_data(program, run, dynamic):
    order: list[int] = []
    try:
        m = run(lambda b, _m: order.append(b.index))
    except NkirunError as e:
        why = f" (running the program to count it failed: {e.diagnostics[0].message})"
        raise RunError([missing_trip(lp, why) for lp in dynamic]) from None
    return order, m.trips


def _check_trips(program, trips: dict) -> None:
    names = {lp.name for lp in program.loops if static_trips(lp) is None}
    for name, n in trips.items():
        if name not in names:
            from nkirun.diagnostics import did_you_mean
            raise NkirunError(error(
                "E658", f"--trip {name}: the program has no dynamic loop `{name}`",
                hint=did_you_mean(name, names) or (
                    "its dynamic loops: " + ", ".join(sorted(names)) if names
                    else "every loop of this program has constant bounds")))
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise NkirunError(error("E658", f"--trip {name}={n}: the count must be a "
                                    "non-negative integer"))


def parse_trips(values) -> dict:
    """`--trip NAME=N` options -> {NAME: N} (E658 for a malformed one)."""
    out = {}
    for text in values or ():
        name, eq, n = str(text).partition("=")
        if not eq or not name.strip() or not n.strip().isdigit():
            raise NkirunError(error("E658", f"--trip {text}: write NAME=N, N a non-negative "
                                    "integer (e.g. --trip i=4)"))
        out[name.strip()] = int(n)
    return out
