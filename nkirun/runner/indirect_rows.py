"""The element offsets of an indirect (runtime-indexed) view for its index's current values
(views/indirect.py), as `Machine.indirect_rows` gives them.

One DMA with an indirect side asks for them four or five times (the two-core race
tracking, the read's defined check, the gather, the oob_mode mask, the scatter, the
written marks), each a pass over every element of the view: on nki-library's
`blockwise_mm_baseline_shard_hidden` (LNC2, token rows gathered by index) that was half of
a 160 s run. `rows` keeps the last few answers per view, keyed by the index's values and
the oob_mode, so an instruction computes them once (speed.INDIRECT_ROWS; `rows_plain` is
the definition, tested equal in tests/runner/test_indirect_rows.py). Kept answers are
read-only: callers share them.
"""
from __future__ import annotations

import numpy as np

from nkirun import speed
from nkirun.views import indirect
from nkirun.views.access import static_offsets

KEPT = 8  # views whose last answer is kept (a DMA has at most two indirect sides)


def index_values(m, r) -> np.ndarray:
    """The index's current values (an SBUF tile, or the register of a scalar_offset)."""
    ind = r.ap.indirect
    return (m.read(ind.index, strict=True) if ind.register is None
            else np.array([m.register(ind.register)], np.int64))


def _mode(m) -> str:
    b = m.current
    mode = b.get("oob_mode") if b is not None and hasattr(b, "get") else None
    return mode or "error"


def rows_plain(m, r):
    """(byte offsets of the view's elements, rows kept ((P,) bool) or None); E093 under
    oob_mode=error."""
    return indirect.offsets(r, index_values(m, r), static_offsets(r), _mode(m), m.current)


def rows(m, r):
    """rows_plain, computed once per view and index values."""
    if not speed.INDIRECT_ROWS:
        return rows_plain(m, r)
    values = index_values(m, r)
    mode = _mode(m)
    key = (values.dtype.str, values.shape, values.tobytes(), mode)
    memo = m.__dict__.setdefault("_indirect_rows", {})
    hit = memo.get(id(r))
    if hit is not None and hit[0] is r and hit[1] == key:
        return hit[2]
    off, keep = indirect.offsets(r, values, static_offsets(r), mode, m.current)
    off.flags.writeable = False
    if keep is not None:
        keep.flags.writeable = False
    if len(memo) >= KEPT:
        memo.clear()
    memo[id(r)] = (r, key, (off, keep))  # (r kept alive: its id is not reused meanwhile)
    return off, keep
