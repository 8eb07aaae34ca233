"""Operands widened to float32 once per write, not once per read (a planned run).

nc_matmul computes in float32: its plan form (isa/matmul_plan.py) widens a bfloat16 (or
other 16-bit, fp8) stationary and moving into float32 work arrays at every call. A
blocked matmul reads each loaded tile many times (the tutorial's fully optimised kernel
reads every moving tile once per stationary tile: 16 times at 2048 x 2048 x 4096), so
most of those widenings redo the last one: the tile was not written in between.

The plan knows, while it is built, every instruction that writes each array (runner/
plan.py: a planned instruction writes its written operands; a plain one may write any
tensor it names; a fill or a newly placed tensor rewrites its slot). So it can tell,
per read, whether the view's float32 copy made at an earlier read still holds its
values. `WidenOnce` keeps one float32 copy per view (array number, layout, shape: the
planner's view key, so equal views share it) and, before an instruction whose plan form
reads one (`Viewer.widened`), adds a widening step when the view's array was written
since its copy was made, or it has none yet. The call itself reads the copy. The
widening is the same `hw.dtypes.widen_into` into a C-contiguous float32 array of the
view's shape that the call made itself before (speed.WIDEN_ONCE off: the
plain twin; tests/runner/test_plan_widen.py compares them and the plain interpreter)."""
from __future__ import annotations

from functools import partial

import numpy as np

from nkirun import speed
from nkirun.hw.dtypes import widen_into
from nkirun.runner.plan_source import COPY, RAW, Sources, copy_of_bits


class WidenOnce:
    """The float32 copies of the views planned calls read widened, and which are current.

    `copies`: view key -> (the view, its float32 copy); `fresh`: the keys whose copies
    hold their view's values now; `current`: array number -> those of its keys (what a
    write of the array makes stale); `needing`: while a plan form builds its call, the
    keys it reads (kept with the call in its recipe)."""

    __slots__ = ("copies", "fresh", "current", "needing", "before", "read", "sources",
                 "cells", "points", "outputs", "busy", "resolved")

    def __init__(self, held: int = 0, outputs=frozenset(), follow: bool = True):
        self.copies: dict = {}
        self.fresh: set = set()
        self.current: dict = {}
        self.needing: list | None = None
        self.before: dict = {}  # array number -> the keys read before its last write
        self.read: dict = {}  # array number -> the keys read since its last write
        # (speed.WIDEN_FROM_SOURCE, plan_source.py: the copies' sources; per view key the
        # cell its calls read, and the key of the copy a step last pointed it at)
        self.sources = Sources(held) if follow and speed.WIDEN_FROM_SOURCE and \
            speed.WIDEN_ONCE else None
        self.cells: dict = {}
        self.points: dict = {}
        self.outputs = outputs
        # (whether runner/plan.py must call `ran` after each instruction: copies recorded
        # or pending; it calls it anyway after a call reading copies or marked COPY, and
        # while copies are current)
        self.busy = False
        self.resolved: dict = {}  # view key -> (its array's records version, the copy's key)

    def copy_of(self, key: tuple, a: np.ndarray) -> tuple:
        """The pair (isa/common.widened's) the call being built reads instead of widening
        view `a` itself (key: the planner's view key, its array number first): (the float32
        copy, None), or (None, a cell holding the copy it reads now) under
        WIDEN_FROM_SOURCE."""
        have = self.copies.get(key)
        if have is None:
            have = self.copies[key] = (a, None if self.sources is not None else
                                       np.empty(a.shape, np.float32))
        self.needing.append(key)
        if self.sources is None:
            return have[1], None
        cell = self.cells.get(key)
        if cell is None:
            cell = self.cells[key] = [None]
        return None, cell

    def built(self, call) -> tuple:
        """(the call a plan form built, the keys of the copies it reads), the keys ending
        with a (COPY, None) mark when the call is a bit copy plan_source.py follows."""
        if self.sources is not None and copy_of_bits(call) is not None:
            self.needing.append((COPY, None))
        return call, tuple(self.needing)

    def raw(self, key: tuple) -> None:
        """The call being built reads the view of `key` as it is (a float32 operand)."""
        if self.sources is not None:
            self.needing.append((RAW, key[0]))

    def steps(self, keys: tuple, b, add_b, add_call) -> None:
        """Before b (whose call reads the copies of `keys`): one widening step for each
        copy whose array was written since it was made. When the copy was current before
        that write, the array's other copies that were too come with it, in address order:
        the loop that read them then is likely to read them again (a blocked matmul reads
        a loaded tile's views one by one between other work, each from cold memory)."""
        fresh, copies, read = self.fresh, self.copies, self.read
        points = None
        if self.sources is not None:
            keys, points = self._from_sources(keys)
        for key in keys:
            seen = read.get(key[0])
            if seen is None:
                read[key[0]] = {key}
            else:
                seen.add(key)
            if key in fresh:
                continue
            before = self.before.get(key[0])
            group = (before if before is not None and key in before else {key}) - fresh
            pairs = [copies[k] if copies[k][1] is not None else self._made(k) for k in group]
            if len(pairs) > 1:
                pairs.sort(key=_address)
            add_b(b)
            add_call(partial(_widen_all, pairs))
            fresh |= group
            self.current.setdefault(key[0], []).extend(group)
            if self.sources is not None:
                self.sources.read(key[0])  # (the widening reads the array)
        if points:
            add_b(b)
            add_call(partial(_point_all, tuple((c, self._made(k)[1]) for c, k in points)))

    def _made(self, key: tuple) -> tuple:
        """copies[key], its float32 array made if it has none yet."""
        a, work = self.copies[key]
        if work is None:
            work = np.empty(a.shape, np.float32)
            self.copies[key] = (a, work)
        return a, work

    def _from_sources(self, keys: tuple) -> tuple:
        """(the keys of the copies the call reads: each view's source's where it has one
        (plan_source.py), the (cell, key) pairs a step must point anew)."""
        copies, points, out, moved = self.copies, self.points, [], []
        for key in keys:
            if key[0] == RAW or key[0] == COPY:
                continue
            version = self.sources.version.get(key[0])
            hit = self.resolved.get(key)
            if hit is not None and hit[0] == version:
                to = hit[1]  # (the array's records did not change since)
            else:
                to = self._resolve(key)
                self.resolved[key] = (version, to)
            out.append(to)
            if points.get(key) != to:
                points[key] = to
                moved.append((self.cells[key], to))
        return out, moved

    def _resolve(self, key: tuple) -> tuple:
        """The key of the copy the view of `key` is read from: its source's (plan_source.py)
        when it has one and the bound leaves room, else its own."""
        copies = self.copies
        got = self.sources.source_of(key[0], copies[key][0])
        if got is None:
            return key
        sub, number = got
        to = (number, ("source", _address((sub, None)), sub.strides), sub.shape)
        if to not in copies:
            if not self.sources.room(sub.size * 4):
                return key  # (over the bound: widened from the tile, whose copy stays)
            copies[to] = (sub, None)
        return to

    def ran(self, b, names, recipe, plain: bool, call, keys, slot, at: int) -> None:
        """After step `at`, b's call (`keys`: the copies it reads; recipe: its form's,
        runner/plan.py): what b reads raw and writes (a plain call may read and write any
        tensor it names), and the bit copy it may be (plan_source.py)."""
        src, reads = self.sources, recipe.reads
        written = names if plain else names[reads:]
        pair = None if plain or not keys or keys[-1][0] != COPY or reads != 1 or \
            len(written) != 1 else copy_of_bits(call)
        if src is None or (pair is None and not src.records and not src.pending):
            self.busy = False
            if self.current:
                self.written_by(written, slot)
            return
        if src.pending:
            raw = {slot(n) for n in (names if plain else names[:reads])}
            if keys:
                raw -= {k[0] for k in keys if k[0] != RAW}
                raw |= {k[1] for k in keys if k[0] == RAW}
            for number in raw:
                src.read(number)
        if not plain and src.pending:
            for p in recipe.whole:  # (written in full: what copies left there is gone)
                src.overwritten(slot(names[p]))
        for n in written:
            self.written(slot(n), None if pair is None else pair[0])
        if pair is not None and slot(names[0]) != slot(written[0]):
            src.copied(at, slot(written[0]), pair[0], pair[1], slot(names[0]),
                       written[0] in self.outputs)
        self.busy = bool(src.records or src.pending)

    def unread_copies(self) -> list:
        """The steps of copies nothing read (plan_source.py), to leave out of the plan."""
        return [] if self.sources is None else self.sources.unread_steps()

    def written_by(self, names, slot) -> None:
        """Tensors `names` are written (slot: name -> its array number)."""
        for n in names:
            self.written(slot(n))

    def written(self, number: int, d=None) -> None:
        """Array `number` is written (or handed to another tensor): its copies are stale
        (d: the view a bit copy wrote, plan_source.py)."""
        src = self.sources
        if src is not None and (src.records or src.into):
            src.written(number, d)
        keys = self.current.pop(number, None)
        if keys:
            self.fresh.difference_update(keys)
            self.before[number] = frozenset(self.read.pop(number, ()))


def _address(pair) -> int:
    return pair[0].__array_interface__["data"][0]


def _widen_all(pairs) -> None:
    for a, work in pairs:
        widen_into(work, a)


def _point_all(pairs) -> None:
    for cell, work in pairs:
        cell[0] = work
