"""Pre-0.2 forms public kernels use (docs/kernels.md, "The pre-0.2 API"), against NumPy:
`perf_mode="double_row_gen3"`, `nisa.tensor_tensor(x, col, op)` with a (P, 1) column, and
`nl` arithmetic with a column that is not float32."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nkirun
from tests.kernel.test_kernel_contract import nkirun_kernel, write

DOUBLE_ROW = """\
    import neuronxcc.nki as nki
    import neuronxcc.nki.isa as nisa
    import neuronxcc.nki.language as nl

    @nki.jit
    def double_row(a, b):
        out = nl.ndarray((a.shape[2], b.shape[2]), dtype=nl.float32, buffer=nl.shared_hbm)
        c = nisa.nc_matmul(nl.load(a), nl.load(b), perf_mode="double_row_gen3")
        nl.store(out, value=c)
        return out
    """


@pytest.mark.parametrize("k,m,n", [(128, 128, 512), (37, 5, 33), (1, 1, 7)])
def test_double_row_gen3_is_double_row(tmp_path, k, m, n):
    fp8 = ml_dtypes.float8_e4m3
    rng = np.random.default_rng(k)
    a = rng.integers(-8, 9, (k, 2, m)).astype(fp8)
    b = rng.integers(-8, 9, (k, 2, n)).astype(fp8)
    got = nkirun.simulate(nkirun_kernel(write(tmp_path, DOUBLE_ROW), "double_row"))(a, b)
    want = np.einsum("kli,klj->ij", a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_array_equal(got, want)


COLUMN = """\
    import numpy as np
    import neuronxcc.nki as nki
    import neuronxcc.nki.isa as nisa
    import neuronxcc.nki.language as nl

    def out_of(t):
        o = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
        nl.store(o, t)
        return o

    @nki.jit
    def column(x, col):
        t, c = nl.load(x), nl.load(col)
        return (out_of(nisa.tensor_tensor(t, c, nl.multiply)),
                out_of(nisa.tensor_tensor(c, t, np.subtract)),
                out_of(nl.divide(t, c)), out_of(nl.subtract(c, t)), out_of(t * c))
    """


@pytest.mark.parametrize("p,f,dtype", [(128, 64, ml_dtypes.bfloat16), (37, 5, np.float32),
                                       (1, 3, np.float16)])
def test_a_column_operand_is_read_along_the_free_dims(tmp_path, p, f, dtype):
    rng = np.random.default_rng(p)
    x = rng.standard_normal((p, f)).astype(dtype)
    col = (rng.random((p, 1)) + 0.5).astype(dtype)
    x.reshape(-1)[0] = np.inf  # special values pass through elementwise
    got = nkirun.simulate(nkirun_kernel(write(tmp_path, COLUMN), "column"))(x, col)
    xf, cf = x.astype(np.float32), col.astype(np.float32)
    want = [xf * cf, cf - xf, xf / cf, cf - xf, xf * cf]
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == np.dtype(dtype), i
        np.testing.assert_array_equal(g, w.astype(dtype), err_msg=f"result {i}")


def test_a_bfloat16_column_in_nl_arithmetic_becomes_a_tensor_tensor(tmp_path):
    """tensor_scalar's arithmetic operand tiles are float32: a bfloat16 column is read
    through a zero-step view by a tensor_tensor instead (no E227)."""
    path = write(tmp_path, COLUMN)
    x = np.ones((4, 6), ml_dtypes.bfloat16)
    col = np.ones((4, 1), ml_dtypes.bfloat16)
    prog = nkirun.trace(nkirun_kernel(path, "column"), x, col)
    assert "tensor_scalar" not in [i.op for i in prog.instructions]
    assert not [d for d in nkirun.check(nkirun_kernel(path, "column"), x, col) if d.is_error]


def test_double_row_gen3_with_dst_given(tmp_path):
    """The same spelling in a call that gives dst= (the trace's fast path for simple
    calls must not skip it)."""
    path = write(tmp_path, """\
        import nki
        import nki.isa as nisa
        import nki.language as nl

        @nki.jit
        def double_row(a, b):
            out = nl.ndarray((a.shape[2], b.shape[2]), dtype=nl.float32, buffer=nl.shared_hbm)
            ta = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
            tb = nl.ndarray(b.shape, dtype=b.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=ta, src=a)
            nisa.dma_copy(dst=tb, src=b)
            c = nl.ndarray((a.shape[2], b.shape[2]), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul(dst=c, stationary=ta, moving=tb, perf_mode="double_row_gen3")
            s = nl.ndarray(c.shape, dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_copy(dst=s, src=c)
            nisa.dma_copy(dst=out, src=s)
            return out
        """)
    fp8 = ml_dtypes.float8_e4m3
    rng = np.random.default_rng(3)
    a = rng.integers(-8, 9, (64, 2, 16)).astype(fp8)
    b = rng.integers(-8, 9, (64, 2, 40)).astype(fp8)
    got = nkirun.simulate(nkirun_kernel(path, "double_row"))(a, b)
    np.testing.assert_array_equal(
        got, np.einsum("kli,klj->ij", a.astype(np.float64), b.astype(np.float64)))
