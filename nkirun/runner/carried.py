"""Moving elements that hold no data: what a transfer carries besides values.

A transfer between the cores (sendrecv) moves a whole tile. nki-library kernels send
fixed-size buffers of which only some partitions were written (attention_tkg exchanges a
16-partition max buffer holding 4 rows): on hardware the other partitions carry whatever
SBUF held, and nothing reads them. So a transfer does not read its source's elements as
values (no E090 there): the destination's elements whose source held no data hold no data
either, and reading one of them later is E090, at the instruction that does.
"""
from __future__ import annotations

import numpy as np

from nkirun.source.access import storage_elements


def defined(m, r) -> np.ndarray | None:
    """Which elements of view r hold data, as a bool array of r.shape; None: all."""
    w = m.written.get(r.decl.name)
    if w is None:
        return None
    sel = m._selected_written(r, w).reshape(r.shape)
    return None if sel.all() else sel


def forget(m, r, missing: np.ndarray) -> None:
    """The elements of view r where `missing` (bool, r.shape) now hold no data."""
    if not missing.any():
        return
    name = r.decl.name
    w = m.written.get(name)
    if w is None:  # fully defined so far: track it again
        w = m.written[name] = np.ones(r.decl.shape, bool)
        m._unwritten[name] = 0
    flat = w.reshape(-1)
    if r.ap is None:
        elems = np.arange(w.size).reshape(w.shape)[r.np_index].reshape(r.shape)[missing]
    else:
        elems = storage_elements(r).reshape(r.shape + (-1,))[missing]
    flat[elems.reshape(-1)] = False
    m._unwritten[name] = int(w.size - np.count_nonzero(w))  # (rare: a plain recount)
