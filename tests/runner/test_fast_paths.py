"""The interpreter's speed-ups (issue 7, docs/performance.md) give the same bits as the
plain NumPy they replace: the branch-free select, casting straight into the destination,
affine_select's broadcast comparison, and the cost package's lazy views."""
from __future__ import annotations

import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

from nkirun.hw import dtypes as dt
from nkirun.isa.common import COMPARE_UFUNCS, pattern_terms, pattern_values
from nkirun.runner.machine import select_into

EDGE = np.array([0.0, -0.0, 1.0, -1.5, np.inf, -np.inf, np.nan, 3.4028235e38, -3.4028235e38,
                 1e-45, -1e-45, 1e-40, 65504.0, 65520.0, 448.0, 464.0, 57344.0, 1.0078125,
                 1.00390625, 3.3895314e38, 3.3961776e38], np.float32)
NAN_PAYLOAD = np.array([0x7FC00001, 0xFFA00000, 0x7F800001], np.uint32).view(np.float32)


def values(rng, p: int, n: int) -> np.ndarray:
    x = rng.standard_normal((p, n)).astype(np.float32) * np.float32(1e3)
    flat = x.reshape(-1)
    k = min(flat.size, EDGE.size + NAN_PAYLOAD.size)
    flat[rng.choice(flat.size, k, replace=False)] = np.concatenate([EDGE, NAN_PAYLOAD])[:k]
    return x


def bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.dtype(f"u{a.dtype.itemsize}"))


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16, np.float16,
                                   ml_dtypes.float8_e4m3, np.int32, np.uint8, np.int16])
@pytest.mark.parametrize("p,n", [(1, 1), (37, 33), (128, 257)])
@pytest.mark.parametrize("regular", [False, True, None])
@pytest.mark.parametrize("fill_kind", ["scalar", "column"])
def test_select_into_is_where(dtype, p, n, regular, fill_kind):
    rng = np.random.default_rng(p * 1000 + n)
    with np.errstate(all="ignore"):
        a = values(rng, p, n).astype(dtype)
        b = (np.asarray(np.float32(-3.4028235e38)).astype(dtype) if fill_kind == "scalar"
             else values(rng, p, 1).astype(dtype))
    cond = rng.random((p, n)) < 0.5
    cond[0] = False  # a fully false row
    out = np.empty((p, n), dtype)
    select_into(out, cond, a, b, regular)
    np.testing.assert_array_equal(bits(out), bits(np.where(cond, a, b)))


@pytest.mark.parametrize("name", ["float32", "bfloat16", "float16", "float8_e4m3",
                                  "float8_e5m2", "tfloat32", "int8", "uint16", "int32"])
@pytest.mark.parametrize("masked", [False, True])
def test_write_casts_like_dtypes_cast(name, masked):
    """Machine.write casts float32 straight into the destination where NumPy's cast is
    nkirun's; every dtype must still give dt.cast's bits, masked or not."""
    from nkirun.runner.machine import Machine
    rng = np.random.default_rng(7)
    x = values(rng, 37, 65)
    target = dt.DTYPES[name]
    dst = np.zeros((37, 65), target.np_type)
    mask = rng.random((37, 65)) < 0.5 if masked else None
    r = _whole_view(dst, target)
    m = Machine({"t": dst}, {"t": None})
    with np.errstate(all="ignore"):
        m.write(r, x, None, mask)
        want = dt.cast(x, target)
    if masked:
        want = np.where(mask, want, np.zeros((), target.np_type))
    np.testing.assert_array_equal(bits(dst), bits(want))


def _whole_view(arr: np.ndarray, target):
    """The Resolved view of the whole of tensor `t`."""
    from nkirun.ir import TensorDecl, View
    from nkirun.views.operands import resolve
    r, diag = resolve(View("t"), TensorDecl("t", "sbuf", arr.shape, target))
    assert diag is None
    return r


@pytest.mark.parametrize("pattern,offset,cm", [
    ([[-1, 64]], 0, 1), ([[1, 8], [-3, 5]], -7, 2), ([[2, 3], [0, 2], [-1, 4], [5, 2]], 10, -4),
    ([[1, 17]], 2**31 - 200, 0)])
@pytest.mark.parametrize("cmp", sorted(COMPARE_UFUNCS))
def test_affine_broadcast_compare_is_the_values_compare(pattern, offset, cm, cmp):
    part, free = pattern_terms(pattern, offset, cm, 37)
    ufunc = COMPARE_UFUNCS[cmp]
    np.testing.assert_array_equal(ufunc(free, -part),
                                  ufunc(pattern_values(pattern, offset, cm, 37), 0))


def test_check_does_not_import_the_cost_views_or_rich():
    code = ("import sys; from nkirun.api import check_program; import nkirun.cli; "
            "print(sorted(m for m in sys.modules if m.startswith(('rich', 'nkirun.schedule.r'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"
    from nkirun.schedule import VIEWS, render_report, to_json  # the lazy names still resolve
    assert callable(render_report) and callable(to_json) and VIEWS


@pytest.mark.parametrize("seed", range(4))
def test_match_replace8_every_candidate_path(seed):
    """Candidates from the min compare only, narrowed by the max compare, or the dense
    loop: the same bits and indices as the page's loop."""
    from nkirun.isa.fast.match_replace import match_replace8
    import reference as ref
    rng = np.random.default_rng(seed)
    data = rng.integers(-40, 40, size=(37, 301)).astype(np.float32)
    vals = np.take_along_axis(data, rng.integers(0, 301, size=(37, 8)), axis=1)
    vals[:, 6] = vals[:, 2]  # a duplicate takes the next occurrence
    want, want_idx = ref.nc_match_replace8(data, vals, np.float32(-np.inf))
    above_min = np.count_nonzero(data >= vals.min(axis=1, keepdims=True))
    in_range = np.count_nonzero((data >= vals.min(axis=1, keepdims=True))
                                & (data <= vals.max(axis=1, keepdims=True)))
    assert in_range < above_min  # so that the middle threshold takes the narrowing path
    for dense_above in (10**9, (in_range + above_min) // 2 // 37, 0):
        x = data.copy()
        idx, found = match_replace8(x, vals, np.float32(-np.inf), dense_above=dense_above)
        np.testing.assert_array_equal(bits(x), bits(want))
        np.testing.assert_array_equal(idx, want_idx.astype(np.int64))
