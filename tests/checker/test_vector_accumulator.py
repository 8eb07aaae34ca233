"""The Vector-engine max accumulator shared by range_select and select_reduce (pages 000 and
001; nki-reference.md §4): chains across instructions, and the W052 hazard warnings."""
from __future__ import annotations

import numpy as np
from click.testing import CliRunner

import reference as ref
from prog_helpers import (assert_bits_equal, codes, out, random_floats, reported_at, sbuf, tmp,
                          write_program)
from nkirun.api import check_program, run
from nkirun.cli import cli
from nkirun.runner.interpret import execute

FP32_MIN = ref.FP32_MIN


def _rs(dst, src, cmd, start=0, res=None):
    args = {"dst": dst, "on_true_tile": src, "comp_op0": "greater_equal", "comp_op1": "less",
            "bound0": "b0", "bound1": "b1", "reduce_cmd": cmd, "reduce_op": "max",
            "range_start": start, "on_false_value": "fp32.min"}
    if res:
        args["reduce_res"] = res
    return {"range_select": args}


def _sr(dst, src, pred, cmd, res=None, reverse=False):
    args = {"dst": dst, "predicate": pred, "on_true": src, "on_false": "fp32.min",
            "reduce_cmd": cmd, "reverse_pred": reverse}
    if res:
        args["reduce_res"] = res
    return {"select_reduce": args}


def _bounds(P, lo, hi):
    return {"b0": sbuf(np.full((P, 1), lo, np.float32)),
            "b1": sbuf(np.full((P, 1), hi, np.float32))}


def _runtime_warnings(path):
    c = check_program(path)
    assert not c.errors, c.errors
    return execute(c.program, c.bound).warnings


def test_page_example_2_chain(tmp_path):
    """Example 2a (reset_reduce, no reduce_res) -> 2b (reduce) -> 2c (reduce + reduce_res),
    range_start advancing by the tile size, each step's tile one larger than the last."""
    rng = np.random.default_rng(0)
    P, n, start = 37, 37, 10
    x0 = random_floats(rng, (P, n), special=False)
    tiles = [x0, x0 + 1, x0 + 2]
    lo, hi = 20.0, 100.0  # window [20, 100) over indices 10..120
    tensors = {f"x{i}": sbuf(t) for i, t in enumerate(tiles)}
    tensors.update(_bounds(P, lo, hi))
    tensors.update(r=out((P, n), "float32"), m=out((P, 1), "float32"))
    prog = [_rs("r", "x0", "reset_reduce", start), _rs("r", "x1", "reduce", start + n),
            _rs("r", "x2", "reduce", start + 2 * n, res="m")]
    path = write_program(tmp_path, tensors, prog)
    # all three write r; the first two results are overwritten, which W051 does not flag
    assert codes(check_program(path).diagnostics) == []
    got = run(path)
    acc = ref.VectorAccumulator()
    for i, (t, cmd) in enumerate(zip(tiles, ("reset_reduce", "reduce", "reduce"))):
        sel, rowmax = ref.range_select(t, np.greater_equal, np.less, lo, hi, start + i * n)
        acc.apply(cmd, rowmax)
    assert_bits_equal(got["r"], sel)
    assert_bits_equal(got["m"], acc.value)
    # the chain's max is not just the last step's max
    assert not np.array_equal(acc.value, rowmax)


def test_range_select_then_select_reduce_share_the_accumulator(tmp_path):
    rng = np.random.default_rng(1)
    P, n = 128, 24
    x, y = random_floats(rng, (P, n)), random_floats(rng, (P, n))
    pred = (rng.random((P, n)) < 0.3).astype(np.uint8)
    pred[::3] = 0
    tensors = {"x": sbuf(x), "y": sbuf(y), "pr": sbuf(pred), **_bounds(P, 3, 9),
               "r1": out((P, n), "bfloat16"), "r2": out((P, n), "float32"),
               "m": out((P, 1), "float32")}
    prog = [_rs("r1", "x", "reset_reduce"), _sr("r2", "y", "pr", "reduce", res="m")]
    path = write_program(tmp_path, tensors, prog)
    assert codes(check_program(path).diagnostics) == []
    got = run(path)
    sel1, m1 = ref.range_select(x, np.greater_equal, np.less, 3.0, 9.0, out_dtype="bfloat16")
    sel2, m2 = ref.select_reduce(pred, y, FP32_MIN)
    acc = ref.VectorAccumulator()
    acc.apply("reset_reduce", m1)
    acc.apply("reduce", m2)
    assert_bits_equal(got["r1"], sel1)
    assert_bits_equal(got["r2"], sel2)
    assert_bits_equal(got["m"], acc.value)  # max over both, taken before the bf16 cast
    assert_bits_equal(got["m"][::3], np.maximum(m1[::3], FP32_MIN))  # rows r2 left unselected


def test_select_reduce_chain_then_range_select_reads_out(tmp_path):
    rng = np.random.default_rng(2)
    P, n = 37, 9
    ys = [random_floats(rng, (P, n)) for _ in range(3)]
    preds = [(rng.random((P, n)) < 0.5).astype(np.int16) for _ in range(3)]
    x = random_floats(rng, (P, n))
    tensors = {**{f"y{i}": sbuf(v) for i, v in enumerate(ys)},
               **{f"p{i}": sbuf(v) for i, v in enumerate(preds)},
               "x": sbuf(x), **_bounds(P, 0, 4), "r": out((P, n), "float32"),
               "m": out((P, 1), "float32")}
    prog = [_sr("r", "y0", "p0", "reset_reduce"), _sr("r", "y1", "p1", "reduce", reverse=True),
            _sr("r", "y2", "p2", "reduce"), _rs("r", "x", "reduce", res="m")]
    got = run(write_program(tmp_path, tensors, prog))
    acc = ref.VectorAccumulator()
    for i, cmd in enumerate(("reset_reduce", "reduce", "reduce")):
        acc.apply(cmd, ref.select_reduce(preds[i], ys[i], FP32_MIN, reverse_pred=i == 1)[1])
    sel, rowmax = ref.range_select(x, np.greater_equal, np.less, 0.0, 4.0)
    acc.apply("reduce", rowmax)
    assert_bits_equal(got["r"], sel)
    assert_bits_equal(got["m"], acc.value)


def test_reset_then_reduce_and_partition_lanes(tmp_path):
    """`reset` clears to -inf; lanes follow the partitions the operands occupy."""
    x = np.arange(8 * 4, dtype=np.float32).reshape(8, 4)
    tensors = {"x": sbuf(x), **_bounds(8, 0, 100), "r": out((8, 4), "float32"),
               "m": out((8, 1), "float32"), "j": tmp((8, 4), "float32")}
    tensors["b0"] = sbuf(np.zeros((8, 1), np.float32))
    prog = [_rs("j", "x", "reset", res=None), _rs("r", "x", "reduce", res="m")]
    got = run(write_program(tmp_path, tensors, prog))
    np.testing.assert_array_equal(got["m"][:, 0], x.max(axis=1))
    # halves: lanes 0-3 and 4-7 are separate registers
    tensors["m"] = out((8, 1), "float32")
    prog = [{"range_select": {**_rs("j", "x", "reset_reduce")["range_select"],
                              "dst": "j[0:4]", "on_true_tile": "x[0:4]",
                              "bound0": "b0[0:4]", "bound1": "b1[0:4]"}},
            {"range_select": {**_rs("j", "x", "reset_reduce")["range_select"],
                              "dst": "j[4:8]", "on_true_tile": "x[4:8]",
                              "bound0": "b0[4:8]", "bound1": "b1[4:8]"}},
            _rs("r", "x", "reduce", res="m")]
    path = write_program(tmp_path, tensors, prog)
    assert _runtime_warnings(path) == []
    np.testing.assert_array_equal(run(path)["m"][:, 0], x.max(axis=1))


# ---- W052 ----------------------------------------------------------------------------------
def _w052_program(tmp_path, first_cmd):
    rng = np.random.default_rng(3)
    P, n = 16, 8
    tensors = {"x": sbuf(random_floats(rng, (P, n))), "pr": sbuf(np.ones((P, n), np.uint8)),
               **_bounds(P, 0, 5), "r": out((P, n), "float32"), "m": out((P, 1), "float32")}
    prog = [_rs("r", "x", "reset_reduce"), _rs("r", "x", first_cmd),
            _sr("r", "x", "pr", "reduce", res="m")]
    return write_program(tmp_path, tensors, prog)


def test_w052_reduce_after_idle_static_and_runtime(tmp_path):
    path = _w052_program(tmp_path, "idle")
    diags = check_program(path).diagnostics
    assert codes(diags) == ["W052"]
    assert diags[0].instruction == 2 and "idle" in diags[0].message
    reported_at(path, "W052", "reduce_cmd", occurrence=2, instruction=2, only=True)
    warns = _runtime_warnings(path)
    assert [w.code for w in warns] == ["W052"] and warns[0].instruction == 2
    r = CliRunner().invoke(cli, ["run", path, "--out", str(tmp_path / "o")])
    # reported once, although both check and the run found it
    assert r.exit_code == 0 and r.output.count("warning[W052]") == 1, r.output


def test_no_w052_when_chain_is_reset(tmp_path):
    path = _w052_program(tmp_path, "reduce")
    assert codes(check_program(path).diagnostics) == []
    assert _runtime_warnings(path) == []
    path = _w052_program(tmp_path, "reset_reduce")
    assert codes(check_program(path).diagnostics) == []


def test_w052_never_reset(tmp_path):
    P, n = 4, 6
    tensors = {"x": sbuf(np.ones((P, n), np.float32)), "pr": sbuf(np.ones((P, n), np.int8)),
               "r": out((P, n), "float32"), "m": out((P, 1), "float32")}
    path = write_program(tmp_path, tensors, [_sr("r", "x", "pr", "reduce", res="m")])
    diags = check_program(path).diagnostics
    assert codes(diags) == ["W052"] and "nothing reset" in diags[0].message
    assert [w.code for w in _runtime_warnings(path)] == ["W052"]


def test_w052_at_runtime_for_lanes_reset_elsewhere(tmp_path):
    """Static checking does not track lanes; run time does: resetting partitions 0-3 does
    not define the lanes of partitions 4-7."""
    x = np.ones((8, 4), np.float32)
    tensors = {"x": sbuf(x), **_bounds(8, 0, 9), "r": out((8, 4), "float32"),
               "m": out((4, 1), "float32"), "j": tmp((8, 4), "float32")}
    prog = [{"range_select": {**_rs("j", "x", "reset_reduce")["range_select"],
                              "dst": "j[0:4]", "on_true_tile": "x[0:4]",
                              "bound0": "b0[0:4]", "bound1": "b1[0:4]"}},
            {"range_select": {**_rs("r", "x", "reduce")["range_select"],
                              "dst": "r[4:8]", "on_true_tile": "x[4:8]",
                              "bound0": "b0[4:8]", "bound1": "b1[4:8]", "reduce_res": "m"}}]
    tensors["r"] = out((8, 4), "float32")
    path = write_program(tmp_path, tensors, prog)
    warns = _runtime_warnings(path)
    assert [w.code for w in warns] == ["W052"] and "partition 0" in warns[0].message


# ---- the accumulator users of the new API (issue 15): exponential, tensor_scalar_reduce,
# tensor_scalar_cumulative share the same Vector registers; load_reduce defines them
def _tsr(src, cmd, res=None, **kw):
    args = {"dst": "z", "data": src, "op0": "multiply", "operand0": 1.0, "reduce_op": "add",
            "reduce_cmd": cmd, **kw}
    if res:
        args["reduce_res"] = res
    return {"tensor_scalar_reduce": args}


def test_range_select_max_then_tensor_scalar_reduce_adds_onto_it(tmp_path):
    """One register: range_select leaves its row max, tensor_scalar_reduce(reduce, add)
    adds its row sum onto that value."""
    P, n = 8, 16
    x = np.arange(P * n, dtype=np.float32).reshape(P, n) / 16
    tensors = {"x": sbuf(x), "r": tmp((P, n), "float32"), "z": out((P, n), "float32"),
               "s": out((P, 1), "float32"), **_bounds(P, 0, n)}
    path = write_program(tmp_path, tensors, [_rs("r", "x", "reset_reduce"),
                                             _tsr("r", "reduce", res="s")])
    assert codes(check_program(path).diagnostics) == []
    acc = x.max(axis=1, keepdims=True)
    for i in range(n):
        acc = (acc + x[:, i:i + 1]).astype(np.float32)
    assert_bits_equal(run(path)["s"], acc)


def test_w052_covers_the_new_users_static_and_runtime(tmp_path):
    """An idle exponential clobbers the register for a later tensor_scalar_cumulative(reduce)
    (static W052, and at run time); load_reduce defines it again."""
    x = np.ones((4, 8), np.float32)
    cum = {"tensor_scalar_cumulative": {"dst": "z", "src": "x", "op0": "add", "imm0": 0.0,
                                        "op1": "add", "reduce_cmd": "reduce"}}
    tensors = {"x": sbuf(x), "y": out((4, 8), "float32"), "z": out((4, 8), "float32"),
               "s": out((4, 1), "float32")}
    path = write_program(tmp_path, tensors, [_tsr("x", "reset_reduce"),
                                             {"exponential": {"dst": "y", "src": "x"}}, cum],
                         target="trn3")
    c = check_program(path)
    assert codes(c.diagnostics) == ["W052"]
    assert "earlier idle" in c.diagnostics[0].message
    assert "W052" in codes(execute(c.program, c.bound).warnings)
    path = write_program(tmp_path, tensors, [{"exponential": {"dst": "y", "src": "x"}},
                                             _tsr("x", "load_reduce", res="s", reduce_init=2.0),
                                             cum], target="trn3")
    c = check_program(path)
    assert codes(c.diagnostics) == []
    outs = run(path)
    assert_bits_equal(outs["s"], np.full((4, 1), 10.0, np.float32))
    assert_bits_equal(outs["z"], np.arange(11, 19, dtype=np.float32)[None, :].repeat(4, 0))
