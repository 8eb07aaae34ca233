"""Running a program with memory that follows what is live.

A traced kernel that allocates a tile per loop iteration makes a program with one tensor per
tile. Each tensor's storage is created just before the first instruction that uses it
and dropped right after the last one (outputs and tensors with initial contents are
kept), so peak memory follows the live tensors, not every tensor ever allocated. A plain
run (no observer, no shadow, one core, no runtime loops) goes through runner/plan.py.
"""
from __future__ import annotations

import itertools
from dataclasses import replace


def execute_freeing(program, bound, inputs, observe=None, step=None,
                    uninitialized: str = "error", plans=None):
    """Execute; `observe(b, m)` (optional) is called after each instruction; `step`:
    interpret.execute's (run --shadow); `uninitialized`: reading an element nothing wrote
    is E090 ("error"), or reads NaN / 0 ("nan" / "zero"). Without observe or step, a
    one-core program without runtime loops runs from an execution plan (runner/plan.py:
    slots shared by tensors whose lives do not overlap, one call per instruction; `plans`:
    simulate()'s kept plan, runner/plan_keep.py)."""
    from nkirun.runner.files import fresh_buffer
    from nkirun.runner.interpret import execute
    from nkirun.runner.plan import execute_planned, live_ranges, plannable
    if observe is None and step is None and plannable(program):
        return execute_planned(program, bound, inputs, uninitialized, plans)
    order = bound
    if program.cores > 1:  # two cores: the run order of both streams (runner/cores.py)
        from nkirun.checker.meet import sync_order
        order = sync_order(bound).flat()
    first, last = live_ranges(order)
    keep = {n for n, t in program.tensors.items() if t.output}
    looped = set()
    if program.loops:  # a loop body runs again: what it touches lives through the run
        from nkirun.checker.control import touched_in_loops
        looped = touched_in_loops(program.loops, first, last)
        if program.cores > 1:  # the loops decide how the cores interleave: keep all
            looped = set(program.tensors)
        keep |= looped
    upfront = {}
    events: dict = {}  # position -> ([tensors to free], [tensors to allocate]) after it
    for name, t in program.tensors.items():
        if t.init is not None or name not in first or first[name] == 0 or name in looped:
            upfront[name] = t
        else:
            events.setdefault(first[name] - 1, ([], []))[1].append(t)
        if name not in keep and name in last:
            events.setdefault(last[name], ([], []))[0].append(name)
    if program.cores > 1 or program.loops:  # (each instruction's place in the run order)
        at = {id(b): i for i, b in enumerate(order)}
        position = (lambda b: at[id(b)])
    else:  # one core, no loops: after_each is called once per instruction, in order
        count = itertools.count()
        position = (lambda b: next(count))

    def after_each(b, m):
        if observe is not None:
            observe(b, m)
        event = events.get(position(b))
        if event is None:
            return
        buffers, written = m.buffers, m.written
        for name in event[0]:
            buffers.pop(name, None)
            written.pop(name, None)
        for t in event[1]:
            buffers[t.name], written[t.name] = fresh_buffer(t, uninitialized)

    program = replace(program, tensors=upfront)
    if step is None:
        return execute(program, bound, inputs, after_each, uninitialized=uninitialized)
    return execute(program, bound, inputs, after_each, uninitialized=uninitialized,
                   step=step)  # run --shadow
