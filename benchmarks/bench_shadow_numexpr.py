"""Would numexpr make `run --shadow` cheaper (issue 18)? Measured: no (docs/performance.md).

The idea: a shadow comparison makes ~17 NumPy passes over each output tile; numexpr
evaluates one element-wise expression over cache-sized blocks, so the abs, rel and ULP
errors of one comparison could each be one fused expression with numexpr's own `max`
reduction. This script keeps that candidate (`fused_errors`, checked equal to
`shadow_metrics.errors` bit for bit before it is timed) so the measurement can be repeated
on other hardware. numexpr is not a dependency of nkirun: without it the script says so.

    pip install numexpr
    python benchmarks/bench_shadow_numexpr.py [--threads 1] [--free 2048] [--whole]

Parts: (1) one pass of each kind, NumPy against numexpr, on a (128, free) float32 tile;
(2) `fused_errors` against `errors` for one bfloat16 store (carried and added error);
(3) with --whole, bench_shadow.py's three workloads with `fused_errors` in place of
`errors` (compare with a plain `python benchmarks/bench_shadow.py --clock cpu`).
CPU time of this process, best of the repeats.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import ml_dtypes
import numpy as np

from nkirun.hw import dtypes as dt
from nkirun.runner import shadow_metrics as sm
from nkirun.runner.shadow_bits import BF16, as_f32, bf16_rounding_ulps

try:
    import numexpr as ne
except ImportError:  # (not a dependency: this script is the evidence for leaving it out)
    ne = None

EXP = np.int32(0x7F800000)  # float32 exponent bits
NUMPY_ERRORS = sm.errors


def fused_errors(xs, ref, d, pool=None, rounding=None, native=False):
    """sm.errors with each statistic one numexpr expression (abs difference written once,
    rel and ULP maxima by numexpr's `max` reduction, the ULP spacing from ref's exponent
    bits on an int32 view); NaN/inf, integer and empty cases, and a probe left for the
    compiled comparison to round (a string), go to sm.errors (`native` is not used)."""
    ref = np.asarray(ref).reshape(-1)
    if not ref.size or not (d.is_float and d.packed == 1) or any(isinstance(x, str)
                                                                 for x in xs):
        return NUMPY_ERRORS(xs, ref, d, pool, rounding)
    ref = ref.astype(np.float32, copy=False)
    pool, f = {} if pool is None else pool, sm.fmt(d)
    n, tiny, k = ref.size, np.float32(f.tiny), np.float32(np.ldexp(1.0, -f.nmant))
    tiny_exp = np.int32(tiny.view(np.int32) & EXP)
    diff, spacing, out = sm.scratch(pool, n, np.float32, 0), None, []
    for i, x in enumerate(xs):
        x = np.asarray(x).reshape(-1)
        x = as_f32(x) if x.dtype == BF16 else x
        if x.dtype != np.float32:
            return NUMPY_ERRORS(xs, ref, d, pool, rounding)
        ne.evaluate("abs(x - ref)", local_dict={"x": x, "ref": ref}, out=diff,
                    casting="unsafe")
        at = int(np.argmax(diff))  # (numexpr has no argmax)
        top = diff[at]
        if not np.isfinite(top):
            return NUMPY_ERRORS(xs, ref, d, pool, rounding)
        if top == 0:
            out.append(sm.Err(0.0, 0.0, 0.0, 0))
            continue
        rel = ne.evaluate("max(diff / where(abs(ref) < tiny, tiny, abs(ref)))",
                          local_dict={"diff": diff, "ref": ref, "tiny": tiny})
        if i == rounding:
            ulp = bf16_rounding_ulps(ref, sm.scratch(pool, n, np.int32, 5))
        else:
            if spacing is None:
                bits, spacing = ref.view(np.int32), sm.scratch(pool, n, np.int32, 3)
                ne.evaluate("where((bits & e) < tiny_exp, tiny_exp, bits & e)",
                            local_dict={"bits": bits, "e": EXP, "tiny_exp": tiny_exp},
                            out=spacing)
            ulp = float(ne.evaluate("max(diff / (sp * k))", local_dict={
                "diff": diff, "sp": spacing.view(np.float32), "k": k}))
        out.append(sm.Err(float(top), float(rel), ulp, at))
    return out


def best(fn, repeat: int = 25) -> float:
    t = float("inf")
    for _ in range(repeat):
        s = time.process_time()
        fn()
        t = min(t, time.process_time() - s)
    return t


def passes(free: int) -> None:
    rng = np.random.default_rng(0)
    x, r = (rng.standard_normal(128 * free).astype(np.float32) for _ in range(2))
    o, den, tiny = np.empty_like(x), np.abs(r) + np.float32(1), np.float32(2.0 ** -126)
    names = {"x": x, "r": r, "den": den, "tiny": tiny}

    def ev(expr: str, out=o):
        return ne.evaluate(expr, local_dict=names, out=out)
    rows = [
        ("x - r", lambda: np.subtract(x, r, out=o), lambda: ev("x - r")),
        ("x / den", lambda: np.divide(x, den, out=o), lambda: ev("x / den")),
        ("|x - r| (NumPy: 2 passes)", lambda: np.abs(np.subtract(x, r, out=o), out=o),
         lambda: ev("abs(x - r)")),
        ("x / max(|r|, tiny) (3 passes)",
         lambda: np.divide(x, np.fmax(np.abs(r, out=o), tiny, out=o), out=o),
         lambda: ev("x / where(abs(r) < tiny, tiny, abs(r))")),
        ("max(x)", x.max, lambda: ev("max(x)", None)),
    ]
    print(f"one pass over (128, {free}) float32, ms:          NumPy   numexpr")
    for name, a, b in rows:
        print(f"  {name:40s} {best(a) * 1e3:7.3f}  {best(b) * 1e3:7.3f}")


def one_store(free: int) -> None:
    rng = np.random.default_rng(1)
    ref = rng.standard_normal(128 * free).astype(np.float32)
    noisy = ref + rng.standard_normal(ref.size).astype(np.float32) * np.float32(0.01)
    real = noisy.astype(ml_dtypes.bfloat16).astype(np.float32)
    probe = ref.astype(ml_dtypes.bfloat16).astype(np.float32)
    d, p1, p2 = dt.lookup("bfloat16"), {}, {}
    a = NUMPY_ERRORS([real, probe], ref, d, p1, 1)
    b = fused_errors([real, probe], ref, d, p2, 1)
    assert a == b, (a, b)
    ta = best(lambda: NUMPY_ERRORS([real, probe], ref, d, p1, 1))
    tb = best(lambda: fused_errors([real, probe], ref, d, p2, 1))
    print(f"one bfloat16 store's comparison (carried + added), (128, {free}): "
          f"NumPy {ta * 1e3:.3f} ms, numexpr {tb * 1e3:.3f} ms (equal results)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--free", type=int, default=2048)
    ap.add_argument("--whole", action="store_true")
    args = ap.parse_args()
    if ne is None:
        print("numexpr is not installed (pip install numexpr): nothing to compare")
        return
    ne.set_num_threads(args.threads)
    print(f"numexpr {ne.__version__}, {args.threads} thread(s), VML: {ne.use_vml}")
    passes(args.free)
    one_store(args.free)
    one_store(128)
    if args.whole:
        import bench_shadow
        sm.errors = fused_errors  # (compare() looks errors up in its module)
        sys.argv = [sys.argv[0], "--clock", "cpu", "--repeat", "9", "--numpy"]
        bench_shadow.main()


if __name__ == "__main__":
    main()
