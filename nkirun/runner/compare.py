"""Golden diff: compare a run's outputs with expected `.npy` files (`nkirun run --expect`,
`nkirun.testing.assert_close`).

Modes:
  exact (default)  bit-for-bit equal; any NaN equals any NaN (payloads differ between
                   NumPy versions and are not part of the result). +0.0 and -0.0 differ.
  rtol/atol        |actual - expected| <= atol + rtol * |expected| (np.isclose); NaN only
                   matches NaN and an infinity only the same infinity.
  range_rtol       adds range_rtol * max|expected| (over the tensor's finite expected
                   values) to that bound: the range-relative tolerance kernel test suites
                   use, so values near zero are judged against the tensor's scale.
  ulp              the distance in units in the last place of the tensor's dtype is <= N
                   (+0.0 and -0.0 are 0 apart; NaN only matches NaN). Between values of
                   opposite sign it counts every float through zero, so it explodes for
                   tiny values of either sign: near zero an atol serves better.
Integer tensors are always compared exactly: a tolerance would hide an off-by-one.

A golden file in another dtype than the output (a float64 reference, say) is compared in
float64: exact means equal as numbers there, and a ULP distance is taken after rounding
the golden to the output's dtype. The report says so.

Outputs that depend on random numbers (rng, dropout, rand2, rand_get_state: nkirun's PRNG
model, hw/prng.py) are marked in every verdict: a match there only shows that nkirun agrees
with an earlier nkirun run, never that it reproduces the hardware's bits.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from nkirun.hw import dtypes as dt
from nkirun.hw.dtypes import DType
from nkirun.ir import TensorDecl


@dataclass(frozen=True)
class Tolerance:
    rtol: float = 0.0
    atol: float = 0.0
    ulp: int | None = None
    range_rtol: float = 0.0

    def __post_init__(self):
        for name in ("rtol", "atol", "range_rtol"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v) or v < 0:
                raise ValueError(f"{name} must be a number >= 0 (not NaN), got {v!r}")
        if self.ulp is not None and (isinstance(self.ulp, bool) or not isinstance(self.ulp, int)
                                     or self.ulp < 0):
            raise ValueError(f"ulp must be an integer >= 0, got {self.ulp!r}")
        if self.ulp is not None and (self.rtol or self.atol or self.range_rtol):
            raise ValueError("give either ulp or rtol/atol/range_rtol, not both")

    @property
    def exact(self) -> bool:
        return self.ulp is None and self.rtol == 0 and self.atol == 0 and self.range_rtol == 0

    def describe(self, dtype: DType) -> str:
        if dtype.is_int or self.exact:
            return "exact"
        if self.ulp is not None:
            return f"ulp <= {self.ulp}"
        parts = [f"rtol={self.rtol:g}", f"atol={self.atol:g}"]
        if self.range_rtol:
            parts.append(f"range_rtol={self.range_rtol:g} of max|expected|")
        return ", ".join(parts)


@dataclass
class TensorDiff:
    name: str
    dtype: str
    shape: tuple[int, ...]
    mode: str
    mismatches: int = 0
    first: tuple[int, ...] | None = None  # index of the first mismatching element
    actual: float | None = None  # the values there
    expected: float | None = None
    worst: tuple[int, ...] | None = None  # the mismatch with the largest error
    worst_actual: float | None = None
    worst_expected: float | None = None
    max_abs: float = 0.0  # over element pairs that are both finite
    max_rel: float = 0.0
    max_ulp: int = 0
    on_chip: bool = False
    golden_dtype: str | None = None  # set when the golden file has another dtype
    ulp_across_zero: bool = False  # the max ULP error is between values of opposite sign
    digits: int = 9  # significant digits that tell the dtype's values apart
    random_from: str | None = None  # "dropout (line 12)": derived from nkirun's PRNG model

    @property
    def ok(self) -> bool:
        return self.mismatches == 0

    def where(self, index: tuple[int, ...] | None = None) -> str:
        """`(p=0, f=137)` on chip (f0, f1, ... for several free dims), `[3, 137]` in HBM."""
        index = self.first if index is None else index
        if index is None:
            return ""
        if self.on_chip:
            free = index[1:]
            names = ["f"] if len(free) == 1 else [f"f{i}" for i in range(len(free))]
            return "(" + ", ".join([f"p={index[0]}"] + [f"{n}={i}" for n, i in
                                                        zip(names, free)]) + ")"
        return "[" + ", ".join(map(str, index)) + "]"

    def as_dict(self) -> dict:
        return {"tensor": self.name, "dtype": self.dtype, "shape": list(self.shape),
                "mode": self.mode, "ok": self.ok, "mismatches": self.mismatches,
                "first": list(self.first) if self.first is not None else None,
                "actual": self.actual, "expected": self.expected,
                "worst": list(self.worst) if self.worst is not None else None,
                "worst_actual": self.worst_actual, "worst_expected": self.worst_expected,
                "max_abs": self.max_abs, "max_rel": self.max_rel, "max_ulp": self.max_ulp,
                "golden_dtype": self.golden_dtype, "compared_in": "float64"
                if self.golden_dtype else self.dtype,
                "random_model": self.random_from}


def _ordered_bits(a: np.ndarray) -> np.ndarray:
    """Map float bit patterns to int64 so that adjacent floats differ by 1 and both
    zeros map to 0 (sign-magnitude -> two's complement)."""
    bits = a.view(f"u{a.dtype.itemsize}").astype(np.int64)
    sign = np.int64(1) << (8 * a.dtype.itemsize - 1)
    mag = bits & (sign - 1)
    return np.where(bits & sign, -mag, mag)


def ulp_distance(actual: np.ndarray, expected: np.ndarray, dtype: DType) -> np.ndarray:
    """Element-wise ULP distance in `dtype` (int64); meaningless where either is NaN."""
    d = np.abs(_ordered_bits(actual) - _ordered_bits(expected))
    if dtype.name == "tfloat32":
        d = d >> 13  # stored as float32; tf32 keeps 10 of float32's 23 mantissa bits
    return d


def dtype_of(a: np.ndarray) -> DType:
    """The NKI dtype of an array's storage; other float types (float64) get a DType of
    their own so that the comparison (and its ULP distance) works in them."""
    d = dt.from_numpy(a.dtype)
    if d is not None:
        return d
    if a.dtype.kind not in "biuf":
        raise TypeError(f"cannot compare arrays of dtype {a.dtype}")
    return DType(str(a.dtype), a.dtype, a.dtype.kind == "f", a.dtype.itemsize, 0)


def _digits(dtype: DType) -> int:
    """Significant decimal digits that tell two values of the dtype apart."""
    if dtype.is_int:
        return 20
    import ml_dtypes  # its finfo also knows bfloat16 and the fp8 types
    return max(3, int(ml_dtypes.finfo(dtype.np_type).precision) + 2)


def _mismatch(a64, e64, actual, expected, dtype, tol, cross):
    """(bad mask, ULP distances in dtype) of two float arrays."""
    e_in_dtype = dt.cast(e64, dtype) if cross and dtype.name in dt.DTYPES else (
        expected.astype(dtype.np_type) if cross else expected)
    ulps = ulp_distance(np.ascontiguousarray(actual), np.ascontiguousarray(e_in_dtype), dtype)
    if tol.exact:
        if cross:
            bad = a64 != e64
        else:
            bits = f"u{actual.dtype.itemsize}"
            bad = actual.view(bits) != expected.view(bits)
    elif tol.ulp is not None:
        bad = ulps > tol.ulp
    else:
        finite_e = np.isfinite(e64)
        scale = float(np.abs(e64[finite_e]).max()) if tol.range_rtol and finite_e.any() else 0.0
        limit = tol.atol + tol.rtol * np.abs(e64) + tol.range_rtol * scale
        both = np.isfinite(a64) & finite_e
        close = (a64 == e64) | (both & (np.abs(a64 - e64) <= limit))
        bad = ~close  # an infinity only matches the same infinity, as np.isclose
    a_nan, e_nan = np.isnan(a64), np.isnan(e64)
    return (bad & ~(a_nan & e_nan)) | (a_nan != e_nan), ulps


def compare(name: str, actual: np.ndarray, expected: np.ndarray, dtype: DType | None = None,
            tol: Tolerance = Tolerance(), on_chip: bool = False) -> TensorDiff:
    """Compare two arrays of the same shape (expected may have another dtype)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    dtype = dtype or dtype_of(actual)
    cross = expected.dtype != actual.dtype
    diff = TensorDiff(name, dtype.name, tuple(actual.shape), tol.describe(dtype),
                      on_chip=on_chip, golden_dtype=str(dtype_of(expected).name) if cross
                      else None, digits=_digits(dtype))
    with np.errstate(all="ignore"):  # inf - inf, an infinite atol, ...: never a warning
        a64, e64 = actual.astype(np.float64), expected.astype(np.float64)
        finite = np.isfinite(a64) & np.isfinite(e64)
        ulps = None
        if dtype.is_int:
            bad = a64 != e64 if cross else actual != expected
        else:
            bad, ulps = _mismatch(a64, e64, actual, expected, dtype, tol, cross)
        err = np.where(finite, np.abs(a64 - e64), 0.0)
        _stats(diff, a64, e64, err, ulps, finite)
        diff.mismatches = int(np.count_nonzero(bad))
        if diff.mismatches:
            _locate(diff, bad, a64, e64, err if ulps is None or tol.ulp is None else ulps,
                    finite)
    return diff


def _stats(diff: TensorDiff, a64, e64, err, ulps, finite) -> None:
    if not finite.any():
        return
    diff.max_abs = float(err.max())
    ref = np.abs(e64)
    rel = np.where(ref > 0, err / np.where(ref > 0, ref, 1), np.where(err > 0, np.inf, 0))
    diff.max_rel = float(rel[finite].max())
    if ulps is not None:
        u = np.where(finite, ulps, 0)
        at = np.unravel_index(int(np.argmax(u)), u.shape)
        diff.max_ulp = int(u[at])
        diff.ulp_across_zero = bool(diff.max_ulp > 1 and np.signbit(a64[at]) != np.signbit(
            e64[at]) and (a64[at] != 0 or e64[at] != 0))


def _locate(diff: TensorDiff, bad, a64, e64, size, finite) -> None:
    """The first mismatch, and the worst (largest error among finite pairs)."""
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    diff.first, diff.actual, diff.expected = first, float(a64[first]), float(e64[first])
    scored = np.where(bad & finite, size, -1)
    at = tuple(int(i) for i in np.unravel_index(int(np.argmax(scored)), scored.shape))
    if scored[at] < 0:
        at = first  # only NaN/inf mismatches
    diff.worst, diff.worst_actual, diff.worst_expected = at, float(a64[at]), float(e64[at])


def load_expected(outputs: dict[str, TensorDecl], expect_dir: str) -> dict[str, np.ndarray]:
    """Read `expect_dir/<name>.npy` for every output (`outputs`: name -> what it holds:
    its shape and dtype).

    They are read like data files (runner.files.load_npy): no pickles, bfloat16 and fp8 stored
    as raw |V2/|V1 are viewed as the declared dtype, and a missing file or a wrong shape
    is an error (E070/E072/E074) naming the file. A file in another numeric dtype is
    accepted as it is (compared in float64).
    """
    from nkirun.runner.files import load_npy
    return {name: load_npy(os.path.join(expect_dir, f"{name}.npy"), decl, "expected file",
                           decl.loc, any_dtype=True) for name, decl in outputs.items()}


def random_sources(bound) -> dict[str, str]:
    """tensor -> the PRNG-model instruction its contents may derive from ("dropout (line
    12)"), following the dataflow in program order: an instruction marked `random` taints
    what it writes, and one that reads a tainted tensor taints what it writes. Per tensor,
    not per element, and never cleared: a conservative mark."""
    tainted: dict[str, str] = {}
    for b in bound:
        reads, writes = _accesses(b)
        src = f"{b.op} (line {b.loc().line})" if b.spec.random else next(
            (tainted[r.decl.name] for _, r in reads if r.decl.name in tainted), None)
        if src is not None:
            for _, r in writes:
                tainted.setdefault(r.decl.name, src)
    return tainted


def _accesses(b):
    """((keyword, Resolved) read..., (keyword, Resolved) written...) of a bound instruction."""
    if hasattr(b, "accesses"):  # Bound.accesses (isa/bound.py)
        acc = b.accesses()
        return acc.reads, acc.writes
    from nkirun.checker.passes import _reads_writes
    return _reads_writes(b)


def compare_outputs(outputs: dict[str, TensorDecl], result: dict[str, np.ndarray],
                    expected: dict[str, np.ndarray], tol: Tolerance = Tolerance(),
                    bound=None, tensors: dict[str, str] | None = None) -> list[TensorDiff]:
    """One TensorDiff per output (`outputs`: name -> its declaration), in order; with the
    bound instructions, those derived from the PRNG model say so (random_from; `tensors`:
    output name -> the tensor holding it, where they differ)."""
    random = random_sources(bound) if bound is not None else {}
    diffs = []
    for name, arr in result.items():
        decl = outputs[name]
        d = compare(name, arr, expected[name], decl.dtype, tol, decl.on_chip)
        d.random_from = random.get((tensors or {}).get(name, name))
        diffs.append(d)
    return diffs


def compare_headline(diffs: list[TensorDiff]) -> str:
    """`all 3 outputs match`, `the output matches`, `1 of 2 outputs differs`."""
    bad = sum(not d.ok for d in diffs)
    n = len(diffs)
    if not bad:
        head = "the output matches" if n == 1 else f"all {n} outputs match"
    elif n == 1:
        head = "the output differs"
    else:
        head = f"{bad} of {n} outputs {'differs' if bad == 1 else 'differ'}"
    random = sum(d.random_from is not None for d in diffs)
    if random:
        head += (f" [MODEL PRNG: {'it depends' if n == 1 else f'{random} of them depend'} on "
                 "nkirun's random-number model, not on hardware bits]")
    return head


# ---- text ---------------------------------------------------------------------------------
def _pair(a: float | None, b: float | None, diff: TensorDiff) -> tuple[str, str]:
    """Two values printed with the same number of significant digits: the fewest that
    still give back each value in the tensor's dtype (`1.1501657` and `1.6501658`)."""
    if diff.dtype in dt.DTYPES and dt.DTYPES[diff.dtype].is_int:
        return _shown(a, "{:.0f}"), _shown(b, "{:.0f}")
    np_type = dt.DTYPES[diff.dtype].np_type if diff.dtype in dt.DTYPES else np.dtype(diff.dtype)
    finite = [x for x in (a, b) if x is not None and math.isfinite(x)]
    digits = 1
    for x in finite:
        want = np.asarray(x).astype(np_type)
        while digits < diff.digits and np.asarray(float(f"{x:.{digits}g}")).astype(
                np_type) != want:
            digits += 1
    return _shown(a, f"{{:.{digits}g}}"), _shown(b, f"{{:.{digits}g}}")


def _shown(x: float | None, fmt: str) -> str:
    return "-" if x is None else fmt.format(x) if math.isfinite(x) else str(x)


def format_diffs(diffs: list[TensorDiff], color: bool = False) -> str:
    """Plain text (ANSI colour with `color`): one line per tensor, details for mismatches."""
    paint = _painter(color)
    lines = []
    w = max((len(d.name) for d in diffs), default=0)
    for d in diffs:
        total = int(np.prod(d.shape))
        pad = f"  {'':<{w}}  "
        via = (f", compared in float64: the expected file is {d.golden_dtype}"
               if d.golden_dtype else "")
        model = "" if d.random_from is None else ", MODEL PRNG"
        if d.ok:
            lines.append(f"  {d.name:<{w}}  {paint('match', 'green')} ({d.mode}{via}{model}, "
                         f"{total:,} elements)")
        if d.random_from is not None:
            lines.append(f"{pad}not a hardware check: depends on {d.random_from}, "
                         "whose values come from nkirun's PRNG model, not the device's bits")
        if d.ok:
            continue
        lines.append(f"  {d.name:<{w}}  {paint('MISMATCH', 'red')} ({d.mode}{via}{model}) in "
                     f"{d.mismatches:,} of {total:,} elements")
        got, want = _pair(d.actual, d.expected, d)
        lines.append(f"{pad}first at {d.where()}: got {got}, expected {want}")
        if d.worst is not None and d.worst != d.first:
            got, want = _pair(d.worst_actual, d.worst_expected, d)
            lines.append(f"{pad}worst at {d.where(d.worst)}: got {got}, expected {want}")
        if d.max_abs == 0 and d.max_rel == 0:
            # every finite pair is equal: what differs is NaN/inf or the sign of a zero
            lines.append(f"{pad}all finite values are equal; the difference is in NaN, inf "
                         "or the sign of zero")
            continue
        is_int = d.dtype in dt.DTYPES and dt.DTYPES[d.dtype].is_int
        lines.append(f"{pad}max abs error {d.max_abs:.6g}, max rel error {d.max_rel:.6g}"
                     + ("" if is_int else f", max ULP error {d.max_ulp:,}")
                     + " (over finite values)")
        if d.ulp_across_zero:
            lines.append(f"{pad}(that ULP error is between values of opposite sign: it counts "
                         "every float between them, through zero; near zero an atol or "
                         "range_rtol judges better)")
    return "\n".join(lines)


def verdict_line(diffs: list[TensorDiff], against: str, color: bool = False) -> str:
    """The closing line: `PASS: all 2 outputs match golden/` or `FAIL: ...`."""
    paint = _painter(color)
    if all(d.ok for d in diffs):
        return f"{paint('PASS', 'green')}: {compare_headline(diffs)} {against}"
    return f"{paint('FAIL', 'red')}: {compare_headline(diffs)} from {against}"


def _painter(color: bool):
    if not color:
        return lambda text, _: text
    import click  # only for colour on a terminal
    return lambda text, fg: click.style(text, fg=fg, bold=True)
