"""The numbers of a shadow run (runner/shadow.py): errors between two versions of what one
instruction stored, and the events of its output casts.

Readings (docs/shadow.md):
- abs error = |value - shadow|. Equal values (the same infinity included) and NaN against
  NaN count as 0; a NaN or an infinity against anything else counts as infinite error.
- rel error = abs error / max(|shadow|, smallest normal of the output dtype) (1 for
  integers), so an exact zero does not divide by zero.
- ULP error = abs error / the spacing of the output dtype at |shadow| (at least its
  smallest subnormal step, which is also what a NaN shadow gets: an error against it is
  infinite, not NaN; 1 for integers): "how many representable steps apart".
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

from dataclasses import dataclass

import ml_dtypes
import numpy as np

from nkirun.hw.dtypes import DTYPES
from nkirun.runner import shadow_native
from nkirun.runner.shadow_bits import BF16, as_f32, bf16_rounding_ulps, rounded_f32

FP8 = ("float8_e4m3", "float8_e5m2")


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
        _FORMATS[d.name] = f
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


def scratch(pool: dict, n: int, dtype, k: int = 0) -> np.ndarray:
    """Reusable work array k of n elements from `pool` (one per shadow run: fresh large
    arrays cost page faults that dominate these few cheap passes; results are scalars)."""
    key = (np.dtype(dtype).str, k)
    a = pool.get(key)
    if a is None or a.size < n:
        a = pool[key] = np.empty(max(n, 1), dtype)
    return a[:n]


def errors(xs: list, ref: np.ndarray, d, pool: dict | None = None,
           rounding: int | None = None, native: bool = False) -> list[Err]:
    """abs/rel/ULP error of each x in xs against ref (same size), measured in dtype d (the
    rel and ULP denominators, which depend on ref alone, computed once for all).
    `rounding`: the index of an x that is ref (float32) rounded to bfloat16 by its store
    (shadow_bits.rounds_on_bits): its ULP error is read from ref's bits, no division. An
    x may be shadow_native.ROUND_BF16 (that rounding, not computed yet). `native`: one C
    pass (shadow_native.errors) when it reads these arrays; the same numbers."""
    n = ref.size
    if n == 0:
        return [Err() for _ in xs]
    floating = d.is_float and d.packed == 1
    if native and floating:
        f = fmt(d)
        got = shadow_native.errors(xs, ref, f.nmant, f.tiny)
        if got is not None:
            return [Err(a, rel, ulp, at) for a, at, rel, ulp in got]
    xs = [_probe_of(ref) if isinstance(x, str) else x for x in xs]
    wide = np.dtype(np.float32 if floating else np.float64)
    ref = np.asarray(ref).reshape(-1)
    if ref.dtype != wide:
        ref = ref.astype(wide)
    f, scales, out, pool = fmt(d), None, [], {} if pool is None else pool
    diff, work = scratch(pool, n, wide, 0), scratch(pool, n, wide, 1)
    for k, x in enumerate(xs):
        top, at, clean = _abs_errors(np.asarray(x).reshape(-1), ref, diff, wide)
        if top == 0:
            out.append(Err(0.0, 0.0, 0.0, 0))
            continue
        if k == rounding and clean:  # (all finite: ref neither NaN nor rounded to inf)
            ulp = bf16_rounding_ulps(ref, scratch(pool, n, np.int32, 5))
        elif (scales := scales or _scales(ref, f, wide, n, pool))[1] is not None:
            np.divide(diff, scales[1], out=work)
            ulp = float(work.max())
        else:
            ulp = float(top)
        scales = scales or _scales(ref, f, wide, n, pool)
        np.divide(diff, scales[0], out=diff)  # (in place: diff's last use, one array fewer)
        out.append(Err(float(top), float(diff.max()), ulp, at))
    return out


def _probe_of(ref: np.ndarray) -> np.ndarray:
    """shadow_native.ROUND_BF16 spelled out: float32 ref rounded to bfloat16 (as float32)."""
    return rounded_f32(np.asarray(ref, np.float32), None, DTYPES["bfloat16"])


def plain_errors(xs: list, ref: np.ndarray, d) -> list[Err]:
    """The definitions `errors` computes, one array expression each with fresh arrays
    (kept to test the shared-scratch path against: tests/runner/test_shadow_metrics.py)."""
    ref = np.asarray(ref).reshape(-1)
    if ref.size == 0:
        return [Err() for _ in xs]
    wide = np.dtype(np.float32 if d.is_float and d.packed == 1 else np.float64)
    ref, f, out = ref.astype(wide), fmt(d), []
    for x in xs:
        top, at, _ = _abs_errors(np.asarray(x).reshape(-1), ref, diff := np.empty_like(ref),
                                 wide)
        den = at_least(np.abs(ref), wide.type(f.tiny))
        rel = diff / den
        # the spacing at |ref| (a NaN shadow's: the subnormal step), at least that step
        spacing = np.fmax((den.astype(np.float32).view(np.uint32) & np.uint32(
            0x7F800000)).view(np.float32) * np.float32(np.ldexp(1.0, -f.nmant)), f.step) \
            if f.nmant else None
        ulp = (diff / spacing).max() if f.nmant else top
        out.append(Err(float(top), float(rel.max()), float(ulp), at) if top else Err(at=0))
    return out


def at_least(a: np.ndarray, tiny) -> np.ndarray:
    """max(a, tiny) element by element, any NaN of a (quiet or signaling) giving tiny: what
    np.fmax means, but NumPy's vectorised fmax returns a signaling NaN as it is on some
    CPUs, so the NaN case is spelled out."""
    return np.where(np.isnan(a) | (a < tiny), tiny, a).astype(a.dtype, copy=False)


def _abs_errors(x, ref, diff, wide) -> tuple[float, int, bool]:
    """diff = |x - ref| (equal values and NaN against NaN: 0; other NaN/inf: inf); its
    maximum, where, and whether every difference was finite (no NaN or inf in x or ref)."""
    if x.dtype == BF16:
        x = as_f32(x)
    with np.errstate(all="ignore"):  # inf - inf is NaN here, never a warning
        np.subtract(x, ref, out=diff, casting="unsafe")
    np.abs(diff, out=diff)
    at = int(np.argmax(diff))  # (the first NaN, if any)
    top = diff[at]
    if not np.isfinite(top):
        xw = x.astype(wide, copy=False)
        same = (xw == ref) | (np.isnan(xw) & np.isnan(ref))
        diff[same] = 0
        diff[np.isnan(diff)] = np.inf
        at = int(np.argmax(diff))
        top = diff[at]
        return top, at, False
    return top, at, True


def _scales(ref, f: _Format, wide, n: int, pool: dict):
    """The rel denominator max(|ref|, tiny) and the ULP one (the dtype's spacing at |ref|:
    the power of two of its exponent bits over 2^nmant, at least the subnormal step). The
    spacing is read from the rel denominator's bits: below tiny that is tiny, whose
    exponent over 2^nmant is the subnormal step, so it needs no clamp of its own."""
    rel = scratch(pool, n, wide, 2)
    np.abs(ref, out=rel)
    if not rel.min() >= f.tiny:  # (a reduction costs a fraction of a written pass)
        np.fmax(rel, wide.type(f.tiny), out=rel)  # fmax: a NaN shadow element scales by tiny
        if np.isnan(rel.max()):  # (NumPy's SIMD fmax keeps a signaling NaN, sometimes)
            rel[np.isnan(rel)] = wide.type(f.tiny)
    if not f.nmant:
        return rel, None
    ulp = scratch(pool, n, np.float32, 3)
    np.bitwise_and(rel.view(np.uint32), np.uint32(0x7F800000), out=ulp.view(np.uint32))
    np.multiply(ulp, np.float32(np.ldexp(1.0, -f.nmant)), out=ulp)
    return rel, ulp


def zeros(a: np.ndarray, pool: dict) -> int:
    """How many elements of a are zero (either sign): a.size - count_nonzero(a), but
    counted on a boolean mask (NumPy's count_nonzero on floats is ~5x slower)."""
    a = np.asarray(a)
    if a.dtype.kind != "f" or not a.size:
        return a.size - int(np.count_nonzero(a))
    return int(np.count_nonzero(np.equal(a, 0, out=scratch(pool, a.size, bool, 4).reshape(
        a.shape))))


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
        s = r.ap
        if s.indirect is not None and m is not None:
            off = int(np.asarray(m.indirect_rows(r)[0]).reshape(-1)[flat])
        else:  # the one element's byte offset (static_offsets(r) gives every element's)
            off = s.byte_offset + sum(i * t for i, t in zip(_unravel(flat, s.shape),
                                                            s.byte_strides))
        return _unravel(off // r.decl.dtype.itemsize, r.decl.shape)
    box, index = r.box, r.np_index  # (dims past the index: whole slices)
    sliced = [k >= len(index) or isinstance(index[k], slice) for k in range(len(box))]
    inner = _unravel(flat, [c for (_, c, _), cut in zip(box, sliced) if cut])
    out, j = [], 0
    for (start, _, step), cut, k in zip(box, sliced, range(len(box))):
        if cut:
            out.append(start + inner[j] * step)
            j += 1
        else:
            out.append(int(index[k]))
    return tuple(out)


def plain_coords(r, flat: int, m=None) -> tuple[int, ...]:
    """coords by its definition: every element's offset (static_offsets) or the view's
    NumPy index, then NumPy's unravel (tests/runner/test_shadow_native.py compares the
    two)."""
    if r.ap is not None:
        from nkirun.views.access import static_offsets
        off = (m.indirect_rows(r)[0] if r.ap.indirect is not None and m is not None
               else static_offsets(r))
        at = int(np.asarray(off).reshape(-1)[flat]) // r.decl.dtype.itemsize
        return tuple(int(i) for i in np.unravel_index(at, r.decl.shape))
    index = tuple(r.np_index) + (slice(None),) * (len(r.decl.shape) - len(r.np_index))
    sel_shape = tuple(c for (_, c, _), ix in zip(r.box, index) if isinstance(ix, slice))
    inner = iter(int(i) for i in np.unravel_index(flat, sel_shape)) if sel_shape else iter(())
    return tuple(int(ix) if not isinstance(ix, slice) else s + next(inner) * t
                 for (s, _, t), ix in zip(r.box, index))


def _unravel(k: int, shape) -> tuple[int, ...]:
    """np.unravel_index(k, shape) as Python ints (k within the shape)."""
    out = []
    for n in reversed(tuple(shape)):
        k, i = divmod(int(k), int(n))
        out.append(i)
    return tuple(reversed(out))


def _picked(a, sel, shape=None) -> np.ndarray:
    """a flattened (broadcast to `shape` first when it is smaller), the selected elements
    (shadow_native.ROUND_BF16 stands for itself: it is computed from the shadow's)."""
    if isinstance(a, str):
        return a
    a = np.asarray(a)
    if shape is not None and a.size != int(np.prod(shape)):
        a = np.broadcast_to(a, shape)
    a = a.reshape(-1)
    return a if sel is None else a[sel]


def _position(k: int, sel) -> int:
    """The view position of the k-th compared element (of those `sel` selects)."""
    return k if sel is None else int(np.flatnonzero(sel)[k])


def _place(row: Row, attr: str, r, k: int, m, later: dict | None) -> None:
    """row.<attr> = coords(r, k, m), now, or when `later` is resolved (resolve_places):
    the coordinates of a view without index values depend on nothing that changes, and
    most peaks are replaced or never looked at before the report is read."""
    if later is None or r.ap is not None and r.ap.indirect is not None:
        setattr(row, attr, coords(r, k, m))
        if later is not None:
            later.pop((id(row), attr), None)
    else:
        later[(id(row), attr)] = (row, attr, r, k)


def resolve_places(later: dict) -> None:
    """Fill in the coordinates _place left for later."""
    for row, attr, r, k in later.values():
        setattr(row, attr, coords(r, k))
    later.clear()


def compare(b, m, s, records, stats, exact_inputs: bool = False,
            dirty: set | None = None, later: dict | None = None) -> Row:
    """The Row of instruction b: its stores on the real machine m against the shadow s
    (`stats`: the shadow_stores.WriteStats of its real stores).

    `exact_inputs`: every tensor b read holds the same values in both runs. Then a store
    that rounds nothing (float32 in, float32 out) is exact, and a rounding store's real
    value is its probe (carried = added): the shortcuts that keep the shadow cheap.
    `dirty` (tensor names whose shadow differs) is updated from what b stored; `later`:
    where the peaks' coordinates may wait (_place).
    """
    loc = b.loc()
    row = Row(b.index, b.op, b.engine, loc.file, loc.line, loc.column, Err(), Err())
    dirty = set() if dirty is None else dirty
    if stats.deferred:  # (zero-step dst)
        stats.settle(stats.deferred.keys() - {id(rec[0]) for rec in records})
    for r, stored, probe, mask, rounds, rounding in records:
        if r.dtype.packed > 1:
            dirty.add(r.decl.name)
            continue  # x4-packed MX data: not compared (its elements are not numbers)
        lossless = stats.store_abs == 0 and id(r) not in stats.deferred
        if exact_inputs and (not rounds or lossless and r.decl.name in s.shadowed):
            # same inputs, and nothing rounded (or the real stores lost nothing): exact
            row.carried, row.added = merged(row.carried, Err(at=0)), merged(row.added, Err(at=0))
            if mask is None and r.is_whole:
                dirty.discard(r.decl.name)
            continue
        key, name, shape = id(r), r.decl.name, r.shape
        real = stats.real32.get(key)
        real = m.view(r) if real is None or real.size != stored.size else real
        sel = (mask.reshape(-1) if mask is not None and mask.size == stored.size
               else None)
        added_too = rounds and not exact_inputs
        xs = [_picked(real, sel)]
        if added_too:
            xs.append(_picked(probe, sel, shape))
        both = errors(xs, _picked(stored, sel), r.dtype, stats.pool,
                      1 if added_too and rounding else None, stats.native)
        c = both[0]
        if stats.deferred.pop(key, None) is not None:  # (exact inputs: its loss is c)
            stats.store_abs = max(stats.store_abs, c.abs)
        a = both[1] if added_too else Err(c.abs, c.rel, c.ulp, c.at) if exact_inputs \
            else Err(at=0)
        if c.abs > 0:
            dirty.add(name)
        elif mask is None and r.is_whole:
            dirty.discard(name)
        row.added = merged(row.added, a)
        if row.added is a and a.abs > 0:
            row.added_tensor = name
            _place(row, "added_index", r, _position(a.at, sel), m, later)
        row.carried = merged(row.carried, c)
        if row.carried is c and c.abs > 0:
            k = _position(c.at, sel)
            row.tensor, row.dtype = name, r.dtype.name
            _place(row, "index", r, k, m, later)
            row.value = float(np.asarray(real).reshape(-1)[k])
            row.shadow = float(np.asarray(stored).reshape(-1)[k])
    return _with_events(row, stats)


def _with_events(row: Row, stats) -> Row:
    """row with the events and the loss of its real stores (what is still deferred, e.g.
    a record not compared, packed MX data, measured now)."""
    if stats.deferred:
        stats.settle(stats.deferred.keys())
    row.overflow, row.underflow = stats.overflow, stats.underflow
    row.nan_born, row.fp8_saturated = stats.nan_born, stats.fp8_saturated
    row.store_abs = stats.store_abs
    return row
