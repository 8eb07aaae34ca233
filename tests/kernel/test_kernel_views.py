"""Views a kernel makes (NKI 0.6 NkiTensor methods) reach the instructions with their
meaning: checked against NumPy's own views of the same data."""
from __future__ import annotations

import numpy as np

import nkirun
from tests.kernel.test_kernel_contract import nkirun_kernel, write

VIEWS = """\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def views(x, row, table, idx):
    P, F = x.shape
    t = nl.ndarray((P, 2, F // 2), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t.reshape((P, F)), src=x)                # whole-tile reshape
    swapped = nl.ndarray((P, F // 2, 2), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=swapped, src=t.permute((0, 2, 1)))     # permuted free dims
    col = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=col, op=nl.maximum, data=x_tile(x), axis=1)
    spread = nl.ndarray((P, 8), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=spread, src=col.ap([[1, P], [0, 8]]))  # zero step: free broadcast
    rows = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=rows, src=row.ap([[0, P], [1, F]]))      # HBM row to every partition
    bits = nl.ndarray((P, F), dtype=nl.int32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=bits, src=rows.view(nl.int32))        # reinterpreted dtype
    ix = nl.ndarray((P, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=ix, src=idx)
    gathered = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=gathered, src=table.ap([[F, P], [1, F]], vector_offset=ix, indirect_dim=0))
    outs = []
    for tile in (swapped, spread, rows, bits, gathered):
        o = nl.ndarray(tile.shape, dtype=tile.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=o, src=tile)
        outs.append(o)
    return tuple(outs)


def x_tile(x):
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    return t
"""


def test_views_match_numpy(tmp_path):
    k = nkirun_kernel(write(tmp_path, VIEWS), "views")
    rng = np.random.default_rng(3)
    x = rng.standard_normal((128, 16)).astype(np.float32)
    row = rng.standard_normal((1, 16)).astype(np.float32)
    table = rng.standard_normal((300, 16)).astype(np.float32)
    idx = rng.integers(0, 300, (128, 1)).astype(np.int32)
    swapped, spread, rows, bits, gathered = nkirun.simulate(k)(x, row, table, idx)
    np.testing.assert_array_equal(swapped, x.reshape(128, 2, 8).transpose(0, 2, 1))
    np.testing.assert_array_equal(spread, np.repeat(x.max(axis=1, keepdims=True), 8, axis=1))
    np.testing.assert_array_equal(rows, np.repeat(row, 128, axis=0))
    np.testing.assert_array_equal(bits, np.repeat(row, 128, axis=0).view(np.int32))
    np.testing.assert_array_equal(gathered, table[idx[:, 0]])


def test_view_methods_in_the_ir(tmp_path):
    prog = nkirun.trace(nkirun_kernel(write(tmp_path, VIEWS), "views"),
                        nkirun.shape("float32", 128, 16), nkirun.shape("float32", 1, 16),
                        nkirun.shape("float32", 300, 16), nkirun.shape("int32", 128, 1))
    texts = [str(v) for i in prog.instructions for v in i.args.values()
             if type(v).__name__ == "View"]
    assert "t.ap([[16,128],[1,16]])" in texts  # the reshape (a whole-tile view)
    assert "col.ap([[1,128],[0,8]])" in texts
    assert any(s.startswith("table.ap([[16,128],[1,16]]") and "vector_offset=ix" in s
               for s in texts)


def test_views_convert_to_a_program_with_the_same_results(tmp_path):
    from click.testing import CliRunner
    from nkirun.cli import cli
    path = write(tmp_path, VIEWS)
    rng = np.random.default_rng(4)
    arrays = {"x": rng.standard_normal((128, 16)).astype(np.float32),
              "row": rng.standard_normal((1, 16)).astype(np.float32),
              "table": rng.standard_normal((300, 16)).astype(np.float32),
              "idx": rng.integers(0, 300, (128, 1)).astype(np.int32)}
    cmd = ["convert", f"{path}::views", "--to", "text", "-o", str(tmp_path / "v.nkis")]
    for name, a in arrays.items():
        np.save(tmp_path / f"{name}.npy", a)
        cmd += ["--input", f"{name}={tmp_path / name}.npy"]
    r = CliRunner().invoke(cli, cmd)
    assert r.exit_code == 0, r.output
    outs = list(nkirun.run(str(tmp_path / "v.nkis")).values())
    want = nkirun.simulate(nkirun_kernel(path, "views"))(**arrays)
    for got, w in zip(outs, want):
        np.testing.assert_array_equal(got, w)


def test_hbm_integer_indexing_keeps_one_dim(tmp_path):
    k = nkirun_kernel(write(tmp_path, """\
        import nki
        import nki.isa as nisa
        import nki.language as nl

        @nki.jit
        def pick(x):
            assert x[3].shape == (5,) and x[3, 4].shape == (1,) and x[1:3, 2].shape == (2,)
            t = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=x[3, 4])
            assert t[:, 0].shape == (1, 1) and t[0].shape == (1, 1)
            out = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.shared_hbm)
            nisa.dma_copy(dst=out, src=t)
            return out
        """), "pick")
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    assert nkirun.simulate(k)(x)[0, 0] == 19.0


BASE = """\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def base(w):
    assert w.base_tensor is w                       # a parameter is its own base tensor
    rows = w[2:4]                                   # a view: its base is the whole of w
    whole = rows.base_tensor
    assert whole.shape == w.shape and whole.dtype == w.dtype
    assert w.view(nl.int32).base_tensor.dtype == w.dtype
    t = nl.ndarray(w.shape, dtype=whole.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=whole)
    o = nl.ndarray(w.shape, dtype=w.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=o, src=t.base_tensor)
    return o
"""


def test_base_tensor_is_the_tensor_a_view_was_cut_from(tmp_path):
    """`base_tensor` is not among NkiTensor's documented attributes, but nki-library reads
    it of kernel parameters (core/moe/moe_tkg: `weight.base_tensor.dtype`)."""
    w = np.arange(8 * 6, dtype=np.float32).reshape(8, 6)
    k = nkirun_kernel(write(tmp_path, BASE), "base")
    np.testing.assert_array_equal(nkirun.simulate(k)(w), w)
