"""A kernel's run does not depend on anything outside its own inputs: the --uninitialized
fill policy, what earlier kernels did to the `nki` modules, other threads tracing at the
same time, the working folder, how the kernel leaves (sys.exit), a `json.py` beside it.
Each case is compared with a NumPy reference or the documented error."""
from __future__ import annotations

import numpy as np
import pytest

import nkirun
from tests.kernel.test_kernel_contract import nkirun_kernel, write

FIRST_MATMUL = """\
import nki
import nki.isa as nisa
import nki.language as nl

@nki.jit
def first_matmul(a, b):
    out = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.shared_hbm)
    ps = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=ps, stationary=nl.load(a), moving=nl.load(b))
    s = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=s, src=ps)
    nl.store(out, s)
    return out
"""


@pytest.mark.parametrize("policy", ["error", "strict", "nan", "zero"])
def test_fill_policy_does_not_turn_the_first_matmul_into_an_accumulate(tmp_path, policy):
    k = nkirun_kernel(write(tmp_path, FIRST_MATMUL), "first_matmul")
    a, b = np.ones((1, 128), np.float32), np.full((1, 4), 2.0, np.float32)
    np.testing.assert_array_equal(nkirun.simulate(k, uninitialized=policy)(a, b),
                                  a.T @ b)
