"""A tile loaded by a bit copy is widened from the copy's source; the copy itself is left out
when nothing reads the tile but those widenings (a planned run, speed.WIDEN_FROM_SOURCE).

The matmul tutorial's kernels DMA each bfloat16 tile from HBM into SBUF and read it only as
nc_matmul's stationary or moving operand, which the plan reads as a float32 copy of the view
(plan_widen.py). The same HBM region is loaded again and again into reused tiles (v1 loads
each lhsT region once per column block, v4 once per block of N), and each load made the
copies stale: the tile was copied (2 bytes an element), then widened (2 -> 4 bytes) per load.

While the plan is built, `Sources` remembers, per array, the bit copies written into it
(`np.copyto(d, s)` of the same dtype: dma_copy's and tensor_copy's plan form) whose
destination has not been written since and whose source array has not been written since.
A view `v` of the array read widened that lies inside such a copy's destination `d` holds,
element for element, what the source view `s` held: the view of `s`'s array at the same
index offsets (`_sub_source`). The plan widens that view of the source instead, into a copy
keyed by it, so the loads of one HBM region share one float32 copy for as long as the HBM
tensor is not written (an input never is); the matmul's call reads a cell that a plan step
points at the copy it reads now (plan_widen.py). Widening is exact, so the bits are those
widened from the tile.

A copy whose destination array no step reads except through such widenings (no plain step
names the tile, no planned step reads it raw, no widening reads it) and whose destination
is no output or input tensor is left out of the plan: nothing could see what it wrote.

Plain twin: the switch off (every copy made, each view widened from the tile);
tests/runner/test_plan_source.py compares both with the plain interpreter."""
from __future__ import annotations

import numpy as np

RAW = "raw"  # a `needing` entry ("raw", array number): a plan form reads that array raw
COPY = "copy"  # the last `needing` entry ("copy", None): the call is a bit copy followed
# The float32 copies of source views one plan keeps, at most (bytes). Unlike the copies of
# tile views, bounded by the SBUF, they grow with the HBM tensors a kernel reads (a 1 GB
# bfloat16 weight read by matmuls would make 2 GB of them); views past the bound are widened
# from their tiles as without the switch (v4 of the suite keeps 48 MB of them, v1 24 MB).
SOURCE_COPY_BYTES = 1 << 26


class Sources:
    """`records`: array number -> [(d, s, source array number, d's byte bounds)] of the
    copies into it still current, newest last; `pending`: array number -> the step indexes
    of copies into it no step has read yet (none into an input's array or an output);
    `dead`: those of copies overwritten unread; `memo`: _sub_source's answers; `bytes`: the
    float32 copies of source views made (SOURCE_COPY_BYTES bounds them)."""

    __slots__ = ("records", "into", "pending", "dead", "memo", "held", "bytes", "version",
                 "addresses")

    def __init__(self, held: int):
        self.records: dict = {}
        self.into: dict = {}  # source array number -> the arrays with records of copies from it
        self.version: dict = {}  # array number -> a count of the changes of its records
        self.addresses: dict = {}  # id -> (a view, its address: NumPy's dict costs ~2 us)
        self.pending: dict = {}
        self.dead: list = []  # the steps of copies overwritten before any step read them
        self.memo: dict = {}
        self.held = held  # arrays numbered below this hold the run's initial tensors
        self.bytes = 0  # of the float32 copies of source views made so far

    def room(self, nbytes: int) -> bool:
        """Whether one more copy of `nbytes` stays within SOURCE_COPY_BYTES (counted if so)."""
        if self.bytes + nbytes > SOURCE_COPY_BYTES:
            return False
        self.bytes += nbytes
        return True

    def _at(self, a: np.ndarray) -> int:
        hit = self.addresses.get(id(a))
        if hit is not None and hit[0] is a:
            return hit[1]
        at = _address(a)
        self.addresses[id(a)] = (a, at)
        return at

    def source_of(self, number: int, v: np.ndarray):
        """(the source view holding v's values, its array number) or None."""
        recs = self.records.get(number)
        if not recs:
            return None
        lo = self._at(v)
        for rec in reversed(recs):
            d, s, s_number, (d_lo, d_hi) = rec
            if not d_lo <= lo < d_hi:
                continue
            key = (id(v), id(d), id(s))
            got = self.memo.get(key, False)
            if got is False:
                got = self.memo[key] = _sub_source(v, d, s)
            if got is not None:
                return got, s_number
            # (not all of v is in d: the records do not overlap, so an older one holding
            # all of v holds none of d)
        return None

    def read(self, number: int) -> None:
        """Array `number` is read raw: the copies into it are needed."""
        self.pending.pop(number, None)

    def overwritten(self, number: int) -> None:
        """Array `number` is written in full: no step will read what the copies into it
        not read so far wrote."""
        steps = self.pending.pop(number, None)
        if steps:
            self.dead.extend(steps)

    def written(self, number: int, d=None) -> None:
        """Array `number` is written (by a copy into view d, or whole when d is None): the
        copies into the parts written are no longer its values, nor those from it."""
        recs = self.records.get(number)
        if recs:
            if d is None:
                del self.records[number]
            else:
                recs[:] = [r for r in recs if not _overlap(r[0], d)]
            self._touch(number)
        for n in self.into.pop(number, ()):  # (the arrays holding copies from it)
            recs = self.records.get(n)
            if recs:
                recs[:] = [r for r in recs if r[2] != number]
                self._touch(n)

    def _touch(self, number: int) -> None:
        self.version[number] = self.version.get(number, 0) + 1

    def copied(self, at: int, number: int, d, s, s_number: int, kept: bool) -> None:
        """Step `at` copies s (array s_number) into d (array `number`); `kept`: the
        array's tensor outlives the run."""
        lo = _address(d)
        hi = lo + _extent(d)
        self.records.setdefault(number, []).append((d, s, s_number, (lo, hi)))
        self.into.setdefault(s_number, set()).add(number)
        self._touch(number)
        if not kept and number >= self.held:
            self.pending.setdefault(number, []).append(at)

    def unread_steps(self) -> list:
        """The copy steps no step read what they wrote (all pending at the plan's end)."""
        return [*self.dead, *(at for steps in self.pending.values() for at in steps)]


def copy_of_bits(call):
    """(d, s) when the plan call is `np.copyto(d, s)` of one dtype (a bit copy) other than
    float32 (a float32 view is read as it is, never widened), else None."""
    if getattr(call, "func", None) is not np.copyto or call.keywords or len(call.args) != 2:
        return None
    d, s = call.args
    return (d, s) if d.dtype == s.dtype and d.shape == s.shape and d.dtype != _F32 else None


_F32 = np.dtype(np.float32)


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def _extent(a: np.ndarray) -> int:
    """Bytes from a's first element to past its last (positive strides)."""
    return sum((n - 1) * st for n, st in zip(a.shape, a.strides)) + a.itemsize


def _overlap(a, b) -> bool:
    try:
        return bool(np.shares_memory(a, b, max_work=1000))
    except np.exceptions.TooHardError:
        return True


def _index(x: int, d: np.ndarray):
    """A d-index (one per dim, none negative) whose byte offset in d is x, or None."""
    if x < 0:
        return None
    idx = [0] * d.ndim
    for j in sorted(range(d.ndim), key=lambda j: -d.strides[j]):
        st, n = d.strides[j], d.shape[j]
        if n == 1:
            continue
        if st <= 0:
            return None
        i = min(x // st, n - 1)
        idx[j] = i
        x -= i * st
    return tuple(idx) if x == 0 else None


def _sub_source(v: np.ndarray, d: np.ndarray, s: np.ndarray):
    """The view of s's array holding, element for element, what v holds after s was copied
    into d (s and d of one shape and dtype): v's elements as d-indices, each
    start + sum(w_l * delta_l) for v's index w, all within d (so the byte offset is linear
    in w), then s's strides applied to those d-indices. None when v is not inside d."""
    if v.dtype != d.dtype or v.size == 0:
        return None
    start = _index(_address(v) - _address(d), d)
    if start is None:
        return None
    deltas = []
    for n, st in zip(v.shape, v.strides):
        if n == 1:
            deltas.append((0,) * d.ndim)
            continue
        delta = _index(st, d) if st > 0 else None
        if delta is None:
            return None
        deltas.append(delta)
    for j in range(d.ndim):
        if start[j] + sum((n - 1) * dl[j] for n, dl in zip(v.shape, deltas)) >= d.shape[j]:
            return None
    strides = tuple(sum(dl[j] * s.strides[j] for j in range(d.ndim)) for dl in deltas)
    return np.lib.stride_tricks.as_strided(s[tuple(slice(i, i + 1) for i in start)],
                                           shape=v.shape, strides=strides, writeable=False)
