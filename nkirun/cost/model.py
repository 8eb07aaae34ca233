"""The schedule model: per-instruction cycles from the instruction table, in-order engine
queues, and data dependences on exact byte-ranges of the views.

The model knows nothing about printing; views (report.py, trace.py) read a `Schedule`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir import Program
from ..targets import TARGETS, Target

DMA_CLOCK_GHZ = 1.0  # DMA "cycles" are nanoseconds


@dataclass
class Slot:
    index: int  # instruction index in the program
    op: str
    engine: str  # engine name, for dma: "dma"
    queue: str  # the in-order queue it ran on (engine name, or dma queue "dma.q3")
    cycles: int
    start_ns: float
    end_ns: float
    formula: str
    assumed: bool
    wait: str  # why it started when it did
    waited_on: int | None  # the instruction it waited for (None: engine/queue or t=0)
    line: int = 0


@dataclass
class Schedule:
    program: Program
    target: Target
    slots: list[Slot] = field(default_factory=list)

    @property
    def total_ns(self) -> float:
        return max((s.end_ns for s in self.slots), default=0.0)

    def clock(self, engine: str) -> float:
        return self.target.clocks_ghz.get(engine, DMA_CLOCK_GHZ)

    def engines(self) -> dict[str, dict]:
        out: dict[str, dict] = {}
        for s in self.slots:
            e = out.setdefault(s.engine, {"clock_ghz": self.clock(s.engine), "busy_ns": 0.0,
                                          "instructions": 0})
            e["busy_ns"] += s.end_ns - s.start_ns
            e["instructions"] += 1
        total = self.total_ns or 1.0
        for name, e in out.items():
            busy = e["busy_ns"]
            if name == "dma":  # 16 queues run in parallel
                busy = busy / self.target.dma_queues
            e["utilization"] = min(1.0, busy / total)
        return out

    def critical_path(self) -> list[Slot]:
        """Walk back from the last-finishing instruction through what each waited on."""
        if not self.slots:
            return []
        by_index = {s.index: s for s in self.slots}
        s = max(self.slots, key=lambda x: x.end_ns)
        path = [s]
        while s.waited_on is not None:
            s = by_index[s.waited_on]
            path.append(s)
        return path[::-1]


def _overlaps(a, b) -> bool:
    """Whether two resolved views of the same tensor share any element (exact boxes)."""
    if a.decl.name != b.decl.name:
        return False
    for (s1, c1, st1), (s2, c2, st2) in zip(a.box, b.box):
        e1, e2 = s1 + (c1 - 1) * st1, s2 + (c2 - 1) * st2
        if e1 < s2 or e2 < s1:
            return False
        if st1 == st2 == 1 or c1 == 1 or c2 == 1:
            if c1 == 1 and c2 == 1 and s1 != s2:
                return False
            if c1 == 1 and (s1 - s2) % st2 != 0 and c2 > 1:
                return False
            if c2 == 1 and (s2 - s1) % st1 != 0 and c1 > 1:
                return False
            continue
        # strided in both: do the index sets intersect? (small check via gcd)
        from math import gcd
        if (s2 - s1) % gcd(st1, st2) != 0:
            return False
    return True


def schedule(program: Program, bound, target: Target | None = None) -> Schedule:
    target = target or TARGETS[program.target]
    sched = Schedule(program, target)
    engine_free: dict[str, tuple[float, int | None]] = {}
    dma_free = [(0.0, None)] * target.dma_queues
    accesses: list[tuple] = []  # (resolved, is_write, end_ns, index)
    for b in bound:
        engine = b.engine
        cycles = int(b.spec.cycles(b, target))
        dur = cycles / sched.clock(engine)
        reads, writes = [], []
        for p in b.spec.params:
            r = b.tile(p.name)
            if r is not None:
                (writes if p.out else reads).append(r)
        ready, dep = 0.0, None
        for r_prev, was_write, end, idx in accesses:
            hit = (was_write and any(_overlaps(r_prev, r) for r in reads + writes)) or (
                not was_write and any(_overlaps(r_prev, w) for w in writes))
            if hit and end > ready:
                ready, dep = end, idx
        if engine == "dma":
            q = min(range(len(dma_free)), key=lambda i: dma_free[i][0])
            free, prev = dma_free[q]
            queue = f"dma.q{q}"
        else:
            free, prev = engine_free.get(engine, (0.0, None))
            queue = engine
        if free > ready:
            start, why, on = free, f"engine busy ({queue}) until instruction {prev} finished", prev
        elif dep is not None:
            start, why, on = ready, f"data from instruction {dep}", dep
        else:
            start, why, on = 0.0, "ready at start", None
        end = start + dur
        if engine == "dma":
            dma_free[q] = (end, b.index)
        else:
            engine_free[engine] = (end, b.index)
        for r in reads:
            accesses.append((r, False, end, b.index))
        for r in writes:
            accesses.append((r, True, end, b.index))
        sched.slots.append(Slot(b.index, b.op, engine, queue, cycles, start, end,
                                b.spec.cost_formula, b.spec.cost_assumed, why, on,
                                b.inst.loc.line))
    return sched
