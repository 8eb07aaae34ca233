"""nc_match_replace8 against tests/reference.py (the seed page's NumPy loop, page 003)."""
import numpy as np
import pytest
import reference as ref
from prog_helpers import (NP_TYPES, assert_bits_equal, codes, out, random_floats, reported_at,
                          run_example_cli, run_inputs, sbuf, write_program)

from nkirun.api import check_program, cost
from nkirun.isa.fast.match_replace import match_replace8

# Tensors for SPEC.example (tests/isa/test_registry.py checks and runs it)
EXAMPLE_TENSORS = {
    "t": "{buffer: sbuf, shape: [128, 512], dtype: float32, fill: 1, output: true}",
    "top": "{buffer: sbuf, shape: [128, 8], dtype: float32}",
    "idx": "{buffer: sbuf, shape: [128, 8], dtype: uint32, output: true}",
}

FLOATS = ["float32", "bfloat16", "float16", "float8_e4m3", "float8_e5m2"]


def _run(tmp_path, data, vals, imm, dst_dtype=None, idx_dtype="uint32", **args):
    tensors = {"d": sbuf(data), "v": sbuf(vals),
               "o": out(data.shape, dst_dtype or NP_TYPES_NAME[data.dtype]),
               "i": out(vals.shape, idx_dtype)}
    inst = {"dst": "o", "data": "d", "vals": "v", "imm": imm, "dst_idx": "i", **args}
    outs, warns = run_inputs(tmp_path, tensors, [{"nc_match_replace8": inst}])
    assert outs["o"].shape == data.shape and outs["i"].shape == vals.shape
    return outs["o"], outs["i"], warns


NP_TYPES_NAME = {np.dtype(t): n for n, t in NP_TYPES.items()}


def _case(rng, p, free, dtype, small_ints):
    """Data with many repeated values (small ints) or NaN/inf; vals = max8 of the data
    (so duplicates in data give duplicates in vals), cast to the data dtype."""
    if small_ints:
        x = rng.integers(-6, 6, size=(p, *free)).astype(np.float32)
    else:
        x = random_floats(rng, (p, *free))
    data = x.astype(NP_TYPES[dtype])
    vals = ref.cast_to(ref.max8(data), dtype)
    return data, vals


@pytest.mark.parametrize("p,free", [(1, (13,)), (37, (515,)), (128, (21,)), (37, (3, 7)),
                                    (128, (2, 3, 5)), (5, (2, 2, 2, 3))])
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("small_ints", [False, True])
def test_matches_reference(tmp_path, p, free, dtype, small_ints):
    rng = np.random.default_rng(p * 13 + len(free) + len(dtype) + small_ints)
    data, vals = _case(rng, p, free, dtype, small_ints)
    got, idx, _ = _run(tmp_path, data, vals, "-inf")
    want, want_idx = ref.nc_match_replace8(data, vals, -np.inf)
    assert_bits_equal(got, want)
    np.testing.assert_array_equal(idx, want_idx)


def test_page_duplicates_take_successive_occurrences_in_vals_order(tmp_path):
    # the NKI 0.6 docstring's data/vals; the seed's loop (vals in order) gives ascending
    data = np.array([[1, 2, 3, 4] + [8] * 7], np.float32)
    vals = np.array([[3] + [8] * 7], np.float32)
    got, idx, warns = _run(tmp_path, data, vals, 0.0)
    assert idx.tolist() == [[2, 4, 5, 6, 7, 8, 9, 10]]
    assert got.tolist() == [[1, 2, 0, 4] + [0] * 7]
    assert [w.code for w in warns] == ["W137"]
    assert "partition 0: 8" in warns[0].message and warns[0].loc.line


def test_imm_equal_to_a_later_val_rematches_the_replaced_element(tmp_path):
    # the page's loop looks at the current data: val 0.0 finds the 0.0 imm wrote at index 0
    data = np.array([[5, 1, 0, 2, 3, 4, 6, 7, 8, 9]], np.float32)
    vals = np.array([[5, 0, 0, 9, 8, 7, 6, 4]], np.float32)
    got, idx, _ = _run(tmp_path, data, vals, 0.0)
    want, want_idx = ref.nc_match_replace8(data, vals, 0.0)
    assert idx.tolist() == want_idx.tolist() and idx[0, :3].tolist() == [0, 0, 0]
    assert_bits_equal(got, want)


def test_missing_vals_warn_and_index_zero(tmp_path):
    rng = np.random.default_rng(2)
    data = rng.permutation(np.arange(37 * 20, dtype=np.float32)).reshape(37, 20)
    vals = ref.max8(data)
    vals[3, 5] = -1.0  # not in data
    vals[30, 0] = np.nan  # NaN never matches
    got, idx, warns = _run(tmp_path, data, vals, -np.inf)
    want, want_idx = ref.nc_match_replace8(data, vals, -np.inf)
    assert_bits_equal(got, want)
    np.testing.assert_array_equal(idx, want_idx)
    assert idx[3, 5] == 0 and idx[30, 0] == 0
    assert [w.code for w in warns] == ["W136"]
    assert "partition 3: -1" in warns[0].message and "partition 30: nan" in warns[0].message


def test_nan_inf_and_signed_zero(tmp_path):
    data = np.array([[np.nan, -0.0, np.inf, -np.inf, 1, 0.0, np.inf, 2, 3, 4]], np.float32)
    vals = np.array([[0.0, np.inf, -np.inf, 0.0, 1, 2, 3, np.inf]], np.float32)
    got, idx, warns = _run(tmp_path, data, vals, 7.0)
    want, want_idx = ref.nc_match_replace8(data, vals, 7.0)
    assert_bits_equal(got, want)
    assert idx.tolist() == want_idx.tolist() == [[1, 2, 3, 5, 4, 7, 8, 6]]
    assert np.isnan(got[0, 0])


def test_in_place_and_data_unchanged(tmp_path):
    rng = np.random.default_rng(5)
    data = random_floats(rng, (37, 3, 11))
    vals = ref.max8(data)
    tensors = {"d": sbuf(data, output=True), "v": sbuf(vals), "d2": sbuf(data, output=True),
               "o": out(data.shape, "bfloat16"), "i": out((37, 8), "int32")}
    prog = [{"nc_match_replace8": {"dst": "o", "data": "d", "vals": "v", "imm": -1.5,
                                   "dst_idx": "i"}},
            {"nc_match_replace8": {"dst": "d2", "data": "d2", "vals": "v", "imm": -1.5}}]
    outs, _ = run_inputs(tmp_path, tensors, prog)
    want, want_idx = ref.nc_match_replace8(data, vals, -1.5)
    assert_bits_equal(outs["d"], data)  # data itself is untouched when dst is another tensor
    assert_bits_equal(outs["d2"], want)  # page example 5: in place
    assert_bits_equal(outs["o"], ref.cast_to(want, "bfloat16"))
    np.testing.assert_array_equal(outs["i"], want_idx.astype(np.int32))


def test_dtype_keyword_and_psum(tmp_path):
    rng = np.random.default_rng(8)
    data = random_floats(rng, (16, 40), special=False)
    vals = ref.max8(data)
    tensors = {"d": sbuf(data, buffer="psum"), "v": sbuf(vals), "o": out((16, 40), "float32")}
    outs, _ = run_inputs(tmp_path, tensors, [{"nc_match_replace8": {
        "dst": "o", "data": "d", "vals": "v", "imm": 1e-3, "dtype": "bfloat16"}}])
    want, _ = ref.nc_match_replace8(data, vals, 1e-3, out_dtype="bfloat16")
    assert_bits_equal(outs["o"], want.astype(np.float32))


def test_page_example3_mask_applies_to_data(tmp_path):
    # page 003 example 3: masked max8, then a masked nc_match_replace8 on the same box;
    # rows outside the box: vals never written (not read), dst and idx rows untouched
    rng = np.random.default_rng(9)
    n, m = 16, 24
    x = random_floats(rng, (n, m), special=False)
    mask = f"p < {n // 2} and f < {m // 2}"
    tensors = {"t": sbuf(x), "v": {"buffer": "sbuf", "shape": [n, 8], "dtype": "float32"},
               "o": sbuf(np.full((n, m), 9.0, np.float32), output=True),
               "i": sbuf(np.zeros((n, 8), np.uint32), output=True)}
    prog = [{"max8": {"dst": "v", "src": "t", "mask": mask}},
            {"nc_match_replace8": {"dst": "o", "data": "t", "vals": "v", "imm": "-inf",
                                   "dst_idx": "i", "mask": mask}}]
    outs, warns = run_inputs(tmp_path, tensors, prog)
    box = x[: n // 2, : m // 2]
    want_box, want_idx = ref.nc_match_replace8(box, ref.max8(box), -np.inf)
    want = np.full((n, m), 9.0, np.float32)
    want[: n // 2, : m // 2] = want_box
    assert_bits_equal(outs["o"], want)
    np.testing.assert_array_equal(outs["i"][: n // 2], want_idx)
    assert not outs["i"][n // 2:].any() and warns == []


@pytest.mark.parametrize("seed", range(6))
def test_dense_path_equals_candidate_path(seed):
    # vals spread over data's range (many candidates) take the dense loop; both must agree
    rng = np.random.default_rng(seed)
    data = rng.integers(-40, 40, size=(37, 300)).astype(np.float32)
    vals = np.take_along_axis(data, rng.integers(0, 300, size=(37, 8)), axis=1)
    vals[:, 5] = vals[:, 1]  # duplicates
    imm = np.float32(vals[0, 3])  # imm equal to some vals: replaced elements re-match
    want, want_idx = ref.nc_match_replace8(data, vals, imm)
    for dense_above in (0, 10**9):
        x = data.copy()
        idx, found = match_replace8(x, vals, imm, dense_above=dense_above)
        assert_bits_equal(x, want)
        np.testing.assert_array_equal(idx, want_idx.astype(np.int64))


def test_cost_is_max_min_ii_n(tmp_path):
    for n, want in ((16, 64), (300, 300)):
        path = write_program(tmp_path, {"d": sbuf(np.ones((4, n), np.float32)),
                                        "v": sbuf(np.ones((4, 8), np.float32)),
                                        "o": out((4, n), "float32")},
                             [{"nc_match_replace8": {"dst": "o", "data": "d", "vals": "v",
                                                     "imm": 0.0}}])
        slot = cost(path).slots[0]
        assert slot.engine == "vector" and slot.cycles == want


# ---- the example program (page 003, example 4) -----------------------------------------------
def test_topk_match_replace_program_through_cli(tmp_path):
    data = np.load(run_example_cli("topk_match_replace", tmp_path) / "data.npy")
    want, want_idx = ref.nc_match_replace8(data, ref.max8(data), 0.0)
    assert_bits_equal(np.load(tmp_path / "out.npy"), want)
    np.testing.assert_array_equal(np.load(tmp_path / "idx.npy"), want_idx)


# ---- rules ---------------------------------------------------------------------------------
def _prog(tmp_path, data=(8, 16), vals=(8, 8), dst=None, idx=(8, 8), idx_dtype="uint32"):
    tensors = {"d": sbuf(np.zeros(data, np.float32)), "v": sbuf(np.zeros(vals, np.float32)),
               "o": out(dst or data, "float32"), "i": out(idx, idx_dtype)}
    return write_program(tmp_path, tensors, [{"nc_match_replace8": {
        "dst": "o", "data": "d", "vals": "v", "imm": 0.0, "dst_idx": "i"}}])


@pytest.mark.parametrize("code,key,kw", [
    ("E130", "vals", {"vals": (8, 7), "idx": (8, 7)}),
    ("E131", "data", {"data": (2, 16385), "vals": (2, 8), "idx": (2, 8)}),
    ("E132", "data", {"data": (2, 2, 2, 2, 2, 2), "vals": (2, 8), "idx": (2, 8)}),
    ("E133", "vals", {"vals": (8, 2, 2, 2)}),
    ("E134", "dst", {"dst": (8, 4, 4)}),
    ("E135", "dst_idx", {"idx": (8, 4)}),
    ("W138", "dst_idx", {"data": (8, 300), "idx_dtype": "uint8"}),
    ("E060", "dst_idx", {"idx_dtype": "float32"}),
    ("E062", "vals", {"vals": (4, 8)}),
])
def test_rule_reported_at_its_keyword(tmp_path, code, key, kw):
    path = _prog(tmp_path, **kw)
    hit, diags = reported_at(path, code, key)
    assert hit.instruction == 0


def test_limits_are_inclusive(tmp_path):
    for kw in ({}, {"data": (2, 16384), "vals": (2, 2, 4), "idx": (2, 8)},
               {"data": (2, 2, 2, 2, 3), "vals": (2, 8), "idx": (2, 2, 4)},
               {"data": (8, 200), "idx_dtype": "uint8"}):
        assert codes(check_program(_prog(tmp_path, **kw)).diagnostics) == []
