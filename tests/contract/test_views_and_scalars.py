"""Contract (docs/program-format.md): operand views (NumPy basic indexing), operators by
NumPy name, reduce_op/reduce_cmd, scalars."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest
import reference as ref
from prog_helpers import (FP32_MAX, FP32_MIN, assert_bits_equal, invoke, reported_at, run_ok,
                          write_yaml)

from contract_programs import X48, base, range_select_prog


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
    got = run_ok(write_yaml(tmp_path, text, a=a, b=b), tmp_path / "o")
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
    got = run_ok(write_yaml(tmp_path, text, x=x, lohi=lohi), tmp_path / "o")
    want, rowmax = ref.page000(x, np.greater_equal, np.less, lohi[:, 0:1], lohi[:, 1:2], 0)
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
    got = run_ok(write_yaml(tmp_path, text, d=d), tmp_path / "o")
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
    got = run_ok(write_yaml(tmp_path, text, d=d, x=x), tmp_path / "o")
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
    reported_at(path, code, text=view.split("[")[0] + "[" if "[" in view else view, instruction=0)


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
        reported_at(path, "E031", text="x[", instruction=0)
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
    got = run_ok(write_yaml(tmp_path, text, t=x), tmp_path / "o")
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
    want, rowmax = ref.page000(x, f0, f1, lo, hi, 0)
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
    reported_at(path, "E025", text="comp_op1", instruction=0)


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
    reported_at(path, "E025", text="reduce_op", instruction=0)


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
    reported_at(path, "E025", text="accumulate", instruction=0)


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
    d, _ = reported_at(path, "E024", text="memset", instruction=0)
    assert "value" in d.message
