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


DROPOUT = """\
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def drop(x, rate):
    out = nl.ndarray((3,) + x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out[0], nl.dropout(t, rate))
    nl.store(out[1], nl.dropout(t, 0.0, dtype=nl.float32))   # casting: dropout, then a copy
    nl.store(out[2], nl.dropout(t, 1.0))
    return out
"""


def test_nl_dropout_is_nisa_dropout(tmp_path):
    k = nkirun_kernel(write(tmp_path, DROPOUT), "drop")
    x = (np.random.default_rng(1).random((64, 256)) + 1).astype(np.float16)
    got = nkirun.simulate(k)(x, rate=0.25)
    kept = got[0] != 0
    np.testing.assert_array_equal(got[0][kept], x.astype(np.float32)[kept])  # no rescaling
    assert 0.2 < 1 - kept.mean() < 0.3
    np.testing.assert_array_equal(got[1], x.astype(np.float32))
    np.testing.assert_array_equal(got[2], 0)
    ops = [i.op for i in nkirun.trace(k, x, rate=0.25).instructions]
    assert ops.count("dropout") == 3 and ops.count("tensor_copy") == 1


MASKED_CAST_TRANSPOSE = """\
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def maybe_transpose(x, flag):
    out = nl.ndarray((x.shape[1], x.shape[0]), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)                                                  # float16
    acc = nl.zeros((nl.par_dim(x.shape[1]), x.shape[0]), dtype=nl.float32, buffer=nl.psum)
    # a float16 transpose into a float32 PSUM tile: its own tile, then a copy; a false
    # mask drops both (acc keeps its zeros)
    acc[...] = nisa.nc_transpose(t, mask=flag)
    res = nl.copy(acc)
    nl.store(out, res)
    return out
"""


def test_a_masked_result_copied_into_another_dtype_keeps_the_mask(tmp_path):
    k = nkirun_kernel(write(tmp_path, MASKED_CAST_TRANSPOSE), "maybe_transpose")
    x = np.random.default_rng(2).standard_normal((64, 32)).astype(np.float16)
    np.testing.assert_array_equal(nkirun.simulate(k)(x, flag=True), x.T.astype(np.float32))
    np.testing.assert_array_equal(nkirun.simulate(k)(x, flag=False), 0)


PARTIAL_TRANSPOSE = """\
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def rows_transposed(x, rows):
    # x: (P, F) with only its first `rows` rows loaded; the transpose's valid columns
    # are those rows
    P, F = x.shape
    out = nl.ndarray((F, rows), dtype=x.dtype, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:P, 0:F]
    t = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    t[...] = nl.load(x[i_p, i_f], mask=(i_p < rows))
    tT = nl.copy(nisa.nc_transpose(t))
    nl.store(out, value=tT[:, 0:rows])
    return out
"""


def test_a_partly_written_tile_transposes_to_its_written_columns(tmp_path):
    k = nkirun_kernel(write(tmp_path, PARTIAL_TRANSPOSE), "rows_transposed")
    rng = np.random.default_rng(3)
    for P, F, rows in ((128, 128, 50), (96, 64, 37), (64, 128, 64)):
        x = rng.standard_normal((P, F)).astype(np.float32)
        np.testing.assert_array_equal(nkirun.simulate(k)(x, rows=rows), x[:rows].T)


BROADCASTS = """\
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def broadcasts(a, row, one, col):
    # NKI's broadcasting in nl arithmetic: a (1, F) row and a (1, 1) element across the
    # partitions, a (P, 1) column along the free dim, both at once
    out = nl.ndarray((4,) + a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    r = nl.load(row)
    e = nl.load(one)
    c = nl.load(col)
    nl.store(out[0], nl.add(t, r))
    nl.store(out[1], nl.subtract(e, t))
    nl.store(out[2], nl.multiply(c, r))
    s = nl.load(a)
    s += r
    nl.store(out[3], s)
    return out
"""


def test_nl_arithmetic_broadcasts_rows_elements_and_columns(tmp_path):
    k = nkirun_kernel(write(tmp_path, BROADCASTS), "broadcasts")
    rng = np.random.default_rng(4)
    a = rng.standard_normal((37, 20)).astype(np.float32)
    row, one = rng.standard_normal((1, 20)).astype(np.float32), np.float32([[2.5]])
    col = rng.standard_normal((37, 1)).astype(np.float32)
    got = nkirun.simulate(k)(a, row, one, col)
    np.testing.assert_array_equal(got, np.stack([a + row, one - a, col * row, a + row]))


RETURNED_RESULTS = """\
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def returned(x):
    # pre-0.2 instructions returning their result: its shape and dtype
    P, F = x.shape
    top = nl.ndarray((P, 8), dtype=nl.float32, buffer=nl.shared_hbm)
    replaced = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.shared_hbm)
    where = nl.ndarray((P, 8), dtype=nl.uint32, buffer=nl.shared_hbm)
    xT = nl.ndarray((F, P), dtype=x.dtype, buffer=nl.shared_hbm)
    fill = nl.ndarray((P, 8), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x[nl.mgrid[0:P, 0:F]])               # indexed with the grid object
    m = nisa.max8(src=t)                              # (P, 8)
    idx = nl.ndarray((P, 8), dtype=nl.uint32)
    out = nisa.nc_match_replace8(dst_idx=idx, data=t, vals=m, imm=-1.0)  # t's dtype
    nl.store(top, m)
    nl.store(replaced, out)
    nl.store(where, idx)
    nl.store(xT, nisa.dma_transpose(t))               # (F, P)
    nl.store(fill, nisa.memset(shape=(P, 8), value=0.5, dtype=nl.float32))
    return top, replaced, where, xT, fill
"""


def test_pre02_results_take_their_documented_shapes_and_dtypes(tmp_path):
    k = nkirun_kernel(write(tmp_path, RETURNED_RESULTS), "returned")
    x = np.random.default_rng(5).permutation(64 * 48).reshape(64, 48).astype(np.float32)
    top, replaced, where, xT, fill = nkirun.simulate(k)(x)
    order = np.argsort(-x, axis=1)[:, :8]
    np.testing.assert_array_equal(top, np.take_along_axis(x, order, 1))
    np.testing.assert_array_equal(where, order)
    want = x.copy()
    np.put_along_axis(want, order, -1.0, 1)
    np.testing.assert_array_equal(replaced, want)
    np.testing.assert_array_equal(xT, x.T)
    np.testing.assert_array_equal(fill, 0.5)


BOOL_MASK = """\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def keep_where(mask, x):
    # a boolean mask (nl.bool_, one byte per element) selects x, else 0
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    m = nl.ndarray(mask.shape, dtype=mask.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=m, src=mask)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    r = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.memset(dst=r, value=0.0)
    nisa.tensor_copy_predicated(dst=r, src=t, predicate=m)
    nisa.dma_copy(dst=out, src=r)
    return out
"""


def test_boolean_arrays_are_byte_tensors_in_the_api_and_on_the_command_line(tmp_path):
    from tests.kernel.test_kernel_contract import invoke
    path = write(tmp_path, BOOL_MASK)
    rng = np.random.default_rng(6)
    x = rng.standard_normal((32, 40)).astype(np.float32)
    mask = x > 0.3
    want = np.where(mask, x, 0).astype(np.float32)
    np.testing.assert_array_equal(nkirun.simulate(nkirun_kernel(path, "keep_where"))(mask, x),
                                  want)
    np.save(tmp_path / "m.npy", mask)
    np.save(tmp_path / "x.npy", x)
    r = invoke("run", f"{path}::keep_where", "--input", f"mask={tmp_path / 'm.npy'}",
               "--input", f"x={tmp_path / 'x.npy'}", "--out", tmp_path / "o")
    assert r.exit_code == 0, r.output
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "out0.npy"), want)


HBM_PAR_DIM = """\
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def per_block_exp(a):
    # nl.par_dim in an HBM shape: HBM has no partitions, so out is one (B, N, M) tensor
    B, N, M = a.shape
    tiles = nl.ndarray((B, nl.par_dim(N), M), dtype=a.dtype, buffer=nl.sbuf)
    out = nl.ndarray((B, nl.par_dim(N), M), dtype=a.dtype, buffer=nl.shared_hbm)
    for b in nl.affine_range(B):
        tiles[b] = nl.load(a[b])
        nl.store(out[b], value=nl.exp(tiles[b]))
    return out
"""


def test_par_dim_in_an_hbm_shape_is_one_tensor(tmp_path):
    k = nkirun_kernel(write(tmp_path, HBM_PAR_DIM), "per_block_exp")
    a = np.random.default_rng(7).standard_normal((3, 64, 16)).astype(np.float32)
    np.testing.assert_allclose(nkirun.simulate(k)(a), np.exp(a), rtol=2e-6)


SEQUENCE_BOUNDS = """\
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def bounds(ids):
    out = nl.ndarray((1, 2, ids.shape[1]), dtype=ids.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nisa.sequence_bounds(segment_ids=nl.load(ids)))  # (1, 2, n)
    return out
"""


def _segment_bounds(ids):
    n = ids.size
    start, end = np.full(n, n), np.full(n, -1)
    for i, v in enumerate(ids):
        if v != 0:
            j = i
            while j > 0 and ids[j - 1] == v:
                j -= 1
            k = i
            while k + 1 < n and ids[k + 1] == v:
                k += 1
            start[i], end[i] = j, k + 1
    return np.stack([start, end])[None]


def test_pre02_sequence_bounds_returns_starts_and_ends(tmp_path):
    k = nkirun_kernel(write(tmp_path, SEQUENCE_BOUNDS), "bounds")
    ids = np.array([[0, 4, 4, 1, 1, 1, 0, 0, 2, 5, 5]], np.int32)
    np.testing.assert_array_equal(nkirun.simulate(k)(ids), _segment_bounds(ids[0]))


STORE_NUMBER = """\
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def fill(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, 7)          # a number stored: every element 7
    return out
"""


def test_storing_a_number_fills_the_tensor(tmp_path):
    k = nkirun_kernel(write(tmp_path, STORE_NUMBER), "fill")
    x = np.zeros((48, 9), np.int32)
    np.testing.assert_array_equal(nkirun.simulate(k)(x), np.full((48, 9), 7, np.int32))


POSITIONAL_PRE02 = """\
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def replace_top8(x):
    # pre-0.2 positional call (data, vals, imm, dst_idx): four positional arguments
    # starting with a tile, which is no dst here (`vals` would get the number -1.0)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    m = nisa.max8(t)
    idx = nl.ndarray((x.shape[0], 8), dtype=nl.uint32)
    nl.store(out, nisa.nc_match_replace8(t, m, -1.0, idx))
    return out
"""


def test_pre02_positional_call_is_not_read_as_a_dst_first_call(tmp_path):
    k = nkirun_kernel(write(tmp_path, POSITIONAL_PRE02), "replace_top8")
    x = np.random.default_rng(8).permutation(16 * 40).reshape(16, 40).astype(np.float32)
    want = x.copy()
    np.put_along_axis(want, np.argsort(-x, axis=1)[:, :8], -1.0, 1)
    np.testing.assert_array_equal(nkirun.simulate(k)(x), want)


GATHER = """\
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import neuronxcc.nki.typing as nt


@nki.jit
def gather_rows(x, idx):
    if not isinstance(x, nt.tensor):           # the kernel's own type check
        raise TypeError("x must be a tensor")
    out = nl.ndarray(idx.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    pad = nl.ndarray((x.shape[0], 4), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    i = nl.load(idx)
    nl.store(out, nl.gather_flattened(t, i, dtype=nl.float32))   # nc_n_gather, then a cast
    nl.store(pad, nisa.memset((x.shape[0], 4), -2.0, x.dtype))   # pre-0.2 positional memset
    return out, pad
"""


def test_gather_flattened_tensor_isinstance_and_positional_memset(tmp_path):
    k = nkirun_kernel(write(tmp_path, GATHER), "gather_rows")
    rng = np.random.default_rng(9)
    x = rng.standard_normal((24, 3, 10)).astype(np.float16)
    idx = rng.integers(0, 30, (24, 7)).astype(np.uint32)
    got, pad = nkirun.simulate(k)(x, idx)
    np.testing.assert_array_equal(got, np.take_along_axis(x.reshape(24, 30), idx.astype(np.int64),
                                                           1).astype(np.float32))
    np.testing.assert_array_equal(pad, np.full((24, 4), -2.0, np.float16))


LOOP_SCRATCH = """\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def row_sums(x):
    out = nl.ndarray((x.shape[0], 4), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((x.shape[0], 4), dtype=nl.float32, buffer=nl.sbuf)
    for j in nl.affine_range(4):
        t = nl.ndarray((x.shape[0], 32), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[:, j * 32:(j + 1) * 32])
        squares = nl.ndarray((x.shape[0], 32), dtype=nl.float32, buffer=nl.sbuf)  # never read
        nisa.activation_reduce(dst=squares, op=nl.square, data=t, reduce_op=nl.add,
                               reduce_res=acc[:, j:j + 1])
    nisa.dma_copy(dst=out, src=acc)
    return out
"""


def test_a_warning_on_tensors_allocated_in_a_loop_is_shown_once(tmp_path):
    import json
    from tests.kernel.test_kernel_contract import invoke
    path = write(tmp_path, LOOP_SCRATCH)
    r = invoke("check", f"{path}::row_sums", "--shape", "x=float32[64,128]")
    assert r.exit_code == 0, r.output
    # squares, squares_1, ... are one allocation in a loop: one W051, then "3 more"
    assert r.output.count("warning[W051]") == 1
    assert "... and 3 more like this at line 14" in r.output
    r = invoke("check", f"{path}::row_sums", "--shape", "x=float32[64,128]", "--format", "json")
    assert [d["code"] for d in json.loads(r.output)["diagnostics"]].count("W051") == 4


RAND = """\
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def draws():
    # nl.rand: uniform in [0, 1); its max8 and where the max8 values are (uint32 indices)
    vals = nl.ndarray((64, 256), dtype=nl.float32, buffer=nl.shared_hbm)
    where = nl.ndarray((64, 8), dtype=nl.uint32, buffer=nl.shared_hbm)
    r = nl.rand((64, 256))
    top = nisa.max8(src=r)
    nl.store(vals, r)
    nl.store(where, nisa.nc_find_index8(data=r, vals=top))
    return vals, where
"""


def test_nl_rand_is_uniform_in_0_1_and_find_index8_returns_uint32(tmp_path):
    k = nkirun_kernel(write(tmp_path, RAND), "draws")
    vals, where = nkirun.simulate(k)()
    assert vals.min() >= 0 and vals.max() < 1 and abs(vals.mean() - 0.5) < 0.02
    assert len(np.unique(vals)) > 0.99 * vals.size        # 24 random bits per value
    assert np.all(vals * 2 ** 24 == np.floor(vals * 2 ** 24))
    np.testing.assert_array_equal(where, np.argsort(-vals, axis=1, kind="stable")[:, :8])
    ops = [i.op for i in nkirun.trace(k).instructions]
    assert ops.count("rng") == 1


BLOCK_VIEW = """\
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def scale_bytes(x):
    # per block, a float32 column; stored as its four bytes through a dtype view of the blocks
    out = nl.ndarray((2, x.shape[1], 4), dtype=nl.uint8, buffer=nl.shared_hbm)
    cols = nl.ndarray((2, nl.par_dim(x.shape[1]), 1), dtype=nl.float32, buffer=nl.sbuf)
    for b in range(2):
        cols[b] = nl.load(x[b:b + 1, :].reshape((x.shape[1], 1)))
    for b in range(2):
        nl.store(out[b], value=cols.view(nl.uint8)[b, :, :4])
    return out
"""


def test_a_block_buffer_has_a_dtype_view(tmp_path):
    k = nkirun_kernel(write(tmp_path, BLOCK_VIEW), "scale_bytes")
    x = np.random.default_rng(10).standard_normal((2, 40)).astype(np.float32)
    np.testing.assert_array_equal(nkirun.simulate(k)(x), x.reshape(2, 40, 1).view(np.uint8))


def test_a_block_buffer_method_nkirun_lacks_is_a_located_e601(tmp_path):
    from tests.kernel.test_kernel_contract import invoke
    path = write(tmp_path, """\
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def k(x):
    blocks = nl.ndarray((2, nl.par_dim(4), 8), dtype=nl.float32, buffer=nl.sbuf)
    flat = blocks.reshape((2, 32))
    return x
""")
    r = invoke("check", f"{path}::k", "--shape", "x=float32[4,8]")
    assert r.exit_code == 1 and "k.py:8:12: error[E601]" in r.output
    assert "NkiTensor.reshape on a block buffer" in r.output and "Traceback" not in r.output


LAZY_ZEROS = """\
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def blocks(x, rows):
    # 48 float32 PSUM blocks of 512 bytes a partition (24 KiB if all were live at once, PSUM
    # holds 16 KiB): each is overwritten by a transpose before it is read, so its zero fill
    # is never needed. `acc` blocks are accumulated into and partly written: they keep zeros.
    P, F = x.shape
    out = nl.ndarray((48, F, P), dtype=nl.float32, buffer=nl.shared_hbm)
    sums = nl.ndarray((2, P, F), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    tp = nl.zeros((48, nl.par_dim(F), P), dtype=nl.float32, buffer=nl.psum)
    for b in range(48):
        tp[b] = nisa.nc_transpose(t)
        nl.store(out[b], value=nl.copy(tp[b]))
    acc = nl.zeros((2, nl.par_dim(P), F), dtype=nl.float32, buffer=nl.sbuf)
    acc[0] += t
    i_p, i_f = nl.mgrid[0:P, 0:F]
    acc[1] = nl.load(x[i_p, i_f], mask=(i_p < rows))
    nl.store(sums[0], value=acc[0])
    nl.store(sums[1], value=acc[1])
    return out, sums
"""


def test_a_zero_filled_block_buffer_fills_each_block_at_its_first_use(tmp_path):
    k = nkirun_kernel(write(tmp_path, LAZY_ZEROS), "blocks")
    x = np.random.default_rng(11).standard_normal((128, 128)).astype(np.float32)
    out, sums = nkirun.simulate(k)(x, rows=50)
    np.testing.assert_array_equal(out, np.broadcast_to(x.T, (48, 128, 128)))
    np.testing.assert_array_equal(sums[0], x)
    np.testing.assert_array_equal(sums[1], np.where(np.arange(128)[:, None] < 50, x, 0))
    ops = [i.op for i in nkirun.trace(k, x, rows=50).instructions]
    assert ops.count("memset") == 2   # only the two `acc` blocks need their zeros


REPLICA_GROUP = """\
from typing import Optional

import nki
import nki.collectives as ncc
import nki.isa as nisa
import nki.language as nl
from nki.collectives import ReplicaGroup


@nki.jit
def maybe_gather(x, group: Optional[ReplicaGroup] = None):
    # imports ReplicaGroup for its multi-rank path; with one rank it only copies
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    if group is not None:
        ncc.all_gather(dsts=[t], srcs=[t], replica_group=group, collective_dim=1)
    nisa.dma_copy(dst=out, src=t)
    return out
"""


def test_replica_group_imports_and_one_rank_runs_a_group_of_one(tmp_path):
    k = nkirun_kernel(write(tmp_path, REPLICA_GROUP), "maybe_gather")
    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    np.testing.assert_array_equal(nkirun.simulate(k)(x), x)
    from nkirun.source.kernel.collectives import ReplicaGroup  # what the kernel imports
    np.testing.assert_array_equal(nkirun.simulate(k)(x, group=ReplicaGroup([[0]])), x)
    # two ranks gathering into a tile of src's size: the shape rule (E693), at check
    codes = [d.code for d in nkirun.check(k, x, group=ReplicaGroup([[0, 1]]))]
    assert "E693" in codes


PER_LAYER = """\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def layers(x, weights, biases):
    # per-layer parameters passed as lists of tensors (None where a layer has no bias)
    P, F = x.shape
    out = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.shared_hbm)
    cur = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=cur, src=x)
    for w, b in zip(weights, biases):
        wt = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=wt, src=w)
        nisa.tensor_tensor(dst=cur, data1=cur, data2=wt, op=nl.multiply)
        if b is not None:
            bt = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=bt, src=b)
            nisa.tensor_tensor(dst=cur, data1=cur, data2=bt, op=nl.add)
    nisa.dma_copy(dst=out, src=cur)
    return out
"""


def test_lists_of_arrays_are_lists_of_hbm_tensors(tmp_path):
    k = nkirun_kernel(write(tmp_path, PER_LAYER), "layers")
    rng = np.random.default_rng(12)
    x = rng.standard_normal((16, 8)).astype(np.float32)
    ws = [rng.standard_normal((16, 8)).astype(np.float32) for _ in range(3)]
    bs = [rng.standard_normal((16, 8)).astype(np.float32), None, None]
    want = (x * ws[0] + bs[0]) * ws[1] * ws[2]
    np.testing.assert_allclose(nkirun.simulate(k)(x, ws, bs), want, rtol=1e-6)
    prog = nkirun.trace(k, x, ws, tuple(bs))
    assert {"weights_0", "weights_1", "weights_2", "biases_0"} <= set(prog.tensors)
