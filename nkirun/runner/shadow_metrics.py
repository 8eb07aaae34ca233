"""The numbers of a shadow run (runner/shadow.py): errors between two versions of what one
instruction stored, and the events of its output casts.

Readings (docs/shadow.md):
- abs error = |value - shadow|. Equal values (the same infinity included) and NaN against
  NaN count as 0; a NaN or an infinity against anything else counts as infinite error.
- rel error = abs error / max(|shadow|, smallest normal of the output dtype) (1 for
  integers), so an exact zero does not divide by zero.
- ULP error = abs error / the spacing of the output dtype at |shadow| (at least its
  smallest subnormal step; 1 for integers): "how many representable steps apart".
- The peak is the element with the largest abs error (the first one on ties), as tensor
  coordinates of the tensor the instruction wrote.
- store error = the largest |stored - computed| of the real run's stores: what this
  instruction's output casts lost on the values it really computed (0 for a copy of values
  its destination's dtype already holds exactly).
- overflow: finite values the output cast turned into +-inf; underflow: nonzero values it
  turned into 0; fp8 saturation: finite values beyond the largest finite value of an fp8
  type they were cast to (nkirun's cast then gives inf; hardware may clamp: the value is
  lost either way); NaN born: NaNs stored beyond the NaNs the instruction read (exact when
  it read none, a lower bound otherwise). All counted in the real run.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

from nkirun.hw import dtypes as dt

FP8 = ("float8_e4m3", "float8_e5m2")


def real_cast(v: np.ndarray, out_dtype, dst) -> np.ndarray:
    """What Machine.write stores for `v`: cast to `dtype=` (when it differs), then to dst."""
    if out_dtype is not None and out_dtype.np_type != dst.np_type:
        v = dt.cast(v, out_dtype)
    return dt.cast(v, dst)


@dataclass
class _Format:
    nmant: int
    tiny: float  # smallest normal
    step: float  # smallest subnormal step


_FORMATS: dict[str, _Format] = {}


def fmt(d) -> _Format:
    f = _FORMATS.get(d.name)
    if f is None:
        if d.is_float and d.packed == 1:
            info = ml_dtypes.finfo(d.np_type)
            nmant = 10 if d.name == "tfloat32" else int(info.nmant)
            f = _Format(nmant, float(info.tiny), float(np.ldexp(1.0, int(info.minexp) - nmant)))
        else:
            f = _Format(0, 1.0, 1.0)
        f = _FORMATS[d.name] = f
    return f


@dataclass
class Err:
    abs: float = 0.0
    rel: float = 0.0
    ulp: float = 0.0
    at: int = -1  # flat index of the abs peak in the compared arrays (-1: no element)



def merged(old: Err, new: Err) -> Err:
    """Two stores' errors as one: the peak (abs and where) of the worse one (`new` itself
    when it is that one) and the largest rel and ULP of both."""
    if new.abs > old.abs or (old.at < 0 and new.at >= 0):
        new.rel, new.ulp = max(new.rel, old.rel), max(new.ulp, old.ulp)
        return new
    old.rel, old.ulp = max(new.rel, old.rel), max(new.ulp, old.ulp)
    return old


def errors(x: np.ndarray, ref: np.ndarray, d) -> Err:
    """abs/rel/ULP error of x against ref (same shape), measured in dtype d."""
    if x.size == 0:
        return Err()
    wide = np.float64 if not (d.is_float and d.packed == 1) else np.float32
    x = np.asarray(x).astype(wide, copy=False).reshape(-1)
    ref = np.asarray(ref).astype(wide, copy=False).reshape(-1)
    diff = np.subtract(x, ref)
    np.abs(diff, out=diff)
    top = diff.max()
    if not np.isfinite(top):
        same = (x == ref) | (np.isnan(x) & np.isnan(ref))
        diff[same] = 0
        diff[np.isnan(diff)] = np.inf
        top = diff.max()
    if top == 0:
        return Err(0.0, 0.0, 0.0, 0)
    at = int(np.argmax(diff))
    f = fmt(d)
    mag = np.abs(ref)
    np.maximum(mag, f.tiny, out=mag)
    rel = float(np.max(diff / mag))
    if f.nmant:  # the spacing at |ref|: its power of two (exponent bits) over 2^nmant
        m32 = mag.astype(np.float32, copy=False)
        pow2 = (m32.view(np.uint32) & np.uint32(0x7F800000)).view(np.float32)
        pow2 = pow2.astype(wide, copy=False) * np.ldexp(1.0, -f.nmant)
        np.maximum(pow2, f.step, out=pow2)
        ulp = float(np.max(diff / pow2))
    else:
        ulp = float(top)
    return Err(float(top), rel, ulp, at)


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

    def count(self, pre: np.ndarray, post: np.ndarray, out_dtype, dst, mask) -> None:
        if mask is not None:
            sel = np.broadcast_to(mask.reshape(mask.shape if mask.size == pre.size
                                               else (-1,)), pre.shape) \
                if mask.size == pre.size else None
            if sel is not None:
                pre, post = pre[sel], np.asarray(post)[sel]
        post32 = np.asarray(post).astype(np.float32, copy=False)
        total = post32.sum(dtype=np.float64)
        narrowing = dst.name != "float32" or (out_dtype is not None
                                              and out_dtype.name != "float32")
        if not np.isfinite(total):
            nan_post = np.isnan(post32)
            nan = int(np.count_nonzero(nan_post))
            if nan and self.nan_read is None:
                self.nan_read = sum(int(np.count_nonzero(np.isnan(a))) for a in self.inputs
                                    if a.dtype.kind == "f" or a.dtype == ml_dtypes.bfloat16
                                    or "float8" in a.dtype.name)
            self.nan_written += nan
            if narrowing:
                self.overflow += int(np.count_nonzero(np.isinf(post32) & np.isfinite(pre)))
        if narrowing:
            lost = np.abs(post32 - pre)
            top = lost.max() if lost.size else 0.0
            if not np.isfinite(top):
                lost[(post32 == pre) | np.isnan(post32) & np.isnan(pre)] = 0
                lost[np.isnan(lost)] = np.inf
                top = lost.max()
            self.store_abs = max(self.store_abs, float(top))
            zeros_post = post32.size - np.count_nonzero(post32)
            if zeros_post:
                self.underflow += int(zeros_post - (pre.size - np.count_nonzero(pre)))
            fp8 = [t for t in (out_dtype, dst) if t is not None and t.name in FP8]
            if fp8:
                top = float(ml_dtypes.finfo(fp8[0].np_type).max)
                big = np.abs(pre) > top
                self.fp8_saturated += int(np.count_nonzero(big & np.isfinite(pre)))

    @property
    def nan_born(self) -> int:
        return max(0, self.nan_written - (self.nan_read or 0))


@dataclass
class Row:
    """The shadow report of one instruction."""

    instruction: int
    op: str
    engine: str
    file: str
    line: int
    column: int
    carried: Err
    added: Err
    tensor: str | None = None  # where the carried error peaks
    index: tuple | None = None
    dtype: str | None = None
    value: float | None = None  # the real and the shadow value there
    shadow: float | None = None
    added_tensor: str | None = None
    added_index: tuple | None = None
    overflow: int = 0
    underflow: int = 0
    nan_born: int = 0
    fp8_saturated: int = 0
    store_abs: float = 0.0  # the real run: what its output casts lost (max abs)


def coords(r, flat: int, m=None) -> tuple[int, ...]:
    """Tensor coordinates of element `flat` of view r (in r.shape order); `m`: the machine
    whose index values place an indirect view's elements."""
    if r.ap is not None:
        from nkirun.source.access import static_offsets
        off = (m.indirect_rows(r)[0] if r.ap.indirect is not None and m is not None
               else static_offsets(r))
        at = int(np.asarray(off).reshape(-1)[flat]) // r.decl.dtype.itemsize
        return tuple(int(i) for i in np.unravel_index(at, r.decl.shape))
    index = tuple(r.np_index) + (slice(None),) * (len(r.decl.shape) - len(r.np_index))
    sel_shape = tuple(c for (_, c, _), ix in zip(r.box, index) if isinstance(ix, slice))
    inner = iter(int(i) for i in np.unravel_index(flat, sel_shape)) if sel_shape else iter(())
    return tuple(int(ix) if not isinstance(ix, slice) else s + next(inner) * t
                 for (s, _, t), ix in zip(r.box, index))


def compare(b, m, s, records, stats: WriteStats) -> Row:
    """The Row of instruction b: its stores on the real machine m against the shadow s."""
    loc = b.loc()
    row = Row(b.index, b.op, b.engine, loc.file, loc.line, loc.column, Err(), Err())
    for r, stored, probe, mask in records:
        if r.dtype.packed > 1:
            continue  # x4-packed MX data: not compared (its elements are not numbers)
        real, shadow = m.view(r), np.asarray(stored).reshape(r.shape)
        probe = np.asarray(probe)
        probe = probe.reshape(r.shape) if probe.size == shadow.size else \
            np.broadcast_to(probe, r.shape)
        sel = mask.reshape(-1) if mask is not None and mask.size == shadow.size else None

        def flat(a):
            a = np.asarray(a).reshape(-1)
            return a if sel is None else a[sel]

        def where(k: int) -> int:  # position in the view of the k-th compared element
            return k if sel is None else int(np.flatnonzero(sel)[k])
        c = errors(flat(real), flat(shadow), r.dtype)
        a = errors(flat(probe), flat(shadow), r.dtype)
        row.added = merged(row.added, a)
        if row.added is a and a.abs > 0:
            row.added_tensor, row.added_index = r.decl.name, coords(r, where(a.at), m)
        row.carried = merged(row.carried, c)
        if row.carried is c and c.abs > 0:
            k = where(c.at)
            row.tensor, row.index, row.dtype = r.decl.name, coords(r, k, m), r.dtype.name
            row.value = float(np.asarray(real).reshape(-1)[k])
            row.shadow = float(shadow.reshape(-1)[k])
    row.overflow, row.underflow = stats.overflow, stats.underflow
    row.nan_born, row.fp8_saturated = stats.nan_born, stats.fp8_saturated
    row.store_abs = stats.store_abs
    return row
