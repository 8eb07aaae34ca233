"""More constructs met while running public NKI kernels unmodified (docs/kernels.md,
"Public kernels tried"). Each kernel here is written for this test in NKI style and, where
it runs, compared with an independent NumPy reference."""
from __future__ import annotations

import numpy as np
import pytest

import nkirun
from nkirun.diagnostics import NkirunError
from tests.kernel.test_kernel_contract import nkirun_kernel, write

PY_AND_MASK = """\
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def corner_negate(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    p, f = x.shape
    t = nl.load(x)
    nl.store(out, t)
    ip, jf = nl.mgrid[0:p, 0:f]
    r = nisa.tensor_scalar(t[ip, jf], nl.multiply, -1.0, mask={mask})
    nl.store(out[ip, jf], r, mask={mask})
    return out
"""


def test_python_and_on_index_comparisons_is_e608_and_the_ampersand_spelling_runs(tmp_path):
    bad = nkirun_kernel(write(tmp_path, PY_AND_MASK.format(mask="(ip < 2 and jf < 3)")),
                        "corner_negate")
    with pytest.raises(NkirunError) as e:
        nkirun.simulate(bad)(np.ones((4, 5), np.float32))
    assert "E608" in str(e.value) and "k.py:13:" in str(e.value)
    good = nkirun_kernel(write(tmp_path, PY_AND_MASK.format(mask="((ip < 2) & (jf < 3))"),
                               "ok.py"), "corner_negate")
    x = np.arange(1, 21, dtype=np.float32).reshape(4, 5)
    got = nkirun.simulate(good)(x)
    want = x.copy()
    want[:2, :3] *= -1
    np.testing.assert_array_equal(got, want)


E4M3FN_ROUND_TRIP = """\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def to_e4m3fn(x):
    q_out = nl.ndarray(x.shape, dtype=nl.float8_e4m3fn, buffer=nl.shared_hbm)
    back = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    q = nl.ndarray(x.shape, dtype=nl.float8_e4m3fn, buffer=nl.sbuf)
    nisa.tensor_copy(dst=q, src=t)
    w = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=w, data=q, op0=nl.multiply, operand0=2.0)
    nisa.dma_copy(dst=q_out, src=q)
    nisa.dma_copy(dst=back, src=w)
    return q_out, back
"""

# (input, its float8_e4m3fn value) worked out by hand from the format: 4 exponent bits
# (bias 7), 3 mantissa bits, no infinity, S.1111.111 is NaN, so 448 = 1.75 * 2**8 is the
# largest value; rounding to nearest even, with the NaN code as the step past 448.
E4M3FN_CASES = [
    (0.0, 0.0), (1.0, 1.0), (448.0, 448.0), (449.0, 448.0),
    (464.0, 448.0),            # the tie between 448 (mantissa 110) and 480 (the NaN code)
    (465.0, np.nan), (1e6, np.nan), (np.inf, np.nan), (-np.inf, np.nan), (np.nan, np.nan),
    (-300.0, -288.0),          # steps of 32 in [256, 512)
    (2.0 ** -9, 2.0 ** -9),    # the smallest subnormal
    (2.0 ** -10, 0.0),         # half of it: a tie, to the even 0
    (1.0625, 1.0), (1.1875, 1.25), (-0.015625, -0.015625),
]


def test_float8_e4m3fn_on_trn3_rounds_to_nearest_even_with_nan_past_448(tmp_path):
    k = nkirun_kernel(write(tmp_path, E4M3FN_ROUND_TRIP), "to_e4m3fn")
    x = np.array([c[0] for c in E4M3FN_CASES], np.float32).reshape(1, -1)
    want = np.array([c[1] for c in E4M3FN_CASES], np.float32).reshape(1, -1)
    q, back = nkirun.simulate(k, target="trn3")(x)
    assert q.dtype.name == "float8_e4m3fn"
    np.testing.assert_array_equal(q.astype(np.float32), want)  # NaN where NaN
    np.testing.assert_array_equal(back, want * 2)


def test_float8_e4m3fn_before_trn3_is_e680_at_the_allocation(tmp_path):
    k = nkirun_kernel(write(tmp_path, E4M3FN_ROUND_TRIP), "to_e4m3fn")
    x = np.ones((2, 3), np.float32)
    for target in ("trn1", "trn2"):
        with pytest.raises(NkirunError) as e:
            nkirun.simulate(k, target=target)(x)
        assert "E680" in str(e.value) and "k.py:8:" in str(e.value)


E4M3FN_MATMUL = """\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def fp8_matmul(a_t, b):
    k, m = a_t.shape
    n = b.shape[1]
    out = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.shared_hbm)
    a8 = nl.ndarray((k, m), dtype=nl.float8_e4m3fn, buffer=nl.sbuf)
    b8 = nl.ndarray((k, n), dtype=nl.float8_e4m3fn, buffer=nl.sbuf)
    nisa.dma_copy(dst=a8, src=a_t)
    nisa.dma_copy(dst=b8, src=b)
    acc = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=acc, stationary=a8, moving=b8)
    res = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=acc)
    nisa.dma_copy(dst=out, src=res)
    return out
"""


def test_an_e4m3fn_matmul_on_trn3_sums_the_rounded_operands(tmp_path):
    k = nkirun_kernel(write(tmp_path, E4M3FN_MATMUL), "fp8_matmul")
    rng = np.random.default_rng(7)
    # values on the e4m3fn grid (integers up to 16 are exact: 3 mantissa bits below 16
    # need multiples of 2 above 8), plus 300 (-> 288) so the load's rounding shows
    a_t = rng.integers(-8, 9, (37, 5)).astype(np.float32)
    b = rng.integers(-8, 9, (37, 11)).astype(np.float32)
    b[0, 0] = 300.0
    got = nkirun.simulate(k, target="trn3")(a_t, b)
    b_rounded = b.copy()
    b_rounded[0, 0] = 288.0
    np.testing.assert_allclose(got, a_t.T.astype(np.float64) @ b_rounded, rtol=0, atol=1e-3)
