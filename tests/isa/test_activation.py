"""activation (nki-reference.md §1.1, §2.3, §4) against a NumPy/SciPy reference written from
the docs: out = op(data*scale + bias) in float32, the Scalar accumulator adding row sums."""
from __future__ import annotations

import math

import numpy as np
import pytest

import matrix
import reference as ref
from prog_helpers import (assert_bits_equal, codes, diagnostics, key_line, out, reported_at,
                          run_program, sbuf, write_program)
from nkirun.api import check_program, run

import scipy.special as sp  # noqa: E402  (test extra: the independent reference for erf, gelu, sigmoid)

SQ2PI = math.sqrt(2 / math.pi)
# Reference functions on float64, from the usual definitions (not nkirun's table).
REF = {
    "copy": lambda x: x, "square": np.square, "exp": np.exp, "log": np.log, "tanh": np.tanh,
    "sigmoid": sp.expit, "relu": lambda x: np.where((x > 0) | np.isnan(x), x, 0.0),  # NaN stays NaN
    "gelu": lambda x: x * sp.ndtr(x),
    "gelu_apprx_tanh": lambda x: 0.5 * x * (1 + np.tanh(SQ2PI * (x + 0.044715 * x ** 3))),
    "silu": lambda x: x * sp.expit(x), "sqrt": np.sqrt, "rsqrt": lambda x: x ** -0.5,
    "reciprocal": lambda x: 1 / x, "abs": np.abs, "sign": np.sign,
    "softplus": lambda x: np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0), "sin": np.sin,
    "arctan": np.arctan, "erf": sp.erf, "mish": lambda x: x * np.tanh(np.logaddexp(0, x)),
    "erf_dx": lambda x: 2 / np.sqrt(np.pi) * np.exp(-x * x),
}
# Functions whose float32 result is the correctly rounded value: must match bit for bit.
EXACT = {"copy", "square", "relu", "sqrt", "reciprocal", "abs", "sign"}
POSITIVE = {"log", "sqrt", "rsqrt"}


def ref_activation(x, name, scale=1.0, bias=None):
    """op(x*scale + bias): the affine step in float32, the function in float64 -> float32."""
    P = x.shape[0]
    z = x.astype(np.float32).reshape(P, -1) * np.asarray(scale, np.float32).reshape(-1, 1)
    if bias is not None:
        z = z + np.asarray(bias, np.float32).reshape(-1, 1)
    with np.errstate(all="ignore"):
        y = REF[name](z.astype(np.float64)).astype(np.float32)
    return z, y.reshape(x.shape)


def page_rowsum(y):
    """The page's `reduce_op(output, axis=<FreeAxis>)` with reduce_op = np.add: np.sum of each
    partition's float32 row, taken one row at a time (NumPy sums a row pairwise)."""
    rows = y.reshape(y.shape[0], -1).astype(np.float32)
    return np.array([np.sum(r) for r in rows], np.float32).reshape(-1, 1)


def _inputs(rng, shape, name):
    x = (rng.standard_normal(shape) * 2).astype(np.float32)
    if name in POSITIVE:
        x = np.abs(x) + np.float32(0.01)
    if name in ("sin", "arctan"):
        x = np.clip(x, -1.5, 1.5)
    return x


def _act(tmp_path, x, name, dst_dtype="float32", extra=None, tensors=None):
    args = {"dst": "y", "op": name, "data": "x", **(extra or {})}
    t = {"x": sbuf(x), "y": out(x.shape, dst_dtype), **(tensors or {})}
    return run_program(tmp_path, t, [{"activation": args}])


def _compare(name, got, want):
    if name in EXACT:
        assert_bits_equal(got, want)
    else:
        np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32),
                                   rtol=3e-7, atol=1e-30)


@pytest.mark.parametrize("name", sorted(REF))
def test_every_function_p37_multidim(tmp_path, name):
    x = _inputs(np.random.default_rng(hash(name) % 2**32), (37, 3, 7), name)
    got = _act(tmp_path, x, name)["y"]
    _compare(name, got, ref_activation(x, name)[1])


@matrix.shapes
@pytest.mark.parametrize("name", ["exp", "square", "relu", "sigmoid"])
def test_shapes_with_scale_and_bias_tiles(tmp_path, P, free, name):
    rng = np.random.default_rng(P * 1000 + len(free))
    x = _inputs(rng, (P,) + free, name)
    s = rng.uniform(-2, 2, (P, 1)).astype(np.float32)
    c = rng.uniform(-1, 1, (P, 1)).astype(np.float32)
    got = _act(tmp_path, x, name, extra={"scale": "s", "bias": "c"},
               tensors={"s": sbuf(s), "c": sbuf(c)})["y"]
    _compare(name, got, ref_activation(x, name, s, c)[1])


@pytest.mark.parametrize("dst_dtype", ["bfloat16", "float16", "float8_e4m3", "float8_e5m2"])
@pytest.mark.parametrize("src_dtype", ["float32", "bfloat16", "int8"])
def test_dtypes_cast_once_from_float32(tmp_path, src_dtype, dst_dtype):
    # the docs' own golden: square(b*2 + c) with c (128, 1), output bf16 ([OLD-TEST])
    rng = np.random.default_rng(3)
    x = ref.cast_to((rng.standard_normal((128, 33)) * 5).astype(np.float32), src_dtype)
    c = rng.standard_normal((128, 1)).astype(np.float32)
    got = _act(tmp_path, x, "square", dst_dtype, {"scale": 2.0, "bias": "c"},
               {"c": sbuf(c)})["y"]
    want = np.square(x.astype(np.float32) * np.float32(2) + c)
    assert_bits_equal(got, ref.cast_to(want, dst_dtype))


def test_dtype_keyword_casts_before_dst(tmp_path):
    x = np.linspace(-3, 3, 37 * 9, dtype=np.float32).reshape(37, 9) * np.float32(1.001)
    got = _act(tmp_path, x, "exp", "float32", {"dtype": "bfloat16"})["y"]
    want = ref.cast_to(ref.cast_to(ref_activation(x, "exp")[1], "bfloat16").astype(np.float32),
                       "float32")
    assert_bits_equal(got, want)


def test_edge_values(tmp_path):
    x = np.array([[np.nan, np.inf, -np.inf, -0.0, 0.0, 100.0, -100.0, 1e-40, 89.0]],
                 np.float32).repeat(3, 0)
    for name in ("exp", "tanh", "sigmoid", "relu", "silu", "copy", "gelu"):
        got = _act(tmp_path, x, name)["y"]
        want = ref_activation(x, name)[1]
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=name)
        _compare(name, np.nan_to_num(got), np.nan_to_num(want))
    assert_bits_equal(_act(tmp_path, x, "copy")["y"], x)  # -0.0 and NaN bits kept


def test_psum_in_and_out(tmp_path):
    x = np.random.default_rng(5).standard_normal((64, 100)).astype(np.float32)
    t = {"x": sbuf(x, buffer="psum"), "y": out(x.shape, "float32", "psum")}
    got = run_program(tmp_path, t, [{"activation": {"dst": "y", "op": "tanh", "data": "x"}}])
    _compare("tanh", got["y"], ref_activation(x, "tanh")[1])


def test_scalar_bias_on_trn2(tmp_path):
    x = np.random.default_rng(6).standard_normal((37, 11)).astype(np.float32)
    got = _act(tmp_path, x, "np.exp", extra={"bias": -1.5, "scale": 0.5})["y"]
    _compare("exp", got, ref_activation(x, "exp", 0.5, np.full((37, 1), -1.5, np.float32))[1])


# ---- the Scalar-engine accumulator ------------------------------------------------------------
def _reduce_prog(tmp_path, x1, x2, cmd1, cmd2, res_dtype="float32", mask=None):
    P = x1.shape[0]
    a1 = {"dst": "y1", "op": "exp", "data": "x1", "reduce_op": "add", "reduce_cmd": cmd1}
    a2 = {"dst": "y2", "op": "exp", "data": "x2", "reduce_op": "add", "reduce_cmd": cmd2,
          "reduce_res": "s"}
    t = {"x1": sbuf(x1), "x2": sbuf(x2), "y1": out(x1.shape, "bfloat16"),
         "y2": out(x2.shape, "bfloat16"), "s": out((P, 1), res_dtype)}
    if mask:  # masked-off elements keep their values: start from -1
        a2["mask"] = mask
        t["y2"] = sbuf(np.full(x2.shape, -1), "bfloat16", output=True)
        t["s"] = sbuf(np.full((P, 1), -1), res_dtype, output=True)
    return write_program(tmp_path, t, [{"activation": a1}, {"activation": a2}])


@pytest.mark.parametrize("P", [1, 37, 128])
def test_reduce_chain_adds_float32_row_sums(tmp_path, P):
    rng = np.random.default_rng(P)
    x1 = rng.standard_normal((P, 3, 5)).astype(np.float32)
    x2 = rng.standard_normal((P, 131)).astype(np.float32)
    got = run(_reduce_prog(tmp_path, x1, x2, "reset_reduce", "reduce"))
    # sums of the float32 results, before the bf16 output cast; registers reset to 0
    s1 = page_rowsum(ref_activation(x1, "exp")[1])
    s2 = page_rowsum(ref_activation(x2, "exp")[1])
    np.testing.assert_allclose(got["s"], s1 + s2, rtol=2e-6)
    # against nkirun's own exp values the accumulation must be bit-exact
    y2_exact = run_program(tmp_path, {"x": sbuf(x2), "y": out(x2.shape, "float32")},
                           [{"activation": {"dst": "y", "op": "exp", "data": "x"}}])["y"]
    y1_exact = run_program(tmp_path, {"x": sbuf(x1), "y": out(x1.shape, "float32")},
                           [{"activation": {"dst": "y", "op": "exp", "data": "x"}}])["y"]
    assert_bits_equal(got["s"], (page_rowsum(y1_exact) + page_rowsum(y2_exact)).astype(np.float32))
    assert_bits_equal(got["y2"], ref.cast_to(y2_exact, "bfloat16"))


def test_reset_then_reduce_res_reads_zero_and_idle_gives_own_sum(tmp_path):
    x = np.ones((37, 4), np.float32)
    got = run(_reduce_prog(tmp_path, x, x, "reset_reduce", "reset"))
    assert_bits_equal(got["s"], np.zeros((37, 1), np.float32))
    got = run(_reduce_prog(tmp_path, x, x * 0, "reset_reduce", "idle"))
    assert_bits_equal(got["s"], np.full((37, 1), 4, np.float32))  # exp(0) * 4, not 4e + 4


def test_reduce_on_never_reset_accumulator_warns_at_run_time(tmp_path):
    x = np.zeros((8, 4), np.float32)
    seen = []
    got = run(_reduce_prog(tmp_path, x, x, "reduce", "reduce"),
              after_each=lambda b, m: seen.extend(m.warnings))
    assert "W052" in codes(seen)
    assert_bits_equal(got["s"], np.full((8, 1), 8, np.float32))  # registers start at 0


@pytest.mark.parametrize("cmd1,cmd2,warn_at", [
    ("reduce", "reduce", [0, 1]),  # never reset: still undefined at the second reduce
    ("idle", "reduce", [1]),
    ("reset_reduce", "reduce", []), ("reset", "reduce", []),
    ("reset_reduce", "reset_reduce", []), ("idle", "idle", [])])
def test_w052_scalar_accumulator_statically(tmp_path, cmd1, cmd2, warn_at):
    x = np.zeros((8, 4), np.float32)
    path = _reduce_prog(tmp_path, x, x, cmd1, cmd2)
    diags = check_program(path).diagnostics
    assert [d.instruction for d in diags if d.code == "W052"] == warn_at
    for d in diags:
        assert "Scalar-engine accumulator" in d.message
    for i in warn_at:
        reported_at(path, "W052", "reduce_cmd", occurrence=i, instruction=i)


def test_w052_scalar_idle_does_not_clobber(tmp_path):
    """§4: `idle` does not use the Scalar registers (unlike the Vector accumulator), so a
    reduce after reset_reduce, idle stays defined."""
    x = np.zeros((8, 4), np.float32)
    a = [{"activation": {"dst": "y", "op": "exp", "data": "x", "reduce_cmd": cmd,
                         **({"reduce_res": "s"} if k == 2 else {})}}
         for k, cmd in enumerate(("reset_reduce", "idle", "reduce"))]
    path = write_program(tmp_path, {"x": sbuf(x), "y": out(x.shape, "float32"),
                                    "s": out((8, 1), "float32")}, a)
    assert codes(check_program(path).diagnostics) == []


def test_w052_accumulators_are_tracked_separately(tmp_path):
    """A Vector-accumulator reset does not define the Scalar accumulator, and vice versa."""
    x = np.zeros((8, 4), np.float32)
    rs = {"dst": "r", "on_true_tile": "x", "comp_op0": "greater_equal", "comp_op1": "less",
          "bound0": "lo", "bound1": "hi", "range_start": 0}
    prog = [{"range_select": {**rs, "reduce_cmd": "reset_reduce"}},
            {"activation": {"dst": "y", "op": "exp", "data": "x", "reduce_cmd": "reduce",
                            "reduce_res": "s"}},
            {"activation": {"dst": "y2", "op": "exp", "data": "x",
                            "reduce_cmd": "reset_reduce"}},
            {"range_select": {**rs, "reduce_cmd": "reduce", "reduce_res": "m"}}]
    t = {"x": sbuf(x), "lo": sbuf(np.zeros((8, 1), np.float32)),
         "hi": sbuf(np.full((8, 1), 2.0, np.float32)),
         "r": out(x.shape, "float32"), "y": out(x.shape, "float32"),
         "y2": out(x.shape, "float32"), "s": out((8, 1), "float32"), "m": out((8, 1), "float32")}
    path = write_program(tmp_path, t, prog)
    w = [d for d in check_program(path).diagnostics if d.code == "W052"]
    assert [d.instruction for d in w] == [1]
    assert "Scalar-engine" in w[0].message
    reported_at(path, "W052", "reduce_cmd", occurrence=1, instruction=1)


def test_w052_scalar_printed_once_by_run(tmp_path):
    from click.testing import CliRunner

    from nkirun.cli import cli
    x = np.zeros((8, 4), np.float32)
    path = _reduce_prog(tmp_path, x, x, "idle", "reduce")  # found by check and at run time
    r = CliRunner().invoke(cli, ["run", path, "--out", str(tmp_path / "o")])
    assert r.exit_code == 0 and r.output.count("warning[W052]") == 1, r.output


def test_masked_elements_are_not_summed(tmp_path):
    x = np.zeros((16, 10), np.float32)
    got = run(_reduce_prog(tmp_path, x, x, "idle", "reset_reduce", mask="p < 8 and f < 4"))
    want = np.full((16, 1), -1, np.float32)
    want[:8] = 4  # exp(0) over f < 4 only; partitions 8.. are masked off entirely
    assert_bits_equal(got["s"], want)
    y2 = np.full((16, 10), -1, np.float32)
    y2[:8, :4] = 1
    assert_bits_equal(got["y2"], ref.cast_to(y2, "bfloat16"))


def test_out_of_range_input_warns(tmp_path):
    x = np.array([[0.0, 1.0, 4.0]], np.float32)
    seen = []
    path = write_program(tmp_path, {"x": sbuf(x), "y": out(x.shape, "float32")},
                         [{"activation": {"dst": "y", "op": "log", "data": "x"}}])
    got = run(path, after_each=lambda b, m: seen.extend(m.warnings))
    assert codes(seen) == ["W202"] and seen[0].loc.line == key_line(path, "op")  # at run time
    assert got["y"][0, 0] == -np.inf


# ---- rules ------------------------------------------------------------------------------------
def _diags(tmp_path, target, extra, tensors=None, name="exp"):
    x = np.ones((4, 8), np.float32)
    t = {"x": sbuf(x), "y": out(x.shape, "float32"), **(tensors or {})}
    path = write_program(tmp_path, t, [{"activation": {"dst": "y", "op": name, "data": "x",
                                                       **extra}}])
    text = open(path).read().replace("version: 1", f"version: 1\ntarget: {target}")
    open(path, "w").write(text)
    return path, check_program(path).diagnostics


@pytest.mark.parametrize("target", ["trn1", "inf2"])
def test_scalar_bias_needs_nc_v3(tmp_path, target):
    path, d = _diags(tmp_path, target, {"bias": 0.5})
    reported_at(path, "E200", "bias", only=True)
    c = np.zeros((4, 1), np.float32)
    assert _diags(tmp_path, target, {"bias": "c"}, {"c": sbuf(c)})[1] == []
    assert _diags(tmp_path, "trn2", {"bias": 0.5})[1] == []


def test_reciprocal_bias_rule(tmp_path):
    c = np.zeros((4, 1), np.float32)
    path, d = _diags(tmp_path, "trn1", {"bias": "c"}, {"c": sbuf(c)}, "reciprocal")
    reported_at(path, "E201", "bias", only=True)
    assert _diags(tmp_path, "trn2", {"bias": "c"}, {"c": sbuf(c)}, "reciprocal")[1] == []


@pytest.mark.parametrize("extra,tensors,code,key", [
    ({"scale": "s"}, {"s": sbuf(np.ones((4, 1)), "bfloat16")}, "E060", "scale"),
    ({"scale": "s"}, {"s": sbuf(np.ones((4, 2)), "float32")}, "E061", "scale"),
    ({"bias": "c"}, {"c": sbuf(np.ones((4, 1)), "int32")}, "E060", "bias"),
    ({"reduce_op": "maximum"}, {}, "E025", "reduce_op"),
    ({"reduce_res": "r"}, {"r": sbuf(np.ones((4, 3)), "float32")}, "E061", "reduce_res"),
    ({"op": "frobnicate"}, {}, "E025", "op"),
])
def test_operand_rules(tmp_path, extra, tensors, code, key):
    x = np.ones((4, 8), np.float32)
    t = {"x": sbuf(x), "y": out(x.shape, "float32"), **tensors}
    path = write_program(tmp_path, t, [{"activation": {"dst": "y", "op": "exp", "data": "x",
                                                       **extra}}])
    d = check_program(path).diagnostics
    assert code in codes(d)
    reported_at(path, code, key)


def test_shape_mismatch(tmp_path):
    d = diagnostics(tmp_path, {"x": sbuf(np.ones((4, 8), np.float32)),
                               "y": out((4, 9), "float32")},
                    [{"activation": {"dst": "y", "op": "exp", "data": "x"}}])
    assert codes(d) == ["E063"]


def test_cost(tmp_path):
    from nkirun.api import cost
    x = np.ones((128, 512), np.float32)
    path = write_program(tmp_path, {"x": sbuf(x), "y": out(x.shape, "float32"),
                                    "s": out((128, 1), "float32"), "z": out((128, 8), "float32")},
                         [{"activation": {"dst": "y", "op": "exp", "data": "x"}},
                          {"activation": {"dst": "y", "op": "exp", "data": "x",
                                          "reduce_cmd": "reset_reduce", "reduce_res": "s"}},
                          {"activation": {"dst": "z", "op": "exp", "data": "x[:, 0:8]"}}])
    slots = cost(path).slots
    assert [s.cycles for s in slots] == [512, 512 + 64, 64]
    assert {s.engine for s in slots} == {"scalar"}
