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


def test_python_and_on_index_comparisons_says_use_ampersand(tmp_path):
    bad = nkirun_kernel(write(tmp_path, PY_AND_MASK.format(mask="(ip < 2 and jf < 3)")),
                        "corner_negate")
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    with pytest.raises(NkirunError) as e:
        nkirun.simulate(bad)(x)
    text = str(e.value)
    assert "E602" in text and "combine masks with `&`" in text and "k.py:13:" in text


def test_the_ampersand_mask_spelling_runs(tmp_path):
    good = nkirun_kernel(write(tmp_path, PY_AND_MASK.format(mask="((ip < 2) & (jf < 3))"),
                               "ok.py"), "corner_negate")
    x = np.arange(1, 21, dtype=np.float32).reshape(4, 5)
    got = nkirun.simulate(good)(x)
    want = x.copy()
    want[:2, :3] *= -1
    np.testing.assert_array_equal(got, want)
