"""rng: 32 random bits per element truncated to dst's integer dtype (least significant bits),
on the Vector or (NeuronCore-v3+) GpSimd engine. The bits are nkirun's model, so the tests
check what the NKI 0.6 docs promise: the truncation rule, a uniform distribution, seeding
and per-engine state, and the run-time note that the values are not the hardware's."""
import numpy as np
import pytest
from mxrand_helpers import check_and_run_example, check_codes, errors, run_prog, t

SEED = {"seed": t("sbuf", (1, 1), "int32", fill=1234)}


def draw(tmp_path, shape, dtype, engine="vector", target="trn3", seeded=True, warnings=None,
         buffer="sbuf"):
    tensors = {**(SEED if seeded else {}), "r": t(buffer, shape, dtype, output=True)}
    prog = ([{"set_rng_seed": {"src_seeds": "seed"}}] if seeded else []) + [
        {"rng": {"dst": "r", "engine": engine}}]
    return run_prog(tmp_path, tensors, prog, target, warnings)["r"]


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16", "int32"])
def test_truncation_keeps_the_least_significant_bits(tmp_path, dtype):
    full = draw(tmp_path, (37, 101), "uint32")
    got = draw(tmp_path, (37, 101), dtype)  # same seed, same sequence
    width = np.dtype(dtype).itemsize * 8
    want = (full & np.uint32((1 << width) - 1)).astype(f"u{width // 8}").view(dtype)
    np.testing.assert_array_equal(got, want)


def test_uniform_bits(tmp_path):
    r = draw(tmp_path, (128, 2048), "uint32")
    n = r.size
    for shift in (0, 8, 16, 28):  # each 4-bit field is uniform over 16 values
        counts = np.bincount(((r >> shift) & 0xF).ravel(), minlength=16)
        assert np.all(np.abs(counts - n / 16) < 6 * np.sqrt(n / 16)), (shift, counts)
    bits = np.unpackbits(r.view(np.uint8)).mean()
    assert abs(bits - 0.5) < 0.002
    # neighbouring elements and partitions are not correlated
    f = r.astype(np.float64) / 2**32 - 0.5
    assert abs((f[:, 1:] * f[:, :-1]).mean()) < 0.002
    assert abs((f[1:] * f[:-1]).mean()) < 0.002
    assert len(np.unique(r)) > 0.99 * n


def test_seeding_replays_and_distinguishes(tmp_path):
    a = draw(tmp_path, (128, 64), "uint32")
    b = draw(tmp_path, (128, 64), "uint32")
    np.testing.assert_array_equal(a, b)
    outs = run_prog(tmp_path, {"s1": t("sbuf", (1, 1), "uint32", fill=1),
                               "s2": t("sbuf", (1, 1), "uint32", fill=2),
                               "x": t("sbuf", (8, 16), "uint32", output=True),
                               "y": t("sbuf", (8, 16), "uint32", output=True),
                               "z": t("sbuf", (8, 16), "uint32", output=True)},
                    [{"set_rng_seed": {"src_seeds": "s1"}}, {"rng": {"dst": "x"}},
                     {"rng": {"dst": "y"}},  # the sequence continues
                     {"set_rng_seed": {"src_seeds": "s2"}}, {"rng": {"dst": "z"}}])
    assert (outs["x"] != outs["y"]).mean() > 0.99
    assert (outs["x"] != outs["z"]).mean() > 0.99


def test_engines_have_their_own_generators(tmp_path):
    outs = run_prog(tmp_path, {"x": t("sbuf", (16, 32), "uint32", output=True),
                               "y": t("sbuf", (16, 32), "uint32", output=True),
                               "z": t("sbuf", (16, 32), "uint32", output=True)},
                    [{"rng": {"dst": "x", "engine": "vector"}},
                     {"rng": {"dst": "y", "engine": "gpsimd"}},
                     {"rng": {"dst": "z", "engine": "vector"}}])
    solo = run_prog(tmp_path, {"x": t("sbuf", (16, 32), "uint32", output=True),
                               "z": t("sbuf", (16, 32), "uint32", output=True)},
                    [{"rng": {"dst": "x"}}, {"rng": {"dst": "z"}}])
    np.testing.assert_array_equal(outs["z"], solo["z"])  # gpsimd draws left Vector alone
    assert (outs["x"] != outs["y"]).mean() > 0.99


def test_partitions_are_lanes(tmp_path):
    # each partition has its own state: drawing for partitions 0..63 does not move 64..127
    outs = run_prog(tmp_path, {"x": t("sbuf", (128, 8), "uint32", output=True),
                               "y": t("sbuf", (128, 8), "uint32", output=True)},
                    [{"rng": {"dst": "x[0:64, :]"}}, {"rng": {"dst": "x[64:128, :]"}},
                     {"rng": {"dst": "y"}}])
    fresh = run_prog(tmp_path, {"y": t("sbuf", (128, 8), "uint32", output=True)},
                     [{"rng": {"dst": "y"}}])["y"]
    np.testing.assert_array_equal(outs["x"], fresh)  # lanes 0..63 and 64..127 each drew once
    assert (outs["y"] != fresh).all()


def test_psum_dst_and_run_time_note(tmp_path):
    warnings = []
    r = draw(tmp_path, (4, 8), "int32", buffer="psum", warnings=warnings)
    assert r.shape == (4, 8)
    notes = [w for w in warnings if w.code == "W580"]
    assert len(notes) == 1 and "not the hardware" in notes[0].message


@pytest.mark.parametrize("tensors,instructions,target,code", [
    ({"r": t("sbuf", (4, 4), "float32", output=True)}, [{"rng": {"dst": "r"}}], "trn3", "E060"),
    ({"r": t("sbuf", (4, 4), "uint32", output=True)}, [{"rng": {"dst": "r", "engine": "gpsimd"}}],
     "trn1", "E493"),
    ({"r": t("psum", (4, 4), "uint32", output=True)}, [{"rng": {"dst": "r", "engine": "gpsimd"}}],
     "trn2", "E044"),
    ({"r": t("sbuf", (4, 4), "uint32", output=True)}, [{"rng": {"dst": "r", "engine": "scalar"}}],
     "trn2", "E025"),
])
def test_rules(tmp_path, tensors, instructions, target, code):
    assert code in check_codes(tmp_path, tensors, instructions, target)


@pytest.mark.parametrize("target", ["trn1", "inf2", "trn2", "trn3"])
def test_vector_rng_on_every_target(tmp_path, target):
    assert errors(check_codes(tmp_path, {"r": t("sbuf", (4, 4), "uint16", output=True)},
                              [{"rng": {"dst": "r"}}], target)) == []


def test_example_checks_and_runs(tmp_path):
    outs = check_and_run_example(tmp_path, "rng", {"bits": t("sbuf", (16, 64), "uint16",
                                                             output=True)}, "trn1")
    assert len(np.unique(outs["bits"])) > 900
