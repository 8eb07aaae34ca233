"""Machine state for `run`: named HBM/SBUF/PSUM buffers, which elements hold data,
and the engines' accumulator registers.

Reads and writes go through views of the tensors' NumPy storage (no copies of untouched
data). Elements of a tensor that started undefined are tracked exactly, so that reading
one before anything wrote it is a run-time error rather than silent garbage.
"""
from __future__ import annotations

import numpy as np

from nkirun.hw import dtypes as dt
from nkirun.diagnostics import RunError, error
from nkirun.source.operands import Resolved

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
        self._unwritten: dict[str, int] = {}  # tensor -> elements not yet written
        self.vector_acc = Accumulator(-np.inf)
        self.scalar_acc = Accumulator(0.0)
        self.warnings: list = []  # run-time Diagnostics (e.g. undefined behaviour hit)
        self.current = None  # the Bound being executed, for error messages

    # ---- reads -----------------------------------------------------------------------------
    def view(self, r: Resolved) -> np.ndarray:
        """The operand's storage view, in its own dtype and logical shape (no copy)."""
        a = self.buffers[r.decl.name][r.np_index]
        return a.reshape(r.shape) if r.reshape else a

    def read(self, r: Resolved, rows: np.ndarray | None = None) -> np.ndarray:
        """The operand; `rows` ((P,) bool): only these partitions must hold data (a masked
        instruction that never reads the other partitions of this operand)."""
        self._check_defined(r, rows)
        return self.view(r)

    def read_f32(self, r: Resolved, rows: np.ndarray | None = None) -> np.ndarray:
        """The operand as float32 (computation happens in float32 on every engine)."""
        return dt.to_f32(self.read(r, rows))

    def _check_defined(self, r: Resolved, rows: np.ndarray | None = None) -> None:
        w = self.written.get(r.decl.name)
        if w is None:
            return
        sel = w[r.np_index]
        if sel.all():
            return
        b = self.current
        missing = ~sel.reshape(r.shape)
        if rows is not None:
            missing &= rows.reshape((-1,) + (1,) * (missing.ndim - 1))
            if not missing.any():
                return
        mask = getattr(b, "mask", None)
        if mask is not None:
            missing = _masked_reads(missing, mask)
            if not missing.any():
                return
        # report the first unwritten element in the tensor's own coordinates
        first = iter(np.argwhere(missing.reshape(sel.shape))[0])
        at = [i if isinstance(i, int) else i.start + int(next(first)) * i.step
              for i in r.np_index]
        where = (f"partition {at[0]}, free index {tuple(at[1:])}" if r.decl.on_chip
                 else f"index {tuple(at)}")
        n = int(missing.sum())
        raise RunError(error(
            "E090", f"{b.op if b else 'instruction'} reads `{r.decl.name}` at {where} before "
            f"anything wrote it ({n} of the {missing.size} elements it reads are unwritten)",
            b.loc() if b else None, b.index if b else None,
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
        if not _numpy_cast_is_ours(v.dtype, r.dtype):
            v = dt.cast(v, r.dtype)
        if v.shape != dst.shape:
            v = np.broadcast_to(v, dst.shape) if v.size != dst.size else v.reshape(dst.shape)
        if mask is None:
            np.copyto(dst, v, casting="unsafe")  # (a float32 -> float cast goes straight in)
        else:
            np.copyto(dst, v, casting="unsafe",
                      where=mask if mask.shape == dst.shape else mask.reshape(dst.shape))
        self._mark_written(r, mask)

    def write_select(self, r: Resolved, cond: np.ndarray, on_true: np.ndarray, on_false,
                     out_dtype: dt.DType | None = None, mask=None,
                     regular: bool | None = None) -> np.ndarray:
        """dst = where(cond, on_true, on_false); returns the selected values (on_true's dtype).

        `on_false` (a scalar or a (P, 1) array) must already be in on_true's dtype; `regular`
        says whether cond holds in long runs (see select_into; None: judged from cond). When no cast is needed (on_true
        is in dst's storage type, no dtype=, no mask) and dst does not overlap the inputs,
        the selection is computed straight into dst (no temporary, no extra copy); the
        returned array is then dst's own view.
        """
        dst = self.view(r)
        if (mask is None and on_true.dtype == dst.dtype and r.dtype.name != "tfloat32"
                and (out_dtype is None or out_dtype.name == r.dtype.name)
                and not np.may_share_memory(dst, on_true)
                and not (isinstance(on_false, np.ndarray) and np.may_share_memory(dst, on_false))):
            flat = dst.view()
            try:
                flat.shape = cond.shape  # raises instead of silently copying
            except AttributeError:
                flat = None
            if flat is not None:
                select_into(flat, cond, on_true, on_false, regular)
                self._mark_written(r, None)
                return flat
        out = np.empty(np.broadcast_shapes(cond.shape, on_true.shape), on_true.dtype)
        select_into(out, cond, on_true, on_false, regular)
        self.write(r, out.reshape(r.shape), out_dtype, mask)
        return out

    def direct_view(self, r: Resolved, shape: tuple) -> np.ndarray | None:
        """r's storage as a writable array of `shape` without a copy (a fast path that computes
        straight into dst), or None when that is impossible; call mark_written(r) after
        filling it. Only for values already in r's storage dtype (no cast)."""
        flat = self.view(r).view()
        try:
            flat.shape = shape  # raises instead of silently copying
        except AttributeError:
            return None
        return flat

    def mark_written(self, r: Resolved, mask=None) -> None:
        """Record that an instruction filled r (or its `mask`) through direct_view."""
        self._mark_written(r, mask)

    def _mark_written(self, r: Resolved, mask) -> None:
        w = self.written.get(r.decl.name)
        if w is None:
            return
        name = r.decl.name
        if mask is None and r.is_whole:  # the common case: never touch the bool array
            self.written[name] = None
            self._unwritten.pop(name, None)
            return
        # Count the newly written elements (work in proportion to the write, not to the
        # tensor), so "fully written" is a counter test instead of a scan of the whole
        # tensor after every write (benchmarks/bench_init_tracking.py, row-by-row case).
        sel = w[r.np_index]
        before = int(np.count_nonzero(sel))
        if mask is None:
            w[r.np_index] = True
            now = sel.size
        else:
            upd = sel.reshape(r.shape) | mask.reshape(r.shape)
            w[r.np_index] = upd.reshape(sel.shape)
            now = int(np.count_nonzero(upd))
        # (the loader hands over all-False arrays, and only this method sets elements)
        left = self._unwritten.get(name, w.size) - (now - before)
        if left == 0:
            self.written[name] = None  # fully defined: stop tracking
            self._unwritten.pop(name, None)
        else:
            self._unwritten[name] = left


def _numpy_cast_is_ours(src: np.dtype, dst: dt.DType) -> bool:
    """Whether NumPy's own cast of `src` values to dst's storage is nkirun's cast (dt.cast),
    so that write() can cast straight into the destination without a temporary: no cast at
    all, or float32 to a float type other than tfloat32 (both round to nearest even)."""
    if src == dst.np_type:
        return dst.name != "tfloat32"  # tfloat32 is float32 storage whose mantissa is rounded
    return src == np.float32 and dst.is_float and dst.name != "tfloat32"


def select_into(out: np.ndarray, cond: np.ndarray, a: np.ndarray, b,
                regular: bool | None = None) -> None:
    """out[...] = where(cond, a, b) bit for bit; a and b (broadcastable) in out's dtype, and
    neither overlapping out.

    np.where and copyto(where=) take a branch per element: fast when cond holds in long runs
    (`regular`: an index range, an affine bound), ~6x slower when it changes irregularly (a
    random select_reduce predicate at 128x16384 float32: 7.7 ms against 1.3 ms;
    docs/performance.md). The irregular case therefore uses a branch-free form on the raw
    bits: out = ((a ^ b) * cond) ^ b, which is a where cond holds and b elsewhere. With
    regular=None, a few sampled rows of cond decide.
    """
    if regular is None:
        regular = _long_runs(cond)
    if regular:
        np.copyto(out, b)
        np.copyto(out, a, where=cond)
        return
    u = np.dtype(f"u{out.itemsize}")
    bits, b_bits = out.view(u), np.asarray(b, out.dtype).view(u)
    np.bitwise_xor(np.asarray(a).view(u), b_bits, out=bits)
    np.multiply(bits, cond, out=bits)
    np.bitwise_xor(bits, b_bits, out=bits)


def _long_runs(cond: np.ndarray) -> bool:
    """Whether cond changes value less than once per 64 elements along its rows, judged on
    about 8 rows. (The branching select wins below ~1 change in 60 elements: each change
    costs a mispredicted branch, ~9 ns, against ~0.15 ns per element more for the
    branch-free form; measured at 128x16384 float32.)"""
    if cond.ndim < 2:
        return True
    rows = cond.reshape(cond.shape[0], -1)[::max(1, cond.shape[0] // 8)]
    changes = np.count_nonzero(rows[:, 1:] != rows[:, :-1])
    return changes * 64 < rows.size


def _masked_reads(missing: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The unwritten elements a masked instruction really reads.

    A masked instruction only processes the sub-box where its (dst-shaped) mask holds
    (nki-reference.md §3), so an operand shaped like dst is read only there, and a (P, 1)
    operand only in the partitions with some element selected. Other operands
    (reductions, transposes) are assumed to be read in full.
    """
    if missing.shape == mask.shape:
        return missing & mask
    if missing.shape == (mask.shape[0], 1):
        return missing & mask.reshape(mask.shape[0], -1).any(axis=1, keepdims=True)
    return missing
