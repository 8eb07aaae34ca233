"""The program-format contract (program-format.md), statements the line-by-line audit of
2026-11 found untested: the MX dtypes of the Tensors table, every reduce_cmd value, the
JSON position fields of whole-file problems, and the kernel-only options on a program.
Each test names the contract section it checks."""
from __future__ import annotations

import json

import numpy as np
import pytest
from prog_helpers import invoke, run_ok, write_yaml

# The NeuronCore-v4 MX dtypes: (name, the NumPy type a .npy holds them as)
MX_DTYPES = [("float8_e4m3fn_x4", np.uint32), ("float8_e5m2_x4", np.uint32),
             ("float4_e2m1fn_x4", np.uint16), ("float8_e8m0fnu", None)]


@pytest.mark.parametrize("name, np_type", MX_DTYPES, ids=[m[0] for m in MX_DTYPES])
def test_tensors__mx_dtypes_declare_load_and_write(tmp_path, name, np_type):
    """'for the NeuronCore-v4 MX instructions also float8_e4m3fn_x4, float8_e5m2_x4,
    float4_e2m1fn_x4 ... and float8_e8m0fnu': declared, initialised from a .npy and
    written back unchanged (the bits go through a DMA round trip)."""
    import ml_dtypes
    if np_type is None:  # the block-scale type: ml_dtypes' own
        data = np.array([[1.0, 2.0, 0.5, 4.0]] * 4, ml_dtypes.float8_e8m0fnu)
    else:
        data = np.arange(16, dtype=np_type).reshape(4, 4) * 3 + 1
    np.save(tmp_path / "x.npy", data)
    path = write_yaml(tmp_path, f"""\
    version: 1
    target: trn3
    tensors:
      x: {{buffer: hbm, shape: [4, 4], dtype: {name}, file: x.npy}}
      t: {{buffer: sbuf, shape: [4, 4], dtype: {name}}}
      y: {{buffer: hbm, shape: [4, 4], dtype: {name}, output: true}}
    instructions:
      - load: {{dst: t, src: x}}
      - store: {{dst: y, src: t}}
    """)
    y = run_ok(path, tmp_path / "o")["y"]
    assert y.tobytes() == data.tobytes() and y.shape == (4, 4)


@pytest.mark.parametrize("cmd, want", [("reset_reduce", 8.0), ("load_reduce", 15.0)])
def test_values__reduce_cmd_load_reduce_with_reduce_init(tmp_path, cmd, want):
    """'reduce_cmd: idle, reset, reduce, reset_reduce, load_reduce (with reduce_init)':
    load_reduce starts the accumulator at reduce_init (7 + the row's sum of 8 ones)."""
    init = ", reduce_init: ri" if cmd == "load_reduce" else ""
    path = write_yaml(tmp_path, f"""\
    version: 1
    tensors:
      t: {{buffer: sbuf, shape: [3, 8], dtype: float32, fill: 1}}
      ri: {{buffer: sbuf, shape: [3, 1], dtype: float32, fill: 7}}
      d: {{buffer: sbuf, shape: [3, 8], dtype: float32}}
      m: {{buffer: sbuf, shape: [3, 1], dtype: float32, output: true}}
    instructions:
      - tensor_scalar_reduce: {{dst: d, data: t, op0: multiply, operand0: 1.0, reduce_op: add,
                                reduce_cmd: {cmd}, reduce_res: m{init}}}
    """)
    assert (run_ok(path, tmp_path / "o")["m"] == want).all()


@pytest.mark.parametrize("content", [None, b"\x93NUMPY\x01\x00v\x00{}"],
                         ids=["missing", "binary"])
def test_command_line__json_line_and_column_are_1_based_ints(tmp_path, content):
    """'each has at least ... line and column (1-based, in the program file)': also for a
    problem of the whole file (missing, binary), which sits at 1:1."""
    path = tmp_path / "p.yaml"
    if content is not None:
        path.write_bytes(content)
    r = invoke("check", path, "--format", "json")
    assert r.exit_code == 1
    (d,) = json.loads(r.output)["diagnostics"]
    assert (d["line"], d["column"]) == (1, 1) and d["instruction"] is None


def test_command_line__kernel_options_on_a_program_are_a_usage_error(tmp_path):
    """check/cost of a YAML program take no kernel parameters: usage error (exit 2) naming
    the option given."""
    path = write_yaml(tmp_path, "version: 1\ninstructions: []\n")
    for args, named in ((["check", "--grid", "2"], "--grid"),
                        (["cost", "--shape", "x=float32[4]"], "--shape"),
                        (["cost", "--lnc", "2"], "--lnc")):
        r = invoke(args[0], path, *args[1:])
        assert r.exit_code == 2 and named in r.output, r.output


@pytest.mark.parametrize("name", ["inf", "nan", "NaN", "Inf"])
def test_values__a_tensor_cannot_be_named_like_a_scalar_word(tmp_path, name):
    """'scalars: YAML numbers, and the strings inf, -inf, nan, ...' and 'tensors: one
    namespace': a tensor named `inf` would make `operand0: inf` mean two things (it
    silently meant the number), so the name is refused (E018), in YAML and text alike."""
    path = write_yaml(tmp_path, f"""\
    version: 1
    tensors:
      {name}: {{buffer: sbuf, shape: [4, 1], dtype: float32, fill: 2}}
      t: {{buffer: sbuf, shape: [4, 8], dtype: float32, fill: 1}}
      o: {{buffer: sbuf, shape: [4, 8], dtype: float32, output: true}}
    instructions:
      - tensor_scalar: {{dst: o, data: t, op0: add, operand0: {name}}}
    """)
    r = invoke("check", path)
    assert r.exit_code == 1 and "prog.yaml:3:3: error[E018]" in r.output, r.output
    text = tmp_path / "p.nkis"
    text.write_text(f"version 1\ntensor {name} sbuf [4, 1] float32 fill=2\n")
    r = invoke("check", text)
    assert r.exit_code == 1 and "error[E018]" in r.output, r.output
