"""Contract (docs/program-format.md), the command line: --input, exit statuses, --out,
check/cost output formats, errors that say where and what."""
from __future__ import annotations

import pathlib
import subprocess

import numpy as np
import pytest
from prog_helpers import (assert_bits_equal, assert_no_traceback, check_json, errors_of, invoke,
                          line_of, run_ok, write_yaml)

from contract_programs import (
    CONTRACT_EXAMPLE,
    base,
    copy_prog,
    cost_json,
    example_data,
    range_select_prog,
)

NKIRUN = "nkirun"


def test_run_input_replaces_initial_contents_several(tmp_path):
    path = base(tmp_path, "- tensor_tensor: {dst: y, data1: x, data2: z, op: add}",
                "z: {buffer: sbuf, shape: [4, 8], dtype: float32, fill: 1}\n")
    a = np.full((4, 8), 10, np.float32)
    b = np.full((4, 8), 5, np.float32)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    got = run_ok(path, tmp_path / "o", "--input", f"x={tmp_path / 'a.npy'}",
                 "--input", f"z={tmp_path / 'b.npy'}")
    assert (got["y"] == 15).all()
    # --input may name a tensor with no initial contents at all
    path2 = base(tmp_path / "u", "- tensor_copy: {dst: y, src: x}")
    text = pathlib.Path(path2).read_text().replace(", file: x.npy", "")
    pathlib.Path(path2).write_text(text)
    assert errors_of(path2)[0]["code"] == "E050"
    got = run_ok(path2, tmp_path / "o2", "--input", f"x={tmp_path / 'a.npy'}")
    assert (got["y"] == 10).all()


def test_run_input_paths_relative_to_cwd(tmp_path):
    path, x = copy_prog(tmp_path / "p")
    np.save(tmp_path / "in.npy", x * 2)
    r = invoke("run", path, "--out", "o", "--input", "x=in.npy", cwd=tmp_path)
    assert r.exit_code == 0, r.output
    assert_bits_equal(np.load(tmp_path / "o" / "y.npy"), x * 2)


@pytest.mark.parametrize("args, code", [
    (["run", "{p}", "--input", "x=missing.npy", "--out", "{o}"], 1),
    (["run", "{p}", "--input", "nosuch={a}", "--out", "{o}"], 1),
    (["run", "{p}", "--input", "x={bad}", "--out", "{o}"], 1),
    (["run", "{p}", "--input", "x", "--out", "{o}"], 2),
    (["run", "{p}", "--input", "--out", "{o}"], 2),
    (["run", "{p}", "--frobnicate"], 2),
    (["run"], 2),
    (["check"], 2),
    (["cost"], 2),
    (["check", "{p}", "--format", "xml"], 2),
    (["cost", "{p}", "--format", "yaml"], 2),
    (["check", "{p}", "--format"], 2),
    (["run", "{p}", "--out"], 2),
    (["explode", "{p}"], 2),
    (["check", "{nofile}"], 1),
    (["run", "{nofile}", "--out", "{o}"], 1),
    (["cost", "{nofile}"], 1),
])
def test_exit_status(tmp_path, args, code):
    """0 success; 1 invalid program or failed run (nothing written); 2 usage error."""
    path, x = copy_prog(tmp_path / "p")
    np.save(tmp_path / "a.npy", x)
    np.save(tmp_path / "bad.npy", np.zeros((3, 3), np.float32))
    fmt = {"p": path, "o": tmp_path / "o", "a": tmp_path / "a.npy", "bad": tmp_path / "bad.npy",
           "nofile": tmp_path / "nothere.yaml"}
    r = invoke(*[a.format(**fmt) for a in args])
    assert_no_traceback(r, code)
    assert not (tmp_path / "o").exists()


def test_exit_status_subprocess(tmp_path):
    """The console script's real exit statuses (0 / 1 / 2), no traceback."""
    path, _ = copy_prog(tmp_path / "p")
    bad = base(tmp_path / "bad", "- tensor_copy: {dst: y, src: nosuch}")
    for args, code in ((["check", path], 0), (["check", bad], 1), (["check", path, "--bogus"],
                                                                     2)):
        r = subprocess.run([NKIRUN, *args], capture_output=True, text=True)
        assert r.returncode == code, (args, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr


def test_out_dir_is_created_nested_and_must_be_a_folder(tmp_path):
    path, x = copy_prog(tmp_path / "p")
    assert_bits_equal(run_ok(path, tmp_path / "a" / "b" / "c")["y"], x)
    (tmp_path / "file").write_text("not a folder")
    r = invoke("run", path, "--out", tmp_path / "file" / "sub")
    assert_no_traceback(r, 1)
    assert "E080" in r.stderr


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["run", "--help"],
                                  ["check", "--help"], ["cost", "--help"]])
def test_help_and_version_exit_0(args):
    r = invoke(*args)
    assert r.exit_code == 0 and r.output


def test_nothing_written_on_failure_even_into_an_existing_out_dir(tmp_path):
    """exit 1: nothing is written, and files already in --out stay as they were."""
    good, x = copy_prog(tmp_path / "g")
    out = tmp_path / "o"
    run_ok(good, out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    # a run-time failure (E090) in a program with two outputs, one fully written first
    text = """\
    version: 1
    tensors:
      x: {buffer: sbuf, shape: [4, 8], dtype: float32, fill: 9, output: true}
      u: {buffer: sbuf, shape: [4, 8], dtype: float32}
      y: {buffer: sbuf, shape: [4, 8], dtype: float32, output: true}
    instructions:
      - memset: {dst: "u[0:2, :]", value: 1.0}
      - tensor_copy: {dst: y, src: u}
    """
    for bad in (write_yaml(tmp_path / "b1", text),
                base(tmp_path / "b2", "- tensor_copy: {dst: y, src: x[0]}")):
        r = invoke("run", bad, "--out", out)
        assert r.exit_code == 1, r.output
        assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    # bad --input data: also exit 1, unchanged
    np.save(tmp_path / "wrong.npy", np.zeros((4, 8), np.int32))
    r = invoke("run", good, "--out", out, "--input", f"x={tmp_path / 'wrong.npy'}")
    assert r.exit_code == 1 and "E073" in r.stderr
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_check_and_cost_read_no_data_file(tmp_path):
    """check and cost read no data file: they pass with the .npy files deleted (and with
    garbage in them); run then fails with a located E070."""
    x, lo, hi = example_data(tmp_path)
    path = write_yaml(tmp_path, CONTRACT_EXAMPLE)
    for f in ("x", "lo", "hi"):
        (tmp_path / f"{f}.npy").unlink()
    for fmt in ("text", "json"):
        assert invoke("check", path, "--format", fmt).exit_code == 0
        assert invoke("cost", path, "--format", fmt).exit_code == 0
    (tmp_path / "x.npy").write_bytes(b"not a numpy file")
    assert invoke("check", path).exit_code == 0
    r = invoke("run", path, "--out", tmp_path / "o")
    assert r.exit_code == 1 and "Traceback" not in r.stderr and not (tmp_path / "o").exists()
    assert f"{path}:{line_of(path, 'x.npy')}:" in r.stderr and "E072" in r.stderr


def test_check_text_format(tmp_path):
    path = base(tmp_path, "- tensor_copy: {dst: y, src: nosuch}")
    r = invoke("check", path, "--format", "text")
    assert r.exit_code == 1
    text = r.output + r.stderr
    line = line_of(path, "nosuch")
    assert f"{path}:{line}:" in text and "E026" in text and "nosuch" in text
    good, _ = copy_prog(tmp_path / "g")
    assert invoke("check", good).exit_code == 0


def test_check_json_diagnostics_fields(tmp_path):
    """One JSON object with `diagnostics`: severity, code, message, line and column (1-based)
    and instruction (0-based index, or null)."""
    text = """\
    version: 1
    tensors:
      x: {buffer: sbuf, shape: [4, 8], dtype: float32, fill: 1}
      bad: {buffer: sbuf, shape: [4, 8], dtype: float99}
      y: {buffer: sbuf, shape: [4, 8], dtype: float32, output: true}
      w: {buffer: sbuf, shape: [4, 8], dtype: float32}
    instructions:
      - tensor_copy: {dst: y, src: x}
      - tensor_copy: {dst: w, src: x}
      - tensor_copy: {dst: y, src: "x[0, :]"}
    """
    path = write_yaml(tmp_path, text)
    code, doc = check_json(path)
    assert code == 1 and isinstance(doc, dict)
    ds = doc["diagnostics"]
    for d in ds:
        assert d["severity"] in ("error", "warning")
        assert isinstance(d["code"], str) and d["code"][0] in "EW" and len(d["code"]) == 4
        assert isinstance(d["message"], str) and d["message"]
        assert isinstance(d["line"], int) and d["line"] >= 1
        assert isinstance(d["column"], int) and d["column"] >= 1
        assert d["instruction"] is None or isinstance(d["instruction"], int)
    by = {d["code"]: d for d in ds}
    e13 = by["E013"]
    assert e13["instruction"] is None and e13["line"] == 4
    src = pathlib.Path(path).read_text().splitlines()
    assert src[3][e13["column"] - 1:].startswith("float99")  # points at the bad value
    e33 = by["E033"]
    assert e33["instruction"] == 2 and e33["line"] == 10
    assert src[9][e33["column"] - 1:].startswith(('src: "x[0', '"x[0'))  # key or value
    w51 = by["W051"]
    assert w51["severity"] == "warning" and w51["instruction"] == 1


def test_check_json_first_column_and_line(tmp_path):
    """line/column are 1-based: a problem at the very start of the file is line 1, column 1."""
    path = write_yaml(tmp_path, "versio: 1\ntensors: {}\ninstructions: []\n")
    _, doc = check_json(path)
    d = next(d for d in doc["diagnostics"] if d["code"] == "E003")
    assert (d["line"], d["column"]) == (1, 1)


def test_check_json_ok_program_warnings_allowed(tmp_path):
    path = base(tmp_path, "- tensor_copy: {dst: w, src: x}\n- tensor_copy: {dst: y, src: x}",
                "w: {buffer: sbuf, shape: [4, 8], dtype: float32}\n")
    code, doc = check_json(path)
    assert code == 0
    assert [d["code"] for d in doc["diagnostics"]] == ["W051"]


def test_cost_json_contract(tmp_path):
    """target, total_ns (the makespan), engines {clock_ghz, busy_ns}, instructions in program
    order with op, engine, cycles (own clock), start_ns, end_ns."""
    path = base(tmp_path, """\
    - tensor_copy: {dst: y, src: x}
    - activation: {dst: a, op: exp, data: x}
    - affine_select: {dst: g, pattern: [[1, 8]], channel_multiplier: 1, on_true_tile: x,
                      on_false_value: 0.0}
    - nc_matmul: {dst: mm, stationary: x, moving: x}
    - store: {dst: h, src: y}
    - range_select: {dst: y, on_true_tile: x, comp_op0: greater_equal, comp_op1: less,
                     bound0: lo, bound1: lo}
    """, """\
    a: {buffer: sbuf, shape: [4, 8], dtype: float32, output: true}
    g: {buffer: sbuf, shape: [4, 8], dtype: float32, output: true}
    mm: {buffer: psum, shape: [8, 8], dtype: float32, output: true}
    h: {buffer: hbm, shape: [4, 8], dtype: float32, output: true}
    lo: {buffer: sbuf, shape: [4, 1], dtype: float32, fill: 0}
    """)
    assert errors_of(path) == []
    doc = cost_json(path)
    assert doc["target"] == "trn2"
    ins = doc["instructions"]
    assert [i["op"] for i in ins] == ["tensor_copy", "activation", "affine_select", "nc_matmul",
                                      "store", "range_select"]
    assert [i["engine"] for i in ins][1:5] == ["scalar", "gpsimd", "tensor", "dma"]
    assert ins[0]["engine"] in ("vector", "scalar", "gpsimd")
    assert ins[5]["engine"] == "vector"
    for i in ins:
        assert isinstance(i["cycles"], (int, float)) and i["cycles"] > 0
        assert 0 <= i["start_ns"] <= i["end_ns"]
        assert i["engine"] in doc["engines"]
        clock = doc["engines"][i["engine"]]["clock_ghz"]
        if i["engine"] != "dma":
            assert i["end_ns"] - i["start_ns"] == pytest.approx(i["cycles"] / clock, rel=1e-3,
                                                               abs=1e-3)
    assert doc["total_ns"] == pytest.approx(max(i["end_ns"] for i in ins), abs=1e-3)
    for name, e in doc["engines"].items():
        assert {"clock_ghz", "busy_ns"} <= set(e)
        assert e["busy_ns"] >= 0
        spent = sum(i["end_ns"] - i["start_ns"] for i in ins if i["engine"] == name)
        if name != "dma":
            assert e["busy_ns"] == pytest.approx(spent, abs=1e-2)
    # dependences: the store waits for the copy into y; range_select overwrites y after it
    assert ins[4]["start_ns"] >= ins[0]["end_ns"]
    assert ins[5]["start_ns"] >= ins[4]["end_ns"] - 1e-9 or ins[5]["start_ns"] >= ins[
        4]["start_ns"]


def test_cost_formula_of_range_select(tmp_path):
    """Page 000: max(MIN_II, N) Vector cycles, MIN_II ~ 64."""
    for n, want in ((8, 64), (512, 512), (1000, 1000)):
        x = np.zeros((2, n), np.float32)
        c = np.zeros((2, 1), np.float32)
        doc = cost_json(range_select_prog(tmp_path / str(n), x, c, c))
        (i,) = doc["instructions"]
        assert (i["op"], i["engine"], i["cycles"]) == ("range_select", "vector", want)


def test_cost_formulas_of_scan_and_match_replace(tmp_path):
    """Page 004: max(MIN_II, 2N) Vector cycles; page 003: N against MIN_II 64 (the page's
    min(MIN_II, N) read as max, nki-reference.md section 1.13)."""
    for n in (16, 40, 300):
        path = write_yaml(tmp_path / str(n), f"""\
        version: 1
        tensors:
          a: {{buffer: sbuf, shape: [4, {n}], dtype: float32, fill: 1}}
          v: {{buffer: sbuf, shape: [4, 8], dtype: float32, fill: 1}}
          r: {{buffer: sbuf, shape: [4, {n}], dtype: float32, output: true}}
          s: {{buffer: sbuf, shape: [4, {n}], dtype: float32, output: true}}
        instructions:
          - tensor_tensor_scan: {{dst: s, data0: a, data1: a, initial: 0, op0: add, op1: add}}
          - nc_match_replace8: {{dst: r, data: a, vals: v, imm: 0.0}}
        """)
        ins = cost_json(path)["instructions"]
        assert [(i["op"], i["engine"], i["cycles"]) for i in ins] == [
            ("tensor_tensor_scan", "vector", max(64, 2 * n)),
            ("nc_match_replace8", "vector", max(64, n))]


def test_cost_of_invalid_program_is_exit_1(tmp_path):
    path = base(tmp_path, "- tensor_copy: {dst: y, src: nosuch}")
    r = invoke("cost", path, "--format", "json")
    assert_no_traceback(r, 1)
    assert "E026" in r.output + r.stderr, r.output


# (program text, the error check reports): each bad program fails every command with exit 1
BAD_INPUTS = [
    ("", "E002"), ("[]", "E002"),
    ("version: 1\ntensors: []\ninstructions: {}\n", "E006"),
    ("version: 1\ntensors: {x: 3}\ninstructions: []\n", "E006"),
    ("version: 1\ntensors: {}\ninstructions: [{load: 3}]\n", "E024"),
    ("version: 1\ntensors: {}\ninstructions: [{load: {dst: [1], src: {a: 1}}}]\n", "E024"),
    ("version: [1]\n", "E004"), ("\t: :\n", "E001"),
    ("version: 1\ntensors:\n  x: {buffer: sbuf, shape: [1e9, 1e9], dtype: float32}\n"
     "instructions: []\n", "E012"),
    ("version: 1\ntensors:\n  x: {buffer: sbuf, shape: [2, 2], dtype: float32, fill: 1}\n"
     "instructions:\n  - memset: {dst: 'x[0:2, 0:2:0]', value: 1}\n", "E032"),
    ("version: 1\ntensors:\n  x: {buffer: sbuf, shape: [2, 2], dtype: float32, data: [[1, 2], "
     "[3]]}\ninstructions: []\n", "E016"),
    ("version: 1\ntensors:\n  1x: {buffer: sbuf, shape: [2, 2], dtype: float32}\n"
     "instructions: []\n", "E018"),
    ("version: 1\ntensors:\n  x: {buffer: sbuf, shape: [2, 2], dtype: float32, file: [a]}\n"
     "instructions: []\n", "E006"),
]


@pytest.mark.parametrize("text, code", BAD_INPUTS)
def test_errors_are_never_tracebacks(tmp_path, text, code):
    """An error is a message a person can act on (where, what), never a Python traceback:
    check, cost and run all exit 1 naming the program and the code; run writes nothing."""
    path = write_yaml(tmp_path, text)
    status, doc = check_json(path)
    assert status == 1 and doc["diagnostics"][0]["code"] == code, doc
    for args in (["check", path], ["cost", path], ["run", path, "--out", tmp_path / "o"]):
        r = invoke(*args)
        assert_no_traceback(r, 1)
        assert path in r.stderr + r.output and code in r.stderr + r.output, (args, r.output)
    assert not (tmp_path / "o").exists()


def test_a_program_of_only_a_version_is_valid_and_empty(tmp_path):
    """`version: 1` alone: no tensors, no instructions. Every command succeeds; run makes
    its --out folder and writes nothing into it."""
    path = write_yaml(tmp_path, "version: 1\n")
    assert check_json(path)[0] == 0 and check_json(path)[1]["diagnostics"] == []
    for args in (["check", path], ["cost", path], ["run", path, "--out", tmp_path / "o"]):
        assert_no_traceback(invoke(*args), 0)
    assert (tmp_path / "o").is_dir() and list((tmp_path / "o").iterdir()) == []


def test_error_message_says_where_and_what_is_allowed(tmp_path):
    path = base(tmp_path, "- range_select: {dst: y, on_true_tile: x, comp_op0: np.not_equal, "
                          "comp_op1: less, bound0: c, bound1: c}",
                "c: {buffer: sbuf, shape: [4, 1], dtype: float32, fill: 0}\n")
    r = invoke("check", path)
    text = r.output + r.stderr
    line = line_of(path, "np.not_equal")
    col = pathlib.Path(path).read_text().splitlines()[line - 1].index("comp_op0") + 1
    assert f"{path}:{line}:{col}" in text  # the offending keyword
    assert "greater_equal" in text  # what is allowed
