"""nc_stream_shuffle against a loop transcription of the NKI 0.6 page: per 32-partition
quadrant, dst partition i takes src partition mask[i] of the same quadrant; 255 keeps dst."""
import numpy as np
import pytest
import yaml
from prog_helpers import (NP_TYPES, assert_bits_equal, codes, diagnostics, out, random_floats,
                          reported_at, run_program, sbuf, write_program)

from nkirun.isa import REGISTRY


def ref_shuffle(src, dst_before, mask):
    """The page's words as loops: quadrant by quadrant, partition by partition."""
    res = dst_before.copy()
    for r in range(res.shape[0]):
        q, i = divmod(r, 32)
        if mask[i] != 255:
            res[r] = src[q * 32 + mask[i]]
    return res


def _shuffle(tmp_path, src, dst_init, mask, src_view="s", dst_view="d"):
    tensors = {"s": sbuf(src), "d": sbuf(dst_init, output=True)}
    return run_program(tmp_path, tensors, [{"nc_stream_shuffle": {
        "dst": dst_view, "src": src_view, "shuffle_mask": list(mask)}}])["d"]


ROTATE = [(i - 1) % 32 for i in range(32)]


@pytest.mark.parametrize("p,free", [(32, (128,)), (128, (7,)), (37, (3, 5)), (64, (1,))])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float8_e4m3", "int32"])
def test_rotation_matches_reference(tmp_path, p, free, dtype):
    rng = np.random.default_rng(p + len(free))
    if dtype == "int32":
        src = rng.integers(-2**31, 2**31 - 1, (p, *free)).astype(np.int32)
    else:
        src = random_floats(rng, (p, *free)).astype(NP_TYPES[dtype])
    dst0 = np.zeros_like(src)
    # a partial last quadrant may only name src partitions it has
    mask = list(ROTATE) if p % 32 == 0 else [(i + 1) % (p % 32) for i in range(32)]
    got = _shuffle(tmp_path, src, dst0, mask)
    assert_bits_equal(got, ref_shuffle(src, dst0, mask))


def test_in_place_rotation(tmp_path):
    """The page's first example: shuffle a 32-partition tile in place, i <- (i - 1) % 32."""
    a = np.arange(32 * 4, dtype=np.float32).reshape(32, 4)
    got = run_program(tmp_path, {"a": sbuf(a, output=True)}, [{"nc_stream_shuffle": {
        "dst": "a", "src": "a", "shuffle_mask": ROTATE}}])["a"]
    np.testing.assert_array_equal(got, a[ROTATE])


def test_broadcast_one_partition_to_32(tmp_path):
    a = np.arange(1 * 16, dtype=np.float32).reshape(1, 16) - 3.5
    got = run_program(tmp_path, {"a": sbuf(a), "b": out((32, 16), "float32")},
                      [{"nc_stream_shuffle": {"dst": "b", "src": "a", "shuffle_mask": [0] * 32}}])
    np.testing.assert_array_equal(got["b"], np.repeat(a, 32, axis=0))


def test_each_quadrant_shuffled_with_the_same_mask(tmp_path):
    rng = np.random.default_rng(5)
    src = rng.standard_normal((128, 9)).astype(np.float32)
    mask = list(rng.permutation(32))
    got = _shuffle(tmp_path, src, np.zeros_like(src), mask)
    for q in range(4):
        np.testing.assert_array_equal(got[q * 32:(q + 1) * 32], src[q * 32 + np.array(mask)])


def test_255_leaves_dst_partitions_unmodified(tmp_path):
    rng = np.random.default_rng(9)
    src = rng.standard_normal((64, 6)).astype(np.float32)
    dst0 = np.full_like(src, 77.0)
    mask = [255 if i % 3 == 0 else 31 - i for i in range(32)]
    got = _shuffle(tmp_path, src, dst0, mask)
    assert_bits_equal(got, ref_shuffle(src, dst0, mask))
    assert (got[::3][:11] == 77.0).all()


def test_all_255_changes_nothing(tmp_path):
    src = np.ones((32, 4), np.float32)
    dst0 = np.arange(32 * 4, dtype=np.float32).reshape(32, 4)
    np.testing.assert_array_equal(_shuffle(tmp_path, src, dst0, [255] * 32), dst0)


def test_nan_payloads_copied_bit_exactly(tmp_path):
    bits = np.array([[0x7FC00001], [0xFFC12345], [0x7F800000], [0x80000000]], np.uint32)
    src = np.repeat(bits.view(np.float32), 8, axis=1)
    src = np.concatenate([src, np.zeros((28, 8), np.float32)])
    got = _shuffle(tmp_path, src, np.zeros_like(src), [3, 2, 1, 0] + [4] * 28)
    assert_bits_equal(got[:4], src[[3, 2, 1, 0]])


def test_views_at_quadrant_boundaries(tmp_path):
    """nki-library's broadcast: one partition to each quadrant, dst views at 32g."""
    t = np.zeros((128, 5), np.float32)
    t[0] = np.arange(5)
    instrs = [{"nc_stream_shuffle": {"dst": f"t[{32 * g}:{32 * g + 32}, :]", "src": "t[0:1, :]",
                                     "shuffle_mask": [0] * 32}} for g in range(4)]
    got = run_program(tmp_path, {"t": sbuf(t, output=True)}, instrs)["t"]
    np.testing.assert_array_equal(got, np.repeat(t[:1], 128, axis=0))


def test_psum_operands(tmp_path):
    src = np.arange(32 * 3, dtype=np.float32).reshape(32, 3)
    got = run_program(tmp_path, {"s": sbuf(src, buffer="psum"),
                                 "d": out((32, 3), "float32", buffer="psum")},
                      [{"nc_stream_shuffle": {"dst": "d", "src": "s", "shuffle_mask":
                                              list(reversed(range(32)))}}])["d"]
    np.testing.assert_array_equal(got, src[::-1])


def test_spec_example_checks_and_runs(tmp_path):
    entry = yaml.safe_load(REGISTRY["nc_stream_shuffle"].example)[0]
    a = np.arange(64 * 4, dtype=np.float32).reshape(64, 4)
    got = run_program(tmp_path, {"a": sbuf(a), "b": out((32, 4), "float32")}, [entry])
    np.testing.assert_array_equal(got["b"], np.repeat(a[:1], 32, axis=0))


# ---- rules -------------------------------------------------------------------------------------
def _diags(tmp_path, src_shape, dst_shape, mask, src="s", dst="d", src_dtype="float32",
           dst_dtype="float32"):
    return diagnostics(tmp_path, {"s": sbuf(np.zeros(src_shape), src_dtype),
                                  "d": out(dst_shape, dst_dtype)},
                       [{"nc_stream_shuffle": {"dst": dst, "src": src, "shuffle_mask": mask}}])


@pytest.mark.parametrize("mask,code", [([0] * 31, "E400"), ([0] * 33, "E400"), (0, "E400"),
                                       ([32] + [0] * 31, "E401"), ([-1] + [0] * 31, "E401"),
                                       ([254] * 32, "E401")])
def test_bad_masks(tmp_path, mask, code):
    assert code in codes(_diags(tmp_path, (32, 4), (32, 4), mask))


def test_dtype_and_free_size_must_match(tmp_path):
    assert "E404" in codes(_diags(tmp_path, (32, 4), (32, 4), [0] * 32, dst_dtype="bfloat16"))
    assert "E405" in codes(_diags(tmp_path, (32, 4), (32, 5), [0] * 32))


@pytest.mark.parametrize("src,dst,ok", [
    ("s[32:64, :]", "d[0:32, :]", True), ("s[96:128, :]", "d[64:96, :]", True),
    ("s[16:48, :]", "d[0:32, :]", False), ("s[0:64, :]", "d[64:128, :]", True),
    ("s[32:96, :]", "d[0:64, :]", False), ("s[0:96, :]", "d[0:96, :]", True),
    ("s[0:1, :]", "d[32:64, :]", True), ("s[0:128:2, :]", "d[0:64, :]", False),
])
def test_start_partition_rule(tmp_path, src, dst, ok):
    c = codes(_diags(tmp_path, (128, 4), (128, 4), list(range(32)) if "0:1" not in src
                     else [0] * 32, src=src, dst=dst))
    assert ("E402" not in c) == ok, c


def test_mask_naming_a_missing_src_partition(tmp_path):
    # dst quadrant 1 would read src partition 32, but src has 1 partition
    c = codes(_diags(tmp_path, (1, 4), (64, 4), [0] * 32))
    assert "E403" in c
    assert "E403" not in codes(_diags(tmp_path, (1, 4), (64, 4), [0] * 32,
                                      dst="d[0:32, :]"))


def test_errors_are_located_at_the_keyword(tmp_path):
    path = write_program(tmp_path, {"s": sbuf(np.zeros((32, 4), np.float32)),
                                    "d": out((32, 4), "float32")},
                         [{"nc_stream_shuffle": {"dst": "d", "src": "s",
                                                 "shuffle_mask": [40] * 32}}])
    reported_at(path, "E401", "shuffle_mask")


def test_cost_is_max_min_ii_n():
    from types import SimpleNamespace

    from nkirun.hw.targets import TARGETS
    spec, t = REGISTRY["nc_stream_shuffle"], TARGETS["trn2"]
    for n, want in ((4, t.min_ii), (1000, 1000)):
        assert spec.cycles({"src": SimpleNamespace(free_size=n)}, t) == want


def test_text_form_round_trip(tmp_path):
    import pathlib

    from nkirun.api import check_program, run
    from nkirun.source.write import to_text
    src = np.arange(32 * 4, dtype=np.float32).reshape(32, 4)
    path = write_program(tmp_path, {"s": sbuf(src), "d": out((32, 4), "float32")},
                         [{"nc_stream_shuffle": {"dst": "d", "src": "s[0:32, :]",
                                                 "shuffle_mask": ROTATE}}])
    text = to_text(check_program(path).program)
    nkis = pathlib.Path(path).with_suffix(".nkis")
    nkis.write_text(text)
    assert check_program(str(nkis)).diagnostics == []
    np.testing.assert_array_equal(run(str(nkis))["d"], src[ROTATE])


# the example's tensors for the registry-wide tests (tests/spec_examples.py)
EXAMPLE_TENSORS = {
    "a": "{buffer: sbuf, shape: [128, 512], dtype: float32, fill: 1}",
    "b": "{buffer: sbuf, shape: [32, 512], dtype: float32, output: true}"}
