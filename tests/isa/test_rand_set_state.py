"""rand_set_state / rand_get_state: per-lane XORWOW states (6 uint32 on GpSimd, 24 on the
Vector engine, NeuronCore-v3+; Vector only on v4), partition p = lane p (NKI 0.6 docs).
The model must round-trip: get after set returns the state, set(get()) replays the numbers,
and drawing advances the state."""
import numpy as np
import pytest
from mxrand_helpers import check_and_run_example, check_codes, run_prog, t


def states(rng, p, words):
    return rng.integers(1, 2**32, size=(p, words), dtype=np.uint64).astype(np.uint32)


@pytest.mark.parametrize("engine,words,target", [("gpsimd", 6, "trn2"), ("gpsimd", 6, "trn3"),
                                                 ("vector", 24, "trn3")])
def test_round_trip(tmp_path, engine, words, target):
    st = states(np.random.default_rng(words), 128, words)
    outs = run_prog(tmp_path, {
        "s": t("sbuf", (128, words), "uint32", st),
        "back": t("sbuf", (128, words), "uint32", output=True),
        "later": t("sbuf", (128, words), "uint32", output=True),
        "a": t("sbuf", (128, 40), "uint32", output=True),
        "b": t("sbuf", (128, 40), "uint32", output=True)},
        [{"rand_set_state": {"src_seeds": "s", "engine": engine}},
         {"rand_get_state": {"dst": "back", "engine": engine}},
         {"rng": {"dst": "a", "engine": engine}},
         {"rand_get_state": {"dst": "later", "engine": engine}},
         {"rand_set_state": {"src_seeds": "s", "engine": engine}},
         {"rng": {"dst": "b", "engine": engine}}], target)
    np.testing.assert_array_equal(outs["back"], st)  # read back unchanged
    np.testing.assert_array_equal(outs["a"], outs["b"])  # the same state replays
    assert (outs["later"] != st).any(axis=1).all()  # drawing advanced every lane


def test_saved_state_resumes_the_sequence(tmp_path):
    # rand_get_state in the middle of a sequence, restored later, continues from there
    outs = run_prog(tmp_path, {
        "seed": t("sbuf", (1, 1), "int32", fill=9),
        "mid": t("sbuf", (32, 24), "uint32"),
        "a1": t("sbuf", (32, 16), "uint32", output=True),
        "a2": t("sbuf", (32, 16), "uint32", output=True),
        "b2": t("sbuf", (32, 16), "uint32", output=True)},
        [{"set_rng_seed": {"src_seeds": "seed"}},
         {"rng": {"dst": "a1"}},
         {"rand_get_state": {"dst": "mid", "engine": "vector"}},
         {"rng": {"dst": "a2"}},
         {"rng": {"dst": "a1"}},  # draw more, then rewind
         {"rand_set_state": {"src_seeds": "mid", "engine": "vector"}},
         {"rng": {"dst": "b2"}}])
    np.testing.assert_array_equal(outs["a2"], outs["b2"])


def test_xorwow_recurrence_of_the_model(tmp_path):
    # the model's GpSimd generator is Marsaglia's XORWOW on the state x0..x4, d (documented
    # in hw/prng.py): one step from a known state, computed here by hand
    st = np.array([[1, 2, 3, 4, 5, 6]], np.uint32)
    outs = run_prog(tmp_path, {"s": t("sbuf", (1, 6), "uint32", st),
                               "r": t("sbuf", (1, 2), "uint32", output=True)},
                    [{"rand_set_state": {"src_seeds": "s"}}, {"rng": {"dst": "r", "engine": "gpsimd"}}])
    x = [1, 2, 3, 4, 5]
    d = 6
    want = []
    for _ in range(2):
        tt, s = x[4], x[0]
        tt ^= tt >> 2
        tt = (tt ^ (tt << 1)) & 0xFFFFFFFF
        tt ^= s ^ ((s << 4) & 0xFFFFFFFF)
        x = [tt, s, x[1], x[2], x[3]]
        d = (d + 362437) & 0xFFFFFFFF
        want.append((tt + d) & 0xFFFFFFFF)
    np.testing.assert_array_equal(outs["r"][0], np.array(want, np.uint32))


@pytest.mark.parametrize("decl,engine,target,code", [
    (t("sbuf", (4, 6), "uint32", fill=1), "gpsimd", "trn1", "E493"),
    (t("sbuf", (4, 24), "uint32", fill=1), "vector", "trn2", "E493"),
    (t("sbuf", (4, 24), "uint32", fill=1), "gpsimd", "trn2", None),  # E560 / E570
    (t("sbuf", (4, 6), "uint32", fill=1), "vector", "trn3", None),
    (t("sbuf", (4, 6), "int32", fill=1), "gpsimd", "trn2", "E060"),
])
def test_rules(tmp_path, decl, engine, target, code, op="rand_set_state", key="src_seeds"):
    code = code or "E560"
    tensors = {"s": {**decl, "output": True}}
    assert code in check_codes(tmp_path, tensors, [{op: {key: "s", "engine": engine}}], target)


def test_state_must_live_in_sbuf(tmp_path):
    psum = {"s": t("psum", (4, 24), "uint32", fill=1, output=True)}
    assert "E040" in check_codes(tmp_path, psum, [{"rand_set_state": {"src_seeds": "s",
                                                                      "engine": "vector"}}])


def test_example_checks_and_runs(tmp_path):
    check_and_run_example(tmp_path, "rand_set_state", {
        "state": t("sbuf", (128, 6), "uint32", fill=12345)}, "trn2")


EXAMPLE_TENSORS = {"state": "{buffer: sbuf, shape: [128, 6], dtype: uint32, fill: 12345}"}  # spec_examples
