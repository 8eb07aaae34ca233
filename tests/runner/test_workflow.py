"""The kernel author's workflow: golden diff (--expect), --trace, --dump, exact
uninitialised-read errors (E090), the Python API and the progress bar."""
from __future__ import annotations

import io
import json
import pathlib

import ml_dtypes
import numpy as np
import pytest
import yaml

import nkirun
from nkirun import api
from nkirun.runner.compare import Tolerance, compare, ulp_distance
from nkirun.hw.dtypes import DTYPES
from nkirun.diagnostics import NkirunError
from nkirun.runner.watch import Progress, Tracer, watch
from prog_helpers import NP_TYPES, invoke
from repo_paths import DOCS, PROGRAMS

def copy_program(tmp_path: pathlib.Path, x: np.ndarray, dtype: str, extra=()) -> str:
    """x (hbm, from x.npy) -> load -> t (sbuf) -> store -> y (output), plus `extra`."""
    np.save(tmp_path / "x.npy", x)
    shape = list(x.shape)
    prog = {"version": 1, "tensors": {
        "x": {"buffer": "hbm", "shape": shape, "dtype": dtype, "file": "x.npy"},
        "t": {"buffer": "sbuf", "shape": shape, "dtype": dtype},
        "y": {"buffer": "hbm", "shape": shape, "dtype": dtype, "output": True}},
        "instructions": [{"load": {"dst": "t", "src": "x"}}, *extra,
                         {"store": {"dst": "y", "src": "t"}}]}
    path = tmp_path / "prog.yaml"
    path.write_text(yaml.safe_dump(prog, sort_keys=False))
    return str(path)


# ---- golden diff -------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16", "float8_e4m3", "int32"])
@pytest.mark.parametrize("shape", [(1, 5), (37, 3, 7), (128, 33)])
def test_expect_matches_its_own_output(tmp_path, dtype, shape):
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32) * 50
    path = copy_program(tmp_path, x.astype(NP_TYPES[dtype]), dtype)
    exp = tmp_path / "golden"
    exp.mkdir()
    np.save(exp / "y.npy", x.astype(NP_TYPES[dtype]))  # bf16/fp8 are saved as raw |V2/|V1
    r = invoke("run", path, "--out", tmp_path / "out", "--expect", exp)
    assert r.exit_code == 0, r.output
    assert "compared with " in r.stdout and "the output matches" in r.stdout


def _mismatch_case(tmp_path, dtype="float32"):
    x = np.arange(37 * 12, dtype=np.float32).reshape(37, 12).astype(NP_TYPES[dtype])
    path = copy_program(tmp_path, x, dtype)
    golden = x.copy()
    golden[5, 7] = golden[5, 7] + 3  # first mismatch
    golden[30, 2] = golden[30, 2] + 1
    exp = tmp_path / "golden"
    exp.mkdir()
    np.save(exp / "y.npy", golden)
    return path, exp


def test_expect_mismatch_reports_first_element_count_and_errors(tmp_path):
    path, exp = _mismatch_case(tmp_path)
    r = invoke("run", path, "--out", tmp_path / "out", "--expect", exp)
    assert r.exit_code == 1
    assert "the output differs" in r.stdout
    assert "MISMATCH (exact) in 2 of 444 elements" in r.stdout
    assert "first at [5, 7]: got 67, expected 70" in r.stdout
    assert "max abs error 3" in r.stdout and "max ULP error" in r.stdout
    # decision: the outputs are still written, to be inspected
    assert (tmp_path / "out" / "y.npy").exists()


def test_expect_tolerances(tmp_path):
    path, exp = _mismatch_case(tmp_path)
    assert invoke("run", path, "--out", tmp_path / "o", "--expect", exp, "--atol", 3).exit_code == 0
    r = invoke("run", path, "--out", tmp_path / "o", "--expect", exp, "--atol", 2.5)
    assert r.exit_code == 1 and "in 1 of 444" in r.stdout
    assert invoke("run", path, "--out", tmp_path / "o", "--expect", exp, "--rtol",
                  0.05).exit_code == 0  # 3/70 and 1/361 are below 5 %


def test_integer_outputs_are_always_exact(tmp_path):
    path, exp = _mismatch_case(tmp_path, "int32")
    r = invoke("run", path, "--out", tmp_path / "o", "--expect", exp, "--atol", 100)
    assert r.exit_code == 1 and "MISMATCH (exact)" in r.stdout


def test_expect_ulp(tmp_path):
    x = np.linspace(-3, 3, 4 * 9, dtype=np.float32).reshape(4, 9)
    path = copy_program(tmp_path, x, "float32")
    exp = tmp_path / "golden"
    exp.mkdir()
    g = x.copy()
    g[2, 4] = np.nextafter(g[2, 4], np.float32(np.inf))
    np.save(exp / "y.npy", g)
    assert invoke("run", path, "--out", tmp_path / "o", "--expect", exp).exit_code == 1
    assert invoke("run", path, "--out", tmp_path / "o", "--expect", exp, "--ulp", 1).exit_code == 0
    r = invoke("run", path, "--out", tmp_path / "o", "--expect", exp, "--ulp", 0)
    assert r.exit_code == 1 and "max ULP error 1" in r.stdout


def test_expect_missing_file_and_bad_usage(tmp_path):
    path, exp = _mismatch_case(tmp_path)
    (exp / "y.npy").unlink()
    r = invoke("run", path, "--out", tmp_path / "o", "--expect", exp)
    assert r.exit_code == 1 and "E070" in r.stderr and "y.npy not found" in r.stderr
    assert not (tmp_path / "o").exists()  # checked before running: nothing written
    assert invoke("run", path, "--expect", exp, "--ulp", 1, "--rtol", 0.1).exit_code == 2
    assert invoke("run", path, "--atol", 0.1).exit_code == 2
    assert invoke("run", path, "--after", 0).exit_code == 2
    assert invoke("run", path, "--dump", tmp_path / "d", "--after", 9).exit_code == 2


def test_compare_nan_zero_and_ulp_units():
    f32 = DTYPES["float32"]
    a = np.array([np.nan, 0.0, 1.0, -1.0], np.float32)
    e = np.array([np.float32("nan") * -1, -0.0, 1.0, -1.0], np.float32)  # other NaN payload
    d = compare("y", a, e, f32)
    assert d.mismatches == 1 and d.first == (1,)  # NaN == NaN; +0 != -0 bitwise
    assert compare("y", a, e, f32, Tolerance(ulp=0)).ok  # zeros are 0 ULP apart
    assert not compare("y", a, np.array([1, 0, 1, -1], np.float32), f32, Tolerance(ulp=5)).ok
    assert not compare("y", np.float32([np.inf]), np.float32([-np.inf]), f32,
                       Tolerance(rtol=1.0)).ok
    for name in ("bfloat16", "float8_e4m3", "float8_e5m2", "float16"):
        t = NP_TYPES[name]
        x = np.array([1.0, -2.0], t)
        eps = float(ml_dtypes.finfo(t).eps)
        step = np.array([1.0 + eps, -2.0 - 2 * eps], t)
        assert ulp_distance(x, step, DTYPES[name]).tolist() == [1, 1], name
    x = np.array([-np.finfo(np.float32).tiny], np.float32)
    assert ulp_distance(x, np.array([np.finfo(np.float32).tiny], np.float32), f32)[0] == 2 ** 24


# ---- trace -------------------------------------------------------------------------------------
def test_trace_one_line_per_instruction_and_first_nan_inf(tmp_path):
    x = np.ones((37, 6), np.float32)
    extra = [{"memset": {"dst": "t[:, 0:2]", "value": 2.0}},
             {"memset": {"dst": "t[3:4, 5:6]", "value": "nan"}},
             {"memset": {"dst": "t[0:1, 4:5]", "value": "-inf"}},
             {"memset": {"dst": "t[1:2, 4:5]", "value": "nan"}}]
    path = copy_program(tmp_path, x, "float32", extra)
    r = invoke("run", path, "--out", tmp_path / "o", "--trace")
    assert r.exit_code == 0, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 6
    assert lines[0].startswith("#0 load [dma] dst=t: min=1 max=1 mean=1 nan=0 inf=0")
    assert lines[1].startswith("#1 memset [vector] dst=t[:, 0:2]: min=2 max=2")
    assert lines[2].endswith("nan=1 inf=0  <-- first NaN")
    assert lines[3].endswith("nan=0 inf=1  <-- first inf")
    assert "first" not in lines[4] and "first" not in lines[5]
    assert "nan=2 inf=1" in lines[5]  # store: y holds both NaNs and the inf


def test_trace_shows_how_far_a_failing_run_got(tmp_path):
    c, x = _masked_program(tmp_path, store_mask=None)  # store reads unwritten rows of t
    r = invoke("run", c.program.path, "--out", tmp_path / "o", "--trace",
               "--uninitialized", "strict")  # (stops at the read itself)
    assert r.exit_code == 1
    assert "#0 load" in r.stderr and "#1 memset" in r.stderr and "#2 failed" in r.stderr
    assert "E090" in r.stderr
    assert not (tmp_path / "o").exists()
    # by default the garbage is carried into the output, which the run then refuses,
    # naming the read that started it
    r = invoke("run", c.program.path, "--out", tmp_path / "o", "--trace")
    assert r.exit_code == 1 and "E090" in r.stderr and "reach output" in r.stderr
    assert "#2 store" in r.stderr and not (tmp_path / "o").exists()


def test_trace_rich_table_and_masked_stats():
    tracer = Tracer(io.StringIO(), rich=True)
    c, x = _masked_program()
    from nkirun.runner.interpret import execute
    execute(c.program, c.bound, {"x": x}, tracer)
    row = tracer.rows[1]  # memset under mask: only the masked elements were written
    assert row.outputs[0].count == 2 * 4 and row.outputs[0].min == 5.0
    tracer.close()
    out = tracer.stream.getvalue()
    assert "trace: what each instruction wrote" in out and "memset" in out


# ---- dump --------------------------------------------------------------------------------------
def test_dump_after_each_and_after_k(tmp_path):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    extra = [{"memset": {"dst": "t[:, 1:2]", "value": -1.0}}]
    path = copy_program(tmp_path, x, "float32", extra)
    d = tmp_path / "dump"
    r = invoke("run", path, "--out", tmp_path / "o", "--dump", d)
    assert r.exit_code == 0
    assert f"dumped 3 instructions into {d}" in r.output  # says where it wrote
    assert sorted(p.name for p in d.iterdir()) == ["0_load", "1_memset", "2_store"]
    # unchanged inputs are not dumped again: later folders hold what that instruction wrote
    assert sorted(p.name for p in (d / "1_memset").iterdir()) == ["t.npy"]
    assert sorted(p.name for p in (d / "2_store").iterdir()) == ["y.npy"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    # after 0: t fully written (no .written file), y never written (skipped)
    assert sorted(p.name for p in (d / "0_load").iterdir()) == ["t.npy", "x.npy"]
    np.testing.assert_array_equal(np.load(d / "0_load" / "t.npy"), x)
    after1 = x.copy()
    after1[:, 1] = -1
    np.testing.assert_array_equal(np.load(d / "1_memset" / "t.npy"), after1)
    np.testing.assert_array_equal(np.load(d / "2_store" / "y.npy"), after1)
    d2 = tmp_path / "dump2"
    assert invoke("run", path, "--out", tmp_path / "o", "--dump", d2, "--after", 1).exit_code == 0
    assert [p.name for p in d2.iterdir()] == ["1_memset"]
    assert sorted(p.name for p in (d2 / "1_memset").iterdir()) == ["t.npy", "x.npy"]


def test_dump_partly_written_tensor_has_written_mask(tmp_path):
    c, x = _masked_program()
    from nkirun.runner.interpret import execute
    from nkirun.runner.watch import Dumper
    dumper = Dumper(str(tmp_path / "d"), len(c.bound), after=1)
    execute(c.program, c.bound, {"x": x}, dumper)
    dumper.commit()
    folder = tmp_path / "d" / "1_memset"
    w = np.load(folder / "t.written.npy")
    assert w.sum() == 5 * 4 + 2 * 4 and w[:, :4].all() and w[:2].all()
    assert not w[2:, 4:].any()


def test_watch_without_options_adds_no_hook():
    c, _ = _masked_program()
    with watch(c.program, c.bound, progress=False) as hook:
        assert hook is None


# ---- uninitialised reads (E090) ----------------------------------------------------------------
def _masked_program(tmp_path=None, store_mask="p < 2", read="t"):
    import tempfile
    d = pathlib.Path(tmp_path or tempfile.mkdtemp())
    prog = {"version": 1, "tensors": {
        "x": {"buffer": "hbm", "shape": [5, 8], "dtype": "float32", "fill": 0},
        "t": {"buffer": "sbuf", "shape": [5, 8], "dtype": "float32"},
        "y": {"buffer": "hbm", "shape": [5, 8], "dtype": "float32", "fill": 0, "output": True}},
        "instructions": [
            {"load": {"dst": "t[:, 0:4]", "src": "x[:, 0:4]"}},
            {"memset": {"dst": "t", "value": 5.0, "mask": "p < 2 and f >= 4"}},
            {"store": {"dst": "y", "src": read, **({"mask": store_mask} if store_mask else {})}}]}
    path = d / "masked.yaml"
    path.write_text(yaml.safe_dump(prog, sort_keys=False))
    return api.require_valid(str(path)), np.arange(40, dtype=np.float32).reshape(5, 8)


def _run_error(c, x):
    from nkirun.runner.interpret import execute
    with pytest.raises(NkirunError) as e:
        execute(c.program, c.bound, None if x is None else {"x": x}, uninitialized="strict")
    (d,) = e.value.diagnostics
    return d


def test_uninitialised_read_names_instruction_tensor_and_first_element():
    c, x = _masked_program(store_mask=None)
    d = _run_error(c, x)
    assert d.code == "E090" and d.instruction == 2
    assert "store reads `t` at partition 2, free index (4,)" in d.message
    assert "(12 of the 40 elements" in d.message


def test_masked_instruction_reads_only_its_sub_box():
    c, x = _masked_program(store_mask="p < 2")  # rows 0-1 are fully written
    from nkirun.runner.interpret import execute
    m = execute(c.program, c.bound, {"x": x})
    np.testing.assert_array_equal(m.buffers["y"][:2], np.where(np.arange(8) < 4, x[:2], 5))
    assert not m.buffers["y"][2:].any()
    c, x = _masked_program(store_mask="p < 3 and f < 6")
    d = _run_error(c, x)
    assert "partition 2, free index (4,)" in d.message and "(2 of the 40" in d.message


def test_uninitialised_read_through_strided_view_in_tensor_coordinates(tmp_path):
    prog = {"version": 1, "tensors": {
        "x": {"buffer": "hbm", "shape": [5, 8], "dtype": "float32", "fill": 1},
        "t": {"buffer": "sbuf", "shape": [5, 8], "dtype": "float32"},
        "y": {"buffer": "hbm", "shape": [5, 8], "dtype": "float32", "fill": 0, "output": True}},
        "instructions": [
            {"load": {"dst": "t[:, 0:8:2]", "src": "x[:, 0:4]"}},
            {"memset": {"dst": "t[0:1, :]", "value": 2.0}},
            {"store": {"dst": "y[0:4, 0:4]", "src": "t[0:4, 0:8:2]"}},  # written: fine
            {"store": {"dst": "y[0:4, 0:4]", "src": "t[1:5, 1:8:2]"}}]}
    path = tmp_path / "strided.yaml"
    path.write_text(yaml.safe_dump(prog, sort_keys=False))
    c = api.require_valid(str(path))
    d = _run_error(c, None)
    # rows 1.. of t hold only the even columns: the first odd column read is t[1, 1]
    assert d.instruction == 3
    assert "store reads `t` at partition 1, free index (1,)" in d.message
    assert "(16 of the 16 elements" in d.message


def test_tracking_is_dropped_once_a_tensor_is_fully_written():
    c, x = _masked_program(store_mask=None)
    text = pathlib.Path(c.program.path).read_text().replace("p < 2 and f >= 4", "f >= 4")
    pathlib.Path(c.program.path).write_text(text)
    c = api.require_valid(c.program.path)
    seen = []
    nkirun.run(c.program.path, inputs={"x": x}, after_each=lambda b, m: seen.append(
        m.written.get("t") is None))
    assert seen == [False, True, True]


# ---- Python API --------------------------------------------------------------------------------
def test_python_api_run_check_cost(tmp_path):
    x = np.random.default_rng(0).standard_normal((37, 5)).astype(np.float32)
    path = copy_program(tmp_path, np.zeros_like(x), "float32")
    outs = nkirun.run(path, inputs={"x": x})
    assert set(outs) == {"y"}
    np.testing.assert_array_equal(outs["y"].view(np.uint32), x.view(np.uint32))
    assert nkirun.check(path) == []
    sched = nkirun.cost(path)
    assert [s.op for s in sched.slots] == ["load", "store"] and sched.total_ns > 0
    assert callable(nkirun.cost)  # still the function after the cost subpackage loaded
    with pytest.raises(nkirun.NkirunError) as e:
        nkirun.run(path, inputs={"nope": x})
    assert e.value.diagnostics[0].code == "E075"


def test_python_api_run_writes_to_out(tmp_path):
    """nkirun.run(..., out=DIR) also writes DIR/<name>.npy, as `nkirun run --out` does."""
    x = np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5
    path = copy_program(tmp_path, x, "float32")
    outs = nkirun.run(path, out=str(tmp_path / "o" / "deep"))
    assert sorted(p.name for p in (tmp_path / "o" / "deep").iterdir()) == ["y.npy"]
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "deep" / "y.npy"), x)
    np.testing.assert_array_equal(outs["y"], x)
    bad = copy_program(tmp_path, x, "float32", extra=[{"memset": {"dst": "nope", "value": 0}}])
    with pytest.raises(nkirun.NkirunError):
        nkirun.run(bad, out=str(tmp_path / "o2"))
    assert not (tmp_path / "o2").exists()  # invalid: nothing written


# The example in docs/api.md, verbatim except for the program path.
DOC_EXAMPLE = '''
import numpy as np
import nkirun

def test_rowmax_in_window():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((128, 512), dtype=np.float32)
    lo = np.full((128, 1), 100, np.float32)
    hi = np.full((128, 1), 300, np.float32)
    out = nkirun.run(PROGRAM, inputs={"x": x, "lo": lo, "hi": hi})
    cols = np.arange(512)
    window = (cols >= 100) & (cols < 300)
    expected = np.where(window, x, np.finfo(np.float32).min)
    np.testing.assert_array_equal(out["y"], expected)
    np.testing.assert_array_equal(out["ymax"][:, 0], x[:, 100:300].max(axis=1))
'''


def test_docs_example_runs_as_written():
    doc = (DOCS / "api.md").read_text()
    assert DOC_EXAMPLE.replace("PROGRAM", '"programs/rowmax_in_window.yaml"').strip() in doc
    program = PROGRAMS / "rowmax_in_window.yaml"
    ns: dict = {"PROGRAM": str(program)}
    exec(DOC_EXAMPLE, ns)  # noqa: S102 - our own doc text
    ns["test_rowmax_in_window"]()


def test_cost_as_data_is_json_serialisable():
    from nkirun.schedule import to_json
    program = PROGRAMS / "rowmax_in_window.yaml"
    doc = to_json(nkirun.cost(str(program)))
    assert json.loads(json.dumps(doc))["instructions"][3]["op"] == "range_select"


# ---- progress ----------------------------------------------------------------------------------
def test_progress_bar_appears_only_after_the_delay():
    c, x = _masked_program(store_mask="p < 2")
    from nkirun.runner.interpret import execute
    quiet = Progress(len(c.bound), delay=60.0, stream=io.StringIO())
    execute(c.program, c.bound, {"x": x}, quiet)
    quiet.close()
    assert quiet.stream.getvalue() == ""
    shown = Progress(len(c.bound), delay=0.0, stream=io.StringIO())
    execute(c.program, c.bound, {"x": x}, shown)
    assert shown.bar is not None
    assert shown.bar.tasks[0].completed == len(c.bound)
    shown.close()
