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


def test_direct_transpose_refuses_the_indirect_forms_modes(tmp_path):
    assert "E435" in _codes(tmp_path, (4, 6), (6, 4), dge_mode="swdge")
    assert "E435" in _codes(tmp_path, (4, 6), (6, 4), oob_mode="skip")


def test_direct_transpose_with_static_descriptors_is_accepted(tmp_path):
    """dge_mode none: nki-library's MLP/norm TKG kernels transpose so on hardware (issue 27)."""
    assert _codes(tmp_path, (4, 6), (6, 4), dge_mode="none") == []


# ---- the indirect (gather) transpose: flat = indices.T.flatten()[:R]; dst = src[flat].T ------
def ref_gather_transpose(table, indices, rows, dst_shape, perm):
    """The page's three lines, with NumPy's fancy indexing, then the permutation index by
    index (ref_transpose)."""
    flat = indices.T.flatten()[:rows]
    gathered = table[flat.astype(np.int64)]
    return ref_transpose(gathered.reshape((rows,) + tuple(dst_shape[a] for a in perm[1:])))


def _indirect(tmp_path, table, indices, rows, pattern, dst_shape, extra=None, dst_init=None,
              target=None):
    tensors = {"h": sbuf(table, buffer="hbm"), "i": sbuf(indices, "uint32"),
               "d": sbuf(dst_init if dst_init is not None else np.zeros(dst_shape),
                         table.dtype.name, output=True)}
    src = f"h.ap({pattern}, vector_offset=i, indirect_dim=0)"
    return write_program(tmp_path, tensors, [{"dma_transpose": {"dst": "d", "src": src,
                                                                 **(extra or {})}}], target=target)


@pytest.mark.parametrize("rows,cols,idx_shape", [(128, 64, (128, 1)), (16, 5, (16, 1)),
                                                 (256, 128, (128, 2)), (48, 3, (128, 1))])
def test_indirect_transpose_matches_the_page(tmp_path, rows, cols, idx_shape):
    from nkirun.api import run
    rng = np.random.default_rng(rows + cols)
    table = random_floats(rng, (300, cols)).astype(NP_TYPES["bfloat16"])
    indices = rng.integers(0, 300, idx_shape).astype(np.uint32)
    path = _indirect(tmp_path, table, indices, rows, f"[[{cols},{rows}],[1,{cols}]]",
                     (cols, rows))
    want = ref_gather_transpose(table, indices, rows, (cols, rows), (1, 0))
    assert_bits_equal(run(path)["d"], want)


def test_indirect_transpose_4d(tmp_path):
    from nkirun.api import run
    rng = np.random.default_rng(4)
    T, d1, d2, d3, rows = 40, 3, 1, 5, 32
    table = random_floats(rng, (T, d1, d2, d3)).astype(np.float16)
    indices = rng.integers(0, T, (32, 1)).astype(np.uint32)
    pattern = f"[[{d1 * d2 * d3},{rows}],[{d2 * d3},{d1}],[{d3},{d2}],[1,{d3}]]"
    path = _indirect(tmp_path, table, indices, rows, pattern, (d3, d1, d2, rows))
    gathered = table[indices[:, 0].astype(np.int64)]
    assert_bits_equal(run(path)["d"], ref_transpose(gathered))


def test_indirect_transpose_oob(tmp_path):
    from nkirun.api import run
    from nkirun.diagnostics import NkirunError
    table = np.arange(20 * 4, dtype=np.float32).reshape(20, 4).astype(NP_TYPES["bfloat16"])
    indices = np.arange(16, dtype=np.uint32).reshape(16, 1)
    indices[3, 0] = 99
    init = np.full((4, 16), -7.0)
    path = _indirect(tmp_path, table, indices, 16, "[[4,16],[1,4]]", (4, 16),
                     {"oob_mode": "skip"}, init)
    got = run(path)["d"]
    safe = np.where(indices[:, 0] < 20, indices[:, 0], 0).astype(np.int64)
    want = table[safe].T.copy()
    want[:, 3] = -7.0
    assert_bits_equal(got, want)
    path = _indirect(tmp_path, table, indices, 16, "[[4,16],[1,4]]", (4, 16))
    with pytest.raises(NkirunError) as e:
        run(path)
    assert e.value.diagnostics[0].code == "E093"


def _indirect_path(tmp_path, rows=16, cols=4, idx_shape=(16, 1), idx_dtype="uint32",
                   dtype="bfloat16", target=None, **extra):
    table = np.zeros((300, cols), np.float32).astype(NP_TYPES[dtype])
    indices = np.zeros(idx_shape, np.dtype(idx_dtype))
    tensors = {"h": sbuf(table, buffer="hbm"), "i": sbuf(indices, idx_dtype),
               "d": out((cols, rows), dtype)}
    src = f"h.ap([[{cols},{rows}],[1,{cols}]], vector_offset=i, indirect_dim=0)"
    return write_program(tmp_path, tensors, [{"dma_transpose": {"dst": "d", "src": src,
                                                                 **extra}}], target=target)


def _indirect_codes(tmp_path, **kw):
    from nkirun.api import check_program
    return codes(check_program(_indirect_path(tmp_path, **kw)).diagnostics)


def test_indirect_transpose_rules(tmp_path):
    assert _indirect_codes(tmp_path) == []
    assert _indirect_codes(tmp_path, dge_mode="swdge", oob_mode="skip") == []
    assert "E435" in _indirect_codes(tmp_path, dge_mode="hwdge")
    assert "E435" in _indirect_codes(tmp_path, dge_mode="none")
    assert "E590" in _indirect_codes(tmp_path, rows=24, idx_shape=(32, 1))  # 24 % 16
    assert "E590" in _indirect_codes(tmp_path, cols=130)
    assert "E590" in _indirect_codes(tmp_path, dtype="float32")
    assert "E591" in _indirect_codes(tmp_path, idx_dtype="int32")
    assert "E591" in _indirect_codes(tmp_path, rows=32, idx_shape=(16, 2))  # 2 cols need 128
    assert "E591" in _indirect_codes(tmp_path, rows=16, idx_shape=(8, 2))  # rows not in [16,128]
    assert "E592" in _indirect_codes(tmp_path, target="trn1")


def test_indirect_transpose_rules_are_located(tmp_path):
    reported_at(_indirect_path(tmp_path, idx_dtype="int16"), "E591", "src")
    reported_at(_indirect_path(tmp_path, dge_mode="hwdge"), "E435", "dge_mode")


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


def test_indirect_transpose_from_a_python_kernel(tmp_path):
    """The page's 2-D-index example in our own words: (128, 2) indices, 256 rows gathered."""
    import nkirun
    from tests.kernel.test_kernel_contract import nkirun_kernel, write
    path = write(tmp_path, """\
        import nki
        import nki.isa as nisa
        import nki.language as nl

        @nki.jit
        def gather_t(table, idx):
            rows, cols = 256, 32
            i_sb = nl.ndarray(idx.shape, dtype=idx.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=i_sb, src=idx)
            d = nl.ndarray((cols, rows), dtype=table.dtype, buffer=nl.sbuf)
            src = table.ap(pattern=[[cols, rows], [1, cols]], vector_offset=i_sb,
                           indirect_dim=0)
            nisa.dma_transpose(dst=d, src=src, axes=(1, 0))
            out = nl.ndarray((cols, rows), dtype=table.dtype, buffer=nl.shared_hbm)
            nisa.dma_copy(dst=out, src=d)
            return out
        """)
    rng = np.random.default_rng(9)
    table = random_floats(rng, (500, 32)).astype(NP_TYPES["bfloat16"])
    idx = rng.integers(0, 500, (128, 2)).astype(np.uint32)
    got = nkirun.simulate(nkirun_kernel(path, "gather_t"))(table, idx)
    assert_bits_equal(got, ref_gather_transpose(table, idx, 256, (32, 256), (1, 0)))
