"""The run order of a two-core (LNC2) program: both cores' instruction streams, met at their
meeting points.

Each core runs its own stream in order. A meeting point is an instruction whose spec has a
`meeting` (isa/spec.py Meeting: sendrecv, core_barrier); what it waits for on the other core
is its `key`, and the k-th arrival at a key on one core pairs with the k-th arrival at the
same key on the other (k counts arrivals as they happen, so inside runtime loops a meeting
point pairs by occurrence). `meet` walks both streams as the hardware would with nothing
but those points ordering them: core 0 until it cannot go on, then core 1, and so on.

* A meeting whose spec `blocks_core` (core_barrier) stops its core until the partner
  arrives.
* One that does not (sendrecv) is left pending and the core runs on; its later
  instructions that touch a pending meeting's tensors, and its next arrival at the same
  key, wait for the pair to complete (different pipes progress independently).
* A pair completes as one step, when its second side arrives: (first arrival, second
  arrival). Each completed pair starts a new "epoch" (the race check compares accesses of
  one epoch).

The streams are iterables of Bound, pulled one instruction at a time and only after the
previous one of that core was handed out (the runner's loop walks read registers as they
go). When neither core can go on, the walk stops with a deadlock that names where each core
is: `check` reports it (E635) before anything runs, `run` (whose loops decide the streams)
stops with E642 — never a hang.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from nkirun.diagnostics import RunError, error


def meeting_key(b):
    """What b waits for on the other core, or None (not a meeting point, or one that
    completes alone)."""
    m = b.spec.meeting
    return None if m is None else m.key(b)


def where(b) -> str:
    return f"instruction {b.index} ({b.op}) at {b.loc()}"


@dataclass
class SyncOrder:
    """`steps`: the run order, each a Bound or a pair (first arrival, second arrival) of a
    meeting point; `epoch`: instruction index -> the epoch it ran in (its first run);
    `after`: instruction index -> the epoch once it ran (a completed pair: the next one)."""

    steps: list = field(default_factory=list)
    epoch: dict = field(default_factory=dict)
    after: dict = field(default_factory=dict)
    diags: list = field(default_factory=list)
    deadlock: object = None  # the E635/E642 Diagnostic, when the walk stopped on one
    count: int = 0  # epochs so far

    def flat(self) -> list:
        out = []
        for s in self.steps:
            out.extend(s if isinstance(s, tuple) else (s,))
        return out


class _Stream:
    """One core's position: the instruction it holds (pulled, not yet run), the meeting it
    waits at (blocks_core), its pending meetings (key, k, Bound), arrivals per key."""

    __slots__ = ("it", "held", "ended", "waiting", "pending", "arrivals")

    def __init__(self, stream):
        self.it = iter(stream)
        self.held = None
        self.ended = False
        self.waiting = None
        self.pending: list = []
        self.arrivals: dict = {}

    def peek(self):
        if self.held is None and not self.ended:
            self.held = next(self.it, None)
            self.ended = self.held is None
        return self.held

    def take(self, key, k):
        """Remove and return this core's arrival k at `key`, if it is there."""
        if self.waiting is not None and self.waiting[:2] == (key, k):
            got, self.waiting = self.waiting, None
            return got
        for p in self.pending:
            if p[:2] == (key, k):
                self.pending.remove(p)
                return p
        return None

    def settled(self) -> bool:
        return self.ended and self.waiting is None and not self.pending


def _names(b) -> set:
    acc = b.accesses()
    return {r.decl.name for _, r in acc.reads + acc.writes}


def _waits_on_pending(b, key, pending) -> object:
    """The pending meeting b must wait for (it touches its tensors, or arrives at the same
    key again), or None."""
    mine = None
    for p in pending:
        if key is not None and p[0] == key:
            return p[2]
        if mine is None:
            mine = _names(b)
        if mine & _names(p[2]):
            return p[2]
    return None


def meet(streams, order: SyncOrder, strict: bool = False):
    """Yield both cores' instructions in one run order (see the module docstring), filling
    `order` (epochs; with strict=False the pair rules' diagnostics and the deadlock).
    strict: a pair rule broken or a deadlock raises RunError (E642) instead."""
    s = (_Stream(streams[0]), _Stream(streams[1]))
    core, idle = 0, 0
    while True:
        moved = yield from _turn(s, core, order, strict)
        if s[0].settled() and s[1].settled():
            return
        idle = 0 if moved else idle + 1
        if idle >= 2:  # neither core could go on since the other's last move
            order.deadlock = _deadlock(s, strict)
            if strict:
                raise RunError(order.deadlock)
            return
        core = 1 - core


def _turn(s, c: int, order: SyncOrder, strict: bool):  # long: one core's run to its wait
    """Run core c until it must wait; True if it did anything."""
    me, other = s[c], s[1 - c]
    moved = False
    while me.waiting is None:
        b = me.peek()
        if b is None:
            return moved
        key = meeting_key(b)
        if me.pending and _waits_on_pending(b, key, me.pending) is not None:
            return moved
        me.held, moved = None, True
        if key is None:
            order.epoch.setdefault(b.index, order.count)
            order.after[b.index] = order.count
            yield b
            continue
        k = me.arrivals.get(key, 0)
        me.arrivals[key] = k + 1
        partner = other.take(key, k)
        if partner is None:
            if b.spec.meeting.blocks_core:
                me.waiting = (key, k, b)
            else:
                me.pending.append((key, k, b))
            continue
        first = partner[2]
        rules = b.spec.meeting.pair_rules
        if rules is not None:
            broken = list(rules(first, b)) + list(rules(b, first))
            if broken and strict:
                raise RunError(broken)
            order.diags += broken
        for x in (first, b):
            order.epoch.setdefault(x.index, order.count)
        order.count += 1
        for x in (first, b):
            order.after[x.index] = order.count
        yield (first, b)
    return moved


def _position(x, c: int) -> str:
    if x.waiting is not None:
        return f"core {c} waits at {where(x.waiting[2])} for core {1 - c}"
    if x.held is not None and x.pending:
        p = _waits_on_pending(x.held, meeting_key(x.held), x.pending)
        return (f"core {c} waits at {where(x.held)} for its {p.op} at {where(p)} (never met "
                f"by the other core)")
    if x.pending:
        return f"core {c} ends with its {x.pending[0][2].op} at {where(x.pending[0][2])} never met"
    return f"core {c} ends"


def _deadlock(s, strict: bool):
    """E635 (check) / E642 (run) at the first unmet meeting of the core that has one."""
    stuck = next(c for c in (0, 1) if s[c].waiting is not None or s[c].pending)
    x = s[stuck]
    b = x.waiting[2] if x.waiting is not None else x.pending[0][2]
    return error("E642" if strict else "E635",
                 f"deadlock: {_position(x, stuck)}, but "
                 f"{_position(s[1 - stuck], 1 - stuck)}", b.loc(), b.index,
                 hint="both cores must pass the same core_barriers, and the same sendrecvs of "
                      "each pipe_id, in the same order (a core runs on past a sendrecv, but "
                      "not past an access to its tiles)")


def sync_order(bound) -> SyncOrder:
    """The run order of a two-core program's straight-line streams (loop bodies once, as
    the checker sees them). After a deadlock the instructions left follow in core order,
    so every pass still sees each one."""
    streams = ([], [])
    for b in bound:
        streams[b.inst.core].append(b)
    out = SyncOrder()
    out.steps = list(meet(streams, out))
    if out.deadlock is not None:
        out.diags.append(out.deadlock)
        seen = {b.index for b in out.flat()}
        out.steps += [b for b in bound if b.index not in seen]
    return out
