"""Machine state for `run`: named HBM/SBUF/PSUM buffers, which elements hold data,
and the engines' accumulator registers.

Reads and writes go through views of the tensors' NumPy storage (no copies of untouched
data). Elements of a tensor that started undefined are tracked exactly, so that reading
one before anything wrote it is a run-time error rather than silent garbage.
"""
from __future__ import annotations

import numpy as np

from . import dtypes as dt
from .errors import RunError, error
from .views import Resolved

LANES = 128  # one accumulator register per partition


class Accumulator:
    """A per-partition float32 register file (Vector or Scalar engine)."""

    def __init__(self, reset_value: float):
        self.reset_value = np.float32(reset_value)
        self.value = np.full((LANES, 1), self.reset_value, np.float32)
        self.defined = np.zeros(LANES, bool)  # False: never reset, or clobbered by `idle`

    def lanes(self, r: Resolved) -> slice:
        return slice(r.part_start, r.part_start + r.partitions * r.part_step, r.part_step)


class Machine:
    def __init__(self, buffers: dict[str, np.ndarray], undefined: dict[str, np.ndarray | None]):
        self.buffers = buffers
        # tensor -> bool array of written elements (None: every element holds data)
        self.written = undefined
        self.vector_acc = Accumulator(-np.inf)
        self.scalar_acc = Accumulator(0.0)
        self.warnings: list = []  # run-time Diagnostics (e.g. undefined behaviour hit)
        self.current = None  # the Bound being executed, for error messages

    # ---- reads -----------------------------------------------------------------------------
    def view(self, r: Resolved) -> np.ndarray:
        """The operand's storage view, in its own dtype and logical shape (no copy)."""
        a = self.buffers[r.decl.name][r.np_index]
        return a.reshape(r.shape) if r.reshape else a

    def read(self, r: Resolved) -> np.ndarray:
        self._check_defined(r)
        return self.view(r)

    def read_f32(self, r: Resolved) -> np.ndarray:
        """The operand as float32 (computation happens in float32 on every engine)."""
        return dt.to_f32(self.read(r))

    def _check_defined(self, r: Resolved) -> None:
        w = self.written.get(r.decl.name)
        if w is None:
            return
        sel = w[r.np_index]
        if sel.all():
            return
        bad = np.argwhere(~sel.reshape(r.shape))[0]
        b = self.current
        where = f"partition {bad[0]}, free index {tuple(int(i) for i in bad[1:])}"
        raise RunError(error(
            "E090", f"{b.op if b else 'instruction'} reads {r.decl.name} at {where} "
            "before anything wrote it", b.loc() if b else None, b.index if b else None,
            hint=f"give {r.decl.name} initial contents (file/fill/data) or write it first"))

    # ---- writes ----------------------------------------------------------------------------
    def write(self, r: Resolved, values, out_dtype: dt.DType | None = None, mask=None) -> None:
        """Store `values` (any numeric array broadcastable to r.shape) into the view.

        Values are cast to `out_dtype` first (the instruction's `dtype=`), then to the
        tensor's dtype. With a mask, only the elements where it is True change.
        """
        dst = self.view(r)
        v = np.asarray(values)
        if out_dtype is not None and out_dtype.np_type != r.dtype.np_type:
            v = dt.cast(v, out_dtype)
        v = dt.cast(v, r.dtype)
        if mask is None:
            if v.shape != dst.shape:
                v = np.broadcast_to(v, dst.shape) if v.size != dst.size else v.reshape(dst.shape)
            dst[...] = v
        else:
            m = mask if mask.shape == dst.shape else mask.reshape(dst.shape)
            src = np.broadcast_to(v, dst.shape) if v.size != dst.size else v.reshape(dst.shape)
            np.copyto(dst, src, where=m)
        self._mark_written(r, mask)

    def _mark_written(self, r: Resolved, mask) -> None:
        w = self.written.get(r.decl.name)
        if w is None:
            return
        if mask is None:
            w[r.np_index] = True
        else:
            sel = w[r.np_index]
            sel_view = sel.reshape(r.shape) if r.reshape else sel
            sel_view |= mask.reshape(sel_view.shape)
            w[r.np_index] = sel
        if w.all():
            self.written[r.decl.name] = None  # fully defined: stop tracking
