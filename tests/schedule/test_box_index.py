"""The dependence scan through box indexes and the read memo (`speed.BOX_INDEX`,
schedule/box_index.py) answers exactly as the plain scan (fast_place.ready_of): on random
boxes, accesses and queries (ties included: few distinct ends), and on the schedules of the
example kernels, slot by slot."""
from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from nkirun.api_kernel import check_traced
from nkirun.checker.overlap import overlaps
from nkirun.schedule import box_index
from nkirun.schedule.box_index import BoxIndex, ready_indexed
from nkirun.schedule.fast_place import ready_of
from nkirun.schedule.history import AccessHistory

DIM = st.tuples(st.integers(0, 8), st.integers(0, 4), st.integers(1, 3))
BOX = st.one_of(st.tuples(DIM, DIM), st.tuples(DIM, DIM, DIM))  # (a rank apart: "wide")
POOL = st.lists(BOX, min_size=1, max_size=30)  # the boxes of a run, each one object


def _scheduler():
    s = SimpleNamespace(tensors={}, overlap_memo={})
    s.overlap = lambda a, b: overlaps(a, b)
    return s


@settings(max_examples=200, deadline=None)
@given(POOL, st.lists(st.tuples(st.booleans(), st.integers(0, 29)), max_size=80),
       st.lists(st.integers(0, 29), min_size=1, max_size=10))
def test_index_finds_every_overlapping_box_in_map_order(pool, changes, queries):
    boxes = [tuple(b) for b in pool]  # (objects of their own: identity as in a schedule)
    live: dict = {}
    index = None
    for add, k in changes:
        box = boxes[k % len(boxes)]
        if add and box not in live:
            live[box] = None
            if index is not None:
                index.add(box)
        elif not add and box in live:
            del live[box]
            if index is not None:
                index.remove(box)
        if index is None and live:
            index = BoxIndex(list(live))
    if index is None:
        return
    for k in queries:
        q = boxes[k % len(boxes)]
        near = index.near(q)
        assert len(set(near)) == len(near) and set(near) <= set(live)
        order = [b for b in live if b in set(near)]
        assert near == order  # the map's order
        assert [b for b in near if overlaps(b, q)] == [b for b in live if overlaps(b, q)]


def _box(rng):
    dims = 2 if rng.random() < 0.9 else 3  # (a rank apart: "wide")
    return tuple((rng.randint(0, 8), rng.randint(0, 4), rng.randint(1, 3))
                 for _ in range(dims))


@settings(max_examples=300, deadline=None)
@given(st.randoms(use_true_random=False), st.integers(0, 14))
def test_indexed_scan_answers_as_the_plain_scan(rng, index_min):
    """Random reads, writes and queries (an instruction's reads of two tensors and its
    write) on both: few distinct ends, so that ties are common."""
    boxes = [_box(rng) for _ in range(rng.randint(1, 30))]
    plain, fast = _scheduler(), _scheduler()
    was = box_index.INDEX_MIN, box_index.MEMO_MIN
    box_index.INDEX_MIN, box_index.MEMO_MIN = index_min, min(index_min, 4)
    try:
        for i in range(rng.randint(1, 150)):
            what, name = rng.choice("rwq"), f"t{rng.randint(0, 2)}"
            box, other = rng.choice(boxes), rng.choice(boxes)
            end, factor = rng.choice([0.0, 1.0, 2.0, 4.0]), rng.choice([0.0, 0.5, 1.0])
            if what == "q":
                args = ([name, "t0"], [box, other], [name], [other], factor)
                assert ready_indexed(fast, *args) == ready_of(plain, *args)
                continue
            for s in (plain, fast):
                h = s.tensors.setdefault(name, AccessHistory())
                if what == "r":
                    h.read(box, end, i)
                else:
                    h.wrote(box, end, i, factor)
        for name, h in fast.tensors.items():  # the maps stay the plain ones
            assert list(h.writes.items()) == list(plain.tensors[name].writes.items())
            assert list(h.reads.items()) == list(plain.tensors[name].reads.items())
    finally:
        box_index.INDEX_MIN, box_index.MEMO_MIN = was


def test_schedules_with_the_index_equal_the_plain_scan(tmp_path, monkeypatch):
    import importlib.util
    import pathlib
    here = pathlib.Path(__file__).resolve().parent
    spec = importlib.util.spec_from_file_location("_plans_for_index",
                                                  here / "test_form_plans.py")
    plans = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plans)
    made = []
    real = BoxIndex.__init__
    monkeypatch.setattr(BoxIndex, "__init__", lambda self, b: made.append(1) or real(self, b))
    seen = 0
    for name, traced in plans._cases(tmp_path):
        bound, diags = check_traced(traced)
        if any(d.is_error for d in diags):
            continue
        before = len(made)
        fast = plans._slots(traced.program, bound, monkeypatch, True, "BOX_INDEX")
        if name == "blocks":
            assert len(made) > before  # (16 write boxes of `big` live: indexed)
        assert fast == plans._slots(traced.program, bound, monkeypatch, False, "BOX_INDEX"), \
            name
        seen += 1
    assert seen >= 6
