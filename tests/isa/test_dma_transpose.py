"""dma_transpose against the NKI 0.6 page's permutation rule (2-D [1,0], 3-D [2,1,0],
4-D [3,1,2,0]), written out element by element, and its DMA rules."""
import itertools

import numpy as np
import pytest
from prog_helpers import (NP_TYPES, assert_bits_equal, codes, out, random_floats,
                          reported_at, run_program, sbuf, write_program)

from nkirun.isa import REGISTRY


def ref_transpose(src):
    """dst[idx permuted] = src[idx], index by index (no np.transpose)."""
    perm = {2: (1, 0), 3: (2, 1, 0), 4: (3, 1, 2, 0)}[src.ndim]
    dst = np.empty(tuple(src.shape[a] for a in perm), src.dtype)
    for idx in itertools.product(*map(range, src.shape)):
        dst[tuple(idx[a] for a in perm)] = src[idx]
    return dst


def _run(tmp_path, src, src_buffer="hbm", extra=None, dst_dtype=None):
    want = ref_transpose(src)
    args = {"dst": "d", "src": "s", **(extra or {})}
    got = run_program(tmp_path, {"s": sbuf(src, buffer=src_buffer),
                                 "d": out(want.shape, dst_dtype or src.dtype.name)},
                      [{"dma_transpose": args}])["d"]
    return got, want


@pytest.mark.parametrize("shape", [(16, 128), (1, 5), (37, 3), (128, 128), (5, 1)])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32", "int16"])
@pytest.mark.parametrize("buffer", ["hbm", "sbuf"])
def test_2d_matches_reference(tmp_path, shape, dtype, buffer):
    rng = np.random.default_rng(sum(shape))
    if dtype == "int16":
        src = rng.integers(-2**15, 2**15, shape).astype(np.int16)
    else:
        src = random_floats(rng, shape).astype(NP_TYPES[dtype])
    got, want = _run(tmp_path, src, buffer)
    assert_bits_equal(got, want)


@pytest.mark.parametrize("shape", [(2, 3, 4), (16, 1, 128), (4, 8, 2)])
def test_3d_reverses_the_axes(tmp_path, shape):
    src = np.arange(np.prod(shape), dtype=np.float32).reshape(shape).astype(NP_TYPES["bfloat16"])
    got, want = _run(tmp_path, src, "hbm", {"axes": [2, 1, 0]})
    assert_bits_equal(got, want)


@pytest.mark.parametrize("buffer", ["hbm", "sbuf"])
def test_4d_permutation_3120(tmp_path, buffer):
    src = np.arange(2 * 3 * 4 * 5, dtype=np.float16).reshape(2, 3, 4, 5)
    got, want = _run(tmp_path, src, buffer)
    assert got.shape == (5, 3, 4, 2)
    assert_bits_equal(got, want)


def test_nan_payloads_survive(tmp_path):
    bits = np.array([[0x7FC1, 0xFF80], [0x7F80, 0x8000]], np.uint16)
    src = bits.view(NP_TYPES["bfloat16"])
    got, want = _run(tmp_path, src)
    assert_bits_equal(got, want)


def test_hwdge_on_trn2_same_values(tmp_path):
    src = np.arange(16 * 128, dtype=np.float16).reshape(16, 128)
    got, want = _run(tmp_path, src, extra={"dge_mode": "nisa.dge_mode.hwdge"})
    assert_bits_equal(got, want)


def test_view_of_a_larger_tensor(tmp_path):
    big = np.arange(8 * 20, dtype=np.float32).reshape(8, 20)
    got = run_program(tmp_path, {"s": sbuf(big, buffer="hbm"), "d": out((5, 8), "float32")},
                      [{"dma_transpose": {"dst": "d", "src": "s[:, 10:15]"}}])["d"]
    np.testing.assert_array_equal(got, big[:, 10:15].T)


def test_spec_example_checks_and_runs(tmp_path):
    import yaml
    entry = yaml.safe_load(REGISTRY["dma_transpose"].example)[0]
    k = np.arange(64 * 32, dtype=np.float32).reshape(64, 32).astype(NP_TYPES["bfloat16"])
    got = run_program(tmp_path, {"k_hbm": sbuf(k, buffer="hbm"), "kT": out((32, 64), "bfloat16")},
                      [entry])["kT"]
    assert_bits_equal(got, k.T.copy())


# ---- rules ----------------------------------------------------------------------------------
def _codes(tmp_path, src_shape, dst_shape, dtype="bfloat16", dst_dtype=None, src_buffer="hbm",
           target=None, **kw):
    tensors = {"s": sbuf(np.zeros(src_shape), dtype, buffer=src_buffer),
               "d": out(dst_shape, dst_dtype or dtype)}
    path = write_program(tmp_path, tensors, [{"dma_transpose": {"dst": "d", "src": "s", **kw}}])
    if target:
        text = open(path).read().replace("version: 1", f"version: 1\ntarget: {target}", 1)
        open(path, "w").write(text)
    from nkirun.api import check_program
    return codes(check_program(path).diagnostics)


def test_rank_axes_shape_dtype_rules(tmp_path):
    assert "E432" in _codes(tmp_path, (4, 6), (4, 6))
    assert "E432" in _codes(tmp_path, (2, 3, 4), (4, 6))  # rank must match (NKI 0.5.0)
    assert "E431" in _codes(tmp_path, (2, 3, 4), (4, 3, 2), axes=[1, 0])
    assert "E431" in _codes(tmp_path, (2, 3, 4, 5), (5, 4, 3, 2), axes=[3, 2, 1, 0])
    assert "E433" in _codes(tmp_path, (4, 6), (6, 4), dst_dtype="float16")
    assert "E434" in _codes(tmp_path, (4, 6), (6, 4), dtype="float8_e4m3")
    assert "E434" not in _codes(tmp_path, (4, 6), (6, 4), dtype="float32")
    assert "E430" in _codes(tmp_path, (2, 2, 2, 2, 2), (2, 2, 2, 2, 2))


def test_dst_must_be_sbuf(tmp_path):
    path = write_program(tmp_path, {"s": sbuf(np.zeros((4, 6)), "bfloat16"),
                                    "d": out((6, 4), "bfloat16", buffer="hbm")},
                         [{"dma_transpose": {"dst": "d", "src": "s"}}])
    reported_at(path, "E040", "dst")


def test_indirect_modes_refused(tmp_path):
    assert "E435" in _codes(tmp_path, (4, 6), (6, 4), dge_mode="swdge")
    assert "E435" in _codes(tmp_path, (4, 6), (6, 4), oob_mode="skip")


def test_hwdge_rules(tmp_path):
    ok = _codes(tmp_path, (16, 128), (128, 16), dge_mode="hwdge")
    assert not [c for c in ok if c.startswith("E")], ok
    assert "E436" in _codes(tmp_path, (16, 128), (128, 16), dge_mode="hwdge", target="trn1")
    assert "E437" in _codes(tmp_path, (8, 128), (128, 8), dge_mode="hwdge")
    assert "E437" in _codes(tmp_path, (16, 129), (129, 16), dge_mode="hwdge")
    assert "E437" in _codes(tmp_path, (3, 16, 4), (4, 16, 3), dge_mode="hwdge")
    assert "E437" not in _codes(tmp_path, (2, 8, 4), (4, 8, 2), dge_mode="hwdge")
    assert "E437" in _codes(tmp_path, (2, 4, 4), (4, 4, 2), dge_mode="hwdge")
    assert "E434" in _codes(tmp_path, (16, 8), (8, 16), dtype="float32", dge_mode="hwdge")


def test_priority_needs_nc_v4(tmp_path):
    assert "E396" in _codes(tmp_path, (4, 6), (6, 4), priority=7)
    assert "E397" in _codes(tmp_path, (4, 6), (6, 4), priority=1)


def test_cost_sbuf_source_is_slower_than_hbm():
    from types import SimpleNamespace

    spec = REGISTRY["dma_transpose"]

    def bound(on_chip):
        src = SimpleNamespace(decl=SimpleNamespace(on_chip=on_chip), size=128 * 512,
                              dtype=SimpleNamespace(itemsize=2))
        return {"src": src}
    # the engines stream the bytes / the transpose efficiency: 90 % from HBM, 50 % SBUF->SBUF
    nbytes = 128 * 512 * 2
    assert spec.dma_bytes(bound(False)) == pytest.approx(nbytes / 0.9)
    assert spec.dma_bytes(bound(True)) == pytest.approx(nbytes / 0.5)


# the example's tensors for the registry-wide tests (tests/spec_examples.py)
EXAMPLE_TENSORS = {
    "k_hbm": "{buffer: hbm, shape: [64, 128], dtype: float32, fill: 1}",
    "kT": "{buffer: sbuf, shape: [128, 64], dtype: float32, output: true}"}
