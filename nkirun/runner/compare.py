"""Golden diff: compare a run's outputs with expected `.npy` files (`nkirun run --expect`).

Modes:
  exact (default)  bit-for-bit equal; any NaN equals any NaN (payloads differ between
                   NumPy versions and are not part of the result). +0.0 and -0.0 differ.
  rtol/atol        |actual - expected| <= atol + rtol * |expected| (np.isclose); NaN only
                   matches NaN and an infinity only the same infinity.
  ulp              the distance in units in the last place of the tensor's dtype is <= N
                   (+0.0 and -0.0 are 0 apart; NaN only matches NaN).
Integer tensors are always compared exactly: a tolerance would hide an off-by-one.

Outputs that depend on random numbers (rng, dropout, rand2, rand_get_state: nkirun's PRNG
model, hw/prng.py) are marked in every verdict: a match there only shows that nkirun agrees
with an earlier nkirun run, never that it reproduces the hardware's bits.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from nkirun.hw.dtypes import DTYPES, DType
from nkirun.ir import Program


@dataclass(frozen=True)
class Tolerance:
    rtol: float = 0.0
    atol: float = 0.0
    ulp: int | None = None

    @property
    def exact(self) -> bool:
        return self.ulp is None and self.rtol == 0 and self.atol == 0

    def describe(self, dtype: DType) -> str:
        if dtype.is_int or self.exact:
            return "exact"
        if self.ulp is not None:
            return f"ulp <= {self.ulp}"
        return f"rtol={self.rtol:g}, atol={self.atol:g}"


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
    max_abs: float = 0.0  # over element pairs that are both finite
    max_rel: float = 0.0
    max_ulp: int = 0
    on_chip: bool = False
    random_from: str | None = None  # "dropout (line 12)": derived from nkirun's PRNG model

    @property
    def ok(self) -> bool:
        return self.mismatches == 0

    def where(self) -> str:
        if self.first is None:
            return ""
        if self.on_chip or len(self.first) > 1:
            return f"partition {self.first[0]}, free index {tuple(self.first[1:])}"
        return f"index {self.first}"

    def as_dict(self) -> dict:
        return {"tensor": self.name, "dtype": self.dtype, "shape": list(self.shape),
                "mode": self.mode, "ok": self.ok, "mismatches": self.mismatches,
                "first": list(self.first) if self.first is not None else None,
                "actual": self.actual, "expected": self.expected, "max_abs": self.max_abs,
                "max_rel": self.max_rel, "max_ulp": self.max_ulp,
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


def compare(name: str, actual: np.ndarray, expected: np.ndarray, dtype: DType,
            tol: Tolerance = Tolerance(), on_chip: bool = False) -> TensorDiff:
    """Compare two arrays of the same shape and storage dtype."""
    diff = TensorDiff(name, dtype.name, tuple(actual.shape), tol.describe(dtype),
                      on_chip=on_chip)
    if dtype.is_int:
        bad = actual != expected
        a64, e64 = actual.astype(np.float64), expected.astype(np.float64)
        finite = np.ones(actual.shape, bool)
    else:
        a64, e64 = actual.astype(np.float64), expected.astype(np.float64)
        a_nan, e_nan = np.isnan(a64), np.isnan(e64)
        finite = np.isfinite(a64) & np.isfinite(e64)
        ulps = ulp_distance(np.ascontiguousarray(actual), np.ascontiguousarray(expected), dtype)
        if tol.exact:
            bits = f"u{actual.dtype.itemsize}"
            bad = actual.view(bits) != expected.view(bits)
        elif tol.ulp is not None:
            bad = ulps > tol.ulp
        else:
            # np.isclose: an infinity only matches the same infinity
            bad = ~np.isclose(a64, e64, rtol=tol.rtol, atol=tol.atol, equal_nan=True)
        bad = (bad & ~(a_nan & e_nan)) | (a_nan != e_nan)
        if finite.any():
            diff.max_ulp = int(ulps[finite].max())
    if finite.any():
        err = np.abs(a64[finite] - e64[finite])
        diff.max_abs = float(err.max())
        ref = np.abs(e64[finite])
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.where(ref > 0, err / np.where(ref > 0, ref, 1), np.where(err > 0, np.inf, 0))
        diff.max_rel = float(rel.max())
    diff.mismatches = int(np.count_nonzero(bad))
    if diff.mismatches:
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        diff.first = first
        diff.actual, diff.expected = float(a64[first]), float(e64[first])
    return diff


def load_expected(program: Program, expect_dir: str) -> dict[str, np.ndarray]:
    """Read `expect_dir/<name>.npy` for every output tensor.

    They are read like data files (runner.files.load_npy): no pickles, bfloat16 and fp8 stored
    as raw |V2/|V1 are viewed as the declared dtype, and a missing file or a wrong
    dtype/shape is an error (E070/E072/E073/E074) naming the file.
    """
    from nkirun.runner.files import load_npy
    out = {}
    for name, decl in program.tensors.items():
        if decl.output:
            path = os.path.join(expect_dir, f"{name}.npy")
            out[name] = load_npy(path, decl, "expected file", decl.loc)
    return out


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
    if hasattr(b, "accesses"):  # Bound.accesses (checker/bound.py)
        acc = b.accesses()
        return acc.reads, acc.writes
    from nkirun.checker.passes import _reads_writes
    return _reads_writes(b)


def compare_outputs(program: Program, result: dict[str, np.ndarray],
                    expected: dict[str, np.ndarray], tol: Tolerance = Tolerance(),
                    bound=None) -> list[TensorDiff]:
    """One TensorDiff per output, in declaration order; with the bound instructions, those
    derived from the PRNG model say so (random_from)."""
    random = random_sources(bound) if bound is not None else {}
    diffs = []
    for name, arr in result.items():
        d = compare(name, arr, expected[name], program.tensors[name].dtype, tol,
                    program.tensors[name].on_chip)
        d.random_from = random.get(name)
        diffs.append(d)
    return diffs


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.9g}"


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


def format_diffs(diffs: list[TensorDiff]) -> str:
    """Plain text: one line per tensor, details for mismatching ones."""
    lines = []
    w = max((len(d.name) for d in diffs), default=0)
    for d in diffs:
        total = int(np.prod(d.shape))
        model = "" if d.random_from is None else ", MODEL PRNG"
        if d.ok:
            lines.append(f"  {d.name:<{w}}  match ({d.mode}{model}, {total:,} elements)")
        if d.random_from is not None:
            lines.append(f"  {'':<{w}}  not a hardware check: depends on {d.random_from}, "
                         "whose values come from nkirun's PRNG model, not the device's bits")
        if d.ok:
            continue
        lines.append(f"  {d.name:<{w}}  MISMATCH ({d.mode}{model}) in {d.mismatches:,} of "
                     f"{total:,} elements")
        lines.append(f"  {'':<{w}}  first at {d.where()}: got {_num(d.actual)}, expected "
                     f"{_num(d.expected)}")
        if d.max_abs == 0 and d.max_rel == 0:
            # every finite pair is equal: what differs is NaN/inf or the sign of a zero
            lines.append(f"  {'':<{w}}  all finite values are equal; the difference is in "
                         "NaN, inf or the sign of zero")
        else:
            lines.append(f"  {'':<{w}}  max abs error {d.max_abs:.6g}, max rel error "
                         f"{d.max_rel:.6g}"
                         + ("" if DTYPES[d.dtype].is_int else f", max ULP error {d.max_ulp}")
                         + " (over finite values)")
    return "\n".join(lines)
