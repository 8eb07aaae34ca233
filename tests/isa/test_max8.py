"""max8 against tests/reference.py (nki-reference.md §1.12)."""
import numpy as np
import pytest
import reference as ref
from prog_helpers import (NP_TYPES, assert_bits_equal, codes, out, random_floats, reported_at,
                          run_inputs, sbuf, write_program)

from nkirun.api import check_program, cost

# Tensors for SPEC.example (tests/isa/test_registry.py checks and runs it)
EXAMPLE_TENSORS = {
    "t": "{buffer: sbuf, shape: [128, 512], dtype: float32, fill: 1}",
    "top": "{buffer: sbuf, shape: [128, 8], dtype: float32, output: true}",
}

FLOATS = ["float32", "bfloat16", "float16", "float8_e4m3", "float8_e5m2"]


def _src(rng, p, free, dtype):
    """Random values with NaN/inf; -0.0 turned into +0.0 (the ±0 order is tested apart:
    the reference's np.sort leaves equal-comparing zeros in an unspecified order)."""
    x = random_floats(rng, (p, *free)).astype(NP_TYPES[dtype])
    x32 = x.astype(np.float32)
    x32[x32 == 0] = 0.0
    return x32.astype(NP_TYPES[dtype])


def run_program(tmp_path, tensors, instructions):
    return run_inputs(tmp_path, tensors, instructions)[0]


def _run(tmp_path, src, dst_dtype, **args):
    p = src.shape[0]
    got = run_program(tmp_path, {"s": sbuf(src), "d": out((p, 8), dst_dtype)},
                      [{"max8": {"dst": "d", "src": "s", **args}}])
    return got["d"]


@pytest.mark.parametrize("p,free", [(1, (8,)), (37, (13,)), (128, (515,)), (37, (3, 7)),
                                    (128, (2, 3, 5)), (1, (2, 2, 2, 3))])
@pytest.mark.parametrize("dtype", FLOATS)
def test_matches_reference(tmp_path, p, free, dtype):
    rng = np.random.default_rng(p + 31 * len(free) + len(dtype))
    src = _src(rng, p, free, dtype)
    want = ref.cast_to(ref.max8(src), dtype)
    assert_bits_equal(_run(tmp_path, src, dtype), want)


def test_duplicates_nan_inf_order(tmp_path):
    src = np.array([[3, 7, np.nan, 7, np.inf, -1, 7, -np.inf, 2, 3, 0.5],
                    [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2]], np.float32)
    got = _run(tmp_path, src, "float32")
    assert_bits_equal(got, ref.max8(src))
    assert np.isnan(got[0, 0]) and got[0, 1] == np.inf and got[0, 2:5].tolist() == [7, 7, 7]
    assert got[1].tolist() == [2] + [1] * 7


def test_signed_zero_ranks_below_positive_zero(tmp_path):
    # nkirun's reading (undocumented): -0.0 < +0.0, whatever their positions
    for row in ([-0.0, 0.0] + [-1.0] * 7, [0.0, -0.0] + [-1.0] * 7):
        got = _run(tmp_path, np.array([row], np.float32), "float32")
        assert np.signbit(got[0, :2]).tolist() == [False, True]


def test_int_src_and_dtype_cast(tmp_path):
    rng = np.random.default_rng(3)
    src = rng.integers(-2**20, 2**20, size=(37, 40)).astype(np.int32)
    assert_bits_equal(_run(tmp_path, src, "float32"), ref.max8(src))
    x = random_floats(rng, (37, 40), special=False)
    got = _run(tmp_path, x, "float32", dtype="bfloat16")  # rounded to bf16, stored as fp32
    assert_bits_equal(got, ref.cast_to(ref.max8(x), "bfloat16").astype(np.float32))


def test_page_example3_mask_on_src(tmp_path):
    # seed page 003, example 3: max8(src=t[ix, iy], mask=(ix < n//2 and iy < m//2))
    rng = np.random.default_rng(4)
    n, m = 16, 40
    x = random_floats(rng, (n, m), special=False)
    got = run_program(tmp_path, {"s": sbuf(x), "d": sbuf(np.full((n, 8), -5, np.float32),
                                                         output=True)},
                      [{"max8": {"dst": "d", "src": "s",
                                 "mask": f"p < {n // 2} and f < {m // 2}"}}])
    want = np.full((n, 8), -5, np.float32)
    want[: n // 2] = ref.max8(x[: n // 2, : m // 2])
    assert_bits_equal(got["d"], want)


def test_psum_strided_view_and_multi_dim_dst(tmp_path):
    rng = np.random.default_rng(6)
    big = _src(rng, 64, (4, 30), "float32")
    got = run_program(tmp_path, {"s": sbuf(big, buffer="psum"), "d": out((32, 2, 4), "float16")},
                      [{"max8": {"dst": "d", "src": "s[32:64, 1:3, 0:30:3]"}}])
    want = ref.cast_to(ref.max8(np.ascontiguousarray(big[32:64, 1:3, 0:30:3])), "float16")
    assert_bits_equal(got["d"], want.reshape(32, 2, 4))


def test_cost_is_n_without_min_ii(tmp_path):
    path = write_program(tmp_path, {"s": sbuf(np.ones((4, 16), np.float32)),
                                    "d": out((4, 8), "float32")},
                         [{"max8": {"dst": "d", "src": "s"}}])
    slot = cost(path).slots[0]
    assert slot.op == "max8" and slot.engine == "vector" and slot.cycles == 16


# ---- rules ---------------------------------------------------------------------------------
def _prog(tmp_path, src_shape=(8, 16), dst_shape=(8, 8), **over):
    tensors = {"s": sbuf(np.zeros(src_shape, np.float32)), "d": out(dst_shape, "float32")}
    tensors.update(over.pop("tensors", {}))
    args = {"dst": "d", "src": "s", **over}
    return write_program(tmp_path, tensors, [{"max8": args}])


@pytest.mark.parametrize("code,key,kw", [
    ("E150", "src", {"src_shape": (8, 7)}),
    ("E150", "src", {"src_shape": (2, 16385), "dst_shape": (2, 8)}),
    ("E151", "src", {"src_shape": (2, 2, 2, 2, 2, 2), "dst_shape": (2, 8)}),
    ("E152", "dst", {"dst_shape": (8, 9)}),
    ("E153", "mask", {"mask": "f < 4"}),
    ("E062", "src", {"src_shape": (4, 16)}),
    ("E040", "src", {"tensors": {"s": sbuf(np.zeros((8, 16), np.float32), buffer="hbm")}}),
    ("E023", "max8", {"src": None}),
])
def test_rule_reported_at_its_keyword(tmp_path, code, key, kw):
    if kw.get("src") is None and "src" in kw:
        path = write_program(tmp_path, {"d": out((8, 8), "float32")}, [{"max8": {"dst": "d"}}])
    else:
        path = _prog(tmp_path, **kw)
    hit, diags = reported_at(path, code, key)
    assert hit.instruction == 0


def test_limits_are_inclusive(tmp_path):
    for shape in ((8, 8), (2, 16384), (2, 2, 2, 2, 2)):
        assert codes(check_program(_prog(tmp_path, src_shape=shape,
                                         dst_shape=(shape[0], 8))).diagnostics) == []
    # a mask that leaves a partition empty is fine; one with 8 elements is enough
    assert codes(check_program(_prog(tmp_path, mask="p < 4 and f < 8")).diagnostics) == []
