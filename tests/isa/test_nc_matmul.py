"""nc_matmul: dst = stationary.T @ moving in float32, accumulation, rules and cost."""
import numpy as np
import pytest
from prog_helpers import (NP_TYPES, assert_bits_equal, codes, diagnostics, out, run_program,
                          sbuf, tmp, write_program)

from nkirun.api import cost


def ref_matmul(st, mv):
    """Float32 dot products, one output element at a time (float64 sum, then rounded: the
    inputs are small integers or exact products, so the float32 result is exact)."""
    k = st.shape[0]
    a = st.reshape(k, -1).astype(np.float64)
    b = mv.reshape(k, -1).astype(np.float64)
    res = np.zeros((a.shape[1], b.shape[1]), np.float64)
    for i in range(a.shape[1]):
        for j in range(b.shape[1]):
            res[i, j] = sum(a[t, i] * b[t, j] for t in range(k))
    return res.astype(np.float32)


def ints(rng, shape, dtype):
    # small integers: every product and partial sum is exact in float32, so the order of
    # accumulation does not matter and the comparison can be exact
    return rng.integers(-8, 9, size=shape).astype(NP_TYPES[dtype])


@pytest.mark.parametrize("k,m,n,dtype", [
    (1, 1, 1, "float32"),
    (37, 13, 101, "float32"),
    (128, 128, 512, "bfloat16"),
    (128, 64, 7, "float16"),
    (5, 3, 9, "float8_e4m3"),
])
def test_matrix_exact(tmp_path, k, m, n, dtype):
    rng = np.random.default_rng(k + m + n)
    st, mv = ints(rng, (k, m), dtype), ints(rng, (k, n), dtype)
    got = run_program(tmp_path, {"a": sbuf(st), "b": sbuf(mv), "c": out((m, n), "float32", "psum")},
                      [{"nc_matmul": {"dst": "c", "stationary": "a", "moving": "b"}}])["c"]
    assert_bits_equal(got, ref_matmul(st, mv))


def test_float32_is_float32_matmul(tmp_path):
    # random floats: the result must be NumPy's float32 matmul (not float64 rounded once)
    rng = np.random.default_rng(0)
    st = rng.standard_normal((128, 40)).astype(np.float32)
    mv = rng.standard_normal((128, 33)).astype(np.float32)
    got = run_program(tmp_path, {"a": sbuf(st), "b": sbuf(mv), "c": out((40, 33), "float32", "psum")},
                      [{"nc_matmul": {"dst": "c", "stationary": "a", "moving": "b"}}])["c"]
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, np.matmul(st.T, mv))
    np.testing.assert_allclose(got, st.T.astype(np.float64) @ mv, rtol=1e-5, atol=1e-4)


def test_multidim_free_dims_and_tf32(tmp_path):
    rng = np.random.default_rng(1)
    st = ints(rng, (16, 2, 4), "float32")  # M = 8
    mv = ints(rng, (16, 3, 5), "float32")  # N = 15
    got = run_program(tmp_path, {"a": sbuf(st), "b": sbuf(mv),
                                 "c": out((8, 3, 5), "float32", "psum")},
                      [{"nc_matmul": {"dst": "c", "stationary": "a", "moving": "b"}}])["c"]
    assert_bits_equal(got, ref_matmul(st, mv).reshape(8, 3, 5))


def test_accumulate_chain_over_k(tmp_path):
    # a 256-deep contraction as two 128-deep matmuls accumulating into one PSUM tile
    rng = np.random.default_rng(2)
    st = ints(rng, (256, 64), "bfloat16")
    mv = ints(rng, (256, 200), "bfloat16")
    got = run_program(tmp_path, {
        "a": sbuf(st.reshape(2, 128, 64).transpose(1, 0, 2).copy()),  # [128, 2, 64]
        "b": sbuf(mv.reshape(2, 128, 200).transpose(1, 0, 2).copy()),
        "c": out((64, 200), "float32", "psum")},
        [{"nc_matmul": {"dst": "c", "stationary": "a[:, 0, :]", "moving": "b[:, 0, :]",
                        "accumulate": False}},
         {"nc_matmul": {"dst": "c", "stationary": "a[:, 1, :]", "moving": "b[:, 1, :]",
                        "accumulate": True}}])["c"]
    assert_bits_equal(got, ref_matmul(st, mv))


def test_accumulate_adds_in_float32(tmp_path):
    st = np.ones((1, 1), np.float32)
    mv = np.full((1, 2), 1.0, np.float32)
    prev = np.array([[2.0**24, -0.0]], np.float32)
    got = run_program(tmp_path, {"a": sbuf(st), "b": sbuf(mv),
                                 "c": sbuf(prev, buffer="psum", output=True)},
                      [{"nc_matmul": {"dst": "c", "stationary": "a", "moving": "b",
                                      "accumulate": True}}])["c"]
    assert got.tolist() == [[2.0**24, 1.0]]  # 2^24 + 1 rounds back to 2^24 in float32


def test_overwrite_and_mask(tmp_path):
    rng = np.random.default_rng(4)
    st, mv = ints(rng, (8, 6), "float32"), ints(rng, (8, 10), "float32")
    prev = np.full((6, 10), 5.0, np.float32)
    got = run_program(tmp_path, {"a": sbuf(st), "b": sbuf(mv),
                                 "c": sbuf(prev, buffer="psum", output=True)},
                      [{"nc_matmul": {"dst": "c", "stationary": "a", "moving": "b",
                                      "accumulate": True, "mask": "p >= 2 and f < 4"}}])["c"]
    want = prev.copy()
    want[2:, :4] += ref_matmul(st, mv)[2:, :4]
    assert_bits_equal(got, want)


def test_accumulate_onto_unwritten_psum_is_e050(tmp_path):
    t = {"a": sbuf(np.ones((4, 4), np.float32)), "b": sbuf(np.ones((4, 4), np.float32)),
         "c": out((4, 4), "float32", "psum")}
    diags = diagnostics(tmp_path, t, [{"nc_matmul": {"dst": "c", "stationary": "a",
                                                     "moving": "b", "accumulate": True}}])
    assert codes(diags) == ["E050"]
    ok = diagnostics(tmp_path, t, [{"nc_matmul": {"dst": "c", "stationary": "a",
                                                  "moving": "b", "accumulate": False}}])
    assert codes(ok) == []


@pytest.mark.parametrize("a,b,c,code", [
    (((8, 4), "float32", "sbuf"), ((9, 4), "float32", "sbuf"), ((4, 4), "float32", "psum"), "E270"),
    (((8, 129), "bfloat16", "sbuf"), ((8, 4), "bfloat16", "sbuf"), ((128, 4), "float32", "psum"), "E271"),
    (((8, 4), "bfloat16", "sbuf"), ((8, 513), "bfloat16", "sbuf"), ((4, 512), "float32", "psum"), "E271"),
    (((8, 4), "float32", "sbuf"), ((8, 6), "float32", "sbuf"), ((6, 4), "float32", "psum"), "E272"),
    (((8, 4), "float32", "sbuf"), ((8, 6), "bfloat16", "sbuf"), ((4, 6), "float32", "psum"), "E273"),
    (((8, 4), "float16", "sbuf"), ((8, 6), "tfloat32", "sbuf"), ((4, 6), "float32", "psum"), "E273"),
    (((8, 4), "float32", "psum"), ((8, 6), "float32", "sbuf"), ((4, 6), "float32", "psum"), "E040"),
    (((8, 4), "float32", "sbuf"), ((8, 6), "float32", "sbuf"), ((4, 6), "float32", "sbuf"), "E040"),
    (((8, 4), "float32", "sbuf"), ((8, 6), "float32", "sbuf"), ((4, 6), "bfloat16", "psum"), "E060"),
    (((8, 4), "int8", "sbuf"), ((8, 6), "int8", "sbuf"), ((4, 6), "float32", "psum"), "E060"),
])
def test_rejects(tmp_path, a, b, c, code):
    t = {"a": tmp(*a) | {"fill": 1}, "b": tmp(*b) | {"fill": 1}, "c": out(*c)}
    diags = diagnostics(tmp_path, t, [{"nc_matmul": {"dst": "c", "stationary": "a",
                                                     "moving": "b"}}])
    assert code in codes(diags), [(d.code, d.message) for d in diags]
    assert all(d.loc.line for d in diags)


@pytest.mark.parametrize("m,n,dtype,cycles", [
    (128, 512, "bfloat16", 512),  # max(min(64, Ns), Nm)
    (128, 16, "bfloat16", 64),
    (32, 16, "float16", 32),
    (128, 512, "float32", 2048),  # 4x for fp32
    (128, 512, "tfloat32", 512),
])
def test_cost(tmp_path, m, n, dtype, cycles):
    path = write_program(tmp_path, {"a": tmp((128, m), dtype) | {"fill": 1},
                                    "b": tmp((128, n), dtype) | {"fill": 1},
                                    "c": out((m, n), "float32", "psum")},
                         [{"nc_matmul": {"dst": "c", "stationary": "a", "moving": "b"}}])
    slot = cost(path).slots[0]
    assert (slot.engine, slot.cycles) == ("tensor", cycles)


# ---- accumulate unset: NKI's auto-detect, per PSUM element ------------------------------------
def _k_tiles(rng, k_tiles, m, n, dtype="bfloat16"):
    """A (k_tiles*128)-deep contraction laid out as [128, k_tiles, M] / [128, k_tiles, N]
    SBUF tiles (the tutorial's lhsT/rhs tiles), and its reference result."""
    st = ints(rng, (128 * k_tiles, m), dtype)
    mv = ints(rng, (128 * k_tiles, n), dtype)
    tiles = lambda a: a.reshape(k_tiles, 128, -1).transpose(1, 0, 2).copy()  # noqa: E731
    return tiles(st), tiles(mv), ref_matmul(st, mv)


@pytest.mark.parametrize("k_tiles", [2, 4])
def test_unset_accumulate_sums_every_k_tile(tmp_path, k_tiles):
    # the NKI tiled-matmul tutorial ported literally: no accumulate keyword in the K loop
    rng = np.random.default_rng(10 + k_tiles)
    a, b, want = _k_tiles(rng, k_tiles, 64, 200)
    got = run_program(tmp_path, {"a": sbuf(a), "b": sbuf(b), "c": out((64, 200), "float32", "psum")},
                      [{"nc_matmul": {"dst": "c", "stationary": f"a[:, {k}, :]",
                                      "moving": f"b[:, {k}, :]"}} for k in range(k_tiles)])["c"]
    assert_bits_equal(got, want)


def test_unset_accumulate_is_per_element(tmp_path):
    # the first matmul writes only columns 0:4; the second (whole tile) accumulates there and
    # overwrites the columns nothing wrote yet
    rng = np.random.default_rng(12)
    st1, mv1 = ints(rng, (8, 6), "float32"), ints(rng, (8, 4), "float32")
    st2, mv2 = ints(rng, (8, 6), "float32"), ints(rng, (8, 10), "float32")
    got = run_program(tmp_path, {"a1": sbuf(st1), "b1": sbuf(mv1), "a2": sbuf(st2),
                                 "b2": sbuf(mv2), "c": out((6, 10), "float32", "psum")},
                      [{"nc_matmul": {"dst": "c[:, 0:4]", "stationary": "a1", "moving": "b1"}},
                       {"nc_matmul": {"dst": "c", "stationary": "a2", "moving": "b2"}}])["c"]
    want = ref_matmul(st2, mv2)
    want[:, :4] += ref_matmul(st1, mv1)
    assert_bits_equal(got, want)


def test_unset_accumulate_onto_initial_contents_and_null(tmp_path):
    # declared contents hold data, so the auto rule accumulates; `accumulate: null` is unset
    st, mv = np.ones((2, 3), np.float32), np.ones((2, 4), np.float32)
    prev = np.full((3, 4), 10.0, np.float32)
    for value in ({}, {"accumulate": None}):
        got = run_program(tmp_path, {"a": sbuf(st), "b": sbuf(mv),
                                     "c": sbuf(prev, buffer="psum", output=True)},
                          [{"nc_matmul": {"dst": "c", "stationary": "a", "moving": "b"} | value}])
        assert got["c"].tolist() == [[12.0] * 4] * 3


def test_explicit_accumulate_false_overrides_auto(tmp_path):
    rng = np.random.default_rng(13)
    a, b, _ = _k_tiles(rng, 2, 16, 32)
    got = run_program(tmp_path, {"a": sbuf(a), "b": sbuf(b), "c": out((16, 32), "float32", "psum")},
                      [{"nc_matmul": {"dst": "c", "stationary": "a[:, 0, :]", "moving": "b[:, 0, :]"}},
                       {"nc_matmul": {"dst": "c", "stationary": "a[:, 1, :]", "moving": "b[:, 1, :]",
                                      "accumulate": False}}])["c"]
    assert_bits_equal(got, ref_matmul(a[:, 1, :], b[:, 1, :]))


def test_unset_accumulate_with_mask_keeps_masked_off(tmp_path):
    # masked-off elements are neither written nor accumulated; a later unmasked matmul
    # accumulates only where the first one wrote
    rng = np.random.default_rng(14)
    st, mv = ints(rng, (8, 6), "float32"), ints(rng, (8, 10), "float32")
    got = run_program(tmp_path, {"a": sbuf(st), "b": sbuf(mv), "c": out((6, 10), "float32", "psum")},
                      [{"nc_matmul": {"dst": "c", "stationary": "a", "moving": "b",
                                      "mask": "p < 3"}},
                       {"nc_matmul": {"dst": "c", "stationary": "a", "moving": "b"}}])["c"]
    r = ref_matmul(st, mv)
    want = r.copy()
    want[:3] += r[:3]
    assert_bits_equal(got, want)
