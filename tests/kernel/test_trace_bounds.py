"""Nothing a kernel's parameters or Python ask for runs unbounded (nkirun/limits.py,
source/kernel/bounds.py): parameter sizes are checked before the kernel's Python runs,
the trace stops at the instruction budget naming the line that keeps recording, and
over-long command-line values are clean errors. Every case asserts the outcome (an error
code, an exit status); subprocess timeouts only guard against a hang."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from click.testing import CliRunner

import nkirun
from nkirun.cli import cli
from nkirun.diagnostics import NkirunError

ROWS = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def rows(x, factor=2.0):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in range(x.shape[0] // 128):
        t = nl.ndarray((128, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[i * 128:(i + 1) * 128, :])
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=factor)
        nisa.dma_copy(dst=out[i * 128:(i + 1) * 128, :], src=t)
    return out
'''
HUGE = "x=float32[1280000000000,512]"  # 2.6e15 bytes: 10^10 loop trips if traced


@pytest.fixture
def kernel(tmp_path):
    path = tmp_path / "rows.py"
    path.write_text(ROWS)
    return str(path)


@pytest.fixture
def rows(kernel):
    import importlib.util
    spec = importlib.util.spec_from_file_location("rows_bounds", kernel)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.rows


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def nkirun_process(*args, timeout=120):
    """The `nkirun` command in its own process (a hang fails the test, not the suite)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run([sys.executable, "-m", "nkirun", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, env=env)


@pytest.mark.parametrize("command", ["check", "cost", "run"])
def test_a_huge_shape_is_e043_before_the_kernel_runs(kernel, command, tmp_path):
    extra = ["--out", tmp_path / "o"] if command == "run" else []
    if command == "run":  # (run takes its tensors as files: a huge .npy header)
        npy = tmp_path / "x.npy"
        with open(npy, "wb") as f:
            np.lib.format.write_array_header_1_0(f, {"descr": "<f4", "fortran_order": False,
                                                     "shape": (1280000000000, 512)})
        args = ["--input", f"x={npy}"]
    else:
        args = ["--shape", HUGE]
    p = nkirun_process(command, kernel, *args, *extra)
    assert p.returncode == 1, p.stderr + p.stdout
    out = p.stdout + p.stderr
    assert "E043" in out and "tensor parameter `x`" in out and "rows.py:8" in out


def test_an_input_header_too_large_is_e043_for_check(kernel, tmp_path):
    npy = tmp_path / "x.npy"
    with open(npy, "wb") as f:
        np.lib.format.write_array_header_1_0(f, {"descr": "<f4", "fortran_order": False,
                                                 "shape": (1280000000000, 512)})
    r = invoke("check", kernel, "--input", f"x={npy}")
    assert r.exit_code == 1 and "E043" in r.output, r.output


def test_api_shape_too_large_is_e043(rows):
    with pytest.raises(NkirunError) as e:
        nkirun.check(rows, nkirun.shape("float32", 1280000000000, 512))
    assert [d.code for d in e.value.diagnostics] == ["E043"]


def test_parameters_together_over_the_limit_are_e043(tmp_path):
    path = tmp_path / "two.py"
    path.write_text(textwrap.dedent('''
        import nki
        import nki.isa as nisa
        import nki.language as nl

        @nki.jit
        def two(a, b):
            return a
    '''))
    a, b = (tmp_path / "a.npy", tmp_path / "b.npy")
    for f in (a, b):
        np.save(f, np.zeros((1024, 1024), np.float32))  # 4 MiB each
    r = invoke("run", f"{path}::two", "--input", f"a={a}", "--input", f"b={b}",
               "--max-hbm-bytes", 6 * 2 ** 20, "--out", tmp_path / "o")
    assert r.exit_code == 1 and "E043" in r.output, r.output
    assert "the 2 tensor parameters total 8,388,608 bytes" in r.output


def test_a_5000_digit_dimension_is_e043(kernel):
    r = invoke("check", kernel, "--shape", f"x=float32[{'9' * 5000},512]")
    assert r.exit_code == 1 and "E043" in r.output, r.output
    assert "more than 10^30 bytes" in r.output


def test_a_huge_grid_is_e609_without_listing_its_instances(kernel):
    r = invoke("check", kernel, "--shape", "x=float32[256,512]", "--grid", 100_000_000)
    assert r.exit_code == 1 and "E609" in r.output and "100,000,000" in r.output, r.output


def test_an_arg_too_deep_for_the_parser_is_a_usage_error(kernel):
    r = invoke("check", kernel, "--shape", "x=float32[256,512]", "--arg",
               "factor=" + "-" * 100_000 + "1")
    assert r.exit_code == 2 and "nested too deeply" in r.output, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit)


def test_the_trace_budget_names_the_line_that_keeps_recording(kernel):
    r = invoke("check", kernel, "--shape", "x=float32[1280000,512]",
               "--max-instructions", 3000)
    assert r.exit_code == 1 and "E609" in r.output, r.output
    assert "the trace recorded 3,000 instructions" in r.output
    assert "rows.py:1" in r.output  # one of the loop body's lines (12, 13 or 14)


def test_the_default_budget_is_generous_and_the_option_raises_it(kernel):
    r = invoke("check", kernel, "--shape", "x=float32[1024,512]")
    assert r.exit_code == 0, r.output
    r = invoke("check", kernel, "--shape", "x=float32[1024,512]", "--max-instructions", 24)
    assert r.exit_code == 0, r.output  # exactly 8 trips of 3 calls
    r = invoke("check", kernel, "--shape", "x=float32[1024,512]", "--max-instructions", 23)
    assert r.exit_code == 1 and "E609" in r.output
    r = invoke("check", kernel, "--shape", "x=float32[1024,512]", "--max-instructions", 0)
    assert r.exit_code == 2


def test_api_max_instructions(rows):
    x = np.ones((128 * 40, 4), np.float32)
    with pytest.raises(NkirunError) as e:
        nkirun.simulate(rows, max_instructions=50)(x)
    assert e.value.diagnostics[0].code == "E609"
    assert e.value.diagnostics[0].loc.line in (12, 13, 14)
    for api in (nkirun.check, nkirun.cost, nkirun.trace):
        with pytest.raises(NkirunError) as e:
            api(rows, x, max_instructions=50)
        assert e.value.diagnostics[0].code == "E609"
    assert len(nkirun.trace(rows, x, max_instructions=120).instructions) == 120
    with pytest.raises(ValueError):
        nkirun.simulate(rows, max_instructions=0)
    np.testing.assert_array_equal(nkirun.simulate(rows)(x), 2 * x)  # budget back to default


ENDLESS = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def endless(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    print("tracing", flush=True)
    for step in range(10 ** 12):
        for lane in range(3):
            nl.ndarray((128, 8), dtype=x.dtype, buffer=nl.sbuf)
    return out
'''


def test_ctrl_c_names_the_kernel_line_and_its_loop_variables(tmp_path, interruptible_children):
    path = tmp_path / "endless.py"
    path.write_text(ENDLESS)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    p = subprocess.Popen([sys.executable, "-m", "nkirun", "check", str(path), "--shape",
                          "x=float32[128,8]"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env)
    try:
        first = p.stderr.readline()  # the kernel prints while traced: its loop starts now
        time.sleep(0.5)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert first.strip() == "tracing" and p.returncode == 130, first + err
    assert "endless.py:13 while tracing (step=" in err and ", lane=" in err, err
