"""dropout: each element replaced by 0 with probability prob (a number or one per partition),
kept elements unchanged, dst dtype = data dtype (NKI 0.6 docs). The drop pattern comes from
nkirun's PRNG model, so the tests check the documented behaviour: the extremes exactly, the
rate statistically, bit-exact kept values, seeding, and the rules."""
import ml_dtypes
import numpy as np
import pytest
from mxrand_helpers import check_and_run_example, check_codes, errors, run_prog, t


def dropout(tmp_path, x, dtype, prob, prob_array=None, prob_dtype="float32", target="trn2"):
    tensors = {"x": t("sbuf", x.shape, dtype, x), "y": t("sbuf", x.shape, dtype, output=True)}
    if prob_array is not None:
        tensors["p"] = t("sbuf", prob_array.shape, prob_dtype, prob_array)
    return run_prog(tmp_path, tensors, [{"dropout": {"dst": "y", "data": "x", "prob": prob}}],
                    target)["y"]


def floats(rng, shape):
    x = (rng.standard_normal(shape) * 10).astype(np.float32)
    special = np.array([np.nan, np.inf, -np.inf, -0.0, 1e-45, 3.4e38, 7.0, -7.0], np.float32)
    x.reshape(-1)[:8] = special[:x.size]
    return x


@pytest.mark.parametrize("shape", [(1, 1), (37, 5), (128, 33), (64, 3, 7)])
def test_prob_zero_keeps_every_bit_and_one_drops_all(tmp_path, shape):
    x = floats(np.random.default_rng(0), shape)
    keep = dropout(tmp_path, x, "float32", 0.0)
    np.testing.assert_array_equal(keep.view(np.uint32), x.view(np.uint32))
    gone = dropout(tmp_path, x, "float32", 1.0)
    np.testing.assert_array_equal(gone.view(np.uint32), np.zeros(shape, np.uint32))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float8_e4m3", "int32", "uint8"])
def test_rate_and_kept_values(tmp_path, dtype):
    rng = np.random.default_rng(1)
    np_t = {"float32": np.float32, "bfloat16": ml_dtypes.bfloat16,
            "float8_e4m3": ml_dtypes.float8_e4m3, "int32": np.int32, "uint8": np.uint8}[dtype]
    x = (rng.integers(1, 100, size=(128, 1024))).astype(np_t)  # no zeros in the input
    y = dropout(tmp_path, x, dtype, 0.3)
    assert y.dtype == x.dtype
    dropped = y == 0
    n = x.size
    assert abs(dropped.mean() - 0.3) < 6 * np.sqrt(0.3 * 0.7 / n)
    np.testing.assert_array_equal(y[~dropped], x[~dropped])
    # every partition drops at about the same rate
    assert np.all(np.abs(dropped.mean(axis=1) - 0.3) < 6 * np.sqrt(0.21 / 1024))


def test_per_partition_probabilities(tmp_path):
    p = np.linspace(0, 1, 128, dtype=np.float32).reshape(128, 1)
    x = np.ones((128, 4096), np.float32)
    y = dropout(tmp_path, x, "float32", "p", prob_array=p)
    rate = (y == 0).mean(axis=1)
    assert rate[0] == 0 and rate[-1] == 1
    assert np.all(np.abs(rate - p[:, 0]) < 6 * np.sqrt(p[:, 0] * (1 - p[:, 0]) / 4096) + 1e-9)


def test_bf16_prob_tile_with_float_data(tmp_path):
    p = np.full((16, 1), 0.5, ml_dtypes.bfloat16)
    y = dropout(tmp_path, np.ones((16, 2048), np.float32), "float32", "p", p, "bfloat16")
    assert abs((y == 0).mean() - 0.5) < 0.02


def test_seed_replays_the_pattern(tmp_path):
    prog = [{"set_rng_seed": {"src_seeds": "s"}},
            {"dropout": {"dst": "y", "data": "x", "prob": 0.5}},
            {"set_rng_seed": {"src_seeds": "s"}},
            {"dropout": {"dst": "z", "data": "x", "prob": 0.5}}]
    outs = run_prog(tmp_path, {"s": t("sbuf", (1, 1), "int32", fill=77),
                               "x": t("sbuf", (32, 64), "float32", fill=1.0),
                               "y": t("sbuf", (32, 64), "float32", output=True),
                               "z": t("sbuf", (32, 64), "float32", output=True)}, prog)
    np.testing.assert_array_equal(outs["y"], outs["z"])


def base(dtype="float32", ydtype=None, **over):
    tensors = {"x": t("sbuf", (8, 16), dtype, fill=1), "y": t("sbuf", (8, 16), ydtype or dtype,
                                                           output=True)}
    tensors.update(over)
    return tensors


def inst(prob=0.5, **over):
    return [{"dropout": {"dst": "y", "data": "x", "prob": prob, **over}}]


@pytest.mark.parametrize("tensors,instructions,code", [
    (base(ydtype="bfloat16"), inst(), "E530"),
    (base(y=t("sbuf", (8, 15), "float32", output=True)), inst(), "E530"),
    (base("int32", p=t("sbuf", (8, 1), "bfloat16", fill=0.5)), inst("p"), "E531"),
    (base(), inst(1.5), "E532"),
    (base(), inst(-0.1), "E532"),
    (base(), inst("nan"), "E532"),
    (base(p=t("sbuf", (8, 2), "float32", fill=0.5)), inst("p"), "E061"),
    (base(p=t("sbuf", (8, 1), "int32", fill=0)), inst("p"), "E060"),
    (base(x=t("hbm", (8, 16), "float32", fill=1)), inst(), "E040"),
])
def test_rules(tmp_path, tensors, instructions, code):
    assert code in check_codes(tmp_path, tensors, instructions, "trn2")


def test_valid(tmp_path):
    assert errors(check_codes(tmp_path, base("int32", p=t("sbuf", (8, 1), "float32", fill=0.5)),
                              inst("p"), "trn1")) == []


def test_expect_marks_outputs_derived_from_random_numbers(tmp_path):
    # y derives from dropout (through tensor_tensor); z does not: only y is marked, and the
    # verdict says that a match is not a hardware check
    from click.testing import CliRunner
    from mxrand_helpers import write

    from nkirun.cli import cli
    path = write(tmp_path, {"x": t("sbuf", (8, 16), "float32", fill=2.0),
                            "d": t("sbuf", (8, 16), "float32"),
                            "y": t("sbuf", (8, 16), "float32", output=True),
                            "z": t("sbuf", (8, 16), "float32", output=True)},
                 [{"dropout": {"dst": "d", "data": "x", "prob": 0.5}},
                  {"tensor_tensor": {"dst": "y", "data1": "d", "data2": "x", "op": "add"}},
                  {"tensor_copy": {"dst": "z", "src": "x"}}], "trn2")
    gold = tmp_path / "gold"
    r = CliRunner().invoke(cli, ["run", path, "--out", str(gold)])
    assert r.exit_code == 0, r.output
    assert "W580" in r.output and "not the hardware" in r.output
    r = CliRunner().invoke(cli, ["run", path, "--out", str(tmp_path / "again"), "--expect", str(gold)])
    assert r.exit_code == 0, r.output
    assert "MODEL PRNG: 1 of them depend" in r.output
    lines = {ln.split()[0]: ln for ln in r.output.splitlines() if ln.startswith("  ") and ln.split()}
    assert "MODEL PRNG" in lines["y"] and "MODEL PRNG" not in lines["z"]
    assert "not a hardware check: depends on dropout (line" in r.output


def test_example_checks_and_runs(tmp_path):
    outs = check_and_run_example(tmp_path, "dropout", {
        "x": t("sbuf", (64, 256), "float32", fill=3.0),
        "y": t("sbuf", (64, 256), "float32", output=True)}, "trn2")
    assert 0.05 < (outs["y"] == 0).mean() < 0.15 and set(np.unique(outs["y"])) == {0.0, 3.0}
