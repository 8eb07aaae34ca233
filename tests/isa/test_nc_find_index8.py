"""nc_find_index8 against a literal loop transcription of the NKI 0.6 semantics."""
import numpy as np
import pytest
from prog_helpers import NP_TYPES, out, reported_at, run_program, sbuf, write_program

from nkirun.isa.mask import evaluate

# Tensors for SPEC.example (tests/isa/test_registry.py checks and runs it)
EXAMPLE_TENSORS = {
    "t": "{buffer: sbuf, shape: [128, 512], dtype: float32, fill: 1}",
    "top": "{buffer: sbuf, shape: [128, 8], dtype: float32}",
    "idx": "{buffer: sbuf, shape: [128, 8], dtype: uint32, output: true}",
}


def ref_find_index8(data, vals, out_dtype="uint32", mask=None):
    """Per partition, per slot k in order: the first matching index not already taken by an
    earlier slot (so repeated values walk through successive matches); none -> all-ones."""
    p = data.shape[0]
    d = data.reshape(p, -1).astype(np.float32)
    v = vals.reshape(p, -1).astype(np.float32)
    ok = np.ones(d.shape, bool) if mask is None else mask.reshape(p, -1)
    ones = np.iinfo(out_dtype).max
    res = np.zeros((p, 8), np.int64)
    for i in range(p):
        taken = set()
        for k in range(8):
            res[i, k] = ones
            for j in range(d.shape[1]):
                if ok[i, j] and d[i, j] == v[i, k] and j not in taken:
                    res[i, k] = j
                    taken.add(j)
                    break
    return res.astype(out_dtype)


def make_case(rng, p, free, dtype="float32"):
    """Data with repeated values; vals drawn mostly from data, plus misses and duplicates."""
    data = rng.integers(-20, 20, size=(p, *free)).astype(np.float32)
    flat = data.reshape(p, -1)
    pick = rng.integers(0, flat.shape[1], size=(p, 8))
    vals = np.take_along_axis(flat, pick, axis=1).copy()
    vals[:, 6] = vals[:, 0]  # a repeated value takes the next match
    vals[: p // 2, 7] = 1000.0  # never present -> all-ones
    return data.astype(NP_TYPES[dtype]), vals.astype(NP_TYPES[dtype])


@pytest.mark.parametrize("p,free,dtype,idx_dtype", [
    (1, (8,), "float32", "uint32"),
    (37, (13,), "float32", "uint16"),
    (128, (515,), "float32", "uint32"),
    (37, (3, 7), "bfloat16", "uint32"),
    (128, (2, 3, 5), "float16", "uint16"),
    (5, (9,), "int32", "uint32"),
])
def test_matrix(tmp_path, p, free, dtype, idx_dtype):
    rng = np.random.default_rng(p * 7 + len(free))
    data, vals = make_case(rng, p, free, dtype)
    got = run_program(tmp_path, {"d": sbuf(data), "v": sbuf(vals),
                                 "i": out((p, 8), idx_dtype)},
                      [{"nc_find_index8": {"dst": "i", "data": "d", "vals": "v"}}])["i"]
    np.testing.assert_array_equal(got, ref_find_index8(data, vals, idx_dtype))
    assert got.dtype == np.dtype(idx_dtype)


def test_page_example_duplicates_ascending(tmp_path):
    # the NKI 0.6 docstring's data/vals; find_index8 resolves duplicates ascending
    data = np.array([[1, 2, 3, 4] + [8] * 7], np.float32)
    vals = np.array([[3] + [8] * 7], np.float32)
    got = run_program(tmp_path, {"d": sbuf(data), "v": sbuf(vals), "i": out((1, 8), "uint32")},
                      [{"nc_find_index8": {"dst": "i", "data": "d", "vals": "v"}}])["i"]
    assert got.tolist() == [[2, 4, 5, 6, 7, 8, 9, 10]]


def test_more_copies_than_matches_nan_and_signed_zero(tmp_path):
    data = np.array([[5, 5, -0.0, np.nan, 1, 2, 3, 4, 9]], np.float32)
    vals = np.array([[5, 5, 5, np.nan, 0.0, 9, 9, 4]], np.float32)
    got = run_program(tmp_path, {"d": sbuf(data), "v": sbuf(vals), "i": out((1, 8), "uint32")},
                      [{"nc_find_index8": {"dst": "i", "data": "d", "vals": "v"}}])["i"]
    ones = 0xFFFFFFFF
    assert got.tolist() == [[0, 1, ones, ones, 2, 8, ones, 7]]


def test_dtype_uint16_all_ones_in_uint32_dst(tmp_path):
    data = np.arange(16, dtype=np.float32).reshape(2, 8)
    vals = np.full((2, 8), 99.0, np.float32)
    got = run_program(tmp_path, {"d": sbuf(data), "v": sbuf(vals), "i": out((2, 8), "uint32")},
                      [{"nc_find_index8": {"dst": "i", "data": "d", "vals": "v",
                                           "dtype": "uint16"}}])["i"]
    assert (got == 0xFFFF).all()


def test_mask_applies_to_data(tmp_path):
    rng = np.random.default_rng(3)
    p, n = 37, 40
    data, vals = make_case(rng, p, (n,))
    mask_text = "p < 30 and f >= 5 and f < 33"
    mask = evaluate(mask_text, (p, n))
    prev = np.full((p, 8), 77, np.uint32)
    got = run_program(tmp_path, {"d": sbuf(data), "v": sbuf(vals),
                                 "i": sbuf(prev, output=True)},
                      [{"nc_find_index8": {"dst": "i", "data": "d", "vals": "v",
                                           "mask": mask_text}}])["i"]
    want = ref_find_index8(data, vals, "uint32", mask)
    want[30:] = 77  # fully masked-off partitions keep dst
    np.testing.assert_array_equal(got, want)
    assert (got[:30] != 0xFFFFFFFF).any()  # the test can see matches


@pytest.mark.parametrize("tensors,args,code", [
    ({"d": sbuf(np.zeros((4, 7), np.float32))}, {}, "E250"),
    ({"d": sbuf(np.zeros((4, 16385), np.float32))}, {}, "E250"),
    ({"v": sbuf(np.zeros((4, 9), np.float32))}, {}, "E251"),
    ({"i": out((4, 4), "uint32")}, {}, "E252"),
    ({"i": out((4, 8), "float32")}, {}, "E060"),
    ({}, {"dtype": "int32"}, "E253"),
    ({"v": sbuf(np.zeros((5, 8), np.float32))}, {}, "E062"),
    ({}, {"mask": "q < 3"}, "E045"),
])
def test_rejects(tmp_path, tensors, args, code):
    t = {"d": sbuf(np.zeros((4, 16), np.float32)), "v": sbuf(np.zeros((4, 8), np.float32)),
         "i": out((4, 8), "uint32"), **tensors}
    path = write_program(tmp_path, t, [{"nc_find_index8": {"dst": "i", "data": "d", "vals": "v",
                                                           **args}}])
    reported_at(path, code, instruction=0)


def test_cost_is_n_vector_cycles(tmp_path):
    from prog_helpers import write_program

    from nkirun.api import cost
    path = write_program(tmp_path, {"d": sbuf(np.zeros((4, 100), np.float32)),
                                    "v": sbuf(np.zeros((4, 8), np.float32)),
                                    "i": out((4, 8), "uint32")},
                         [{"nc_find_index8": {"dst": "i", "data": "d", "vals": "v"}}])
    slot = cost(path).slots[0]
    assert (slot.engine, slot.cycles) == ("vector", 100)
