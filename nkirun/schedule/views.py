"""The views of a Schedule (llvm-mca style): each a pure function of the schedule returning
plain data (what `--format json` prints); report.py draws them as text.

  summary   makespan, per-engine clock/busy/utilisation, bottleneck engine, notes
  table     one row per instruction: op, engine, cycles, start/end, wait reason, formula
  timeline  per engine / DMA-queue group, the instructions it ran (a Gantt chart)
  critical  the chain of instructions that decides the makespan
"""
from __future__ import annotations

from nkirun.schedule.model import Schedule, Slot, queue_label

VIEWS = ("summary", "table", "timeline", "critical", "advice")

MODEL_ASSUMPTIONS = (
    "cycles come from each instruction's documented formula (MIN_II = 64 on every target); "
    "time = cycles / the executing engine's clock; constants: nkirun/hw/cost_tables.py",
    "each engine runs its instructions in program order, one at a time; engines run in "
    "parallel, synchronised only by data dependences",
    "an instruction waits for earlier writers of the elements it reads and, for what it "
    "writes, for earlier readers and writers of the same elements (exact view overlap); a "
    "compute instruction reading a compute write also waits the ~143 ns commit latency",
    "DMA: engine e streams partitions 8e..8e+7 at the per-engine rate plus a descriptor "
    "overhead per contiguous run; the ~1.3 us latency overlaps other transfers in flight; "
    "engines take idle time in any order (a load never waits behind a waiting store); HBM "
    "bandwidth caps the total",
    "not modelled: SBUF/PSUM port conflicts between engines, instruction fetch, PSUM bank "
    "conflicts, the compiler's reordering (reported as hints by --compare)",
)


def _r(x: float) -> float:
    return round(x, 3)


def summary(s: Schedule) -> dict:
    engines = s.engines()
    path = s.critical_path()
    out = {
        "program": s.program.path,
        "target": s.target.name,
        "core": s.target.core,
        "total_ns": _r(s.total_ns),
        "launch_ns": _r(s.launch_ns),
        "kernel_ns": _r(s.kernel_ns),
        "instruction_count": s.instruction_count,
        "engines": {n: {k: (_r(v) if isinstance(v, float) else v) for k, v in e.items()}
                    for n, e in engines.items()},
        "bottleneck": s.bottleneck(),
        **({"cores": [_core_summary(s.core_view(c)) for c in range(s.program.cores)]}
           if s.program.cores > 1 else {}),
        "critical_path_length": len(path),
        "notes": s.notes(),
        "assumptions": list(MODEL_ASSUMPTIONS),
    }
    if s.loops:  # runtime loops and where their trip counts came from (schedule/trips.py)
        out["loops"] = [dict(row) for row in s.loops]
        out["assumptions"] += [f"loop `{r['name']}` runs {r['iterations']} iterations "
                               f"(--trip {r['name']}={r['iterations'] // max(r['entries'], 1)} "
                               "per entry, assumed)" for r in s.loops if r["trips"] == "assumed"]
    return out


def _core_summary(s: Schedule) -> dict:
    """One core's share of a two-core schedule: its instructions, end and engines."""
    return {"instruction_count": s.instruction_count, "end_ns": _r(s.total_ns),
            "engines": {n: {k: (_r(v) if isinstance(v, float) else v) for k, v in e.items()}
                        for n, e in s.engines().items() if e["instructions"]}}


def instruction_row(x: Slot, own_ns: float) -> dict:
    """`cycles` in the engine's own cycles (DMA, modelled in ns, counts them at its nominal
    1 GHz: engines.dma.clock_ghz), `ns` = cycles / clock for every row (own_ns)."""
    row = {"index": x.index, "op": x.op, "engine": x.engine, "queue": x.queue,
           "queues": list(x.queues), "cycles": x.cycles, "ns": _r(own_ns),
           "start_ns": _r(x.start_ns),
           "end_ns": _r(x.end_ns), "duration_ns": _r(x.duration_ns), "formula": x.formula,
           "assumed": x.assumed, "wait": x.wait, "wait_kind": x.wait_kind,
           "waited_on": x.waited_on, "wait_tensor": x.wait_tensor, "line": x.line}
    if x.inst_name:  # the program's name= label, only where one was given
        row["name"] = x.inst_name
    return row


def table(s: Schedule) -> list[dict]:
    if s.program.cores > 1:  # two cores: each row says which core ran it
        return [dict(instruction_row(x, s.own_ns(x)), core=x.core) for x in s.slots]
    return [instruction_row(x, s.own_ns(x)) for x in s.slots]


def tracks(s: Schedule) -> list[tuple[str, list[Slot]]]:
    """(track name, its slots in start order): each engine used, then each group of DMA
    queues that ran exactly the same transfers ("dma.q0-15" when all 16 moved together).
    Two cores: core 0's tracks, then core 1's, named "core0.vector", "core1.dma.q0-15"."""
    if s.program.cores > 1:
        return [(f"core{c}.{name}", slots) for c in range(s.program.cores)
                for name, slots in tracks(s.core_view(c))]
    out = []
    for name in s.engine_names():
        if name == "dma":
            continue
        got = [x for x in s.slots if x.engine == name]
        if got:
            out.append((name, got))
    # queues ran the same transfers when every distinct queue set holds both or neither
    # (no list of slots per queue: 16 of them on a matmul's 64,000 transfers)
    moved = [x for x in s.slots if x.queues]
    sets = list(dict.fromkeys(x.queues for x in moved))
    groups: dict[tuple[bool, ...], list[int]] = {}
    for q in sorted({q for qs in sets for q in qs}):
        groups.setdefault(tuple(q in qs for qs in sets), []).append(q)
    for qs in sorted(groups.values()):
        out.append((queue_label(qs), [x for x in moved if qs[0] in x.queues]))
    return out


# The text Gantt chart's letter for each engine, the same in every report (a letter picked
# per report for each op changed meaning from one program to the next). Consecutive
# instructions on a track alternate upper and lower case, so each one shows; the table and
# the trace name them.
ENGINE_LETTERS = {"tensor": "T", "vector": "V", "scalar": "S", "gpsimd": "G", "dma": "D",
                  "sync": "Y"}


def engine_letter(engine: str) -> str:
    return ENGINE_LETTERS.get(engine, "?")


def legend(s: Schedule) -> dict[str, str]:
    """engine -> its timeline letter, for the engines the schedule uses."""
    used = {x.engine for x in s.slots}
    return {e: engine_letter(e) for e in s.engine_names() if e in used}


def bar(slots: list[Slot], total: float, width: int) -> str:
    """A track's timeline: its engine's letter over each instruction's time, upper and
    lower case by turns; `.` idle."""
    return "".join("." if k is None else
                   (engine_letter(slots[k].engine).lower() if k % 2 else
                    engine_letter(slots[k].engine))
                   for k in _gantt_positions(slots, total, width))


def gantt_cells(slots: list[Slot], total: float, width: int) -> list[Slot | None]:
    """Split [0, total) into `width` cells; each cell shows the slot covering most of it
    (None: idle). Any busy time in a cell shows, however short."""
    return [None if k is None else slots[k] for k in _gantt_positions(slots, total, width)]


def _gantt_positions(slots: list[Slot], total: float, width: int) -> list[int | None]:
    """gantt_cells as positions in `slots`."""
    cover: list[tuple[float, int | None]] = [(0.0, None)] * width
    if total <= 0 or width <= 0:
        return [None] * width
    cell = total / width
    for k, x in enumerate(slots):
        first = min(width - 1, int(x.start_ns / cell))
        last = min(width - 1, int(x.end_ns / cell))
        if x.end_ns <= x.start_ns:
            last = first
        for j in range(first, last + 1):
            lo, hi = max(x.start_ns, j * cell), min(x.end_ns, (j + 1) * cell)
            amount = hi - lo if hi > lo else 1e-12  # zero-length: still mark it
            if amount > cover[j][0]:
                cover[j] = (amount, k)
    return [c[1] for c in cover]


def timeline(s: Schedule, width: int = 64) -> dict:
    total = s.total_ns
    rows = []
    for name, slots in tracks(s):
        rows.append({"track": name,
                     "busy_ns": _r(sum(x.duration_ns for x in slots)),
                     "instructions": [x.index for x in slots],
                     "bar": bar(slots, total, width)})
    return {"total_ns": _r(total), "width": width, "legend": legend(s), "rows": rows}


def critical(s: Schedule, steps=None) -> dict:
    """The critical-path view; `steps(count, dicts)` stands in for the list of steps when
    given (show/cost_json.py: each encoded as it is made, not all held at once)."""
    path = s.critical_path()
    total = s.total_ns
    made = (_step(x, total) for x in path)
    return {"total_ns": _r(total), "length": len(path),
            "by_engine": _shares(path, total, lambda x: x.engine),
            "by_op": _shares(path, total, lambda x: x.op),
            "steps": list(made) if steps is None else steps(len(path), made)}


def _step(x: Slot, total: float) -> dict:
    return {"index": x.index, "op": x.op, "engine": x.queue,
            "start_ns": _r(x.start_ns), "end_ns": _r(x.end_ns),
            "duration_ns": _r(x.duration_ns),
            "share": round(x.duration_ns / total, 4) if total else 0.0,
            "after": x.wait}


def _shares(path: list[Slot], total: float, key) -> dict:
    """Time on the critical path per key (engine or op), largest first."""
    from nkirun.schedule.model import path_contributions
    acc: dict[str, list] = {}
    for x, t in zip(path, path_contributions(path)):
        a = acc.setdefault(key(x), [0.0, 0])
        a[0] += t
        a[1] += 1
    return {k: {"ns": _r(ns), "share": round(ns / total, 4) if total else 0.0,
                "instructions": n}
            for k, (ns, n) in sorted(acc.items(), key=lambda kv: -kv[1][0])}
