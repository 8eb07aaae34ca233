"""The single-variant evaluation (nkirun.sweep.evaluate), in this process."""
from __future__ import annotations

import numpy as np

import nkirun
from tests.sweep.sweep_helpers import copy_kernel

X = nkirun.shape("float32", 128, 512)


def test_an_ok_variant_is_costed(tmp_path):
    k = copy_kernel(tmp_path)
    row = nkirun.sweep.evaluate(f"{k}::copy", X, params={"TILE": 256})
    assert row["status"] == "ok" and row["total_ns"] > 0 and row["instructions"] == 4
    assert row["codes"] == [] and row["fingerprint"] and row["assumed_share"] is not None
    wider = nkirun.sweep.evaluate(f"{k}::copy", X, params={"TILE": 512})
    assert wider["fingerprint"] != row["fingerprint"]


def test_a_kernel_assert_is_an_error_with_its_message(tmp_path):
    row = nkirun.sweep.evaluate(f"{copy_kernel(tmp_path)}::copy", X, params={"TILE": 384})
    assert row["status"] == "error" and row["codes"] == ["E602"]
    assert "no multiple of TILE=384" in row["message"] and row["total_ns"] is None


def test_a_program_the_checker_refuses_is_invalid(tmp_path):
    # 256 rows make each SBUF tile 256 partitions tall: SBUF has 128
    k = copy_kernel(tmp_path)
    row = nkirun.sweep.evaluate(f"{k}::copy", nkirun.shape("float32", 256, 512),
                                params={"TILE": 128})
    assert row["status"] == "invalid" and row["codes"] and row["message"]


def test_an_unknown_parameter_is_an_error(tmp_path):
    row = nkirun.sweep.evaluate(f"{copy_kernel(tmp_path)}::copy", X, params={"NOPE": 1})
    assert row["status"] == "error" and "NOPE" in row["message"]


def test_verification_against_a_reference(tmp_path):
    k = copy_kernel(tmp_path)
    row = nkirun.sweep.evaluate(f"{k}::copy", X, params={"TILE": 128}, verify=True,
                                reference=f"{k}::reference")
    assert row["status"] == "ok" and row["verify"]["mismatches"] == 0
    bad = nkirun.sweep.evaluate(f"{k}::copy", X, params={"TILE": 128}, verify=True,
                                reference=f"{k}::wrong")
    assert bad["status"] == "mismatch" and bad["verify"]["mismatches"] == 128 * 512
    assert bad["total_ns"] == row["total_ns"]


def test_given_arrays_are_the_verified_inputs(tmp_path):
    k = copy_kernel(tmp_path)
    x = np.arange(128 * 256, dtype=np.float32).reshape(128, 256)
    row = nkirun.sweep.evaluate(f"{k}::copy", x, params={"TILE": 128}, verify=True,
                                reference=f"{k}::reference")
    assert row["status"] == "ok" and row["verify"]["max_abs"] == 0.0


def test_the_instruction_budget(tmp_path):
    row = nkirun.sweep.evaluate(f"{copy_kernel(tmp_path)}::copy", X, params={"TILE": 128},
                                max_instructions=7)
    assert row["status"] == "error" and row["total_ns"] is None
    assert row["codes"] == ["E609"] and "budget" in row["message"]
