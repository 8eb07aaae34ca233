"""The scheduler's per-instruction path for an instance of a call-site form
(`speed.FORM_PLANS`): everything every instance of a form shares is worked out once, at
its first instance, into a `FormPlan`; an instance then costs its names, the data it
waits for, its engine and its slot. The plain twin is `_Scheduler.place_plain`
(scheduler.py), which tests/schedule/test_form_plans.py compares slot by slot.

What a form's instances share (checker/intern.py: operands equal up to tensor names,
including which operands are the same tensor): cycles, the DMA plan or PE cells, the
boxes read and written, the positions of the names read and written, whether it has a
value key (recompute.py), its spec's name and formula, its `name=` label, the Scalar
engine's cycles for an instruction the compiler may place there (placement.py), and for a
DMA transfer its queues, label, busy time and bytes moved."""
from __future__ import annotations

from operator import itemgetter

from nkirun.checker.overlap import overlaps
from nkirun.isa.bound import Operands, raw_args
from nkirun.schedule import placement, recompute
from nkirun.schedule.history import record  # noqa: F401 (scheduler.py imports it here)
from nkirun.schedule.model import ENGINE, RAW, READY, RECOMPUTE, SPILL, WAR, WAW, Slot


def inst_name(args):
    """The `name=` label of an instruction whose raw args are `args` (isa/bound.py
    raw_args): a pending Operands' is its template's (a scalar keyword: equal in every
    instance of the form)."""
    if args.__class__ is not Operands:
        args = args.template
    return args.get("name")


def _kept_reads(b) -> tuple[int, ...] | None:
    """Positions in b.accesses().reads of the reads the scheduler waits for (None: all):
    not the reads of its own outputs a pipelined accumulation declares
    (InstructionDef.pipelined_accumulate)."""
    spec = b.spec
    if not spec.pipelined_accumulate or spec.reads_out is None:
        return None
    outs = spec.reads_out(b)
    if not outs:
        return None
    return tuple(i for i, (p, _) in enumerate(b.accesses().reads) if p not in outs)


def _picker(positions: tuple[int, ...]):
    """names (a tuple) -> the tuple of names at `positions`, in one call of C: a slice
    when the positions run on by one (none, one, or a range), else itemgetter (two or
    more positions: always a tuple)."""
    n = len(positions)
    start = positions[0] if n else 0
    if positions == tuple(range(start, start + n)):
        return itemgetter(slice(start, start + n))
    return itemgetter(*positions)


class FormPlan:
    """What every instance of one (form, engine) shares (the module docstring)."""

    __slots__ = ("engine", "cycles", "extra", "n_reads", "pick_reads", "read_boxes",
                 "write_boxes", "uniq", "uniq_reads", "uniq_writes", "value_shape", "op",
                 "formula", "assumed", "inst_name", "is_dma", "factor", "clock", "label",
                 "moved", "scalar", "tensor_cells", "facts")


def form_layout(s, b) -> tuple:
    """(scheduler `s`'s new_costed(b), b's names, how many reads names_plan lists, the
    picker of the names read that the scheduler waits for, each name's first position),
    or (new_costed(b), None, ...) when the costed reads and writes are not those names in
    that order (then a form's instances cannot take their boxes from the first)."""
    c = s.new_costed(b)
    _, names = b.names_plan()
    n_reads = len(b.accesses().reads)  # (with any the scheduler does not wait for)
    kept = _kept_reads(b)
    kept = tuple(range(n_reads)) if kept is None else kept
    pick_reads = _picker(kept)
    if tuple([n for n, _ in c[1] + c[2]]) != pick_reads(names) + names[n_reads:]:
        return c, None, n_reads, pick_reads, None
    first: dict = {}
    for i, n in enumerate(names):
        first.setdefault(n, i)
    return c, names, n_reads, pick_reads, first


def make_plan(s, b, form, engine: str):
    """The FormPlan of b's (form, engine) for scheduler `s` from its instance b, or None
    when its names are not in the order the plan assumes (the plain path then)."""
    c, names, n_reads, pick_reads, first = form_layout(s, b)
    if names is None:
        return None
    p = FormPlan()
    p.engine, p.cycles, p.extra, p.n_reads, p.pick_reads = engine, c[0], c[3], n_reads, \
        pick_reads
    p.read_boxes = tuple([box for _, box in c[1]])
    p.write_boxes = tuple([box for _, box in c[2]])
    positions = tuple(first.values())
    p.uniq = None if positions == tuple(range(len(names))) else _picker(positions)
    if (names if p.uniq is None else p.uniq(names)) != c[4]:
        return None  # (the plain path's first instance names them in another order)
    p.uniq_reads = _picker(tuple(dict.fromkeys([first[n] for n, _ in c[1]])))
    p.uniq_writes = _picker(tuple(dict.fromkeys([first[n] for n, _ in c[2]])))
    p.value_shape = None
    if s.values is not None:  # (else no value is ever elided: recompute.applies)
        recompute.fast_key(b, c[1])  # (sets the form's "value_key")
        p.value_shape = form.get("value_key")
    spec = b.spec
    p.op, p.formula, p.assumed = spec.name, spec.cost_formula, spec.cost_assumed
    p.inst_name = inst_name(raw_args(b))
    p.is_dma = engine == "dma"
    p.factor = s.latency_factor.get(engine, 1.0)
    p.tensor_cells = engine == "tensor"
    p.scalar = p.facts = None  # (facts: at its first placement)
    if p.is_dma:
        extra = c[3]
        p.clock, p.label, p.moved = None, None, (extra[8], extra[9], extra[2] * s.hbm_rate)
    else:
        p.clock, p.label, p.moved = s.clock(engine), s.pe_label(engine, c[3]), None
        if engine == "vector":
            p.scalar = placement.scalar_cycles(b, s.target)
    return p


_NO_HOLD = (0.0, None)
_FREE = (0.0, None)


def ready_of(s, rnames, rboxes, wnames, wboxes, compute: float) -> tuple:
    """(time, instruction, kind, tensor) of the latest-ending earlier access that conflicts
    with the reads zip(rnames, rboxes) or the writes zip(wnames, wboxes) (scheduler.py
    `data_ready`): the first in each map's order wins a tie. A map is scanned only if its
    upper bound of ends could beat what was found. The definition: the scheduler takes
    box_index.ready_indexed, its fast twin, under `speed.BOX_INDEX`."""
    ready, dep, kind, dep_tensor = 0.0, None, READY, None
    tensors, memo = s.tensors, s.overlap_memo
    for name, box in zip(rnames, rboxes):
        st = tensors.get(name)
        if st is not None and st.write_end > ready:
            for wbox, (end, k, lat) in st.writes.items():
                if compute:
                    end += lat * compute
                if end > ready:
                    if wbox is not box:
                        key = (id(wbox), id(box))
                        hit = memo.get(key)
                        if hit is None:
                            hit = memo[key] = overlaps(wbox, box)
                        if not hit:
                            continue
                    ready, dep, kind, dep_tensor = end, k, RAW, name
    for name, box in zip(wnames, wboxes):
        st = tensors.get(name)
        if st is None:
            continue
        if st.write_end > ready:
            for other, a in st.writes.items():
                if a[0] > ready and (other is box or s.overlap(other, box)):
                    ready, dep, kind, dep_tensor = a[0], a[1], WAW, name
        if st.read_end > ready:
            for other, a in st.reads.items():
                if a[0] > ready and (other is box or s.overlap(other, box)):
                    ready, dep, kind, dep_tensor = a[0], a[1], WAR, name
    return ready, dep, kind, dep_tensor


# long: the hot path of cost, one frame per instruction (each call costs ~0.1 us)
def place_form(s, b, p: FormPlan, names) -> None:
    """_Scheduler.place_plain(b) for an instance of plan p's form whose names are `names`."""
    engine, index = p.engine, b.inst.index
    rnames = p.pick_reads(names)
    wnames = names[p.n_reads:]
    storage = s.storage
    if storage is None:
        rstore, wstore = rnames, wnames
    else:  # one buffer per allocation site (Program.reuse_buffers)
        rstore = tuple([storage.get(n, n) for n in rnames])
        wstore = tuple([storage.get(n, n) for n in wnames])
    rboxes, wboxes = p.read_boxes, p.write_boxes
    ready, dep, kind, dep_tensor = s.ready_of(s, rstore, rboxes, wstore, wboxes, p.factor)
    data_at = ready
    hold = s.hold
    if hold is not _NO_HOLD:  # spills.held
        s.hold = _NO_HOLD
        if hold[0] > ready:
            slots = s.sched.slots
            ready, dep, kind, dep_tensor = (hold[0], slots[-1].index if slots else None,
                                            SPILL, hold[1])
    values, same, cycles, key = s.values, None, p.cycles, None
    if values is not None:
        if p.value_shape is not None:
            kid = s.key_ids
            key = kid.setdefault((p.value_shape, rnames), len(kid))
        write_names = p.uniq_writes(names)
        if key is not None:
            same, rv = values.lookup(key, p.uniq_reads(names))
        else:  # (Recomputes.wrote, inline)
            versions = values.versions
            for n in write_names:
                versions[n] = versions.get(n, 0) + 1
    facts = None  # (None: the plan's own)
    if same is not None:  # its value exists: no engine time (recompute.py)
        start = ready if ready >= same[1] else same[1]
        end, dep, kind, dep_tensor = start, same[0], RECOMPUTE, None
        facts = s.facts_of(p.op, engine, engine, (), 0, p.formula, p.assumed, p.inst_name,
                           0.0, *_NO_BYTES)
        lat = 0.0 if p.is_dma else s.raw_latency
        values.wrote(write_names)
    elif p.is_dma:
        start, end, dep, kind, dep_tensor = s.dma_times(index, p.extra, ready, dep, kind,
                                                        dep_tensor)
        lat = 0.0
        if p.facts is None:  # (queues, label and busy are the form's: dma.plan)
            queues = p.extra[6]
            p.facts = s.facts_of(p.op, engine, s.dma_label(queues), queues, cycles,
                                 p.formula, p.assumed, p.inst_name, p.extra[4], *p.moved, 0)
        if key is not None:  # a language-level load (recompute.py)
            values.store(key, rv, write_names, index, end)
    else:
        extra = p.extra
        if p.tensor_cells and (extra is not None or s.pe is not None):
            free, blocker = s.compute_resource(engine, extra)
        else:
            free, blocker = s.engine_free.get(engine, _FREE)
        if dep is not None and ready >= free:  # placement.earliest_start
            start = ready
        elif blocker is not None and free > 0:
            start, dep, kind, dep_tensor = free, blocker, ENGINE, None
        else:
            start, dep, kind, dep_tensor = 0.0, None, READY, None
        end = start + cycles / p.clock
        if p.scalar is not None:  # the engine left open: the compiler's choice
            alt = scalar_alt(s, p.scalar, rstore, rboxes, wstore, wboxes, data_at, end)
            if alt is not None:
                engine, cycles, start, end, ready, dep, kind, dep_tensor = alt
                s.sched.placed_on_scalar += 1
                facts = s.facts_of(p.op, engine, engine, (), cycles, p.formula, p.assumed,
                                   p.inst_name, 0.0, *_NO_BYTES)
        if facts is None and p.facts is None:
            p.facts = s.facts_of(p.op, engine, p.label, (), cycles, p.formula, p.assumed,
                                 p.inst_name, 0.0, *_NO_BYTES)
        if p.tensor_cells and s.pe is not None:  # (PE cells in use: compute_resource)
            s.occupy(engine, extra, end, index)
        else:
            s.engine_free[engine] = (end, index)
        lat = s.raw_latency
        if values is not None and key is not None:
            values.store(key, rv, write_names, index, end)
    record(s.tensors, rstore, rboxes, wstore, wboxes, end, index, lat)
    s.sched.slots.append(Slot(index, p.facts if facts is None else facts, start, end, kind,
                              dep, dep_tensor, b.inst.loc.line,
                              names if p.uniq is None else p.uniq(names), ready))


def scalar_alt(s, cycles: int, rstore, rboxes, wstore, wboxes, data_at: float,
               vector_end: float) -> tuple | None:
    """placement.on_scalar (its plain twin) for a form instance whose Scalar-engine cycles
    are `cycles` (FormPlan.scalar) and whose data was ready for the Vector engine at
    `data_at`: None at once when even a start at the later of data_at and the Scalar
    engine's free time ends no earlier than `vector_end` (its data is never ready earlier
    there: a reader on the Scalar engine waits the whole commit latency of a compute
    write, at least the Vector engine's share of it), else on_scalar's answer."""
    free, blocker = s.engine_free.get("scalar", _FREE)
    clock = s.clock("scalar")
    if (data_at if data_at >= free else free) + cycles / clock >= vector_end:
        return None
    ready, dep, kind, tensor = s.ready_of(s, rstore, rboxes, wstore, wboxes, 1.0)
    start, dep, kind, tensor = placement.earliest_start(ready, dep, kind, tensor, free,
                                                        blocker)
    end = start + cycles / clock
    if end >= vector_end:
        return None
    return "scalar", cycles, start, end, ready, dep, kind, tensor


_NO_BYTES = (0.0, 0.0, 0.0, 0)  # no DMA bytes (delivered, per descriptor, in HBM); core 0
