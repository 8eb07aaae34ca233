"""The kernel contract (docs/kernels.md), statements the line-by-line audit of 2026-11
found untested or wrong. Each test names the contract section it checks."""
from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest
from click.testing import CliRunner

import nkirun
from nkirun.cli import cli

COPY = """\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def copy(x,
         scale=1.0):
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out
"""


def kernel_file(tmp_path, source=COPY, name="copykernel.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


def load_kernel(path):
    import importlib.util
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def truncated_npy(path, shape=(128, 4)):
    np.save(path, np.ones(shape, np.float32))
    data = path.read_bytes()
    path.write_bytes(data[:200])  # the header and part of the data
    return path


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_command_line__check_cost_convert_read_only_the_input_header(tmp_path):
    """'check, cost and convert read only the file's header' (run reads the data)."""
    path = kernel_file(tmp_path)
    bad = truncated_npy(tmp_path / "x.npy")
    for command in (["check"], ["cost"], ["convert", "--to", "yaml"]):
        r = invoke(*command, f"{path}::copy", "--input", f"x={bad}")
        assert r.exit_code == 0, (command, r.output)
    r = invoke("run", f"{path}::copy", "--input", f"x={bad}", "--out", tmp_path / "o")
    assert r.exit_code == 1 and "E072" in r.output
    assert not (tmp_path / "o").exists()  # nothing written


def test_command_line__parameter_diagnostics_point_into_the_kernel_file(tmp_path):
    """'line and column point into the kernel's .py file': a bad --input file is reported
    at the parameter in the kernel's def line, never in nkirun's own source."""
    path = kernel_file(tmp_path)
    bad = truncated_npy(tmp_path / "x.npy")
    r = invoke("run", f"{path}::copy", "--input", f"x={bad}", "--out", tmp_path / "o")
    first = r.output.splitlines()[0]
    assert first.startswith(f"{path}:7:10: error[E072]"), r.output
    assert "nkirun" not in first.split("error")[0]


def test_python_api__parameter_mismatch_is_a_typeerror_and_an_nkirunerror(tmp_path):
    """'Errors raise nkirun.NkirunError carrying the diagnostics' — also a call that does
    not fit the kernel's parameters (which stays a TypeError, as Python's own call)."""
    copy = load_kernel(kernel_file(tmp_path)).copy
    x = np.ones((128, 4), np.float32)
    for call in (lambda: nkirun.simulate(copy)(),
                 lambda: nkirun.simulate(copy)(x, bogus=1),
                 lambda: nkirun.check(copy, scale=1.0),
                 lambda: nkirun.cost(copy),
                 lambda: nkirun.trace(copy, x, bogus=2)):
        with pytest.raises(nkirun.NkirunError) as info:
            call()
        assert isinstance(info.value, TypeError)
        assert [d.code for d in info.value.diagnostics] == ["E595"]
        assert "error[E595]" not in str(info.value)  # str(e) is the message itself
    np.testing.assert_array_equal(nkirun.simulate(copy)(x, scale=2.0), x)


def test_command_line__parameter_mismatch_stays_a_usage_error(tmp_path):
    """'A missing or unknown parameter is a usage error (exit 2) that names it.'"""
    path = kernel_file(tmp_path)
    r = invoke("cost", f"{path}::copy", "--shape", "x=float32[128,4]", "--arg", "bogus=1")
    assert r.exit_code == 2 and "`bogus`" in r.output
    r = invoke("run", f"{path}::copy", "--arg", "scale=2.0")
    assert r.exit_code == 2 and "`x`" in r.output


def test_command_line__kernel_options_with_a_yaml_program_name_the_option(tmp_path):
    """The usage error for kernel-only options on a YAML program names what was given."""
    prog = tmp_path / "p.yaml"
    prog.write_text("version: 1\ninstructions: []\n")
    np.save(tmp_path / "x.npy", np.ones(3, np.float32))
    r = invoke("check", prog, "--shape", "x=float32[3]")
    assert r.exit_code == 2 and "--shape" in r.output
    # --input is no kernel-only option (issue 25: every option for every input): a
    # program's --input names a tensor it declares (E075 otherwise)
    r = invoke("check", prog, "--input", f"x={tmp_path / 'x.npy'}")
    assert r.exit_code == 1 and "E075" in r.output
    r = invoke("cost", prog, "--arg", "a=1")
    assert r.exit_code == 2 and "--arg" in r.output and "--lnc" not in r.output


def test_command_line__json_of_a_kernel_check_is_the_program_format_json(tmp_path):
    """'Exit status and the JSON of check and cost are those of the program-format
    contract ... The JSON diagnostics also carry file.'"""
    path = kernel_file(tmp_path, COPY.replace("nisa.dma_copy(dst=out, src=t)",
                                              "nisa.dma_copy(dst=out, src=x)"))
    r = invoke("check", f"{path}::copy", "--shape", "x=bfloat16[128,4]", "--format", "json")
    doc = json.loads(r.output)
    assert r.exit_code == 0  # warnings allowed
    (d,) = doc["diagnostics"]
    assert d["severity"] == "warning" and d["file"] == str(path) and d["line"] == 10
    assert {"code", "message", "column", "instruction"} <= set(d)


def test_python_api__trace_gives_a_program_convertible_to_yaml_and_text(tmp_path):
    """'prog = nkirun.trace(kernel, x, w, eps=1e-6)  # the IR Program (convertible to
    YAML/text)': prog.to_yaml()/to_text() give programs that run like the kernel, and the
    Program itself checks, costs and runs (its array parameters given as inputs)."""
    copy = load_kernel(kernel_file(tmp_path)).copy
    x = np.arange(128 * 4, dtype=np.float32).reshape(128, 4)
    prog = nkirun.trace(copy, x)
    assert nkirun.check(prog) == []
    assert nkirun.cost(prog).total_ns > 0
    (name,) = [n for n, t in prog.tensors.items() if t.output]
    np.testing.assert_array_equal(nkirun.run(prog, inputs={"x": x})[name], x)
    with pytest.raises(nkirun.NkirunError) as info:
        nkirun.run(prog)
    assert [d.code for d in info.value.diagnostics] == ["E596"] and "`x`" in str(info.value)
    for text, suffix in ((prog.to_yaml(), "yaml"), (prog.to_text(), "nkis")):
        path = tmp_path / f"traced.{suffix}"
        path.write_text(text)
        np.testing.assert_array_equal(nkirun.run(str(path), inputs={"x": x})[name], x)


def test_what_the_kernel_sees__a_numpy_array_as_an_operand_is_a_located_error(tmp_path):
    """'An error is always a message a person can act on ... never a Python traceback':
    a NumPy array where a tile goes is E603 at the nisa call (it was an internal error)."""
    path = kernel_file(tmp_path, COPY.replace("nisa.dma_copy(dst=t, src=x)",
                                              "nisa.tensor_copy(dst=t, src=np.ones((128, 4)))")
                       .replace("import nki\n", "import numpy as np\nimport nki\n", 1))
    r = invoke("check", f"{path}::copy", "--shape", "x=float32[128,4]")
    assert r.exit_code == 1 and f"{path}:11:5: error[E603]" in r.output, r.output
    assert "internal error" not in r.output


def test_what_the_kernel_sees__a_float_loop_bound_is_a_located_error(tmp_path):
    """'static_range (Python ranges: the loop unrolls while tracing)': a bound Python's
    range refuses is the kernel's mistake, E603 at its line (it was an internal error)."""
    path = kernel_file(tmp_path, COPY.replace("    nisa.dma_copy(dst=t, src=x)\n",
                                              "    for i in nl.affine_range(2.5):\n"
                                              "        nisa.dma_copy(dst=t, src=x)\n"))
    r = invoke("check", f"{path}::copy", "--shape", "x=float32[128,4]")
    assert r.exit_code == 1 and f"{path}:10:14: error[E603]" in r.output, r.output
