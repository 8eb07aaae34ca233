"""Machine state for `run`: named HBM/SBUF/PSUM buffers, which elements hold data,
and the engines' accumulator registers.
Reads and writes go through views of the tensors' NumPy storage (no copies of untouched
data). Elements of a tensor that started undefined are tracked exactly, so that reading
one before anything wrote it is a run-time error rather than silent garbage.
"""
from __future__ import annotations

import numpy as np

from nkirun.diagnostics import RunError, error
from nkirun.hw import dtypes as dt
from nkirun.views.access import storage_elements
from nkirun.views.operands import Resolved
from nkirun.runner import indirect_rows
from nkirun.runner.held import HeldElements
from nkirun.runner.registers import LoopState
from nkirun.runner.streamed import last_streamed, store_cast

LANES = 128  # one accumulator register per partition


class Accumulator:
    """A per-partition float32 register file (Vector or Scalar engine)."""

    def __init__(self, reset_value: float):
        self.reset_value = np.float32(reset_value)
        self.value = np.full((LANES, 1), self.reset_value, np.float32)
        self.defined = np.zeros(LANES, bool)  # False: never reset, or clobbered by `idle`

    def lanes(self, r: Resolved) -> slice:
        return slice(r.part_start, r.part_start + r.partitions * r.part_step, r.part_step)


class Machine(LoopState, HeldElements):
    def __init__(self, buffers: dict[str, np.ndarray], undefined: dict[str, np.ndarray | None]):
        self.buffers = buffers
        # tensor -> bool array of written elements (None: every element holds data)
        self.written = undefined
        self._unwritten: dict[str, int] = {}  # tensor -> elements not yet written
        self.vector_acc = Accumulator(-np.inf)
        self.scalar_acc = Accumulator(0.0)
        self.warnings: list = []  # run-time Diagnostics (e.g. undefined behaviour hit)
        self.current = None  # the Bound being executed, for error messages
        self.carry = False  # unwritten reads carried into results (runner/carried.py)
        self.lenient = False  # reads need not check (carried.py runs the instruction)
        self.fills = False  # nan|zero: unwritten reads see the fill (still unwritten)
        self.planned = False  # a planned run (runner/plan.py)
        self.garbage: dict = {}  # tensor -> the read its unwritten results come from
        self.garbage_at: dict = {}  # tensor -> bool: the elements that came from one
        self.init_loop_state()  # registers and runtime loops: runner/registers.py

    # ---- reads -----------------------------------------------------------------------------
    def view(self, r: Resolved) -> np.ndarray:
        """The operand's storage view, in its own dtype and logical shape (no copy)."""
        if r.ap is not None:
            return self._strided(r) if r.ap.indirect is None else self._gather(r)
        a = self.buffers[r.decl.name][r.np_index]
        return a.reshape(r.shape) if r.reshape else a

    def _strided(self, r: Resolved) -> np.ndarray:
        """An access-pattern view: the buffer's bytes seen through the pattern's strides
        (checked in bounds statically); read-only when it addresses an element twice."""
        name, s = r.decl.name, r.ap
        buf = self.buffers[name]
        if not buf.flags.c_contiguous:
            buf = self.buffers[name] = np.ascontiguousarray(buf)
        a = np.ndarray(s.shape, s.dtype.np_type, buffer=buf, offset=s.byte_offset,
                       strides=s.byte_strides)
        if s.overlapping:
            a.flags.writeable = False
        return a.reshape(r.shape) if s.shape != r.shape else a

    # ---- indirect (runtime-indexed) patterns: views/indirect.py --------------------------------
    def indirect_rows(self, r: Resolved):
        """Byte offsets of an indirect view's elements from its index's current values, and
        which partitions stay in bounds ((P,) bool; None: all). E093 under oob_mode=error.
        Computed once per instruction (runner/indirect_rows.py); the arrays are read-only."""
        return indirect_rows.rows(self, r)

    def _typed_flat(self, r: Resolved) -> np.ndarray:
        name = r.decl.name
        buf = self.buffers[name]
        if not buf.flags.c_contiguous:
            buf = self.buffers[name] = np.ascontiguousarray(buf)
        return buf.reshape(-1).view(np.uint8).view(r.ap.dtype.np_type)

    def _gather(self, r: Resolved) -> np.ndarray:
        off, _ = self.indirect_rows(r)
        return self._typed_flat(r)[off // r.ap.dtype.itemsize].reshape(r.shape)

    def _scatter(self, r: Resolved, values: np.ndarray, mask) -> None:
        off, keep = self.indirect_rows(r)
        sel = self._kept(r, keep, mask)
        at = (off // r.ap.dtype.itemsize).reshape(r.shape)
        flat = self._typed_flat(r)
        if sel is None:
            flat[at] = values
        else:
            flat[at[sel]] = values[sel]

    @staticmethod
    def _kept(r: Resolved, keep, mask):
        """The elements an indirect transfer really moves (None: all)."""
        if keep is None:
            return None if mask is None else mask.reshape(r.shape)
        rows = np.broadcast_to(keep.reshape((-1,) + (1,) * (len(r.shape) - 1)), r.shape)
        return rows if mask is None else rows & mask.reshape(r.shape)

    def _selected_written(self, r: Resolved, w: np.ndarray) -> np.ndarray:
        """Which elements of the view hold data (r.shape for a pattern view, else the
        shape NumPy's basic index gives)."""
        if r.ap is None:
            return w[r.np_index]
        if r.ap.exact_box and w[_box_index(r.box)].all():
            return np.ones(r.shape, bool)  # (the common case: no per-element work)
        off = self.indirect_rows(r)[0] if r.ap.indirect is not None else None
        return w.reshape(-1)[storage_elements(r, off)].all(axis=-1)

    def read(self, r: Resolved, rows: np.ndarray | None = None, strict=False) -> np.ndarray:
        """The operand; `rows` ((P,) bool): only these partitions must hold data (a masked
        instruction that never reads the other partitions of this operand). `strict`: it
        must hold data whatever the policy (an index, a register's value: carried.py)."""
        if not self.fills and self.written.get(r.decl.name) is not None and (
                strict or not self.lenient):
            self._check_defined(r, rows)  # (else every element holds data)
        return self.view(r)

    def held(self, r: Resolved) -> np.ndarray | None:
        """Which elements of the view hold data (initial contents or an earlier write), as
        a bool array of r.shape; None when every one does."""
        w = self.written.get(r.decl.name)
        if w is None:
            return None
        sel = w[r.np_index]
        return None if sel.all() else sel.reshape(r.shape)

    def read_f32(self, r: Resolved, rows: np.ndarray | None = None) -> np.ndarray:
        return dt.to_f32(self.read(r, rows))  # (computation is float32 on every engine)

    def _check_defined(self, r: Resolved, rows: np.ndarray | None = None) -> None:
        w = self.written.get(r.decl.name)
        if w is None:
            return
        sel = self._selected_written(r, w)
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
        off = (self.indirect_rows(r)[0]
               if r.ap is not None and r.ap.indirect is not None else None)
        at = _first_missing(r, missing, sel.shape, off)
        where = (f"partition {at[0]}, free index {tuple(at[1:])}" if r.decl.on_chip
                 else f"index {tuple(at)}")
        n = int(missing.sum())
        raise RunError(error(
            "E090", f"{b.op if b else 'instruction'} reads `{r.decl.name}` at {where} before "
            f"anything wrote it ({n} of the {missing.size} elements it reads are unwritten)",
            b.loc() if b else None, b.index if b else None,
            hint=_unwritten_hint(r, missing, strict=not self.carry)))

    # ---- writes ----------------------------------------------------------------------------
    def write(self, r: Resolved, values, out_dtype: dt.DType | None = None, mask=None) -> None:
        """Store `values` (broadcastable to r.shape) into the view, cast to `out_dtype` (the
        instruction's `dtype=`) then to the tensor's dtype; with a mask only where it is True."""
        if r.ap is not None and r.ap.overlapping:  # a zero-step dst (runner/streamed.py)
            r, values, mask = last_streamed(r, values, mask)
        dst = self.view(r)
        v = store_cast(values, r.dtype, out_dtype)
        if v.shape != dst.shape:
            v = np.broadcast_to(v, dst.shape) if v.size != dst.size else v.reshape(dst.shape)
        if mask is None:
            np.copyto(dst, v, casting="unsafe")  # (a float32 -> float cast goes straight in)
        else:
            np.copyto(dst, v, casting="unsafe",
                      where=mask if mask.shape == dst.shape else mask.reshape(dst.shape))
        if r.ap is not None and r.ap.indirect is not None:
            self._scatter(r, dst, mask)  # dst was a gathered copy: put it where it goes
        if self.written.get(r.decl.name) is not None:  # (else nothing left to track)
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
        if r.ap is not None:
            return self._mark_pattern_written(r, w, mask)
        sel = w[r.np_index]
        before = int(np.count_nonzero(sel))
        if mask is None:
            w[r.np_index] = True
            now = sel.size
        else:
            upd = sel.reshape(r.shape) | mask.reshape(r.shape)
            w[r.np_index] = upd.reshape(sel.shape)
            now = int(np.count_nonzero(upd))
        self._count_written(name, w, now - before)

    def _mark_pattern_written(self, r: Resolved, w: np.ndarray, mask) -> None:
        # A storage element counts as written when any view element covering it is
        # (a reinterpreting view may write part of one).
        if r.ap.exact_box and mask is None:  # exactly a box of the tensor: slice it
            sel = w[_box_index(r.box)]
            before = int(np.count_nonzero(sel))
            sel[...] = True
            return self._count_written(r.decl.name, w, sel.size - before)
        if r.ap.indirect is None:
            elems = storage_elements(r)
        else:
            off, keep = self.indirect_rows(r)
            elems = storage_elements(r, off)
            mask = self._kept(r, keep, mask)
        if mask is not None:
            elems = elems[mask.reshape(r.shape)]
        flat = w.reshape(-1)
        new = elems[~flat[elems]].reshape(-1)  # work in proportion to what is new
        if new.size == 0:
            return
        if r.ap.dtype.itemsize < r.decl.dtype.itemsize or r.ap.indirect is not None:
            # several view elements can share a storage element (a narrower dtype, equal
            # indices): count each once (a sort: NumPy 2's hash-based unique is slower)
            new = np.sort(new)
            count = 1 + int(np.count_nonzero(new[1:] != new[:-1]))
        else:  # a written pattern addresses each element once (E039)
            count = new.size
        flat[new] = True
        self._count_written(r.decl.name, w, count)

    def _count_written(self, name: str, w: np.ndarray, new: int) -> None:
        # (the loader hands over all-False arrays, and only these methods set elements)
        left = self._unwritten.get(name, w.size) - new
        if left == 0:
            self.written[name] = None  # fully defined: stop tracking
            self._unwritten.pop(name, None)
        else:
            self._unwritten[name] = left


STRICT_HINT = ("or, if hardware would compute on garbage there harmlessly, run without "
               "--uninitialized strict: the default carries it and stops only where it is "
               "used (an output, an index, a register)")
POLICY_HINT = ("or, if hardware would compute on garbage there harmlessly, run with "
               "--uninitialized nan|zero (API: uninitialized=\"nan\"/\"zero\")")


def _unwritten_hint(r: Resolved, missing: np.ndarray, policy: bool = True,
                    strict: bool = False) -> str:
    """What to do about an E090: when the view's written partitions are one block and the
    others hold nothing, slice the operand to that block (the usual cause: a tile
    computed on all 128 partitions of which only the first rows were loaded). `policy`:
    also name --uninitialized (not when the garbage reached an output: runner/carried.py);
    `strict`: the run stopped at the read (--uninitialized strict)."""
    tail = f"; {STRICT_HINT if strict else POLICY_HINT}" if policy else ""
    name = r.decl.name
    rows = missing.reshape(missing.shape[0], -1)
    empty, full = rows.all(axis=1), ~rows.any(axis=1)
    held = np.flatnonzero(full)
    if r.decl.on_chip and held.size and (empty | full).all() \
            and held[-1] - held[0] + 1 == held.size:
        lo = r.part_start + int(held[0]) * r.part_step
        hi = r.part_start + int(held[-1]) * r.part_step + 1
        step = f":{r.part_step}" if r.part_step != 1 else ""
        return (f"only partitions {lo}..{hi - 1} of `{name}` hold data here: slice this "
                f"instruction's operands to those rows (`{name}[{lo}:{hi}{step}, ...]`), "
                f"or write the other rows first{tail}")
    return (f"write every element it reads first, or give `{name}` initial contents "
            f"(file/fill/data){tail}")


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


def _box_index(box) -> tuple:
    """The NumPy basic index of a per-dim (start, count, step) box."""
    return tuple(slice(s, s + (c - 1) * t + 1, t) for s, c, t in box)


def _first_missing(r: Resolved, missing: np.ndarray, sel_shape, off=None) -> list[int]:
    """The tensor coordinates of the first unwritten element the view reads."""
    first = np.argwhere(missing.reshape(sel_shape if r.ap is None else r.shape))[0]
    if r.ap is not None:
        flat = int(storage_elements(r, off)[tuple(first)][0])
        return [int(i) for i in np.unravel_index(flat, r.decl.shape)]
    it = iter(first)
    return [i if isinstance(i, int) else i.start + int(next(it)) * i.step for i in r.np_index]


def _masked_reads(missing: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The unwritten elements a masked instruction really reads.

    A masked instruction only processes the sub-box where its (dst-shaped) mask holds
    (the NKI programming model), so an operand shaped like dst is read only there, and a (P, 1)
    operand only in the partitions with some element selected. Other operands
    (reductions, transposes) are assumed to be read in full.
    """
    if missing.shape == mask.shape:
        return missing & mask
    if missing.shape == (mask.shape[0], 1):
        return missing & mask.reshape(mask.shape[0], -1).any(axis=1, keepdims=True)
    return missing
