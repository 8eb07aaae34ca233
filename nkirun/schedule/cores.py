"""Costing a two-core (LNC2) program: both cores' engines in one schedule.

Each core has its own engines and DMA queues (a `_Scheduler` per core for those), while
the tensors' access history is one: a core that reads shared-HBM elements the other core
wrote waits for that write like any data dependence. The instructions are placed in the run
order of checker/meet.py. A meeting pair (core_barrier, or a sendrecv exchange; the spec's
`meeting` says which) starts on both cores when the later of the two could start: the
earlier one's wait reason is the other core (the wait kind is the instruction's name), and
the instruction it waited on is the one whose end let the other core's half start (so the
critical path stays a chain of ends and starts). A meeting's `fence` param (core_barrier's
`data`) orders it after this core's accesses to that tensor.
"""
from __future__ import annotations

import os

from nkirun.checker.meet import sync_order
from nkirun.schedule.model import Slot
from nkirun.schedule.scheduler import earliest_start


def schedule(program, bound, target=None, may_spill=None):
    """Schedule the bound (validated) instructions of `program` on `target` (default: the
    program's own target): one scheduler, or one per core of a two-core program that
    meet at their meeting points. Linear in the number of instructions. `may_spill=False`:
    the caller's check found no live set over capacity (no W047), so the compiler's spills
    (schedule/spills.py) are not worked out again (`speed.SPILLS_FROM_CHECK`; None: they
    are)."""
    from nkirun.hw.targets import TARGETS
    from nkirun.schedule.scheduler import _Scheduler as Scheduler
    if program.cores > 1:  # both cores' engines in one schedule
        return schedule_cores(program, bound, target or TARGETS[program.target])
    s = Scheduler(program, target or TARGETS[program.target])
    from nkirun.progress import Progress
    from nkirun.schedule.steady import SteadyPlan, schedule_plan
    progress = Progress(f"costing {os.path.basename(program.path or '') or 'the program'}")
    b = None
    try:
        if isinstance(bound, SteadyPlan):  # loops of too many trips: their steady state
            return schedule_plan(bound, s, progress)
        from nkirun.schedule.spills import Spills, spill_events
        events = spill_events(program, bound, s.target) if may_spill is not False else None
        spills = Spills(events, s.target) if events else None  # (schedule/spills.py)
        from nkirun import speed
        from nkirun.schedule.history import last_uses
        dead = last_uses(bound) if (speed.DEAD_HISTORIES and spills is None
                                    and s.storage is None) else None
        tensors, values = s.tensors, s.values
        for k, b in enumerate(bound):
            if not k & 4095:
                progress.tick(k)
            if spills is not None and k in events:
                s.hold = spills.hold(k, s)
            s.place(b)
            if dead is not None and dead[k] is not None:  # no later instruction reads them
                gone = dead[k]
                gone = (gone,) if gone.__class__ is str else gone
                for name in gone:
                    tensors.pop(name, None)
                if values is not None:
                    values.forget(gone)
        if spills is not None:
            s.sched.spills = spills.totals
    except KeyboardInterrupt as stop:  # Ctrl-C: the CLI says where the cost was
        stop.nkirun_at = stop.__dict__.get("nkirun_at") or (
            f"#{b.inst.index} {b.op} (line {b.inst.loc.line}) while costing"
            if b is not None else None)
        raise
    finally:
        progress.close()
    return s.sched


def schedule_cores(program, bound, target):
    from nkirun.schedule.scheduler import _Scheduler
    first = _Scheduler(program, target)
    second = _Scheduler(program, target)
    from nkirun import speed
    fast = speed.CORE_PLANS
    for shared in ("sched", "tensors", "costed", "overlap_memo", "clocks", "facts") + (
            ("plans", "by_form") if fast else ()):  # (a FormPlan: of the target, not the core)
        setattr(second, shared, getattr(first, shared))
    per_core = (first, second)
    on_core = {} if fast else None  # (id(facts), core) -> (facts, facts on that core)
    slots = first.sched.slots
    core_of = {b.index: b.inst.core for b in bound}
    order = sync_order(bound)
    if order.deadlock is not None:  # runtime loops costed with counts that do not pair
        from nkirun.diagnostics import RunError, error
        d = order.deadlock
        raise RunError(error("E642", d.message + " (with the loops' trip counts costed)",
                             d.loc, d.instruction, hint="give both cores' loops trip counts "
                             "under which their meeting points pair (--trip NAME=N)"))
    for step in order.steps:
        if isinstance(step, tuple):
            _place_pair(per_core, step, core_of)
            continue
        s = per_core[step.inst.core]
        s.place(step)
        x = slots[-1]  # (placed as on core 0: the core is one of its facts)
        x.facts = (s.facts_of(*x.facts[:-1], step.inst.core) if on_core is None
                   else facts_on_core(s, x.facts, step.inst.core, on_core))
    slots.sort(key=lambda x: x.index)
    return first.sched


def facts_on_core(s, facts, core: int, memo: dict) -> tuple:
    """`s.facts_of(*facts[:-1], core)` (its plain twin) once per interned `facts` and core
    (`speed.CORE_PLANS`): core 0's are `facts` itself, the scheduler placing as on core 0."""
    if not core and facts[-1].__class__ is int and not facts[-1]:
        return facts
    got = memo.get((id(facts), core))
    if got is None or got[0] is not facts:
        got = memo[(id(facts), core)] = (facts, s.facts_of(*facts[:-1], core))
    return got[1]


def _ready(s, b, core_of) -> tuple:
    """When b could start on its core's scheduler s: (start, waited-on, kind, tensor,
    cost facts, data-ready time)."""
    from nkirun.schedule.scheduler import _costed
    ckey = (b.args, b.engine)
    c = s.costed.get(ckey)
    if c is None:
        c = s.costed[ckey] = _costed(b, s.target)
        data = _fence(b)
        if data is not None:  # a fence on `data`: after this core's accesses to it, before
            fence = ((data.decl.name, data.box),)  # its later ones (isa/core_barrier.py)
            c = s.costed[ckey] = (c[0], fence, fence, c[3], c[4] + (data.decl.name,), *c[5:])
    if _fence(b) is not None:  # after this core's accesses to the fenced tensor (the other
        ready, dep, kind, tensor = _own_accesses(s, c[1][0], b.inst.core, core_of)  # core's
    else:                                                   # wait is the pair's own)
        ready, dep, kind, tensor = s.data_ready(c[1], c[2], s.latency_factor.get(b.engine, 1.0))
    # a DMA half books its engines when placed (schedule/dma.py); an engine waits in order
    free, blocker = (0.0, None) if b.engine == "dma" else s.compute_resource(b.engine, c[3])
    start, dep, kind, tensor = earliest_start(ready, dep, kind, tensor, free, blocker)
    return start, dep, kind, tensor, c, ready


def _fence(b):
    meeting = b.spec.meeting
    return b.tile(meeting.fence) if meeting is not None and meeting.fence else None


def _own_accesses(s, fence, core: int, core_of) -> tuple:
    """(end, instruction, kind, tensor) of the latest access of `core` to the fenced box."""
    from nkirun.schedule.model import RAW, READY, WAR
    name, box = fence
    st = s.tensors.get(name)
    best = (0.0, None, READY, None)
    if st is None:
        return best
    for kind, accesses in ((RAW, st.writes), (WAR, st.reads)):
        for other, (end, k, *_) in accesses.items():
            if end > best[0] and core_of.get(k) == core and s.overlap(other, box):
                best = (end, k, kind, name)
    return best


def _place_pair(per_core, pair, core_of) -> None:
    first, second = pair
    got = [_ready(per_core[b.inst.core], b, core_of) for b in pair]
    start = max(g[0] for g in got)
    why = first.op  # (a wait for the other core at this meeting point: model.meeting_words)
    for b, late, (ready_at, dep, kind, tensor, c, data_at) in zip(pair, (got[1], got[0]), got):
        s = per_core[b.inst.core]
        if ready_at < start:  # this core arrived first: it waited for the other core, whose
            dep, kind, tensor = late[1], why, None  # start the end of late[1] set
        end, queues, label, busy, lat = _run_half(s, b, c, start)
        cycles, reads, writes, _, names = c[:5]
        s.record_accesses(reads, writes, end, b.index, lat)
        facts = s.facts_of(b.spec.name, b.engine, label, queues, cycles, b.spec.cost_formula,
                           b.spec.cost_assumed, b.args.get("name"), busy, 0.0, 0.0, 0.0,
                           b.inst.core)
        s.sched.slots.append(Slot(b.index, facts, start, end, kind, dep, tensor,
                                  b.inst.loc.line, names, data_at))


def _run_half(s, b, c, start) -> tuple:
    """Occupy b's engine (or DMA engines) from `start`: (end, queues, label, queue-ns,
    the commit latency its writes carry)."""
    from nkirun.schedule.model import queue_label
    if b.engine == "dma":
        shares, latency, hbm_ns, _, busy, uniform, queues = c[3][:7]
        _, end, _ = s.dma.book(start + latency, shares, hbm_ns, uniform, b.index)
        return end, queues, queue_label(queues), busy, 0.0
    clock = s.clocks.get(b.engine)
    if clock is None:
        clock = s.clocks[b.engine] = s.sched.clock(b.engine)
    end = start + c[0] / clock
    s.occupy(b.engine, c[3], end, b.index)
    return end, (), s.pe_label(b.engine, c[3]), 0.0, s.raw_latency


__all__ = ["schedule_cores"]
