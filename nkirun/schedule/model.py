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

This module holds the result (`Schedule`, `Slot`); scheduler.py computes it, overlap.py
decides which accesses conflict. The model knows nothing about printing; views (views.py,
report.py, perfetto.py) read a `Schedule`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from operator import attrgetter

from nkirun.ir import Program
from nkirun.hw.targets import COMPUTE_ENGINES, Target

_INDEX, _START = attrgetter("index"), attrgetter("start_ns")
# The clock assumed for an engine the docs give no clock for (e.g. the Sync engine).
FALLBACK_CLOCK_GHZ = 1.0

# Why an instruction started when it did.
READY, RAW, WAR, WAW, ENGINE, QUEUE = "ready", "data", "war", "waw", "engine", "dma_queue"
# An instruction that computes again what an earlier one computed: elided (schedule/recompute.py).
RECOMPUTE = "recompute"
# Waiting for the compiler's spill or reload of an on-chip tensor (schedule/spills.py).
SPILL = "spill"
# Two-core programs: waiting for the other core at a meeting point (schedule/cores.py): the
# wait kind is the meeting-point instruction's name (e.g. core_barrier, sendrecv).


def meeting_words(kind: str) -> str | None:
    """How a report names a wait for the other core at meeting point `kind` (its spec's
    Meeting.wait_words), or None when `kind` is no meeting point."""
    from nkirun.isa import REGISTRY
    plain = (READY, RAW, WAR, WAW, ENGINE, QUEUE, RECOMPUTE, SPILL)
    spec = REGISTRY.get(kind) if kind not in plain else None
    return spec.meeting.wait_words if spec is not None and spec.meeting is not None else None


# What the instructions of one form on one engine share, one tuple per distinct value in a
# Slot's `facts` (the scheduler interns them): read as the slot's attributes of these names.
FACTS = ("op", "engine", "queue", "queues", "cycles", "formula", "assumed", "inst_name",
         "busy_ns", "dma_bytes", "dma_run", "hbm_bytes", "core")


def slot_facts(op: str, engine: str, queue: str, queues: tuple, cycles: int, formula: str,
               assumed: bool, inst_name: str | None = None, busy_ns: float = 0.0,
               dma_bytes: float = 0.0, dma_run: float = 0.0, hbm_bytes: float = 0.0,
               core: int = 0) -> tuple:
    """A Slot's `facts` (FACTS, in that order)."""
    return (op, engine, queue, queues, cycles, formula, assumed, inst_name, busy_ns, dma_bytes,
            dma_run, hbm_bytes, core)


@dataclass(slots=True)
class Slot:
    """One instruction's place in the schedule. Its own fields are what differs between
    instances of a form; `facts` (FACTS, read as attributes: op, engine, queue, queues,
    cycles, formula, assumed, inst_name, busy_ns, dma_bytes, dma_run, hbm_bytes, core) is
    one tuple shared by the slots that agree on all of them, so a slot is 10 fields, not 22
    (cost holds one per instruction: 99,328 on the matmul tutorial's v1)."""
    index: int  # instruction index in the program
    facts: tuple  # slot_facts(...), shared
    start_ns: float
    end_ns: float
    wait_kind: str  # READY, RAW, WAR, WAW, ENGINE or QUEUE
    waited_on: int | None  # the instruction whose end set the start (None: t = 0)
    wait_tensor: str | None = None  # the tensor of a data dependence
    line: int = 0
    tensors: tuple[str, ...] = ()  # the tensors it reads or writes (live ranges)
    ready_ns: float = 0.0  # when its data allowed it to start (before engine/queue waits)

    # facts: op; engine ("vector", "scalar", "gpsimd", "tensor", "dma", ...); queue (the
    # in-order queue(s) it ran on: the engine name, or "dma.q0-15"); queues (DMA queue
    # numbers, empty for compute engines); cycles (in the engine's own cycles; DMA, modelled
    # in ns: ns at its nominal 1 GHz); formula; assumed (the pages give no formula: nkirun's
    # is an assumption); inst_name (the program's `name=` label); busy_ns (DMA: engine-ns of
    # streaming, the sum over its engines); dma_bytes (DMA: bytes delivered); dma_run (DMA:
    # bytes per descriptor, the contiguous run, at most a row); hbm_bytes (DMA: bytes read
    # or written in HBM); core (the core that ran it, two-core programs)
    # (each read as an attribute: the properties are made from FACTS below the class)

    def replace(self, **changes) -> "Slot":
        """A copy with `changes` to any of its fields or FACTS (dataclasses.replace)."""
        from dataclasses import replace
        facts = list(self.facts)
        for i, name in enumerate(FACTS):
            if name in changes:
                facts[i] = changes.pop(name)
        return replace(self, facts=tuple(facts), **changes)

    @property
    def title(self) -> str:
        """op, with the `name=` label when the instruction has one."""
        return f"{self.op} (name={self.inst_name})" if self.inst_name else self.op

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
        if self.wait_kind == RECOMPUTE:
            return (f"recomputes instruction {k}'s value from unchanged inputs: elided, as the "
                    "compiler's common-subexpression elimination does")
        if self.wait_kind == SPILL:
            return f"the compiler's spill traffic (room for it, or reloading {t})"
        if meeting_words(self.wait_kind) is not None:
            return f"core {1 - self.core} reaching its {self.wait_kind} (after instruction {k})"
        return "ready at start"


for _k, _name in enumerate(FACTS):  # Slot.op is slot.facts[0], and so on
    setattr(Slot, _name, property(lambda x, k=_k: x.facts[k]))
del _k, _name


@dataclass(repr=False)
class Schedule:
    program: Program
    target: Target
    slots: list[Slot] = field(default_factory=list)
    # runtime loops: one row each (name, kind, line, entries, iterations, trips: "static",
    # "data" or "assumed"); schedule/trips.py
    loops: list[dict] = field(default_factory=list)
    # the compiler's spills booked on the DMA engines (schedule/spills.py): bytes, transfers,
    # the time instructions waited on them; empty when nothing spills
    spills: dict = field(default_factory=dict)
    # trips not scheduled, each a shifted copy of the trip before (schedule/steady.py)
    repeats: list = field(default_factory=list)
    # instructions whose engine the program left open, placed on the Scalar engine
    # (schedule/placement.py)
    placed_on_scalar: int = 0

    def __repr__(self) -> str:  # short: the Program it holds can be huge
        name = self.program.name or self.program.path
        return (f"<Schedule {name!r} on {self.target.name}: {len(self.slots):,} "
                f"instructions, total {self.total_ns:,.1f} ns>")

    @property
    def instruction_count(self) -> int:
        """Instructions scheduled, and those of the trips repeated (steady.py)."""
        if not self.repeats:
            return len(self.slots)
        from nkirun.schedule.steady import weights
        return sum(weights(self.slots, self.repeats))

    @property
    def total_ns(self) -> float:
        """The makespan over all engines and queues."""
        end = max((s.end_ns for s in self.slots), default=0.0)
        if self.repeats:  # (the last repeated trip's end)
            from nkirun.schedule.steady import repeat_ends
            end = max([end] + repeat_ends(self.slots, self.repeats))
        return end

    @property
    def launch_ns(self) -> float:
        """The fixed cost of one kernel call beyond the makespan (FITTED, hw/cost_tables.py)."""
        from nkirun.hw.cost_tables import cost_table
        return cost_table(self.target).kernel_launch_ns if self.slots else 0.0

    @property
    def kernel_ns(self) -> float:
        """What one call of the kernel takes on a device: the makespan + the launch cost
        (what nki.benchmark's nc_latency and the profiler's total_time measure)."""
        return self.total_ns + self.launch_ns

    def clock(self, engine: str) -> float:
        c = self.target.clock(engine.rpartition(".")[2] if engine.startswith("core")
                              else engine)  # ("core1.vector": a track of a two-core program)
        return FALLBACK_CLOCK_GHZ if c is None else c

    def own_ns(self, x: Slot) -> float:
        """An instruction's own time in ns: its cycles / its engine's clock (a DMA transfer
        on its own). Its slot (start -> end) can differ: it waits inside it, or hides its
        latency behind an earlier transfer."""
        return x.cycles / self.clock(x.engine)

    def engine_names(self) -> list[str]:
        """The target's compute engines, DMA, then any other engine the program uses."""
        names = list(COMPUTE_ENGINES) + ["dma"]
        names += sorted({s.engine for s in self.slots} - set(names))
        return names

    def engines(self) -> dict[str, dict]:
        """Per engine: clock, busy time, utilisation (busy / makespan), instruction count.

        DMA: `busy_ns` is the time at least one queue is busy; `queue_busy_ns` sums the busy
        time of every queue and `queue_utilization` divides it by queues x makespan."""
        total = self.total_ns * self.program.cores  # two cores: each engine twice
        out = {n: {"clock_ghz": self.clock(n), "busy_ns": 0.0, "instructions": 0}
               for n in self.engine_names()}
        dma = []
        weight = [1] * len(self.slots)
        if self.repeats:  # trips not scheduled run what the last one scheduled ran
            from nkirun.schedule.steady import weights
            weight = weights(self.slots, self.repeats)
        for s, n in zip(self.slots, weight):
            e = out[s.engine]
            e["instructions"] += n
            if s.engine == "dma":
                dma.append(s)
            else:
                e["busy_ns"] += n * s.duration_ns
        d = out["dma"]
        d["busy_ns"] = sum(_union_length([s for s in dma if s.core == c], spans=False)
                           for c in range(self.program.cores))
        d["queues"] = self.target.dma_queues * self.program.cores
        d["queue_busy_ns"] = sum(n * s.busy_ns for s, n in zip(self.slots, weight)
                                 if s.engine == "dma")
        spans = [(s.start_ns, s.end_ns) for s in dma] if self.repeats else []
        for r in self.repeats:  # each repeated trip: the DMA time its copy adds
            window = self.slots[r.first:r.first + r.count]
            more = [(s.start_ns + r.shift_ns, s.end_ns + r.shift_ns) for s in window
                    if s.engine == "dma"]
            if more:
                outer = weight[r.first] // (1 + r.times)  # (the outer loops' repeats)
                d["busy_ns"] += outer * r.times * (_union_length(spans + more)
                                                   - _union_length(spans))
        d["queue_utilization"] = (d["queue_busy_ns"] / (d["queues"] * total)
                                  if total else 0.0)
        for e in out.values():
            e["utilization"] = e["busy_ns"] / total if total else 0.0
        return out

    def core_view(self, core: int) -> "Schedule":
        """The slots one core ran (a two-core program), as a schedule of their own."""
        from dataclasses import replace
        return Schedule(replace(self.program, cores=1), self.target,
                        [x for x in self.slots if x.core == core])

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
        slot_of = _slot_finder(self.slots)
        s = max(self.slots, key=lambda x: (x.end_ns, -x.index))
        path = [s]
        while s.waited_on is not None:
            s = slot_of(s.waited_on) or self._repeated(s.waited_on, slot_of)
            path.append(s)
        return path[::-1]

    def _repeated(self, index: int, slot_of) -> Slot:
        """The scheduled slot an instruction of a trip not scheduled copies (the path then
        goes on in the last scheduled trip: the repeated trips are not listed)."""
        for r in self.repeats:
            base = self.slots[r.first].index
            m = (index - base) // r.index_shift if r.index_shift else 0
            if 1 <= m <= r.times and slot_of(index - m * r.index_shift) is not None:
                return slot_of(index - m * r.index_shift)
        raise KeyError(index)

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
        if self.spills:
            out.append(spill_note(self.spills))
        if self.placed_on_scalar:
            out.append(f"{self.placed_on_scalar} instruction(s) that name no engine (copies, "
                       "affine tensor_scalar, reciprocal) run on the Scalar engine, which "
                       "finished them before the Vector engine would: the compiler's choice, "
                       "modelled (docs/cost.md, \"Engine placement\"); give engine= to pin one")
        for n in self.engine_names():
            if n != "dma" and self.target.clock(n) is None:
                out.append(f"engine {n}: no documented clock; {FALLBACK_CLOCK_GHZ:g} GHz "
                           "assumed")
        from nkirun.hw.cost_tables import tag_meanings
        return out + tag_meanings(out)  # "[OLD-ISA]" says what it is

    def _specs_used(self):
        from nkirun.isa import REGISTRY
        seen = []
        for s in self.slots:
            if s.op not in seen:
                seen.append(s.op)
        return [(op, REGISTRY[op]) for op in seen if op in REGISTRY]


def _slot_finder(slots: list[Slot]):
    """index -> the slot of that instruction, or None: by bisection when the slots are in
    strictly increasing index order (a schedule's usual order: no table of 100,000s of
    entries), else through a dict (the last slot of an index, as before)."""
    from bisect import bisect_left
    from itertools import pairwise
    if all(a.index < b.index for a, b in pairwise(slots)):
        n = len(slots)
        by = _INDEX

        def find(index):
            i = bisect_left(slots, index, key=by)
            return slots[i] if i < n and slots[i].index == index else None
        return find
    return {x.index: x for x in slots}.get


def path_contributions(path: list[Slot]) -> list[float]:
    """Each critical-path step's own share of the makespan: from the later of its start and
    the previous step's end to its end (a transfer's latency overlaps the step before)."""
    out, prev = [], 0.0
    for x in path:
        out.append(max(0.0, x.end_ns - max(x.start_ns, prev)))
        prev = max(prev, x.end_ns)
    return out


def _union_length(intervals: list, spans: bool = True) -> float:
    """The length of the union of the intervals: (start, end) pairs, or slots (spans=False:
    their start_ns, end_ns, with no pair made per slot)."""
    total, cur_s, cur_e = 0.0, None, None
    ordered = sorted(intervals) if spans else sorted(intervals, key=_START)
    for x in ordered:
        s, e = x if spans else (x.start_ns, x.end_ns)
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def queue_label(queues) -> str:
    """A DMA queue set as shown in reports: dma.q3, dma.q0-7, dma.q1,4."""
    if len(queues) == 1:
        return f"dma.q{queues[0]}"
    if queues[-1] - queues[0] == len(queues) - 1:
        return f"dma.q{queues[0]}-{queues[-1]}"
    return "dma.q" + ",".join(map(str, queues))


def spill_note(t: dict) -> str:
    """The cost report's note on a schedule's spills (Schedule.spills)."""
    return (f"spills: the live on-chip set exceeds capacity (check: W047); nkirun booked "
            f"{t['save_bytes'] / 1e6:,.2f} MB of saves and {t['reload_bytes'] / 1e6:,.2f} MB "
            f"of reloads on the DMA engines ({t['transfers']:,} transfers, evicting the tile "
            "used again furthest ahead; the compiler's own choice may differ), "
            f"{t['dma_ns'] / 1e3:,.1f} us of DMA time uncontended")
