"""nc_match_replace8's fast path; its definition is `nc_match_replace8.definition`
(tests/isa/test_fast_paths.py checks they agree)."""
from __future__ import annotations

import numpy as np

DENSE_ABOVE = 64  # candidates per partition beyond which the dense loop is faster


def match_replace8(x: np.ndarray, v: np.ndarray, imm: np.float32,
                   valid: np.ndarray | None = None, dense_above: int = DENSE_ABOVE
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Replace in `x` ((P, N) C-contiguous float32, modified in place); return
    (indices int64, found bool), both (P, 8).

    The page's loop, vectorised over partitions, in one or two passes over the data: a
    compare against each partition's min of vals (NaN vals ignored) marks every element that
    could ever match (replaced ones included: they matched a val first), and a flatnonzero
    lists them. The 8 vals are then resolved in order on that candidate list (sorted by
    partition, then position), whose current values are kept up to date. When vals are the
    largest values (max8's, the usual case) the list is short; otherwise a second compare
    against the max of vals narrows it, and if it is still long (vals spread over data's
    range, or many equal elements) `_dense` is faster (docs/performance.md has the numbers).
    """
    p, n = x.shape
    lo = np.fmin.reduce(v, axis=1)[:, None]  # fmin/fmax skip NaN: a NaN val matches nothing
    cand = np.greater_equal(x, lo)
    if valid is not None:
        cand &= valid
    if np.count_nonzero(cand) > dense_above * p:
        cand &= np.less_equal(x, np.fmax.reduce(v, axis=1)[:, None])
        if np.count_nonzero(cand) > dense_above * p:
            return _dense(x, v, imm, valid)
    flat_at = np.flatnonzero(cand)
    rows = flat_at // n
    xf = x.reshape(-1)
    cur = xf[flat_at]
    indices = np.zeros(v.shape, np.int64)
    found = np.zeros(v.shape, bool)
    for j in range(v.shape[1]):
        hits = np.flatnonzero(cur == v[rows, j])
        if hits.size == 0:
            continue
        r = rows[hits]
        first = np.empty(hits.size, bool)  # the first hit of each partition
        first[0] = True
        np.not_equal(r[1:], r[:-1], out=first[1:])
        at = hits[first]
        indices[rows[at], j] = flat_at[at] - rows[at] * n
        found[rows[at], j] = True
        cur[at] = imm
    xf[flat_at] = cur
    return indices, found


def _dense(x, v, imm, valid):
    """The same loop on the whole data: one compare per val, then argmax (which stops at the
    first True) finds the first current occurrence in every partition at once."""
    rows = np.arange(x.shape[0])
    indices = np.zeros(v.shape, np.int64)
    found = np.zeros(v.shape, bool)
    eq = np.empty(x.shape, bool)
    for j in range(v.shape[1]):
        np.equal(x, v[:, j:j + 1], out=eq)
        if valid is not None:
            eq &= valid
        at = eq.argmax(axis=1)
        ok = eq[rows, at]
        indices[ok, j] = at[ok]
        found[:, j] = ok
        x[rows[ok], at[ok]] = imm
    return indices, found
