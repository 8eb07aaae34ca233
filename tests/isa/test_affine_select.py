"""affine_select (seed page 002) against tests/reference.py, bit for bit, and its rules."""
from __future__ import annotations

import numpy as np
import pytest

import reference as ref
from prog_helpers import (assert_bits_equal, codes, out, random_floats, reported_at, run_program,
                          sbuf, write_program)
from nkirun.api import check_program, cost

# Tensors for SPEC.example (tests/isa/test_registry.py checks and runs it)
EXAMPLE_TENSORS = {
    "masked": "{buffer: sbuf, shape: [128, 128], dtype: float32, output: true}",
    "scores": "{buffer: sbuf, shape: [128, 128], dtype: float32, fill: 1}",
}

FP32_MIN = ref.FP32_MIN
CMP = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")


def _run(tmp_path, x, pattern, offset, cm, fill, cmp_op="equal", dst_dtype=None,
         dst_shape=None):
    tensors = {"t": sbuf(x), "r": out(dst_shape or x.shape, dst_dtype or ref.dtype_name(x))}
    args = {"dst": "r", "pattern": [list(p) for p in pattern], "offset": offset,
            "channel_multiplier": cm, "on_true_tile": "t", "on_false_value": fill,
            "cmp_op": cmp_op}
    return run_program(tmp_path, tensors, [{"affine_select": args}])["r"]


def _want(x, pattern, offset, cm, fill, cmp_op="equal", out_dtype=None):
    f = {"fp32.min": FP32_MIN, "-inf": -np.inf, "nan": np.nan}.get(fill, fill)
    return ref.affine_select(x, pattern, offset, cm, f, getattr(np, cmp_op), out_dtype)


@pytest.mark.parametrize("P", [1, 37, 128])
@pytest.mark.parametrize("free,pattern", [
    ((129,), [[-1, 129]]),
    ((3, 7), [[7, 3], [-1, 7]]),
    ((30,), [[2, 5], [-3, 6]]),                    # pattern shape differs from dst's
    ((2, 3, 2, 5), [[1, 2], [-2, 3], [0, 2], [1, 5]]),  # full 4-D
])
@pytest.mark.parametrize("cmp_op", ["greater_equal", "equal", "less"])
def test_matches_reference(tmp_path, P, free, pattern, cmp_op):
    rng = np.random.default_rng(P + len(free))
    x = random_floats(rng, (P, *free))
    for offset, cm in ((0, 1), (-5, 2), (3, -1)):
        got = _run(tmp_path, x, pattern, offset, cm, "fp32.min", cmp_op)
        assert_bits_equal(got, _want(x, pattern, offset, cm, "fp32.min", cmp_op))


@pytest.mark.parametrize("cmp_op", CMP)
def test_every_comparison(tmp_path, cmp_op):
    rng = np.random.default_rng(2)
    x = random_floats(rng, (37, 11))
    got = _run(tmp_path, x, [[1, 11]], -5, 1, -7.25, cmp_op)
    assert_bits_equal(got, _want(x, [[1, 11]], -5, 1, -7.25, cmp_op))


def test_causal_mask_128(tmp_path):
    """The page's use case: keep scores[c, x] where c - x >= 0, FP32_MIN above the diagonal."""
    x = random_floats(np.random.default_rng(0), (128, 128), special=False)
    got = _run(tmp_path, x, [[-1, 128]], 0, 1, "fp32.min", "greater_equal")
    keep = np.tril(np.ones((128, 128), bool))
    assert_bits_equal(got, np.where(keep, x, FP32_MIN).astype(np.float32))
    assert_bits_equal(got, _want(x, [[-1, 128]], 0, 1, "fp32.min", "greater_equal"))


def test_default_cmp_op_is_equal_and_default_offset_zero(tmp_path):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    tensors = {"t": sbuf(x), "r": out((3, 4), "float32")}
    inst = {"affine_select": {"dst": "r", "pattern": [[1, 4]], "channel_multiplier": -1,
                              "on_true_tile": "t", "on_false_value": 0.0}}
    got = run_program(tmp_path, tensors, [inst])["r"]
    np.testing.assert_array_equal(got, [[0, 0, 0, 0], [0, 5, 0, 0], [0, 0, 10, 0]])


@pytest.mark.parametrize("in_dtype,out_dtype", [
    ("bfloat16", "bfloat16"), ("float16", "float16"), ("float8_e4m3", "float8_e4m3"),
    ("float32", "bfloat16"), ("float32", "float8_e5m2"), ("bfloat16", "float32"),
    ("int32", "int32"), ("uint32", "uint32"), ("int16", "int8"), ("int32", "float32"),
    ("float32", "int16"), ("uint8", "float16"),
])
def test_dtypes(tmp_path, in_dtype, out_dtype):
    rng = np.random.default_rng(len(in_dtype) + len(out_dtype))
    P, n = 37, 10
    if in_dtype.startswith(("int", "uint")):
        info = np.iinfo(in_dtype)
        x = rng.integers(info.min, info.max, size=(P, n), dtype=np.int64, endpoint=True)
        x = x.astype(in_dtype)
    else:
        x = ref.cast_to(random_floats(rng, (P, n)) * 100, in_dtype)
    for fill in (-3.5, 1000.5, "fp32.min"):
        got = _run(tmp_path, x, [[1, n]], -4, 1, fill, "less", dst_dtype=out_dtype)
        assert_bits_equal(got, _want(x, [[1, n]], -4, 1, fill, "less", out_dtype))


def test_same_dtype_copies_raw_bits(tmp_path):
    """Equal dtypes: selected elements are copied unchanged (no FP32 round trip), so int32
    beyond 2^24 survives; with different dtypes they go through FP32."""
    x = np.array([[2**24 + 1, -(2**31), 2**31 - 1, 7]], np.int32)
    got = _run(tmp_path, x, [[0, 4]], 0, 0, 0.0)
    assert_bits_equal(got, x)
    got = _run(tmp_path, x, [[0, 4]], 0, 0, 0.0, dst_dtype="uint32")
    np.testing.assert_array_equal(got, [[2**24, 0, 2**31, 7]])


def test_nan_payload_kept_for_equal_dtypes(tmp_path):
    x = np.array([[1.0, 2.0]], np.float32)
    x.view(np.uint32)[0, 0] = 0x7FC01234  # a NaN with a payload
    got = _run(tmp_path, x, [[1, 2]], 0, 0, "nan")  # values 0, 1: keep element 0 only
    assert got.view(np.uint32)[0, 0] == 0x7FC01234
    assert np.isnan(got[0, 1])


# ---- rules ---------------------------------------------------------------------------------
def _prog(tmp_path, **over):
    tensors = {"t": sbuf(np.zeros((8, 16), np.float32)), "r": out((8, 16), "float32")}
    tensors.update(over.pop("tensors", {}))
    args = {"dst": "r", "pattern": [[1, 16]], "offset": 0, "channel_multiplier": 1,
            "on_true_tile": "t", "on_false_value": "fp32.min", "cmp_op": "greater_equal"}
    args.update(over)
    args = {k: v for k, v in args.items() if v is not None}
    return write_program(tmp_path, tensors, [{"affine_select": args}])


@pytest.mark.parametrize("code,key,over", [
    ("E120", "pattern", {"pattern": [[1, 2]] * 4 + [[1, 1]]}),
    ("E121", "pattern", {"pattern": [[1, 0], [1, 16]]}),
    ("E122", "pattern", {"pattern": [[1, 15]]}),
    ("E122", "pattern", {"pattern": [[1, 4], [1, 2]]}),
    ("E123", "offset", {"offset": 2**31}),
    ("E123", "channel_multiplier", {"channel_multiplier": -(2**31) - 1}),
    ("E123", "pattern", {"pattern": [[2**28, 16]]}),
    ("E123", "pattern", {"offset": -(2**31), "channel_multiplier": -1}),
    ("E124", "on_false_value", {"on_false_value": 1e39}),
    ("E040", "dst", {"tensors": {"r": out((8, 16), "float32", "psum")}}),
    ("E040", "on_true_tile", {"tensors": {"t": sbuf(np.zeros((8, 16), np.float32), "float32",
                                                    "hbm")}}),
    ("E063", "dst", {"tensors": {"r": out((8, 17), "float32")}}),
    ("E062", "on_true_tile", {"tensors": {"t": sbuf(np.zeros((4, 16), np.float32))}}),
    ("E025", "cmp_op", {"cmp_op": "add"}),
    ("E024", "pattern", {"pattern": [1, 16]}),
    ("E024", "on_false_value", {"on_false_value": "t"}),
    ("E023", "affine_select", {"channel_multiplier": None}),
])
def test_rule_reported_at_its_keyword(tmp_path, code, key, over):
    path = _prog(tmp_path, **over)
    hit, diags = reported_at(path, code, key)
    assert hit.is_error


def test_psum_reported_once(tmp_path):
    """dst in PSUM: one E040 (SBUF only), not also the generic GpSimd E044."""
    diags = check_program(_prog(tmp_path, tensors={"r": out((8, 16), "float32", "psum")}))
    assert codes(diags.diagnostics) == ["E040"]


def test_valid_variants(tmp_path):
    assert check_program(_prog(tmp_path)).diagnostics == []
    # extreme but in-range values, 3-D dst with a 2-pair pattern, any dtype pair
    path = _prog(tmp_path, pattern=[[-1, 4], [2**20, 4]], offset=2**31 - 1 - 3 * 2**20 - 7,
                 tensors={"r": out((8, 4, 4), "int8")})
    assert check_program(path).diagnostics == []
    for v in (3.4028235e38, -3.4028235e38, "-inf"):  # float32 values as the pages print them
        assert check_program(_prog(tmp_path, on_false_value=v)).diagnostics == [], v


def test_cost_gpsimd_start_plus_n(tmp_path):
    slot = cost(_prog(tmp_path)).slots[0]
    assert (slot.engine, slot.cycles, slot.assumed) == ("gpsimd", 150 + 16, False)
