"""Two-core (LNC2) programs: who owns which tensor, the order both cores' streams run in,
deadlocks and races on shared HBM.

A two-core program (Program.cores == 2) has one instruction stream per core
(Instruction.core); each core runs its own in program order. The streams meet only at
synchronisation points: the k-th `core_barrier` of core 0 with the k-th of core 1, the k-th
`sendrecv` of pipe p on one core with the k-th of pipe p on the other. `sync_order` runs
both streams as the hardware would with nothing but those points ordering them (core 0
until it must wait, then core 1, ...) and returns one total order, in which `run`, `cost`
and the dataflow pass process the instructions. A point one core reaches and the other
never can is a deadlock (E635), found here, before anything runs.

Between two consecutive synchronisation points the cores run concurrently: two accesses of
the same shared-HBM elements in the same "epoch" (the number of points passed), on
different cores, at least one a write, are a race (W630) — the result depends on timing.
Views known statically are compared here; indirect (runtime-indexed) ones at run time
(runner/cores.py, W631).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from nkirun.diagnostics import Diagnostic, error, warning
from nkirun.ir import Program

SYNC_OPS = frozenset({"core_barrier", "sendrecv"})
LNC_TARGETS = ("trn2", "trn3")


@dataclass
class SyncOrder:
    """`steps`: the run order, each a Bound or a pair (first arrival, second arrival) of a
    synchronisation point; `epoch`: instruction index -> points its core had passed."""

    steps: list = field(default_factory=list)
    epoch: dict = field(default_factory=dict)
    diags: list = field(default_factory=list)

    def flat(self) -> list:
        out = []
        for s in self.steps:
            out.extend(s if isinstance(s, tuple) else (s,))
        return out


def meeting_key(b):
    """What a synchronisation instruction waits for on the other core (None: nothing)."""
    if b.op == "core_barrier":
        return ("core_barrier",)
    if b.op == "sendrecv" and b["send_to_rank"] != b.inst.core:
        return ("sendrecv", b["pipe_id"])
    return None


def _where(b) -> str:
    return f"instruction {b.index} ({b.op}) at {b.loc()}"


def sync_order(bound) -> SyncOrder:  # long: the two-stream walk with its deadlock report
    streams = ([], [])
    for b in bound:
        streams[b.inst.core].append(b)
    out = SyncOrder()
    pos, seen = [0, 0], [{}, {}]  # per core: key -> how many of them it passed
    waiting: list = [None, None]  # per core: (key, k, Bound) it waits at
    epoch, core = 0, 0
    while True:
        stream = streams[core]
        while waiting[core] is None and pos[core] < len(stream):
            b = stream[pos[core]]
            key = meeting_key(b) if b.op in SYNC_OPS else None
            if key is None:
                out.steps.append(b)
                out.epoch[b.index] = epoch
                pos[core] += 1
                continue
            k = seen[core].get(key, 0)
            other = waiting[1 - core]
            if other is not None and other[:2] == (key, k):  # the other core is there
                if b.op == "sendrecv":
                    out.diags += _pair_rules(other[2], b) + _pair_rules(b, other[2])
                out.steps.append((other[2], b))
                out.epoch[other[2].index] = out.epoch[b.index] = epoch
                epoch += 1
                waiting[1 - core] = None
                seen[0][key] = seen[1][key] = k + 1
                pos[0] += 1
                pos[1] += 1
            else:
                waiting[core] = (key, k, b)
        done = [waiting[c] is None and pos[c] >= len(streams[c]) for c in (0, 1)]
        if all(done):
            return out
        if waiting[1 - core] is None and not done[1 - core]:
            core = 1 - core  # the other core can still run
            continue
        if waiting[core] is None and not done[core]:
            continue
        stuck = core if waiting[core] is not None else 1 - core
        b = waiting[stuck][2]
        other = waiting[1 - stuck]
        there = (f"core {1 - stuck} waits at {_where(other[2])}" if other is not None
                 else f"core {1 - stuck} ends without reaching it")
        out.diags.append(error(
            "E635", f"deadlock: core {stuck} waits at {_where(b)} for core {1 - stuck}, but "
            f"{there}", b.loc(), b.index,
            hint="both cores must pass the same core_barriers, and the same sendrecvs of "
                 "each pipe_id, in the same order"))
        return out


def _pair_rules(sender, receiver) -> list[Diagnostic]:
    """What `receiver`'s dst gets from `sender`'s src must fit: same dtype and shape."""
    src, dst = sender.tile("src"), receiver.tile("dst")
    if src is None or dst is None or (src.dtype == dst.dtype and src.shape == dst.shape):
        return []
    code = "E638" if src.dtype != dst.dtype else "E639"
    return [receiver.err(code, f"dst ({dst.dtype.name} {list(dst.shape)}) receives core "
                         f"{sender.inst.core}'s src ({src.dtype.name} {list(src.shape)}) at "
                         f"{_where(sender)}; they must have the same dtype and shape", "dst")]


def core_rules(program: Program, bound) -> list[Diagnostic]:
    """Ownership and placement rules of core tags and synchronisation instructions."""
    out = []
    two = program.cores == 2
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
        if b.op in SYNC_OPS and not two:
            out.append(b.err("E634", "only two-core (LNC2) programs synchronise cores",
                             hint="write the program's instructions under `cores:` "
                                  "(a kernel: run it with --lnc 2)"))
            continue
        if not two:
            continue
        for key, r in b.accesses().reads + b.accesses().writes:
            owner = r.decl.core
            if owner is not None and owner != b.inst.core:
                out.append(b.err("E633", f"`{r.decl.name}` belongs to core {owner}; core "
                                 f"{b.inst.core} cannot access it", key,
                                 hint="exchange tiles with sendrecv, or through a "
                                      "shared-HBM tensor and a core_barrier"))
        data = b.tile("data") if b.op == "core_barrier" else None
        if data is not None and data.decl.core is not None:
            out.append(b.err("E634", f"data `{data.decl.name}` is core {data.decl.core}'s "
                             "private HBM; a barrier synchronises on shared HBM", "data"))
        if b.op == "sendrecv" and b["send_to_rank"] != b["recv_from_rank"]:
            out.append(b.err("E636", f"sends to core {b['send_to_rank']} but receives from "
                             f"core {b['recv_from_rank']}; with two cores a transfer "
                             "exchanges with one partner (or, to its own rank, copies "
                             "locally)", "recv_from_rank",
                             hint="give send_to_rank and recv_from_rank the same core"))
    return out


def races(program: Program, order: SyncOrder, bound) -> list[Diagnostic]:
    """W630: shared-HBM elements two cores touch in one epoch, at least one writing.

    Per (tensor, epoch) the accesses are swept in order of their first-dimension start, so
    each is compared only with the other core's accesses whose first-dimension range it
    meets (tiles of disjoint rows: about linear, not quadratic)."""
    shared = {n for n, t in program.tensors.items() if not t.on_chip and t.core is None}
    groups: dict = {}  # (tensor, epoch) -> [(lo, hi, run position, Bound, key, box, written)]
    position = {b.index: i for i, b in enumerate(order.flat())}
    for b in bound:
        if b.op in SYNC_OPS:
            continue
        acc = b.accesses()
        for written, pairs in ((False, acc.reads), (True, acc.writes)):
            for key, r in pairs:
                if r.decl.name not in shared or (r.ap is not None and r.ap.indirect):
                    continue
                start, count, step = r.box[0]
                groups.setdefault((r.decl.name, order.epoch.get(b.index)), []).append(
                    (start, start + (count - 1) * step, position[b.index], b, key, r.box,
                     written))
    out, reported = [], set()
    for (name, _), accesses in groups.items():
        if len({a[3].inst.core for a in accesses}) < 2 or not any(a[6] for a in accesses):
            continue
        out += _sweep(name, accesses, reported)
    return out


def _sweep(name, accesses, reported) -> list[Diagnostic]:
    from nkirun.schedule.overlap import overlaps
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
            break
        active[core].append(a)
    return out


def _race(b, key, name, written, ob, owritten) -> Diagnostic:
    what = lambda w: "writes" if w else "reads"  # noqa: E731
    return warning("W630", f"{b.op}: race on shared `{name}`: core {b.inst.core} {what(written)}"
                   f" it here and core {ob.inst.core} {what(owritten)} the same elements at "
                   f"{_where(ob)}, with no core_barrier or sendrecv between them",
                   b.loc(key), b.index,
                   hint="put a core_barrier between the write and the other core's access, "
                        "or give each core its own elements")


def check_cores(program: Program, bound) -> tuple[list, list[Diagnostic]]:
    """(the instructions in run order, the two-core diagnostics) for validate."""
    if program.cores == 1 and not any(t.core is not None for t in program.tensors.values()) \
            and not any(i.op in SYNC_OPS for i in program.instructions):
        return bound, []
    diags = core_rules(program, bound)
    if program.cores == 1:
        return bound, diags
    order = sync_order(bound)
    diags += order.diags
    if not order.diags:
        diags += races(program, order, bound)
    return order.flat(), diags


def per_core(program: Program, bound):
    """(the program with one core's tensors, that core's instructions) per core."""
    from dataclasses import replace
    if program.cores == 1:
        yield program, bound
        return
    for c in range(program.cores):
        tensors = {n: t for n, t in program.tensors.items() if t.core in (None, c)}
        yield replace(program, tensors=tensors), [b for b in bound if b.inst.core == c]
