"""Two-core (LNC2) programs: who owns which tensor, deadlocks and races on shared HBM.

A two-core program (Program.cores == 2) has one instruction stream per core
(Instruction.core); each core runs its own in program order. The streams meet only at
meeting points (instructions whose spec has a `meeting`: sendrecv, core_barrier; what
pairs with what is theirs to say, isa/spec.py Meeting). checker/meet.py runs both streams
as the hardware would with nothing but those points ordering them and returns one total
order, in which `run`, `cost` and the dataflow pass process the instructions. A point one
core reaches and the other never can is a deadlock (E635), found here, before anything
runs. Loop bodies are walked once here; when a meeting point sits in a runtime loop, the
pairing the walk finds is the body-once one, and a mismatch it finds may not be one at run
time (loops pair by occurrence): W632 says so, and `run` decides (E642).

Between two consecutive synchronisation points the cores run concurrently: two accesses of
the same shared-HBM elements in the same "epoch" (the number of points passed), on
different cores, at least one a write, are a race (W630) — the result depends on timing.
Views known statically are compared here; indirect (runtime-indexed) ones at run time
(runner/cores.py, W631).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from nkirun import speed  # the speed switches, beside their plain twins
from nkirun.diagnostics import Diagnostic, error, warning
from nkirun.ir import Program

from nkirun.hw.targets import LNC_TARGETS  # noqa: E402,F401  (re-exported)

if TYPE_CHECKING:  # (meet.py is imported by a program that has meeting points or two cores)
    from nkirun.checker.meet import SyncOrder


def is_meeting(b) -> bool:
    return b.spec.meeting is not None


def core_rules(program: Program, bound) -> list[Diagnostic]:
    """Ownership and placement rules of core tags and synchronisation instructions."""
    out = []
    two = program.cores == 2
    by_names = speed.CORES_BY_NAMES
    core_of = {n: t.core for n, t in program.tensors.items()}
    if two and program.target not in LNC_TARGETS:
        first = next(iter(program.instructions), None)
        out.append(error("E632", f"a two-core program needs an LNC2 target (trn2, trn3); "
                         f"{program.target} has one core per logical core",
                         first.loc if first else None, hint="target: trn2"))
    for t in program.tensors.values():
        where = t.key_locs.get("core", t.loc)
        if t.core is not None and not two:
            out.append(error("E631", f"tensor `{t.name}` names core {t.core}, but the program "
                             "has one core", where, hint="write its instructions under "
                             "`cores:` (text: `core 0` / `core 1` lines), or drop `core`"))
        elif two and t.core is None and t.on_chip:
            out.append(error("E631", f"tensor `{t.name}` is in {t.buffer}, which each core "
                             "has its own of: give it `core: 0` or `core: 1`", t.loc))
    for b in bound:
        if is_meeting(b) and not two:
            out.append(b.err("E634", "only two-core (LNC2) programs synchronise cores",
                             hint="write the program's instructions under `cores:` "
                                  "(a kernel: run it with --lnc 2)"))
            continue
        if not two:
            continue
        if not by_names or _foreign(b, core_of):  # (else: no tensor of the other core's)
            out.extend(_ownership(b))
        if is_meeting(b) and b.spec.meeting.rules is not None:
            out.extend(b.spec.meeting.rules(b))
    return out


def _foreign(b, core_of: dict) -> bool:
    """Whether b names a tensor another core owns, read from its tensor names
    (Bound.names_plan: a form instance's Operands stay unmade)."""
    core = b.inst.core
    return any(core_of.get(n) not in (None, core) for n in b.names_plan()[1])


def _ownership(b) -> list[Diagnostic]:
    """E633 for each access of b to a tensor another core owns (the plain rule)."""
    out = []
    for key, r in b.accesses().reads + b.accesses().writes:
        owner = r.decl.core
        if owner is not None and owner != b.inst.core:
            out.append(b.err("E633", f"`{r.decl.name}` belongs to core {owner}; core "
                             f"{b.inst.core} cannot access it", key,
                             hint="exchange tiles with sendrecv, or through a "
                                  "shared-HBM tensor and a core_barrier"))
    return out


def races(program: Program, order: SyncOrder, bound, writes: list | None = None
          ) -> list[Diagnostic]:
    """W630: shared-HBM elements two cores touch in one epoch, at least one writing.
    `writes`, when given, collects the pairs where both write (late Bound, its key, early
    Bound, early key, tensor): run compares the values they write (runner/cores.py).

    Per (tensor, epoch) the accesses are swept in order of their first-dimension start, so
    each is compared only with the other core's accesses whose first-dimension range it
    meets (tiles of disjoint rows: about linear, not quadratic)."""
    groups: dict = {}  # (tensor, epoch) -> [(lo, hi, run position, Bound, key, box, written)]
    position = {b.index: i for i, b in enumerate(order.flat())}
    epoch = _epochs(program, order, bound)
    by_names = speed.CORES_BY_NAMES
    if by_names:
        local = {n for n, t in program.tensors.items() if t.on_chip or t.core is not None}
    for b in bound:
        if is_meeting(b):
            continue
        if by_names and local.issuperset(b.names_plan()[1]):
            continue  # (every tensor it names is on chip or one core's: nothing to compare)
        acc = b.accesses()
        for written, pairs in ((False, acc.reads), (True, acc.writes)):
            for key, r in pairs:
                if r.decl.on_chip or r.decl.core is not None or (r.ap is not None
                                                                   and r.ap.indirect):
                    continue
                start, count, step = r.box[0]
                groups.setdefault((r.decl.name, epoch(b.index)), []).append(
                    (start, start + (count - 1) * step, position[b.index], b, key, r.box,
                     written))
    out, reported = [], set()
    for (name, _), accesses in groups.items():
        if len({a[3].inst.core for a in accesses}) < 2 or not any(a[6] for a in accesses):
            continue
        out += _sweep(name, accesses, reported, writes)
    return out


def _epochs(program: Program, order: SyncOrder, bound):
    """instruction index -> its epoch, where a loop body holding meeting points joins the
    epoch its body starts in with the one it ends in: the end of one iteration runs
    concurrently with the start of the next (and, when the loop runs no time, the code
    before it with the code after it)."""
    parent: dict = {}

    def find(e):
        while parent.get(e, e) != e:
            e = parent[e]
        return e
    if program.loops:
        core_of = {b.index: b.inst.core for b in bound}
        meetings = {b.index for b in bound if is_meeting(b)}
        for lp in program.loops:
            inside = [i for i in range(lp.first, lp.end) if i in order.after]
            if not inside or not meetings.intersection(inside):
                continue
            head = order.epoch[inside[0]]
            tail = order.after[max(i for i in inside if core_of[i] == core_of[inside[0]])]
            a, b = find(head), find(tail)
            if a != b:
                parent[max(a, b)] = min(a, b)
    return lambda index: find(order.epoch.get(index))


def _sweep(name, accesses, reported, writes) -> list[Diagnostic]:
    from nkirun.checker.overlap import overlaps
    out, active = [], ([], [])  # per core: accesses whose range may still meet a later one
    for a in sorted(accesses, key=lambda a: (a[0], a[2])):
        lo, core = a[0], a[3].inst.core
        other = active[1 - core]
        other[:] = [o for o in other if o[1] >= lo]
        for o in other:
            if not (a[6] or o[6]) or not overlaps(a[5], o[5]):
                continue
            late, early = (a, o) if a[2] > o[2] else (o, a)
            if (name, early[3].index) not in reported:
                reported.add((name, early[3].index))
                out.append(_race(late[3], late[4], name, late[6], early[3], early[6]))
                if writes is not None and late[6] and early[6]:
                    writes.append((late[3], late[4], early[3], early[4], name))
            break
        active[core].append(a)
    return out


def _race(b, key, name, written, ob, owritten) -> Diagnostic:
    from nkirun.checker.meet import where as _where
    what = lambda w: "writes" if w else "reads"  # noqa: E731
    both = ("; the result depends on which write lands last unless both write the same "
            "values (run compares them: W633 when they differ)") if written and owritten else ""
    return warning("W630", f"{b.op}: race on shared `{name}`: core {b.inst.core} {what(written)}"
                   f" it here and core {ob.inst.core} {what(owritten)} the same elements at "
                   f"{_where(ob)}, with no core_barrier or sendrecv between them{both}",
                   b.loc(key), b.index,
                   hint="put a core_barrier between the write and the other core's access, "
                        "or give each core its own elements")


def check_cores(program: Program, bound) -> tuple[list, list[Diagnostic]]:
    """(the instructions in run order, the two-core diagnostics) for validate."""
    if program.cores == 1 and not any(t.core is not None for t in program.tensors.values()) \
            and not any(b.spec.meeting is not None for b in bound):
        return bound, []
    diags = core_rules(program, bound)
    if program.cores == 1:
        return bound, diags
    from nkirun.checker.meet import sync_order
    order = sync_order(bound)
    if order.deadlock is not None and _looped_meeting(program, bound):
        d = order.deadlock
        order.diags.remove(d)
        order.diags.append(warning(
            "W632", "meeting points inside runtime loops pair by occurrence as the loops run; "
            "walking each loop body once, " + d.message.removeprefix("deadlock: "), d.loc,
            d.instruction, hint="run decides: a meeting point never met there is E642"))
    diags += order.diags
    if order.deadlock is None and not any(d.is_error for d in order.diags):
        diags += races(program, order, bound)
    return order.flat(), diags


def _looped_meeting(program: Program, bound) -> bool:
    """Whether a meeting point sits in a loop body."""
    return any(is_meeting(b) and lp.first <= b.index < lp.end
               for lp in program.loops for b in bound)


def per_core(program: Program, bound):
    """(the program with one core's tensors, that core's instructions) per core."""
    from dataclasses import replace
    if program.cores == 1:
        yield program, bound
        return
    for c in range(program.cores):
        tensors = {n: t for n, t in program.tensors.items() if t.core in (None, c)}
        yield replace(program, tensors=tensors), [b for b in bound if b.inst.core == c]
