"""nc_matmul_mx: dequantised MX matmul into PSUM, against a reference written from the NKI 0.6
docstring and the MXFP guide (x4 elements hold 4 contraction values, scales 2^(bits-127)
per 8 partitions x 1 element in the group's quadrant, dst = sum over k and q)."""
import ml_dtypes
import numpy as np
import pytest
from mxrand_helpers import check_and_run_example, check_codes, errors, run_prog, t
from test_quantize_mx import ref_quantize

FP8 = {"float8_e4m3fn_x4": ml_dtypes.float8_e4m3fn, "float8_e5m2_x4": ml_dtypes.float8_e5m2}
FP4_VALUES = [0, .5, 1, 1.5, 2, 3, 4, 6, -0., -.5, -1, -1.5, -2, -3, -4, -6]  # OCP e2m1


def encode(values, fmt):
    """(P, F, 4) exactly representable values -> (P, F) x4 storage, bit by bit."""
    p, f, _ = values.shape
    if fmt == "float4_e2m1fn_x4":
        out = np.zeros((p, f), np.uint16)
        for idx in np.ndindex(p, f):
            word = 0
            for q in range(4):
                v = float(values[idx + (q,)])
                word |= (FP4_VALUES.index(v) if v != 0 else 0) << (4 * q)
            out[idx] = word
        return out
    out = np.zeros((p, f), np.uint32)
    for idx in np.ndindex(p, f):
        word = 0
        for q in range(4):
            byte = int(np.array([values[idx + (q,)]], np.float32).astype(FP8[fmt]).view(np.uint8)[0])
            word |= byte << (8 * q)
        out[idx] = word
    return out


def spread(scale_bits, k):
    """(K/8, F) contiguous scale bits -> the (K or K/8, F) SBUF layout (group quadrants)."""
    rows = k if k > 32 else k // 8
    out = np.full((rows, scale_bits.shape[1]), 127, np.uint8)
    for g in range(k // 8):
        out[(g // 4) * 32 + g % 4] = scale_bits[g]
    return out


def ref(st_vals, st_scale, mv_vals, mv_scale):
    """float64 sum over k, q of the scaled values (exact for the values used here)."""
    k, m, _ = st_vals.shape
    n = mv_vals.shape[1]
    res = np.zeros((m, n))
    for kk in range(k):
        a = st_vals[kk].astype(np.float64) * 2.0 ** (st_scale[kk // 8].astype(np.float64) - 127)[:, None]
        b = mv_vals[kk].astype(np.float64) * 2.0 ** (mv_scale[kk // 8].astype(np.float64) - 127)[:, None]
        res += a @ b.T
    return res


def values(rng, shape, fmt):
    if fmt == "float4_e2m1fn_x4":
        return rng.choice(np.array(FP4_VALUES[:8] + FP4_VALUES[9:], np.float32), size=shape)
    return rng.integers(-8, 9, size=shape).astype(np.float32)


def matmul(tmp_path, k, m, n, st_fmt, mv_fmt, dst_dtype="float32", seed=0, extra=None,
           scale_dtype="float8_e8m0fnu"):
    rng = np.random.default_rng(seed)
    sv, mvv = values(rng, (k, m, 4), st_fmt), values(rng, (k, n, 4), mv_fmt)
    ss = rng.integers(125, 130, size=(k // 8, m)).astype(np.uint8)  # 2^-2 .. 2^2
    ms = rng.integers(126, 129, size=(k // 8, n)).astype(np.uint8)
    sss, mss = spread(ss, k), spread(ms, k)
    sc = (lambda a: a.view(ml_dtypes.float8_e8m0fnu)) if scale_dtype != "uint8" else (lambda a: a)
    outs = run_prog(tmp_path, {
        "a": t("sbuf", (k, m), st_fmt, encode(sv, st_fmt)),
        "b": t("sbuf", (k, n), mv_fmt, encode(mvv, mv_fmt)),
        "sa": t("sbuf", sss.shape, scale_dtype, sc(sss)),
        "sb": t("sbuf", mss.shape, scale_dtype, sc(mss)),
        "c": t("psum", (m, n), dst_dtype, output=True)},
        [{"nc_matmul_mx": {"dst": "c", "stationary": "a", "moving": "b",
                           "stationary_scale": "sa", "moving_scale": "sb", **(extra or {})}}])
    return outs["c"], ref(sv, ss, mvv, ms)


@pytest.mark.parametrize("k,m,n,st_fmt,mv_fmt", [
    (32, 2, 1, "float8_e4m3fn_x4", "float8_e4m3fn_x4"),
    (64, 10, 37, "float8_e5m2_x4", "float8_e4m3fn_x4"),
    (128, 128, 512, "float8_e4m3fn_x4", "float8_e5m2_x4"),
    (96, 8, 16, "float4_e2m1fn_x4", "float4_e2m1fn_x4"),
    (32, 4, 9, "float4_e2m1fn_x4", "float8_e5m2_x4"),  # MXFP4 x MXFP8 (allowed)
])
def test_exact_products(tmp_path, k, m, n, st_fmt, mv_fmt):
    got, want = matmul(tmp_path, k, m, n, st_fmt, mv_fmt, seed=k + m + n)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want.astype(np.float32))


def test_bfloat16_dst_and_uint8_scales(tmp_path):
    got, want = matmul(tmp_path, 64, 16, 100, "float8_e4m3fn_x4", "float8_e4m3fn_x4",
                       dst_dtype="bfloat16", scale_dtype="uint8", seed=4)
    np.testing.assert_array_equal(got.view(np.uint16),
                                  want.astype(np.float32).astype(ml_dtypes.bfloat16).view(np.uint16))


def test_quantize_then_matmul_is_the_dequantised_product(tmp_path):
    rng = np.random.default_rng(11)
    x = rng.standard_normal((64, 64)).astype(ml_dtypes.bfloat16)  # 16 x4 columns of stationary
    y = rng.standard_normal((64, 128)).astype(ml_dtypes.bfloat16)
    outs = run_prog(tmp_path, {
        "x": t("sbuf", (64, 64), "bfloat16", x), "y": t("sbuf", (64, 128), "bfloat16", y),
        "xq": t("sbuf", (64, 16), "float8_e4m3fn_x4"), "yq": t("sbuf", (64, 32), "float8_e5m2_x4"),
        "xs": t("sbuf", (64, 16), "uint8"), "ys": t("sbuf", (64, 32), "uint8"),
        "c": t("psum", (16, 32), "float32", output=True)},
        [{"quantize_mx": {"dst": "xq", "src": "x", "dst_scale": "xs"}},
         {"quantize_mx": {"dst": "yq", "src": "y", "dst_scale": "ys"}},
         {"nc_matmul_mx": {"dst": "c", "stationary": "xq", "moving": "yq",
                           "stationary_scale": "xs", "moving_scale": "ys"}}])
    # the dequantised values of the independent quantize_mx reference, contracted over the
    # partitions and the 4 values of each element
    def dequantised(src, fmt):
        packed, scales = ref_quantize(src, fmt)
        vals = packed.view(np.uint8).view(FP8[fmt]).astype(np.float64).reshape(64, -1, 4)
        for (g, c), bits in scales.items():
            vals[8 * g:8 * g + 8, c] *= 2.0 ** (bits - 127)
        return vals
    want = np.einsum("kiq,kjq->ij", dequantised(x, "float8_e4m3fn_x4"),
                     dequantised(y, "float8_e5m2_x4"))
    np.testing.assert_allclose(outs["c"], want, rtol=1e-5, atol=1e-4)  # float32 sums


def test_accumulate_chain(tmp_path):
    rng = np.random.default_rng(2)
    sv, mvv = values(rng, (32, 4, 4), "float8_e4m3fn_x4"), values(rng, (32, 8, 4), "float8_e4m3fn_x4")
    enc_a, enc_b = encode(sv, "float8_e4m3fn_x4"), encode(mvv, "float8_e4m3fn_x4")
    one = np.full((4, 4), 127, np.uint8).view(ml_dtypes.float8_e8m0fnu)
    oneb = np.full((4, 8), 127, np.uint8).view(ml_dtypes.float8_e8m0fnu)
    mm = {"dst": "c", "stationary": "a", "moving": "b", "stationary_scale": "sa",
          "moving_scale": "sb"}
    outs = run_prog(tmp_path, {
        "a": t("sbuf", (32, 4), "float8_e4m3fn_x4", enc_a),
        "b": t("sbuf", (32, 8), "float8_e4m3fn_x4", enc_b),
        "sa": t("sbuf", (4, 4), "float8_e8m0fnu", one), "sb": t("sbuf", (4, 8), "float8_e8m0fnu", oneb),
        "c": t("psum", (4, 8), "float32", output=True)},
        [{"nc_matmul_mx": mm}, {"nc_matmul_mx": {**mm, "accumulate": True}},
         {"nc_matmul_mx": {**mm, "accumulate": True}}])
    want = 3 * np.einsum("kiq,kjq->ij", sv.astype(np.float64), mvv.astype(np.float64))
    np.testing.assert_array_equal(outs["c"], want.astype(np.float32))


def test_row_tiling_accepted(tmp_path):
    got, want = matmul(tmp_path, 32, 4, 8, "float8_e4m3fn_x4", "float8_e4m3fn_x4",
                       extra={"tile_position": [64, 0], "tile_size": [32, 128]})
    np.testing.assert_array_equal(got, want.astype(np.float32))


def base(k=64, m=16, n=32, dst="float32", **over):
    tensors = {"a": t("sbuf", (k, m), "float8_e4m3fn_x4", fill=0),
               "b": t("sbuf", (k, n), "float8_e5m2_x4", fill=0),
               "sa": t("sbuf", (k, m), "uint8", fill=127),
               "sb": t("sbuf", (k, n), "uint8", fill=127),
               "c": t("psum", (m, n), dst, output=True)}
    tensors.update(over)
    return tensors


def inst(**over):
    return [{"nc_matmul_mx": {"dst": "c", "stationary": "a", "moving": "b",
                              "stationary_scale": "sa", "moving_scale": "sb", **over}}]


@pytest.mark.parametrize("tensors,instructions,target,code", [
    (base(), inst(), "trn2", "E493"),
    (base(b=t("sbuf", (32, 32), "float8_e5m2_x4", fill=0)), inst(), "trn3", "E510"),
    (base(k=48, sa=t("sbuf", (48, 16), "uint8", fill=127),
          sb=t("sbuf", (48, 32), "uint8", fill=127)), inst(), "trn3", "E510"),
    (base(m=15, c=t("psum", (15, 32), "float32")), inst(), "trn3", "E511"),
    (base(m=130, c=t("psum", (128, 32), "float32")), inst(), "trn3", "E511"),
    (base(n=4097, c=t("psum", (16, 4097), "float32")), inst(), "trn3", "E512"),
    (base(c=t("psum", (16, 31), "float32")), inst(), "trn3", "E513"),
    (base(sa=t("sbuf", (64, 15), "uint8", fill=127)), inst(), "trn3", "E514"),
    (base(sb=t("sbuf", (33, 32), "uint8", fill=127)), inst(), "trn3", "E514"),
    (base(), inst(tile_size=[64, 128]), "trn3", "E515"),
    (base(), inst(tile_position=[32, 0], tile_size=[64, 128]), "trn3", "E515"),
    (base(), inst(tile_position=[0, 0], tile_size=[64, 64]), "trn3", "E515"),
    (base(), inst(tile_position=[0, 0], tile_size=[32, 128]), "trn3", "E515"),  # K 64 > 32
    (base(), inst(moving_scale="sb[3:64, :]"), "trn3", "E516"),
    (base(c=t("psum", (16, 32), "float16")), inst(), "trn3", "E060"),
    (base(a=t("sbuf", (64, 16), "float8_e4m3", fill=0)), inst(), "trn3", "E060"),
    (base(sa=t("psum", (64, 16), "uint8", fill=127)), inst(), "trn3", "E040"),
])
def test_rules(tmp_path, tensors, instructions, target, code):
    assert code in check_codes(tmp_path, tensors, instructions, target)


def test_valid_shapes_pass(tmp_path):
    assert check_codes(tmp_path, base(), inst()) == []
    assert errors(check_codes(tmp_path, base(n=8192, dst="bfloat16"), inst())) == []
    assert check_codes(tmp_path, base(), inst(tile_position=[64, 0], tile_size=[64, 128])) == []


def test_example_checks_and_runs(tmp_path):
    one = np.array([1.0, 1.0, 1.0, 1.0], np.float32).astype(ml_dtypes.float8_e4m3fn).view(np.uint32)
    outs = check_and_run_example(tmp_path, "nc_matmul_mx", {
        "wq": t("sbuf", (32, 8), "float8_e4m3fn_x4", np.full((32, 8), one[0], np.uint32)),
        "xq": t("sbuf", (32, 16), "float8_e4m3fn_x4", np.full((32, 16), one[0], np.uint32)),
        "ws": t("sbuf", (4, 8), "uint8", fill=127), "xs": t("sbuf", (4, 16), "uint8", fill=128),
        "acc": t("psum", (8, 16), "float32", output=True)})
    assert (outs["acc"] == 32 * 4 * 2).all()  # 128 products of 1 x (1 * 2^1)


@pytest.mark.parametrize("form", ["fp8 values", "uint8 bytes", "fp4 values", "fp4 pairs"])
def test_unpacked_npy_forms_are_accepted(tmp_path, form):
    # docs/mx-and-random.md: an x4 tensor's file may also hold one byte per value (4x the
    # last dim: ml_dtypes fp8 / float4_e2m1fn, or uint8), or for fp4 two codes per byte
    rng = np.random.default_rng(8)
    fmt = "float4_e2m1fn_x4" if form.startswith("fp4") else "float8_e5m2_x4"
    vals = values(rng, (32, 6, 4), fmt)
    canonical = encode(vals, fmt)
    if form == "fp8 values":
        unpacked = vals.reshape(32, 24).astype(ml_dtypes.float8_e5m2)
    elif form == "uint8 bytes":
        unpacked = vals.reshape(32, 24).astype(ml_dtypes.float8_e5m2).view(np.uint8)
    elif form == "fp4 values":
        unpacked = vals.reshape(32, 24).astype(ml_dtypes.float4_e2m1fn)
    else:
        codes = vals.reshape(32, 24).astype(ml_dtypes.float4_e2m1fn).view(np.uint8) & 0xF
        unpacked = (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8)
    outs = run_prog(tmp_path, {"a": t("sbuf", (32, 6), fmt, unpacked),
                               "c": t("sbuf", (32, 6), fmt, output=True)},
                    [{"tensor_copy": {"dst": "c", "src": "a"}}])
    np.testing.assert_array_equal(outs["c"], canonical)
    assert outs["c"].dtype == (np.uint16 if fmt.startswith("float4") else np.uint32)


def test_accumulate_unset_adds_where_dst_was_written(tmp_path):
    # NKI: accumulate=None auto-detects "whether this PSUM location was previously written"
    rng = np.random.default_rng(12)
    sv, mvv = values(rng, (32, 4, 4), "float8_e4m3fn_x4"), values(rng, (32, 8, 4), "float8_e4m3fn_x4")
    one_a = np.full((4, 4), 127, np.uint8)
    one_b = np.full((4, 8), 127, np.uint8)
    mm = {"stationary": "a", "moving": "b", "stationary_scale": "sa", "moving_scale": "sb"}
    outs = run_prog(tmp_path, {
        "a": t("sbuf", (32, 4), "float8_e4m3fn_x4", encode(sv, "float8_e4m3fn_x4")),
        "b": t("sbuf", (32, 8), "float8_e4m3fn_x4", encode(mvv, "float8_e4m3fn_x4")),
        "sa": t("sbuf", (4, 4), "uint8", one_a), "sb": t("sbuf", (4, 8), "uint8", one_b),
        "c": t("psum", (4, 8), "float32", output=True),
        "d": t("psum", (4, 8), "float32", output=True),
        "e": t("psum", (4, 8), "float32", fill=100.0, output=True)},
        [{"nc_matmul_mx": {"dst": "c", **mm}}, {"nc_matmul_mx": {"dst": "c", **mm}},
         {"nc_matmul_mx": {"dst": "d[0:2, :]", **mm, "stationary": "a[:, 0:2]",
                           "stationary_scale": "sa[:, 0:2]"}},
         {"nc_matmul_mx": {"dst": "d", **mm}},
         {"nc_matmul_mx": {"dst": "e", **mm, "accumulate": False}}])
    one = np.einsum("kiq,kjq->ij", sv.astype(np.float64), mvv.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(outs["c"], 2 * one)  # fresh, then added
    np.testing.assert_array_equal(outs["d"][0:2], 2 * one[0:2])  # rows 0..1 were written
    np.testing.assert_array_equal(outs["d"][2:], one[2:])  # rows 2..3 were not
    np.testing.assert_array_equal(outs["e"], one)  # false overwrites


# the example's tensors for the registry-wide tests (tests/spec_examples.py)
EXAMPLE_TARGET = "trn3"
EXAMPLE_TENSORS = {
    "wq": "{buffer: sbuf, shape: [32, 8], dtype: float8_e4m3fn_x4, fill: 0}",
    "xq": "{buffer: sbuf, shape: [32, 16], dtype: float8_e4m3fn_x4, fill: 0}",
    "ws": "{buffer: sbuf, shape: [4, 8], dtype: uint8, fill: 127}",
    "xs": "{buffer: sbuf, shape: [4, 16], dtype: uint8, fill: 128}",
    "acc": "{buffer: psum, shape: [8, 16], dtype: float32, output: true}"}
