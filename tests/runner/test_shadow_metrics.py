"""The shadow's fast error statistics (runner/shadow_metrics.py) against their plain
definitions: the same numbers, bit for bit, on awkward data."""
from __future__ import annotations

import numpy as np
import pytest

from nkirun.hw.dtypes import DTYPES
from nkirun.runner.shadow_metrics import errors, plain_errors

NAMES = ["float32", "bfloat16", "float16", "tfloat32", "float8_e4m3", "float8_e5m2", "int32"]


def _pair(rng, n: int, kind: str):
    """(ref, xs): a shadow and two perturbed versions of it, of one kind of trouble."""
    exps = rng.integers(-140, 128, n) if kind == "wild" else rng.integers(-20, 20, n)
    ref = (rng.standard_normal(n) * np.exp2(exps.astype(np.float64))).astype(np.float32)
    ref[rng.random(n) < 0.05] = 0
    xs = [ref * (1 + rng.standard_normal(n).astype(np.float32) * 2.0 ** -8)
          for _ in range(2)]
    if kind == "wild":  # subnormals, the largest floats, infinities and NaNs
        ref[:6] = [1e-45, -3e-39, 3.4e38, np.inf, np.nan, 0.0]
        xs[0][:6] = [3e-45, 0.0, -3.4e38, np.inf, np.nan, 1e-44]
        xs[1][:6] = [1e-45, 1e-38, 3.4e38, 1.0, 2.0, -1e-45]
    if kind == "inf_ref":  # an infinite shadow against an infinite error: NaN ratio
        ref[3], xs[0][3] = np.inf, -np.inf
    if kind == "equal":
        xs[0] = ref.copy()
    return ref, xs


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("kind", ["tame", "wild", "inf_ref", "equal"])
@pytest.mark.parametrize("n", [1, 37, 4099])
def test_fast_errors_equal_plain_definitions(name, kind, n):
    rng = np.random.default_rng([NAMES.index(name), sum(map(ord, kind)), n])
    d = DTYPES[name]
    with np.errstate(all="ignore"):
        ref, xs = _pair(rng, max(n, 7), kind)
        fast, plain = errors(xs, ref, d, {}), plain_errors(xs, ref, d)
    for a, b in zip(fast, plain):
        got, want = (a.abs, a.rel, a.ulp, a.at), (b.abs, b.rel, b.ulp, b.at)
        assert np.array_equal(np.array(got), np.array(want), equal_nan=True), (got, want)


def test_rel_peak_far_from_abs_peak_is_found():
    """The largest rel error sits where |ref| is tiny, far from the largest abs error."""
    ref = np.array([1000.0, 1e-3, 5.0], np.float32)
    x = np.array([1001.0, 2e-3, 5.0], np.float32)
    (e,) = errors([x], ref, DTYPES["bfloat16"], {})
    assert e.at == 0 and e.rel == pytest.approx(1.0, rel=1e-6)
    (p,) = plain_errors([x], ref, DTYPES["bfloat16"])
    assert (e.abs, e.rel, e.ulp, e.at) == (p.abs, p.rel, p.ulp, p.at)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.float16])
def test_zero_count_equals_count_nonzero(dtype):
    from nkirun.runner.shadow_metrics import zeros
    a = np.array([0.0, -0.0, 1.0, np.nan, np.inf, 1e-45, 0, 3] if dtype != np.int32
                 else [0, 1, -1, 0, 5], dtype).reshape(-1, 1)
    assert zeros(a, {}) == a.size - np.count_nonzero(a)
    assert zeros(a[:0], {}) == 0


def test_register_compare_equals_array_equal():
    """same_values answers as np.array_equal(equal_nan=True) does: -0 vs 0, NaN payloads."""
    from nkirun.runner.shadow import same_values
    z = np.zeros((4, 1), np.float32)
    nan2 = np.full((4, 1), np.nan, np.float32)
    nan2.view(np.uint32)[0] |= 1
    pairs = [(z, z.copy()), (z, -z), (nan2, np.full((4, 1), np.nan, np.float32)),
             (z, z + 1), (np.zeros(4, bool), np.ones(4, bool)), (z, z[:2])]
    for a, b in pairs:
        assert same_values(a, b) == np.array_equal(a, b, equal_nan=a.dtype.kind == "f")


@pytest.mark.parametrize("fast", [True, False])
def test_a_nan_the_run_matches_does_not_make_the_rel_error_nan(fast):
    """NaN in both the run and the shadow carries no error: the store's max rel error is
    that of its other elements, not NaN."""
    ref = np.array([np.nan, 1.0, 4.0], np.float32)
    x = np.array([np.nan, 1.0078125, 4.0], np.float32)
    (e,) = errors([x], ref, DTYPES["bfloat16"], {}) if fast else \
        plain_errors([x], ref, DTYPES["bfloat16"])
    assert e.at == 1 and e.abs == pytest.approx(0.0078125)
    assert e.rel == pytest.approx(0.0078125) and np.isfinite(e.ulp)
