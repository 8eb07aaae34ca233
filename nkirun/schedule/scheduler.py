"""The scheduler: a Schedule from the bound instructions (rules in model.py's docstring)."""
from __future__ import annotations

from nkirun.hw.cost_tables import cost_table
from nkirun.hw.targets import TARGETS, Target
from nkirun.isa.bound import Operands, raw_args
from nkirun.isa.common import dma_cycles
from nkirun.schedule import dma
from nkirun.ir import Program
from nkirun.schedule.model import (ENGINE, QUEUE, READY, RECOMPUTE, Schedule,
                                   Slot, queue_label)
from nkirun.schedule.spills import held
from nkirun.schedule import placement, recompute
from nkirun.schedule.placement import earliest_start
from nkirun.checker.overlap import overlaps
from nkirun.schedule.history import AccessHistory
from nkirun.schedule.box_index import ready_indexed
from nkirun.schedule.fast_place import (_kept_reads, _picker, form_layout, inst_name,
                                         make_plan, place_form, ready_of, record)
from nkirun import speed


_NO_BYTES = (0.0, 0.0, 0.0)
PE_CELL = 32  # the PE array in 32 x 32 cells: the finest tile_size (NeuronCore-v3 on)
_GRID = 128 // PE_CELL


def _pe_cells(b) -> tuple[int, ...] | None:
    """The PE-array cells a row/column-tiled matmul occupies (None: the whole array)."""
    pos, size = b.args.get("tile_position"), b.args.get("tile_size")
    if not pos or not size or len(pos) != 2 or len(size) != 2 or tuple(size) == (128, 128):
        return None
    rows = range(pos[0] // PE_CELL, (pos[0] + size[0]) // PE_CELL)
    cols = range(pos[1] // PE_CELL, (pos[1] + size[1]) // PE_CELL)
    return tuple(r * _GRID + c for r in rows for c in cols)


def _costed(b, target: Target, keyed: bool = True) -> tuple:
    """What the scheduler needs of a bound instruction, a function of its operands, engine
    and the target only: (cycles, reads, writes, DMA plan or PE cells, tensors touched,
    value key (recompute.py; None unless `keyed`: a schedule that elides no recomputation
    never reads it), tensors read, tensors written), reads and writes as (tensor name,
    box)."""
    acc = b.accesses()
    kept = _kept_reads(b)
    reads = tuple([(r.decl.name, r.box) for _, r in (
        acc.reads if kept is None else [acc.reads[i] for i in kept])])
    writes = tuple([(r.decl.name, r.box) for _, r in acc.writes])
    if b.engine == "dma":
        extra = dma.plan(b, target)
        cycles = dma.plan_ns(extra) if b.spec.cycles is dma_cycles else b.spec.cycles(b, target)
    else:
        extra = _pe_cells(b) if b.engine == "tensor" else None
        cycles = b.spec.cycles(b, target)
    names = tuple(dict.fromkeys([n for n, _ in reads + writes]))
    read_names = tuple(dict.fromkeys([n for n, _ in reads]))
    write_names = tuple(dict.fromkeys([n for n, _ in writes]))
    return (int(cycles), reads, writes, extra, names,
            recompute.fast_key(b, reads) if keyed else None, read_names, write_names)


class _Scheduler:
    """One pass over the instructions in program order; each is placed by `place`."""

    def __init__(self, program: Program, target: Target):
        self.target = target
        table = cost_table(target)
        self.raw_latency = table.raw_latency_ns
        self.dge_ns = table.dge_ns
        self.hbm_rate = table.hbm_bytes_per_ns
        # a reader's share of the commit latency a compute write carries (the Vector engine's
        # documented dependent-instruction overhead is shorter than the measured ScalarE one)
        vector_clock = target.clock("vector")
        self.latency_factor = {"dma": 0.0} if not vector_clock else {
            "dma": 0.0,
            "vector": min(1.0, table.vector_dependent_cycles / vector_clock / self.raw_latency)}
        self.sched = Schedule(program, target)
        self.clocks: dict[str, float] = {}
        self.engine_free: dict[str, tuple[float, int | None]] = {}
        self.dma = dma.DmaEngines(target)
        self.pe: list[tuple[float, int | None]] | None = None  # per cell, once tiling is used
        self.labels: dict[tuple[int, ...], str] = {}
        self.tensors: dict[str, AccessHistory] = {}
        # Traces repeat instructions: bind interns the operands of identical ones into one
        # Operands object (isa/bound.py), so cycles and accesses are computed once per
        # (operands, engine); likewise each pair of boxes (kept alive by the operands) is
        # compared once.
        self.costed: dict[tuple, tuple] = {}
        self.overlap_memo: dict[tuple[int, int], bool] = {}
        self.values = recompute.Recomputes() if recompute.applies(program) else None
        self.key_ids: dict[tuple, int] = {}
        self.by_form: dict[tuple[int, str], tuple | bool] = {}
        self.hold: tuple[float, str | None] = (0.0, None)  # spills.py: the next one waits
        self.storage = placement.storage_names(program) if program.reuse_buffers else None
        self.plans: dict = {}  # id(form) -> FormPlan, or False (fast_place.py)
        self.facts: dict = {}  # Slot.facts, interned (facts_of)
        self.form_plans = speed.FORM_PLANS
        self.ready_of = ready_indexed if speed.BOX_INDEX else ready_of  # (box_index.py)

    def overlap(self, a, b) -> bool:
        key = (id(a), id(b))
        hit = self.overlap_memo.get(key)
        if hit is None:
            hit = self.overlap_memo[key] = overlaps(a, b)
        return hit

    def data_ready(self, reads, writes, compute: float) -> tuple:
        """(time, instruction, kind, tensor) of the latest-ending earlier access that
        conflicts: a write under a read (RAW; a compute reader of a compute write also waits
        `compute` times the commit latency: 0 for DMA, see latency_factor), a write or a read
        under a write (WAW, WAR); reads and writes as (tensor, box) pairs (fast_place.ready_of,
        which takes names and boxes apart)."""
        return self.ready_of(self, [n for n, _ in reads], [box for _, box in reads],
                        [n for n, _ in writes], [box for _, box in writes], compute)

    def compute_resource(self, engine: str, cells) -> tuple[float, int | None]:
        """(free time, blocking instruction) of a compute engine, or of the PE cells."""
        if engine == "tensor" and (cells is not None or self.pe is not None):
            if self.pe is None:
                self.pe = [self.engine_free.get("tensor", (0.0, None))] * (_GRID * _GRID)
            use = cells if cells is not None else range(_GRID * _GRID)
            return max((self.pe[c] for c in use), key=lambda x: x[0])
        return self.engine_free.get(engine, (0.0, None))

    def record_accesses(self, reads, writes, end: float, index: int, lat: float) -> None:
        record(self.tensors, [n for n, _ in reads], [box for _, box in reads],
               [n for n, _ in writes], [box for _, box in writes], end, index, lat)

    def new_costed(self, b) -> tuple:
        c = _costed(b, self.target, self.values is not None)
        if c[5] is not None:  # the value key as a small int: hashed once
            c = (*c[:5], self.key_ids.setdefault(c[5], len(self.key_ids)), *c[6:])
        return c

    def costed_by_form(self, b, form, engine: str) -> tuple:
        """`new_costed(b)` from the first instruction of b's form (checker/intern.py:
        operands equal up to tensor names, including which operands are the same tensor):
        cycles, DMA plan and boxes are the form's, only the names are b's. A trace's loop
        allocates a new tile per iteration, so the per-Operands cache never hits there.
        tests/schedule/test_cost_forms.py compares it with new_costed."""
        fkey = (id(form), engine)  # the form dicts live as long as `bound`
        t = self.by_form.get(fkey)
        if t is None:
            c, names, n_reads, pick_reads, first = form_layout(self, b)
            if names is None:
                self.by_form[fkey] = False  # not the order assumed below
                return c
            self.by_form[fkey] = (
                c, (n_reads, pick_reads), tuple(box for _, box in c[1]),
                tuple(box for _, box in c[2]), _picker(tuple(first.values())),
                _picker(tuple(dict.fromkeys(first[n] for n, _ in c[1]))),
                _picker(tuple(dict.fromkeys(first[n] for n, _ in c[2]))))
            return c
        if t is False:
            return self.new_costed(b)
        c, (n_reads, pick_reads), read_boxes, write_boxes, uniq, uniq_reads, uniq_writes = t
        names = b.names_plan()[1]
        reads = tuple(zip(pick_reads(names), read_boxes))
        writes = tuple(zip(names[n_reads:], write_boxes))
        key = recompute.fast_key(b, reads)
        if key is not None:
            key = self.key_ids.setdefault(key, len(self.key_ids))
        return (c[0], reads, writes, c[3], uniq(names), key, uniq_reads(names),
                uniq_writes(names))

    def place(self, b) -> None:
        """Schedule b: through its form's FormPlan (schedule/fast_place.py) when it has
        one, else `place_plain`."""
        args = raw_args(b)
        form = args.form
        if form is None or b.mask is not None or not self.form_plans:
            return self.place_plain(b)
        p = self.plans.get(id(form))  # (the form dicts live as long as `bound`)
        if p is None:
            p = self.plans[id(form)] = make_plan(self, b, form, b.engine) or False
        if p is False or p.engine != b.engine:
            return self.place_plain(b)
        names = args.names
        place_form(self, b, p, b.names_plan()[1] if names is None else names)

    # long: the definition, kept whole beside its fast twin (fast_place.place_form)
    def place_plain(self, b) -> None:
        """The definition: each instruction's costed facts from its Operands (or its
        form's, costed_by_form), then its data, engine and slot."""
        engine, index = b.engine, b.inst.index
        args = raw_args(b)  # a FormBound's pending Operands stay unmade (isa/bound.py)
        pending = args.__class__ is not Operands
        c = None if pending else self.costed.get((args, engine))  # (pending: its own, unshared)
        if c is None:
            form = args.form
            if form is not None and b.mask is None:
                c = self.costed_by_form(b, form, engine)
                if not pending and args.shared:  # kept only for operands several share
                    self.costed[(args, engine)] = c
            else:
                c = self.costed[(b.args, engine)] = self.new_costed(b)
        cycles, reads, writes, extra, names, key, read_names, write_names = c
        if self.storage is not None:  # one buffer per allocation site: accesses of one tensor
            reads, writes = self.in_storage(reads), self.in_storage(writes)
        is_dma = engine == "dma"
        ready, dep, kind, dep_tensor = held(self, *self.data_ready(
            reads, writes, self.latency_factor.get(engine, 1.0)))
        values, same = self.values, None
        if values is not None:
            if key is not None:
                same, rv = values.lookup(key, read_names)
            else:
                values.wrote(write_names)
        if same is not None:  # its value exists: no engine time (recompute.py)
            start = max(ready, same[1])
            end, cycles, dep, kind, dep_tensor = start, 0, same[0], RECOMPUTE, None
            queues, label, busy = (), engine, 0.0
            lat = 0.0 if is_dma else self.raw_latency
            values.wrote(write_names)
        elif is_dma:
            start, end, dep, kind, dep_tensor, queues, label, busy = self.place_dma(
                b, extra, ready, dep, kind, dep_tensor)
            lat = 0.0
            if key is not None and values is not None:  # a language-level load (recompute.py)
                values.store(key, rv, write_names, index, end)
        else:
            clock = self.clock(engine)
            start, dep, kind, dep_tensor = earliest_start(
                ready, dep, kind, dep_tensor, *self.compute_resource(engine, extra))
            end = start + cycles / clock
            if engine == "vector":  # the engine left open: the compiler's choice (placement.py)
                alt = placement.on_scalar(self, b, reads, writes, end)
                if alt is not None:
                    engine, cycles, start, end, ready, dep, kind, dep_tensor = alt
                    self.sched.placed_on_scalar += 1
            self.occupy(engine, extra, end, index)
            queues, label, busy, lat = (), self.pe_label(engine, extra), 0.0, self.raw_latency
            if key is not None and values is not None:
                values.store(key, rv, write_names, index, end)
        self.record_accesses(reads, writes, end, index, lat)
        spec = b.spec
        moved = ((extra[8], extra[9], extra[2] * self.hbm_rate) if is_dma and same is None
                 else _NO_BYTES)  # (DMA: bytes delivered, per descriptor, in HBM)
        facts = self.facts_of(spec.name, engine, label, queues, cycles, spec.cost_formula,
                              spec.cost_assumed, inst_name(args), busy, *moved, 0)
        self.sched.slots.append(Slot(index, facts, start, end, kind, dep, dep_tensor,
                                     b.inst.loc.line, names, ready))

    def facts_of(self, *facts) -> tuple:
        """model.slot_facts(*facts), one tuple per distinct value and types (slots share it:
        an int and a float, or True and 1, are equal, but not spelled alike)."""
        key = (facts, *map(type, facts[4:]))
        got = self.facts.get(key)
        if got is None:
            got = self.facts[key] = facts
        return got

    def in_storage(self, accesses) -> tuple:
        """(tensor, box) pairs with each tensor named by its buffer (Program.reuse_buffers)."""
        st = self.storage
        return tuple((st.get(n, n), box) for n, box in accesses)

    def clock(self, engine: str) -> float:
        clock = self.clocks.get(engine)
        if clock is None:
            clock = self.clocks[engine] = self.sched.clock(engine)
        return clock

    def advance(self, first: int, shift_ns: float, shift_index: int) -> None:
        """Move what instructions at positions >= `first` left in the state (engines, PE
        cells, tensor accesses, DMA engines) `shift_ns` later and `shift_index` positions
        on: the state after trips that repeat the last ones (schedule/steady.py)."""
        def moved(entry):
            end, index = entry[0], entry[1]
            if index is None or index < first:
                return entry
            return (end + shift_ns, index + shift_index, *entry[2:])
        self.engine_free = {e: moved(v) for e, v in self.engine_free.items()}
        if self.pe is not None:
            self.pe = [moved(v) for v in self.pe]
        for st in self.tensors.values():
            st.writes = {box: moved(v) for box, v in st.writes.items()}
            st.reads = {box: moved(v) for box, v in st.reads.items()}
            st.write_end = max((e + lat for e, _, lat in st.writes.values()), default=0.0)
            st.read_end = max((e for e, _ in st.reads.values()), default=0.0)
            st.raw_memo = None  # (its ends moved; the boxes, and so the indexes, did not)
        self.dma.advance(first, shift_ns, shift_index)

    def occupy(self, engine: str, cells, end: float, index: int) -> None:
        if engine == "tensor" and self.pe is not None:
            for c in (cells if cells is not None else range(_GRID * _GRID)):
                self.pe[c] = (end, index)
            end = max(t for t, _ in self.pe)
            index = next(k for t, k in self.pe if t == end)
        self.engine_free[engine] = (end, index)

    def pe_label(self, engine: str, cells) -> str:
        if cells is None:
            return engine
        rows = sorted({c // _GRID for c in cells})
        cols = sorted({c % _GRID for c in cells})
        return (f"{engine}[r{rows[0] * PE_CELL}-{(rows[-1] + 1) * PE_CELL - 1},"
                f"c{cols[0] * PE_CELL}-{(cols[-1] + 1) * PE_CELL - 1}]")

    def place_dma(self, b, plan, ready, dep, kind, dep_tensor) -> tuple:
        """Trigger at `ready` (after the DGE issuer, if any), stream from trigger + latency
        on the engines' idle time (schedule/dma.py)."""
        start, end, dep, kind, dep_tensor = self.dma_times(b.inst.index, plan, ready, dep,
                                                           kind, dep_tensor)
        queues = plan[6]
        return start, end, dep, kind, dep_tensor, queues, self.dma_label(queues), plan[4]

    def dma_times(self, index: int, plan, ready, dep, kind, dep_tensor) -> tuple:
        """place_dma's (start, end, waited-on, kind, tensor) of instruction `index`."""
        latency, issuer = plan[1], plan[3]
        trigger = ready
        if issuer is not None:
            free, blocker = self.engine_free.get(issuer, (0.0, None))
            if free > trigger:
                trigger, dep, kind, dep_tensor = free, blocker, ENGINE, None
            self.engine_free[issuer] = (trigger + self.dge_ns, index)
        first, end, blocker = self.dma.book(trigger + latency, plan[0], plan[2], plan[5],
                                             index)
        if first - latency > trigger and blocker is not None:
            # its latency passed while the engines finished `blocker`: it starts (streams)
            # when they free up, so the slot never starts before what it waited for ends
            return first, end, blocker, QUEUE, None
        return trigger, end, dep, READY if dep is None else kind, dep_tensor

    def dma_label(self, queues) -> str:
        label = self.labels.get(queues)
        if label is None:
            label = self.labels[queues] = queue_label(queues)
        return label
