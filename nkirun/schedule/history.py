"""The accesses of one tensor that can still delay a later instruction (the scheduler's
state per tensor, scheduler.py)."""
from __future__ import annotations

from nkirun.checker.overlap import contains
from nkirun.isa.bound import raw_args


class AccessHistory:
    """The accesses of one tensor that can still delay a later instruction, keyed by box:
    box -> (end_ns, instruction, latency_ns) for writes (latency: what a compute reader adds,
    hw/cost_tables.py raw_latency_ns) and box -> (end_ns, instruction) for reads.

    Dominated accesses are dropped, so the maps stay small and scheduling stays linear:
    a new write replaces the write and the read of the identical box (it waited for both,
    so it ends after them); a new read replaces the read of the identical box if it ends no
    earlier. When a map has doubled since the last sweep, a sweep also drops the accesses a
    newer one covers (`contains`), at amortised O(1) per access. Dropping never changes a
    start time: whatever overlaps the dropped access overlaps the newer one, which ends no
    earlier.

    `write_end` / `read_end` bound the ends in each map from above, so the scheduler skips
    scanning a map that cannot delay an instruction any further (most of them, in traces)."""

    __slots__ = ("writes", "reads", "limit", "write_end", "read_end", "windex", "rindex",
                 "raw_memo")

    def __init__(self):
        self.writes: dict[tuple, tuple[float, int, float]] = {}
        self.reads: dict[tuple, tuple[float, int]] = {}
        self.limit = _SWEEP_MIN
        self.write_end = self.read_end = 0.0
        # speed.BOX_INDEX (schedule/box_index.py): an index of each map's boxes once it is
        # large, kept equal to the map's keys in its order here; and a read's answer per
        # box, valid while the writes do not change. None: not made (the plain scan).
        self.windex = self.rindex = self.raw_memo = None

    def wrote(self, box, end: float, index: int, latency: float) -> None:
        writes = self.writes
        if self.windex is not None and box not in writes:
            self.windex.add(box)
        writes[box] = (end, index, latency)
        self.raw_memo = None
        if end + latency > self.write_end:
            self.write_end = end + latency
        reads = self.reads
        if reads and reads.pop(box, None) is not None and self.rindex is not None:
            self.rindex.remove(box)
        if len(writes) + len(reads) > self.limit:
            self.writes = {b: a for b, a in writes.items() if b == box
                           or not contains(box, b)}
            self.reads = {b: a for b, a in self.reads.items() if not contains(box, b)}
            self.windex = self.rindex = None  # (made again when a scan needs one)
            self._relimit()

    def read(self, box, end: float, index: int) -> None:
        cur = self.reads.get(box)
        if cur is None or cur[0] <= end:
            if cur is None and self.rindex is not None:
                self.rindex.add(box)
            self.reads[box] = (end, index)
            if end > self.read_end:
                self.read_end = end
        if len(self.writes) + len(self.reads) > self.limit:
            self.sweep_reads(box, end)

    def sweep_reads(self, box, end: float) -> None:
        """Drop the reads that a new read of `box` ending at `end` covers (record: a read
        replaces the read of the identical box if it ends no earlier)."""
        self.reads = {b: a for b, a in self.reads.items() if b == box
                      or not (a[0] <= end and contains(box, b))}
        self.rindex = None
        self._relimit()

    def _relimit(self) -> None:
        self.limit = max(_SWEEP_MIN, 2 * (len(self.writes) + len(self.reads)))


_SWEEP_MIN = 16


def record_plain(tensors, rnames, rboxes, wnames, wboxes, end, index, lat) -> None:
    """Note the reads zip(rnames, rboxes) and the writes zip(wnames, wboxes) of instruction
    `index`, ending at `end` (writes: carrying `lat`), in the tensors' histories."""
    for name, box in zip(rnames, rboxes):
        st = tensors.get(name)
        if st is None:
            st = tensors[name] = AccessHistory()
        st.read(box, end, index)
    for name, box in zip(wnames, wboxes):
        st = tensors.get(name)
        if st is None:
            st = tensors[name] = AccessHistory()
        st.wrote(box, end, index, lat)


def record(tensors, rnames, rboxes, wnames, wboxes, end, index, lat) -> None:
    """record_plain (its twin, tests/schedule/test_record.py) with AccessHistory.read
    inline and a tensor's first access made in place: a read adds a box or replaces the
    read of the identical box; the sweep runs only when a map grew (after every access
    both maps together hold no more than `limit` boxes)."""
    for name, box in zip(rnames, rboxes):
        st = tensors.get(name)
        if st is None:  # (a new history: no index, no sweep)
            st = tensors[name] = AccessHistory()
            st.reads[box] = (end, index)
            if end > 0.0:
                st.read_end = end
            continue
        reads = st.reads
        cur = reads.get(box)
        if cur is None:
            if st.rindex is not None:
                st.rindex.add(box)
            reads[box] = (end, index)
            if end > st.read_end:
                st.read_end = end
            if len(st.writes) + len(reads) > st.limit:
                st.sweep_reads(box, end)
        elif cur[0] <= end:  # (the maps keep their sizes: within the limit)
            reads[box] = (end, index)
            if end > st.read_end:
                st.read_end = end
    for name, box in zip(wnames, wboxes):
        st = tensors.get(name)
        if st is None:
            st = tensors[name] = AccessHistory()
            st.writes[box] = (end, index, lat)
            if end + lat > 0.0:
                st.write_end = end + lat
            continue
        st.wrote(box, end, index, lat)


def last_uses(bound) -> list:
    """Per position in `bound`: the tensors that no later instruction reads or writes (one
    name, or a tuple of several), or None. Once an instruction is placed the histories of its tensors there can
    no longer delay anything, and the scheduler drops them (`speed.DEAD_HISTORIES`): a
    traced kernel allocates a new tile per loop iteration, and every history kept to the
    end was most of `cost`'s memory (matmul tutorial v1: 66,563 histories for 99,328
    instructions)."""
    out: list = [None] * len(bound)
    seen: set = set()
    add = seen.add
    for k in range(len(bound) - 1, -1, -1):
        b = bound[k]
        names = raw_args(b).names  # (a FormBound's pending Operands stay unmade)
        if names is None:
            names = b.names_plan()[1]
        new = None
        for n in names:
            if n not in seen:
                add(n)
                new = n if new is None else (new, n) if new.__class__ is str else (*new, n)
        out[k] = new
    return out
