"""Acceptance tests for the interface contract (../shared/docs/program-format.md), sentence by
sentence, and for the rules and NumPy equivalents of the five seed pages.

Written as a user or a script would use nkirun: YAML programs in tmp_path, the `nkirun`
console script (subprocess) for a few end-to-end cases and click's CliRunner for the rest.
Each test names the contract sentence or seed-page rule it exercises.
"""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import textwrap

import ml_dtypes
import numpy as np
import pytest
from click.testing import CliRunner

import reference as ref
from prog_helpers import assert_bits_equal
from nkirun.cli import cli

FP32_MIN = np.float32(np.finfo(np.float32).min)
FP32_MAX = np.float32(np.finfo(np.float32).max)
NP = {"float32": np.float32, "bfloat16": ml_dtypes.bfloat16, "float16": np.float16,
      "float8_e4m3": ml_dtypes.float8_e4m3, "float8_e5m2": ml_dtypes.float8_e5m2,
      "int8": np.int8, "uint8": np.uint8, "int16": np.int16, "uint16": np.uint16,
      "int32": np.int32, "uint32": np.uint32, "tfloat32": np.float32}
NKIRUN = "nkirun"

# The contract's whole-program example, verbatim.
CONTRACT_EXAMPLE = """\
version: 1                 # required; the format version
name: rowmax_in_window     # optional
target: trn2               # optional: trn1 | trn2 | inf2 (default trn2); sets memory sizes and clocks
tensors:                   # every named buffer; one namespace
  x:     {buffer: hbm,  shape: [128, 512], dtype: float32, file: x.npy}
  lo:    {buffer: hbm,  shape: [128, 1],   dtype: float32, file: lo.npy}
  hi:    {buffer: hbm,  shape: [128, 1],   dtype: float32, file: hi.npy}
  y:     {buffer: hbm,  shape: [128, 512], dtype: float32, output: true}
  ymax:  {buffer: hbm,  shape: [128, 1],   dtype: float32, output: true}
  t:     {buffer: sbuf, shape: [128, 512], dtype: float32}
  b0:    {buffer: sbuf, shape: [128, 1],   dtype: float32}
  b1:    {buffer: sbuf, shape: [128, 1],   dtype: float32}
  r:     {buffer: sbuf, shape: [128, 512], dtype: float32}
  m:     {buffer: sbuf, shape: [128, 1],   dtype: float32}
instructions:
  - load: {dst: t,  src: x}
  - load: {dst: b0, src: lo}
  - load: {dst: b1, src: hi}
  - range_select:
      dst: r
      on_true_tile: t
      comp_op0: greater_equal
      comp_op1: less
      bound0: b0
      bound1: b1
      reduce_cmd: reset_reduce
      reduce_res: m
      reduce_op: max
      range_start: 0
      on_false_value: fp32.min
  - store: {dst: y,    src: r}
  - store: {dst: ymax, src: m}
"""


# ---- helpers ---------------------------------------------------------------------------------
def write(folder: pathlib.Path, text: str, name: str = "prog.yaml", **arrays) -> str:
    """Write program `text` (dedented) and arrays as <name>.npy into `folder`; return the path."""
    folder.mkdir(parents=True, exist_ok=True)
    for k, a in arrays.items():
        np.save(folder / f"{k}.npy", a)
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def invoke(*args, cwd: pathlib.Path | None = None):
    """Run the CLI in-process (optionally from another working directory)."""
    old = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        return CliRunner().invoke(cli, [str(a) for a in args])
    finally:
        os.chdir(old)


def run_ok(path: str, out: pathlib.Path, *extra) -> dict[str, np.ndarray]:
    r = invoke("run", path, "--out", out, *extra)
    assert r.exit_code == 0, r.output + r.stderr
    return {p.stem: np.load(p) for p in out.glob("*.npy")}


def as_type(a: np.ndarray, dtype: str) -> np.ndarray:
    """A loaded .npy as `dtype` (ml_dtypes types come back from np.load as raw |V2/|V1/<f1)."""
    t = np.dtype(NP[dtype])
    return a if a.dtype == t else a.view(t)


def check_json(path: str, *extra) -> tuple[int, dict]:
    r = invoke("check", path, "--format", "json", *extra)
    return r.exit_code, json.loads(r.stdout)


def errors_of(path: str) -> list[dict]:
    code, doc = check_json(path)
    errs = [d for d in doc["diagnostics"] if d["severity"] == "error"]
    assert (code == 1) == bool(errs), (code, doc)
    return errs


def line_of(path: str, needle: str, occurrence: int = 0) -> int:
    """1-based line number of the `occurrence`-th line containing `needle`."""
    hits = [i + 1 for i, ln in enumerate(pathlib.Path(path).read_text().splitlines())
            if needle in ln]
    return hits[occurrence]


def assert_error(path: str, code: str, needle: str | None = None, instruction="any",
                 occurrence: int = 0) -> dict:
    """`check` reports error `code`, located on the line containing `needle`."""
    errs = errors_of(path)
    hits = [d for d in errs if d["code"] == code]
    assert hits, f"expected {code}, got {[(d['code'], d['message']) for d in errs]}"
    d = hits[0]
    assert d["message"] and isinstance(d["column"], int) and d["column"] >= 1
    if needle is not None:
        assert d["line"] == line_of(path, needle, occurrence), (d, needle)
        col = pathlib.Path(path).read_text().splitlines()[d["line"] - 1].find(needle) + 1
        assert d["column"] >= 1 and col >= 1
    if instruction != "any":
        assert d["instruction"] == instruction, d
    return d


def no_traceback(r) -> None:
    assert "Traceback" not in r.output and "Traceback" not in (r.stderr or "")
    assert r.exit_code in (0, 1, 2), (r.exit_code, r.output, r.stderr)


SEL = """\
version: 1
tensors:
  t:  {buffer: sbuf, shape: [@P@, @N@], dtype: @DT@, file: t.npy}
  b0: {buffer: sbuf, shape: [@P@, 1], dtype: float32, file: b0.npy}
  b1: {buffer: sbuf, shape: [@P@, 1], dtype: float32, file: b1.npy}
  r:  {buffer: sbuf, shape: [@P@, @N@], dtype: @ODT@, output: true}
  m:  {buffer: sbuf, shape: [@P@, 1], dtype: float32, output: true}
instructions:
  - range_select: {dst: r, on_true_tile: t, comp_op0: @OP0@, comp_op1: @OP1@, bound0: b0,
                   bound1: b1, reduce_cmd: reset_reduce, reduce_res: m, reduce_op: @ROP@,
                   range_start: @RS@, on_false_value: fp32.min}
"""


def range_select_prog(folder, x, lo, hi, *, odt=None, op0="greater_equal", op1="less",
                      rop="max", rs=0, dt="float32"):
    text = SEL
    for k, v in {"P": x.shape[0], "N": x.shape[1], "ODT": odt or dt, "DT": dt, "OP0": op0,
                 "OP1": op1, "ROP": rop, "RS": rs}.items():
        text = text.replace(f"@{k}@", str(v))
    return write(folder, text, t=x, b0=lo, b1=hi)


def page000_numpy(on_true_tile, comp_op0, comp_op1, bound0, bound1, range_start,
                  on_false_value=FP32_MIN):
    """Seed page 000's NumPy equivalent, literally (float32 throughout)."""
    indices = np.zeros(on_true_tile.shape)
    indices[:] = range_start + np.arange(on_true_tile[0].size)
    mask = comp_op0(indices, bound0) & comp_op1(indices, bound1)
    select_out_tile = np.where(mask, on_true_tile, on_false_value)
    reduce_tile = np.max(select_out_tile, axis=1, keepdims=True)
    return select_out_tile.astype(np.float32), reduce_tile.astype(np.float32)


# ==== A whole program =========================================================================
def _example_data(folder: pathlib.Path):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((128, 512)).astype(np.float32)
    x[3, 7] = np.nan
    x[5, :] = -np.inf
    lo = rng.integers(-4, 520, (128, 1)).astype(np.float32)
    hi = (lo + rng.integers(-2, 300, (128, 1))).astype(np.float32)
    hi[::9] = lo[::9]  # empty windows: a full row of fp32.min, whose max is fp32.min
    folder.mkdir(parents=True, exist_ok=True)
    for k, a in {"x": x, "lo": lo, "hi": hi}.items():
        np.save(folder / f"{k}.npy", a)
    return x, lo, hi


def test_example_program_verbatim_end_to_end(tmp_path):
    """The contract's example program works verbatim with the installed `nkirun` command,
    run from another working directory (file: paths are relative to the program's folder)."""
    prog_dir, elsewhere = tmp_path / "prog", tmp_path / "elsewhere"
    x, lo, hi = _example_data(prog_dir)
    (prog_dir / "rowmax.yaml").write_text(CONTRACT_EXAMPLE)
    elsewhere.mkdir()
    path = str(prog_dir / "rowmax.yaml")
    r = subprocess.run([NKIRUN, "run", path, "--out", "res"], cwd=elsewhere,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    y, ymax = np.load(elsewhere / "res" / "y.npy"), np.load(elsewhere / "res" / "ymax.npy")
    want_y, want_m = page000_numpy(x, np.greater_equal, np.less, lo, hi, 0)
    assert_bits_equal(y, want_y)
    assert_bits_equal(ymax, want_m)
    assert (ymax[::9] == FP32_MIN).all()
    for cmd in (["check", path], ["cost", path]):
        r = subprocess.run([NKIRUN, *cmd], cwd=elsewhere, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr


def test_example_program_default_out_dir_is_readme_documented(tmp_path):
    """`--out` omitted: outputs go to out/<program name> (README) under the working dir."""
    x, lo, hi = _example_data(tmp_path / "p")
    (tmp_path / "p" / "rowmax_in_window.yaml").write_text(CONTRACT_EXAMPLE)
    readme = (pathlib.Path(__file__).parents[1] / "README.md").read_text()
    assert "out/<program name>" in readme
    r = invoke("run", tmp_path / "p" / "rowmax_in_window.yaml", cwd=tmp_path)
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in (tmp_path / "out" / "rowmax_in_window").iterdir()) == [
        "y.npy", "ymax.npy"]


def test_version_is_required_and_only_1(tmp_path):
    body = CONTRACT_EXAMPLE.split("\n", 1)[1]
    assert_error(write(tmp_path / "a", body), "E004")
    assert_error(write(tmp_path / "b", "version: 2\n" + body), "E004", "version: 2")
    _example_data(tmp_path / "c")
    assert errors_of(write(tmp_path / "c", CONTRACT_EXAMPLE.replace("name: rowmax_in_window",
                                                                   "#"))) == []


# ---- target -------------------------------------------------------------------------------
def _cost_json(path, *extra):
    r = invoke("cost", path, "--format", "json", *extra)
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_target_defaults_to_trn2(tmp_path):
    _example_data(tmp_path)
    path = write(tmp_path, CONTRACT_EXAMPLE.replace("target: trn2", "# no target"))
    assert _cost_json(path)["target"] == "trn2"


@pytest.mark.parametrize("target", ["trn1", "trn2", "inf2"])
def test_each_target_checks_runs_and_costs(tmp_path, target):
    x, lo, hi = _example_data(tmp_path)
    path = write(tmp_path, CONTRACT_EXAMPLE.replace("target: trn2", f"target: {target}"))
    assert errors_of(path) == []
    assert _cost_json(path)["target"] == target
    y = run_ok(path, tmp_path / "o")["y"]
    assert_bits_equal(y, page000_numpy(x, np.greater_equal, np.less, lo, hi, 0)[0])


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
        path = write(tmp_path / tgt, text.replace("TGT", tgt))
        errs = errors_of(path)
        assert (errs == []) == ok, (tgt, errs)
        if not ok:
            assert errs[0]["code"] == "E041"


def test_target_sets_clocks(tmp_path):
    _example_data(tmp_path)
    clocks = {}
    for tgt in ("trn1", "trn2"):
        path = write(tmp_path, CONTRACT_EXAMPLE.replace("target: trn2", f"target: {tgt}"))
        clocks[tgt] = _cost_json(path)["engines"]["vector"]["clock_ghz"]
    assert clocks["trn1"] != clocks["trn2"]


def test_unknown_target_is_located_error(tmp_path):
    _example_data(tmp_path)
    path = write(tmp_path, CONTRACT_EXAMPLE.replace("target: trn2", "target: trn9"))
    assert_error(path, "E007", "target: trn9", instruction=None)


# ==== Tensors ===================================================================================
ONE = """\
version: 1
tensors:
  {decl}
  y: {{buffer: hbm, shape: {shape}, dtype: {odt}, output: true}}
instructions:
  - {copy}: {{dst: y, src: t}}
"""


def one(folder, decl: str, shape="[4, 3]", odt="float32", **arrays) -> str:
    """A program copying tensor `t` (declared by `decl`) to the HBM output `y`."""
    copy = "dma_copy" if "hbm" in decl else "store"
    return write(folder, ONE.format(decl=decl, shape=shape, odt=odt, copy=copy), **arrays)


@pytest.mark.parametrize("decl, code", [
    ("t: {shape: [4, 3], dtype: float32, fill: 0}", "E005"),  # buffer required
    ("t: {buffer: dram, shape: [4, 3], dtype: float32, fill: 0}", "E011"),
    ("t: {buffer: sbuf, dtype: float32, fill: 0}", "E005"),  # shape required
    ("t: {buffer: sbuf, shape: [4, 0], dtype: float32, fill: 0}", "E012"),
    ("t: {buffer: sbuf, shape: [4, -3], dtype: float32, fill: 0}", "E012"),
    ("t: {buffer: sbuf, shape: [], dtype: float32, fill: 0}", "E012"),
    ("t: {buffer: sbuf, shape: [4, 2.5], dtype: float32, fill: 0}", "E012"),
    ("t: {buffer: sbuf, shape: 12, dtype: float32, fill: 0}", "E012"),
    ("t: {buffer: sbuf, shape: [4, 3], fill: 0}", "E005"),  # dtype required
    ("t: {buffer: sbuf, shape: [4, 3], dtype: float64, fill: 0}", "E013"),
    ("t: {buffer: sbuf, shape: [4, 3], dtype: float32, fill: 0, colour: red}", "E010"),
])
def test_tensor_key_rules(tmp_path, decl, code):
    """buffer/shape/dtype are required; shape is a list of positive ints; known keys only."""
    assert_error(one(tmp_path, decl), code, "t: {", instruction=None)


@pytest.mark.parametrize("buffer", ["sbuf", "psum"])
def test_partition_dimension_at_most_128(tmp_path, buffer):
    path = one(tmp_path, f"t: {{buffer: {buffer}, shape: [129, 3], dtype: float32, fill: 0}}",
               shape="[129, 3]")
    assert_error(path, "E017", "t: {")
    ok = one(tmp_path / "ok", f"t: {{buffer: {buffer}, shape: [128, 3], dtype: float32, "
             "fill: 1}", shape="[128, 3]")
    assert errors_of(ok) == []


@pytest.mark.parametrize("buffer", ["nl.sbuf", "nl.psum", "nl.hbm", "shared_hbm",
                                    "nl.shared_hbm"])
def test_buffers_by_their_nl_names(tmp_path, buffer):
    """buffers are nl.sbuf / nl.psum / nl.hbm (the seeds also write nl.shared_hbm)."""
    path = one(tmp_path, f"t: {{buffer: {buffer}, shape: [4, 3], dtype: float32, fill: 4}}")
    assert (run_ok(path, tmp_path / "o")["y"] == 4).all()


def test_hbm_first_dimension_is_not_limited(tmp_path):
    text = """\
    version: 1
    tensors:
      x: {buffer: hbm, shape: [300, 4], dtype: float32, fill: 2}
      t: {buffer: sbuf, shape: [100, 4], dtype: float32}
      y: {buffer: hbm, shape: [100, 4], dtype: float32, output: true}
    instructions:
      - load: {dst: t, src: "x[200:300, :]"}
      - store: {dst: y, src: t}
    """
    assert (run_ok(write(tmp_path, text), tmp_path / "o")["y"] == 2).all()


def test_free_dimensions_of_on_chip_tensors(tmp_path):
    """For sbuf/psum the first dimension is the partition dim; the rest are free dims."""
    x = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    text = """\
    version: 1
    tensors:
      x: {buffer: hbm, shape: [2, 3, 4, 5], dtype: float32, file: x.npy}
      t: {buffer: sbuf, shape: [2, 3, 4, 5], dtype: float32}
      m: {buffer: sbuf, shape: [2, 8], dtype: float32, output: true}
    instructions:
      - load: {dst: t, src: x}
      - max8: {dst: m, src: t}
    """
    got = run_ok(write(tmp_path, text, x=x), tmp_path / "o")["m"]
    assert_bits_equal(got, np.sort(x.reshape(2, -1), axis=1)[:, ::-1][:, :8])


DTYPE_FORMS = [
    ("float32", "float32"), ("bfloat16", "bfloat16"), ("float16", "float16"),
    ("tfloat32", "tfloat32"), ("float8_e4m3", "float8_e4m3"), ("float8_e5m2", "float8_e5m2"),
    ("int8", "int8"), ("uint8", "uint8"), ("int16", "int16"), ("uint16", "uint16"),
    ("int32", "int32"), ("uint32", "uint32"),
    ("fp32", "float32"), ("bf16", "bfloat16"), ("fp16", "float16"), ("tf32", "tfloat32"),
    ("fp8_e4m3", "float8_e4m3"), ("fp8_e5m2", "float8_e5m2"),
    ("nl.float32", "float32"), ("nl.bfloat16", "bfloat16"), ("np.float16", "float16"),
]


@pytest.mark.parametrize("spelling, name", DTYPE_FORMS)
def test_every_dtype_name_and_short_form(tmp_path, spelling, name):
    """Every NKI dtype name and the `nl` short forms; the value is stored in that dtype."""
    path = one(tmp_path, f"t: {{buffer: sbuf, shape: [4, 3], dtype: {spelling}, fill: 3}}",
               odt=spelling)
    y = run_ok(path, tmp_path / "o")["y"]
    y = as_type(y, name)
    assert y.dtype == np.dtype(NP[name]) and y.shape == (4, 3)
    assert (y.astype(np.float32) == 3).all()


# ---- file -----------------------------------------------------------------------------------
@pytest.mark.parametrize("buffer", ["hbm", "sbuf", "psum"])
def test_file_any_buffer_kind_relative_to_program_folder(tmp_path, buffer):
    """`file` is relative to the program file's folder (not the cwd), for every buffer kind."""
    x = np.random.default_rng(1).standard_normal((5, 7)).astype(np.float32)
    prog = tmp_path / "deep" / "prog"
    (prog / "data").mkdir(parents=True)
    np.save(prog / "data" / "x.npy", x)
    text = f"""\
    version: 1
    tensors:
      x: {{buffer: {buffer}, shape: [5, 7], dtype: float32, file: data/x.npy}}
      t: {{buffer: sbuf, shape: [5, 7], dtype: float32}}
      y: {{buffer: hbm, shape: [5, 7], dtype: float32, output: true}}
    instructions:
      - {"load" if buffer == "hbm" else "tensor_copy"}: {{dst: t, src: x}}
      - store: {{dst: y, src: t}}
    """
    path = write(prog, text)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    r = invoke("run", os.path.relpath(path, cwd), "--out", "o", cwd=cwd)
    assert r.exit_code == 0, r.output
    assert_bits_equal(np.load(cwd / "o" / "y.npy"), x)
    np.save(cwd / "x.npy", x)  # a same-named file in the cwd must not be picked instead
    (prog / "data" / "x.npy").unlink()
    r = invoke("run", os.path.relpath(path, cwd), "--out", "o2", cwd=cwd)
    assert r.exit_code == 1 and "E070" in r.stderr
    assert not (cwd / "o2").exists()


@pytest.mark.parametrize("dtype", ["bfloat16", "float8_e4m3", "float8_e5m2", "float16"])
def test_low_precision_npy_files_are_ml_dtypes(tmp_path, dtype):
    """bfloat16/float8 .npy files hold the ml_dtypes types of the same name: np.save of such
    an array writes |V2 / |V1 / <f1 headers, and all of them load for the declared type."""
    vals = np.array([[0.5, -1.75, 3.0, np.inf], [-np.inf, np.nan, -0.0, 2.0 ** -6]], np.float32)
    x = vals.astype(NP[dtype])
    path = one(tmp_path, f"t: {{buffer: hbm, shape: [2, 4], dtype: {dtype}, file: t.npy}}",
               shape="[2, 4]", odt=dtype, t=x)
    r = invoke("run", path, "--out", tmp_path / "o")
    assert r.exit_code == 0, r.output + r.stderr
    y = np.load(tmp_path / "o" / "y.npy")
    assert y.dtype.itemsize == x.dtype.itemsize
    assert_bits_equal(as_type(y, dtype), x)  # the written file holds the same type, bit-exact


def test_file_absolute_path(tmp_path):
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.save(tmp_path / "abs.npy", x)
    path = one(tmp_path / "p", f"t: {{buffer: hbm, shape: [4, 3], dtype: float32, "
               f"file: '{tmp_path / 'abs.npy'}'}}")
    assert_bits_equal(run_ok(path, tmp_path / "o")["y"], x)


def test_npy_dtype_or_shape_mismatch_is_an_error(tmp_path):
    x = np.zeros((2, 4), np.float32)
    path = one(tmp_path, "t: {buffer: hbm, shape: [2, 4], dtype: bfloat16, file: t.npy}",
               shape="[2, 4]", odt="bfloat16", t=x)
    r = invoke("run", path, "--out", tmp_path / "o")
    assert r.exit_code == 1 and "E073" in r.stderr and "Traceback" not in r.stderr
    path = one(tmp_path / "s", "t: {buffer: hbm, shape: [4, 2], dtype: float32, file: t.npy}",
               shape="[4, 2]", t=x)
    r = invoke("run", path, "--out", tmp_path / "o")
    assert r.exit_code == 1 and "E074" in r.stderr
    assert not (tmp_path / "o").exists()


def test_float8_e4m3_has_infinities(tmp_path):
    """NKI's float8_e4m3 is ml_dtypes.float8_e4m3 (with infinities): FP32_MIN -> -inf."""
    path = one(tmp_path, "t: {buffer: sbuf, shape: [2, 3], dtype: float32, fill: fp32.min}",
               shape="[2, 3]", odt="float8_e4m3")
    y = as_type(run_ok(path, tmp_path / "o")["y"], "float8_e4m3")
    assert y.dtype == np.dtype(ml_dtypes.float8_e4m3)
    assert np.isneginf(y.astype(np.float32)).all()


@pytest.mark.parametrize("odt", ["float8_e4m3", "float8_e5m2", "bfloat16", "float16"])
@pytest.mark.parametrize("via", ["dst", "dtype"])
def test_range_select_fill_becomes_minus_inf_in_low_precision(tmp_path, odt, via):
    """Seed 000's note: FP32_MIN downcast to FP16/BF16/FP8 becomes -INF, while a float32
    reduce_res keeps FP32_MIN for a fully unselected row."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 6)).astype(np.float32)
    lo = np.array([[1], [4], [0]], np.float32)
    hi = np.array([[3], [4], [6]], np.float32)  # row 1 selects nothing
    path = range_select_prog(tmp_path, x, lo, hi, odt=odt if via == "dst" else "float32")
    if via == "dtype":
        text = pathlib.Path(path).read_text().replace("range_start: 0,",
                                                      f"range_start: 0, dtype: {odt},")
        pathlib.Path(path).write_text(text)
    got = run_ok(path, tmp_path / "o")
    r = as_type(got["r"], odt) if via == "dst" else got["r"]
    want, rowmax = page000_numpy(x, np.greater_equal, np.less, lo, hi, 0)
    assert np.isneginf(r[1].astype(np.float32)).all()
    with np.errstate(over="ignore"):
        want_low = want.astype(NP[odt]).astype(np.float32)
    assert_bits_equal(r.astype(np.float32), want_low)
    assert got["m"][1, 0] == FP32_MIN
    assert_bits_equal(got["m"], rowmax)


# ---- fill / data / output ------------------------------------------------------------------------
@pytest.mark.parametrize("value, want", [
    ("2.5", 2.5), ("-7", -7.0), ("1e3", 1000.0), ("inf", np.inf), ("-inf", -np.inf),
    ("nan", np.nan), ("fp32.min", FP32_MIN), ("fp32.max", FP32_MAX)])
def test_fill_one_scalar_everywhere(tmp_path, value, want):
    path = one(tmp_path, f"t: {{buffer: sbuf, shape: [4, 3], dtype: float32, fill: {value}}}")
    y = run_ok(path, tmp_path / "o")["y"]
    assert_bits_equal(y, np.full((4, 3), want, np.float32))


def test_fill_is_cast_to_the_dtype(tmp_path):
    path = one(tmp_path, "t: {buffer: sbuf, shape: [2, 2], dtype: int8, fill: 300}",
               shape="[2, 2]", odt="int8")
    assert (run_ok(path, tmp_path / "o")["y"] == 127).all()
    path = one(tmp_path / "b", "t: {buffer: hbm, shape: [2, 2], dtype: bf16, fill: 1.00390625}",
               shape="[2, 2]", odt="bf16")
    y = as_type(run_ok(path, tmp_path / "ob")["y"], "bfloat16")
    assert (y.astype(np.float32) == np.float32(1.0)).all()  # RNE to 8 mantissa bits


def test_fill_not_a_number_is_error(tmp_path):
    assert_error(one(tmp_path, "t: {buffer: sbuf, shape: [4, 3], dtype: float32, fill: lots}"),
                 "E019", "fill: lots")


def test_data_inline_nested_list(tmp_path):
    path = one(tmp_path, "t: {buffer: sbuf, shape: [2, 3], dtype: float32, "
               "data: [[1, 2.5, -3], [inf, -inf, fp32.min]]}", shape="[2, 3]")
    y = run_ok(path, tmp_path / "o")["y"]
    assert_bits_equal(y, np.array([[1, 2.5, -3], [np.inf, -np.inf, FP32_MIN]], np.float32))


def test_data_three_dims_and_low_precision(tmp_path):
    path = one(tmp_path, "t: {buffer: hbm, shape: [2, 1, 2], dtype: bfloat16, "
               "data: [[[1, 3.14159]], [[-2, 1e39]]]}", shape="[2, 1, 2]", odt="bfloat16")
    y = as_type(run_ok(path, tmp_path / "o")["y"], "bfloat16")
    with np.errstate(over="ignore"):
        want = np.array([[[1, 3.14159]], [[-2, 1e39]]]).astype(np.float32).astype(
            ml_dtypes.bfloat16)
    assert_bits_equal(y, want)


@pytest.mark.parametrize("data", ["[[1, 2, 3]]", "[[1, 2], [3, 4]]", "[[1, 2, 3], [4, 5]]",
                                  "[[1, 2, x], [4, 5, 6]]", "7"])
def test_data_of_wrong_shape_is_error(tmp_path, data):
    path = one(tmp_path, f"t: {{buffer: sbuf, shape: [2, 3], dtype: float32, data: {data}}}",
               shape="[2, 3]")
    assert_error(path, "E016", "data:")


def test_output_true_writes_outdir_name_npy_only_outputs(tmp_path):
    text = """\
    version: 1
    tensors:
      a: {buffer: sbuf, shape: [2, 2], dtype: float32, fill: 1, output: true}
      b: {buffer: sbuf, shape: [2, 2], dtype: float32, fill: 2, output: false}
      c: {buffer: psum, shape: [2, 2], dtype: float32}
      d: {buffer: hbm, shape: [2, 2], dtype: float32, output: true}
    instructions:
      - tensor_copy: {dst: c, src: b}
      - store: {dst: d, src: c}
    """
    got = run_ok(write(tmp_path, text), tmp_path / "o")
    assert sorted(got) == ["a", "d"]
    assert (got["a"] == 1).all() and (got["d"] == 2).all()


def test_output_must_be_boolean(tmp_path):
    path = one(tmp_path, "t: {buffer: sbuf, shape: [4, 3], dtype: float32, fill: 0, "
               "output: maybe}")
    assert_error(path, "E006", "output: maybe")


@pytest.mark.parametrize("keys", ["file: t.npy, fill: 1", "fill: 1, data: [[1]]",
                                  "file: t.npy, data: [[1]]",
                                  "file: t.npy, fill: 1, data: [[1]]"])
def test_at_most_one_of_file_fill_data(tmp_path, keys):
    path = one(tmp_path, f"t: {{buffer: sbuf, shape: [1, 1], dtype: float32, {keys}}}",
               shape="[1, 1]", t=np.ones((1, 1), np.float32))
    assert_error(path, "E015", "t: {")


def test_tensor_without_initial_contents_read_before_write(tmp_path):
    """A tensor with none of file/fill/data starts undefined: reading it first is an error."""
    path = one(tmp_path, "t: {buffer: sbuf, shape: [4, 3], dtype: float32}")
    d = assert_error(path, "E050", "- store", instruction=0)
    assert "`t`" in d["message"]
    r = invoke("run", path, "--out", tmp_path / "o")
    assert r.exit_code == 1 and not (tmp_path / "o").exists()


def test_partially_written_tensor_read_is_runtime_error(tmp_path):
    """Written only in part: reading the unwritten elements fails at run time (nothing
    written), while reading just the written part is fine."""
    text = """\
    version: 1
    tensors:
      t: {buffer: sbuf, shape: [4, 8], dtype: float32}
      y: {buffer: hbm, shape: [4, 8], dtype: float32, output: true}
      z: {buffer: hbm, shape: [4, 4], dtype: float32, output: true}
    instructions:
      - memset: {dst: "t[:, 0:4]", value: 1.0}
      - store: {dst: z, src: "t[:, 0:4]"}
      - store: {dst: y, src: t}
    """
    path = write(tmp_path, text)
    r = invoke("run", path, "--out", tmp_path / "o")
    assert r.exit_code == 1 and "E090" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "o").exists()
    ok = write(tmp_path / "ok", text.replace("      - store: {dst: y, src: t}\n", "").replace(
        "      y: {buffer: hbm, shape: [4, 8], dtype: float32, output: true}\n", ""))
    assert (run_ok(ok, tmp_path / "o2")["z"] == 1).all()


# ==== Instructions =================================================================================
BASE = """\
version: 1
tensors:
  x: {buffer: sbuf, shape: [4, 8], dtype: float32, file: x.npy}
  y: {buffer: sbuf, shape: [4, 8], dtype: float32, output: true}
instructions:
"""
X48 = np.arange(32, dtype=np.float32).reshape(4, 8) - 10.5


def base(folder, instructions: str, extra_tensors: str = "", **arrays) -> str:
    text = BASE.replace("instructions:\n", textwrap.indent(textwrap.dedent(extra_tensors), "  ")
                        + "instructions:\n") + textwrap.indent(textwrap.dedent(instructions),
                                                               "  ")
    arrays.setdefault("x", X48)
    return write(folder, text, **arrays)


@pytest.mark.parametrize("entry", [
    "- {tensor_copy: {dst: y, src: x}, memset: {dst: y, value: 0}}",  # two keys
    "- {}",  # no key
    "- tensor_copy",  # not a mapping
    "- [tensor_copy, {dst: y, src: x}]",
])
def test_instruction_entry_is_a_one_key_mapping(tmp_path, entry):
    assert_error(base(tmp_path, entry), "E020", entry.split(":")[0][:8], instruction=0)


@pytest.mark.parametrize("name", ["tensor_copy", "nisa.tensor_copy", "nki.isa.tensor_copy"])
def test_instruction_names_are_nki_isa_names(tmp_path, name):
    path = base(tmp_path, f"- {name}: {{dst: y, src: x}}")
    assert_bits_equal(run_ok(path, tmp_path / "o")["y"], X48)


@pytest.mark.parametrize("load, store", [("load", "store"), ("nl.load", "nl.store")])
def test_load_store_are_nl_load_store(tmp_path, load, store):
    text = f"""\
    version: 1
    tensors:
      x: {{buffer: hbm, shape: [4, 8], dtype: float32, file: x.npy}}
      t: {{buffer: sbuf, shape: [4, 8], dtype: float32}}
      y: {{buffer: hbm, shape: [4, 8], dtype: float32, output: true}}
    instructions:
      - {load}: {{dst: t, src: x}}
      - {store}: {{dst: y, src: t}}
    """
    assert_bits_equal(run_ok(write(tmp_path, text, x=X48), tmp_path / "o")["y"], X48)


def test_unknown_instruction_and_keyword_are_located(tmp_path):
    path = base(tmp_path, "- tensor_copi: {dst: y, src: x}")
    d = assert_error(path, "E021", "tensor_copi", instruction=0)
    assert "tensor_copy" in d["message"] + (d.get("hint") or "")
    path = base(tmp_path / "k", "- tensor_copy: {dst: y, source: x}")
    assert_error(path, "E022", "source", instruction=0)
    path = base(tmp_path / "m", "- tensor_copy: {dst: y}")
    assert_error(path, "E023", "tensor_copy", instruction=0)


def test_activation_as_written_in_the_contract(tmp_path):
    """nisa.activation(dst=t, op=exp, data=x) -> - activation: {dst: t, op: exp, data: x}."""
    x = np.linspace(-3, 3, 32, dtype=np.float32).reshape(4, 8)
    path = base(tmp_path, "- activation: {dst: y, op: exp, data: x}", x=x)
    y = run_ok(path, tmp_path / "o")["y"]
    np.testing.assert_allclose(y, np.exp(x), rtol=1e-6)


@pytest.mark.parametrize("op, fn", [("exp", np.exp), ("np.exp", np.exp), ("nl.exp", np.exp),
                                    ("tanh", np.tanh), ("square", np.square),
                                    ("copy", lambda v: v), ("nl.copy", lambda v: v)])
def test_activation_functions_by_name(tmp_path, op, fn):
    x = np.linspace(-3, 3, 32, dtype=np.float32).reshape(4, 8)
    y = run_ok(base(tmp_path, f"- activation: {{dst: y, op: {op}, data: x}}", x=x),
               tmp_path / "o")["y"]
    np.testing.assert_allclose(y, fn(x), rtol=1e-6, atol=1e-7)


def test_unknown_activation_function_is_located(tmp_path):
    path = base(tmp_path, "- activation: {dst: y, op: expp, data: x}")
    assert_error(path, "E025", "expp", instruction=0)


def test_tensor_tensor_and_tensor_reduce_op_is_just_op(tmp_path):
    path = base(tmp_path, """\
    - tensor_tensor: {dst: y, data1: x, data2: x, op: np.add}
    - tensor_reduce: {dst: s, op: nl.maximum, data: x, axis: 1}
    """, "s: {buffer: sbuf, shape: [4, 1], dtype: float32, output: true}\n")
    got = run_ok(path, tmp_path / "o")
    assert_bits_equal(got["y"], X48 + X48)
    assert_bits_equal(got["s"], X48.max(axis=1, keepdims=True))


def test_every_instruction_writes_through_dst(tmp_path):
    """Also those that return a tile in NKI: range_select, tensor_tensor_scan, max8;
    nc_match_replace8 also takes dst_idx, reductions take reduce_res."""
    rng = np.random.default_rng(5)
    x = rng.permutation(32).astype(np.float32).reshape(4, 8)
    path = base(tmp_path, """\
    - max8: {dst: top, src: x}
    - nc_match_replace8: {dst: y, data: x, vals: top, imm: -1.0, dst_idx: idx}
    - tensor_tensor_scan: {dst: sc, data0: x, data1: x, initial: 0, op0: add, op1: add}
    - range_select: {dst: rs, on_true_tile: x, comp_op0: greater_equal, comp_op1: less,
                     bound0: lo, bound1: hi, reduce_cmd: reset_reduce, reduce_res: rm}
    """, """\
    top: {buffer: sbuf, shape: [4, 8], dtype: float32, output: true}
    idx: {buffer: sbuf, shape: [4, 8], dtype: uint32, output: true}
    sc: {buffer: sbuf, shape: [4, 8], dtype: float32, output: true}
    rs: {buffer: sbuf, shape: [4, 8], dtype: float32, output: true}
    rm: {buffer: sbuf, shape: [4, 1], dtype: float32, output: true}
    lo: {buffer: sbuf, shape: [4, 1], dtype: float32, fill: 2}
    hi: {buffer: sbuf, shape: [4, 1], dtype: float32, fill: 5}
    """, x=x)
    got = run_ok(path, tmp_path / "o")
    assert_bits_equal(got["top"], ref.max8(x))
    want, want_idx = ref.nc_match_replace8(x, ref.max8(x), -1.0)
    assert_bits_equal(got["y"], want)
    assert_bits_equal(got["idx"], want_idx.astype(np.uint32))
    assert_bits_equal(got["sc"], ref.tensor_tensor_scan(x, x, 0.0, np.add, np.add))
    rs, rm = page000_numpy(x, np.greater_equal, np.less, np.full((4, 1), 2, np.float32),
                           np.full((4, 1), 5, np.float32), 0)
    assert_bits_equal(got["rs"], rs)
    assert_bits_equal(got["rm"], rm)


@pytest.mark.parametrize("op", ["range_select", "max8", "tensor_tensor_scan",
                                "nc_match_replace8", "select_reduce", "affine_select"])
def test_missing_dst_is_an_error(tmp_path, op):
    args = {"range_select": "on_true_tile: x, comp_op0: less, comp_op1: less, bound0: c, "
                            "bound1: c",
            "max8": "src: x", "tensor_tensor_scan": "data0: x, data1: x, initial: 0, op0: add, "
                                                    "op1: add",
            "nc_match_replace8": "data: x, vals: x, imm: 0",
            "select_reduce": "predicate: p, on_true: x, on_false: 0.0",
            "affine_select": "pattern: [[1, 8]], channel_multiplier: 0, on_true_tile: x, "
                             "on_false_value: 0.0"}[op]
    path = base(tmp_path, f"- {op}: {{{args}}}", """\
    c: {buffer: sbuf, shape: [4, 1], dtype: float32, fill: 1}
    p: {buffer: sbuf, shape: [4, 8], dtype: uint8, fill: 1}
    """)
    d = assert_error(path, "E023", f"- {op}", instruction=0)
    assert "dst" in d["message"]


def test_instructions_run_in_order(tmp_path):
    """run computes the in-order result, whatever the cost model overlaps."""
    path = base(tmp_path, """\
    - memset: {dst: y, value: 1.0}
    - tensor_copy: {dst: a, src: y}
    - memset: {dst: y, value: 2.0, engine: gpsimd}
    - tensor_tensor: {dst: y, data1: y, data2: a, op: subtract}
    - activation: {dst: b, op: copy, data: y}
    - tensor_copy: {dst: "y[:, 0:4]", src: "a[:, 4:8]"}
    """, """\
    a: {buffer: sbuf, shape: [4, 8], dtype: float32}
    b: {buffer: sbuf, shape: [4, 8], dtype: float32, output: true}
    """)
    got = run_ok(path, tmp_path / "o")
    assert (got["b"] == 1).all()
    assert (got["y"][:, :4] == 1).all() and (got["y"][:, 4:] == 1).all()
    path2 = base(tmp_path / "b", """\
    - memset: {dst: y, value: 5.0}
    - memset: {dst: "y[:, 2:3]", value: 7.0}
    - tensor_tensor: {dst: y, data1: y, data2: y, op: multiply}
    """)
    y = run_ok(path2, tmp_path / "o2")["y"]
    assert (y[:, 2] == 49).all() and (np.delete(y, 2, axis=1) == 25).all()


# ---- operand references -----------------------------------------------------------------------
def test_view_whole_and_slice(tmp_path):
    path = base(tmp_path, """\
    - memset: {dst: y, value: 0.0}
    - tensor_copy: {dst: "y[:, 0:5]", src: "x[:, 3:8]"}
    """)
    y = run_ok(path, tmp_path / "o")["y"]
    want = np.zeros((4, 8), np.float32)
    want[:, 0:5] = X48[:, 3:8]
    assert_bits_equal(y, want)


def test_integer_index_leaves_a_p_by_1_tile(tmp_path):
    """`c[:, 511]`: an on-chip view left with only its partition dim is a (P, 1) tile —
    the page 004 example, verbatim (two chained scans of (128, 1024))."""
    rng = np.random.default_rng(7)
    a = rng.uniform(0.5, 1.0, (128, 1024)).astype(np.float32)
    b = rng.standard_normal((128, 1024)).astype(np.float32)
    text = """\
    version: 1
    tensors:
      a: {buffer: sbuf, shape: [128, 1024], dtype: float32, file: a.npy}
      b: {buffer: sbuf, shape: [128, 1024], dtype: float32, file: b.npy}
      c: {buffer: sbuf, shape: [128, 1024], dtype: float32, output: true}
      last: {buffer: sbuf, shape: [128, 1], dtype: float32, output: true}
    instructions:
      - tensor_tensor_scan: {dst: "c[:, 0:512]", data0: "a[:, 0:512]", data1: "b[:, 0:512]",
                             initial: 0, op0: np.multiply, op1: np.add}
      - tensor_tensor_scan: {dst: "c[:, 512:1024]", data0: "a[:, 512:1024]",
                             data1: "b[:, 512:1024]", initial: "c[:, 511]",
                             op0: np.multiply, op1: np.add}
      - tensor_copy: {dst: last, src: "c[:, 1023]"}
    """
    got = run_ok(write(tmp_path, text, a=a, b=b), tmp_path / "o")
    want = ref.tensor_tensor_scan(a, b, 0.0, np.multiply, np.add)  # one scan over 1024
    assert_bits_equal(got["c"], want)
    assert_bits_equal(got["last"], want[:, 1023:1024])


def test_views_left_with_partition_dim_serve_as_per_partition_operands(tmp_path):
    """`lohi[:, 0]` and `w[:, 1, 2]` are (P, 1) tiles: usable as range_select's bounds, as
    select_reduce's on_false and as a reduce_res."""
    rng = np.random.default_rng(21)
    x = rng.standard_normal((6, 10)).astype(np.float32)
    lohi = np.stack([rng.integers(0, 5, 6), rng.integers(5, 11, 6)], 1).astype(np.float32)
    text = """\
    version: 1
    tensors:
      x: {buffer: sbuf, shape: [6, 10], dtype: float32, file: x.npy}
      lohi: {buffer: sbuf, shape: [6, 2], dtype: float32, file: lohi.npy}
      r: {buffer: sbuf, shape: [6, 10], dtype: float32, output: true}
      w: {buffer: sbuf, shape: [6, 3, 4], dtype: float32, fill: 0, output: true}
    instructions:
      - range_select: {dst: r, on_true_tile: x, comp_op0: greater_equal, comp_op1: less,
                       bound0: "lohi[:, 0]", bound1: "lohi[:, 1]", reduce_cmd: reset_reduce,
                       reduce_res: "w[:, 1, 2]", on_false_value: fp32.min}
    """
    got = run_ok(write(tmp_path, text, x=x, lohi=lohi), tmp_path / "o")
    want, rowmax = page000_numpy(x, np.greater_equal, np.less, lohi[:, 0:1], lohi[:, 1:2], 0)
    assert_bits_equal(got["r"], want)
    w = np.zeros((6, 3, 4), np.float32)
    w[:, 1, 2] = rowmax[:, 0]
    assert_bits_equal(got["w"], w)


def test_strided_3d_view(tmp_path):
    """`d[0:64, :, 2:8:2]` selects partitions 0..63, all of dim 1, and 2, 4, 6 of dim 2."""
    d = np.random.default_rng(2).standard_normal((128, 3, 8)).astype(np.float32)
    text = """\
    version: 1
    tensors:
      d: {buffer: sbuf, shape: [128, 3, 8], dtype: float32, file: d.npy}
      e: {buffer: sbuf, shape: [64, 3, 3], dtype: float32, output: true}
      f: {buffer: sbuf, shape: [64, 9], dtype: float32, output: true}
    instructions:
      - tensor_copy: {dst: e, src: "d[0:64, :, 2:8:2]"}
      - tensor_copy: {dst: f, src: "d[0:64, :, 2:8:2]"}
    """
    got = run_ok(write(tmp_path, text, d=d), tmp_path / "o")
    assert_bits_equal(got["e"], d[0:64, :, 2:8:2])
    assert_bits_equal(got["f"], d[0:64, :, 2:8:2].reshape(64, 9))


def test_integer_index_drops_that_dimension(tmp_path):
    d = np.random.default_rng(3).standard_normal((4, 3, 8)).astype(np.float32)
    text = """\
    version: 1
    tensors:
      d: {buffer: sbuf, shape: [4, 3, 8], dtype: float32, file: d.npy}
      e: {buffer: sbuf, shape: [4, 8], dtype: float32, output: true}
      m: {buffer: sbuf, shape: [4, 8], dtype: float32, output: true}
      x: {buffer: hbm, shape: [6, 8], dtype: float32, file: x.npy}
      row: {buffer: sbuf, shape: [1, 8], dtype: float32, output: true}
    instructions:
      - tensor_copy: {dst: e, src: "d[:, 1, :]"}
      - max8: {dst: m, src: "d[:, 2]"}
      - load: {dst: row, src: "x[5]"}
    """
    x = np.arange(48, dtype=np.float32).reshape(6, 8)
    got = run_ok(write(tmp_path, text, d=d, x=x), tmp_path / "o")
    assert_bits_equal(got["e"], d[:, 1, :])
    assert_bits_equal(got["m"], np.sort(d[:, 2, :], axis=1)[:, ::-1])
    assert_bits_equal(got["row"], x[5:6])


@pytest.mark.parametrize("view, code", [
    ("x[..., 0:4]", "E034"), ("x[:, ...]", "E034"),  # no ellipsis
    ("x[:, 8:0:-1]", "E032"), ("x[:, ::-1]", "E032"), ("x[:, ::0]", "E032"),  # no neg. steps
    ("x[0, :]", "E033"), ("x[2]", "E033"),  # the partition index must be a slice
    ("x[:, 0:4, 1]", "E030"), ("x[:, 9]", "E031"), ("x[:, 8:9]", "E031"),
    ("x[None, :]", "E034"), ("x[:, [1, 2]]", "E034"), ("x[:, 1.5]", "E034"),
    ("x[:, a]", "E034"), ("x(0)", "E034"),
])
def test_view_restrictions(tmp_path, view, code):
    """Only ints, start:stop[:step] and `:`; no ellipsis, no negative steps; the partition
    index of an on-chip view must be a slice."""
    path = base(tmp_path, f'- tensor_copy: {{dst: "y[:, 0:4]", src: "{view}"}}')
    assert_error(path, code, view.split("[")[0] + "[" if "[" in view else view, instruction=0)


@pytest.mark.parametrize("view, want", [
    ("x[:, 1:8:3]", X48[:, 1:8:3]), ("x[ : , -3 : ]", X48[:, -3:]), ("x[:, 4:1:1]", None),
    ("x[1:3, 2]", X48[1:3, 2:3]), ("x[::3, :3]", X48[::3, :3]), ("x[:, :3,]", X48[:, :3]),
    ("x[0:4:2, 5:]", X48[0:4:2, 5:]), ("x[-2:]", X48[-2:])])
def test_views_follow_numpy_basic_indexing(tmp_path, view, want):
    """Negative starts/stops, steps, omitted bounds, a trailing comma: NumPy's meaning."""
    shape = list((want if want is not None else X48[:, 0:1]).shape)
    path = base(tmp_path, f'- tensor_copy: {{dst: z, src: "{view}"}}',
                f"z: {{buffer: sbuf, shape: {shape}, dtype: float32, output: true}}\n")
    pathlib.Path(path).write_text(pathlib.Path(path).read_text().replace(
        "  y: {buffer: sbuf, shape: [4, 8], dtype: float32, output: true}\n", ""))
    if want is None:  # an empty slice selects nothing
        assert_error(path, "E031", "x[", instruction=0)
        return
    assert_bits_equal(run_ok(path, tmp_path / "o")["z"], np.ascontiguousarray(want))


def test_views_alias(tmp_path):
    """Writing to a view writes into the tensor; overlapping views see each other."""
    path = base(tmp_path, """\
    - tensor_copy: {dst: y, src: x}
    - memset: {dst: "y[1:3, 2:6:2]", value: 100.0}
    - tensor_copy: {dst: "y[:, 7]", src: "y[:, 2]"}
    - tensor_tensor: {dst: "y[0:2, :]", data1: "y[2:4, :]", data2: "y[0:2, :]", op: add}
    """)
    y = run_ok(path, tmp_path / "o")["y"]
    want = X48.copy()
    want[1:3, 2:6:2] = 100
    want[:, 7] = want[:, 2]
    want[0:2, :] = want[2:4, :] + want[0:2, :]
    assert_bits_equal(y, want)


def test_in_place_instruction_reads_before_it_writes(tmp_path):
    """dst may be the input itself (the page 003 in-place example 5)."""
    x = np.random.default_rng(9).permutation(64).astype(np.float32).reshape(4, 2, 8)
    text = """\
    version: 1
    tensors:
      t: {buffer: sbuf, shape: [4, 2, 8], dtype: float32, file: t.npy, output: true}
      top: {buffer: sbuf, shape: [4, 8], dtype: float32}
      idx: {buffer: sbuf, shape: [4, 8], dtype: uint32, fill: 0, output: true}
    instructions:
      - max8: {dst: top, src: t}
      - nc_match_replace8: {dst: t, data: t, vals: top, imm: 0.0, dst_idx: idx}
    """
    got = run_ok(write(tmp_path, text, t=x), tmp_path / "o")
    want, want_idx = ref.nc_match_replace8(x, ref.max8(x), 0.0)
    assert_bits_equal(got["t"], want)
    assert_bits_equal(got["idx"], want_idx.astype(np.uint32))


# ---- values ------------------------------------------------------------------------------------
@pytest.mark.parametrize("op0, op1", [("greater_equal", "less"),
                                      ("np.greater_equal", "nl.less"),
                                      ("nl.greater", "np.less_equal"),
                                      ("equal", "np.equal")])
def test_comparison_operators_by_numpy_name_with_prefixes(tmp_path, op0, op1):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((5, 9)).astype(np.float32)
    lo = rng.integers(0, 9, (5, 1)).astype(np.float32)
    hi = lo + 2
    got = run_ok(range_select_prog(tmp_path, x, lo, hi, op0=op0, op1=op1), tmp_path / "o")
    f0 = getattr(np, op0.split(".")[-1])
    f1 = getattr(np, op1.split(".")[-1])
    want, rowmax = page000_numpy(x, f0, f1, lo, hi, 0)
    assert_bits_equal(got["r"], want)
    assert_bits_equal(got["m"], rowmax)


@pytest.mark.parametrize("op, fn", [("add", np.add), ("subtract", np.subtract),
                                    ("multiply", np.multiply), ("maximum", np.maximum),
                                    ("minimum", np.minimum), ("np.subtract", np.subtract),
                                    ("nl.multiply", np.multiply), ("np.maximum", np.maximum)])
def test_arithmetic_operators_by_numpy_name(tmp_path, op, fn):
    z = np.random.default_rng(6).standard_normal((4, 8)).astype(np.float32)
    path = base(tmp_path, f"- tensor_tensor: {{dst: y, data1: x, data2: z, op: {op}}}",
                "z: {buffer: sbuf, shape: [4, 8], dtype: float32, file: z.npy}\n", z=z)
    assert_bits_equal(run_ok(path, tmp_path / "o")["y"], fn(X48, z))


@pytest.mark.parametrize("op", ["not_equal", "np.not_equal", "add", "nl.add"])
def test_range_select_refuses_other_comparisons(tmp_path, op):
    """Page 000: the comparison operators must be equal/less/less_equal/greater/
    greater_equal."""
    x = np.zeros((2, 4), np.float32)
    c = np.zeros((2, 1), np.float32)
    path = range_select_prog(tmp_path, x, c, c, op1=op)
    assert_error(path, "E025", "comp_op1", instruction=0)


@pytest.mark.parametrize("rop", ["max", "np.max", "nl.max", "amax", "np.amax", "maximum",
                                 "np.maximum"])
@pytest.mark.parametrize("inst", ["range_select", "select_reduce"])
def test_reduce_op_spellings_of_max(tmp_path, rop, inst):
    """reduce_op accepts max (the seeds write np.max, nl.max, amax)."""
    x = np.random.default_rng(8).standard_normal((3, 5)).astype(np.float32)
    if inst == "range_select":
        lo, hi = np.zeros((3, 1), np.float32), np.full((3, 1), 3, np.float32)
        got = run_ok(range_select_prog(tmp_path, x, lo, hi, rop=rop), tmp_path / "o")
        assert_bits_equal(got["m"], x[:, :3].max(axis=1, keepdims=True))
    else:
        path = base(tmp_path, f"""\
        - tensor_copy: {{dst: y, src: x}}
        - select_reduce: {{dst: r, predicate: p, on_true: s, on_false: fp32.min,
                          reduce_cmd: reset_reduce, reduce_res: m, reduce_op: {rop}}}
        """, """\
        s: {buffer: sbuf, shape: [3, 5], dtype: float32, file: s.npy}
        p: {buffer: sbuf, shape: [3, 5], dtype: uint8, data: [[1,1,0,0,0],[0,0,0,0,1],[0,0,0,0,0]]}
        r: {buffer: sbuf, shape: [3, 5], dtype: float32, output: true}
        m: {buffer: sbuf, shape: [3, 1], dtype: float32, output: true}
        """, s=x)
        m = run_ok(path, tmp_path / "o")["m"]
        assert_bits_equal(m, np.array([[x[0, :2].max()], [x[1, 4]], [FP32_MIN]], np.float32))


@pytest.mark.parametrize("rop", ["min", "np.min", "add", "sum", "minimum"])
def test_reduce_op_other_than_max_is_refused(tmp_path, rop):
    c = np.zeros((2, 1), np.float32)
    path = range_select_prog(tmp_path, np.zeros((2, 4), np.float32), c, c, rop=rop)
    assert_error(path, "E025", "reduce_op", instruction=0)


@pytest.mark.parametrize("cmd", ["idle", "reset", "reduce", "reset_reduce",
                                 "nisa.reduce_cmd.reset_reduce", "reduce_cmd.reduce"])
def test_reduce_cmd_values(tmp_path, cmd):
    """reduce_cmd: idle, reset, reduce, reset_reduce (accumulating across instructions)."""
    x = np.random.default_rng(10).standard_normal((3, 6)).astype(np.float32)
    path = base(tmp_path, f"""\
    - tensor_copy: {{dst: y, src: x}}
    - range_select: {{dst: r, on_true_tile: s, comp_op0: greater_equal, comp_op1: less,
                     bound0: lo, bound1: hi, reduce_cmd: reset_reduce}}
    - range_select: {{dst: r, on_true_tile: s2, comp_op0: greater_equal, comp_op1: less,
                     bound0: lo, bound1: hi, reduce_cmd: {cmd}, reduce_res: m}}
    """, """\
    s: {buffer: sbuf, shape: [3, 6], dtype: float32, file: s.npy}
    s2: {buffer: sbuf, shape: [3, 6], dtype: float32, file: s2.npy}
    lo: {buffer: sbuf, shape: [3, 1], dtype: float32, fill: 1}
    hi: {buffer: sbuf, shape: [3, 1], dtype: float32, fill: 4}
    r: {buffer: sbuf, shape: [3, 6], dtype: float32, output: true}
    m: {buffer: sbuf, shape: [3, 1], dtype: float32, output: true}
    """, s=x, s2=x[:, ::-1].copy())
    r = invoke("run", path, "--out", tmp_path / "o")
    assert r.exit_code == 0, r.output + r.stderr
    m = np.load(tmp_path / "o" / "m.npy")
    first, second = x[:, 1:4].max(1, keepdims=True), x[:, ::-1][:, 1:4].max(1, keepdims=True)
    want = {"idle": second, "reset": np.full((3, 1), -np.inf, np.float32),
            "reduce": np.maximum(first, second), "reset_reduce": second}[cmd.split(".")[-1]]
    assert_bits_equal(m, want.astype(np.float32))


def test_reduce_cmd_unknown_value(tmp_path):
    c = np.zeros((2, 1), np.float32)
    path = range_select_prog(tmp_path, np.zeros((2, 4), np.float32), c, c)
    text = pathlib.Path(path).read_text().replace("reduce_cmd: reset_reduce",
                                                  "reduce_cmd: accumulate")
    pathlib.Path(path).write_text(text)
    assert_error(path, "E025", "accumulate", instruction=0)


@pytest.mark.parametrize("value, want", [
    ("3", 3.0), ("-2.5", -2.5), ("1.0e-3", np.float32(1e-3)), ("inf", np.inf),
    ("-inf", -np.inf), ("nan", np.nan), ("fp32.min", FP32_MIN), ("fp32.max", FP32_MAX),
    ("nl.fp32.min", FP32_MIN), (".inf", np.inf), ("-.inf", -np.inf)])
def test_scalars(tmp_path, value, want):
    """Scalars: YAML numbers and the strings inf, -inf, nan, fp32.min, fp32.max."""
    path = base(tmp_path, f"""\
    - memset: {{dst: y, value: {value}}}
    - affine_select: {{dst: a, pattern: [[1, 8]], offset: -4, channel_multiplier: 0,
                      on_true_tile: x, on_false_value: {value}, cmp_op: greater_equal}}
    - tensor_tensor_scan: {{dst: s, data0: z, data1: z, initial: {value}, op0: add, op1: add}}
    """, """\
    a: {buffer: sbuf, shape: [4, 8], dtype: float32, output: true}
    s: {buffer: sbuf, shape: [4, 8], dtype: float32, output: true}
    z: {buffer: sbuf, shape: [4, 8], dtype: float32, fill: 0}
    """)
    got = run_ok(path, tmp_path / "o")
    full = np.full((4, 8), want, np.float32)
    assert_bits_equal(got["y"], full)
    want_a = X48.copy()
    want_a[:, :4] = np.float32(want)
    assert_bits_equal(got["a"], want_a)
    assert_bits_equal(got["s"], full)


@pytest.mark.parametrize("value", ["infinity", "fp32.minimum", "[1]", "{a: 1}", "true"])
def test_bad_scalar_is_located(tmp_path, value):
    path = base(tmp_path, f"- memset: {{dst: y, value: {value}}}")
    d = assert_error(path, "E024", "memset", instruction=0)
    assert "value" in d["message"]


# ==== The command line =============================================================================
def _copy_prog(folder):
    x = np.random.default_rng(11).standard_normal((4, 8)).astype(np.float32)
    return base(folder, "- tensor_copy: {dst: y, src: x}", x=x), x


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
    path, x = _copy_prog(tmp_path / "p")
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
    path, x = _copy_prog(tmp_path / "p")
    np.save(tmp_path / "a.npy", x)
    np.save(tmp_path / "bad.npy", np.zeros((3, 3), np.float32))
    fmt = {"p": path, "o": tmp_path / "o", "a": tmp_path / "a.npy", "bad": tmp_path / "bad.npy",
           "nofile": tmp_path / "nothere.yaml"}
    r = invoke(*[a.format(**fmt) for a in args])
    assert r.exit_code == code, (r.output, r.stderr)
    no_traceback(r)
    assert not (tmp_path / "o").exists()


def test_exit_status_subprocess(tmp_path):
    """The console script's real exit statuses (0 / 1 / 2), no traceback."""
    path, _ = _copy_prog(tmp_path / "p")
    bad = base(tmp_path / "bad", "- tensor_copy: {dst: y, src: nosuch}")
    for args, code in ((["check", path], 0), (["check", bad], 1), (["check", path, "--bogus"],
                                                                     2)):
        r = subprocess.run([NKIRUN, *args], capture_output=True, text=True)
        assert r.returncode == code, (args, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr


def test_out_dir_is_created_nested_and_must_be_a_folder(tmp_path):
    path, x = _copy_prog(tmp_path / "p")
    assert_bits_equal(run_ok(path, tmp_path / "a" / "b" / "c")["y"], x)
    (tmp_path / "file").write_text("not a folder")
    r = invoke("run", path, "--out", tmp_path / "file" / "sub")
    assert r.exit_code == 1 and "E080" in r.stderr
    no_traceback(r)


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["run", "--help"],
                                  ["check", "--help"], ["cost", "--help"]])
def test_help_and_version_exit_0(args):
    r = invoke(*args)
    assert r.exit_code == 0 and r.output


def test_nothing_written_on_failure_even_into_an_existing_out_dir(tmp_path):
    """exit 1: nothing is written, and files already in --out stay as they were."""
    good, x = _copy_prog(tmp_path / "g")
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
    for bad in (write(tmp_path / "b1", text),
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
    x, lo, hi = _example_data(tmp_path)
    path = write(tmp_path, CONTRACT_EXAMPLE)
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
    good, _ = _copy_prog(tmp_path / "g")
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
    path = write(tmp_path, text)
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
    path = write(tmp_path, "versio: 1\ntensors: {}\ninstructions: []\n")
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
    doc = _cost_json(path)
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
        doc = _cost_json(range_select_prog(tmp_path / str(n), x, c, c))
        (i,) = doc["instructions"]
        assert (i["op"], i["engine"], i["cycles"]) == ("range_select", "vector", want)


def test_cost_formulas_of_scan_and_match_replace(tmp_path):
    """Page 004: max(MIN_II, 2N) Vector cycles; page 003: N against MIN_II 64 (the page's
    min(MIN_II, N) read as max, nki-reference.md section 1.13)."""
    for n in (16, 40, 300):
        path = write(tmp_path / str(n), f"""\
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
        ins = _cost_json(path)["instructions"]
        assert [(i["op"], i["engine"], i["cycles"]) for i in ins] == [
            ("tensor_tensor_scan", "vector", max(64, 2 * n)),
            ("nc_match_replace8", "vector", max(64, n))]


def test_cost_of_invalid_program_is_exit_1(tmp_path):
    path = base(tmp_path, "- tensor_copy: {dst: y, src: nosuch}")
    r = invoke("cost", path, "--format", "json")
    assert r.exit_code == 1
    no_traceback(r)


BAD_INPUTS = [
    "", "[]", "version: 1\n", "version: 1\ntensors: []\ninstructions: {}\n",
    "version: 1\ntensors: {x: 3}\ninstructions: []\n",
    "version: 1\ntensors: {}\ninstructions: [{load: 3}]\n",
    "version: 1\ntensors: {}\ninstructions: [{load: {dst: [1], src: {a: 1}}}]\n",
    "version: [1]\n", "\t: :\n", "version: 1\ntensors:\n  x: {buffer: sbuf, shape: [1e9, 1e9], "
    "dtype: float32}\ninstructions: []\n",
    "version: 1\ntensors:\n  x: {buffer: sbuf, shape: [2, 2], dtype: float32, fill: 1}\n"
    "instructions:\n  - memset: {dst: 'x[0:2, 0:2:0]', value: 1}\n",
    "version: 1\ntensors:\n  x: {buffer: sbuf, shape: [2, 2], dtype: float32, data: [[1, 2], "
    "[3]]}\ninstructions: []\n",
    "version: 1\ntensors:\n  1x: {buffer: sbuf, shape: [2, 2], dtype: float32}\n"
    "instructions: []\n",
    "version: 1\ntensors:\n  x: {buffer: sbuf, shape: [2, 2], dtype: float32, file: [a]}\n"
    "instructions: []\n",
]


@pytest.mark.parametrize("text", BAD_INPUTS)
def test_errors_are_never_tracebacks(tmp_path, text):
    """An error is a message a person can act on (where, what), never a Python traceback."""
    path = write(tmp_path, text)
    for args in (["check", path], ["check", path, "--format", "json"], ["cost", path],
                 ["run", path, "--out", tmp_path / "o"]):
        r = invoke(*args)
        no_traceback(r)
        assert r.exit_code in (0, 1), (args, r.exit_code, r.output, r.stderr)
        assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
        if r.exit_code == 1 and args[-1] != "json":
            assert path in r.stderr + r.output


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


# ==== Seed pages: constraints, each rejected by check with a located error ====================
SEEDS = """\
version: 1
tensors:
  t:   {buffer: sbuf, shape: [4, 8], dtype: float32, fill: 1}
  t3:  {buffer: sbuf, shape: [3, 8], dtype: float32, fill: 1}
  tb:  {buffer: sbuf, shape: [4, 8], dtype: bfloat16, fill: 1}
  ti:  {buffer: sbuf, shape: [4, 8], dtype: int32, fill: 1}
  tu:  {buffer: sbuf, shape: [4, 8], dtype: uint32, fill: 1}
  tf:  {buffer: sbuf, shape: [4, 8], dtype: tfloat32, fill: 1}
  tp:  {buffer: psum, shape: [4, 8], dtype: float32, fill: 1}
  th:  {buffer: hbm,  shape: [4, 8], dtype: float32, fill: 1}
  r:   {buffer: sbuf, shape: [4, 8], dtype: float32, output: true}
  r9:  {buffer: sbuf, shape: [4, 9], dtype: float32, output: true}
  rp:  {buffer: psum, shape: [4, 8], dtype: float32, output: true}
  c:   {buffer: sbuf, shape: [4, 1], dtype: float32, fill: 0}
  c2:  {buffer: sbuf, shape: [4, 2], dtype: float32, fill: 0}
  c3:  {buffer: sbuf, shape: [3, 1], dtype: float32, fill: 0}
  cb:  {buffer: sbuf, shape: [4, 1], dtype: bfloat16, fill: 0}
  ci:  {buffer: sbuf, shape: [4, 1], dtype: int32, fill: 0}
  m:   {buffer: sbuf, shape: [4, 1], dtype: float32, output: true}
  mi:  {buffer: sbuf, shape: [4, 1], dtype: int32, output: true}
  m2:  {buffer: sbuf, shape: [4, 2], dtype: float32, output: true}
  m3:  {buffer: sbuf, shape: [3, 1], dtype: float32, output: true}
  p:   {buffer: sbuf, shape: [4, 8], dtype: uint8, fill: 1}
  pp:  {buffer: psum, shape: [4, 8], dtype: uint8, fill: 1}
  pf:  {buffer: sbuf, shape: [4, 8], dtype: float32, fill: 1}
  pi:  {buffer: sbuf, shape: [4, 8], dtype: int32, fill: 1}
  p3:  {buffer: sbuf, shape: [3, 8], dtype: uint8, fill: 1}
  p9:  {buffer: sbuf, shape: [4, 9], dtype: uint8, fill: 1}
  v:   {buffer: sbuf, shape: [4, 8], dtype: float32, fill: 1}
  v7:  {buffer: sbuf, shape: [4, 7], dtype: float32, fill: 1}
  v3d: {buffer: sbuf, shape: [4, 2, 2, 2], dtype: float32, fill: 1}
  d6:  {buffer: sbuf, shape: [4, 1, 1, 1, 2, 4], dtype: float32, fill: 1}
  big: {buffer: sbuf, shape: [4, 16385], dtype: float32, fill: 1}
  idx: {buffer: sbuf, shape: [4, 8], dtype: uint32, output: true}
  idxf: {buffer: sbuf, shape: [4, 8], dtype: float32, output: true}
  idx7: {buffer: sbuf, shape: [4, 7], dtype: uint32, output: true}
instructions:
  - INSTR
"""

RS = ("range_select: {dst: r, on_true_tile: t, comp_op0: greater_equal, comp_op1: less, "
      "bound0: c, bound1: c, reduce_cmd: reset_reduce, reduce_res: m, reduce_op: max, "
      "range_start: 0, on_false_value: fp32.min}")
SR = ("select_reduce: {dst: r, predicate: p, on_true: t, on_false: fp32.min, reduce_res: m, "
      "reduce_cmd: reset_reduce, reduce_op: max}")
AS = ("affine_select: {dst: r, pattern: [[1, 8]], offset: 0, channel_multiplier: 1, "
      "on_true_tile: t, on_false_value: fp32.min, cmp_op: greater_equal}")
MR = "nc_match_replace8: {dst: r, data: t, vals: v8, imm: 0.0, dst_idx: i8}"
TS = "tensor_tensor_scan: {dst: r, data0: t, data1: v, initial: 0.0, op0: multiply, op1: add}"


def seed_prog(folder, instr: str) -> str:
    text = SEEDS.replace("INSTR", instr)
    text = text.replace("instructions:", "  v8:  {buffer: sbuf, shape: [4, 8], dtype: float32, "
                        "fill: 1}\n  i8:  {buffer: sbuf, shape: [4, 8], dtype: uint32, "
                        "output: true}\ninstructions:")
    return write(folder, text)


def _items(body: str) -> list[str]:
    """Split a flow mapping's body at its top-level commas (not inside [...])."""
    items, depth, cur = [], 0, ""
    for ch in body:
        depth += {"[": 1, "]": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            items.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return items + [cur.strip()] if cur.strip() else items


def sub(base_instr: str, key: str, value: str | None) -> str:
    """base_instr with `key: <old>` replaced by `key: value` (added if absent)."""
    head, body = base_instr.split(": {", 1)
    out, done = [], False
    for kv in _items(body[:-1]):
        if kv.split(":")[0] == key:
            if value is not None:
                out.append(f"{key}: {value}")
            done = True
        else:
            out.append(kv)
    if not done and value is not None:
        out.append(f"{key}: {value}")
    return f"{head}: {{{', '.join(out)}}}"


@pytest.mark.parametrize("instr", [RS, SR, AS, MR, TS])
def test_seed_baselines_are_valid(tmp_path, instr):
    path = seed_prog(tmp_path, instr)
    assert errors_of(path) == []


@pytest.mark.parametrize("instr, key", [(SR, "on_false"), (AS, "on_false_value"), (MR, "imm"),
                                        (TS, "initial")])
@pytest.mark.parametrize("value", ["3.4028235e38", "-3.4028235e38", "fp32.max", "-inf", "nan",
                                   "1e-45"])
def test_float32_constants_accept_every_float32(tmp_path, instr, key, value):
    """The pages' "float32" constants: the printed FP32_MAX, infinities, NaN, denormals."""
    assert errors_of(seed_prog(tmp_path, sub(instr, key, value))) == []


# (instruction, key to change, new value, expected code, keyword the error points at)
SEED_CONSTRAINTS = [
    # ---- page 000 range_select
    ("rs comp_op0 not_equal", RS, "comp_op0", "not_equal", "E025", "comp_op0"),
    ("rs comp_op1 add", RS, "comp_op1", "np.add", "E025", "comp_op1"),
    ("rs partitions bound0", RS, "bound0", "c3", "E062", "bound0"),
    ("rs partitions bound1", RS, "bound1", "c3", "E062", "bound1"),
    ("rs bound0 one per partition", RS, "bound0", "c2", "E061", "bound0"),
    ("rs bound1 one per partition", RS, "bound1", "t", "E061", "bound1"),
    ("rs on_true int", RS, "on_true_tile", "ti", "E060", "on_true_tile"),
    ("rs bound0 fp32", RS, "bound0", "cb", "E060", "bound0"),
    ("rs bound1 fp32", RS, "bound1", "ci", "E060", "bound1"),
    ("rs range_start 2^24", RS, "range_start", "16777210", "E102", "range_start"),
    ("rs range_start int", RS, "range_start", "1.5", "E024", "range_start"),
    ("rs on_false FP32_MIN", RS, "on_false_value", "0.0", "E101", "on_false_value"),
    ("rs on_false -inf", RS, "on_false_value", "-inf", "E101", "on_false_value"),
    ("rs reduce_op max only", RS, "reduce_op", "np.add", "E025", "reduce_op"),
    ("rs reduce_res one per partition", RS, "reduce_res", "m2", "E061", "reduce_res"),
    ("rs reduce_res partitions", RS, "reduce_res", "m3", "E062", "reduce_res"),
    ("rs dst shape", RS, "dst", "r9", "E063", "dst"),
    ("rs on_true in hbm", RS, "on_true_tile", "th", "E040", "on_true_tile"),
    ("rs reduce_cmd", RS, "reduce_cmd", "sum", "E025", "reduce_cmd"),
    # ---- page 001 select_reduce
    ("sr both psum", SR, "on_true", "tp", None, None),  # predicate made psum below
    ("sr dst hbm", SR, "dst", "th", "E040", "dst"),
    ("sr shape on_true/dst", SR, "dst", "r9", "E063", "dst"),
    ("sr shape predicate", SR, "predicate", "p9", "E063", "predicate"),
    ("sr partitions predicate", SR, "predicate", "p3", None, "predicate"),
    ("sr on_true tfloat32", SR, "on_true", "tf", "E060", "on_true"),
    ("sr on_true int32", SR, "on_true", "ti", "E060", "on_true"),
    ("sr on_true uint32", SR, "on_true", "tu", "E060", "on_true"),
    ("sr on_false scalar fp32", SR, "on_false", "1e39", "E111", "on_false"),
    ("sr on_false vector shape", SR, "on_false", "c2", "E061", "on_false"),
    ("sr on_false vector partitions", SR, "on_false", "c3", "E062", "on_false"),
    ("sr predicate float", SR, "predicate", "pf", "E060", "predicate"),
    ("sr predicate int32", SR, "predicate", "pi", "E060", "predicate"),
    ("sr reduce_res shape", SR, "reduce_res", "m2", "E061", "reduce_res"),
    ("sr reduce_res partitions", SR, "reduce_res", "m3", "E062", "reduce_res"),
    ("sr reduce_res float", SR, "reduce_res", "mi", "E060", "reduce_res"),
    ("sr reduce_op max only", SR, "reduce_op", "minimum", "E025", "reduce_op"),
    ("sr on_true hbm", SR, "on_true", "th", "E040", "on_true"),
    # ---- page 002 affine_select
    ("as dst psum", AS, "dst", "rp", "E040", "dst"),
    ("as on_true psum", AS, "on_true_tile", "tp", "E040", "on_true_tile"),
    ("as on_true hbm", AS, "on_true_tile", "th", "E040", "on_true_tile"),
    ("as partitions", AS, "on_true_tile", "t3", None, "on_true_tile"),
    ("as pattern size", AS, "pattern", "[[1, 7]]", "E122", "pattern"),
    ("as pattern 5-D", AS, "pattern", "[[1, 2], [1, 2], [1, 2], [1, 1], [0, 1]]", "E120",
     "pattern"),
    ("as pattern num 0", AS, "pattern", "[[1, 8], [1, 0]]", "E121", "pattern"),
    ("as offset int32", AS, "offset", "2147483648", "E123", "offset"),
    ("as channel_multiplier int32", AS, "channel_multiplier", "-2147483649", "E123",
     "channel_multiplier"),
    ("as values overflow int32", AS, "pattern", "[[1073741824, 8]]", "E123", "pattern"),
    ("as on_false fp32", AS, "on_false_value", "-1e39", "E124", "on_false_value"),
    ("as on_false not a tile", AS, "on_false_value", "c", "E024", "on_false_value"),
    ("as offset int", AS, "offset", "0.5", "E024", "offset"),
    ("as cmp_op", AS, "cmp_op", "np.add", "E025", "cmp_op"),
    ("as pattern form", AS, "pattern", "[1, 8]", "E024", "pattern"),
    # ---- page 003 nc_match_replace8
    ("mr vals 8", MR, "vals", "v7", "E130", "vals"),
    ("mr data 16384", MR, "data", "big", "E131", "data"),
    ("mr data 5-D", MR, "data", "d6", "E132", "data"),
    ("mr vals 3-D", MR, "vals", "v3d", "E133", "vals"),
    ("mr partitions", MR, "vals", "t3", None, "vals"),
    ("mr dst shape", MR, "dst", "r9", "E134", "dst"),
    ("mr dst_idx size", MR, "dst_idx", "idx7", "E135", "dst_idx"),
    ("mr data hbm", MR, "data", "th", "E040", "data"),
    ("mr imm fp32", MR, "imm", "1e39", "E139", "imm"),
    ("mr imm not a tile", MR, "imm", "v", "E024", "imm"),
    # ---- page 004 tensor_tensor_scan
    ("ts both psum", TS, "data1", "tp", None, None),  # data0 made psum below
    ("ts shapes", TS, "data1", "v7", "E141", ("data0", "data1")),
    ("ts partitions", TS, "data1", "t3", None, "data1"),
    ("ts dst shape", TS, "dst", "r9", "E142", "dst"),
    ("ts initial one per partition", TS, "initial", "c2", "E061", "initial"),
    ("ts initial partitions", TS, "initial", "c3", "E062", "initial"),
    ("ts initial fp32", TS, "initial", "-1e39", "E143", "initial"),
    ("ts op0 arithmetic", TS, "op0", "greater", "E025", "op0"),
    ("ts op1 arithmetic", TS, "op1", "np.logical_and", "E025", "op1"),
    ("ts data0 hbm", TS, "data0", "th", "E040", "data0"),
]


@pytest.mark.parametrize("case", SEED_CONSTRAINTS, ids=[c[0] for c in SEED_CONSTRAINTS])
def test_seed_constraint_is_rejected_with_located_error(tmp_path, case):
    name, instr, key, value, code, where = case
    bad = sub(instr, key, value)
    if name == "sr both psum":
        bad = sub(bad, "predicate", "pp")
    if name == "ts both psum":
        bad = sub(bad, "data0", "tp")
    path = seed_prog(tmp_path, bad)
    errs = errors_of(path)
    assert errs, f"{name}: no error for {bad}"
    d = errs[0] if code is None else next((e for e in errs if e["code"] == code), None)
    assert d is not None, (name, code, [(e["code"], e["message"]) for e in errs])
    assert d["instruction"] == 0
    line = line_of(path, "- " + instr.split(":")[0])
    assert d["line"] == line
    if where is not None:  # the column of the offending keyword (or of its value)
        src = pathlib.Path(path).read_text().splitlines()[line - 1]
        cols = [c for w in ((where,) if isinstance(where, str) else where)
                for c in (src.index(f"{w}: ") + 1, src.index(f"{w}: ") + len(w) + 3)]
        assert d["column"] in cols, (name, d, cols)


# ==== Seed pages: NumPy equivalents, bit-exact for float32 ======================================
def special_floats(rng, shape):
    x = (rng.standard_normal(shape) * 4).astype(np.float32)
    f = x.reshape(-1)
    k = max(1, f.size // 10)
    at = rng.choice(f.size, k, replace=False)
    f[at] = rng.choice(np.array([np.nan, np.inf, -np.inf, -0.0, 0.0], np.float32), k)
    return x


@pytest.mark.parametrize("P, N, start", [(1, 1, 0), (37, 129, 5), (128, 64, -3)])
@pytest.mark.parametrize("op0, op1", [("greater_equal", "less"), ("greater", "less_equal"),
                                      ("equal", "greater_equal"), ("less", "greater")])
def test_page000_numpy_equivalent(tmp_path, P, N, start, op0, op1):
    rng = np.random.default_rng(P + N + start)
    x = special_floats(rng, (P, N))
    lo = rng.integers(start - 2, start + N + 2, (P, 1)).astype(np.float32)
    hi = (lo + rng.integers(-1, N + 2, (P, 1))).astype(np.float32)
    got = run_ok(range_select_prog(tmp_path, x, lo, hi, op0=op0, op1=op1, rs=start),
                 tmp_path / "o")
    want, rowmax = page000_numpy(x, getattr(np, op0), getattr(np, op1), lo, hi, start)
    assert_bits_equal(got["r"], want)
    assert_bits_equal(got["m"], rowmax)


def page001_numpy(predicate, on_true, on_false, reverse_pred):
    """Seed page 001's NumPy equivalent; `~predicate` on a 0/1 integer tile read as the
    logical NOT (Example 3: 'select on_true where predicate is FALSE')."""
    predicate = predicate != 0
    predicate = ~predicate if reverse_pred else predicate
    result = np.where(predicate, on_true, on_false).astype(np.float32)
    return result, np.max(result, axis=1, keepdims=True)


@pytest.mark.parametrize("P, N", [(1, 3), (37, 65), (128, 16)])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("vector_false", [False, True])
@pytest.mark.parametrize("pdtype", ["uint8", "int8", "int16", "uint16"])
def test_page001_numpy_equivalent(tmp_path, P, N, reverse, vector_false, pdtype):
    rng = np.random.default_rng(P * N)
    x = special_floats(rng, (P, N))
    pred = rng.integers(0, 2, (P, N)).astype(NP[pdtype])
    pred[0] = 0  # a fully false row
    if P > 2:
        pred[2] = rng.integers(-3, 4, N).astype(NP[pdtype]) if pdtype.startswith("i") else 7
    fv = rng.standard_normal((P, 1)).astype(np.float32)
    on_false = "f" if vector_false else "fp32.min"
    text = f"""\
    version: 1
    tensors:
      t: {{buffer: sbuf, shape: [{P}, {N}], dtype: float32, file: t.npy}}
      p: {{buffer: sbuf, shape: [{P}, {N}], dtype: {pdtype}, file: p.npy}}
      f: {{buffer: sbuf, shape: [{P}, 1], dtype: float32, file: f.npy}}
      r: {{buffer: sbuf, shape: [{P}, {N}], dtype: float32, output: true}}
      m: {{buffer: sbuf, shape: [{P}, 1], dtype: float32, output: true}}
    instructions:
      - select_reduce: {{dst: r, predicate: p, on_true: t, on_false: {on_false},
                        reduce_res: m, reduce_cmd: reset_reduce, reduce_op: nl.max,
                        reverse_pred: {str(reverse).lower()}}}
    """
    got = run_ok(write(tmp_path, text, t=x, p=pred, f=fv), tmp_path / "o")
    want, rowmax = page001_numpy(pred, x, fv if vector_false else FP32_MIN, reverse)
    assert_bits_equal(got["r"], want)
    assert_bits_equal(got["m"], rowmax)


def test_page001_psum_combinations(tmp_path):
    """Either on_true or predicate may be in PSUM; dst in SBUF or PSUM."""
    for ot, pr, dst in (("tp", "p", "r"), ("t", "pp", "rp"), ("t", "p", "rp")):
        path = seed_prog(tmp_path / f"{ot}{pr}{dst}", sub(sub(sub(SR, "on_true", ot),
                                                              "predicate", pr), "dst", dst))
        assert errors_of(path) == [], (ot, pr, dst)


def page002_numpy(on_true_tile, pattern, offset, channel_multiplier, on_false_value, cmp_op):
    """Seed page 002's pseudo code, literally (loops; slow but independent)."""
    P = on_true_tile.shape[0]
    pattern = [[0, 1]] * (4 - len(pattern)) + [list(p) for p in pattern]
    [[step_w, num_w], [step_z, num_z], [step_y, num_y], [step_x, num_x]] = pattern
    src = on_true_tile.reshape(P, num_w, num_z, num_y, num_x)
    dst = np.empty_like(src)
    for channel_id in range(P):
        for w in range(num_w):
            for z in range(num_z):
                for y in range(num_y):
                    for x in range(num_x):
                        affine_value = (offset + channel_id * channel_multiplier + w * step_w
                                        + z * step_z + y * step_y + x * step_x)
                        if cmp_op(affine_value, 0):
                            dst[channel_id, w, z, y, x] = src[channel_id, w, z, y, x]
                        else:
                            dst[channel_id, w, z, y, x] = on_false_value
    return dst.reshape(on_true_tile.shape)


@pytest.mark.parametrize("P, shape, pattern, offset, cm, cmp", [
    (1, [5], [[1, 5]], -2, 0, "greater_equal"),
    (37, [13], [[-1, 13]], 0, 1, "greater_equal"),  # causal mask
    (128, [4, 6], [[6, 4], [1, 6]], -50, 3, "less"),
    (8, [2, 3, 2], [[-1, 2], [2, 3], [5, 2]], 1, -1, "not_equal"),
    (16, [2, 2, 2, 3], [[1, 2], [-3, 2], [2, 2], [1, 3]], 0, 1, "equal"),
    (8, [7], [[1, 7]], 0, 2, "less_equal"),
    (8, [7], [[1, 7]], -3, 1, "greater"),
])
def test_page002_numpy_equivalent(tmp_path, P, shape, pattern, offset, cm, cmp):
    rng = np.random.default_rng(P)
    x = special_floats(rng, (P, *shape))
    text = f"""\
    version: 1
    tensors:
      t: {{buffer: sbuf, shape: {[P, *shape]}, dtype: float32, file: t.npy}}
      r: {{buffer: sbuf, shape: {[P, *shape]}, dtype: float32, output: true}}
    instructions:
      - affine_select: {{dst: r, pattern: {pattern}, offset: {offset}, channel_multiplier: {cm},
                        on_true_tile: t, on_false_value: -9.5, cmp_op: np.{cmp}}}
    """
    got = run_ok(write(tmp_path, text, t=x), tmp_path / "o")
    want = page002_numpy(x, pattern, offset, cm, np.float32(-9.5), getattr(np, cmp))
    assert_bits_equal(got["r"], want)


def test_page002_default_cmp_op_is_equal(tmp_path):
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    text = """\
    version: 1
    tensors:
      t: {buffer: sbuf, shape: [4, 4], dtype: float32, file: t.npy}
      r: {buffer: sbuf, shape: [4, 4], dtype: float32, output: true}
    instructions:
      - affine_select: {dst: r, pattern: [[-1, 4]], offset: 0, channel_multiplier: 1,
                        on_true_tile: t, on_false_value: 0.0}
    """
    got = run_ok(write(tmp_path, text, t=x), tmp_path / "o")
    assert_bits_equal(got["r"], np.where(np.eye(4, dtype=bool), x, np.float32(0)))


def page003_numpy(data, vals, imm):
    """Seed page 003's NumPy equivalent, literally."""
    data_shape = data.shape
    vals_shape = vals.shape
    data_2d = data.reshape(data_shape[0], -1).copy()
    vals_2d = vals.reshape(vals_shape[0], -1)
    indices = np.zeros(vals_2d.shape, dtype=np.uint32)
    for i in range(data_2d.shape[0]):
        for j in range(vals_2d.shape[1]):
            val = vals_2d[i, j]
            matches = np.where(data_2d[i, :] == val)[0]
            if matches.size > 0:
                indices[i, j] = matches[0]
                data_2d[i, matches[0]] = imm
    return data_2d.reshape(data.shape), indices.reshape(vals.shape)


# "data up to 5-dimensional, vals up to 3-dimensional" count the partition dimension
@pytest.mark.parametrize("P, dshape, vshape", [(1, [16], [8]), (37, [3, 11], [2, 4]),
                                              (128, [2, 2, 5], [8]),
                                              (4, [2, 2, 2, 3], [2, 4])])
@pytest.mark.parametrize("imm", ["0.0", "-inf", "fp32.max"])
def test_page003_numpy_equivalent(tmp_path, P, dshape, vshape, imm):
    rng = np.random.default_rng(P * 7)
    n = int(np.prod(dshape))
    data = rng.integers(-6, 6, (P, n)).astype(np.float32)  # many duplicates
    data[:, :2] = -0.0
    vals = np.take_along_axis(data, rng.integers(0, n, (P, 8)), axis=1)
    vals[:, 3] = vals[:, 2]  # a value repeated in vals: successive occurrences
    data = data.reshape(P, *dshape)
    vals = vals.reshape(P, *vshape)
    text = f"""\
    version: 1
    tensors:
      d: {{buffer: sbuf, shape: {[P, *dshape]}, dtype: float32, file: d.npy}}
      v: {{buffer: sbuf, shape: {[P, *vshape]}, dtype: float32, file: v.npy}}
      r: {{buffer: sbuf, shape: {[P, *dshape]}, dtype: float32, output: true}}
      i: {{buffer: sbuf, shape: {[P, *vshape]}, dtype: uint32, output: true}}
    instructions:
      - nc_match_replace8: {{dst: r, data: d, vals: v, imm: {imm}, dst_idx: i}}
    """
    got = run_ok(write(tmp_path, text, d=data, v=vals), tmp_path / "o")
    immv = {"0.0": 0.0, "-inf": -np.inf, "fp32.max": FP32_MAX}[imm]
    want, idx = page003_numpy(data, vals, np.float32(immv))
    assert_bits_equal(got["r"], want)
    assert_bits_equal(got["i"], idx)


def test_page003_example_1_max8_then_replace(tmp_path):
    """Example 1: the 8 largest values of each row replaced by -inf (no dst_idx)."""
    rng = np.random.default_rng(12)
    x = rng.random((4, 16)).astype(np.float32)
    text = """\
    version: 1
    tensors:
      d: {buffer: sbuf, shape: [4, 16], dtype: float32, file: d.npy}
      top: {buffer: sbuf, shape: [4, 8], dtype: float32}
      r: {buffer: hbm, shape: [4, 16], dtype: float32, output: true}
      res: {buffer: sbuf, shape: [4, 16], dtype: float32}
    instructions:
      - max8: {dst: top, src: "d[:, :]"}
      - nc_match_replace8: {dst: res, data: "d[:, :]", vals: top, imm: "float('-inf')"}
      - store: {dst: r, src: res}
    """
    got = run_ok(write(tmp_path, text, d=x), tmp_path / "o")["r"]
    want, _ = page003_numpy(x, np.sort(x, axis=1)[:, ::-1][:, :8], np.float32(-np.inf))
    assert_bits_equal(got, want)
    assert (np.isneginf(got).sum(axis=1) == 8).all()


def test_page003_example_4_memset_shape_and_views(tmp_path):
    """Example 4: memset(shape=(n, 8), value=0, dtype=nl.uint32) and a 3-D data tile; the
    indices keep vals' shape, the replaced output data's shape."""
    rng = np.random.default_rng(15)
    data = rng.permutation(3 * 2 * 10).astype(np.float32).reshape(3, 2, 10)
    text = """\
    version: 1
    tensors:
      data_tensor: {buffer: hbm, shape: [3, 2, 10], dtype: float32, file: d.npy}
      out_tensor: {buffer: hbm, shape: [3, 2, 10], dtype: float32, output: true}
      idx_tensor: {buffer: hbm, shape: [3, 8], dtype: uint32, output: true}
      idx_tile: {buffer: sbuf, shape: [3, 8], dtype: uint32}
      out_tile: {buffer: sbuf, shape: [3, 2, 10], dtype: float32}
      inp_tile: {buffer: sbuf, shape: [3, 2, 10], dtype: float32}
      max_vals: {buffer: sbuf, shape: [3, 8], dtype: float32}
    instructions:
      - nisa.memset: {dst: idx_tile, shape: [3, 8], value: 0, dtype: nl.uint32}
      - nisa.memset: {dst: out_tile, shape: [3, 2, 10], value: 0, dtype: float32}
      - nl.load: {dst: inp_tile, src: "data_tensor[0:3, 0:2, 0:10]"}
      - nisa.max8: {dst: max_vals, src: inp_tile}
      - nisa.nc_match_replace8: {dst: "out_tile[0:3, 0:2, 0:10]", dst_idx: "idx_tile[0:3, 0:8]",
                                 data: "inp_tile[0:3, 0:2, 0:10]", vals: "max_vals[0:3, 0:8]",
                                 imm: 0.0}
      - nl.store: {dst: out_tensor, src: out_tile}
      - nl.store: {dst: idx_tensor, src: idx_tile}
    """
    got = run_ok(write(tmp_path, text, d=data), tmp_path / "o")
    want, idx = page003_numpy(data, np.sort(data.reshape(3, -1), axis=1)[:, ::-1][:, :8],
                              np.float32(0.0))
    assert_bits_equal(got["out_tensor"], want)
    assert_bits_equal(got["idx_tensor"], idx)
    bad = write(tmp_path / "bad", text.replace("shape: [3, 8], value", "shape: [3, 9], value"),
                d=data)
    assert_error(bad, "E170", "shape: [3, 9]", instruction=0)


def page004_numpy(data0, data1, initial, op0, op1):
    """Seed page 004's NumPy equivalent, literally (float32)."""
    with np.errstate(invalid="ignore", over="ignore"):
        result = np.ndarray(data0.shape, dtype=data0.dtype)
        result[:, 0] = op1(op0(data0[:, 0], initial), data1[:, 0])
        for i in range(1, data0.shape[1]):
            result[:, i] = op1(op0(data0[:, i], result[:, i - 1]), data1[:, i])
    return result


@pytest.mark.parametrize("P, N", [(1, 1), (37, 33), (128, 9)])
@pytest.mark.parametrize("op0, op1", [("multiply", "add"), ("add", "maximum"),
                                      ("maximum", "subtract"), ("minimum", "multiply"),
                                      ("subtract", "minimum")])
@pytest.mark.parametrize("tile_initial", [False, True])
def test_page004_numpy_equivalent(tmp_path, P, N, op0, op1, tile_initial):
    rng = np.random.default_rng(P * N)
    d0 = rng.uniform(-1.5, 1.5, (P, N)).astype(np.float32)
    d1 = special_floats(rng, (P, N)) if N > 5 else rng.standard_normal((P, N)).astype(
        np.float32)
    init = rng.standard_normal((P, 1)).astype(np.float32)
    initial = "i" if tile_initial else "0.25"
    text = f"""\
    version: 1
    tensors:
      a: {{buffer: sbuf, shape: [{P}, {N}], dtype: float32, file: a.npy}}
      b: {{buffer: psum, shape: [{P}, {N}], dtype: float32, file: b.npy}}
      i: {{buffer: sbuf, shape: [{P}, 1], dtype: float32, file: i.npy}}
      r: {{buffer: sbuf, shape: [{P}, {N}], dtype: float32, output: true}}
    instructions:
      - tensor_tensor_scan: {{dst: r, data0: a, data1: b, initial: {initial}, op0: {op0},
                             op1: {op1}}}
    """
    got = run_ok(write(tmp_path, text, a=d0, b=d1, i=init), tmp_path / "o")
    iv = init[:, 0] if tile_initial else np.float32(0.25)
    want = page004_numpy(d0, d1, iv, getattr(np, op0), getattr(np, op1))
    assert_bits_equal(got["r"], want)


@pytest.mark.parametrize("rev0, rev1", [(True, False), (False, True), (True, True)])
def test_page004_reverse_operands(tmp_path, rev0, rev1):
    """reverse0: data0 becomes op0's rhs; reverse1: data1 becomes op1's lhs."""
    rng = np.random.default_rng(13)
    d0 = rng.standard_normal((5, 7)).astype(np.float32)
    d1 = rng.standard_normal((5, 7)).astype(np.float32)
    text = f"""\
    version: 1
    tensors:
      a: {{buffer: sbuf, shape: [5, 7], dtype: float32, file: a.npy}}
      b: {{buffer: sbuf, shape: [5, 7], dtype: float32, file: b.npy}}
      r: {{buffer: sbuf, shape: [5, 7], dtype: float32, output: true}}
    instructions:
      - tensor_tensor_scan: {{dst: r, data0: a, data1: b, initial: 1.5, op0: subtract,
                             op1: subtract, reverse0: {str(rev0).lower()},
                             reverse1: {str(rev1).lower()}}}
    """
    got = run_ok(write(tmp_path, text, a=d0, b=d1), tmp_path / "o")["r"]
    f0 = (lambda a, b: np.subtract(b, a)) if rev0 else np.subtract
    f1 = (lambda a, b: np.subtract(b, a)) if rev1 else np.subtract
    assert_bits_equal(got, page004_numpy(d0, d1, np.float32(1.5), f0, f1))


@pytest.mark.parametrize("op0, op1", [("add", "multiply"), ("multiply", "add"),
                                      ("maximum", "minimum"), ("subtract", "add")])
@pytest.mark.parametrize("rev0", [False, True])
def test_page004_two_nan_operands_keep_the_pages_nan(tmp_path, op0, op1, rev0):
    """Bit-exact also for NaN: where both operands of an op are NaN (different signs and
    payloads, a generated default NaN), the page's loop gives the first operand's NaN."""
    P, N = 37, 24
    rng = np.random.default_rng(22)
    d0 = rng.standard_normal((P, N)).astype(np.float32)
    d1 = rng.standard_normal((P, N)).astype(np.float32)
    nans = np.array([0x7FC00000, 0xFFC00000, 0x7FC00123, 0xFFC0BEEF, 0x7F800001], np.uint32)
    d1.reshape(-1)[rng.choice(P * N, 80, replace=False)] = rng.choice(nans, 80).view(np.float32)
    d0.reshape(-1)[rng.choice(P * N, 80, replace=False)] = rng.choice(nans, 80).view(np.float32)
    d0[:, 3] = np.inf  # inf - inf / inf * 0 make new NaNs
    d1[:, 3] = -np.inf
    d0[:, 4] = 0.0
    text = f"""\
    version: 1
    tensors:
      a: {{buffer: sbuf, shape: [{P}, {N}], dtype: float32, file: a.npy}}
      b: {{buffer: sbuf, shape: [{P}, {N}], dtype: float32, file: b.npy}}
      r: {{buffer: sbuf, shape: [{P}, {N}], dtype: float32, output: true}}
    instructions:
      - tensor_tensor_scan: {{dst: r, data0: a, data1: b, initial: 1.0, op0: {op0},
                             op1: {op1}, reverse0: {str(rev0).lower()}}}
    """
    got = run_ok(write(tmp_path, text, a=d0, b=d1), tmp_path / "o")["r"]
    f0 = getattr(np, op0)
    if rev0:
        f0 = lambda a, b, f=getattr(np, op0): f(b, a)  # noqa: E731
    with np.errstate(invalid="ignore"):
        want = page004_numpy(d0, d1, np.float32(1.0), f0, getattr(np, op1))
    assert np.isnan(want).any()
    assert_bits_equal(got, want)


def test_page004_positional_operands_are_keywords_in_yaml(tmp_path):
    """tensor_tensor_scan(data0, data1, initial, op0, op1, ...): the positional parameters
    are written under their names; the engine computes in fp32 and casts to the output."""
    rng = np.random.default_rng(14)
    d0 = rng.standard_normal((3, 6)).astype(ml_dtypes.bfloat16)
    d1 = rng.standard_normal((3, 6)).astype(np.float16)
    text = """\
    version: 1
    tensors:
      a: {buffer: sbuf, shape: [3, 6], dtype: bfloat16, file: a.npy}
      b: {buffer: sbuf, shape: [3, 6], dtype: float16, file: b.npy}
      r: {buffer: sbuf, shape: [3, 6], dtype: float32, output: true}
    instructions:
      - tensor_tensor_scan: {dst: r, data0: a, data1: b, initial: 0, op0: add, op1: add}
    """
    got = run_ok(write(tmp_path, text, a=d0, b=d1), tmp_path / "o")["r"]
    assert_bits_equal(got, page004_numpy(d0.astype(np.float32), d1.astype(np.float32),
                                         np.float32(0), np.add, np.add))
