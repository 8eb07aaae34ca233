"""Tests over the whole instruction table (nkirun.isa.MODULES), whatever it contains:

- every instruction's own `SPEC.example` checks without a diagnostic and runs;
- every instruction has its test module tests/isa/test_<name>.py;
- every diagnostic code nkirun can emit has an invalid program in tests/invalid/ (checked by
  tests/checker/test_invalid_programs.py) or a named test that covers it, and is documented.

The examples become programs in tests/spec_examples.py (tensors declared from the params, or
EXAMPLE_TENSORS in the instruction's test module).
"""
from __future__ import annotations

import re

import numpy as np
import pytest
import yaml

from nkirun.api import check_program, run
from nkirun.isa import MODULES
from repo_paths import DOCS, INVALID, ROOT, TESTS
from spec_examples import HERE, example_program, per_instruction_module, spec_of


@pytest.mark.parametrize("name", MODULES)
def test_every_example_checks_clean_and_runs(tmp_path, name):
    spec = spec_of(name)
    assert spec.example.strip(), f"{name}: SPEC.example is empty"
    assert re.search(rf"^- (nki\.isa\.|nisa\.|nl\.)?{name}:", spec.example, re.M), \
        f"{name}: its example does not use it"
    path = example_program(tmp_path, name)
    diags = check_program(path).diagnostics
    assert diags == [], (
        f"{name}'s example under the declarations below reports "
        f"{[d.one_line() for d in diags]}; if the guess is wrong, give the right shapes in "
        f"tests/isa/test_{name}.py as EXAMPLE_TENSORS\n" + open(path).read())
    outputs = run(path)
    declared = [t for t, d in yaml.safe_load(open(path))["tensors"].items() if d.get("output")]
    assert sorted(outputs) == sorted(declared)
    assert all(isinstance(a, np.ndarray) and a.size for a in outputs.values())


@pytest.mark.parametrize("name", MODULES)
def test_every_instruction_has_its_test_module(name):
    module = per_instruction_module(name)
    assert module is not None, f"tests/isa/test_{name}.py is missing"
    tests = [n for n in dir(module) if n.startswith("test_") and callable(getattr(module, n))]
    assert len(tests) >= 2, f"tests/isa/test_{name}.py has {len(tests)} test function(s)"


def test_no_test_module_without_an_instruction():
    helpers = {"test_registry", "test_fast_definitions", "test_nc_matmul_modes",
               "test_accumulators", "test_signed_zeros"}
    stray = sorted(p.stem for p in HERE.glob("test_*.py")
                   if p.stem not in helpers and p.stem.removeprefix("test_") not in MODULES)
    assert not stray, f"tests/isa/ modules naming no instruction in MODULES: {stray}"


# ---- every diagnostic code --------------------------------------------------------------------
EXPECT = re.compile(r"^# expect: ([EW]\d{3}) at", re.M)
SOURCE_CODES = re.compile(r"""["']([EW]\d{3})["']""")

# Codes that cannot come from a program file alone (file-system and data-file problems,
# run-time errors and warnings): the test that covers each (tests/<path>::<function>).
ELSEWHERE = {
    "W264": "kernel/test_hardware_accepts.py::test_a_transpose_wider_than_32_is_the_tensor_engines",
    "W047": "checker/test_capacity.py::test_peak_and_its_instruction_are_reported",
    "E000": "cli/test_robustness.py::test_missing_program_file",
    "E595": "contract/test_kernel_contract_audit.py::"
            "test_python_api__parameter_mismatch_is_a_typeerror_and_an_nkirunerror",
    "E596": "contract/test_kernel_contract_audit.py::"
            "test_python_api__trace_gives_a_program_convertible_to_yaml_and_text",
    "E070": "cli/test_robustness.py::test_bad_data_file",   # its NPY_CASES rows
    "E071": "cli/test_robustness.py::test_bad_data_file",
    "E072": "cli/test_robustness.py::test_bad_data_file",
    "E073": "cli/test_robustness.py::test_bad_data_file",
    "E074": "cli/test_robustness.py::test_bad_data_file",
    "E075": "runner/test_workflow.py::test_python_api_run_check_cost",
    "E080": "cli/test_robustness.py::test_failure_while_writing_second_output",
    "E090": "runner/test_workflow.py::"
            "test_uninitialised_read_names_instruction_tensor_and_first_element",
    "E091": "cli/test_robustness.py::test_out_of_memory_is_a_diagnostic",
    "E092": "cli/test_robustness.py::test_output_written_only_in_part",
    "W136": "isa/test_nc_match_replace8.py::test_missing_vals_warn_and_index_zero",
    "W137": "isa/test_nc_match_replace8.py::"
            "test_page_duplicates_take_successive_occurrences_in_vals_order",
    "W202": "isa/test_activation.py::test_out_of_range_input_warns",
    "W580": "isa/test_rng.py::test_psum_dst_and_run_time_note",
    "E416": "isa/test_local_gather.py::test_run_past_the_partition_end_is_E416",
    "E423": "isa/test_nc_n_gather.py::test_out_of_range_index_is_a_run_time_error_E423",
    "E452": "isa/test_sequence_bounds.py::"
            "test_ids_not_non_negative_integers_are_a_run_time_error_E452",
    "E486": "isa/test_nc_matmul_modes.py::test_transpose_rules",
    "W487": "isa/test_nc_matmul_modes.py::test_onezero_hints_cost_and_warning",
    "E093": "source/test_indirect_dma.py::test_out_of_bounds_index_is_E093_or_skipped",
    "W620": "runner/test_shadow.py::test_a_failure_only_the_shadow_hits_is_W620",
    **{c: "isa/test_dma_transpose.py::test_indirect_transpose_rules"
       for c in ("E590", "E591", "E592")},
    "E593": "isa/test_dma_compute.py::test_rmw_rules",
    "E594": "isa/test_dma_compute.py::test_rmw_rules",
    "W590": "isa/test_dma_compute.py::test_scatter_rmw_with_repeated_indices_warns",
    **{f"E60{i}": "kernel/test_kernel_errors.py::test_every_kernel_code_has_an_invalid_kernel"
       for i in range(9)},
    # two cores (LNC2): the rules of sendrecv/core_barrier and the run-time race
    **{c: "isa/test_sendrecv.py::test_rules" for c in
       ("E632", "E636", "E638", "E639", "E640", "E641")},
    **{c: "isa/test_core_barrier.py::test_rules" for c in ("E634", "E637", "W680")},
    "W631": "runner/test_two_cores.py::test_indirect_writes_to_the_same_rows_race_at_run_time",
    "E642": "runner/test_two_core_loops.py::"
            "test_counts_that_do_not_pair_are_a_located_run_error_naming_both_cores",
    "W633": "runner/test_two_core_loops.py::"
            "test_both_cores_writing_the_same_values_is_harmless_and_run_says_so",
    "W632": "runner/test_two_core_loops.py::"
            "test_a_body_once_mismatch_in_a_loop_is_w632_and_run_decides",
    "E655": "runner/test_runtime_loops.py::test_loop_bound_never_written_is_e655_at_the_loop",
    "E657": "schedule/test_trip_counts.py::test_no_data_and_no_trip_is_e657_naming_the_loop",
    "E658": "schedule/test_trip_counts.py::test_bad_trip_is_e658",
    "E659": "kernel/test_kernel_loops.py::test_register_misuse_is_e659",
    "W601": "kernel/test_input_dtypes.py::"
            "test_raw_one_byte_file_without_dtype_warns_and_reads_e4m3",
    "W602": "kernel/test_kernel_rounding.py::test_mod_in_a_program_warns_and_runs",
    "E661": "runner/test_runtime_loops.py::test_endless_while_loop_stops_with_e661",
    "E609": "kernel/test_trace_bounds.py::"
            "test_the_trace_budget_names_the_line_that_keeps_recording",
    "E662": "runner/test_run_budget.py::"
            "test_nested_loops_stop_at_the_budget_with_e662_naming_the_loop",
    # collectives (multi-rank runs)
    "E690": "isa/test_collective_permute.py::test_two_pairs_to_one_target_is_e690",
    "E691": "runner/test_ranks.py::"
            "test_different_first_collectives_are_a_mismatch_showing_each_call",
    "E692": "runner/test_ranks.py::"
            "test_a_rank_that_never_joins_is_a_deadlock_naming_each_rank",
    "E693": "isa/test_all_gather.py::test_a_dst_of_the_wrong_size_is_e693",
}


def emitted_codes() -> set[str]:
    codes = set()
    for f in (ROOT / "nkirun").rglob("*.py"):
        codes |= set(SOURCE_CODES.findall(f.read_text()))
    return codes


def invalid_program_codes() -> set[str]:
    return {c for p in INVALID.iterdir() if p.suffix in (".yaml", ".nkis")
            for c in EXPECT.findall(p.read_text())}


def test_every_code_has_an_invalid_program_or_a_covering_test():
    missing = sorted(emitted_codes() - invalid_program_codes() - set(ELSEWHERE))
    assert not missing, f"codes without a program in tests/invalid/ or a test here: {missing}"


def _test_source(file: str, function: str) -> str:
    """The source of test `function` in tests/`file`: its decorators, its body and the
    module-level tables (UPPER_CASE names) it uses."""
    lines = (TESTS / file).read_text().splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith(f"def {function}(")), None)
    assert start is not None, f"tests/{file}::{function} does not exist"
    end = next((i for i in range(start + 1, len(lines)) if lines[i][:1].strip()), len(lines))
    while start > 0 and lines[start - 1][:1] in ("@", " ", ")", "]"):   # its decorators
        start -= 1
    source = "\n".join(lines[start:end])
    tables = set(re.findall(r"\b([A-Z][A-Z0-9_]+)\b", source))
    for i, ln in enumerate(lines):   # the tables' definitions, up to the next top-level line
        name = ln.split(" = ", 1)[0]
        if name in tables and " = " in ln:
            stop = next((j for j in range(i + 1, len(lines)) if lines[j][:1].strip()
                         and not lines[j].startswith(("]", "}", ")"))), len(lines))
            source += "\n" + "\n".join(lines[i:stop])
    return source


@pytest.mark.parametrize("code", sorted(ELSEWHERE))
def test_the_covering_test_exists_and_checks_its_code(code):
    file, function = ELSEWHERE[code].split("::")
    assert re.search(rf"\b{code}\b", _test_source(file, function)), \
        f"{ELSEWHERE[code]} never mentions {code}"


def test_every_code_is_documented():
    doc = (DOCS / "diagnostics.md").read_text()
    missing = sorted(c for c in emitted_codes() if f"`{c}`" not in doc)
    assert not missing, f"codes missing from docs/diagnostics.md: {missing}"
