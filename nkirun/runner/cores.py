"""Running a two-core (LNC2) program: both cores' streams in the order checker/meet.py
walks them (each core in program order; the cores meet at their meeting points, whose
spec's `meeting` says what pairs and what is exchanged).

The cores share the machine's buffers (every tensor has its own name; a core's SBUF, PSUM
and private-HBM tensors are its own), but each core has its own engines and sequencer, so
its own accumulator registers, PRNG state and virtual registers (register_alloc...):
`steps` swaps them in as each core's instruction comes up. A meeting's `exchange` runs
before the pair executes (sendrecv: both sources are read before either destination is
written, so an exchange of two tiles in place is a swap).

Runtime loops: each core walks its own loops (nkirun/control.py) on its own registers, and
the meeting points pair by occurrence as they run; a meeting point one core reaches and the
other never does is E642, naming both cores' positions (a loop that never ends is E661).
"""
from __future__ import annotations

import numpy as np

from nkirun.checker.meet import SyncOrder, meet
from nkirun.runner import footprint
from nkirun.runner.machine import Accumulator

_PER_CORE = ("vector_acc", "scalar_acc", "prng", "registers")  # (prng: made on first use)


def steps(program, bound, m):
    """Yield the bound instructions in run order, preparing the machine for each (its core's
    registers; what a meeting's exchange delivers, e.g. into m.inbox)."""
    order = SyncOrder()
    state = [_fresh(m), _fresh(m)]
    m.inbox = {}
    current = None
    races = _Races.needed(bound)
    same = _SameValues.needed(program, bound)
    m.benign = set()  # (code, loc) of check warnings the run showed harmless
    for step in meet(_streams(program, bound, m, state), order, strict=True):
        pair = step if isinstance(step, tuple) else (step,)
        meeting = pair[0].spec.meeting
        m.meeting = pair if meeting is not None else None  # (run --shadow pairs the same)
        if meeting is not None and meeting.exchange is not None:
            m.current = pair[-1]  # (what an error while exchanging names: the pair)
            meeting.exchange(pair, m)
        for b in pair:
            core = b.inst.core
            if core != current:
                if current is not None:
                    _save(m, state[current])
                _load(m, state[core])
                current = core
            if races is not None:
                m.current = b
                races.see(b, order.epoch.get(b.index), m)
            yield b
            if same is not None:
                same.after(b, m)


def _streams(program, bound, m, state) -> tuple:
    """Each core's instructions in the order it runs them: its list, or (runtime loops) a
    walk of its loops on its own registers."""
    per_core: tuple = ([], [])
    for b in bound:
        per_core[b.inst.core].append(b)
    if not program.loops:
        return per_core
    from nkirun.control import Walk
    from nkirun.runner.registers import unwritten
    m.looped = frozenset(i for lp in program.loops for i in range(lp.first, lp.end))
    m.trips = {lp.name: [] for lp in program.loops}
    walks = []
    for core, own in enumerate(per_core):
        regs = state[core]["registers"]

        def read(name, loop, regs=regs):
            value = regs.get(name)
            if value is None:
                from nkirun.diagnostics import RunError
                raise RunError(unwritten(name, loop))
            return value

        def write(name, value, regs=regs):
            regs[name] = value

        w = Walk(program, read, write)
        w.trips = m.trips  # (one table for both cores: loop names are unique)
        by_index = {b.index: b for b in own}
        lo = min(by_index, default=0)
        hi = max(by_index, default=-1) + 1
        walks.append(_walk(w, by_index, lo, hi, core))
    return tuple(walks)


def _walk(w, by_index: dict, lo: int, hi: int, core: int):
    for i in w.indices(hi, lo, core):
        b = by_index.get(i)
        if b is not None:
            yield b


class _Races:
    """W631: shared-HBM elements both cores touch in one epoch (checker/cores.py), at least
    one writing, where an indirect (runtime-indexed) view hides which elements statically.
    Only programs with such a view on a shared tensor pay for it. What each access touches
    is kept as runs (runner/footprint.py), and per (tensor, epoch, core) the union of what
    it read and wrote: an access is compared with the other core's unions, and only when
    they meet with the other core's accesses one by one (to name the instruction)."""

    def __init__(self):
        self.seen: dict = {}  # (tensor, epoch) -> per core _Touched
        self.reported: set = set()

    @classmethod
    def needed(cls, bound):
        for b in bound:
            acc = b.accesses()
            if any(_shared(r) and r.ap is not None and r.ap.indirect is not None
                   for _, r in acc.reads + acc.writes):
                return cls()
        return None

    def see(self, b, epoch, m) -> None:
        if b.spec.meeting is not None:
            return
        acc = b.accesses()
        for written, pairs in ((False, acc.reads), (True, acc.writes)):
            for _, r in pairs:
                if not _shared(r):
                    continue
                runs = _runs(r, m)
                both = self.seen.setdefault((r.decl.name, epoch), (_Touched(), _Touched()))
                other = both[1 - b.inst.core]
                if other.meets(runs, written):
                    for ob, owritten, oruns in other.accesses:
                        key = (r.decl.name, ob.index, b.index)
                        if (written or owritten) and key not in self.reported \
                                and footprint.meets(runs, oruns):
                            self.reported.add(key)
                            m.warnings.append(_race(b, r.decl.name, written, ob, owritten))
                both[b.inst.core].add(b, written, runs)


class _Touched:
    """What one core's accesses of one shared tensor touched in one epoch."""

    def __init__(self):
        self.accesses: list = []  # (Bound, written, runs)
        self.read, self.written = footprint.EMPTY, footprint.EMPTY

    def add(self, b, written: bool, runs) -> None:
        self.accesses.append((b, written, runs))
        if written:
            self.written = footprint.union(self.written, runs)
        else:
            self.read = footprint.union(self.read, runs)

    def meets(self, runs, written: bool) -> bool:
        """Whether an access of the other core (a write when `written`) races with these."""
        return footprint.meets(runs, self.written) or (
            written and footprint.meets(runs, self.read))


def _runs(r, m):
    """The storage elements view r touches now, as runs (indirect: from its index's values;
    the rows oob_mode=skip leaves out are not touched)."""
    ssz = r.decl.dtype.itemsize
    if r.ap is None:  # a basic index: its box is exact
        return footprint.box(r.box, r.decl.shape)
    s = r.ap
    if s.indirect is None:
        return footprint.lattice(s.byte_offset, s.shape, s.byte_strides, s.dtype.itemsize, ssz)
    off, keep = m.indirect_rows(r)
    rows = off.reshape(s.shape[0], -1)[:, 0]  # each row's first byte (its other k are 0)
    if keep is not None:
        rows = rows[keep]
    inner = footprint.lattice(0, s.shape[1:], s.byte_strides[1:], s.dtype.itemsize, 1)
    return _bytes_to_elements(footprint.shifted(inner, rows), ssz)


def _bytes_to_elements(runs, ssz: int):
    lo, hi = runs
    return footprint.merge(lo // ssz, (hi + ssz - 1) // ssz)


class _SameValues:
    """The W630 pairs where both cores write the same shared elements in one epoch: the
    result depends on which write lands last only if they write different values. Run
    compares what each wrote there: different values are W633 (a race that changes the
    result); the same values (a kernel that does not split a store between its cores, as
    nki-library's router_topk without token sharding) make the check's W630 harmless, and
    run drops it from its warnings (m.benign)."""

    def __init__(self, pairs, once: bool = False):
        self.watch: dict = {}  # instruction index -> [(pair number, key)]
        self.pairs = pairs
        # (pair number, index) -> (the view, or the elements an indirect view reached; the
        # values written there): a static view's elements are made again when compared,
        # not kept (int64 per element, twice a float32 value's bytes)
        self.wrote: dict = {}
        self.once = once  # no runtime loops: a compared pair's writes are not seen again
        for k, (late, lkey, early, ekey, _) in enumerate(pairs):
            self.watch.setdefault(late.index, []).append((k, lkey))
            self.watch.setdefault(early.index, []).append((k, ekey))

    @classmethod
    def needed(cls, program, bound):
        from nkirun.checker.cores import races
        from nkirun.checker.meet import sync_order
        order = sync_order(bound)
        if order.deadlock is not None:
            return None
        pairs: list = []
        races(program, order, bound, pairs)
        return cls(pairs, once=not program.loops) if pairs else None

    def after(self, b, m) -> None:
        for k, key in self.watch.get(b.index, ()):
            r = b.args[key]
            elems = _elements(r, m)
            values = m.buffers[r.decl.name].reshape(-1)[elems]  # (a copy: fancy indexing)
            # a view no register moves (no runtime loop, no run-time index) is kept as itself
            static = self.once and (r.ap is None or r.ap.indirect is None)
            self.wrote[(k, b.index)] = (r if static else elems, values)
            late, lkey, early, _, name = self.pairs[k]
            other_key = (k, early.index if b.index == late.index else late.index)
            other = self.wrote.get(other_key)
            if other is None:
                continue
            if self.once:  # both writes seen, never to run again: their copies go
                del self.wrote[(k, b.index)], self.wrote[other_key]
            where = other[0] if isinstance(other[0], np.ndarray) else _elements(other[0], m)
            _, ia, ib = np.intersect1d(elems, where, return_indices=True)
            mine, theirs = values[ia], other[1][ib]
            if mine.tobytes() == theirs.tobytes():
                m.benign.add(where_key("W630", late.loc(lkey)))
            else:
                m.warnings.append(_differs(late, lkey, early, name))


def where_key(code: str, loc) -> tuple:
    """A diagnostic's code and place, whatever spelling of its file (a kernel's check
    diagnostics name it as the command line did)."""
    import os
    return (code, os.path.abspath(loc.file) if loc and loc.file else None,
            loc.line if loc else None, loc.column if loc else None)


def harmless(diags, m) -> list:
    """The diagnostics less the W630s this run showed harmless (m.benign)."""
    benign = getattr(m, "benign", ())
    return [d for d in diags if not benign or where_key(d.code, d.loc) not in benign]


def _differs(b, key, ob, name):
    from nkirun.diagnostics import warning
    return warning("W633", f"{b.op}: both cores wrote different values to the same elements "
                   f"of shared `{name}` (core {ob.inst.core} at instruction {ob.index} "
                   f"({ob.op}) at {ob.loc()}): the result depends on which write landed last",
                   b.loc(key), b.index,
                   hint="put a core_barrier between the writes, or give each core its own "
                        "elements")


def _shared(r) -> bool:
    return not r.decl.on_chip and r.decl.core is None


def _elements(r, m) -> np.ndarray:
    """The flat storage elements view r touches now (indirect: from its index's values)."""
    from nkirun.views.access import storage_elements
    if r.ap is None:
        return np.arange(r.decl.size).reshape(r.decl.shape)[r.np_index].ravel()
    off = m.indirect_rows(r)[0] if r.ap.indirect is not None else None
    return np.unique(storage_elements(r, off))


def _race(b, name, written, ob, owritten):
    from nkirun.diagnostics import warning
    what = lambda w: "writes" if w else "reads"  # noqa: E731
    return warning("W631", f"{b.op}: race on shared `{name}` at run time: core {b.inst.core} "
                   f"{what(written)} elements that core {ob.inst.core} {what(owritten)} at "
                   f"instruction {ob.index} ({ob.op}) at {ob.loc()}, with no core_barrier or "
                   "sendrecv between them", b.loc(), b.index,
                   hint="put a core_barrier between them, or index disjoint rows per core")


def _fresh(m) -> dict:
    return {"vector_acc": Accumulator(m.vector_acc.reset_value),
            "scalar_acc": Accumulator(m.scalar_acc.reset_value), "prng": None,
            "registers": {}}


def _save(m, state: dict) -> None:
    for k in _PER_CORE:
        state[k] = getattr(m, k, None)


def _load(m, state: dict) -> None:
    for k in _PER_CORE:
        setattr(m, k, state[k])
