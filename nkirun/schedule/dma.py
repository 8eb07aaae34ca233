"""The DMA model: which engines a transfer uses, how long each streams, and the engines and
HBM as shared servers (constants and sources: hw/cost_tables.py; the model in words:
docs/cost.md "DMA model").

* A transfer is split by partition lane: engine e serves partitions 8e .. 8e+7 of the
  on-chip side [DMA-OV], so a [4, 4096] tile uses one engine and a [128, x] tile all 16.
  HBM -> HBM: its rows are spread the same way from engine 0.
* Each engine streams its share at the sustained per-engine rate, plus one descriptor
  overhead per contiguous run (at most one partition row): small rows are slow [DMA-BW].
* The fixed latency lies between the trigger and the first byte; the engines stay free
  meanwhile, so transfers in flight overlap their latencies.
* Engines are work-conserving servers: a transfer takes the idle time of its engines from
  its earliest start on, even before transfers booked earlier in program order (a load
  never waits behind a store that is still waiting for its data). Earlier bookings keep
  their times: program order is the priority.
* HBM is one more server every transfer touching HBM also books (bytes / HBM rate): when
  the engines together outrun HBM, HBM sets the pace.
"""
from __future__ import annotations

import math
from bisect import bisect_right

from nkirun.hw.cost_tables import cost_table
from nkirun.isa.dma_plan import plan, plan_ns, run_elems, uncontended_ns  # noqa: F401

_MAX_INTERVALS = 512  # per server; beyond, the oldest gap is closed (conservative)


class Server:
    """Busy intervals of one work-conserving server, sorted and merged: starts, ends,
    owners (the instruction of each interval's last booking)."""

    __slots__ = ("starts", "ends", "owners")

    def __init__(self):
        self.starts: list[float] = []
        self.ends: list[float] = []
        self.owners: list[int] = []

    def copy(self) -> "Server":
        s = Server()
        s.starts, s.ends, s.owners = self.starts[:], self.ends[:], self.owners[:]
        return s

    def book(self, t0: float, work: float, owner: int) -> tuple[float, float, int | None]:
        """Take `work` ns of idle time from t0 on, filling gaps: (first busy time, end, the
        owner of the interval that delayed the first byte, or None)."""
        starts, ends, owners = self.starts, self.ends, self.owners
        if not starts or t0 >= starts[-1]:  # fast path: at or after the last interval
            # (one float object for the end kept and the end returned: the next transfer's
            # start is often this one's end, and a schedule keeps both)
            if starts and ends[-1] >= t0:
                blocker = owners[-1] if ends[-1] > t0 else None
                first = ends[-1]
                ends[-1] = end = first + work
                owners[-1] = owner
                return first, end, blocker
            starts.append(t0)
            ends.append(end := t0 + work)
            owners.append(owner)
            self._trim()
            return t0, end, None
        i = bisect_right(starts, t0) - 1  # the last interval starting at or before t0
        blocker, t = None, t0
        if i >= 0 and ends[i] > t0:
            blocker, t = owners[i], ends[i]
        j, first, left, pieces = i + 1, None, work, []
        while True:
            nxt = starts[j] if j < len(starts) else math.inf
            if nxt > t:
                if first is None:
                    first = t
                take = min(nxt - t, left)
                if take > 0:
                    pieces.append((t, t + take))
                left -= take
                t += take
            if left <= 0:
                break
            t = max(t, ends[j])
            j += 1
        for s, e in pieces:
            self._insert(s, e, owner)
        return first, t, blocker

    def _insert(self, s: float, e: float, owner: int) -> None:
        starts, ends, owners = self.starts, self.ends, self.owners
        k = bisect_right(starts, s)
        if k > 0 and ends[k - 1] >= s:  # joins the previous interval
            k -= 1
            ends[k] = max(ends[k], e)
            owners[k] = owner
        else:
            starts.insert(k, s)
            ends.insert(k, e)
            owners.insert(k, owner)
        while k + 1 < len(starts) and starts[k + 1] <= ends[k]:  # swallows the next
            ends[k] = max(ends[k], ends[k + 1])
            owners[k] = owners[k + 1] if ends[k + 1] >= ends[k] else owners[k]
            del starts[k + 1], ends[k + 1], owners[k + 1]
        self._trim()

    def advance(self, first: int, shift_ns: float, shift_index: int) -> None:
        """Intervals owned by positions >= `first` move `shift_ns` later; the earliest of
        them keeps its start, so the time in between counts as busy (the gaps of trips not
        scheduled are closed, as _trim closes the oldest ones)."""
        starts, ends, owners = self.starts, self.ends, self.owners
        moved = [j for j, o in enumerate(owners) if o >= first]
        for k, j in enumerate(moved):
            if k:
                starts[j] += shift_ns
            ends[j] += shift_ns
            owners[j] += shift_index
        if any(a > b for a, b in zip(starts, starts[1:])) or \
                any(e > s for e, s in zip(ends, starts[1:])):  # (an earlier owner lay later)
            merged: list = []
            for iv in sorted(zip(starts, ends, owners)):
                if merged and iv[0] <= merged[-1][1]:
                    last = merged[-1]
                    merged[-1] = (last[0], max(last[1], iv[1]), iv[2] if iv[1] >= last[1]
                                  else last[2])
                else:
                    merged.append(iv)
            self.starts, self.ends, self.owners = (list(x) for x in zip(*merged))

    def _trim(self) -> None:
        starts, ends, owners = self.starts, self.ends, self.owners
        if len(starts) > _MAX_INTERVALS:  # close the oldest gap: never earlier than truth
            ends[0] = ends[1]
            owners[0] = owners[1]
            del starts[1], ends[1], owners[1]


class DmaEngines:
    """The 16 engines and HBM as servers. While every transfer has used all engines with
    equal shares, one Server stands for all of them (the common case, 16x less work)."""

    def __init__(self, target):
        t = cost_table(target)
        self.n = t.dma_engines
        self.shared = Server()
        self.servers: list[Server] | None = None
        self.hbm = Server()
        # HBM can only set the pace when the engines together can outrun it
        self.hbm_binds = t.dma_engines * t.dma_engine_bytes_per_ns > t.hbm_bytes_per_ns

    def book(self, t0: float, shares, hbm_ns: float, uniform: bool, owner: int):
        """(first byte, end, blocker) of a transfer whose streaming may start at t0."""
        if self.servers is None:
            if uniform:  # every engine busy alike: HBM's share folds into theirs
                w = shares[0][1]
                if self.hbm_binds and hbm_ns > w:
                    w = hbm_ns
                return self.shared.book(t0, w, owner)
            self.servers = [self.shared.copy() for _ in range(self.n)]
            self.hbm = self.shared.copy()
        first, end, blocker = math.inf, 0.0, None
        for e, w in shares:
            f, x, bl = self.servers[e].book(t0, w, owner)
            if f < first:
                first = f
            if x > end:
                end = x
            if bl is not None and blocker is None:
                blocker = bl
        return self._hbm(t0, hbm_ns, owner, first, end, blocker)

    def advance(self, first: int, shift_ns: float, shift_index: int) -> None:
        """scheduler.advance's move of the busy intervals positions >= `first` own."""
        for server in [self.shared, self.hbm, *(self.servers or ())]:
            server.advance(first, shift_ns, shift_index)

    def _hbm(self, t0, hbm_ns, owner, first, end, blocker):
        if self.hbm_binds and hbm_ns > 0:
            _, x, _ = self.hbm.book(t0, hbm_ns, owner)
            if x > end:
                end = x
        return first, end, blocker
