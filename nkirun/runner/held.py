"""Which elements of a tensor hold data, for instructions that move unwritten elements
as such (sendrecv: a transfer carries them without reading them; runner/carried.py says
why). A part of the machine, so an instruction asks its machine, never imports the runner."""
from __future__ import annotations

import numpy as np

from nkirun.views.access import storage_elements


class HeldElements:
    """Machine methods over `written` (tensor -> bool array, None: every element holds
    data) and `_unwritten` (tensor -> how many do not)."""

    def defined(self, r) -> np.ndarray | None:
        """Which elements of view r hold data, as a bool array of r.shape; None: all."""
        w = self.written.get(r.decl.name)
        if w is None:
            return None
        sel = self._selected_written(r, w).reshape(r.shape)
        return None if sel.all() else sel

    def forget(self, r, missing: np.ndarray) -> None:
        """The elements of view r where `missing` (bool, r.shape) now hold no data."""
        if not missing.any():
            return
        name = r.decl.name
        w = self.written.get(name)
        if w is None:  # fully defined so far: track it again
            w = self.written[name] = np.ones(r.decl.shape, bool)
            self._unwritten[name] = 0
        flat = w.reshape(-1)
        if r.ap is None:
            elems = np.arange(w.size).reshape(w.shape)[r.np_index].reshape(r.shape)[missing]
        else:
            elems = storage_elements(r).reshape(r.shape + (-1,))[missing]
        flat[elems.reshape(-1)] = False
        self._unwritten[name] = int(w.size - np.count_nonzero(w))  # (rare: a plain recount)
