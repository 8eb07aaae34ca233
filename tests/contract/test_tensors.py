"""Contract (docs/program-format.md), tensors: keys, buffers, shapes, dtypes, initial
contents (file, fill, data) and outputs."""
from __future__ import annotations

import os
import pathlib

import ml_dtypes
import numpy as np
import pytest
import reference as ref
from prog_helpers import (FP32_MAX, FP32_MIN, NP_TYPES, as_type, assert_bits_equal, errors_of,
                          invoke, reported_at, run_ok, write_yaml)

from contract_programs import one, range_select_prog


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
    reported_at(one(tmp_path, decl), code, text="t: {", instruction=None)


@pytest.mark.parametrize("buffer", ["sbuf", "psum"])
def test_partition_dimension_at_most_128(tmp_path, buffer):
    path = one(tmp_path, f"t: {{buffer: {buffer}, shape: [129, 3], dtype: float32, fill: 0}}",
               shape="[129, 3]")
    reported_at(path, "E017", text="t: {")
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
    assert (run_ok(write_yaml(tmp_path, text), tmp_path / "o")["y"] == 2).all()


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
    got = run_ok(write_yaml(tmp_path, text, x=x), tmp_path / "o")["m"]
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
    want = np.float32 if name == "tfloat32" else NP_TYPES[name]  # tfloat32 is stored as fp32
    assert y.dtype == np.dtype(want) and y.shape == (4, 3)
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
    path = write_yaml(prog, text)
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
    x = vals.astype(NP_TYPES[dtype])
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
    want, rowmax = ref.page000(x, np.greater_equal, np.less, lo, hi, 0)
    assert np.isneginf(r[1].astype(np.float32)).all()
    with np.errstate(over="ignore"):
        want_low = want.astype(NP_TYPES[odt]).astype(np.float32)
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
    reported_at(one(tmp_path, "t: {buffer: sbuf, shape: [4, 3], dtype: float32, fill: lots}"),
                "E019", text="fill: lots")


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
    reported_at(path, "E016", text="data:")


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
    got = run_ok(write_yaml(tmp_path, text), tmp_path / "o")
    assert sorted(got) == ["a", "d"]
    assert (got["a"] == 1).all() and (got["d"] == 2).all()


def test_output_must_be_boolean(tmp_path):
    path = one(tmp_path, "t: {buffer: sbuf, shape: [4, 3], dtype: float32, fill: 0, "
               "output: maybe}")
    reported_at(path, "E006", text="output: maybe")


@pytest.mark.parametrize("keys", ["file: t.npy, fill: 1", "fill: 1, data: [[1]]",
                                  "file: t.npy, data: [[1]]",
                                  "file: t.npy, fill: 1, data: [[1]]"])
def test_at_most_one_of_file_fill_data(tmp_path, keys):
    path = one(tmp_path, f"t: {{buffer: sbuf, shape: [1, 1], dtype: float32, {keys}}}",
               shape="[1, 1]", t=np.ones((1, 1), np.float32))
    reported_at(path, "E015", text="t: {")


def test_tensor_without_initial_contents_read_before_write(tmp_path):
    """A tensor with none of file/fill/data starts undefined: reading it first is an error."""
    path = one(tmp_path, "t: {buffer: sbuf, shape: [4, 3], dtype: float32}")
    d, _ = reported_at(path, "E050", text="- store", instruction=0)
    assert "`t`" in d.message
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
    path = write_yaml(tmp_path, text)
    r = invoke("run", path, "--out", tmp_path / "o")
    assert r.exit_code == 1 and "E090" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "o").exists()
    ok = write_yaml(tmp_path / "ok", text.replace("      - store: {dst: y, src: t}\n", "").replace(
        "      y: {buffer: hbm, shape: [4, 8], dtype: float32, output: true}\n", ""))
    assert (run_ok(ok, tmp_path / "o2")["z"] == 1).all()
