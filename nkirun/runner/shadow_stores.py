"""The store side of a shadow run (runner/shadow.py): what the real run's output casts did
to one instruction's values (overflow, underflow, fp8 saturation, NaNs born, the loss), the
readings of shadow_metrics' module docstring (docs/shadow.md). The counts come from NumPy
passes or, where the C module was built, from shadow_native.store's one pass (the same
numbers: tests/runner/test_shadow_native.py). `Spy` is the real machine as an instruction
sees it during a shadow run, its stores counted here."""
from __future__ import annotations

import copy
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

from nkirun.hw import dtypes as dt
from nkirun.runner import shadow_native
from nkirun.runner.machine import Machine, select_into
from nkirun.runner.shadow_bits import BF16, as_f32, real_cast, rounds_on_bits, stored
from nkirun.runner.shadow_metrics import FP8, scratch, zeros


@dataclass
class WriteStats:
    """What the real run's stores of one instruction did at their output casts."""

    inputs: list = field(default_factory=list)  # the arrays it read (for NaN born)
    overflow: int = 0
    underflow: int = 0
    fp8_saturated: int = 0
    nan_written: int = 0
    nan_read: int | None = None
    store_abs: float = 0.0  # the largest |stored - computed| (what the casts lost)
    # True: the inputs agree with the shadow's, so a float32 store's loss is its carried
    # error, which compare() measures anyway; `deferred` counts the stores left to it
    loss_deferred: bool = False
    deferred: dict = field(default_factory=dict)  # id(Resolved) -> (computed, stored)
    seen: set = field(default_factory=set)  # id(Resolved)s stored to (rounding ones)
    real32: dict = field(default_factory=dict)  # id(Resolved) -> stored values, float32
    pool: dict = field(default_factory=dict)  # scratch arrays (the run's)
    native: bool = False  # shadow_native's one-pass counts where it reads the arrays
    mirror: object = None  # a ShadowMachine that takes each real store's values (mirrored)

    def count(self, r, pre: np.ndarray, post: np.ndarray, out_dtype, dst, mask,
              post32: np.ndarray | None = None, counts: tuple | None = None) -> None:
        """One store of values `pre` (as computed) kept as `post` (as stored) into r
        (`post32`: post as float32 values, when already known; `counts`: what
        shadow_native.store gave for them, when it ran)."""
        uncast = post is pre  # (real_cast returns its argument when there is no cast)
        if mask is not None:
            if mask.size != pre.size:
                return self.count(r, pre, post, out_dtype, dst, None, post32)
            sel = mask.reshape(pre.shape)
            pre, post = pre[sel], np.asarray(post)[sel]
            post32, counts = None if post32 is None else post32[sel], None
        rounding = not (dst.name == "float32" and (out_dtype is None
                                                   or out_dtype.name == "float32"))
        fp8 = [t for t in (out_dtype, dst) if t is not None and t.name in FP8]
        limit = float(ml_dtypes.finfo(fp8[0].np_type).max) if fp8 else 0.0
        if self.native and rounding and not uncast and counts is None:
            counts = shadow_native.store(pre, post, limit if fp8 else np.inf)
        if counts is not None:  # C read post as stored: no float32 copy of it
            if mask is None and (r.ap is None or r.ap.indirect is None):
                self.real32[id(r)] = post  # what the real run holds there
            return self._counted(id(r), counts, fp8, limit)
        post32 = as_f32(post) if post32 is None else post32
        if mask is None and (r.ap is None or r.ap.indirect is None):
            self.real32[id(r)] = post32  # what the real run holds there (no 2nd conversion)
        if not rounding:
            if post32.size and np.isnan(post32.max()):  # nothing to round: only NaNs
                self._nans(post32)
            return
        n = post32.size
        lo, hi = (float(post32.min()), float(post32.max())) if n else (0.0, 0.0)
        finite = np.isfinite(lo) and np.isfinite(hi)  # (min and max propagate a NaN)
        if not finite:  # inf or NaN stored: count them
            self._nans(post32)
            self.overflow += int(np.count_nonzero(np.isinf(post32) & np.isfinite(pre)))
        key = id(r)
        again = key in self.seen  # a view stored twice: compare() cannot tell the stores
        self.seen.add(key)  # apart, so each is measured here
        if key in self.deferred:
            self.store_abs = max(self.store_abs, self._lost(*self.deferred.pop(key)))
        if uncast:  # the values stored are those computed: nothing lost, nothing new
            return None  # (NaNs aside, counted above)
        if self.loss_deferred and not again and pre.dtype == np.float32 and \
                self.real32.get(key) is post32:
            self.deferred[key] = (pre, post32)  # compare() measures it: the carried error
        else:
            self.store_abs = max(self.store_abs, self._lost(pre, post32))
        zeros_post = zeros(post32, self.pool)
        if zeros_post:  # a zero computed stays zero: the others underflowed
            self.underflow += int(zeros_post - zeros(pre, self.pool))
        if fp8 and n and (not finite or max(-lo, hi) >= limit):  # (else |pre| <= limit:
            big = np.abs(pre) > limit  # the cast is monotone and keeps the limit exactly)
            self.fp8_saturated += int(np.count_nonzero(big & np.isfinite(pre)))
        return None

    def _counted(self, key: int, counts: tuple, fp8: list, limit: float) -> None:
        """count()'s bookkeeping from shadow_native.store's numbers (the same readings: its
        loss is measured at the store, never deferred, since it costs nothing here)."""
        nan, overflow, zeros_post, zeros_pre, big, loss, saturated = counts
        finite = np.isfinite(big)  # (NaN when a NaN was stored)
        if not finite:
            self._nans_counted(nan)
            self.overflow += overflow
        self.seen.add(key)
        if key in self.deferred:
            self.store_abs = max(self.store_abs, self._lost(*self.deferred.pop(key)))
        self.store_abs = max(self.store_abs, loss)
        if zeros_post:
            self.underflow += zeros_post - zeros_pre
        if fp8 and (not finite or big >= limit):
            self.fp8_saturated += saturated

    def settle(self, keys) -> None:
        """Measure the deferred losses of these stores (id(Resolved)s) at the store."""
        for key in list(keys):
            self.store_abs = max(self.store_abs, self._lost(*self.deferred.pop(key)))

    def _lost(self, pre: np.ndarray, post32: np.ndarray) -> float:
        """max |post32 - pre| (equal values and NaN against NaN: 0; others NaN/inf: inf)."""
        post32 = as_f32(post32)
        lost = scratch(self.pool, post32.size, np.float32, 2).reshape(post32.shape)
        np.subtract(post32, pre, out=lost, casting="unsafe")
        np.abs(lost, out=lost)
        top = lost.max() if lost.size else 0.0
        if not np.isfinite(top):
            lost[(post32 == pre) | np.isnan(post32) & np.isnan(pre)] = 0
            lost[np.isnan(lost)] = np.inf
            top = lost.max()
        return float(top)

    def _nans(self, post32: np.ndarray) -> None:
        self._nans_counted(int(np.count_nonzero(np.isnan(post32))))

    def _nans_counted(self, nan: int) -> None:
        if nan and self.nan_read is None:  # the inputs, before this first NaN store
            self.nan_read = sum(int(np.count_nonzero(np.isnan(as_f32(a))))
                                for a in self.inputs if a.dtype.kind == "f" or a.dtype == BF16
                                or "float8" in a.dtype.name)
        self.nan_written += nan

    @property
    def nan_born(self) -> int:
        return max(0, self.nan_written - (self.nan_read or 0))


def write_selected(m, r, cond, on_true, on_false, out_dtype, mask, regular):
    """Machine.write_select through m.write (so the shadow records, and the Spy counts, the
    store): the selection into a fresh array, then one write."""
    out = np.empty(np.broadcast_shapes(cond.shape, on_true.shape), on_true.dtype)
    select_into(out, cond, on_true, on_false, regular)
    m.write(r, out.reshape(r.shape), out_dtype, mask)
    return out


class Spy:
    """The real machine as an instruction sees it, with its stores counted (overflow,
    underflow, NaN, fp8 saturation: the values before and after the output cast)."""

    def __init__(self, m: Machine, stats: WriteStats):
        object.__setattr__(self, "_m", m)
        object.__setattr__(self, "_stats", stats)

    def __getattr__(self, name):
        return getattr(self._m, name)

    def __setattr__(self, name, value):  # e.g. the PRNG registers live on the machine
        setattr(self._m, name, value)

    def read(self, r, rows=None, strict=False):
        x = self._m.read(r, rows, strict)
        self._stats.inputs.append(x)
        return x

    def read_f32(self, r, rows=None):
        return dt.to_f32(self.read(r, rows))

    def direct_view(self, r, shape):
        return None

    def write(self, r, values, out_dtype=None, mask=None) -> None:
        if self._stats.mirror is not None:  # the shadow's store of the same values
            self._stats.mirror.write(r, values, out_dtype, mask)
        v = np.asarray(values)
        if v.dtype.kind in "fiu" and r.dtype.is_float and r.dtype.packed == 1:
            if v.dtype.kind != "f":
                v = v.astype(np.float64)
            if self._stats.native and mask is None and rounds_on_bits(v, out_dtype, r.dtype):
                into = self._into(r, v)  # (cast and counts in one pass, straight into dst
                post, counts = shadow_native.store_bf16(v, out=into)  # where it can be)
                self._stats.count(r, v, post, out_dtype, r.dtype, None, counts=counts)
                if into is not None:
                    return self._m.mark_written(r, None)
            elif self._stats.native:
                post = real_cast(v, out_dtype, r.dtype)  # (C reads it as stored)
                self._stats.count(r, v, post, out_dtype, r.dtype, mask)
            else:
                post, post32 = stored(v, out_dtype, r.dtype)
                self._stats.count(r, v, post, out_dtype, r.dtype, mask, post32)
            self._m.write(r, post, None, mask)
        else:
            self._m.write(r, v, out_dtype, mask)

    def write_select(self, r, cond, on_true, on_false, out_dtype=None, mask=None, regular=None):
        return write_selected(self, r, cond, on_true, on_false, out_dtype, mask, regular)

    def _into(self, r, v: np.ndarray) -> np.ndarray | None:
        """r's bfloat16 storage as a contiguous array of v's shape that a store may fill
        directly (what Machine.write would write there), or None: a view that scatters
        (indirect), streams (zero-step), broadcasts or is strided goes through write()."""
        if r.ap is not None and (r.ap.indirect is not None or r.ap.overlapping) \
                or v.size != r.size or not v.flags.c_contiguous:
            return None
        into = self._m.direct_view(r, v.shape)
        return into if into is not None and into.flags.c_contiguous else None


def mirrorable(b, s) -> bool:
    """Whether the shadow s may take instruction b's values from the real run's stores
    (Spy with WriteStats.mirror) instead of executing b a second time, b's inputs and
    registers being the same values in both runs (Shadow.step's `exact`). Then the shadow
    would compute the very values the real run computes, before its output casts, if it
    sees the same arrays: every tensor b reads must be one the shadow holds in the real
    dtype (float32 storage, a tensor kept in its dtype, or the real array itself), since an
    instruction may compute on a narrower array as it is. And b's module must store only
    through write(): a view changed in place would reach the real tensor alone."""
    shadowed = s.shadowed
    for _, r in b.accesses().reads:
        if r.decl.name in shadowed and not (r.decl.dtype.name == "float32" and (
                r.ap is None or r.ap.dtype.name == "float32")):
            return False
    return stores_through_write(b.spec)


def stores_through_write(spec) -> bool:
    """Whether spec's execute touches storage only through m.read/m.write (its module's
    `direct_storage` fact, checked against the module's source by a test)."""
    return not spec.direct_storage


def same_state(m: Machine, s: Machine) -> None:
    """s's accumulator registers and PRNG states := m's (after a mirrored instruction:
    what the shadow's own execution would have left there, from the same values)."""
    for a, c in ((m.vector_acc, s.vector_acc), (m.scalar_acc, s.scalar_acc)):
        c.value, c.defined = a.value.copy(), a.defined.copy()
    if getattr(m, "prng", None):
        s.prng = copy.deepcopy(m.prng)
