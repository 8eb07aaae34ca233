"""Golden diff (run --expect, nkirun.runner.compare), issue 12: a golden in another dtype is
compared in float64 and the report says so; a range-relative tolerance; indices as
(p=0, f=137) on chip and [5, 7] in HBM; the worst element besides the first; a ULP error
across zero explained; a final PASS/FAIL line; NaN tolerances refused; no RuntimeWarning."""
from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np
import pytest
import yaml
from click.testing import CliRunner

from nkirun.cli import cli
from nkirun.hw.dtypes import DTYPES
from nkirun.runner.compare import Tolerance, compare, format_diffs, verdict_line


def program(tmp_path, x: np.ndarray, buffer="hbm", dtype="float32"):
    """x (from x.npy) copied into the output y (in `buffer`)."""
    np.save(tmp_path / "x.npy", x)
    shape = list(x.shape)
    prog = {"version": 1, "tensors": {
        "x": {"buffer": "hbm", "shape": shape, "dtype": dtype, "file": "x.npy"},
        "t": {"buffer": "sbuf", "shape": shape, "dtype": dtype},
        "y": {"buffer": buffer, "shape": shape, "dtype": dtype, "output": True}},
        "instructions": [{"load": {"dst": "t", "src": "x"}},
                         {("store" if buffer == "hbm" else "tensor_copy"): {"dst": "y",
                                                                            "src": "t"}}]}
    path = tmp_path / "prog.yaml"
    path.write_text(yaml.safe_dump(prog, sort_keys=False))
    return str(path)


def expect(tmp_path, x, golden, *opts, buffer="hbm", dtype="float32"):
    path = program(tmp_path, x, buffer, dtype)
    g = tmp_path / "golden"
    g.mkdir(exist_ok=True)
    np.save(g / "y.npy", golden)
    return CliRunner().invoke(cli, ["run", path, "--out", str(tmp_path / "out"),
                                    "--expect", str(g), *map(str, opts)])


def test_golden_in_float64_is_compared_in_float64(tmp_path):
    x = (np.arange(24, dtype=np.float64).reshape(4, 6) / 3)
    r = expect(tmp_path, x.astype(np.float32), x)  # float32 output, float64 reference
    assert r.exit_code == 1 and "E073" not in r.output
    assert "compared in float64: the expected file is float64" in r.output
    r = expect(tmp_path, x.astype(np.float32), x, "--rtol", 1e-6)
    assert r.exit_code == 0, r.output
    assert r.output.rstrip().splitlines()[-1].startswith("PASS")
    # ULP: the golden is rounded to the output's dtype first
    r = expect(tmp_path, x.astype(np.float32), x, "--ulp", 0)
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("golden_type", [ml_dtypes.bfloat16, np.float16, np.int32])
def test_golden_in_other_dtypes(tmp_path, golden_type):
    x = np.arange(24, dtype=np.float32).reshape(4, 6)  # exact in each
    r = expect(tmp_path, x, x.astype(golden_type))
    assert r.exit_code == 0, r.output
    assert "compared in float64" in r.output


def test_range_relative_tolerance(tmp_path):
    exp = np.array([[1000.0, 1e-3, -500.0]], np.float32)
    got = np.array([[1000.0, 2e-3, -500.0]], np.float32)
    d = compare("y", got, exp, tol=Tolerance(rtol=1e-3))
    assert d.mismatches == 1  # 1e-3 off on a value of 1e-3
    d = compare("y", got, exp, tol=Tolerance(rtol=1e-3, range_rtol=1e-3))
    assert d.ok  # within 1e-3 * max|expected| = 1
    assert "range_rtol=0.001 of max|expected|" in d.mode
    worse = np.array([[1001.5, 1e-3, -500.0]], np.float32)
    assert compare("y", worse, exp, tol=Tolerance(range_rtol=1e-3)).mismatches == 1
    r = expect(tmp_path, got, exp, "--range-rtol", 1e-3)
    assert r.exit_code == 0, r.output
    assert CliRunner().invoke(cli, ["run", program(tmp_path, got), "--range-rtol", "1"]
                              ).exit_code == 2


def test_index_on_chip_and_in_hbm_and_worst_element(tmp_path):
    x = np.zeros((4, 6), np.float32)
    golden = x.copy()
    golden[1, 2] = 0.5  # first mismatch
    golden[3, 5] = 9.0  # the worst
    r = expect(tmp_path, x, golden, buffer="sbuf")
    assert "first at (p=1, f=2): got 0, expected 0.5" in r.output
    assert "worst at (p=3, f=5): got 0, expected 9" in r.output
    r = expect(tmp_path, x, golden, buffer="hbm")
    assert "first at [1, 2]: got 0, expected 0.5" in r.output
    assert "worst at [3, 5]" in r.output
    d = compare("y", np.zeros((2, 3, 4), np.float32), np.ones((2, 3, 4), np.float32),
                on_chip=True)
    assert d.where() == "(p=0, f0=0, f1=0)"


def test_values_printed_with_the_same_precision():
    got = np.array([1.15016568], np.float32)
    exp = np.array([1.6501658], np.float32)
    text = format_diffs([compare("y", got, exp)])
    assert "got 1.1501657, expected 1.6501658" in text


def test_ulp_across_zero_is_explained():
    got = np.array([-1e-30, 1.0], np.float32)
    exp = np.array([1e-30, 1.0], np.float32)
    d = compare("y", got, exp, tol=Tolerance(ulp=4))
    assert d.mismatches == 1 and d.ulp_across_zero and d.max_ulp > 10**8
    assert "opposite sign" in format_diffs([d]) and "through zero" in format_diffs([d])
    d = compare("y", np.array([1.0, 2.0], np.float32), np.array([1.5, 2.0], np.float32),
                tol=Tolerance(ulp=0))
    assert not d.ulp_across_zero and "opposite sign" not in format_diffs([d])


def test_final_verdict_line_is_coloured_on_a_terminal():
    ok = compare("y", np.ones(3, np.float32), np.ones(3, np.float32))
    bad = compare("y", np.ones(3, np.float32), np.zeros(3, np.float32))
    assert verdict_line([ok], "g/") == "PASS: the output matches g/"
    assert verdict_line([ok, bad], "g/") == "FAIL: 1 of 2 outputs differs from g/"
    assert "\x1b[32m" in verdict_line([ok], "g/", color=True)
    assert "\x1b[31m" in verdict_line([bad], "g/", color=True)
    assert "\x1b[31m" in format_diffs([bad], color=True)  # MISMATCH in red


@pytest.mark.parametrize("opt", ["--rtol", "--atol", "--range-rtol"])
def test_nan_tolerance_refused(tmp_path, opt):
    x = np.ones((2, 2), np.float32)
    r = expect(tmp_path, x, x, opt, "nan")
    assert r.exit_code == 2 and "not NaN" in r.output
    with pytest.raises(ValueError, match="not NaN"):
        Tolerance(rtol=float("nan"))


def test_infinite_atol_and_infinities_raise_no_runtime_warning(tmp_path):
    x = np.array([[np.inf, -np.inf, 1.0, np.nan]], np.float32)
    golden = np.array([[np.inf, np.inf, 5.0, np.nan]], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        d = compare("y", x, golden, DTYPES["float32"], Tolerance(atol=float("inf")))
        assert d.mismatches == 1 and d.first == (0, 1)  # -inf vs inf still differ
        r = expect(tmp_path, x, golden, "--atol", "inf")
    assert r.exit_code == 1 and "Warning" not in r.output


def test_mask_division_by_zero_is_an_error_not_a_warning(tmp_path):
    from nkirun.api import check_program
    path = tmp_path / "m.yaml"
    path.write_text("version: 1\ntensors:\n"
                    "  x: {buffer: sbuf, shape: [4, 4], dtype: float32, fill: 1}\n"
                    "  y: {buffer: sbuf, shape: [4, 4], dtype: float32, fill: 0, output: true}\n"
                    "instructions:\n"
                    "  - tensor_copy: {dst: y, src: x, mask: \"p // 0 < 1\"}\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        [d] = check_program(str(path)).diagnostics
    assert d.code == "E045" and "divides by zero" in d.message
