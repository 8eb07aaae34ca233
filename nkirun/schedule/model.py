"""The schedule model: per-instruction cycles from each instruction's own `cycles(b, target)`,
in-order engines, DMA queues, and dependences on the exact elements of the views.

Rules (issue 4; reference §5 "each engine has its own in-order instruction stream"):
  * an engine runs its instructions in program order, one at a time;
  * a DMA transfer (engine "dma") takes `Target.dma_queues_for(P)` queues, the ones free
    earliest, and keeps them busy for its whole duration (targets.py documents the model);
  * an instruction starts when its engine (or its DMA queues) is free, every earlier writer
    of elements it reads has finished (read-after-write), and, for what it writes, every
    earlier reader (write-after-read) and writer (write-after-write) of the same elements
    has finished. "Same elements" is exact: views are boxes of per-dimension arithmetic
    progressions and two boxes of one tensor conflict only if every dimension intersects.

The model knows nothing about printing; views (views.py, report.py, trace.py) read a
`Schedule`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from math import gcd

from nkirun.ir import Program
from nkirun.hw.targets import COMPUTE_ENGINES, TARGETS, Target

# The clock assumed for an engine the docs give no clock for (e.g. the Sync engine).
FALLBACK_CLOCK_GHZ = 1.0

# Why an instruction started when it did.
READY, RAW, WAR, WAW, ENGINE, QUEUE = "ready", "data", "war", "waw", "engine", "dma_queue"


@dataclass(slots=True)
class Slot:
    index: int  # instruction index in the program
    op: str
    engine: str  # "vector", "scalar", "gpsimd", "tensor", "dma", ...
    queue: str  # the in-order queue(s) it ran on: the engine name, or "dma.q0-15"
    queues: tuple[int, ...]  # DMA queue numbers (empty for compute engines)
    cycles: int  # in the engine's own cycles (DMA: ns)
    start_ns: float
    end_ns: float
    formula: str
    assumed: bool  # the pages give no formula: nkirun's is an assumption
    wait_kind: str  # READY, RAW, WAR, WAW, ENGINE or QUEUE
    waited_on: int | None  # the instruction whose end set the start (None: t = 0)
    wait_tensor: str | None = None  # the tensor of a data dependence
    line: int = 0

    @property
    def duration_ns(self) -> float:
        return self.end_ns - self.start_ns

    @property
    def wait(self) -> str:
        """Why the instruction started when it did, in words."""
        k, t = self.waited_on, self.wait_tensor
        if self.wait_kind == RAW:
            return f"data from instruction {k} (tensor {t})"
        if self.wait_kind == WAR:
            return f"instruction {k} still reading {t} (write after read)"
        if self.wait_kind == WAW:
            return f"instruction {k} writes {t} first (write after write)"
        if self.wait_kind == ENGINE:
            return f"engine busy ({self.engine}: instruction {k})"
        if self.wait_kind == QUEUE:
            return f"DMA queue busy (instruction {k})"
        return "ready at start"


@dataclass
class Schedule:
    program: Program
    target: Target
    slots: list[Slot] = field(default_factory=list)

    @property
    def total_ns(self) -> float:
        """The makespan over all engines and queues."""
        return max((s.end_ns for s in self.slots), default=0.0)

    def clock(self, engine: str) -> float:
        c = self.target.clock(engine)
        return FALLBACK_CLOCK_GHZ if c is None else c

    def engine_names(self) -> list[str]:
        """The target's compute engines, DMA, then any other engine the program uses."""
        names = list(COMPUTE_ENGINES) + ["dma"]
        names += sorted({s.engine for s in self.slots} - set(names))
        return names

    def engines(self) -> dict[str, dict]:
        """Per engine: clock, busy time, utilisation (busy / makespan), instruction count.

        DMA: `busy_ns` is the time at least one queue is busy; `queue_busy_ns` sums the busy
        time of every queue and `queue_utilization` divides it by queues x makespan."""
        total = self.total_ns
        out = {n: {"clock_ghz": self.clock(n), "busy_ns": 0.0, "instructions": 0}
               for n in self.engine_names()}
        dma = []
        for s in self.slots:
            e = out[s.engine]
            e["instructions"] += 1
            if s.engine == "dma":
                dma.append(s)
            else:
                e["busy_ns"] += s.duration_ns
        d = out["dma"]
        d["busy_ns"] = _union_length([(s.start_ns, s.end_ns) for s in dma])
        d["queues"] = self.target.dma_queues
        d["queue_busy_ns"] = sum(s.duration_ns * len(s.queues) for s in dma)
        d["queue_utilization"] = (d["queue_busy_ns"] / (self.target.dma_queues * total)
                                  if total else 0.0)
        for e in out.values():
            e["utilization"] = e["busy_ns"] / total if total else 0.0
        return out

    def bottleneck(self) -> str | None:
        """The engine busy longest (None for an empty program)."""
        engines = self.engines()
        name = max(engines, key=lambda n: engines[n]["busy_ns"], default=None)
        return name if name is not None and engines[name]["busy_ns"] > 0 else None

    def critical_path(self) -> list[Slot]:
        """From t = 0 to the last-finishing instruction, each step the one whose end set the
        next one's start (data, engine or queue): the chain that decides the makespan."""
        if not self.slots:
            return []
        by_index = {s.index: s for s in self.slots}
        s = max(self.slots, key=lambda x: (x.end_ns, -x.index))
        path = [s]
        while s.waited_on is not None:
            s = by_index[s.waited_on]
            path.append(s)
        return path[::-1]

    def notes(self) -> list[str]:
        """The cost notes of the instructions used (SPEC.cost_note / cost_assumed) and any
        engine without a documented clock."""
        out, seen = [], set()
        for b_op, spec in self._specs_used():
            if spec.cost_note:
                out.append(f"{b_op}: {spec.cost_note}")
            if spec.cost_assumed and not spec.cost_note:
                out.append(f"{b_op}: no cost formula is documented; nkirun assumes "
                           f"{spec.cost_formula}")
            seen.add(b_op)
        for n in self.engine_names():
            if n != "dma" and self.target.clock(n) is None:
                out.append(f"engine {n}: no documented clock; {FALLBACK_CLOCK_GHZ:g} GHz "
                           "assumed")
        return out

    def _specs_used(self):
        from nkirun.isa import REGISTRY
        seen = []
        for s in self.slots:
            if s.op not in seen:
                seen.append(s.op)
        return [(op, REGISTRY[op]) for op in seen if op in REGISTRY]


def _union_length(intervals: list[tuple[float, float]]) -> float:
    total, cur_s, cur_e = 0.0, None, None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


# ---- exact overlap of views ------------------------------------------------------------------
# A view selects, per tensor dimension, the arithmetic progression start + k*step,
# k = 0..count-1 (views.Resolved.box); the selected elements are the Cartesian product.

def _ap_intersect(s1: int, c1: int, t1: int, s2: int, c2: int, t2: int) -> bool:
    """Whether {s1 + i*t1 : i < c1} and {s2 + j*t2 : j < c2} share an integer."""
    if c1 == 1:
        t1 = 1
    if c2 == 1:
        t2 = 1
    lo = max(s1, s2)
    hi = min(s1 + (c1 - 1) * t1, s2 + (c2 - 1) * t2)
    if lo > hi:
        return False
    if t1 == 1 and t2 == 1:
        return True
    if c1 == 1:
        return (s1 - s2) % t2 == 0
    if c2 == 1:
        return (s2 - s1) % t1 == 0
    # x = s1 + i*t1 = s2 + j*t2: solvable iff gcd | (s2 - s1); the solutions form one
    # residue class modulo lcm(t1, t2) (Chinese remainder theorem). Is one in [lo, hi]?
    g = gcd(t1, t2)
    d = s2 - s1
    if d % g:
        return False
    m = t2 // g
    i0 = (d // g) * pow(t1 // g, -1, m) % m if m > 1 else 0
    x0, period = s1 + i0 * t1, t1 * m
    x = x0 - ((x0 - lo) // period) * period  # the smallest solution >= lo
    return x <= hi


def overlaps(box_a, box_b) -> bool:
    """Whether two boxes of the same tensor share any element (exact)."""
    if box_a == box_b:
        return True
    for (s1, c1, t1), (s2, c2, t2) in zip(box_a, box_b):
        if not _ap_intersect(s1, c1, t1, s2, c2, t2):
            return False
    return True


def _ap_contains(s1: int, c1: int, t1: int, s2: int, c2: int, t2: int) -> bool:
    """Whether progression 2 is a subset of progression 1."""
    e1, e2 = s1 + (c1 - 1) * t1, s2 + (c2 - 1) * t2
    if not (s1 <= s2 and e2 <= e1 and (s2 - s1) % t1 == 0):
        return False
    return c2 == 1 or t2 % t1 == 0


def contains(box_a, box_b) -> bool:
    """Whether every element of box_b is in box_a (same tensor)."""
    if box_a == box_b:
        return True
    return all(_ap_contains(*a, *b) for a, b in zip(box_a, box_b))


# ---- the scheduler ---------------------------------------------------------------------------
class _Tensor:
    """The accesses of one tensor that can still delay a later instruction, keyed by box:
    box -> (end_ns, instruction) for writes and for reads.

    Dominated accesses are dropped, so the maps stay small and scheduling stays linear:
    a new write replaces the write and the read of the identical box (it waited for both,
    so it ends after them); a new read replaces the read of the identical box if it ends no
    earlier. When a map has doubled since the last sweep, a sweep also drops the accesses a
    newer one covers (`contains`), at amortised O(1) per access. Dropping never changes a
    start time: whatever overlaps the dropped access overlaps the newer one, which ends no
    earlier.

    `write_end` / `read_end` bound the ends in each map from above, so the scheduler skips
    scanning a map that cannot delay an instruction any further (most of them, in traces)."""

    __slots__ = ("writes", "reads", "limit", "write_end", "read_end")

    def __init__(self):
        self.writes: dict[tuple, tuple[float, int]] = {}
        self.reads: dict[tuple, tuple[float, int]] = {}
        self.limit = _SWEEP_MIN
        self.write_end = self.read_end = 0.0

    def wrote(self, box, end: float, index: int) -> None:
        self.writes[box] = (end, index)
        if end > self.write_end:
            self.write_end = end
        self.reads.pop(box, None)
        if len(self.writes) + len(self.reads) > self.limit:
            self.writes = {b: a for b, a in self.writes.items() if b == box
                           or not contains(box, b)}
            self.reads = {b: a for b, a in self.reads.items() if not contains(box, b)}
            self._relimit()

    def read(self, box, end: float, index: int) -> None:
        cur = self.reads.get(box)
        if cur is None or cur[0] <= end:
            self.reads[box] = (end, index)
            if end > self.read_end:
                self.read_end = end
        if len(self.writes) + len(self.reads) > self.limit:
            self.reads = {b: a for b, a in self.reads.items() if b == box
                          or not (a[0] <= end and contains(box, b))}
            self._relimit()

    def _relimit(self) -> None:
        self.limit = max(_SWEEP_MIN, 2 * (len(self.writes) + len(self.reads)))


_SWEEP_MIN = 16


def _operands(spec, cache: dict) -> tuple[tuple[str, bool], ...]:
    ops = cache.get(spec.name)
    if ops is None:
        from nkirun.isa.spec import VIEW_KINDS
        ops = tuple((p.name, p.out) for p in spec.params if p.kind in VIEW_KINDS)
        cache[spec.name] = ops
    return ops


def _costed(b, target: Target, op_cache: dict) -> tuple:
    """What the scheduler needs of a bound instruction, a function of its args, engine and
    the target only: (cycles, reads, writes, DMA queues it takes), reads and writes as
    (tensor name, box)."""
    from nkirun.isa.common import dma_partitions
    from nkirun.isa.spec import views_of
    from nkirun.source.operands import Resolved
    spec, args = b.spec, b.args
    reads, writes = [], []
    for name, out in _operands(spec, op_cache):
        for r in views_of(args.get(name)):
            (writes if out else reads).append((r.decl.name, r.box))
    reads_out = getattr(spec, "reads_out", None)
    if reads_out is not None:  # e.g. an accumulating matmul also reads its dst
        reads += [(args[n].decl.name, args[n].box) for n in reads_out(b)
                  if isinstance(args.get(n), Resolved)]
    queues = target.dma_queues_for(dma_partitions(b)) if b.engine == "dma" else 0
    return int(spec.cycles(b, target)), tuple(reads), tuple(writes), queues


def _queue_label(queues: tuple[int, ...]) -> str:
    if len(queues) == 1:
        return f"dma.q{queues[0]}"
    if queues[-1] - queues[0] == len(queues) - 1:
        return f"dma.q{queues[0]}-{queues[-1]}"
    return "dma.q" + ",".join(map(str, queues))


def schedule(program: Program, bound, target: Target | None = None) -> Schedule:
    """Schedule the bound (validated) instructions of `program` on `target` (default: the
    program's own target). Linear in the number of instructions (see _Tensor)."""
    target = target or TARGETS[program.target]
    sched = Schedule(program, target)
    slots = sched.slots
    clocks: dict[str, float] = {}
    engine_free: dict[str, tuple[float, int | None]] = {}
    nq = target.dma_queues
    all_queues = tuple(range(nq))
    q_free, q_last = [0.0] * nq, [None] * nq
    labels: dict[tuple[int, ...], str] = {}
    tensors: dict[str, _Tensor] = {}
    op_cache: dict = {}
    # Traces repeat instructions: validate.bind gives identical ones one args dict (see
    # isa.spec.Bound), so their cycles and accesses are computed once, keyed by its id;
    # likewise each pair of boxes is compared once. Every key's object stays alive in
    # `costed` while this runs, so no id is reused.
    costed: dict[tuple[int, str], tuple] = {}
    overlap_memo: dict[tuple[int, int], bool] = {}

    def overlap(a, b) -> bool:
        key = (id(a), id(b))
        hit = overlap_memo.get(key)
        if hit is None:
            hit = overlap_memo[key] = overlaps(a, b)
        return hit

    for b in bound:
        spec, engine, index = b.spec, b.engine, b.inst.index
        ckey = (id(b.args), engine)
        c = costed.get(ckey)
        if c is None:
            c = costed[ckey] = (*_costed(b, target, op_cache), b.args)  # (args: kept alive)
        cycles, reads, writes, n, _ = c
        clock = clocks.get(engine)
        if clock is None:
            clock = clocks[engine] = sched.clock(engine)

        # data: the latest-ending conflicting access decides
        ready, dep, kind, dep_tensor = 0.0, None, READY, None
        for name, box in reads:
            st = tensors.get(name)
            if st is not None and st.write_end > ready:
                for wbox, (end, k) in st.writes.items():
                    if end > ready and (wbox is box or overlap(wbox, box)):
                        ready, dep, kind, dep_tensor = end, k, RAW, name
        for name, box in writes:
            st = tensors.get(name)
            if st is None:
                continue
            if st.write_end > ready:
                for wbox, (end, k) in st.writes.items():
                    if end > ready and (wbox is box or overlap(wbox, box)):
                        ready, dep, kind, dep_tensor = end, k, WAW, name
            if st.read_end > ready:
                for rbox, (end, k) in st.reads.items():
                    if end > ready and (rbox is box or overlap(rbox, box)):
                        ready, dep, kind, dep_tensor = end, k, WAR, name

        # the engine, or the DMA queues (the n that are free earliest)
        if engine == "dma":
            if n >= nq:
                queues = all_queues
                free = max(q_free)
                blocker = q_last[q_free.index(free)]
            else:
                queues = tuple(sorted(sorted(all_queues, key=q_free.__getitem__)[:n]))
                last_q = max(queues, key=q_free.__getitem__)
                free, blocker = q_free[last_q], q_last[last_q]
            busy_kind = QUEUE
            label = labels.get(queues)
            if label is None:
                label = labels[queues] = _queue_label(queues)
        else:
            queues = ()
            free, blocker = engine_free.get(engine, (0.0, None))
            busy_kind, label = ENGINE, engine

        # a data dependence wins ties: it is the more informative reason
        if dep is not None and ready >= free:
            start = ready
        elif blocker is not None and free > 0:
            start, dep, kind, dep_tensor = free, blocker, busy_kind, None
        else:
            start, dep, kind, dep_tensor = 0.0, None, READY, None
        end = start + cycles / clock
        if queues is all_queues:  # (the usual DMA: one list each, not nq stores)
            q_free, q_last = [end] * nq, [index] * nq
        elif queues:
            for q in queues:
                q_free[q], q_last[q] = end, index
        else:
            engine_free[engine] = (end, index)

        for name, box in reads:
            st = tensors.get(name)
            if st is None:
                st = tensors[name] = _Tensor()
            st.read(box, end, index)
        for name, box in writes:
            st = tensors.get(name)
            if st is None:
                st = tensors[name] = _Tensor()
            st.wrote(box, end, index)

        slots.append(Slot(index, spec.name, engine, label, queues, cycles, start, end,
                          spec.cost_formula, spec.cost_assumed, kind, dep, dep_tensor,
                          b.inst.loc.line))
    return sched
