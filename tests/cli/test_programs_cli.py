"""Issue 2: every program in programs/ runs through the CLI and its outputs equal the
reference. Issue 9: `run`, `check` and `cost` read either format, chosen by the extension
or by --program-format.

The contract example rowmax_in_window (YAML and its .nkis twin) is compared here; the other
programs in their own test modules (listed in COMPARED_IN, which a test keeps complete, so a
new program without a CLI reference test fails).
"""
from __future__ import annotations

import json
import pathlib
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

import reference as ref
from prog_helpers import assert_bits_equal, run_cli
from nkirun.cli import cli
from repo_paths import PROGRAMS, TESTS


# program file -> the test module that runs it through the CLI against a reference
COMPARED_IN = {
    "rowmax_in_window.yaml": "test_programs_cli",
    "rowmax_in_window.nkis": "test_programs_cli",
    "range_select_chain.yaml": "test_select_programs",
    "select_reduce_reverse.yaml": "test_select_programs",
    "affine_select_causal.yaml": "test_select_programs",
    "scan_two_halves.yaml": "test_tensor_tensor_scan",
    "topk_match_replace.yaml": "test_nc_match_replace8",
    "causal_softmax.yaml": "test_kernels",
    "topk16.yaml": "test_kernels",
    "selective_scan.yaml": "test_kernels",
    "sliding_window_max.yaml": "test_kernels",
    "cumsum_scan.yaml": "test_kernels",
    "matmul_transpose.yaml": "test_kernels",
    "layernorm_bn_stats.yaml": "test_bn_aggr",
    "softmax_exponential.yaml": "test_exponential",
    "two_core_halves.yaml": "test_two_cores",
    "moe_expert_loop.yaml": "test_runtime_loops",
}


def test_every_program_has_a_cli_reference_test():
    present = {p.name for p in PROGRAMS.iterdir() if p.suffix in (".yaml", ".nkis")}
    assert present == COMPARED_IN.keys(), "add the new program's CLI reference test here"
    for name, module in COMPARED_IN.items():
        text = next(TESTS.rglob(f"{module}.py")).read_text()
        assert pathlib.Path(name).stem in text, f"{module}.py never names {name}"
        assert "run_cli" in text or "run_example_cli" in text or "CliRunner" in text, module


def _rowmax_reference():
    data = PROGRAMS / "rowmax_in_window"
    x, lo, hi = (np.load(data / f"{n}.npy") for n in ("x", "lo", "hi"))
    y, rowmax = ref.range_select(x, np.greater_equal, np.less, lo, hi)
    acc = ref.VectorAccumulator()
    acc.apply("reset_reduce", rowmax)
    return {"y": y, "ymax": acc.value}


@pytest.fixture(scope="module")
def rowmax_reference():
    return _rowmax_reference()


@pytest.mark.parametrize("suffix", [".yaml", ".nkis"])
def test_rowmax_in_window_through_the_cli(tmp_path, suffix, rowmax_reference):
    got = run_cli(PROGRAMS / f"rowmax_in_window{suffix}", tmp_path / "out")
    assert got.keys() == rowmax_reference.keys()
    for name, want in rowmax_reference.items():
        assert_bits_equal(got[name], want)
    assert got["ymax"][5, 0] == np.finfo(np.float32).min  # row 5's window is empty


@pytest.fixture
def odd_named(tmp_path):
    """The text program under a suffix that says nothing (its data beside it)."""
    shutil.copytree(PROGRAMS / "rowmax_in_window", tmp_path / "rowmax_in_window")
    shutil.copy(PROGRAMS / "rowmax_in_window.nkis", tmp_path / "trace.kernel")
    return tmp_path / "trace.kernel"


def test_program_format_flag_overrides_the_extension(odd_named, rowmax_reference):
    invoke = CliRunner().invoke
    r = invoke(cli, ["check", str(odd_named), "--program-format", "text", "--format", "json"])
    assert r.exit_code == 0 and json.loads(r.output)["diagnostics"] == [], r.output
    got = run_cli(odd_named, odd_named.parent / "out", program_format="text")
    for name, want in rowmax_reference.items():
        assert_bits_equal(got[name], want)
    r = invoke(cli, ["cost", str(odd_named), "--program-format", "text", "--format", "json"])
    assert r.exit_code == 0, r.output
    assert [i["op"] for i in json.loads(r.output)["instructions"]][3] == "range_select"
    # without the flag an unknown suffix is read as YAML: a located error, exit 1
    r = invoke(cli, ["check", str(odd_named)])
    assert r.exit_code == 1 and f"{odd_named}:3:1: error[E002]" in r.output, r.output
    assert "Traceback" not in r.output


@pytest.mark.parametrize("cmd", ["check", "cost"])
def test_text_program_by_extension(cmd):
    r = CliRunner().invoke(cli, [cmd, str(PROGRAMS / "rowmax_in_window.nkis"), "--format",
                                 "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["diagnostics"] == [] if cmd == "check" else len(doc["instructions"]) == 6


def test_yaml_flag_on_a_text_program_is_a_located_error():
    r = CliRunner().invoke(cli, ["run", str(PROGRAMS / "rowmax_in_window.nkis"),
                                 "--program-format", "yaml", "--out", "/nonexistent/never"])
    assert r.exit_code == 1 and "rowmax_in_window.nkis:3:1: error[E002]" in r.output
