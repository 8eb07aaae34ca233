"""`run --shadow` (runner/shadow.py): per-instruction error against a float32 shadow run."""
from __future__ import annotations

import json
import pathlib

import ml_dtypes
import numpy as np
import pytest

import nkirun
from nkirun import run  # (programs; shadow=True: nkirun.api.shadow)
from tests.prog_helpers import invoke, line_of, out, sbuf, tmp, write_program

ROOT = pathlib.Path(__file__).resolve().parents[2]
KERNELS = ROOT / "programs" / "kernels"
P, N = 128, 64


def _strict(text: str):
    """json.loads refusing NaN/Infinity (not JSON)."""
    def bad(c):
        raise ValueError(f"{c} is not JSON")
    return json.loads(text, parse_constant=bad)


def cancellation_program(tmp_path):
    """Exact float32 steps, then ONE bfloat16 subtract with cancellation (#3), then exact
    float32 steps on its result: the subtract is the only place precision is lost."""
    x = np.random.default_rng(0).uniform(1, 2, (P, N)).astype(np.float32)
    return write_program(tmp_path, {
        "x": sbuf(x, buffer="hbm"), "t": tmp((P, N), "float32"), "a": tmp((P, N), "float32"),
        "d": tmp((P, N), "bfloat16"), "e": tmp((P, N), "float32"),
        "y": out((P, N), "float32", buffer="hbm")}, [
        {"load": {"dst": "t", "src": "x"}},                                         # 0
        {"tensor_scalar": {"dst": "a", "data": "t", "op0": "multiply",              # 1
                           "operand0": 1.0009765625}},  # 1 + 2^-10: exact in float32
        {"tensor_scalar": {"dst": "a", "data": "a", "op0": "add", "operand0": 0.5}},  # 2
        {"tensor_tensor": {"dst": "d", "data1": "a", "data2": "t", "op": "subtract"}},  # 3
        {"tensor_scalar": {"dst": "e", "data": "d", "op0": "multiply", "operand0": 4.0}},  # 4
        {"store": {"dst": "y", "src": "e"}}])                                         # 5


def test_the_instruction_that_loses_precision_comes_first(tmp_path):
    rep = run(cancellation_program(tmp_path), shadow=True)
    assert [r.instruction for r in rep.top(5)] == [3]
    by_added = sorted(rep["shadow"], key=lambda row: -row["added_max_abs_error"])
    assert by_added[0]["instruction"] == 3 and rep["shadow_top"] == [3]
    for i in (0, 1, 2):  # exact float32 steps: nothing carried, nothing added
        assert rep.row(i).carried.abs == 0 and rep.row(i).added.abs == 0
    sub = rep.row(3)
    assert sub.added.abs > 0 and sub.added.ulp <= 0.5 and sub.tensor == "d"
    assert sub.store_abs > 0
    # later float32 steps carry the subtract's error (x4) but add none themselves
    assert rep.row(4).carried.abs == pytest.approx(4 * sub.carried.abs)
    assert rep.row(4).added.abs == 0 and rep.row(5).added.abs == 0
    # the reported peak is the element where the bf16 rounding is largest
    d = np.asarray(rep.outputs["y"])
    x = np.load(pathlib.Path(tmp_path).glob("*/x.npy").__next__())
    exact = ((x * np.float32(1.0009765625) + np.float32(0.5)) - x) * 4
    assert np.abs(d - exact).max() == pytest.approx(rep.row(5).carried.abs)
    i, j = rep.row(5).index
    assert abs(d[i, j] - exact[i, j]) == pytest.approx(rep.row(5).carried.abs)


def test_float32_program_reports_all_zeros(tmp_path):
    r = invoke("run", ROOT / "programs" / "layernorm_bn_stats.yaml", "--out", tmp_path,
               "--shadow", "--format", "json")
    assert r.exit_code == 0, r.output
    doc = _strict(r.stdout)
    assert len(doc["shadow"]) == doc["instructions"]
    for row in doc["shadow"]:
        assert row["max_abs_error"] == 0 and row["added_max_abs_error"] == 0
        assert row["peak"] is None and row["nan_born"] == row["overflow"] == 0
    assert doc["shadow_top"] == []


def test_fp8_saturation_overflow_and_underflow_are_counted(tmp_path):
    x = np.array([[1000.0, -500.0, 10.0, 1e-10]], np.float32)
    rep = run(write_program(tmp_path, {
        "x": sbuf(x), "f8": out((1, 4), "float8_e4m3"), "h": out((1, 4), "float16"),
        "y": tmp((1, 4), "float32")}, [
        {"tensor_copy": {"dst": "f8", "src": "x"}},
        {"tensor_scalar": {"dst": "h", "data": "x", "op0": "multiply", "operand0": 100.0}},
        {"tensor_copy": {"dst": "y", "src": "x"}}]), shadow=True)
    f8, h, y = rep.rows
    assert f8.fp8_saturated == 2  # 1000 and -500 exceed float8_e4m3's 240
    assert f8.overflow == 2 and f8.underflow == 1  # 1e-10 is below fp8's smallest step
    assert h.fp8_saturated == 0 and h.overflow == 1 and h.underflow == 1  # 1e5 > 65504
    assert h.carried.abs == np.inf and y.carried.abs == 0


def test_nan_born_only_where_the_nan_appears(tmp_path):
    x = np.array([[np.inf, 1.0, -np.inf, 2.0]], np.float32)
    rep = run(write_program(tmp_path, {
        "x": sbuf(x), "n": tmp((1, 4), "float32"), "y": out((1, 4), "bfloat16")}, [
        {"tensor_tensor": {"dst": "n", "data1": "x", "data2": "x", "op": "subtract"}},
        {"tensor_scalar": {"dst": "y", "data": "n", "op0": "add", "operand0": 1.0}}]),
        shadow=True)
    assert rep.rows[0].nan_born == 2  # inf - inf
    assert rep.rows[1].nan_born == 0  # it only passes them on
    assert rep.rows[1].carried.abs == 0  # NaN against NaN is no error


def test_json_contract_and_non_finite_values(tmp_path):
    x = np.array([[1e5, 1.0]], np.float32)
    path = write_program(tmp_path, {"x": sbuf(x, buffer="hbm"), "h": tmp((1, 2), "float16"),
                                    "y": out((1, 2), "float32", buffer="hbm")}, [
        {"load": {"dst": "h", "src": "x"}}, {"store": {"dst": "y", "src": "h"}}])
    r = invoke("run", path, "--out", tmp_path / "o", "--shadow", "--format", "json")
    assert r.exit_code == 0, r.output
    doc = _strict(r.stdout)  # valid JSON: no NaN/Infinity literals
    rows = doc["shadow"]
    assert [row["instruction"] for row in rows] == [0, 1]
    for key in ("instruction", "op", "line", "file", "max_abs_error", "max_rel_error",
                "max_ulp_error", "added_max_abs_error", "overflow", "underflow", "nan_born",
                "fp8_saturated", "peak"):
        assert key in rows[0]
    assert rows[0]["op"] == "load" and rows[0]["line"] == line_of(path, "load")
    assert rows[0]["max_abs_error"] == "inf" and rows[0]["overflow"] == 1
    assert rows[0]["peak"] == {"tensor": "h", "index": [0, 0], "dtype": "float16",
                               "value": "inf", "shadow": 100000.0}
    assert doc["shadow_top"] == [0]


def test_text_and_trace_output(tmp_path):
    path = cancellation_program(tmp_path)
    r = invoke("run", path, "--out", tmp_path / "o", "--shadow", "--trace")
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert any(ln.split()[:2] == ["3", "tensor_tensor"] for ln in lines)  # the table
    top = lines[lines.index(next(ln for ln in lines if "top 1 instruction" in ln)) + 1]
    assert top.strip().startswith("#3 tensor_tensor at ") and f":{line_of(path, '- tensor_tensor')}:" in top
    trace = [ln for ln in r.stderr.splitlines() if ln.startswith("#3 ")]
    assert "| err abs=" in trace[0] and "added abs=" in trace[0] and "at d[" in trace[0]
    r = invoke("run", path, "--out", tmp_path / "o", "--shadow-top", "2")
    assert r.exit_code == 2 and "--shadow-top needs --shadow" in r.output


def test_each_outputs_final_error_is_in_the_text_too(tmp_path):
    """The text showed per-instruction errors only; each output's error against the
    shadow when the run ends is a line of its own (JSON: shadow_outputs), here checked
    against the same steps in NumPy: float32 throughout vs the bfloat16 subtract."""
    x = np.random.default_rng(0).uniform(1, 2, (P, N)).astype(np.float32)
    a = x * np.float32(1.0009765625) + np.float32(0.5)
    exact = (a - x) * np.float32(4)
    real = (a - x).astype(ml_dtypes.bfloat16).astype(np.float32) * np.float32(4)
    want = float(np.abs(real - exact).max())
    path = cancellation_program(tmp_path)
    r = invoke("run", path, "--out", tmp_path / "o", "--shadow")
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    at = lines.index("shadow: each output's final error against the float32 shadow:")
    assert lines[at + 1].startswith(f"  y: max abs {want:.3g}, rel ")
    rep = run(path, shadow=True)
    (final,) = rep["shadow_outputs"]
    assert final["name"] == final["tensor"] == "y" and final["max_abs_error"] == want
    assert final["index"] == list(np.unravel_index(np.abs(real - exact).argmax(), (P, N)))


def test_text_front_end(tmp_path):
    r = invoke("run", ROOT / "programs" / "rowmax_in_window.nkis", "--out", tmp_path,
               "--shadow", "--format", "json")
    assert r.exit_code == 0, r.output
    rows = _strict(r.stdout)["shadow"]
    nkis = ROOT / "programs" / "rowmax_in_window.nkis"
    assert rows[0]["line"] == line_of(nkis, "load dst=t")
    assert all(row["max_abs_error"] == 0 for row in rows)


def test_accumulating_matmul_follows_the_same_semantics(tmp_path):
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal((P, P)).astype(ml_dtypes.bfloat16) for _ in range(2))
    rep = run(write_program(tmp_path, {
        "a": sbuf(a), "b": sbuf(b), "acc": tmp((P, P), "float32", buffer="psum"),
        "y": out((P, P), "float32")}, [
        {"nc_matmul": {"dst": "acc", "stationary": "a", "moving": "b"}},
        {"nc_matmul": {"dst": "acc", "stationary": "b", "moving": "a"}},  # auto-accumulates
        {"tensor_copy": {"dst": "y", "src": "acc"}}]), shadow=True)
    assert all(r.carried.abs == 0 and r.added.abs == 0 for r in rep.rows)
    f = a.astype(np.float32), b.astype(np.float32)
    np.testing.assert_allclose(rep.outputs["y"], f[0].T @ f[1] + f[1].T @ f[0], rtol=1e-5,
                               atol=1e-4)


def test_a_failure_only_the_shadow_hits_is_W620(tmp_path):
    # 2.001 rounds to the integer 2.0 in bfloat16, so the real run's segment ids are
    # integers; the shadow keeps 2.001 and sequence_bounds refuses it (E452) there only
    ids = np.array([[1.0, 2.001, 2.001, 0.0]], np.float32)
    rep = run(write_program(tmp_path, {
        "x": sbuf(ids), "s": tmp((1, 4), "bfloat16"), "f": tmp((1, 4), "float32"),
        "d": out((1, 2, 4), "float32")}, [
        {"tensor_copy": {"dst": "s", "src": "x"}},
        {"tensor_copy": {"dst": "f", "src": "s"}},
        {"sequence_bounds": {"dst": "d", "segment_ids": "f"}}]), shadow=True)
    assert [w.code for w in rep.warnings] == ["W620"]
    assert "sequence_bounds" in rep.warnings[0].message
    assert [r.instruction for r in rep.rows] == [0, 1]
    assert rep.outputs["d"].shape == (1, 2, 4)  # the real run went on


def _kernel_json(tmp_path, spec, **arrays):
    args = []
    for name, a in arrays.items():
        np.save(tmp_path / f"{name}.npy", a)
        args += ["--input", f"{name}={tmp_path / f'{name}.npy'}"]
    r = invoke("run", spec, "--out", tmp_path / "o", *args, "--shadow", "--format", "json")
    assert r.exit_code == 0, r.output + r.stderr
    return _strict(r.stdout)


def test_bf16_attention_names_the_roundings_that_dominate(tmp_path):
    rng = np.random.default_rng(2)
    q, k = (rng.standard_normal((64, 128)).astype(ml_dtypes.bfloat16) for _ in range(2))
    v = rng.standard_normal((128, 64)).astype(ml_dtypes.bfloat16)
    src = KERNELS / "attention_bf16.py"
    doc = _kernel_json(tmp_path, f"{src}::attention_bf16", q=q, k=k, v=v)
    rows = {row["instruction"]: row for row in doc["shadow"]}
    top = [rows[i] for i in doc["shadow_top"]]
    # the exp stored as bf16 probabilities and the bf16 output: nothing else loses precision
    assert [(t["op"], t["line"]) for t in top] == sorted(
        [("activation", line_of(src, "nisa.activation(dst=p,")),
         ("tensor_scalar", line_of(src, "nisa.tensor_scalar(dst=o,"))],
        key=lambda t: -rows[next(i for i in doc["shadow_top"]
                                 if rows[i]["line"] == t[1])]["added_max_abs_error"])
    assert all(t["file"] == str(src) for t in top)
    matmuls = [r for r in doc["shadow"] if r["op"] == "nc_matmul"]
    assert matmuls[0]["max_abs_error"] == 0  # bf16 inputs, float32 PSUM: exact
    assert matmuls[1]["max_abs_error"] > 0 and matmuls[1]["added_max_abs_error"] == 0


def test_kernel_api_and_bf16_rmsnorm(tmp_path):
    import importlib.util
    spec = importlib.util.spec_from_file_location("rmsnorm_k", KERNELS / "rmsnorm.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((256, 96)).astype(ml_dtypes.bfloat16)
    w = rng.standard_normal((1, 96)).astype(ml_dtypes.bfloat16)
    rep = nkirun.simulate(mod.rmsnorm, shadow=True)(x, w)
    src = str(KERNELS / "rmsnorm.py")
    best = rep.top(3)
    # the weight multiply that stores bf16 is the one rounding (once per 128-row tile)
    assert {(r.op, r.line, r.file) for r in best} == {
        ("tensor_tensor", line_of(src, "nisa.tensor_tensor(dst=out"), src)}
    assert rep.outputs.shape == (256, 96)


def _bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.kind not in "biu" else a


@pytest.mark.parametrize("name", __import__("nkirun.isa", fromlist=["MODULES"]).MODULES)
def test_every_example_runs_shadowed_without_changing_the_run(tmp_path, name):
    """The shadow never changes what the program computes, on every instruction's own
    example: same outputs bit for bit, one row per instruction, JSON-safe numbers."""
    from spec_examples import example_program

    from nkirun.show.shadow_report import row_json
    path = example_program(tmp_path, name)
    plain = run(path)
    rep = run(path, shadow=True)
    assert sorted(rep.outputs) == sorted(plain)
    for k, a in plain.items():
        np.testing.assert_array_equal(_bits(rep.outputs[k]), _bits(a))
    assert len(rep.rows) == len(nkirun.api.check_program(path).bound)
    _strict(json.dumps([row_json(r) for r in rep.rows]))
    for r in rep.rows:
        assert r.carried.abs >= 0 and r.added.abs >= 0


@pytest.mark.parametrize("program", sorted(p.name for p in (ROOT / "programs").iterdir()
                                           if p.suffix in (".yaml", ".nkis")))
def test_example_programs_run_shadowed_without_changing_the_run(program):
    path = ROOT / "programs" / program
    plain = run(path)
    rep = run(path, shadow=True)
    for k, a in plain.items():
        np.testing.assert_array_equal(_bits(rep.outputs[k]), _bits(a))
    float32_only = all(t.dtype.name in ("float32", "int32", "uint32")
                       for t in nkirun.api.check_program(path).program.tensors.values())
    if float32_only:  # nothing is rounded: the shadow agrees everywhere
        assert all(r.carried.abs == 0 and r.added.abs == 0 for r in rep.rows), program


def test_access_pattern_and_indirect_views_of_narrow_tensors(tmp_path):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((P, 512)).astype(np.float32)
    src = rng.standard_normal((16, 8)).astype(np.float32)
    idx = rng.permutation(40)[:16].astype(np.int32).reshape(16, 1)
    path = write_program(tmp_path, {
        "x": sbuf(x), "h": tmp((P, 512), "bfloat16"), "y": out((P, 256), "float32"),
        "s": sbuf(src), "i": sbuf(idx),
        "o": sbuf(np.zeros((40, 8), ml_dtypes.bfloat16), buffer="hbm", output=True),
        "g": out((16, 8), "float32")}, [
        {"tensor_copy": {"dst": "h.ap([[512, 128], [2, 256]], offset=1)", "src": "x[:, 0:256]"}},
        {"tensor_copy": {"dst": "y", "src": "h.ap([[512, 128], [2, 256]], offset=1)"}},
        {"dma_copy": {"dst": "o.ap([[8, 16], [1, 8]], vector_offset=i)", "src": "s"}},
        {"dma_copy": {"dst": "g", "src": "o.ap([[8, 16], [1, 8]], vector_offset=i)"}}])
    plain, rep = run(path), run(path, shadow=True)
    for k in plain:
        np.testing.assert_array_equal(_bits(rep.outputs[k]), _bits(plain[k]))
    strided, copy, scatter, gather = rep.rows
    # the odd columns of h, through a strided view: the peak is reported where it really is
    assert strided.added.abs > 0 and strided.tensor == "h" and strided.index[1] % 2 == 1
    h = x[:, :256].astype(ml_dtypes.bfloat16).astype(np.float32)
    row, col = strided.index
    assert abs(h[row, (col - 1) // 2] - x[row, (col - 1) // 2]) == pytest.approx(
        strided.carried.abs)
    assert copy.added.abs == 0 and copy.carried.abs == strided.carried.abs
    # a scatter through runtime indices: the peak sits in a row the index names
    assert scatter.tensor == "o" and scatter.index[0] in idx[:, 0]
    assert scatter.added.abs > 0 and gather.added.abs == 0
    assert gather.carried.abs == scatter.carried.abs


def test_masked_store_compares_only_what_it_wrote(tmp_path):
    x = np.full((P, N), 1.0 + 2.0 ** -10, np.float32)  # rounds to 1.0 in bfloat16
    x[:64, :32] = 1.5  # exact in bfloat16: the masked part stores no error
    rep = run(write_program(tmp_path, {
        "x": sbuf(x), "y": sbuf(np.zeros((P, N), ml_dtypes.bfloat16), output=True)}, [
        {"tensor_copy": {"dst": "y", "src": "x", "mask": "p < 64 and f < 32"}}]),
        shadow=True)
    row = rep.rows[0]
    assert row.carried.abs == 0 and row.added.abs == 0 and row.store_abs == 0
    rep = run(write_program(tmp_path, {
        "x": sbuf(x), "y": sbuf(np.zeros((P, N), ml_dtypes.bfloat16), output=True)}, [
        {"tensor_copy": {"dst": "y", "src": "x", "mask": "p >= 64"}}]), shadow=True)
    row = rep.rows[0]
    assert row.carried.abs == pytest.approx(2.0 ** -10) and row.index[0] >= 64


def test_the_named_instructions_are_where_the_attention_error_comes_from():
    """Keeping exactly what the report names in float32 (the exp's probabilities, the
    output) takes the kernel to float32 accuracy; keeping either alone does not."""
    import importlib.util

    import nki.language as nl
    spec = importlib.util.spec_from_file_location("attn_k", KERNELS / "attention_bf16.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rng = np.random.default_rng(5)
    q, k = (rng.standard_normal((64, 128)).astype(ml_dtypes.bfloat16) for _ in range(2))
    v = rng.standard_normal((128, 64)).astype(ml_dtypes.bfloat16)
    f = [a.astype(np.float64) for a in (q, k, v)]
    s = f[0].T @ f[1] / 8.0
    p = np.exp(s - s.max(axis=1, keepdims=True))
    want = p / p.sum(axis=1, keepdims=True) @ f[2]
    rep = nkirun.simulate(mod.attention_bf16, shadow=True)(q, k, v)
    named = {r.line for r in rep.top(5)}
    src = KERNELS / "attention_bf16.py"
    assert named == {line_of(src, "nisa.activation(dst=p,"), line_of(src, "nisa.tensor_scalar(dst=o,")}

    def err(**kw):
        got = nkirun.simulate(mod.attention_bf16)(q, k, v, **kw).astype(np.float64)
        return np.abs(got - want).max()
    both = err(p_dtype=nl.float32, out_dtype=nl.float32)
    assert both < 1e-5 < min(err(p_dtype=nl.float32), err(out_dtype=nl.float32), err())


def test_terminal_rendering(tmp_path):
    path = cancellation_program(tmp_path)
    r = invoke("--color", "always", "run", path, "--out", tmp_path / "o", "--shadow",
               "--trace")
    assert r.exit_code == 0, r.output
    assert "\x1b[" in r.stdout and "tensor_tensor" in r.stdout and "added abs" in r.stdout
    assert "err abs=" in r.stderr or "added abs" in r.stderr


def test_long_programs_show_only_the_rows_that_added_error(tmp_path):
    steps = [{"tensor_scalar": {"dst": "a", "data": "a", "op0": "multiply", "operand0": 1.0}}
             for _ in range(70)]
    path = write_program(tmp_path, {"a": sbuf(np.ones((P, N), np.float32) / 3),
                                    "b": out((P, N), "bfloat16")},
                         steps + [{"tensor_copy": {"dst": "b", "src": "a"}}])
    r = invoke("run", path, "--out", tmp_path / "o", "--shadow")
    assert r.exit_code == 0, r.output
    assert "70 instructions that added no error are not shown" in r.stdout
    assert any(ln.split()[:2] == ["70", "tensor_copy"] for ln in r.stdout.splitlines())


def test_an_accumulator_register_that_differs_is_compared(tmp_path):
    """Instruction 2 reads only exact data, but continues an accumulation whose register
    holds a bfloat16-rounded sum: its result differs and the report must say so."""
    x = np.full((P, N), 1.0 + 2.0 ** -10, np.float32)
    rep = run(write_program(tmp_path, {
        "x": sbuf(x), "h": tmp((P, N), "bfloat16"), "t1": tmp((P, N), "float32"),
        "t2": tmp((P, N), "float32"), "r0": tmp((P, 1), "float32"),
        "r1": out((P, 1), "float32")}, [
        {"tensor_copy": {"dst": "h", "src": "x"}},
        {"activation": {"dst": "t1", "op": "copy", "data": "h", "reduce_op": "add",
                        "reduce_res": "r0", "reduce_cmd": "reset_reduce"}},
        {"activation": {"dst": "t2", "op": "copy", "data": "x", "reduce_op": "add",
                        "reduce_res": "r1", "reduce_cmd": "reduce"}}]), shadow=True)
    last = rep.rows[2]
    assert last.carried.abs == pytest.approx(N * 2.0 ** -10, rel=1e-3) and last.tensor == "r1"
    assert last.added.abs == 0  # float32 stores: it rounds nothing itself


def test_bit_level_bfloat16_rounding_equals_ml_dtypes():
    """The shadow's probe rounds float32 to bfloat16 on the bits (speed); it must be
    ml_dtypes' cast bit for bit: random patterns, ties, overflow to inf, subnormals, NaN,
    -0 (the real run's stores are ml_dtypes' cast itself: `stored`)."""
    from nkirun.hw.dtypes import DTYPES
    from nkirun.runner.shadow_bits import as_f32, rounded_f32, stored
    bits = np.random.default_rng(7).integers(0, 2 ** 32, 1 << 20, dtype=np.uint64)
    bits = bits.astype(np.uint32)
    bits[:9] = [0x7F7FFFFF, 0xFF7FFFFF, 0x00000001, 0x80008000, 0x7F800001, 0x3F808000,
                0x3F818000, 0x80000000, 0xFFFFFFFF]
    v = bits.view(np.float32)
    with np.errstate(invalid="ignore"):  # (NaN patterns)
        post, post32 = stored(v, None, DTYPES["bfloat16"])
        want = v.astype(ml_dtypes.bfloat16)
    probe = rounded_f32(v, None, DTYPES["bfloat16"])
    same = (probe.view(np.uint32) == post32.view(np.uint32)) | (np.isnan(v))
    assert same.all() and np.isnan(probe[np.isnan(v)]).all()
    assert (post.view(np.uint16) == want.view(np.uint16)).all()
    np.testing.assert_array_equal(as_f32(want).view(np.uint32),
                                  want.astype(np.float32).view(np.uint32))


TWO_CORES = """\
version: 1
tensors:
  x:    {buffer: hbm,  shape: [256, 64], dtype: float32, file: x.npy}
  y:    {buffer: hbm,  shape: [256, 1], dtype: float32, output: true}
  a:    {buffer: sbuf, shape: [128, 64], dtype: bfloat16, core: 0}
  suma: {buffer: sbuf, shape: [128, 1],  dtype: float32, core: 0}
  gota: {buffer: sbuf, shape: [128, 1],  dtype: float32, core: 0}
  b:    {buffer: sbuf, shape: [128, 64], dtype: float32, core: 1}
  sumb: {buffer: sbuf, shape: [128, 1],  dtype: float32, core: 1}
  gotb: {buffer: sbuf, shape: [128, 1],  dtype: float32, core: 1}
cores:
  - instructions:
      - dma_copy: {dst: a, src: "x[0:128, :]"}
      - tensor_reduce: {dst: suma, op: add, data: a, axis: 1}
      - sendrecv: {src: suma, dst: gota, send_to_rank: 1, recv_from_rank: 1, pipe_id: 0}
      - dma_copy: {dst: "y[0:128, :]", src: gota}
  - instructions:
      - dma_copy: {dst: b, src: "x[128:256, :]"}
      - tensor_reduce: {dst: sumb, op: add, data: b, axis: 1}
      - sendrecv: {src: sumb, dst: gotb, send_to_rank: 0, recv_from_rank: 0, pipe_id: 0}
      - dma_copy: {dst: "y[128:256, :]", src: gotb}
"""


def test_two_core_programs_carry_error_across_sendrecv(tmp_path):
    """Core 0 rounds its half to bfloat16; the sums it sends carry that error into core 1's
    rows of y (and core 1's exact sums arrive exactly in core 0's)."""
    from tests.prog_helpers import write_yaml
    x = np.full((256, 64), 1.0 + 2.0 ** -10, np.float32)
    path = write_yaml(tmp_path, TWO_CORES, x=x)
    plain, rep = run(path), run(path, shadow=True)
    np.testing.assert_array_equal(rep.outputs["y"], plain["y"])
    rows = {r.line: r for r in rep.rows}
    assert len(rows) == 8
    first = rows[line_of(path, "dst: a,")]
    assert first.added.abs == pytest.approx(2.0 ** -10)
    into_core1 = rows[line_of(path, 'dst: "y[128:256, :]"')]
    assert into_core1.carried.abs == pytest.approx(64 * 2.0 ** -10)
    assert into_core1.tensor == "y" and into_core1.index[0] >= 128
    assert rows[line_of(path, 'dst: "y[0:128, :]"')].carried.abs == 0
    assert rows[line_of(path, "dst: gotb")].carried.abs > 0
