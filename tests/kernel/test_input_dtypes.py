"""`--input NAME=FILE.npy[:DTYPE]`: np.save writes float8_e4m3, float8_e4m3fn and
float8_e8m0fnu arrays with one header ('|V1'), so the file alone does not say which type
its bytes are. A `:DTYPE` suffix names it; without one a raw 1-byte file is read as
float8_e4m3 with W601, never silently."""
from __future__ import annotations

import json
import textwrap

import ml_dtypes
import numpy as np
from click.testing import CliRunner

from nkirun.cli import cli

WIDEN = """\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def widen(x):
    out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=x)
    return out
"""


def _setup(tmp_path, arr):
    k = tmp_path / "widen.py"
    k.write_text(textwrap.dedent(WIDEN))
    np.save(tmp_path / "x.npy", arr)
    return str(k), str(tmp_path / "x.npy")


def _run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_e8m0_file_with_its_dtype_named_reads_powers_of_two(tmp_path):
    bits = np.array([[127, 128, 126, 117, 0, 254]] * 3, np.uint8)
    k, x = _setup(tmp_path, bits.view(ml_dtypes.float8_e8m0fnu))
    r = _run("run", k, "--input", f"x={x}:float8_e8m0fnu", "--out", tmp_path / "o")
    assert r.exit_code == 0, r.output
    want = np.ldexp(1.0, bits.astype(np.int64) - 127).astype(np.float32)  # 2^(bits-127)
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "out0.npy"), want)
    assert "W601" not in r.output


def test_raw_one_byte_file_without_dtype_warns_and_reads_e4m3(tmp_path):
    vals = np.array([[1.0, -2.0, 0.5, 448.0]] * 2, ml_dtypes.float8_e4m3)
    k, x = _setup(tmp_path, vals)
    r = _run("run", k, "--input", f"x={x}", "--out", tmp_path / "o")
    assert r.exit_code == 0, r.output
    assert "W601" in r.output and ":float8_e8m0fnu" in r.output
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "out0.npy"),
                                  vals.astype(np.float32))
    # naming the dtype confirms it: no warning
    r = _run("run", k, "--input", f"x={x}:float8_e4m3", "--out", tmp_path / "o2")
    assert r.exit_code == 0 and "W601" not in r.output, r.output
    np.testing.assert_array_equal(np.load(tmp_path / "o2" / "out0.npy"),
                                  vals.astype(np.float32))


def test_check_json_carries_the_warning(tmp_path):
    k, x = _setup(tmp_path, np.zeros((2, 4), ml_dtypes.float8_e8m0fnu))
    r = _run("check", k, "--input", f"x={x}", "--format", "json")
    codes = [d["code"] for d in json.loads(r.output)["diagnostics"]] \
        if r.output.lstrip().startswith("{") else []
    assert "W601" in codes or "W601" in r.output, r.output


def test_suffix_that_does_not_fit_the_file_is_e073(tmp_path):
    k, x = _setup(tmp_path, np.zeros((2, 4), ml_dtypes.float8_e8m0fnu))
    r = _run("check", k, "--input", f"x={x}:bfloat16")  # 2-byte type, 1-byte raw file
    assert r.exit_code == 1 and "E073" in r.output and "1-byte raw values" in r.output
    r = _run("check", k, "--input", f"x={x}:float8_e4m3fn")  # 1-byte raw: read, but trn3's
    assert r.exit_code == 1 and "E680" in r.output and "E073" not in r.output
    r = _run("check", k, "--input", f"x={x}:float8_e4m3fn", "--target", "trn3")
    assert r.exit_code == 0, r.output
    f32 = tmp_path / "f.npy"
    np.save(f32, np.zeros((2, 4), np.float32))
    r = _run("check", k, "--input", f"x={f32}:int32")  # a typed file keeps its type
    assert r.exit_code == 1 and "E073" in r.output and "float32" in r.output
    r = _run("check", k, "--input", f"x={f32}:float32")
    assert r.exit_code == 0, r.output


def test_uint8_file_may_be_named_e8m0(tmp_path):
    bits = np.array([[127, 130]], np.uint8)
    k, x = _setup(tmp_path, bits)
    r = _run("run", k, "--input", f"x={x}:float8_e8m0fnu", "--out", tmp_path / "o")
    assert r.exit_code == 0, r.output
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "out0.npy"), [[1.0, 8.0]])


def test_unknown_suffix_is_a_usage_error_and_colons_in_paths_still_work(tmp_path):
    k, x = _setup(tmp_path, np.ones((2, 4), np.float32))
    r = _run("check", k, "--input", f"x={x}:floatx")
    assert r.exit_code == 2 and "floatx" in r.output
    odd = tmp_path / "a:b.npy"
    np.save(odd, np.ones((2, 4), np.float32))
    r = _run("run", k, "--input", f"x={odd}", "--out", tmp_path / "o")
    assert r.exit_code == 0, r.output


def test_bfloat16_raw_file_needs_no_suffix(tmp_path):
    vals = np.array([[1.5, -3.25]], ml_dtypes.bfloat16)
    k, x = _setup(tmp_path, vals)
    r = _run("run", k, "--input", f"x={x}", "--out", tmp_path / "o")
    assert r.exit_code == 0 and "W601" not in r.output, r.output
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "out0.npy"), [[1.5, -3.25]])


# ---- a NumPy default dtype (int64, float64) says what to save it as (issue 24) --------------
def test_int64_and_float64_inputs_say_what_to_save_them_as(tmp_path):
    for arr, like in ((np.ones((4, 8), np.int64), "int32"), (np.ones((4, 8)), "float32")):
        k, x = _setup(tmp_path, arr)
        r = _run("run", k, "--input", f"x={x}", "--out", tmp_path / "o")
        assert r.exit_code == 1 and "error[E073]" in r.output
        assert f"save it as {like}: np.save(" in r.output and f".astype(np.{like})" in r.output


def test_api_dtype_errors_name_the_parameter(tmp_path):
    import sys

    import pytest

    import nkirun
    k, _ = _setup(tmp_path, np.ones((4, 8), np.float32))
    sys.path.insert(0, str(tmp_path))
    try:
        from widen import widen
    finally:
        sys.path.remove(str(tmp_path))
    with pytest.raises(TypeError, match=r"parameter `x`: arrays of dtype float64 are not NKI "
                                        r"tensors; pass x\.astype\(np\.float32\)"):
        nkirun.simulate(widen)(np.ones((4, 8)))
    with pytest.raises(TypeError, match=r"parameter `x`: arrays of dtype int64 .* "
                                        r"x\.astype\(np\.int32\)"):
        nkirun.check(widen, x=np.ones((4, 8), np.int64))
    with pytest.raises(TypeError, match=r"parameter `x`: unknown dtype 'float64'"):
        nkirun.cost(widen, nkirun.shape("float64", 4, 8))
