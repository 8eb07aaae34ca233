"""Running a traced kernel with memory that follows what is live.

A kernel that allocates a tile per loop iteration makes a program with one tensor per
tile. Each tensor's storage is created just before the first instruction that uses it
and dropped right after the last one (outputs and tensors with initial contents are
kept), so peak memory follows the live tensors, not every tensor ever allocated.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from nkirun.source.operands import Resolved


def live_ranges(bound) -> tuple[dict, dict]:
    """tensor name -> index of its first and of its last use."""
    first, last = {}, {}
    seen: dict = {}  # id(b.args) -> names: instructions bound to equal values share args
    for i, b in enumerate(bound):
        names = seen.get(id(b.args))
        if names is None:
            names = seen[id(b.args)] = tuple(_tensors_of(b.args))
        for n in names:
            if n not in first:
                first[n] = i
            last[n] = i
    return first, last


def _tensors_of(args) -> set:
    """The tensors an instruction's operands touch, runtime index tensors included."""
    names = set()
    for v in args.values():  # (a tuple: dma_compute's srcs list)
        for r in (v if isinstance(v, tuple) else (v,)):
            if not isinstance(r, Resolved):
                continue
            names.add(r.decl.name)
            ind = getattr(r.ap, "indirect", None) if r.ap is not None else None
            if ind is not None and isinstance(ind.index, Resolved):
                names.add(ind.index.decl.name)
    return names


def execute_freeing(traced, bound, inputs, observe=None, step=None):
    """Execute; `observe(b, m)` (optional) is called after each instruction; `step`:
    interpret.execute's (run --shadow)."""
    from nkirun.runner.interpret import execute
    program = traced.program
    order = bound
    if program.cores > 1:  # two cores: the run order of both streams (runner/cores.py)
        from nkirun.checker.cores import sync_order
        order = sync_order(bound).flat()
    first, last = live_ranges(order)
    keep = {n for n, t in program.tensors.items() if t.output}
    looped = set()
    if program.loops:  # a loop body runs again: what it touches lives through the run
        from nkirun.checker.control import touched_in_loops
        looped = touched_in_loops(program.loops, first, last)
        keep |= looped
    upfront, alloc_at, free_at = {}, {}, {}
    for name, t in program.tensors.items():
        if t.init is not None or name not in first or first[name] == 0 or name in looped:
            upfront[name] = t
        else:
            alloc_at.setdefault(first[name] - 1, []).append(t)
        if name not in keep and name in last:
            free_at.setdefault(last[name], []).append(name)

    def after_each(b, m):
        if observe is not None:
            observe(b, m)
        i = position[id(b)]
        for name in free_at.get(i, ()):
            m.buffers.pop(name, None)
            m.written.pop(name, None)
        for t in alloc_at.get(i, ()):
            m.buffers[t.name] = np.zeros(t.shape, t.dtype.np_type)
            m.written[t.name] = np.zeros(t.shape, bool)

    position = {id(b): i for i, b in enumerate(order)}
    program = replace(program, tensors=upfront)
    if step is None:
        return execute(program, bound, inputs, after_each)
    return execute(program, bound, inputs, after_each, step=step)  # run --shadow
