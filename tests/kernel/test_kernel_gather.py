"""Pre-0.2 indirect DMA (legacy_gather.py): an HBM tensor indexed with an SBUF tile of
row indices computed at run time — NKI's legacy nl.load/nl.store "indirect DMA access"
examples, indices from nisa.iota and arithmetic (nl.mod), masked tail tiles, scatters;
against NumPy fancy indexing."""
from __future__ import annotations

import numpy as np
import pytest

import nkirun
from nkirun.diagnostics import NkirunError
from tests.kernel.test_kernel_contract import nkirun_kernel, write

HEAD = """\
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

"""

KERNELS = HEAD + """
@nki.jit
def from_iota(data):
    out = nl.ndarray([64, data.shape[1]], dtype=data.dtype, buffer=nl.shared_hbm)
    i_f = nl.arange(data.shape[1])[None, :]
    idx = nisa.iota(2 * nl.arange(64)[:, None], dtype=np.int32)   # rows 0, 2, 4, ...
    nl.store(out, value=nl.load(data[idx, i_f]))
    return out


@nki.jit
def from_hbm(data, rows):
    n = rows.shape[0]
    out = nl.ndarray([n, data.shape[1]], dtype=data.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(n)[:, None]
    i_f = nl.arange(data.shape[1])[None, :]
    idx = nl.load(rows[i_p])                       # (n, 1) int32 in SBUF
    nl.store(out, value=nl.load(data[idx[i_p, 0], i_f]))
    return out


@nki.jit
def scatter(src, rows, n_out):
    n, f = src.shape
    out = nl.ndarray([n_out, f], dtype=src.dtype, buffer=nl.shared_hbm)
    i_f = nl.arange(f)[None, :]
    nl.store(out, value=nl.zeros((n_out, f), dtype=src.dtype))
    idx = nl.load(rows)
    nl.store(out[idx, i_f], value=nl.load(src))
    return out


@nki.jit
def computed(data, total, k=7):
    # rows (3 * j) mod k of a [B, R, C] tensor, 128 output rows per tile, the last masked
    B, R, C = data.shape
    out = nl.ndarray((B, total, C), dtype=data.dtype, buffer=nl.shared_hbm)
    i_f = nl.arange(C)[None, :]
    for b in nl.affine_range(B):
        for t in nl.affine_range((total + 127) // 128):
            j = t * 128 + nl.arange(128)[:, None]
            pos = nisa.iota(j, dtype=nl.int32)
            rows = nl.mod(nl.multiply(pos, 3, dtype=nl.int32), k, dtype=nl.int32)
            valid = j < total
            tile = nl.load(data[b, rows, i_f], mask=valid)
            nl.store(out[b, j, i_f], value=tile, mask=valid)
    return out
"""


@pytest.fixture
def path(tmp_path):
    return write(tmp_path, KERNELS)


def test_nki_example_gather_with_iota_indices(path):
    data = np.random.default_rng(0).random((128, 512)).astype(np.float32)
    got = nkirun.simulate(nkirun_kernel(path, "from_iota"))(data)
    np.testing.assert_array_equal(got, data[2 * np.arange(64)])


@pytest.mark.parametrize("n", [1, 37, 128])
def test_gather_with_indices_loaded_from_hbm(path, n):
    rng = np.random.default_rng(n)
    data = rng.standard_normal((200, 24)).astype(np.float32)
    rows = rng.integers(0, 200, n).astype(np.int32)
    got = nkirun.simulate(nkirun_kernel(path, "from_hbm"))(data, rows)
    np.testing.assert_array_equal(got, data[rows])


def test_scatter_writes_each_partition_to_its_row(path):
    rng = np.random.default_rng(2)
    src = rng.standard_normal((16, 8)).astype(np.float32)
    rows = rng.permutation(40)[:16].astype(np.int32).reshape(16, 1)
    got = nkirun.simulate(nkirun_kernel(path, "scatter"))(src, rows, n_out=40)
    want = np.zeros((40, 8), np.float32)
    want[rows[:, 0]] = src
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("total", [5, 128, 300])
def test_indices_computed_in_the_kernel_with_a_masked_tail(path, total):
    rng = np.random.default_rng(total)
    data = rng.standard_normal((2, 9, 5)).astype(np.float32)
    got = nkirun.simulate(nkirun_kernel(path, "computed"))(data, total=total)
    rows = (3 * np.arange(total)) % 7
    np.testing.assert_array_equal(got, data[:, rows, :])


def test_an_index_outside_the_tensor_is_e093_at_the_load(path):
    data = np.ones((10, 4), np.float32)
    with pytest.raises(NkirunError) as e:
        nkirun.simulate(nkirun_kernel(path, "from_hbm"))(data, np.array([1, 12], np.int32))
    d = e.value.diagnostics[0]
    assert d.code == "E093" and "index 12" in d.message
    assert "nl.load(data[idx" in open(path).read().splitlines()[d.loc.line - 1]


def test_an_index_tile_that_is_no_integer_column_is_e607(tmp_path):
    path = write(tmp_path, HEAD + """
@nki.jit
def bad(data):
    out = nl.ndarray([4, 8], dtype=data.dtype, buffer=nl.shared_hbm)
    idx = nl.zeros((4, 1), dtype=nl.float32)
    i_f = nl.arange(8)[None, :]
    nl.store(out, value=nl.load(data[idx, i_f]))
    return out
""")
    with pytest.raises(NkirunError) as e:
        nkirun.check(nkirun_kernel(path, "bad"), np.ones((10, 8), np.float32))
    d = e.value.diagnostics[0]
    assert d.code == "E607" and "integer" in d.message


def test_convert_keeps_the_gather(path, tmp_path):
    rng = np.random.default_rng(9)
    data = rng.standard_normal((2, 9, 5)).astype(np.float32)
    k = nkirun_kernel(path, "computed")
    prog = nkirun.trace(k, data, total=130)
    text = prog.to_text()
    assert "vector_offset=" in text and "mask=" not in text  # (a rectangle: narrowed)
    p = tmp_path / "computed.nkis"
    p.write_text(text)
    got = list(nkirun.run(str(p), inputs={"data": data}).values())[0]
    np.testing.assert_array_equal(got, nkirun.simulate(k)(data, total=130))
