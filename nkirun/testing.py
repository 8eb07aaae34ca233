"""Assertions for your own tests, built on the golden diff of `nkirun run --expect`.

    import nkirun
    out = nkirun.run("kernel.yaml", inputs={"x": x})
    nkirun.testing.assert_close(out["y"], reference(x), ulp=2)
    nkirun.testing.assert_close(out["z"], ref_z, rtol=1e-3, atol=1e-6)

Exact by default: bit for bit, any NaN equal to any NaN, +0.0 and -0.0 different. The
message on failure is the `--expect` report: how many elements differ, the first and the
worst with both values, the max abs/rel/ULP error.
"""
from __future__ import annotations

import numpy as np

from nkirun.runner.compare import Tolerance, compare, format_diffs

__all__ = ["assert_close"]


def assert_close(actual, expected, *, ulp: int | None = None, rtol: float = 0.0,
                 atol: float = 0.0, range_rtol: float = 0.0, on_chip: bool = False,
                 name: str = "actual") -> None:
    """Raise AssertionError unless `actual` matches `expected` within the tolerance.

    `ulp`: at most that many units in the last place of actual's dtype apart (exclusive
    with rtol/atol/range_rtol); `rtol`/`atol`: |actual - expected| <= atol + rtol *
    |expected|, plus `range_rtol` * max|expected|. Integer arrays compare exactly. An
    `expected` in another dtype (a float64 reference) is compared in float64. `on_chip`
    shows indices as (p=.., f=..) instead of [i, j].
    """
    tol = Tolerance(rtol, atol, ulp, range_rtol)  # ValueError for a bad tolerance
    actual, expected = np.asarray(actual), np.asarray(expected)
    if actual.shape != expected.shape:
        raise AssertionError(f"{name}: shape {list(actual.shape)} differs from expected "
                             f"{list(expected.shape)}")
    diff = compare(name, actual, expected, tol=tol, on_chip=on_chip)
    if not diff.ok:
        raise AssertionError(f"{name} differs from expected\n" + format_diffs([diff]))
