"""Running a two-core (LNC2) program: both cores' streams in the order checker/cores.py
computed (each core in program order; the cores meet at core_barrier and sendrecv).

The cores share the machine's buffers (every tensor has its own name; a core's SBUF, PSUM
and private-HBM tensors are its own), but each core has its own engines, so its own
accumulator registers and PRNG state: `steps` swaps them in as each core's instruction
comes up. A sendrecv pair reads both sources before either destination is written
(isa/sendrecv.py), so an exchange of two tiles in place is a swap.
"""
from __future__ import annotations

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
            yield b


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
