"""What runner/plan.py knows, while it builds a plan, about which elements hold data.

A tensor first written in parts (a tile loaded slice by slice, a PSUM tile filled bank by
bank) is tracked element by element at run time on the plain path. Most such tensors are
written in plain boxes by planned instructions and read only where already written, which
the plan can see without running anything: `PlannedWrites` keeps a written-element mask of
each such tensor while the plan is built. An instruction whose reads of them are fully
written is planned and its box writes are marked; the tensor leaves the masks (it is then
like any untracked tensor) once every element is written. An instruction the plan cannot
decide (a read of an unwritten element, a write that is not a box) takes the plain path,
and from there on the tensor is tracked at run time, starting from the mask (`hand_over`).

Such a tensor's array starts with the fill the plain path starts it with (its slot may hold
an earlier tensor's values). No step reads that fill unless the tensor is handed over: a
planned step reads only elements a planned step wrote before it. So when the tensor leaves
the masks written in full, or at its last use, without being handed over, its fill step is
left out of the plan (speed.UNREAD_FILLS; `unread_fills`; the plain twin makes every fill).
"""
from __future__ import annotations

import numpy as np

from nkirun import speed  # the speed switches, beside their plain twins


def box_index(r):
    """The NumPy basic index of the storage elements view r touches, or None when they are
    no box (a reinterpreting or stepping access pattern that is not exactly one)."""
    if r.ap is None:
        return r.np_index
    if r.ap.exact_box and r.ap.indirect is None:
        return tuple(slice(s, s + (c - 1) * t + 1, t) for s, c, t in r.box)
    return None


class PlannedWrites:
    """tensor name -> bool array of its elements written so far by planned instructions
    (`masks`), and how many of them are not (`left`: a tile loaded in k parts costs k
    box-sized counts, not k passes over the whole mask)."""

    __slots__ = ("masks", "left", "fills", "unread")

    def __init__(self):
        self.masks: dict = {}
        self.left: dict = {}
        self.fills: dict = {}  # tensor name -> the index of its fill step, while unread
        self.unread: list = []  # the indexes of fill steps no step reads

    def start(self, name: str, shape: tuple, fill_at: int | None = None) -> None:
        """The tensor is written in parts from here; `fill_at`: the step that fills its
        array first (dropped from the plan if nothing reads what it wrote)."""
        self.masks[name] = mask = np.zeros(shape, bool)
        self.left[name] = mask.size
        if fill_at is not None and speed.UNREAD_FILLS:
            self.fills[name] = fill_at

    def held(self, r) -> bool | None:
        """Whether every element of view r holds data (True), none does (False), or some
        (None; also for a view that is no box). Tensors not in the masks hold data."""
        mask = self.masks.get(r.decl.name)
        if mask is None:
            return True
        at = box_index(r)
        if at is None:
            return None
        sel = mask[at]
        return True if sel.all() else (False if not sel.any() else None)

    def decides(self, b) -> bool:
        """Whether b can be planned as far as the masks go: each read of a masked tensor
        is of written elements only, each write of one is a box."""
        masks = self.masks
        acc = b.accesses()
        for _, r in acc.reads:
            if r.decl.name in masks and self.held(r) is not True:
                return False
        return all(box_index(r) is not None for _, r in acc.writes if r.decl.name in masks)

    def mark(self, b) -> None:
        """b (planned) wrote its write views; a tensor written in full leaves the masks."""
        masks, left = self.masks, self.left
        for _, r in b.accesses().writes:
            name = r.decl.name
            mask = masks.get(name)
            if mask is not None:
                at = box_index(r)
                sel = mask[at]
                left[name] -= sel.size - np.count_nonzero(sel)
                mask[at] = True
                if not left[name]:
                    del masks[name], left[name]
                    self._unread(name)

    def drop(self, name: str, handed: bool = False):
        """The tensor leaves the masks; returns its mask (None if it had none). `handed`:
        the run tracks it from here (plain steps may read its fill), else its last use."""
        self.left.pop(name, None)
        if handed:
            self.fills.pop(name, None)
        else:
            self._unread(name)
        return self.masks.pop(name, None)

    def _unread(self, name: str) -> None:
        at = self.fills.pop(name, None)
        if at is not None:
            self.unread.append(at)

    def unread_fills(self, bs: list, calls: list, more=()) -> None:
        """Leave the fill steps no step reads out of the plan's steps (in place), and the
        steps `more` (copies no step reads, plan_source.py)."""
        if self.unread or more:
            gone = {*self.unread, *more}
            bs[:] = [b for i, b in enumerate(bs) if i not in gone]
            calls[:] = [c for i, c in enumerate(calls) if i not in gone]
            self.unread = []


class Viewer:
    """What a plan form's build(view) gets: `view(r, shape=None)` (the planner's view),
    `holds(r)` (whether every element of view r holds data before this instruction: True,
    False for none, None for some), `scratch(tag, shape)`, a float32 work array of this
    run shared by every call asking for the same tag and shape: its contents do not
    outlive one call (the calls of a run are made one at a time), and `widened(r, shape,
    tag)`, r's float32 values for the call to read (runner/plan_widen.py): a plan form reads
    a view it asks widened only through the pair it gets."""

    __slots__ = ("_view", "_writes", "fresh", "_scratch", "_key", "_widen")

    def __init__(self, view, writes: PlannedWrites, key=None, widen=None):
        self._view, self._writes, self.fresh, self._scratch = view, writes, frozenset(), {}
        self._key, self._widen = key, widen  # (the planner's view key, its WidenOnce)

    def __call__(self, r, shape=None):
        return self._view(r, shape)

    def holds(self, r) -> bool | None:
        if r.decl.name in self.fresh and r.decl.name not in self._writes.masks:
            return False  # (first used here, written whole: nothing before)
        return self._writes.held(r)

    def scratch(self, tag: str, shape: tuple, dtype=np.float32) -> np.ndarray:
        key = (tag, shape, np.dtype(dtype))
        a = self._scratch.get(key)
        if a is None:
            a = self._scratch[key] = np.empty(shape, dtype)
        return a

    def widened(self, r, shape: tuple, tag: str):
        """r as `shape` in float32, as a pair for isa/common.widened (None: no plain view):
        (the view, None) for a float32 one; else (its float32 copy, None), the plan
        widening it only after a write (speed.WIDEN_ONCE), or (the view, scratch), the
        call widening it each time (the plain twin, isa/common.f32_operand's)."""
        a = self._view(r, shape)
        if a is None or a.dtype == np.float32:
            if a is not None and self._widen is not None:
                self._widen.raw(self._key(r, shape))  # (read as it is)
            return None if a is None else (a, None)
        if not speed.WIDEN_ONCE or self._widen is None:
            return a, self.scratch(tag, shape)
        return self._widen.copy_of(self._key(r, shape), a)


def hand_over(m, name: str, arr, mask) -> None:
    """A plan step: from here on the run tracks the tensor (its array `arr`), starting
    with `mask` as its written elements (None: every element holds data)."""
    m.buffers[name] = arr
    if mask is None:
        m.written[name] = None
        m._unwritten.pop(name, None)
        return
    m.written[name] = mask
    m._unwritten[name] = int(mask.size - np.count_nonzero(mask))


def bind(m, name: str, arr, tracked_shape) -> None:
    """A plan step: the tensor (its array `arr`) is in the Machine, for the plain calls;
    tracked element by element from none written when `tracked_shape` is given."""
    m.buffers[name] = arr
    m.written[name] = None if tracked_shape is None else np.zeros(tracked_shape, bool)


def unbind(m, name: str) -> None:
    """A plan step: the tensor leaves the Machine (after its last use)."""
    m.buffers.pop(name, None)
    m.written.pop(name, None)
