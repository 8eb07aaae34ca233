"""The pre-0.2 NKI API (`neuronxcc.nki`) public tutorials are written in: index arrays,
masks, instructions returning their result, assignment into tiles, tile arithmetic,
`nl.par_dim` block buffers (nkirun/source/kernel/legacy.py, tile_ops.py). Each kernel
here is written for this test and compared with NumPy."""
from __future__ import annotations

import numpy as np

import nkirun
from tests.kernel.test_kernel_contract import invoke, nkirun_kernel, write

ROWS = """\
import math
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def scaled_rows(x, w):
    # rows of x scaled by 1/sum(exp(x)) and by w; the last tile is partial (masked)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    ip = nl.arange(128)[:, None]
    jf = nl.arange(x.shape[1])[None, :]
    w_row = nl.load(w.reshape((1, w.shape[0]))[nl.arange(1)[:, None], jf])
    w_all = w_row.broadcast_to((128, w.shape[0]))
    for i in nl.affine_range(math.ceil(x.shape[0] / 128)):
        rows = i * 128 + ip
        t = nl.load(x[rows, jf], mask=(rows < x.shape[0]))
        e = nl.exp(t)                      # reads only the rows the load wrote
        s = nl.sum(e, axis=[1], keepdims=True)
        y = nl.ndarray((128, x.shape[1]), dtype=x.dtype)
        y[...] = t / s * 2.0 - 1.0
        y[...] = nl.multiply(y, w_all, mask=(rows < x.shape[0]))
        nl.store(out[rows, jf], value=y, mask=(rows < x.shape[0]))
    return out
"""


def test_index_arrays_masks_and_tile_arithmetic(tmp_path):
    k = nkirun_kernel(write(tmp_path, ROWS), "scaled_rows")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((200, 96)).astype(np.float32)
    w = rng.standard_normal(96).astype(np.float32)
    want = (x / np.exp(x).sum(1, keepdims=True) * 2.0 - 1.0) * w
    np.testing.assert_allclose(nkirun.simulate(k)(x, w), want, rtol=1e-5, atol=1e-6)


MATMUL = """\
from neuronxcc import nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def mm(aT, b):
    K, M = aT.shape
    _, N = b.shape
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    ik, im, jn = nl.mgrid[0:128, 0:M, 0:N]
    acc = nl.zeros((nl.par_dim(M), N), dtype=nl.float32, buffer=nl.psum)
    tiles = nl.ndarray((K // 128, nl.par_dim(128), M), dtype=aT.dtype, buffer=nl.sbuf)
    for k in nl.affine_range(K // 128):
        tiles[k] = nl.load(aT[k * 128 + ik[:, :, 0], im[:, :, 0]])
        rhs = nl.load(b[k * 128 + ik[:, 0, :], jn[:, 0, :]])
        acc += nisa.nc_matmul(tiles[k], rhs)          # accumulates in PSUM
    res = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.sbuf)
    res[...] = nisa.tensor_copy(acc)                   # written straight into res
    again = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
    again[...] = nisa.nc_matmul(tiles[0], nl.load(b[ik[:, 0, :], jn[:, 0, :]]))
    again[...] = nisa.nc_matmul(tiles[1], nl.load(b[128 + ik[:, 0, :], jn[:, 0, :]]))
    res[...] = nl.add(res, again)                      # `=`: the second matmul overwrote
    nl.store(out, value=res)
    return out
"""


def test_returning_instructions_assignment_and_psum_accumulation(tmp_path):
    path = write(tmp_path, MATMUL)
    k = nkirun_kernel(path, "mm")
    rng = np.random.default_rng(2)
    aT = rng.standard_normal((256, 64)).astype(np.float32)
    b = rng.standard_normal((256, 32)).astype(np.float32)
    want = aT.T @ b + aT[128:].T @ b[128:]
    np.testing.assert_allclose(nkirun.simulate(k)(aT, b), want, rtol=1e-4, atol=1e-4)
    prog = nkirun.trace(k, aT, b)
    ops = [i.op for i in prog.instructions]
    # assignments of a fresh result write in place: no tensor_copy beyond the one asked for
    assert ops.count("tensor_copy") == 1 and ops.count("nc_matmul") == 4


INNER = """\
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def pool_and_flip(x, size):
    C, H, W = x.shape
    out = nl.ndarray((C, H // size, W // size), dtype=x.dtype, buffer=nl.shared_hbm)
    flipped = nl.ndarray((C, W * H), dtype=x.dtype, buffer=nl.shared_hbm)
    c, h, dh, w, dw = nl.mgrid[0:C, 0:H // size, 0:size, 0:W // size, 0:size]
    t = nl.load(x)
    pooled = nl.max(t[c, size * h + dh, size * w + dw], axis=[2, 4])
    nl.store(out, value=pooled)
    ip = nl.arange(C)[:, None, None]
    i1 = nl.arange(H)[None, :, None]
    i2 = nl.arange(W)[None, None, :]
    flat = t.reshape((C, H * W))
    f = nl.ndarray((C, W * H), dtype=x.dtype)
    f[ip, i2 * H + i1] = nl.copy(flat[ip, i1 * W + i2])   # per-partition transpose
    nl.store(flipped, value=f)
    return out, flipped
"""


def test_mgrid_views_reduce_inner_axes_and_transpose(tmp_path):
    k = nkirun_kernel(write(tmp_path, INNER), "pool_and_flip")
    x = np.random.default_rng(3).standard_normal((16, 8, 12)).astype(np.float32)
    pooled, flipped = nkirun.simulate(k)(x, size=2)
    np.testing.assert_array_equal(pooled, x.reshape(16, 4, 2, 6, 2).max(axis=(2, 4)))
    np.testing.assert_array_equal(flipped, x.transpose(0, 2, 1).reshape(16, -1))


HELPERS = """\
from neuronxcc import nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.typing as nt

sb = nki.compiler.sbuf.mod_alloc


@nki.compiler.skip_middle_end_transformations
@nki.baremetal(additional_compile_opt="--anything")
def copy_t(x):
    out = nl.ndarray((x.shape[1], x.shape[0]), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    t: nt.tensor[x.shape[1], x.shape[0]] = nl.load_transpose2d(x, dtype=nl.bfloat16)
    u = nl.ndarray(t.shape, dtype=t.dtype, buffer=sb(base_addr=0, num_free_tiles=(2,)))
    for i in nl.sequential_range(1, directives=nki.compiler.no_reorder()):
        u[...] = nl.copy(t)
    nl.store(out, value=u)
    return out
"""


def test_neuronxcc_imports_and_compiler_helpers(tmp_path):
    path = write(tmp_path, HELPERS)
    x = np.arange(64 * 32, dtype=np.float32).reshape(64, 32) / 7
    np.save(tmp_path / "x.npy", x)
    r = invoke("run", f"{path}::copy_t", "--input", f"x={tmp_path / 'x.npy'}",
               "--out", tmp_path / "o")
    assert r.exit_code == 0, r.output
    import ml_dtypes
    got = np.load(tmp_path / "o" / "out0.npy").view(ml_dtypes.bfloat16).astype(np.float32)
    np.testing.assert_array_equal(got, x.T.astype(ml_dtypes.bfloat16).astype(np.float32))


def test_static_cast_outside_a_kernel():
    from nkirun.source.kernel.modules import modules
    nl = modules()["neuronxcc.nki.language"]
    got = nl.static_cast(np.array([1.0, 2.5]), nl.bfloat16)
    assert got.dtype.name == "bfloat16" and got.tolist() == [1.0, 2.5]


CAUSAL = """\
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def causal(x):
    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    xb = nl.ndarray((nl.par_dim(128), 128), dtype=nl.bfloat16)
    xb[...] = nl.load(x)                   # a float32 load into a bfloat16 tile: casts
    wide = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
    wide[...] = nisa.nc_transpose(xb)      # bf16 transpose, then a cast into the fp32 tile
    ip, jf = nl.mgrid[0:128, 0:128]
    res = nl.ndarray((128, 128), dtype=nl.float32)
    res[...] = nisa.affine_select(pred=(16 + ip >= jf), on_true_tile=wide,
                                  on_false_value=nl.fp32.min, dtype=np.float32)
    nl.store(out, value=res)
    return out
"""


def test_affine_select_with_a_predicate_and_transpose_into_another_dtype(tmp_path):
    k = nkirun_kernel(write(tmp_path, CAUSAL), "causal")
    x = (np.arange(128 * 128) % 251).astype(np.float32).reshape(128, 128)  # exact in bf16
    p, f = np.mgrid[0:128, 0:128]
    want = np.where(16 + p >= f, x.T, np.finfo(np.float32).min)
    np.testing.assert_array_equal(nkirun.simulate(k)(x), want)
    ops = [i.op for i in nkirun.trace(k, x).instructions]
    assert "affine_select" in ops and ops.count("nc_transpose") == 1


LOOP = """\
import numpy as np
from neuronxcc import nki
import neuronxcc.nki.language as nl


@nki.jit
def sums(x: nki.tensor, rows: int):
    out = nl.ndarray((rows, 64), dtype=x.dtype, buffer=nl.shared_hbm)
    ip, jf = nl.mgrid[0:128, 0:64]
    acc = nl.ndarray((128, 64), dtype=x.dtype)
    for k in nl.affine_range(x.shape[0]):
        t = nl.load(x[k, ip, jf], mask=(ip < rows))
        # a wider mask than the load's: the rows nothing wrote are not computed
        acc[...] = nl.loop_reduce(nl.exp(t, mask=(ip < rows + 10)), op=np.add,
                                  loop_indices=[k])
    nl.store(out[ip, jf], value=acc, mask=(ip < rows))
    return out
"""


def test_loop_reduce_and_masks_narrowed_to_written_rows(tmp_path):
    k = nkirun_kernel(write(tmp_path, LOOP), "sums")
    x = np.random.default_rng(4).standard_normal((3, 128, 64)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    r = invoke("run", f"{tmp_path / 'k.py'}::sums", "--input", f"x={tmp_path / 'x.npy'}",
               "--arg", "rows=128", "--out", tmp_path / "o")
    assert r.exit_code == 0, r.output
    np.testing.assert_allclose(np.load(tmp_path / "o" / "out0.npy"), np.exp(x).sum(0),
                               rtol=1e-5)
    np.testing.assert_allclose(nkirun.simulate(k)(x, rows=100), np.exp(x).sum(0)[:100],
                               rtol=1e-5)
    ops = [i.op for i in nkirun.trace(k, x, rows=100).instructions]
    assert ops.count("tensor_copy") == 1 and ops.count("tensor_tensor") == 2


LAUNCH = """\
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def add_tile(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    ip = nl.program_id(0) * 128 + nl.arange(128)[:, None]
    jf = nl.program_id(1) * 64 + nl.arange(64)[None, :]
    nl.store(out[ip, jf], value=nl.load(a[ip, jf]) + nl.load(b[ip, jf]))
    return out


def add(a, b):  # a launcher: the grid spans two cores on its first dim
    return add_tile[nl.spmd_dim(a.shape[0] // 256, nl.nc(2)), a.shape[1] // 64](a, b)
"""


def test_a_launcher_traces_every_program_instance(tmp_path):
    path = write(tmp_path, LAUNCH)
    rng = np.random.default_rng(6)
    a, b = (rng.standard_normal((512, 192)).astype(np.float32) for _ in range(2))
    for name, arr in (("a", a), ("b", b)):
        np.save(tmp_path / f"{name}.npy", arr)
    r = invoke("run", f"{path}::add", "--input", f"a={tmp_path / 'a.npy'}",
               "--input", f"b={tmp_path / 'b.npy'}", "--out", tmp_path / "o")
    assert r.exit_code == 0, r.output
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "out0.npy"), a + b)


IOTA = """\
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def positions(x):
    out = nl.ndarray((64, 32), dtype=nl.float32, buffer=nl.shared_hbm)
    ip, jf = nl.mgrid[0:64, 0:32]
    pos = nisa.iota(5 + ip * 32 - jf * 2, dtype=nl.float32)
    nl.store(out, value=pos + nl.load(x))
    return out
"""


def test_iota_of_an_index_expression(tmp_path):
    k = nkirun_kernel(write(tmp_path, IOTA), "positions")
    x = np.ones((64, 32), dtype=np.float32)
    p, f = np.mgrid[0:64, 0:32]
    np.testing.assert_array_equal(nkirun.simulate(k)(x), 5 + p * 32 - f * 2 + 1)


def test_load_transpose2d_is_a_dma_transpose(tmp_path):
    k = nkirun_kernel(write(tmp_path, """\
        import neuronxcc.nki as nki
        import neuronxcc.nki.language as nl

        @nki.jit
        def flip(x):
            out = nl.ndarray((x.shape[1], x.shape[0]), dtype=x.dtype, buffer=nl.shared_hbm)
            nl.store(out, value=nl.load_transpose2d(x))
            return out
        """), "flip")
    import ml_dtypes
    x = (np.arange(16 * 96) % 200).astype(ml_dtypes.bfloat16).reshape(16, 96)
    np.testing.assert_array_equal(nkirun.simulate(k)(x), x.T)
    assert "dma_transpose" in [i.op for i in nkirun.trace(k, x).instructions]
