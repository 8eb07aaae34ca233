"""A simulate() object's execution plan kept for its next call (speed.KEPT_PLAN; issue 28).

simulate() reuses its last call's check when a call traces the same program
(pipeline/reuse.py): the call then runs the very same bound instructions, and the plan
runner/plan.py would compile for them is the plan it compiled last time, over arrays of
the same shapes. `PlanMemo` keeps that plan (its steps, its arrays, its Machine) and runs
it again, on the new call's inputs, when the bound instructions are the same object, under
the same `uninitialized` policy and the same speed switches.

Why the second run equals a plan compiled afresh: a kept plan is one whose every step is
a planned call (no instruction runs the plain way, so nothing reads the Machine's tracking
or warnings), and each step rewrites what it reads from in the same run: a tile's array
is filled or written whole before it is read (that is how the plan was built: a slot
taken by a new tensor holds an earlier tensor's values even in one run), a widened copy is
widened before its first read (plan_widen.py's steps start stale), scratch arrays are
written before they are read. What a run starts from is put back before it: the arrays of
the tensors with initial contents get the new call's inputs (and the declared contents of
the others), copied into the same arrays; the Machine is made anew in place (its
`__init__` on the same object the steps hold). The outputs are given away as copies, since
the next run writes the plan's own arrays again. A run that raises drops the plan.

Kept from the second call that runs the same bound instructions on (a one-shot call, as a
test harness makes, neither holds the plan's arrays after it nor copies its outputs), and
only while the tensors' declared bytes are at most KEEP_BYTES (the plan's arrays stay
alive between calls). Plain twin: speed.KEPT_PLAN off, every call compiles its plan.
tests/runner/test_plan_keep.py runs kernels again on other inputs and compares every
output's bits with fresh runs and the plain interpreter.
"""
from __future__ import annotations

from functools import partial

import numpy as np

from nkirun import speed
from nkirun.runner.carried import execute_one

KEEP_BYTES = 1 << 30


def switches() -> tuple:
    """The speed switches as they are now (a kept plan or check was made under them)."""
    return tuple(v for k, v in vars(speed).items() if k.isupper() and isinstance(v, bool))


class PlanMemo:
    """The kept plan, as one tuple (bound, policy, switches, head, held arrays, Machine,
    steps, output names), replaced whole, or None."""

    __slots__ = ("kept", "seen")

    def __init__(self):
        self.kept = None
        self.seen = None  # the bound instructions of the last plan compiled

    def take(self, bound, uninitialized: str):
        """The kept plan for these bound instructions and policy, or None."""
        k = self.kept
        if k is None or not speed.KEPT_PLAN or k[0] is not bound or k[1] != uninitialized \
                or k[2] != switches():
            return None
        self.kept = None  # (while it runs: a run that raises leaves nothing kept)
        return k

    def keep(self, bound, uninitialized, head, held: dict, m, plan, outs) -> bool:
        """Keep the plan when it may be run again (see the module); whether it was."""
        self.kept = None
        once, self.seen = self.seen is not bound, bound  # (the check memo holds it anyway)
        if once or not speed.KEPT_PLAN or sum(t.nbytes for t in plan.tensors.values()) > KEEP_BYTES \
                or any(getattr(c, "func", None) is _plain for c in plan.calls):
            return False
        self.kept = (bound, uninitialized, switches(), head, held, m, plan, tuple(outs))
        return True


def run_kept(memo: PlanMemo, k, inputs, uninitialized: str, run_steps):
    """Run kept plan k (from memo.take) on `inputs` with plan.run_steps; its Machine."""
    from nkirun.runner.files import initial_buffers
    from nkirun.runner.memory import refuse_if_too_large
    bound, _, _, head, held, m, plan, outs = k
    refuse_if_too_large(head, inputs)
    with np.errstate(all="ignore"):
        buffers, written = initial_buffers(head, inputs, uninitialized, into=held)
    for n, a in held.items():  # (declared contents, and inputs not copied in: put back)
        b = buffers[n]
        if b is not a:
            if b.shape != a.shape or b.dtype != a.dtype:
                raise AssertionError(f"a kept plan's tensor {n} changed layout")  # (a bug)
            np.copyto(a, b)
            buffers[n] = a
    start_machine(m, buffers, written, uninitialized)
    run_steps(plan.bs, plan.calls, m)
    give_outputs(m, outs)
    memo.kept = k
    return m


def give_outputs(m, outs) -> None:
    """The outputs as arrays of their own (the plan writes its arrays again next run)."""
    for n in outs:
        a = m.buffers.get(n)
        if a is not None:
            m.buffers[n] = a.copy()


def start_machine(m, buffers: dict, written: dict, uninitialized: str):
    """Machine m (new, or a kept plan's: the steps hold it) made anew over these buffers,
    as a planned run under the policy starts it."""
    from nkirun.runner.machine import Machine
    Machine.__init__(m, buffers, written)
    m.carry, m.planned = uninitialized == "error", True
    m.fills = uninitialized in ("nan", "zero")
    return m


def _plain(m, b) -> None:
    """The plan step of an instruction run the plain way (runner/plan.py; here because a
    plan with one is never kept: it reads and writes the Machine's tracking)."""
    m.current = b
    if m.carry:
        execute_one(b, m, partial(b.spec.execute, b, m))
    else:
        b.spec.execute(b, m)
