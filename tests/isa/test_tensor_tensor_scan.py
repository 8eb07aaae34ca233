"""tensor_tensor_scan against tests/reference.py (the seed page's recurrence, page 004)."""
import numpy as np
import pytest
import reference as ref
from prog_helpers import (NP_TYPES, assert_bits_equal, codes, out, random_floats, reported_at,
                          run_example_cli, run_inputs, sbuf, write_program)

from nkirun.api import check_program, cost

FLOATS = ["float32", "bfloat16", "float16", "float8_e4m3", "float8_e5m2"]
UFUNC = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
         "maximum": np.maximum, "minimum": np.minimum}


def assert_scan_equal(got, want):
    """Bit-exact, except which NaN (sign, payload) an operation on NaN/inf produces: that
    is NumPy's business (its contiguous SIMD loops and the reference's strided loops
    propagate different NaN operands) and undocumented for the hardware."""
    got, want = np.asarray(got), np.asarray(want)
    nan_g, nan_w = np.isnan(got.astype(np.float32)), np.isnan(want.astype(np.float32))
    np.testing.assert_array_equal(nan_g, nan_w)
    assert_bits_equal(np.where(nan_g, 0, got).astype(got.dtype),
                      np.where(nan_w, 0, want).astype(want.dtype))


def _scan(tmp_path, d0, d1, initial, op0, op1, dst_dtype="float32", init_tile=None,
          **args):
    p = d0.shape[0]
    tensors = {"a": sbuf(d0), "b": sbuf(d1), "c": out(d0.shape, dst_dtype)}
    if init_tile is not None:
        tensors["i"] = sbuf(init_tile)
        initial = "i"
    inst = {"dst": "c", "data0": "a", "data1": "b", "initial": initial, "op0": op0,
            "op1": op1, **args}
    outs, _ = run_inputs(tmp_path, tensors, [{"tensor_tensor_scan": inst}])
    assert outs["c"].shape == d0.shape and p == d0.shape[0]
    return outs["c"]


def _operands(rng, p, free, dtype, special=True):
    # values near 1 keep products of long multiply scans finite
    d0 = (random_floats(rng, (p, *free), special) / 8 + 0.5).astype(NP_TYPES[dtype])
    d1 = random_floats(rng, (p, *free), special).astype(NP_TYPES[dtype])
    return d0, d1


@pytest.mark.parametrize("p,free", [(1, (1,)), (37, (13,)), (128, (515,)), (37, (3, 7)),
                                    (128, (2, 3, 5)), (5, (2, 2, 2, 3))])
@pytest.mark.parametrize("dtype", FLOATS)
def test_multiply_add_matches_reference(tmp_path, p, free, dtype):
    rng = np.random.default_rng(p + 7 * len(free) + len(dtype))
    d0, d1 = _operands(rng, p, free, dtype)
    got = _scan(tmp_path, d0, d1, 0, "multiply", "add", dst_dtype=dtype)
    want = ref.tensor_tensor_scan(d0, d1, 0.0, np.multiply, np.add, out_dtype=dtype)
    assert_scan_equal(got, want)


@pytest.mark.parametrize("op0,op1", [("subtract", "subtract"), ("add", "multiply"),
                                     ("maximum", "minimum"), ("subtract", "add")])
@pytest.mark.parametrize("reverse0", [False, True])
@pytest.mark.parametrize("reverse1", [False, True])
def test_ops_and_reverse_flags(tmp_path, op0, op1, reverse0, reverse1):
    rng = np.random.default_rng(len(op0) + 2 * reverse0 + reverse1)
    d0, d1 = _operands(rng, 37, (41,), "float32")
    init = random_floats(rng, (37, 1), special=False)
    got = _scan(tmp_path, d0, d1, None, op0, op1, init_tile=init, reverse0=reverse0,
                reverse1=reverse1)
    want = ref.tensor_tensor_scan(d0, d1, init, UFUNC[op0], UFUNC[op1], reverse0, reverse1,
                                  out_dtype="float32")
    assert_scan_equal(got, want)


def test_running_value_stays_float32_with_low_precision_output(tmp_path):
    # 1 + 2^-10 steps: a bf16 running value would stall, the float32 one does not
    n = 64
    d0, d1 = np.ones((3, n), np.float32), np.full((3, n), 2.0**-10, np.float32)
    got = _scan(tmp_path, d0, d1, 1.0, "multiply", "add", dst_dtype="bfloat16")
    want = ref.tensor_tensor_scan(d0, d1, 1.0, np.multiply, np.add, out_dtype="bfloat16")
    assert_bits_equal(got, want)
    assert got.astype(np.float32)[0, -1] == np.float32(1 + n * 2.0**-10)


def test_nan_inf_propagate(tmp_path):
    d0 = np.array([[1, 1, np.inf, 1, 1, 0], [1, np.nan, 1, 1, 1, 1]], np.float32)
    d1 = np.array([[1, -np.inf, 1, 1, np.inf, 1], [0, 0, 0, 0, 0, 0]], np.float32)
    got = _scan(tmp_path, d0, d1, 0.5, "multiply", "add")
    assert_scan_equal(got, ref.tensor_tensor_scan(d0, d1, 0.5, np.multiply, np.add,
                                                  out_dtype="float32"))
    assert np.isnan(got[0, 4:]).all() and np.isnan(got[1, 1:]).all()


def test_mixed_input_dtypes_psum_and_dtype_keyword(tmp_path):
    rng = np.random.default_rng(4)
    d0 = _operands(rng, 16, (30,), "bfloat16")[0]
    d1 = _operands(rng, 16, (30,), "float16")[1]
    tensors = {"a": sbuf(d0, buffer="psum"), "b": sbuf(d1), "c": out((16, 30), "float32")}
    outs, _ = run_inputs(tmp_path, tensors, [{"tensor_tensor_scan": {
        "dst": "c", "data0": "a", "data1": "b", "initial": -2.5, "op0": "add", "op1": "add",
        "dtype": "float16"}}])
    want = ref.tensor_tensor_scan(d0, d1, -2.5, np.add, np.add, out_dtype="float16")
    assert_scan_equal(outs["c"], want.astype(np.float32))


def test_page_example_two_halves(tmp_path):
    # page 004, example 1: the second half starts from c[:, 511], a (P, 1) view
    rng = np.random.default_rng(5)
    a = rng.random((128, 1024)).astype(np.float32)
    b = rng.standard_normal((128, 1024)).astype(np.float32)
    tensors = {"a": sbuf(a), "b": sbuf(b), "c": out((128, 1024), "float32")}
    prog = [{"tensor_tensor_scan": {"dst": "c[:, 0:512]", "data0": "a[:, 0:512]",
                                    "data1": "b[:, 0:512]", "initial": 0,
                                    "op0": "np.multiply", "op1": "np.add"}},
            {"tensor_tensor_scan": {"dst": "c[:, 512:1024]", "data0": "a[:, 512:1024]",
                                    "data1": "b[:, 512:1024]", "initial": "c[:, 511]",
                                    "op0": "np.multiply", "op1": "np.add"}}]
    outs, _ = run_inputs(tmp_path, tensors, prog)
    first = ref.tensor_tensor_scan(a[:, :512], b[:, :512], 0.0, np.multiply, np.add)
    second = ref.tensor_tensor_scan(a[:, 512:], b[:, 512:], first[:, 511:512], np.multiply,
                                    np.add)
    assert_bits_equal(outs["c"], np.concatenate([first, second], axis=1))
    # a float32 chain through c equals one scan over all 1024 columns
    assert_bits_equal(outs["c"], ref.tensor_tensor_scan(a, b, 0.0, np.multiply, np.add))


@pytest.mark.parametrize("mask,box", [("f < 5", np.s_[:, :5]), ("f >= 3 and p < 2", np.s_[:2, 3:])])
def test_mask_scans_the_selected_box(tmp_path, mask, box):
    # legacy masking = a smaller instruction: the scan starts at the box's first element
    rng = np.random.default_rng(6)
    d0, d1 = _operands(rng, 4, (9,), "float32", special=False)
    tensors = {"a": sbuf(d0), "b": sbuf(d1), "c": sbuf(np.full((4, 9), 7.0, np.float32),
                                                       output=True)}
    outs, _ = run_inputs(tmp_path, tensors, [{"tensor_tensor_scan": {
        "dst": "c", "data0": "a", "data1": "b", "initial": 1.5, "op0": "multiply",
        "op1": "add", "mask": mask}}])
    want = np.full((4, 9), 7.0, np.float32)
    want[box] = ref.tensor_tensor_scan(np.ascontiguousarray(d0[box]),
                                       np.ascontiguousarray(d1[box]), 1.5, np.multiply, np.add)
    assert_bits_equal(outs["c"], want)


def test_cost_is_max_min_ii_2n(tmp_path):
    for n, want in ((16, 64), (300, 600)):
        path = write_program(tmp_path, {"a": sbuf(np.ones((4, n), np.float32)),
                                        "c": out((4, n), "float32")},
                             [{"tensor_tensor_scan": {"dst": "c", "data0": "a", "data1": "a",
                                                      "initial": 0, "op0": "add",
                                                      "op1": "add"}}])
        slot = cost(path).slots[0]
        assert slot.engine == "vector" and slot.cycles == want


def test_scan_two_halves_program_through_cli(tmp_path):
    data = run_example_cli("scan_two_halves", tmp_path)
    a, b = np.load(data / "a.npy"), np.load(data / "b.npy")
    assert_bits_equal(np.load(tmp_path / "c_out.npy"),
                      ref.tensor_tensor_scan(a, b, 0.0, np.multiply, np.add))


# ---- rules ---------------------------------------------------------------------------------
def _prog(tmp_path, d0=(8, 16), d1=(8, 16), dst=(8, 16), b0="sbuf", b1="sbuf", init=0,
          init_shape=None, op0="multiply", op1="add"):
    tensors = {"a": sbuf(np.zeros(d0, np.float32), buffer=b0),
               "b": sbuf(np.zeros(d1, np.float32), buffer=b1), "c": out(dst, "float32")}
    if init_shape is not None:
        tensors["i"] = sbuf(np.zeros(init_shape, np.float32))
        init = "i"
    return write_program(tmp_path, tensors, [{"tensor_tensor_scan": {
        "dst": "c", "data0": "a", "data1": "b", "initial": init, "op0": op0, "op1": op1}}])


@pytest.mark.parametrize("code,key,kw", [
    ("E140", "data1", {"b0": "psum", "b1": "psum"}),
    ("E141", "data0", {"d1": (8, 15)}),
    ("E142", "dst", {"dst": (8, 17)}),
    ("E061", "initial", {"init_shape": (8, 2)}),
    ("E062", "initial", {"init_shape": (4, 1)}),
    ("E025", "op0", {"op0": "divide"}),
    ("E025", "op1", {"op1": "greater"}),
    ("E024", "initial", {"init": [1, 2]}),
])
def test_rule_reported_at_its_keyword(tmp_path, code, key, kw):
    path = _prog(tmp_path, **kw)
    hit, diags = reported_at(path, code, key)
    assert hit.instruction == 0


def test_allowed_layouts(tmp_path):
    for kw in ({}, {"b0": "psum"}, {"b1": "psum"}, {"d0": (8, 4, 4), "dst": (8, 2, 8)},
               {"init_shape": (8, 1)}, {"op0": "maximum", "op1": "np.subtract"}):
        assert codes(check_program(_prog(tmp_path, **kw)).diagnostics) == []
