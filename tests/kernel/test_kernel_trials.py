"""Constructs met while running public NKI kernels unmodified (docs/kernels.md, "Public
kernels tried"). Each kernel here is written for this test in the same style and compared
with an independent NumPy reference."""
from __future__ import annotations

import numpy as np

import nkirun
from tests.kernel.test_kernel_contract import nkirun_kernel, write

LIST_BLOCKS = """\
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def two_scalings(x):
    # a block buffer whose shape is a list: [2] + [par_dim(P), F] holds two (P, F) tiles
    out = nl.ndarray([2] + list(x.shape), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    pair = nl.ndarray([2] + [nl.par_dim(t.shape[0]), t.shape[1]], dtype=t.dtype,
                      buffer=nl.sbuf)
    pair[0, :, :] = t * 2.0
    pair[1, :, :] = t * 3.0
    half = t.shape[1] // 2
    pair[1, :, :half] = pair[1, :, :half] + pair[0, :, half:]
    nl.store(out[0], pair[0, :, :])
    nl.store(out[1], pair[1, :, :])
    return out
"""


def test_a_list_shape_with_par_dim_is_a_block_buffer(tmp_path):
    k = nkirun_kernel(write(tmp_path, LIST_BLOCKS), "two_scalings")
    x = np.random.default_rng(0).standard_normal((96, 8)).astype(np.float32)
    want = np.stack([x * 2, x * 3])
    want[1, :, :4] += x[:, 4:] * 2
    np.testing.assert_allclose(nkirun.simulate(k)(x), want, rtol=1e-6)
    # the blocks are two (96, 8) tiles: 96 partitions, not a (2, 96, 8) tile on 2 partitions
    prog = nkirun.trace(k, x)
    sbuf = [t for t in prog.tensors.values() if t.buffer == "sbuf" and t.name.startswith("pair")]
    assert len(sbuf) == 2 and all(tuple(t.shape) == (96, 8) for t in sbuf)
