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
