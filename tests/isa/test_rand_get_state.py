"""rand_get_state: each lane's PRNG state into partition p of a uint32 tile (6 values on
GpSimd, 24 on the Vector engine; SBUF, or PSUM from the v4 Vector engine; NKI 0.6 docs).
The values are nkirun's model state: the tests check the plumbing (shapes, lanes, that
drawing advances it, that it round-trips through rand_set_state) and the rules."""
import numpy as np
import pytest
from mxrand_helpers import check_and_run_example, check_codes, errors, run_prog, t


def test_state_shape_and_draws_advance_it(tmp_path):
    outs = run_prog(tmp_path, {
        "g0": t("sbuf", (128, 24), "uint32", output=True),
        "r": t("sbuf", (128, 3), "uint32", output=True),
        "g1": t("psum", (128, 24), "uint32", output=True)},
        [{"rand_get_state": {"dst": "g0", "engine": "vector"}}, {"rng": {"dst": "r"}},
         {"rand_get_state": {"dst": "g1", "engine": "vector"}}])
    g0, g1 = outs["g0"].reshape(128, 4, 6), outs["g1"].reshape(128, 4, 6)
    # three values per lane from four states: one step of every state (x0..x4 shift along,
    # the Weyl counter d grows by 362437)
    np.testing.assert_array_equal(g1[:, :, 1:5], g0[:, :, 0:4])
    np.testing.assert_array_equal(g1[:, :, 5], g0[:, :, 5] + np.uint32(362437))
    assert len(np.unique(g0[:, :, 0])) == 512  # distinct states per lane and stream


def test_lanes_outside_the_tile_keep_their_state(tmp_path):
    st = np.random.default_rng(1).integers(1, 2**32, size=(8, 6), dtype=np.uint64).astype(np.uint32)
    outs = run_prog(tmp_path, {
        "s": t("sbuf", (8, 6), "uint32", st),
        "g0": t("sbuf", (128, 6), "uint32", output=True),
        "g1": t("sbuf", (128, 6), "uint32", output=True)},
        [{"rand_get_state": {"dst": "g0"}},
         {"rand_set_state": {"src_seeds": "s"}},  # lanes 0..7 of a 8-partition tile
         {"rand_get_state": {"dst": "g1"}}], "trn2")
    np.testing.assert_array_equal(outs["g1"][:8], st)
    np.testing.assert_array_equal(outs["g1"][8:], outs["g0"][8:])


def test_a_partition_slice_reads_those_lanes(tmp_path):
    outs = run_prog(tmp_path, {"all": t("sbuf", (128, 6), "uint32", output=True),
                               "part": t("sbuf", (16, 6), "uint32", output=True),
                               "big": t("sbuf", (128, 6), "uint32", fill=0, output=True)},
                    [{"rand_get_state": {"dst": "all"}},
                     {"rand_get_state": {"dst": "part"}},
                     {"rand_get_state": {"dst": "big[32:64:2, :]"}}], "trn2")
    np.testing.assert_array_equal(outs["part"], outs["all"][:16])
    np.testing.assert_array_equal(outs["big"][32:64:2], outs["all"][32:64:2])
    assert (outs["big"][33:64:2] == 0).all()


@pytest.mark.parametrize("decl,engine,target,code", [
    (t("sbuf", (4, 6), "uint32"), "gpsimd", "trn1", "E493"),
    (t("sbuf", (4, 24), "uint32"), "vector", "trn2", "E493"),
    (t("sbuf", (4, 24), "uint32"), "gpsimd", "trn2", "E570"),
    (t("sbuf", (4, 2, 3), "uint32"), "vector", "trn3", "E570"),
    (t("sbuf", (4, 2, 3), "uint32"), "gpsimd", "trn3", "E570"),  # the docs: a 2-D tensor
    (t("sbuf", (4, 6), "float32"), "gpsimd", "trn2", "E060"),
    (t("psum", (4, 6), "uint32"), "gpsimd", "trn3", "E044"),
    (t("hbm", (4, 6), "uint32"), "gpsimd", "trn3", "E040"),
])
def test_rules(tmp_path, decl, engine, target, code):
    tensors = {"s": {**decl, "output": True}}
    assert code in check_codes(tmp_path, tensors, [{"rand_get_state": {"dst": "s", "engine": engine}}],
                               target)


def test_valid(tmp_path):
    assert errors(check_codes(tmp_path, {"s": t("sbuf", (4, 6), "uint32", output=True)},
                              [{"rand_get_state": {"dst": "s"}}], "trn2")) == []


def test_example_checks_and_runs(tmp_path):
    outs = check_and_run_example(tmp_path, "rand_get_state", {
        "state": t("sbuf", (128, 6), "uint32", output=True)}, "trn2")
    assert len(np.unique(outs["state"])) == 128 * 6


def test_run_time_note(tmp_path):
    warnings = []
    run_prog(tmp_path, {"s": t("sbuf", (4, 6), "uint32", output=True)},
             [{"rand_get_state": {"dst": "s"}}], "trn2", warnings)
    assert [w.code for w in warnings] == ["W580"]


EXAMPLE_TENSORS = {"state": "{buffer: sbuf, shape: [128, 6], dtype: uint32, output: true}"}  # spec_examples
