"""The scheduler's view of an access pattern (Resolved.box) against the elements the
pattern really touches, enumerated from its definition: a box flagged exact holds exactly
those elements, any other box holds at least all of them (so dependences stay safe)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from nkirun.hw import dtypes as dt
from nkirun.ir import AccessPattern, TensorDecl, View
from nkirun.checker.overlap import overlaps
from nkirun.views.operands import resolve

RNG = np.random.default_rng(1414)
SHAPES = [("sbuf", (8, 12)), ("sbuf", (5, 3, 4)), ("hbm", (6, 10)), ("hbm", (2, 3, 8))]


def touched(decl: TensorDecl, ap: AccessPattern) -> set[tuple[int, ...]]:
    """Tensor coordinates of every storage element the pattern covers (by definition)."""
    dtype = ap.dtype or decl.dtype
    isz, ssz = dtype.itemsize, decl.dtype.itemsize
    out = set()
    for k in itertools.product(*(range(n) for _, n in ap.pattern)):
        e = ap.offset + sum(s * i for (s, _), i in zip(ap.pattern, k))
        for byte in range(e * isz, e * isz + isz):
            out.add(tuple(int(c) for c in np.unravel_index(byte // ssz, decl.shape)))
    return out


def box_set(box) -> set[tuple[int, ...]]:
    return set(itertools.product(*(range(s, s + c * t, t) for s, c, t in box)))


def random_pattern(decl: TensorDecl, dtype):
    ratio = decl.dtype.itemsize / dtype.itemsize
    per = int(decl.size // decl.shape[0] * ratio) if decl.on_chip else int(decl.size * ratio)
    entries = []
    if decl.on_chip:
        entries.append((per, int(RNG.integers(1, decl.shape[0] + 1))))
    for _ in range(int(RNG.integers(1, 4))):
        entries.append((int(RNG.integers(-3, 7)), int(RNG.integers(1, 5))))
    return AccessPattern(tuple(entries), int(RNG.integers(0, per)),
                         None if dtype is decl.dtype else dtype)


@pytest.mark.parametrize("buffer, shape", SHAPES)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "uint8"])
def test_boxes_are_exact_or_contain_every_touched_element(buffer, shape, dtype):
    decl = TensorDecl("t", buffer, shape, dt.DTYPES["float32"])
    exact_seen = 0
    for _ in range(300):
        ap = random_pattern(decl, dt.DTYPES[dtype])
        r, d = resolve(View("t", ap), decl)
        if r is None:
            assert d.code in ("E035", "E036", "E037", "E038")
            continue
        got, want = box_set(r.box), touched(decl, ap)
        assert want <= got, (ap, r.box)
        if r.ap.exact_box:
            exact_seen += 1
            assert got == want, (ap, r.box)
    if dtype == "float32":
        assert exact_seen > 0


def test_an_exact_box_matches_the_basic_view_it_equals():
    decl = TensorDecl("t", "sbuf", (8, 12), dt.DTYPES["float32"])
    from nkirun.views.operands import parse_view
    a, _ = resolve(parse_view("t[2:6, 1:10:3]"), decl)
    b, _ = resolve(parse_view("t.ap([[12,4],[3,3]],offset=25)"), decl)
    assert b.ap.exact_box and a.box == b.box
    c, _ = resolve(parse_view("t.ap([[12,4],[1,2]],offset=26)"), decl)
    assert overlaps(b.box, c.box) is False  # elements 1,4,7 vs 2,3 of rows 2..5
