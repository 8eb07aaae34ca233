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

from nkirun.hw.dtypes import widen_into


class WidenOnce:
    """The float32 copies of the views planned calls read widened, and which are current.

    `copies`: view key -> (the view, its float32 copy); `fresh`: the keys whose copies
    hold their view's values now; `current`: array number -> those of its keys (what a
    write of the array makes stale); `needing`: while a plan form builds its call, the
    keys it reads (kept with the call in its recipe)."""

    __slots__ = ("copies", "fresh", "current", "needing", "before", "read")

    def __init__(self):
        self.copies: dict = {}
        self.fresh: set = set()
        self.current: dict = {}
        self.needing: list | None = None
        self.before: dict = {}  # array number -> the keys read before its last write
        self.read: dict = {}  # array number -> the keys read since its last write

    def copy_of(self, key: tuple, a: np.ndarray) -> np.ndarray:
        """The float32 copy of view `a` (key: the planner's view key, its array number
        first) that the call being built reads instead of widening a itself."""
        have = self.copies.get(key)
        if have is None:
            have = self.copies[key] = (a, np.empty(a.shape, np.float32))
        self.needing.append(key)
        return have[1]

    def steps(self, keys: tuple, b, add_b, add_call) -> None:
        """Before b (whose call reads the copies of `keys`): one widening step for each
        copy whose array was written since it was made. When the copy was current before
        that write, the array's other copies that were too come with it, in address order:
        the loop that read them then is likely to read them again (a blocked matmul reads
        a loaded tile's views one by one between other work, each from cold memory)."""
        fresh, copies, read = self.fresh, self.copies, self.read
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
            pairs = [copies[k] for k in group]
            pairs.sort(key=_address)
            add_b(b)
            add_call(partial(_widen_all, pairs))
            fresh |= group
            self.current.setdefault(key[0], []).extend(group)

    def written_by(self, names, slot) -> None:
        """Tensors `names` are written (slot: name -> its array number)."""
        for n in names:
            self.written(slot(n))

    def written(self, number: int) -> None:
        """Array `number` is written (or handed to another tensor): its copies are stale."""
        keys = self.current.pop(number, None)
        if keys:
            self.fresh.difference_update(keys)
            self.before[number] = frozenset(self.read.pop(number, ()))


def _address(pair) -> int:
    return pair[0].__array_interface__["data"][0]


def _widen_all(pairs) -> None:
    for a, work in pairs:
        widen_into(work, a)
