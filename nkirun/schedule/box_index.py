"""The dependence scan without scanning every live box (`speed.BOX_INDEX`).

The plain scan (fast_place.ready_of) compares an access with every live access of its
tensor (history.py). A tensor written block by block keeps one write box per block live:
NKIBench bmm's writes each scanned ~74 boxes, the matmul tutorial v4's reads ~8 per tensor.
`ready_indexed` gives the same answer as the plain scan with two shortcuts:

* a map larger than INDEX_MIN gets a `BoxIndex` of its boxes: sorted by where each starts on
  one dimension (the one on which they start at the most places), so that a query visits
  only the boxes whose interval there meets its own, in the map's order (a tie between
  equal ends goes to the first in that order, as in the plain scan);
* a read's answer against a tensor's writes (the latest end among the writes its box
  overlaps, the first of them in the map's order) is kept per box until the writes change
  (AccessHistory.raw_memo): a tile written once and read by many instructions is scanned
  once per reader's box.

The answer of one map does not depend on what was found before it: the plain scan keeps
an access only if it ends later than everything before it, so it ends on the first of the
map's latest-ending conflicts whenever that beats the earlier maps. tests/schedule/
test_box_index.py compares the index with the plain filter on random boxes and changes,
and the schedules of example kernels with the switch off."""
from __future__ import annotations

from bisect import bisect_left, bisect_right, insort

from nkirun.checker.overlap import overlaps
from nkirun.schedule.model import RAW, READY, WAR, WAW

INDEX_MIN = 12  # a map of more boxes than this is indexed (below: the plain scan is faster)
MEMO_MIN = 4  # a read's answer is kept for maps of more writes than this
_AFTER = float("inf")
_WRITES_THEN_READS = (False, True)


def _span(dim) -> tuple[int, int]:
    """(lowest, highest) element of one dimension's progression (start, count, step), or
    (start, start) for an empty one (equal boxes must always meet)."""
    start, count, step = dim
    if count < 1:
        return start, start
    last = start + (count - 1) * step
    return (start, last) if last >= start else (last, start)


class BoxIndex:
    """The boxes of one access map (history.py), each with its place in the map's order:
    narrow ones in a list of (start, place, end, start2, end2, box) sorted by start and
    place, where start and end bound the box on `dim`, the dimension on which the boxes
    start at the most places, and start2, end2 on `dim2`, the next such; boxes wider on
    `dim` than `width` (or of another rank) apart."""

    __slots__ = ("dim", "dim2", "rank", "width", "sorted", "wide", "place", "next",
                 "outgrown")

    def __init__(self, boxes: list):
        first = boxes[0]
        self.rank = len(first)
        same = [b for b in boxes if len(b) == self.rank]
        dims = sorted(range(self.rank), key=lambda d: (len({b[d][0] for b in same}), d))
        self.dim, self.dim2 = dims[-1], dims[-2] if self.rank > 1 else dims[-1]
        spans = sorted(hi - lo for lo, hi in (_span(b[self.dim]) for b in same))
        self.width = spans[(len(spans) * 3) // 4]
        self.sorted: list = []
        self.wide: dict = {}
        self.place: dict = {}
        self.next = 0
        self.outgrown = 2 * len(boxes)  # then made again: its dimensions chosen afresh
        for b in boxes:
            self.add(b)

    def add(self, box) -> None:
        """A box new to the map, at its end."""
        k = self.place[box] = self.next
        self.next = k + 1
        if len(box) != self.rank:
            self.wide[box] = k
            return
        lo, hi = _span(box[self.dim])
        if hi - lo > self.width:
            self.wide[box] = k
        else:
            insort(self.sorted, (lo, k, hi, *_span(box[self.dim2]), box))

    def remove(self, box) -> None:
        k = self.place.pop(box)
        if self.wide.pop(box, None) is None:
            lo = _span(box[self.dim])[0]
            del self.sorted[bisect_left(self.sorted, (lo, k))]

    def near(self, box) -> list:
        """The boxes of the map that may overlap `box` (every one that does), in the map's
        order."""
        if len(box) != self.rank:
            return list(self.place)
        lo, hi = _span(box[self.dim])
        lo2, hi2 = _span(box[self.dim2])
        s = self.sorted
        got = [e for e in s[bisect_left(s, (lo - self.width,)):bisect_right(s, (hi, _AFTER))]
               if e[2] >= lo and e[3] <= hi2 and e[4] >= lo2]
        if self.wide:
            got += [(0, k, 0, 0, 0, b) for b, k in self.wide.items()]
        if len(got) > 1:
            got.sort(key=_place)
        return [e[5] for e in got]


def _place(entry):
    return entry[1]


def indexed(st, reads: bool) -> BoxIndex:
    """The index of st's reads (or writes) map, made if it has none or has twice the boxes
    it was made with (the dimension on which they vary most may have changed)."""
    if reads:
        if st.rindex is None or len(st.reads) > st.rindex.outgrown:
            st.rindex = BoxIndex(list(st.reads))
        return st.rindex
    if st.windex is None or len(st.writes) > st.windex.outgrown:
        st.windex = BoxIndex(list(st.writes))
    return st.windex


def _entries(st, reads: bool, box):
    """(box, access) of st's reads (or writes) map that may overlap `box`, in its order."""
    m = st.reads if reads else st.writes
    if len(m) > INDEX_MIN:
        return [(b, m[b]) for b in indexed(st, reads).near(box)]
    return m.items()


def latest_write(s, st, box, compute: float) -> tuple:
    """(box, compute, end, instruction) of the first of the latest-ending writes in st that
    `box` overlaps, a write's end plus `compute` times its latency (end -inf: none)."""
    best, dep = -_AFTER, None
    memo = s.overlap_memo
    for wbox, (end, k, lat) in _entries(st, False, box):
        if compute:
            end += lat * compute
        if end > best:
            if wbox is not box:
                key = (id(wbox), id(box))
                hit = memo.get(key)
                if hit is None:
                    hit = memo[key] = overlaps(wbox, box)
                if not hit:
                    continue
            best, dep = end, k
    return box, compute, best, dep


def ready_indexed(s, rnames, rboxes, wnames, wboxes, compute: float) -> tuple:
    """fast_place.ready_of (the plain scan) through the indexes and the read memo."""
    ready, dep, kind, dep_tensor = 0.0, None, READY, None
    tensors, overlap_memo = s.tensors, s.overlap_memo
    for name, box in zip(rnames, rboxes):
        st = tensors.get(name)
        if st is None or st.write_end <= ready:
            continue
        writes = st.writes
        if len(writes) <= MEMO_MIN:  # (a few writes: the plain scan, inline, is faster)
            for wbox, (end, k, lat) in writes.items():
                if compute:
                    end += lat * compute
                if end > ready:
                    if wbox is not box:
                        key = (id(wbox), id(box))
                        hit = overlap_memo.get(key)
                        if hit is None:
                            hit = overlap_memo[key] = overlaps(wbox, box)
                        if not hit:
                            continue
                    ready, dep, kind, dep_tensor = end, k, RAW, name
            continue
        memo = st.raw_memo
        if memo is None:
            memo = st.raw_memo = {}
        got = memo.get(id(box))
        if got is None or got[0] is not box or got[1] != compute:
            got = memo[id(box)] = latest_write(s, st, box, compute)
        if got[2] > ready:
            ready, dep, kind, dep_tensor = got[2], got[3], RAW, name
    for name, box in zip(wnames, wboxes):
        st = tensors.get(name)
        if st is None:
            continue
        for of_reads in _WRITES_THEN_READS:  # (WAW, then WAR)
            if (st.read_end if of_reads else st.write_end) <= ready:
                continue
            got = st.reads if of_reads else st.writes
            for other, a in (got.items() if len(got) <= INDEX_MIN else
                             _entries(st, of_reads, box)):
                if a[0] > ready:
                    if other is not box:  # (the scheduler's overlap, its memo inline)
                        hit = overlap_memo.get((id(other), id(box)))
                        if hit is None:
                            hit = overlap_memo[(id(other), id(box))] = overlaps(other, box)
                        if not hit:
                            continue
                    ready, dep, kind, dep_tensor = a[0], a[1], WAR if of_reads else WAW, name
    return ready, dep, kind, dep_tensor
