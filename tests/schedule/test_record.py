"""The access histories' update (schedule/history.py `record`: a read inline, a tensor's
first access made in place, the sweep only when a map grew) leaves every history as its
plain twin `record_plain` does (AccessHistory.read and .wrote per access): the maps in
their order, their bounds, the sweep limit and the box indexes the dependence scan keeps
(schedule/box_index.py)."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from nkirun.schedule import box_index
from nkirun.schedule.history import record, record_plain


def _box(rng):
    return tuple((rng.randint(0, 8), rng.randint(1, 4), rng.randint(1, 2))
                 for _ in range(2 if rng.random() < 0.9 else 3))


def _state(tensors) -> dict:
    out = {}
    for name, h in tensors.items():
        idx = [None if x is None else (list(x.place.items()), x.sorted, list(x.wide.items()))
               for x in (h.windex, h.rindex)]
        out[name] = (list(h.writes.items()), list(h.reads.items()), h.write_end,
                     h.read_end, h.limit, idx, h.raw_memo)
    return out


@settings(max_examples=300, deadline=None)
@given(st.randoms(use_true_random=False))
def test_record_leaves_the_histories_record_plain_leaves(rng):
    boxes = [_box(rng) for _ in range(rng.randint(1, 40))]
    fast, plain = {}, {}
    for i in range(rng.randint(1, 200)):
        names = [f"t{rng.randint(0, 3)}" for _ in range(rng.randint(0, 3))]
        rboxes = [rng.choice(boxes) for _ in names]
        wnames = [f"t{rng.randint(0, 3)}" for _ in range(rng.randint(0, 2))]
        wboxes = [rng.choice(boxes) for _ in wnames]
        end, lat = rng.choice([0.0, 1.0, 2.0, 4.0, float(i)]), rng.choice([0.0, 0.5, 3.0])
        record(fast, names, rboxes, wnames, wboxes, end, i, lat)
        record_plain(plain, names, rboxes, wnames, wboxes, end, i, lat)
        if rng.random() < 0.1:  # a dependence scan made indexes of the larger maps
            for tensors in (fast, plain):
                for h in tensors.values():
                    if h.reads:
                        box_index.indexed(h, True)
                    if h.writes:
                        box_index.indexed(h, False)
        assert _state(fast) == _state(plain)
