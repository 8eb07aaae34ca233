"""Running a two-core (LNC2) program: both cores' streams in the order checker/cores.py
computed (each core in program order; the cores meet at core_barrier and sendrecv).

The cores share the machine's buffers (every tensor has its own name; a core's SBUF, PSUM
and private-HBM tensors are its own), but each core has its own engines, so its own
accumulator registers and PRNG state: `steps` swaps them in as each core's instruction
comes up. A sendrecv pair reads both sources before either destination is written
(isa/sendrecv.py), so an exchange of two tiles in place is a swap.
"""
from __future__ import annotations

import numpy as np

from nkirun.checker.cores import sync_order
from nkirun.runner.machine import Accumulator

_PER_CORE = ("vector_acc", "scalar_acc", "prng")  # (prng: made on first use, hw/prng.py)


def steps(bound, m):
    """Yield the bound instructions in run order, preparing the machine for each (its core's
    registers; the tiles a sendrecv receives, in m.inbox)."""
    order = sync_order(bound)
    state = [_fresh(m), _fresh(m)]
    m.inbox = {}
    current = None
    races = _Races.needed(bound)
    for step in order.steps:
        pair = step if isinstance(step, tuple) else (step,)
        if pair[0].op == "sendrecv":
            _deliver(pair, m)
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


class _Races:
    """W631: shared-HBM elements both cores touch in one epoch (checker/cores.py), at least
    one writing, where an indirect (runtime-indexed) view hides which elements statically.
    Only programs with such a view on a shared tensor pay for it."""

    def __init__(self):
        self.seen: dict = {}  # (tensor, epoch) -> per core [(Bound, written, elements)]
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
        from nkirun.checker.cores import SYNC_OPS
        if b.op in SYNC_OPS:
            return
        acc = b.accesses()
        for written, pairs in ((False, acc.reads), (True, acc.writes)):
            for _, r in pairs:
                if not _shared(r):
                    continue
                elems = _elements(r, m)
                lists = self.seen.setdefault((r.decl.name, epoch), ([], []))
                for ob, owritten, oelems in lists[1 - b.inst.core]:
                    key = (r.decl.name, ob.index, b.index)
                    if (written or owritten) and key not in self.reported \
                            and np.intersect1d(elems, oelems).size:
                        self.reported.add(key)
                        m.warnings.append(_race(b, r.decl.name, written, ob, owritten))
                lists[b.inst.core].append((b, written, elems))


def _shared(r) -> bool:
    return not r.decl.on_chip and r.decl.core is None


def _elements(r, m) -> np.ndarray:
    """The flat storage elements view r touches now (indirect: from its index's values)."""
    from nkirun.source.access import storage_elements
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


def _deliver(pair, m) -> None:
    """Read what each member of a sendrecv pair (or a send to its own rank) receives."""
    if len(pair) == 1:
        b = pair[0]
        m.inbox[b.index] = m.read(b["src"]).copy()
        return
    first, second = pair
    m.inbox[first.index] = m.read(second["src"]).copy()
    m.inbox[second.index] = m.read(first["src"]).copy()


def _fresh(m) -> dict:
    return {"vector_acc": Accumulator(m.vector_acc.reset_value),
            "scalar_acc": Accumulator(m.scalar_acc.reset_value), "prng": None}


def _save(m, state: dict) -> None:
    for k in _PER_CORE:
        state[k] = getattr(m, k, None)


def _load(m, state: dict) -> None:
    for k in _PER_CORE:
        setattr(m, k, state[k])
