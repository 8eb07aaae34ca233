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

from nkirun import speed
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
            if len(starts) > _MAX_INTERVALS:
                self._trim()
            return t0, end, None
        i = bisect_right(starts, t0) - 1  # the last interval starting at or before t0
        blocker, t = None, t0
        if i >= 0 and ends[i] > t0:
            blocker, t = owners[i], ends[i]
        j = i + 1
        if work > 0 and starts[j] - t >= work and speed.DMA_ONE_GAP:  # (the gap holds it)
            end = t + work
            if blocker is not None and end < starts[j]:  # (_insert_at: it joins interval i)
                ends[i] = end
                owners[i] = owner
            else:
                self._insert_at(j, t, end, owner)
            return t, end, blocker
        return self._fill_gaps(t, work, owner, j, blocker)

    def _fill_gaps(self, t: float, work: float, owner: int, j: int, blocker) -> tuple:
        """book's gap filling from t on (j: the first interval starting after t): every gap
        in turn until `work` is taken (the plain twin of book's one-gap case,
        `speed.DMA_ONE_GAP`; tests/schedule/test_dma_groups.py compares them)."""
        starts = self.starts
        ends = self.ends
        first, left, pieces, at = None, work, [], 0
        while True:
            nxt = starts[j] if j < len(starts) else math.inf
            if nxt > t:
                if first is None:
                    first = t
                take = min(nxt - t, left)
                if take > 0:
                    if not pieces:
                        at = j  # (the first piece lies before interval j, from t on)
                    pieces.append((t, t + take))
                left -= take
                t += take
            if left <= 0:
                break
            t = max(t, ends[j])
            j += 1
        if len(pieces) == 1:  # (the usual case: where it goes is known)
            self._insert_at(at, pieces[0][0], pieces[0][1], owner)
        else:
            for s, e in pieces:
                self._insert(s, e, owner)
        return first, t, blocker

    def _insert(self, s: float, e: float, owner: int) -> None:
        self._insert_at(bisect_right(self.starts, s), s, e, owner)

    def _insert_at(self, k: int, s: float, e: float, owner: int) -> None:
        """_insert of (s, e) where k == bisect_right(starts, s) (tests/schedule/
        test_dma_groups.py checks it of every single-piece booking)."""
        starts, ends, owners = self.starts, self.ends, self.owners
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
        if len(starts) > _MAX_INTERVALS:
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
        """Over _MAX_INTERVALS: close the oldest gap (never earlier than the truth)."""
        starts, ends, owners = self.starts, self.ends, self.owners
        if len(starts) > _MAX_INTERVALS:
            ends[0] = ends[1]
            owners[0] = owners[1]
            del starts[1], ends[1], owners[1]


def _earliest(answers) -> tuple:
    """(first byte, end, blocker) of a transfer from its engines' Server.book answers, in
    order: the earliest first byte, the latest end (0.0 at least), the first blocker."""
    first, end, blocker = math.inf, 0.0, None
    for f, x, bl in answers:
        if f < first:
            first = f
        if x > end:
            end = x
        if bl is not None and blocker is None:
            blocker = bl
    return first, end, blocker


class DmaEngines:
    """The 16 engines and HBM as servers. While every transfer has used all engines with
    equal shares, one Server stands for all of them (the common case, 16x less work)."""

    def __init__(self, target):
        t = cost_table(target)
        self.n = t.dma_engines
        self.shared = Server()
        self.servers: list[Server] | None = None
        self.hbm = Server()
        from nkirun import speed
        self.grouped = speed.SHARED_DMA_SERVERS
        # speed.DMA_GROUP_PLANS: id(shares) -> (shares, layout, the Servers to book and
        # their work, or None), valid while `layout` (bumped whenever an engine changes
        # Server) is unchanged (`_planned`; the plain twin: the grouping worked out anew)
        self.plans = {} if speed.DMA_GROUP_PLANS and self.grouped else None
        self.layout = 0
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
            if self.grouped:  # one copy for every engine until their histories part
                self.servers = [self.shared.copy()] * self.n
            else:
                self.servers = [self.shared.copy() for _ in range(self.n)]
            self.hbm = self.shared.copy()
            self.layout += 1
        plans = self.plans
        if plans is not None:
            plan = plans.get(id(shares))
            if plan is not None and plan[0] is shares and plan[1] == self.layout:
                groups = plan[2]
                if groups is not None and len(groups) == 1:  # (one Server: its answer)
                    first, end, blocker = groups[0][0].book(t0, groups[0][1], owner)
                    if not end > 0.0:
                        end = 0.0
                    if self.hbm_binds and hbm_ns > 0:
                        return self._hbm(t0, hbm_ns, owner, first, end, blocker)
                    return first, end, blocker
                if groups is not None:
                    return self._planned(t0, groups, hbm_ns, owner)
            else:
                plan = None
        got = self._book_shares(t0, shares, owner)
        if plans is not None and plan is None:  # (the plan of the layout as it is now)
            plans[id(shares)] = (shares, self.layout, self._plan_of(shares))
        return self._hbm(t0, hbm_ns, owner, *got)

    def _book_shares(self, t0: float, shares, owner: int) -> tuple:
        """(first byte, end, blocker) on the engines, once they have parted (the plain
        booking: the grouping worked out for this transfer)."""
        got = None
        if self.grouped:
            one = self._one_server(shares)  # (the usual case: one booking serves them all)
            got = [one.book(t0, shares[0][1], owner)] if one is not None else \
                self._book_grouped(t0, shares, owner)
        return _earliest(self.servers[e].book(t0, w, owner) if got is None else got[k]
                         for k, (e, w) in enumerate(
                             shares if got is None or len(got) > 1 else shares[:1]))

    def _plan_of(self, shares) -> tuple | None:
        """The (Server, work) pairs `_book_shares` books for `shares` while no engine
        changes Server, in the order of their first engine in `shares`: each Server taken
        by its engines alone and with one work (else None: the next booking parts them,
        or an engine is given twice)."""
        servers, groups, seen = self.servers, {}, set()
        for e, w in shares:
            if e in seen:
                return None
            seen.add(e)
            srv = servers[e]
            g = groups.get(id(srv))
            if g is None:
                groups[id(srv)] = [srv, w, 1]
            elif g[1] != w:
                return None
            else:
                g[2] += 1
        if any(servers.count(srv) != n for srv, _, n in groups.values()):
            return None
        return tuple((srv, w) for srv, w, _ in groups.values())

    def _planned(self, t0: float, groups, hbm_ns: float, owner: int):
        """`book` from the plan `groups` (`_plan_of`): each Server booked once; an answer
        equal for all engines of a Server, the first and last byte and the first blocker
        in the order of `shares` are those of the groups in theirs."""
        return self._hbm(t0, hbm_ns, owner,
                         *_earliest(srv.book(t0, w, owner) for srv, w in groups))

    def _one_server(self, shares) -> Server | None:
        """The Server every engine of `shares` shares with no other engine when they all
        take the same work (engines in increasing order), else None."""
        servers = self.servers
        e0, w0 = shares[0]
        srv, prev = servers[e0], -1
        for e, w in shares:
            if e <= prev or w != w0 or servers[e] is not srv:
                return None
            prev = e
        return srv if servers.count(srv) == len(shares) else None

    def _book_grouped(self, t0: float, shares, owner: int) -> list | None:
        """Each share's Server.book answer, booking once per (Server object, work): engines
        whose histories are equal share one Server (`speed.SHARED_DMA_SERVERS`), booked in
        place when every engine sharing it takes the same work now, else copied for those
        that do (their histories part). The plain twin books every engine on its own Server;
        tests/schedule/test_dma_groups.py compares both. None: an engine given twice (the
        plain loop then)."""
        servers, groups, keys = self.servers, {}, []
        for e, w in shares:
            srv = servers[e]
            key = (id(srv), w)
            g = groups.get(key)
            if g is None:
                g = groups[key] = [srv, []]
            elif e in g[1]:
                return None
            g[1].append(e)
            keys.append(key)
        answers = {}
        for key, (srv, engines) in groups.items():
            if servers.count(srv) != len(engines):  # others share it: theirs stays as is
                srv = srv.copy()
                self.layout += 1
                for e in engines:
                    servers[e] = srv
            answers[key] = srv.book(t0, key[1], owner)
        return [answers[key] for key in keys]

    def advance(self, first: int, shift_ns: float, shift_index: int) -> None:
        """scheduler.advance's move of the busy intervals positions >= `first` own."""
        every = [self.shared, self.hbm, *(self.servers or ())]
        for server in {id(x): x for x in every}.values():  # (engines may share one)
            server.advance(first, shift_ns, shift_index)

    def _hbm(self, t0, hbm_ns, owner, first, end, blocker):
        if self.hbm_binds and hbm_ns > 0:
            _, x, _ = self.hbm.book(t0, hbm_ns, owner)
            if x > end:
                end = x
        return first, end, blocker
