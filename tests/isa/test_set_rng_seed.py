"""set_rng_seed: a [1, 1] 32-bit value seeds the Vector engine's PRNG; the same seed gives the
same numbers (NKI 0.6 docs). nkirun's numbers are its model's: the tests check the
documented plumbing, not bits."""
import numpy as np
import pytest
from mxrand_helpers import check_and_run_example, check_codes, errors, run_prog, t


def seeded(tmp_path, seed_decl, view="s", target="trn2"):
    return run_prog(tmp_path, {"s": seed_decl, "r": t("sbuf", (16, 32), "uint32", output=True)},
                    [{"set_rng_seed": {"src_seeds": view}}, {"rng": {"dst": "r"}}], target)["r"]


def test_same_seed_same_numbers_on_every_target(tmp_path):
    got = {tg: seeded(tmp_path, t("sbuf", (1, 1), "uint32", fill=42), target=tg)
           for tg in ("trn1", "trn2", "trn3")}
    np.testing.assert_array_equal(got["trn1"], got["trn2"])
    np.testing.assert_array_equal(got["trn2"], got["trn3"])


def test_the_seed_is_the_32_bits(tmp_path):
    a = seeded(tmp_path, t("sbuf", (1, 1), "int32", fill=-1))
    b = seeded(tmp_path, t("psum", (1, 1), "uint32", fill=4294967295))  # PSUM allowed
    np.testing.assert_array_equal(a, b)
    c = seeded(tmp_path, t("sbuf", (1, 1), "int32", fill=-2))
    assert (a != c).mean() > 0.99


def test_a_view_of_a_larger_tile(tmp_path):
    data = np.array([[7, 8], [9, 10]], np.int32)
    a = seeded(tmp_path, t("sbuf", (2, 2), "int32", data), view="s[1:2, 1:2]")
    b = seeded(tmp_path, t("sbuf", (1, 1), "int32", fill=10))
    np.testing.assert_array_equal(a, b)


def test_seed_does_not_touch_gpsimd(tmp_path):
    prog = [{"rng": {"dst": "g", "engine": "gpsimd"}}]
    plain = run_prog(tmp_path, {"g": t("sbuf", (4, 8), "uint32", output=True)}, prog)["g"]
    after = run_prog(tmp_path, {"s": t("sbuf", (1, 1), "int32", fill=3),
                                "g": t("sbuf", (4, 8), "uint32", output=True)},
                     [{"set_rng_seed": {"src_seeds": "s"}}] + prog)["g"]
    np.testing.assert_array_equal(plain, after)


@pytest.mark.parametrize("decl,code", [
    (t("sbuf", (1, 2), "int32", fill=1), "E550"),
    (t("sbuf", (2, 1), "int32", fill=1), "E550"),
    (t("sbuf", (1, 1), "int16", fill=1), "E060"),
    (t("hbm", (1, 1), "int32", fill=1), "E040"),
])
def test_rules(tmp_path, decl, code):
    assert code in check_codes(tmp_path, {"s": decl}, [{"set_rng_seed": {"src_seeds": "s"}}])


def test_unseeded_source_is_an_error(tmp_path):
    assert "E050" in check_codes(tmp_path, {"s": t("sbuf", (1, 1), "int32")},
                                 [{"set_rng_seed": {"src_seeds": "s"}}])
    assert errors(check_codes(tmp_path, {"s": t("sbuf", (1, 1), "float32", fill=1.5)},
                              [{"set_rng_seed": {"src_seeds": "s"}}], "trn1")) == []


def test_example_checks_and_runs(tmp_path):
    check_and_run_example(tmp_path, "set_rng_seed", {"seed": t("sbuf", (1, 1), "int32", fill=3),
                                                     "out": t("sbuf", (1, 1), "int32", fill=0,
                                                              output=True)}, "trn1")


EXAMPLE_TENSORS = {"seed": "{buffer: sbuf, shape: [1, 1], dtype: int32, fill: 3}"}  # spec_examples
