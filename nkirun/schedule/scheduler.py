"""The scheduler: a Schedule from the bound instructions (rules in model.py's docstring)."""
from __future__ import annotations

from nkirun.hw.targets import TARGETS, Target
from nkirun.ir import Program
from nkirun.schedule.model import ENGINE, QUEUE, RAW, READY, WAR, WAW, Schedule, Slot, queue_label
from nkirun.schedule.overlap import contains, overlaps


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


_SWEEP_MIN = 16


def _costed(b, target: Target) -> tuple:
    """What the scheduler needs of a bound instruction, a function of its operands, engine
    and the target only: (cycles, reads, writes, DMA queues it takes, tensors touched), reads and
    writes as (tensor name, box)."""
    from nkirun.isa.common import dma_partitions
    acc = b.accesses()
    reads = tuple((r.decl.name, r.box) for _, r in acc.reads)
    writes = tuple((r.decl.name, r.box) for _, r in acc.writes)
    queues = target.dma_queues_for(dma_partitions(b)) if b.engine == "dma" else 0
    names = tuple(dict.fromkeys(n for n, _ in reads + writes))
    return int(b.spec.cycles(b, target)), reads, writes, queues, names


class _Scheduler:
    """One pass over the instructions in program order; each is placed by `place`."""

    def __init__(self, program: Program, target: Target):
        self.target = target
        self.sched = Schedule(program, target)
        self.clocks: dict[str, float] = {}
        self.engine_free: dict[str, tuple[float, int | None]] = {}
        nq = target.dma_queues
        self.all_queues = tuple(range(nq))
        self.q_free, self.q_last = [0.0] * nq, [None] * nq
        self.labels: dict[tuple[int, ...], str] = {}
        self.tensors: dict[str, _Tensor] = {}
        # Traces repeat instructions: bind interns the operands of identical ones into one
        # Operands object (checker/bound.py), so cycles and accesses are computed once per
        # (operands, engine); likewise each pair of boxes (kept alive by the operands) is
        # compared once.
        self.costed: dict[tuple, tuple] = {}
        self.overlap_memo: dict[tuple[int, int], bool] = {}

    def overlap(self, a, b) -> bool:
        key = (id(a), id(b))
        hit = self.overlap_memo.get(key)
        if hit is None:
            hit = self.overlap_memo[key] = overlaps(a, b)
        return hit

    def data_ready(self, reads, writes) -> tuple:
        """(time, instruction, kind, tensor) of the latest-ending earlier access that
        conflicts: a write under a read (RAW), a write or a read under a write (WAW, WAR).
        A map is scanned only if its upper bound of ends could beat what was found."""
        ready, dep, kind, dep_tensor = 0.0, None, READY, None
        tensors, overlap = self.tensors, self.overlap
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
            for accesses, bound, why in ((st.writes, st.write_end, WAW),
                                         (st.reads, st.read_end, WAR)):
                if bound > ready:
                    for other, (end, k) in accesses.items():
                        if end > ready and (other is box or overlap(other, box)):
                            ready, dep, kind, dep_tensor = end, k, why, name
        return ready, dep, kind, dep_tensor

    def resource(self, engine: str, n: int) -> tuple:
        """(queues, free time, blocking instruction, wait kind, label) of the engine, or of
        the n DMA queues that are free earliest."""
        if engine != "dma":
            free, blocker = self.engine_free.get(engine, (0.0, None))
            return (), free, blocker, ENGINE, engine
        q_free = self.q_free
        if n >= len(q_free):
            queues = self.all_queues
            free = max(q_free)
            blocker = self.q_last[q_free.index(free)]
        else:
            queues = tuple(sorted(sorted(self.all_queues, key=q_free.__getitem__)[:n]))
            last_q = max(queues, key=q_free.__getitem__)
            free, blocker = q_free[last_q], self.q_last[last_q]
        label = self.labels.get(queues)
        if label is None:
            label = self.labels[queues] = queue_label(queues)
        return queues, free, blocker, QUEUE, label

    def occupy(self, engine: str, queues: tuple, end: float, index: int) -> None:
        if queues is self.all_queues:  # (the usual DMA: one list each, not nq stores)
            self.q_free, self.q_last = [end] * len(queues), [index] * len(queues)
        elif queues:
            for q in queues:
                self.q_free[q], self.q_last[q] = end, index
        else:
            self.engine_free[engine] = (end, index)

    def record_accesses(self, reads, writes, end: float, index: int) -> None:
        for name, box in reads:
            st = self.tensors.get(name)
            if st is None:
                st = self.tensors[name] = _Tensor()
            st.read(box, end, index)
        for name, box in writes:
            st = self.tensors.get(name)
            if st is None:
                st = self.tensors[name] = _Tensor()
            st.wrote(box, end, index)

    def place(self, b) -> None:
        spec, engine, index = b.spec, b.engine, b.inst.index
        ckey = (b.args, engine)
        c = self.costed.get(ckey)
        if c is None:
            c = self.costed[ckey] = _costed(b, self.target)
        cycles, reads, writes, n, names = c
        clock = self.clocks.get(engine)
        if clock is None:
            clock = self.clocks[engine] = self.sched.clock(engine)
        ready, dep, kind, dep_tensor = self.data_ready(reads, writes)
        queues, free, blocker, busy_kind, label = self.resource(engine, n)
        # a data dependence wins ties: it is the more informative reason
        if dep is not None and ready >= free:
            start = ready
        elif blocker is not None and free > 0:
            start, dep, kind, dep_tensor = free, blocker, busy_kind, None
        else:
            start, dep, kind, dep_tensor = 0.0, None, READY, None
        end = start + cycles / clock
        self.occupy(engine, queues, end, index)
        self.record_accesses(reads, writes, end, index)
        self.sched.slots.append(Slot(index, spec.name, engine, label, queues, cycles, start, end,
                                     spec.cost_formula, spec.cost_assumed, kind, dep,
                                     dep_tensor, b.inst.loc.line, names,
                                     inst_name=b.args.get("name")))


def schedule(program: Program, bound, target: Target | None = None) -> Schedule:
    """Schedule the bound (validated) instructions of `program` on `target` (default: the
    program's own target). Linear in the number of instructions (see _Tensor)."""
    if program.cores > 1:  # both cores' engines in one schedule
        from nkirun.schedule.cores import schedule_cores
        return schedule_cores(program, bound, target or TARGETS[program.target])
    s = _Scheduler(program, target or TARGETS[program.target])
    for b in bound:
        s.place(b)
    return s.sched
