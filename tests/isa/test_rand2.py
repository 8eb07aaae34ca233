"""rand2 (NeuronCore-v4 only): uniform values in [min, max] (scalars or (P, 1) float32
tiles), converted to dst's dtype (NKI 0.6 docs). Values come from nkirun's PRNG model:
checked for range, distribution, per-partition bounds, seeding and the rules."""
import numpy as np
import pytest
from mxrand_helpers import check_and_run_example, check_codes, errors, run_prog, t


def rand2(tmp_path, shape, dtype, lo, hi, extra=None):
    tensors = {"r": t("sbuf", shape, dtype, output=True), **(extra or {})}
    return run_prog(tmp_path, tensors, [{"rand2": {"dst": "r", "min": lo, "max": hi}}])["r"]


@pytest.mark.parametrize("lo,hi", [(0.0, 1.0), (-3.5, 2.0), (1e6, 1e6 + 64)])
def test_uniform_in_range(tmp_path, lo, hi):
    r = rand2(tmp_path, (128, 1024), "float32", lo, hi).astype(np.float64)
    assert r.min() >= lo and r.max() <= hi
    u = (r - lo) / (hi - lo)
    assert abs(u.mean() - 0.5) < 6 * np.sqrt(1 / 12 / u.size)
    counts = np.histogram(u, bins=10, range=(0, 1))[0]
    assert np.all(np.abs(counts - u.size / 10) < 6 * np.sqrt(u.size / 10))


def test_per_partition_bounds(tmp_path):
    lo = np.arange(64, dtype=np.float32).reshape(64, 1)
    r = rand2(tmp_path, (64, 512), "float32", "lo", "hi",
              {"lo": t("sbuf", (64, 1), "float32", lo), "hi": t("sbuf", (64, 1), "float32", lo + 1)})
    assert np.all(r >= lo) and np.all(r <= lo + 1)
    assert np.all(np.abs(r.mean(axis=1) - (lo[:, 0] + 0.5)) < 0.1)


@pytest.mark.parametrize("dtype,lo,hi", [("int32", -100.0, 100.0), ("uint8", 0.0, 255.0),
                                         ("bfloat16", -1.0, 1.0), ("float8_e5m2", 0.0, 8.0)])
def test_converted_to_dst_dtype(tmp_path, dtype, lo, hi):
    r = rand2(tmp_path, (32, 512), dtype, lo, hi)
    v = r.astype(np.float64)
    assert v.min() >= lo and v.max() <= hi
    assert len(np.unique(v)) > 8


def test_seed_replays(tmp_path):
    outs = run_prog(tmp_path, {"s": t("sbuf", (1, 1), "int32", fill=5),
                               "a": t("sbuf", (8, 8), "float32", output=True),
                               "b": t("sbuf", (8, 8), "float32", output=True)},
                    [{"set_rng_seed": {"src_seeds": "s"}}, {"rand2": {"dst": "a", "min": 0.0, "max": 1.0}},
                     {"set_rng_seed": {"src_seeds": "s"}}, {"rand2": {"dst": "b", "min": 0.0, "max": 1.0}}])
    np.testing.assert_array_equal(outs["a"], outs["b"])


@pytest.mark.parametrize("lo,hi,target,code,extra", [
    (0.0, 1.0, "trn2", "E493", {}),
    (1.0, 1.0, "trn3", "E540", {}),
    (2.0, 1.0, "trn3", "E540", {}),
    (0.0, 1e39, "trn3", "E541", {}),
    ("lo", 1.0, "trn3", "E060", {"lo": t("sbuf", (4, 1), "bfloat16", fill=0)}),
    ("lo", 1.0, "trn3", "E061", {"lo": t("sbuf", (4, 2), "float32", fill=0)}),
])
def test_rules(tmp_path, lo, hi, target, code, extra):
    tensors = {"r": t("sbuf", (4, 8), "float32", output=True), **extra}
    assert code in check_codes(tmp_path, tensors, [{"rand2": {"dst": "r", "min": lo, "max": hi}}],
                               target)


def test_dst_dtype_rule(tmp_path):
    tensors = {"r": t("sbuf", (4, 8), "float8_e4m3fn_x4", output=True)}
    assert "E060" in check_codes(tmp_path, tensors, [{"rand2": {"dst": "r", "min": 0, "max": 1}}])
    tensors = {"r": t("psum", (4, 8), "tfloat32", output=True)}
    assert errors(check_codes(tmp_path, tensors, [{"rand2": {"dst": "r", "min": 0, "max": 1}}])) == []


def test_example_checks_and_runs(tmp_path):
    outs = check_and_run_example(tmp_path, "rand2", {"noise": t("sbuf", (8, 128), "float32",
                                                                output=True)})
    assert outs["noise"].min() >= -1 and outs["noise"].max() <= 1
