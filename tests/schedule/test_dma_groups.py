"""DMA engines with equal histories sharing one Server (`speed.SHARED_DMA_SERVERS`,
schedule/dma.py `_book_grouped`) book exactly as every engine on its own Server: the same
answer for every transfer, the same busy intervals on every engine after each."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from nkirun import speed
from nkirun.hw.targets import TARGETS
from nkirun.schedule.dma import DmaEngines

ENGINES = st.lists(st.integers(0, 15), min_size=1, max_size=16, unique=True)
TRANSFER = st.tuples(st.floats(0, 5000, allow_nan=False), ENGINES,
                     st.sampled_from([25.0, 50.0, 100.0, 400.0]), st.booleans(),
                     st.sampled_from([0.0, 30.0, 900.0]), st.booleans())


def _book_all(transfers, grouped: bool):
    was, speed.SHARED_DMA_SERVERS = speed.SHARED_DMA_SERVERS, grouped
    try:
        d = DmaEngines(TARGETS["trn1"])
    finally:
        speed.SHARED_DMA_SERVERS = was
    out = []
    for owner, (t0, engines, w, mixed, hbm, uniform) in enumerate(transfers):
        shares = tuple((e, w * (1 + (k % 2 if mixed else 0))) for k, e in enumerate(engines))
        uniform = uniform and len(engines) == 16 and not mixed
        out.append(d.book(t0, shares, hbm, uniform, owner))
        if d.servers is not None:
            out.append([(s.starts[:], s.ends[:], s.owners[:]) for s in d.servers])
    return out


@settings(max_examples=150, deadline=None)
@given(st.lists(TRANSFER, min_size=1, max_size=40))
def test_shared_servers_book_as_one_server_per_engine(transfers):
    assert _book_all(transfers, True) == _book_all(transfers, False)


def test_engines_that_move_together_keep_sharing(monkeypatch):
    monkeypatch.setattr(speed, "SHARED_DMA_SERVERS", True)
    d = DmaEngines(TARGETS["trn1"])
    d.book(0.0, tuple((e, 100.0) for e in range(4)), 0.0, False, 0)
    for owner in range(1, 20):
        d.book(owner * 10.0, tuple((e, 50.0) for e in range(4)), 0.0, False, owner)
    assert len({id(s) for s in d.servers[:4]}) == 1 and d.servers[4] is d.servers[15]
    assert d.servers[0] is not d.servers[4]


def _book_pooled(transfers, pool, plans: bool):
    """Transfers whose shares come from `pool` (the same objects again, as a DMA plan's
    are), booked with or without the kept groupings (`speed.DMA_GROUP_PLANS`)."""
    was = speed.SHARED_DMA_SERVERS, speed.DMA_GROUP_PLANS
    speed.SHARED_DMA_SERVERS, speed.DMA_GROUP_PLANS = True, plans
    try:
        d = DmaEngines(TARGETS["trn1"])
    finally:
        speed.SHARED_DMA_SERVERS, speed.DMA_GROUP_PLANS = was
    out = []
    for owner, (t0, k, hbm) in enumerate(transfers):
        shares, uniform = pool[k % len(pool)]
        out.append(d.book(t0, shares, hbm, uniform, owner))
        if d.servers is not None:
            out.append([(s.starts[:], s.ends[:], s.owners[:]) for s in d.servers])
    return out, d


SHARES = st.tuples(ENGINES, st.sampled_from([25.0, 100.0]), st.booleans(), st.booleans())


def _pool(drawn):
    pool = []
    for engines, w, mixed, twice in drawn:
        shares = tuple((e, w * (1 + (k % 2 if mixed else 0))) for k, e in enumerate(engines))
        if twice:  # an engine given twice: never planned
            shares += shares[:1]
        pool.append((shares, len(engines) == 16 and not mixed and not twice))
    return pool


@settings(max_examples=150, deadline=None)
@given(st.lists(SHARES, min_size=1, max_size=5),
       st.lists(st.tuples(st.floats(0, 600, allow_nan=False), st.integers(0, 4),
                          st.sampled_from([0.0, 30.0, 900.0])), min_size=1, max_size=60))
def test_kept_groupings_book_as_the_grouping_worked_out_anew(drawn, transfers):
    pool = _pool(drawn)
    assert _book_pooled(transfers, pool, True)[0] == _book_pooled(transfers, pool, False)[0]


def test_a_repeated_transfer_books_from_its_kept_grouping(monkeypatch):
    pool = _pool([(list(range(4)), 100.0, False, False), (list(range(16)), 25.0, False, False)])
    transfers = [(k * 40.0, k % 2, 0.0) for k in range(30)]
    calls = []
    real = DmaEngines._book_shares
    monkeypatch.setattr(DmaEngines, "_book_shares", lambda *a: calls.append(1) or real(*a))
    got, d = _book_pooled(transfers, pool, True)
    assert len(calls) <= 6  # (the grouping worked out at a transfer's first booking)
    assert got == _book_pooled(transfers, pool, False)[0]
    assert len({id(s) for s in d.servers}) == 2  # (engines 0-3 parted from the rest)


def test_the_first_blocker_in_engine_order_is_kept():
    pool = _pool([(list(range(4)), 100.0, False, False), (list(range(4, 16)), 100.0, False,
                                                          False),
                  (list(range(16)), 25.0, False, False)])
    # engines 0-3 busy with transfer 0, 4-15 with transfer 1, when transfer 2 arrives;
    # then again, the third transfer booked from its kept grouping
    transfers = [(0.0, 0, 0.0), (0.0, 1, 0.0), (50.0, 2, 0.0), (500.0, 1, 0.0),
                 (500.0, 0, 0.0), (550.0, 2, 0.0)]
    got = _book_pooled(transfers, pool, True)[0]
    assert got == _book_pooled(transfers, pool, False)[0]
    assert got[4][2] == 0 and got[10][2] == 4  # (the blocker: engine 0's)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 3000, allow_nan=False), st.floats(1, 400),
                          st.booleans()), min_size=1, max_size=80))
def test_a_booking_inserts_where_bisection_would(bookings):
    """Server.book places a single-piece booking at the position it found while looking
    for the gap (`_insert_at`), which must be bisect_right(starts, start)."""
    from bisect import bisect_right

    from nkirun.schedule.dma import Server
    seen = []

    class Checked(Server):
        __slots__ = ()

        def _insert_at(self, k, s, e, owner):
            assert k == bisect_right(self.starts, s)
            seen.append(k)
            super()._insert_at(k, s, e, owner)

    srv = Checked()
    for owner, (t0, work, late) in enumerate(bookings):
        srv.book(t0 + (5000.0 if late else 0.0), work, owner)
        assert srv.starts == sorted(srv.starts)
        assert all(e < s for e, s in zip(srv.ends, srv.starts[1:]))  # (merged, apart)


def _book_server(bookings, one_gap: bool, monkeypatch) -> tuple[list, int]:
    """Each booking's answer and the intervals after it, with or without book's one-gap
    case (`speed.DMA_ONE_GAP`), and how many bookings went through `_fill_gaps`."""
    from nkirun.schedule.dma import Server
    monkeypatch.setattr(speed, "DMA_ONE_GAP", one_gap)
    filled = []

    class Counted(Server):
        __slots__ = ()

        def _fill_gaps(self, *a):
            filled.append(1)
            return super()._fill_gaps(*a)

    srv, out = Counted(), []
    for owner, (t0, work) in enumerate(bookings):
        out.append(srv.book(t0, work, owner))
        out.append((srv.starts[:], srv.ends[:], srv.owners[:]))
    return out, len(filled)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.floats(0, 3000, allow_nan=False),  # (exact fits too)
                                   st.integers(0, 300).map(lambda k: k * 5.0)),
                          st.sampled_from([0.0, 10.0, 25.0, 50.0, 400.0])),
                min_size=1, max_size=80))
def test_a_booking_in_one_gap_books_as_the_gap_filling_loop(bookings):
    """Server.book's one-gap case (`speed.DMA_ONE_GAP`) answers and leaves the intervals
    exactly as its plain twin `_fill_gaps`, the loop over every gap."""
    import pytest
    with pytest.MonkeyPatch.context() as mp:
        fast, _ = _book_server(bookings, True, mp)
        plain, _ = _book_server(bookings, False, mp)
    assert fast == plain


def test_a_blocked_booking_fits_the_gap_after_its_blocker(monkeypatch):
    """The gap is measured from the blocker's end, not from t0: at 50 behind [0, 100] and
    before [150, 200], 60 ns do not fit (they span the second interval), 40 ns do."""
    bookings = [(0.0, 100.0), (150.0, 50.0), (50.0, 60.0), (300.0, 10.0), (50.0, 40.0),
                (500.0, 10.0), (200.0, 50.0)]  # (the last: fits exactly, joins both sides)
    fast, filled = _book_server(bookings, True, monkeypatch)
    plain, every = _book_server(bookings, False, monkeypatch)
    assert fast == plain
    assert fast[4] == (100.0, 210.0, 0)  # (100..150, then 200..210)
    assert fast[8] == (210.0, 250.0, 2)  # (behind [0, 210], before [300, 310]: one gap)
    assert fast[12] == (250.0, 300.0, 4)
    assert fast[13] == ([0.0, 500.0], [310.0, 510.0], [3, 5])
    assert filled < every  # (the one-gap case was taken)
