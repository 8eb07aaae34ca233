"""quantize_mx: fp16/bf16 -> MXFP8 x4 data + e8m0 scales, against a group-by-group reference
written from the NKI 0.6 docstring (scale 2^(floor(log2 amax) - (Emax - 1)), 2^-127 for an
all-zero group, values v / X rounded to the fp8 type, four per x4 element, scales in the
group's quadrant)."""
import math

import ml_dtypes
import numpy as np
import pytest
from mxrand_helpers import check_and_run_example, check_codes, run_prog, t

ELEMENT = {"float8_e4m3fn_x4": ml_dtypes.float8_e4m3fn, "float8_e5m2_x4": ml_dtypes.float8_e5m2}
EMAX = {"float8_e4m3fn_x4": 8, "float8_e5m2_x4": 15}
SRC = {"bfloat16": ml_dtypes.bfloat16, "float16": np.float16}


def ref_quantize(src, fmt):
    """(P, N) -> ((P, N/4) uint32 packed, {(group, column): scale bits}), one group at a time
    in Python floats."""
    p, n = src.shape
    el = ELEMENT[fmt]
    packed = np.zeros((p, n // 4), np.uint32)
    scales = {}
    for g in range(p // 8):
        for c in range(n // 4):
            block = [float(v) for v in src[8 * g:8 * g + 8, 4 * c:4 * c + 4].astype(np.float32).flat]
            if any(math.isnan(v) or math.isinf(v) for v in block):
                scales[g, c] = 255
                codes = [int(np.array(np.nan, np.float32).astype(el).view(np.uint8))] * 32
            else:
                amax = max(abs(v) for v in block)
                if amax == 0:
                    e = -127
                else:
                    e = max(math.frexp(amax)[1] - 1 - (EMAX[fmt] - 1), -127)
                scales[g, c] = e + 127
                codes = [int(np.array([v / 2.0 ** e]).astype(el).view(np.uint8)[0]) for v in block]
            for i in range(8):
                word = 0
                for q in range(4):
                    word |= codes[4 * i + q] << (8 * q)
                packed[8 * g + i, c] = word
    return packed, scales


def scale_row(g):
    return (g // 4) * 32 + g % 4


def sample(rng, p, n, dtype, special=False):
    mag = 2.0 ** rng.integers(-20, 12, size=(p // 8, 1, n // 4, 1))  # one range per group
    x = (rng.standard_normal((p // 8, 8, n // 4, 4)) * mag).reshape(p, n)
    x[0:8, 0:4] = 0.0  # an all-zero group
    if n >= 8:
        x[8 % p:8 % p + 8, 4:8] = 2.0 ** -30  # tiny values (subnormal in fp16)
    if special:
        x[0, 4] = np.nan
        x[p - 1, n - 1] = -np.inf
    return x.astype(SRC[dtype])


def quantize(tmp_path, src, fmt, scale_shape=None, scale_dtype="float8_e8m0fnu",
             scale_view="s", fill=7):
    p, n = src.shape
    scale_shape = scale_shape or ((p, n // 4) if p > 32 else (p // 8, n // 4))
    dtype = "bfloat16" if src.dtype == ml_dtypes.bfloat16 else "float16"
    outs = run_prog(tmp_path, {
        "x": t("sbuf", src.shape, dtype, src),
        "q": t("sbuf", (p, n // 4), fmt, output=True),
        "s": t("sbuf", scale_shape, scale_dtype, fill=fill, output=True)},
        [{"quantize_mx": {"dst": "q", "src": "x", "dst_scale": scale_view}}])
    return outs["q"], outs["s"]


@pytest.mark.parametrize("p,n,dtype,fmt", [
    (32, 4, "bfloat16", "float8_e4m3fn_x4"),
    (32, 100, "float16", "float8_e5m2_x4"),
    (64, 36, "bfloat16", "float8_e5m2_x4"),
    (96, 8, "float16", "float8_e4m3fn_x4"),
    (128, 512, "bfloat16", "float8_e4m3fn_x4"),
])
def test_matches_reference(tmp_path, p, n, dtype, fmt):
    rng = np.random.default_rng(p * 1000 + n)
    src = sample(rng, p, n, dtype)
    q, s = quantize(tmp_path, src, fmt)
    want_q, want_s = ref_quantize(src, fmt)
    assert q.dtype == np.uint32
    np.testing.assert_array_equal(q, want_q)
    bits = s.view(np.uint8)
    for (g, c), v in want_s.items():
        assert bits[scale_row(g), c] == v, (g, c)
    used = {scale_row(g) for g in range(p // 8)}
    others = [r for r in range(bits.shape[0]) if r not in used]
    assert (bits[others] == np.array(7, np.float32).astype(ml_dtypes.float8_e8m0fnu)
            .view(np.uint8)).all()  # rows no group uses keep their contents


def test_scale_is_twice_the_ocp_scale_and_never_saturates(tmp_path):
    # amax = 448 (e4m3fn's largest value): floor(log2 448) = 8, X = 2^(8 - 7) = 2 -> 224;
    # OCP's sample scale would be 2^0 and keep 448
    src = np.full((32, 4), 448.0, np.float32).astype(ml_dtypes.bfloat16)
    q, s = quantize(tmp_path, src, "float8_e4m3fn_x4")
    assert s.view(np.uint8)[0, 0] == 128
    vals = q.view(np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    assert (vals == 224.0).all()
    # the largest fp16 value with e5m2: X = 2^(15 - 14), 65504 / 2 = 32752 rounds to 32768
    src = np.full((32, 4), 65504.0, np.float16)
    q, s = quantize(tmp_path, src, "float8_e5m2_x4")
    assert s.view(np.uint8)[0, 0] == 128
    assert (q.view(np.uint8).view(ml_dtypes.float8_e5m2).astype(np.float32) == 32768).all()


def _group(values, dtype):
    """One 8 x 4 group (32 partitions, 4 columns; the other groups zero) from 32 values."""
    src = np.zeros((32, 4), np.float32)
    src[0:8] = np.asarray(values, np.float32).reshape(8, 4)
    return src.astype(dtype)


def _codes(q):
    return q.view(np.uint8).reshape(32, 4)[0:8].reshape(-1)


def test_ties_round_to_even_and_subnormals(tmp_path):
    # codes written by hand from the e4m3fn layout (bias 7, 3 mantissa bits, subnormal step
    # 2^-9), independent of any cast: amax 256 -> X = 2^(8 - 7) = 2
    vals = [256.0, 2.125, 2.375, -2.125, 2.0 ** -9, 3 * 2.0 ** -9, 2.0 ** -7, 0.0] * 4
    q, s = quantize(tmp_path, _group(vals, ml_dtypes.bfloat16), "float8_e4m3fn_x4")
    assert s.view(np.uint8)[0, 0] == 128
    # 128; 1.0625 ties to 1.0; 1.1875 ties to 1.25; -1.0; 2^-10 ties to 0;
    # 3 * 2^-10 ties to 2^-8 (code 2); 2^-8; 0
    assert _codes(q).tolist() == [0x70, 0x38, 0x3A, 0xB8, 0x00, 0x02, 0x02, 0x00] * 4
    # float16 subnormal inputs: amax 3 * 2^-24 -> X = 2^(-23 - 7); 64 and 192
    q, s = quantize(tmp_path, _group([2.0 ** -24, 3 * 2.0 ** -24] * 16, np.float16),
                    "float8_e4m3fn_x4")
    assert s.view(np.uint8)[0, 0] == 127 - 30
    assert _codes(q).tolist() == [0x68, 0x74] * 16


def test_scale_exponent_clamps_at_minus_127(tmp_path):
    # bfloat16 amax 2^-126: 2^(-126 - 7) is below e8m0's range; X = 2^-127, values * 2^127
    q, s = quantize(tmp_path, _group([2.0 ** -126, 2.0 ** -127] * 16, ml_dtypes.bfloat16),
                    "float8_e4m3fn_x4")
    assert s.view(np.uint8)[0, 0] == 0
    assert _codes(q).tolist() == [0x40, 0x38] * 16  # 2.0 and 1.0


def test_all_zero_group_gets_2_pow_minus_127(tmp_path):
    q, s = quantize(tmp_path, np.zeros((32, 8), np.float16), "float8_e4m3fn_x4",
                    scale_dtype="uint8")
    assert s.dtype == np.uint8 and (s[0:4] == 0).all()
    assert (q == 0).all()


def test_nan_and_inf_groups_get_the_nan_scale(tmp_path):
    rng = np.random.default_rng(5)
    src = sample(rng, 64, 16, "bfloat16", special=True)
    q, s = quantize(tmp_path, src, "float8_e5m2_x4")
    want_q, _ = ref_quantize(src, "float8_e5m2_x4")
    np.testing.assert_array_equal(q, want_q)
    assert s.view(np.uint8)[0, 1] == 255 and s.view(np.uint8)[scale_row(7), 3] == 255


def test_packed_scales_at_a_quadrant_offset(tmp_path):
    # the MXFP guide's packing: a second tensor's scales at offset 4 of every quadrant
    rng = np.random.default_rng(9)
    src = sample(rng, 128, 32, "float16")
    _, s = quantize(tmp_path, src, "float8_e4m3fn_x4", scale_shape=(128, 8),
                    scale_view="s[4:128, :]", fill=1)
    _, want_s = ref_quantize(src, "float8_e4m3fn_x4")
    bits = s.view(np.uint8)
    for (g, c), v in want_s.items():
        assert bits[4 + scale_row(g), c] == v
    assert (bits[0:4] == 127).all()  # fill 1.0 = 2^0 untouched below the offset


def test_multidim_free_dims(tmp_path):
    rng = np.random.default_rng(3)
    src = sample(rng, 32, 24, "bfloat16")
    outs = run_prog(tmp_path, {
        "x": t("sbuf", (32, 2, 12), "bfloat16", src.reshape(32, 2, 12)),
        "q": t("sbuf", (32, 6), "float8_e4m3fn_x4", output=True),
        "s": t("sbuf", (4, 6), "uint8", output=True)},
        [{"quantize_mx": {"dst": "q", "src": "x", "dst_scale": "s"}}])
    want_q, want_s = ref_quantize(src, "float8_e4m3fn_x4")
    np.testing.assert_array_equal(outs["q"], want_q)
    assert all(outs["s"][g, c] == v for (g, c), v in want_s.items())


def base(p=64, n=16, scale=(64, 4), **over):
    tensors = {"x": t("sbuf", (p, n), "bfloat16", fill=1.0),
               "q": t("sbuf", (p, n // 4), "float8_e4m3fn_x4", output=True),
               "s": t("sbuf", scale, "float8_e8m0fnu", output=True)}
    tensors.update(over)
    return tensors


def inst(**over):
    return [{"quantize_mx": {"dst": "q", "src": "x", "dst_scale": "s", **over}}]


@pytest.mark.parametrize("tensors,instructions,target,code", [
    (base(), inst(), "trn2", "E493"),
    (base(p=16, scale=(2, 4)), inst(), "trn3", "E500"),
    (base(n=18, scale=(64, 4)), inst(), "trn3", "E501"),
    (base(q=t("sbuf", (64, 5), "float8_e4m3fn_x4")), inst(), "trn3", "E502"),
    (base(scale=(64, 3)), inst(), "trn3", "E503"),
    (base(scale=(35, 4)), inst(), "trn3", "E503"),
    (base(), inst(dst_scale="s[2:64, :]"), "trn3", "E504"),
    (base(p=64, x=t("sbuf", (96, 16), "bfloat16", fill=1.0)), inst(src="x[16:80, :]"), "trn3",
     "E504"),
    (base(x=t("sbuf", (64, 16), "float32", fill=1.0)), inst(), "trn3", "E060"),
    (base(q=t("sbuf", (64, 4), "float4_e2m1fn_x4")), inst(), "trn3", "E060"),
    (base(s=t("sbuf", (64, 4), "int8")), inst(), "trn3", "E060"),
    (base(s=t("psum", (64, 4), "uint8")), inst(), "trn3", "E040"),
])
def test_rules(tmp_path, tensors, instructions, target, code):
    assert code in check_codes(tmp_path, tensors, instructions, target)


def test_valid_layouts_pass(tmp_path):
    assert check_codes(tmp_path, base(), inst()) == []
    assert check_codes(tmp_path, base(p=32, scale=(4, 4)), inst()) == []
    assert check_codes(tmp_path, base(p=64, scale=(36, 4)), inst()) == []


def test_example_checks_and_runs(tmp_path):
    outs = check_and_run_example(tmp_path, "quantize_mx", {
        "x": t("sbuf", (32, 16), "bfloat16", fill=1.5),
        "xq": t("sbuf", (32, 4), "float8_e4m3fn_x4", output=True),
        "xs": t("sbuf", (4, 4), "float8_e8m0fnu", output=True)})
    assert (outs["xs"].view(np.uint8) == 127 - 7).all()  # floor(log2 1.5) - (8 - 1)


# the example's tensors for the registry-wide tests (tests/spec_examples.py)
EXAMPLE_TARGET = "trn3"
EXAMPLE_TENSORS = {
    "x": "{buffer: sbuf, shape: [32, 16], dtype: bfloat16, fill: 1.5}",
    "xq": "{buffer: sbuf, shape: [32, 4], dtype: float8_e4m3fn_x4, output: true}",
    "xs": "{buffer: sbuf, shape: [4, 4], dtype: float8_e8m0fnu, output: true}"}
