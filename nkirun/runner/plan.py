"""Running a checked program from an execution plan (the speed path of `run`, issue 14).

The plain interpreter (interpret.execute) looks everything up again for every instruction:
the operands' NumPy views, the written-element masks, the casts of Machine.write. A
kernel that loops over small tiles spends most of its run there. `execute_planned`
decides all of that once, before running, and then makes one call per instruction:

* **Slots.** Each tensor without initial contents lives from its first to its last use
  (`last_uses`). Tensors of one shape and storage dtype whose lives do not overlap
  share one array (a slot is handed back after the instruction of the last use, so a
  tensor never shares with one that instruction still reads). Memory follows what is
  live; tensors that must outlive the run (outputs) get their own array.
* **Tracking dropped where it is proven unneeded.** A tensor whose first access is a
  planned instruction that writes the whole tensor (no mask, not read by that same
  instruction) can never be read unwritten, so it is not tracked element by element.
  Any other tensor starts as the plain path starts it (zeros and an all-False written
  mask under uninitialized="error"; NaN/0 under "nan"/"zero"), and under "error" every
  instruction that touches it runs the plain way, so E090 stays exact.
* **Planned instructions.** An instruction module may give `SPEC.plan(b)`: None when its
  fast form does not apply to b, else `build(view)` returning a zero-argument call that
  does exactly what `execute(b, m)` would, on operand arrays fixed at build time
  (`view(r, shape)`: r's storage as an array of `shape`, never a copy, or None). Calls
  are shared by the instructions of one checked form (checker/intern.py) over the same
  slots, so a 100,000-instruction loop builds a handful of them.
* Everything else runs `spec.execute(b, m)` on the Machine, whose `buffers` then hold
  the tensors it touches (bound before it, dropped after their last use).

Programs with runtime loops or two cores, and runs that watch each instruction (`--trace`,
`--dump`, `--shadow`, cost's trip counting), take the plain path. tests/runner/test_plan.py
runs every example program and kernel both ways and compares outputs bit for bit and errors.
A simulate() call that traced the same program as the last one runs that call's plan again
when no step of it is plain (runner/plan_keep.py).
"""
from __future__ import annotations

from dataclasses import replace
from functools import partial

import numpy as np

from nkirun.diagnostics import NkirunError
from nkirun.hw import dtypes as dt
from nkirun.isa.bound import raw_args
from nkirun.runner.carried import Replan
from nkirun.runner.files import initial_buffers
from nkirun.runner.machine import Machine
from nkirun.runner.memory import refuse_if_too_large
from nkirun.runner.plan_keep import _plain, give_outputs, run_kept, start_machine
from nkirun.runner.plan_widen import WidenOnce
from nkirun.runner.plan_writes import PlannedWrites, Viewer, bind as _bind, hand_over
from nkirun.runner.plan_writes import unbind as _unbind


def plannable(program) -> bool:
    """Whether execute_planned can run `program` (else interpret.execute)."""
    return program.cores == 1 and not program.loops


def live_ranges(bound) -> tuple[dict, dict]:
    """tensor name -> index of its first and of its last use."""
    first, last = {}, {}
    for i, b in enumerate(bound):
        for n in b.names_plan()[1]:  # read or written (runtime index tensors included)
            if n not in first:
                first[n] = i
            last[n] = i
    return first, last


def last_uses(bound, kept=frozenset()) -> tuple[dict, set]:
    """(instruction index -> the tensors it uses last, leaving out those in `kept`; every
    tensor used), in one pass backwards over the instructions. A tensor name alone where
    only one ends there: no list per tile (a 100,000-instruction kernel would make 50,000,
    and new containers wake the garbage collector, which then walks the whole IR)."""
    ends: dict = {}
    used: set = set()
    for i in range(len(bound) - 1, -1, -1):
        b = bound[i]
        names = raw_args(b).names  # (see compile)
        for n in (names if names is not None else b.names_plan()[1]):
            if n not in used:
                used.add(n)
                if n not in kept:
                    have = ends.get(i)
                    if have is None:
                        ends[i] = n
                    elif have.__class__ is str:
                        ends[i] = [have, n]
                    else:
                        have.append(n)
    return ends, used


def execute_planned(program, bound, inputs=None, uninitialized="error", plans=None,
                    follow=None) -> Machine:
    """interpret.execute(program, bound, inputs, uninitialized=...) through a plan: the same
    outputs (bit for bit), errors and warnings; the Machine keeps the outputs and the tensors
    with initial contents. `plans`: simulate()'s kept plan and where to keep this one; `follow`:
    operands widened from their loads' sources (plan_source.py), by default only in a plan
    simulate() keeps (it runs again: one run alone would not repay the bookkeeping)."""
    from nkirun.runner.plain import out_of_memory
    if plans is not None and (kept := plans.take(bound, uninitialized)) is not None:
        return run_kept(plans, kept, inputs, uninitialized, run_steps)  # (plan_keep.py)
    given = inputs or {}
    tensors = program.tensors
    held, outs = [], set()  # (one pass over the tensors: a traced kernel declares 50,000s)
    for n, t in tensors.items():
        if t.init is not None or n in given:
            held.append(n)
        if t.output:
            outs.add(n)
    ends, used = last_uses(bound, {*held, *outs})
    upfront = {n: tensors[n] for n in (*held, *(tensors.keys() - used - set(held)))}
    head = replace(program, tensors=upfront)
    refuse_if_too_large(head, inputs)
    try:
        with np.errstate(all="ignore"):
            buffers, written = initial_buffers(head, inputs, uninitialized)
    except MemoryError:
        raise out_of_memory(program)
    m = start_machine(Machine.__new__(Machine), buffers, written, uninitialized)
    held = dict(buffers)  # (what the steps start from, before they bind and unbind)
    try:
        plan = _Planner(program, bound, m, ends, uninitialized, outs, plans is not None and
                        plans.seen is bound if follow is None else follow)  # (plan_source.py)
    except MemoryError:
        raise out_of_memory(program)
    try:
        run_steps(plan.bs, plan.calls, m)
    except Replan:  # garbage reached a tensor the plan does not track: run it plainly
        from nkirun.runner.plain import execute_plain
        return execute_plain(program, bound, inputs, uninitialized=uninitialized)
    if plans is not None and plans.keep(bound, uninitialized, head, held, m, plan, outs):
        give_outputs(m, outs)
    return m


def run_steps(bs: list, calls: list, m: Machine) -> None:
    """Make each call (bs[i]: the instruction calls[i] belongs to); an exception becomes
    the run error interpret.execute would give."""
    from nkirun.runner.plain import failure
    i = -1
    try:
        with np.errstate(all="ignore"):  # inf/nan flow through as on hardware, silently
            for i, call in enumerate(calls):
                call()
    except (NkirunError, Replan):
        raise
    except KeyboardInterrupt as stop:
        b = bs[i] if i >= 0 else None
        stop.nkirun_at = f"#{b.index} {b.title}" if b is not None else None
        raise
    except Exception as exc:
        raise failure(exc, bs[i] if i >= 0 else None) from exc
    m.current = None


class _Recipe:
    """What one checked form's instructions share (checker/intern.py: equal layouts, so
    equal tensor shapes and dtypes per position): whether they are planned, the positions
    (in names_plan's names) of the tensors they write in full without reading, each
    position's slot kind, how many of the names are read (the rest are written), and
    the prepared calls built so far, by the array numbers of the instruction's tensors,
    each with the views it reads widened (plan_widen.py). Per instruction the compile
    then only looks up slots."""

    __slots__ = ("planned", "whole", "kinds", "calls", "reads")

    def __init__(self, b, names, tensors):
        self.planned, self.whole = _facts(b, names)
        self.kinds = tuple((tensors[n].shape, tensors[n].dtype.name) for n in names)
        self.calls: dict = {}
        self.reads = len(b.names_plan()[0][0])


class _Planner:
    """One pass over the instructions in order, building the steps: `calls`, and `bs`, the
    instruction each call belongs to."""

    def __init__(self, program, bound, m: Machine, ends: dict, policy: str, outputs=None,
                 follow=True):
        self.m, self.policy = m, policy
        self.tensors = program.tensors
        self.outputs = ({n for n, t in self.tensors.items() if t.output} if outputs is None
                        else outputs)
        self.free: dict = {}  # (shape, dtype name) -> entries no live tensor holds
        # name -> its entry (array, array number, its kind: the key of its free list; not
        # the list itself, which would make a cycle keeping every array until a collection)
        self.arrays = {n: (a, i, self._kind(n)) for i, (n, a) in enumerate(m.buffers.items())}
        self.slot_of = {n: e[1] for n, e in self.arrays.items()}  # name -> array number
        self.tracked = {n for n, w in m.written.items() if w is not None}
        self.bound_in_m = set(self.arrays)  # tensors the Machine holds now
        self.made = 0  # arrays allocated for tensors first used during the run
        self.recipes: dict = {}  # id(form) -> _Recipe of the form's instructions
        self.views: dict = {}  # (array number, layout, shape) -> view
        self.bs, self.calls = [], []  # the steps: the instruction, the call
        self.writes = PlannedWrites()  # tensors written in parts so far (plan_writes.py)
        self.widen = WidenOnce(len(self.arrays), self.outputs, follow)  # (plan_widen.py)
        self.compile(bound, ends)  # (ends: last_uses, without the kept tensors)

    def _kind(self, name: str) -> tuple:
        t = self.tensors[name]
        kind = (t.shape, t.dtype.name)
        self.free.setdefault(kind, [])
        return kind

    def compile(self, bound, ends: dict) -> None:  # long: the one hot loop, locals on purpose
        slot_of, recipes, tracked, outputs = self.slot_of, self.recipes, self.tracked, self.outputs
        tensors, free, arrays, bound_in_m = self.tensors, self.free, self.arrays, self.bound_in_m
        slot = slot_of.__getitem__
        add_b, add_call = self.bs.append, self.calls.append
        masks = self.writes.masks
        widen = self.widen
        viewer = Viewer(self.view, self.writes, self.view_key, widen)
        for i, b in enumerate(bound):
            args = raw_args(b)  # (names, form: no dict)
            names = args.names if args.names is not None else b.names_plan()[1]
            form = args.form if b.mask is None else None
            r = recipes.get(id(form)) if form is not None else None
            if r is None:
                r = _Recipe(b, names, tensors)
                if form is not None:
                    recipes[id(form)] = r
            fresh = ()  # positions of the tensors b is the first to use (they hold nothing)
            for n in names:
                if n not in slot_of:  # its first use
                    p = names.index(n)
                    fresh += (p,)
                    spare = free.get(r.kinds[p]) if p in r.whole else None
                    if spare and n not in outputs:
                        e = arrays[n] = spare.pop()  # (the usual tile: inline)
                        slot_of[n] = e[1]
                    else:
                        self.allocate(n, b, p in r.whole, r.planned)
            call, widened = None, ()
            if r.planned and (not tracked or tracked.isdisjoint(names)):
                # (a tensor written in parts so far: decided per instruction, never shared)
                partial_writes = bool(masks) and not masks.keys().isdisjoint(names)
                if not partial_writes or self.writes.decides(b):
                    key = (*map(slot, names), fresh)
                    got = None if partial_writes else r.calls.get(key)
                    if got is None:
                        viewer.fresh = frozenset(names[p] for p in fresh)
                        widen.needing = []
                        got = widen.built(b.spec.plan(b)(viewer))  # (call, what it reads)
                        if form is not None and got[0] is not None and not partial_writes:
                            r.calls[key] = got
                    call, widened = got
                    if partial_writes and call is not None:
                        self.writes.mark(b)
            plain = call is None
            if plain:
                for p in fresh:  # (allocated as written whole by a plan that did not apply)
                    if names[p] not in tracked and names[p] not in masks:
                        self.start_tracking(names[p], b)
                for n in names:
                    if n in masks:
                        self.hand_over(n, b)
                for n in names:
                    if n not in bound_in_m:
                        self.bind(n, b)
                call = partial(_plain, self.m, b)
            elif widened:  # (widening steps for the copies the call reads, when stale)
                widen.steps(widened, b, add_b, add_call)
            add_b(b)
            add_call(call)
            if widen.current or widen.busy or widened:  # (what b reads raw, what it writes)
                widen.ran(b, names, r, plain, call, widened, slot, len(self.calls) - 1)
            done = ends.get(i)
            if done is not None:
                for n in ((done,) if done.__class__ is str else done):
                    if n in tracked or n in bound_in_m or n in masks:
                        self.release(n, b)
                    else:  # (the usual tile: inline)
                        e = arrays.pop(n)
                        free[e[2]].append(e)
        for n in [n for n in masks if n in outputs]:  # (kept: the run tracks the rest)
            self.hand_over(n, bound[-1])
        self.writes.unread_fills(self.bs, self.calls, self.widen.unread_copies())

    def view_key(self, r, shape=None) -> tuple:
        """(array number, layout, shape) of view(r, shape): equal keys, equal views."""
        s = r.ap
        layout = r.box if s is None else (s.byte_offset, s.byte_strides, s.shape,
                                          s.dtype.np_type)
        return self.arrays[r.decl.name][1], layout, r.shape if shape is None else shape

    def view(self, r, shape=None):
        """r's storage as an array of `shape` (default r.shape) without a copy, or None."""
        key = self.view_key(r, shape)
        v = self.views.get(key, False)
        if v is not False:
            return v
        arr, s, shape = self.arrays[r.decl.name][0], r.ap, key[2]
        if s is None:
            a = arr[r.np_index]
        elif s.indirect is not None or s.overlapping or not arr.flags.c_contiguous:
            a = None
        else:
            a = np.ndarray(s.shape, s.dtype.np_type, buffer=arr, offset=s.byte_offset,
                           strides=s.byte_strides)
        if a is not None:
            a = a.view()
            try:
                a.shape = shape  # raises instead of silently copying
            except AttributeError:
                a = None
        self.views[key] = a
        return a

    def allocate(self, name: str, b, whole: bool, planned: bool = False) -> None:
        """The array of a tensor first used by b (`whole`: b, planned, writes all of it
        and does not read it); decides whether it is tracked: by the plan's masks when b's
        form is planned (plan_writes.py), else at run time."""
        t = self.tensors[name]
        spare = None if t.output else self.free.get((t.shape, t.dtype.name))
        if spare:
            e = spare.pop()
        else:
            e = (np.zeros(t.shape, t.dtype.np_type), len(self.slot_of), self._kind(name))
            self.made += 1
        self.arrays[name] = e
        self.slot_of[name] = e[1]
        arr = e[0]
        if whole:  # written in full before anything reads it: nothing to track or reset
            if t.output:
                self.bind(name, b)
            return
        if not planned:
            return self.start_tracking(name, b)
        self._fill(name, b)
        self.writes.start(name, t.shape, len(self.calls) - 1)  # (the fill's step)
        if t.output:  # (in the Machine from the start; its written mask comes later)
            self.bound_in_m.add(name)
            self.bs.append(b)
            self.calls.append(partial(_bind, self.m, name, arr, None))

    def _fill(self, name: str, b) -> None:
        # (a reused slot holds an earlier tensor's values: start it as the plain path does)
        t = self.tensors[name]
        fill = np.zeros((), t.dtype.np_type)
        if self.policy == "nan" and t.dtype.is_float:
            fill = dt.cast(np.array(np.nan, np.float32), t.dtype)
        self.bs.append(b)
        self.calls.append(dt.filler(self.arrays[name][0], fill))
        self.widen.written(self.arrays[name][1])

    def start_tracking(self, name: str, b) -> None:
        """Before b, its first use: the tensor starts as on the plain path (the fill, no
        element written), tracked at run time. Also for a tensor allocated as written
        whole by a planned form whose instruction b then runs plainly: b may read what
        it writes (nc_matmul's unset accumulate adds onto the elements that hold data)."""
        self._fill(name, b)
        self.tracked.add(name)  # (under every policy: the fill is not a write)
        self.bound_in_m.discard(name)
        self.bind(name, b)

    def hand_over(self, name: str, b) -> None:
        """Before b: the run tracks the tensor from here on, from the plan's mask."""
        mask = self.writes.drop(name, handed=True)
        self.tracked.add(name)
        self.bound_in_m.add(name)
        self.bs.append(b)
        self.calls.append(partial(hand_over, self.m, name, self.arrays[name][0], mask))

    def bind(self, name: str, b) -> None:
        """Put the tensor into the Machine (for the plain calls) before b."""
        self.bound_in_m.add(name)
        shape = self.tensors[name].shape if name in self.tracked else None
        self.bs.append(b)
        self.calls.append(partial(_bind, self.m, name, self.arrays[name][0], shape))

    def release(self, name: str, b) -> None:
        """After b, the tensor's last use: its array is free for a later tensor."""
        e = self.arrays.pop(name)
        self.free[e[2]].append(e)
        self.tracked.discard(name)
        self.writes.drop(name)
        if name in self.bound_in_m:
            self.bound_in_m.discard(name)
            self.bs.append(b)
            self.calls.append(partial(_unbind, self.m, name))


def _facts(b, names) -> tuple:
    """(whether b is planned: its module has a plan form that applies and every view
    addresses plain storage, the positions in `names` of the tensors b writes in full
    without reading them) — the same for every instruction of one checked form."""
    if b.spec.plan is None or b.spec.plan(b) is None:
        return False, frozenset()
    acc = b.accesses()
    if not all(r.ap is None or r.ap.indirect is None for _, r in acc.reads) or \
            not all(r.ap is None or (r.ap.indirect is None and not r.ap.overlapping)
                    for _, r in acc.writes):  # (runtime indices, zero-step writes)
        return False, frozenset()
    read = {r.decl.name for _, r in acc.reads}
    whole = {r.decl.name for _, r in acc.writes if r.is_whole} - read
    if b.mask is not None:
        whole = set()  # (not reached: the plan forms refuse masks; said for clarity)
    return True, frozenset(i for i, n in enumerate(names) if n in whole)
