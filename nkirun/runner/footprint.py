"""Which storage elements an access touches, as runs: sorted, disjoint half-open intervals
[start, end) of flat storage-element indices (a pair of int64 arrays).

The run-time race tracking of two-core programs (runner/cores.py) compares what the cores
touch between two synchronisation points. Listing every element of every DMA (int64 each,
then np.unique) grew workers to tens of GB on nki-library's kernels; runs follow the
pattern's structure instead: a view's innermost contiguous dims fold into one run, so a
tile of whole rows is one interval and a column slice is one per row. Their number is the
product of the remaining (outer) counts, capped at RUN_LIMIT: past it the outer dims with
the smallest steps are folded into bounding runs, a superset (a race may then be reported
where the cores' elements only interleave; never one missed).

`elements()` is the element-exact plain twin the tests compare with.
"""
from __future__ import annotations

from math import prod

import numpy as np

RUN_LIMIT = 1 << 16  # runs one access keeps (16 bytes each)

EMPTY = (np.zeros(0, np.int64), np.zeros(0, np.int64))


def lattice(base: int, shape, strides, isz: int, ssz: int):
    """Runs of the storage elements (`ssz` bytes each) under the byte lattice
    base + sum(strides[i] * k[i]), k[i] < shape[i], each point `isz` bytes wide."""
    if any(n <= 0 for n in shape):
        return EMPTY
    dims = []
    for s, n in zip(strides, shape):
        if n == 1 or s == 0:
            continue
        if s < 0:  # walk it forwards from its lowest point
            base, s = base + s * (n - 1), -s
        dims.append((s, n))
    dims.sort()
    run = isz  # bytes from a run's first byte to its last, plus one
    while dims and dims[0][0] <= run:  # steps within the run so far: contiguous
        s, n = dims.pop(0)
        run = s * (n - 1) + run
    while dims and prod(n for _, n in dims) > RUN_LIMIT:
        s, n = dims.pop(0)  # (bounding: what lies between the steps joins the run)
        run = s * (n - 1) + run
    starts = np.full(1, base, np.int64)
    for s, n in dims:
        starts = (starts[:, None] + np.arange(n, dtype=np.int64) * s).reshape(-1)
    return merge(starts // ssz, (starts + run + ssz - 1) // ssz)


def shifted(runs, bases) -> tuple:
    """The runs repeated at each of `bases` (storage elements), merged."""
    lo, hi = runs
    bases = np.asarray(bases, np.int64).reshape(-1, 1)
    return merge((lo + bases).reshape(-1), (hi + bases).reshape(-1))


def box(box_dims, dims):
    """Runs of an exact per-dim box ((start, count, step) per tensor dim) of a row-major
    tensor of shape `dims` (elements)."""
    tstr = [prod(dims[d + 1:]) for d in range(len(dims))]
    base = sum(s * t for (s, _, _), t in zip(box_dims, tstr))
    return lattice(base, [c for _, c, _ in box_dims],
                   [st * t for (_, _, st), t in zip(box_dims, tstr)], 1, 1)


def merge(starts: np.ndarray, ends: np.ndarray):
    """Intervals sorted by start with overlapping and touching ones joined."""
    if starts.size <= 1:
        return starts, ends
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    reach = np.maximum.accumulate(ends)
    new = np.empty(starts.size, bool)
    new[0] = True
    new[1:] = starts[1:] > reach[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:], starts.size) - 1
    return starts[first], reach[last]


def union(a, b):
    if a[0].size == 0:
        return b
    if b[0].size == 0:
        return a
    return merge(np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]]))


def meets(a, b) -> bool:
    """Whether two run lists share an element."""
    (alo, ahi), (blo, bhi) = a, b
    if alo.size == 0 or blo.size == 0 or alo[0] >= bhi[-1] or blo[0] >= ahi[-1]:
        return False
    if alo.size > blo.size:
        alo, ahi, blo, bhi = blo, bhi, alo, ahi
    # for each run of the shorter list: the first run of the other ending after its start
    at = np.searchsorted(bhi, alo, side="right")
    inside = at < blo.size
    return bool(np.any(blo[at[inside]] < ahi[inside]))


def elements(runs) -> np.ndarray:
    """Every element of the runs (the plain twin, for tests)."""
    lo, hi = runs
    if lo.size == 0:
        return np.zeros(0, np.int64)
    return np.concatenate([np.arange(a, b, dtype=np.int64) for a, b in zip(lo, hi)])
