"""runner/footprint.py: the runs of an access equal its element-exact set (the plain twin:
every byte offset listed, as the race tracking did before), and two run lists meet exactly
when the element sets intersect."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from nkirun.runner import footprint
from nkirun.views.access import _byte_offsets

ITEM = st.sampled_from([1, 2, 4])


def _exact(base, shape, strides, isz, ssz):
    """Every storage element the lattice's points cover (its bytes, floored to elements)."""
    off = _byte_offsets(base, shape, strides).reshape(-1)
    covered = (off[:, None] + np.arange(isz)).reshape(-1) // ssz
    return np.unique(covered)


@st.composite
def lattices(draw, ssz=None):
    isz = draw(ITEM)
    ssz = ssz if ssz is not None else draw(ITEM)
    nd = draw(st.integers(0, 3))
    shape = [draw(st.integers(1, 5)) for _ in range(nd)]
    strides = [draw(st.integers(-3, 12)) * isz for _ in range(nd)]
    reach = sum(abs(s) * (n - 1) for s, n in zip(strides, shape))
    base = draw(st.integers(0, 16)) * isz + reach  # never below byte 0
    return base, shape, strides, isz, ssz


@settings(max_examples=300, deadline=None)
@given(lattices())
def test_lattice_runs_are_the_exact_elements(lat):
    runs = footprint.lattice(*lat)
    np.testing.assert_array_equal(footprint.elements(runs), _exact(*lat))
    lo, hi = runs
    assert (lo < hi).all() and (lo[1:] > hi[:-1]).all()  # sorted, disjoint, not touching


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_meets_is_the_exact_intersection(data):
    ssz = data.draw(ITEM)
    a, b = data.draw(lattices(ssz)), data.draw(lattices(ssz))
    expected = np.intersect1d(_exact(*a), _exact(*b)).size > 0
    assert footprint.meets(footprint.lattice(*a), footprint.lattice(*b)) == expected


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_box_runs_are_the_basic_index_elements(data):
    dims = [data.draw(st.integers(1, 6)) for _ in range(data.draw(st.integers(1, 3)))]
    box, index = [], []
    for n in dims:
        start = data.draw(st.integers(0, n - 1))
        step = data.draw(st.integers(1, 3))
        count = data.draw(st.integers(1, -(-(n - start) // step)))
        box.append((start, count, step))
        index.append(slice(start, start + (count - 1) * step + 1, step))
    expected = np.sort(np.arange(int(np.prod(dims))).reshape(dims)[tuple(index)].ravel())
    np.testing.assert_array_equal(footprint.elements(footprint.box(box, dims)), expected)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_union_and_shifted_are_the_exact_sets(data):
    a, b = data.draw(lattices(1)), data.draw(lattices(1))
    ra, rb = footprint.lattice(*a), footprint.lattice(*b)
    np.testing.assert_array_equal(footprint.elements(footprint.union(ra, rb)),
                                  np.union1d(_exact(*a), _exact(*b)))
    bases = data.draw(st.lists(st.integers(0, 40), max_size=4))
    expected = np.unique(np.concatenate([_exact(*a) + k for k in bases] + [[]]).astype(np.int64))
    np.testing.assert_array_equal(footprint.elements(footprint.shifted(ra, bases)), expected)


def test_runs_stay_bounded_where_elements_would_not():
    """A column of a [65536, 4096] fp32 tensor, every other element of a row of it, and the
    whole tensor: no more than RUN_LIMIT runs each, whatever the element count."""
    rows, cols = 65536, 4096
    column = footprint.lattice(8, [rows, 1], [cols * 4, 4], 4, 4)
    assert column[0].size == rows
    whole = footprint.lattice(0, [rows, cols], [cols * 4, 4], 4, 4)
    assert whole[0].size == 1 and whole[1][0] == rows * cols
    strided = footprint.lattice(0, [rows, cols // 2], [cols * 4, 8], 4, 4)
    assert strided[0].size <= footprint.RUN_LIMIT
    # past the limit the runs bound the set: element 1 (between two touched ones) is in
    assert footprint.meets(strided, footprint.lattice(8, [1], [4], 4, 4))
    assert footprint.meets(strided, footprint.lattice(4, [1], [4], 4, 4))
