"""Contract (docs/program-format.md): a whole program — the example verbatim, version,
target."""
from __future__ import annotations

import subprocess

import numpy as np
import pytest
import reference as ref
from prog_helpers import (FP32_MIN, assert_bits_equal, errors_of, invoke, reported_at, run_ok,
                          write_yaml)
from repo_paths import ROOT

from contract_programs import CONTRACT_EXAMPLE, cost_json, example_data

NKIRUN = "nkirun"


def test_example_program_verbatim_end_to_end(tmp_path):
    """The contract's example program works verbatim with the installed `nkirun` command,
    run from another working directory (file: paths are relative to the program's folder)."""
    prog_dir, elsewhere = tmp_path / "prog", tmp_path / "elsewhere"
    x, lo, hi = example_data(prog_dir)
    (prog_dir / "rowmax.yaml").write_text(CONTRACT_EXAMPLE)
    elsewhere.mkdir()
    path = str(prog_dir / "rowmax.yaml")
    r = subprocess.run([NKIRUN, "run", path, "--out", "res"], cwd=elsewhere,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    y, ymax = np.load(elsewhere / "res" / "y.npy"), np.load(elsewhere / "res" / "ymax.npy")
    want_y, want_m = ref.page000(x, np.greater_equal, np.less, lo, hi, 0)
    assert_bits_equal(y, want_y)
    assert_bits_equal(ymax, want_m)
    assert (ymax[::9] == FP32_MIN).all()
    for cmd in (["check", path], ["cost", path]):
        r = subprocess.run([NKIRUN, *cmd], cwd=elsewhere, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr


def test_example_program_default_out_dir_is_readme_documented(tmp_path):
    """`--out` omitted: outputs go to out/<program name> (README) under the working dir."""
    x, lo, hi = example_data(tmp_path / "p")
    (tmp_path / "p" / "rowmax_in_window.yaml").write_text(CONTRACT_EXAMPLE)
    readme = (ROOT / "README.md").read_text()
    assert "out/<program name>" in readme
    r = invoke("run", tmp_path / "p" / "rowmax_in_window.yaml", cwd=tmp_path)
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in (tmp_path / "out" / "rowmax_in_window").iterdir()) == [
        "y.npy", "ymax.npy"]


def test_version_is_required_and_only_1(tmp_path):
    body = CONTRACT_EXAMPLE.split("\n", 1)[1]
    reported_at(write_yaml(tmp_path / "a", body), "E004")
    reported_at(write_yaml(tmp_path / "b", "version: 2\n" + body), "E004", text="version: 2")
    example_data(tmp_path / "c")
    assert errors_of(write_yaml(tmp_path / "c", CONTRACT_EXAMPLE.replace("name: rowmax_in_window",
                                                                   "#"))) == []


def test_target_defaults_to_trn2(tmp_path):
    example_data(tmp_path)
    path = write_yaml(tmp_path, CONTRACT_EXAMPLE.replace("target: trn2", "# no target"))
    assert cost_json(path)["target"] == "trn2"


@pytest.mark.parametrize("target", ["trn1", "trn2", "trn3", "inf2"])
def test_each_target_checks_runs_and_costs(tmp_path, target):
    x, lo, hi = example_data(tmp_path)
    path = write_yaml(tmp_path, CONTRACT_EXAMPLE.replace("target: trn2", f"target: {target}"))
    assert errors_of(path) == []
    assert cost_json(path)["target"] == target
    y = run_ok(path, tmp_path / "o")["y"]
    assert_bits_equal(y, ref.page000(x, np.greater_equal, np.less, lo, hi, 0)[0])


def test_target_sets_memory_sizes(tmp_path):
    """trn1/inf2 have 192 KiB of SBUF per partition, trn2 224 KiB (targets.py)."""
    text = """\
    version: 1
    target: TGT
    tensors:
      t: {buffer: sbuf, shape: [128, 53248], dtype: float32, fill: 0}
      y: {buffer: hbm, shape: [128, 53248], dtype: float32, output: true}
    instructions:
      - store: {dst: y, src: t}
    """
    for tgt, ok in (("trn1", False), ("inf2", False), ("trn2", True)):
        path = write_yaml(tmp_path / tgt, text.replace("TGT", tgt))
        errs = errors_of(path)
        assert (errs == []) == ok, (tgt, errs)
        if not ok:
            assert errs[0]["code"] == "E041"


def test_target_sets_clocks(tmp_path):
    example_data(tmp_path)
    clocks = {}
    for tgt in ("trn1", "trn2"):
        path = write_yaml(tmp_path, CONTRACT_EXAMPLE.replace("target: trn2", f"target: {tgt}"))
        clocks[tgt] = cost_json(path)["engines"]["vector"]["clock_ghz"]
    assert clocks["trn1"] != clocks["trn2"]


def test_unknown_target_is_located_error(tmp_path):
    example_data(tmp_path)
    path = write_yaml(tmp_path, CONTRACT_EXAMPLE.replace("target: trn2", "target: trn9"))
    reported_at(path, "E007", text="target: trn9", instruction=None)
