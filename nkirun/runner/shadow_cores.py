"""The shadow of a two-core program (runner/shadow.py, runner/cores.py): per-core engine
state swapped in as each core's instructions come up, and what a meeting pair exchanges."""
from __future__ import annotations


def touched(b) -> tuple[str, ...]:
    """Names of the tensors instruction b reads or writes (index tensors included)."""
    acc = b.accesses()  # (computed once per Operands, isa/bound.py)
    return tuple(dict.fromkeys(r.decl.name for _, r in acc.reads + acc.writes))


class TwoCores:
    """The shadow of a two-core program (runner/cores.py): each core's own accumulator
    registers, PRNG state and virtual registers, swapped in as its instructions come up,
    and what a meeting pair exchanges (its spec's `meeting.exchange`, e.g. the tile a
    sendrecv receives), read from the shadow's sender before either side writes. The pair
    is the one the run formed (runner/cores.py leaves it in the machine's `meeting`), so in
    runtime loops the shadow pairs by occurrence as the run does."""

    def __init__(self, bound):
        self.pairs: dict = {}
        self.on = any(getattr(b.inst, "core", None) for b in bound)
        if not self.on:
            return
        from nkirun.checker.meet import sync_order
        from nkirun.runner import cores
        self.cores = cores
        for step in sync_order(bound).steps:
            pair = step if isinstance(step, tuple) else (step,)
            meeting = pair[0].spec.meeting
            if meeting is not None and meeting.exchange is not None:
                for b in pair:
                    self.pairs[b.index] = pair
        self.state: list = []
        self.current = None

    def reads(self, b, m=None) -> list[str]:
        """The tensors b's result depends on: its reads, and for a meeting that exchanges
        data (sendrecv) its partner's (the tile it receives)."""
        pair = self._pair(b, m) or (b,)
        return [r.decl.name for other in pair for _, r in other.accesses().reads]

    def _pair(self, b, m):
        """The meeting pair b belongs to in this run (the real machine's `meeting`), or
        the one the body-once walk found, or None."""
        run = getattr(m, "meeting", None) if m is not None else None
        if run is not None and any(x is b or x.index == b.index for x in run):
            meeting = run[0].spec.meeting
            return run if meeting.exchange is not None else None
        return self.pairs.get(b.index)

    def prepare(self, b, s, m=None) -> None:
        if not self.on:
            return
        if not self.state:
            self.state = [self.cores._fresh(s), self.cores._fresh(s)]
            s.inbox = {}
        core = b.inst.core
        if core != self.current:
            if self.current is not None:
                self.cores._save(s, self.state[self.current])
            self.cores._load(s, self.state[core])
            self.current = core
        pair = self._pair(b, m)
        if pair is not None and b.index == pair[0].index:  # both sources, before either is
                                                           # written
            for name in (n for other in pair for n in touched(other)):
                if name not in s.buffers and name in s.real.buffers:
                    s.enter(name)
            pair[0].spec.meeting.exchange(pair, s)
