"""The example programs of range_select / select_reduce / affine_select, through the CLI:
`check` is clean (no warnings), `run` matches tests/reference.py bit for bit, and
programs/make_data.py regenerates exactly the committed inputs."""
from __future__ import annotations

import json
import sys

import ml_dtypes
import numpy as np
import pytest
from click.testing import CliRunner

import reference as ref
from prog_helpers import assert_bits_equal, load_npy
from nkirun.cli import cli
from repo_paths import PROGRAMS

NAMES = ["range_select_chain", "select_reduce_reverse", "affine_select_causal"]


def _load(name, tensor):
    return np.load(PROGRAMS / name / f"{tensor}.npy")


def _expected(name):
    if name == "range_select_chain":
        lo, hi = _load(name, "lo"), _load(name, "hi")
        acc = ref.VectorAccumulator()
        for i, cmd in enumerate(("reset_reduce", "reduce", "reduce")):
            y, rowmax = ref.range_select(_load(name, f"x{i}"), np.greater_equal, np.less,
                                         lo, hi, range_start=128 * i)
            acc.apply(cmd, rowmax)
        return {"y": y, "ymax": acc.value}
    if name == "select_reduce_reverse":
        y, m = ref.select_reduce(_load(name, "mask"), _load(name, "x"), ref.FP32_MIN,
                                 reverse_pred=True, out_dtype="bfloat16")
        return {"y": y, "ymax": m}
    scores = _load(name, "scores")
    return {"masked": ref.affine_select(scores, [[-1, 128]], 0, 1, ref.FP32_MIN,
                                        np.greater_equal)}


@pytest.mark.parametrize("name", NAMES)
def test_check_is_clean(name):
    r = CliRunner().invoke(cli, ["check", str(PROGRAMS / f"{name}.yaml"), "--format", "json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["diagnostics"] == []


@pytest.mark.parametrize("name", NAMES)
def test_run_matches_reference(tmp_path, name):
    r = CliRunner().invoke(cli, ["run", str(PROGRAMS / f"{name}.yaml"), "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert "warning" not in r.output
    for tensor, want in _expected(name).items():
        assert_bits_equal(load_npy(tmp_path / f"{tensor}.npy", want.dtype), want)


def test_program_outputs_are_meaningful(tmp_path):
    """Spot checks that the examples show what they claim (not only "equal to reference")."""
    runner = CliRunner()
    for name in NAMES:
        assert runner.invoke(cli, ["run", str(PROGRAMS / f"{name}.yaml"), "--out",
                                   str(tmp_path / name)]).exit_code == 0
    ymax = np.load(tmp_path / "range_select_chain" / "ymax.npy")
    assert (ymax[15::16] == ref.FP32_MIN).all() and np.isfinite(ymax).all()
    y = load_npy(tmp_path / "select_reduce_reverse" / "y.npy", ml_dtypes.bfloat16)
    y = y.astype(np.float32)
    assert np.isneginf(y[::8]).all() and np.isfinite(y[1::8]).all()
    assert (np.load(tmp_path / "select_reduce_reverse" / "ymax.npy")[::8] == ref.FP32_MIN).all()
    masked = np.load(tmp_path / "affine_select_causal" / "masked.npy")
    assert (masked[np.triu_indices(128, 1)] == ref.FP32_MIN).all()
    assert (masked[np.tril_indices(128)] != ref.FP32_MIN).all()


def test_make_data_is_deterministic(tmp_path):
    sys.path.insert(0, str(PROGRAMS))
    try:
        import make_data
    finally:
        sys.path.remove(str(PROGRAMS))
    make_data.main(NAMES, root=tmp_path)
    for name in NAMES:
        committed = sorted(p.name for p in (PROGRAMS / name).glob("*.npy"))
        assert committed == sorted(p.name for p in (tmp_path / name).glob("*.npy"))
        for f in committed:
            assert_bits_equal(np.load(tmp_path / name / f), np.load(PROGRAMS / name / f))
