"""Two-core (LNC2) programs end to end: the YAML and text spellings, convert, run order,
per-core state (capacity, accumulators), run-time races (W631), cost and Perfetto."""
import json

import numpy as np
from prog_helpers import invoke, run_cli
from repo_paths import PROGRAMS
from two_core import codes2, cost2, empty, program, run2

from nkirun.api import check_program, run
from nkirun.source.write import to_text, to_yaml

BARRIER = {"core_barrier": {"data": "y", "cores": [0, 1]}}


def _halves():
    t = {"x": empty((256, 8), "float32", buffer="hbm"),
         "y": empty((256, 8), "float32", buffer="hbm", output=True),
         "a": empty((128, 8), "float32", core=0), "b": empty((128, 8), "float32", core=1)}
    core0 = [{"dma_copy": {"dst": "a", "src": "x[0:128, :]"}},
             {"dma_copy": {"dst": "y[0:128, :]", "src": "a"}}, BARRIER,
             {"dma_copy": {"dst": "a", "src": "y[128:256, :]"}},
             {"tensor_scalar": {"dst": "a", "data": "a", "op0": "multiply", "operand0": 2.0}},
             {"dma_copy": {"dst": "y[128:256, :]", "src": "a"}}]
    core1 = [{"dma_copy": {"dst": "b", "src": "x[128:256, :]"}},
             {"tensor_scalar": {"dst": "b", "data": "b", "op0": "add", "operand0": 1.0}},
             {"dma_copy": {"dst": "y[128:256, :]", "src": "b"}}, BARRIER]
    return t, core0, core1


def test_core_0_reads_what_core_1_wrote_after_the_barrier(tmp_path):
    t, c0, c1 = _halves()
    x = np.arange(256 * 8, dtype=np.float32).reshape(256, 8)
    y = run2(t, c0, c1, inputs={"x": x})["y"]
    np.testing.assert_array_equal(y[:128], x[:128])
    np.testing.assert_array_equal(y[128:], (x[128:] + 1) * 2)
    # check in run order: no E050 although core 0's read comes first in the file
    assert codes2(dict(t, x=dict(t["x"], fill=1.0)), c0, c1) == []


def test_convert_is_lossless_both_ways(tmp_path):
    t, c0, c1 = _halves()
    t["x"]["fill"] = 1.0
    first = check_program(program(t, c0, c1)).program
    for fmt, write in (("yaml", to_yaml), ("text", to_text)):
        path = tmp_path / f"p.{'yaml' if fmt == 'yaml' else 'nkis'}"
        path.write_text(write(first))
        again = check_program(str(path))
        assert again.ok, [d.one_line() for d in again.diagnostics]
        assert again.program.cores == 2
        assert [(i.op, i.core, i.args) for i in again.program.instructions] == \
            [(i.op, i.core, i.args) for i in first.instructions]
        assert {n: d.core for n, d in again.program.tensors.items()} == \
            {n: d.core for n, d in first.tensors.items()}
        np.testing.assert_array_equal(run(str(path))["y"], run(program(t, c0, c1))["y"])
    assert "core 1\n" in to_text(first) and "cores:\n  - instructions:" in to_yaml(first)


def test_each_core_has_its_own_sbuf_capacity():
    big = 128 * 1024  # bytes per partition each core's tile takes (trn2: 192 KiB)
    t = {"x": empty((128, big // 4), "float32", buffer="hbm"),
         "a": empty((128, big // 4), "float32", core=0, output=True),
         "b": empty((128, big // 4), "float32", core=1, output=True)}
    t["x"]["fill"] = 1.0
    c0 = [{"dma_copy": {"dst": "a", "src": "x"}}]
    c1 = [{"dma_copy": {"dst": "b", "src": "x"}}]
    assert codes2(t, c0, c1) == []
    one = {"version": 1, "target": "trn2", "tensors": {k: {f: v for f, v in d.items()
                                                            if f != "core"}
                                                        for k, d in t.items()},
           "instructions": c0 + c1}
    # on one core both are live at once: the compiler spills (W047, checker/capacity.py)
    assert "W047" in [d.code for d in check_program(one).diagnostics]


def test_accumulators_are_per_core():
    """Each core's Vector accumulator is its own: core 1's reset does not reach core 0."""
    t = {"v": empty((4, 8), "float32", core=0), "w": empty((4, 8), "float32", core=1),
         "rv": empty((4, 1), "float32", core=0, output=True),
         "rw": empty((4, 1), "float32", core=1, output=True),
         "dv": empty((4, 8), "float32", core=0), "dw": empty((4, 8), "float32", core=1),
         "y": empty((4, 4), "float32", buffer="hbm")}
    t["y"]["fill"] = 0.0

    def chain(src, dst, res, cmd):
        return {"tensor_scalar_reduce": {"dst": dst, "data": src, "op0": "add", "operand0": 0.0,
                                         "reduce_op": "add", "reduce_res": res,
                                         "reduce_cmd": cmd}}
    c0 = [chain("v", "dv", "rv", "reset_reduce"), BARRIER, chain("v", "dv", "rv", "reduce")]
    c1 = [chain("w", "dw", "rw", "reset_reduce"), BARRIER]
    tb = dict(t, y=dict(t["y"], output=True))
    out = run2({k: v for k, v in tb.items()}, c0, [dict(x) for x in c1],
               inputs={"v": np.ones((4, 8), np.float32), "w": np.full((4, 8), 5, np.float32)})
    np.testing.assert_array_equal(out["rv"], np.full((4, 1), 16, np.float32))
    np.testing.assert_array_equal(out["rw"], np.full((4, 1), 40, np.float32))


def _scatter(rows0, rows1):
    t = {"o": empty((8, 4), "float32", buffer="hbm", output=True),
         "s0": empty((2, 4), "float32", core=0), "s1": empty((2, 4), "float32", core=1),
         "i0": empty((2, 1), "uint32", core=0), "i1": empty((2, 1), "uint32", core=1),
         "z": empty((8, 4), "float32", buffer="hbm")}
    t["z"]["fill"] = 0.0
    ap = "o.ap([[4, 2], [1, 4]], vector_offset={}, indirect_dim=0)"
    sync = {"core_barrier": {"data": "o", "cores": [0, 1]}}
    c0 = [{"dma_copy": {"dst": "o", "src": "z"}}, sync,
          {"dma_copy": {"dst": ap.format("i0"), "src": "s0"}}, sync]
    c1 = [sync, {"dma_copy": {"dst": ap.format("i1"), "src": "s1"}}, sync]
    machines = []
    out = run(program(t, c0, c1), after_each=lambda b, m: machines.append(m), inputs={
        "s0": np.ones((2, 4), np.float32), "s1": np.full((2, 4), 2, np.float32),
        "i0": np.array(rows0, np.uint32).reshape(2, 1),
        "i1": np.array(rows1, np.uint32).reshape(2, 1)})
    return out["o"], [w for w in machines[-1].warnings if w.code == "W631"]


def test_indirect_writes_to_the_same_rows_race_at_run_time():
    """W631: the rows an indirect view writes are known only at run time."""
    o, races = _scatter([0, 1], [4, 5])
    assert races == [] and (o[[0, 1]] == 1).all() and (o[[4, 5]] == 2).all()
    o, races = _scatter([0, 3], [3, 6])
    assert len(races) == 1 and "core 0 writes elements that core 1 writes" in races[0].message


def test_cost_json_and_perfetto_have_both_cores(tmp_path):
    t, c0, c1 = _halves()
    t["x"]["fill"] = 1.0
    s = cost2(t, c0, c1)
    assert {x.core for x in s.slots} == {0, 1}
    path = tmp_path / "p.yaml"
    path.write_text(to_yaml(check_program(program(t, c0, c1)).program))
    trace = tmp_path / "t.json"
    r = invoke("cost", str(path), "--trace-out", str(trace), "--format", "json")
    assert r.exit_code == 0, r.output
    events = json.loads(trace.read_text())["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert sorted(names) == [1, 2] and names[1].startswith("core 0") \
        and names[2].startswith("core 1")
    slices = [e for e in events if e["ph"] == "X"]
    assert {e["pid"] for e in slices if e["args"].get("index", -1) < 6} == {1}
    doc = json.loads(r.stdout)
    rows = {x["index"]: x for x in doc["instructions"]}
    assert any(x["wait_kind"] == "core_barrier" for x in rows.values())
    assert [rows[i]["core"] for i in sorted(rows)] == [0] * 6 + [1] * 4
    assert [c["instruction_count"] for c in doc["cores"]] == [6, 4]
    # core 1's open-engine tensor_scalar: the idle Scalar engine (schedule/placement.py)
    assert doc["cores"][1]["engines"]["scalar"]["instructions"] == 1


def test_structure_errors_of_the_two_core_spelling():
    t, c0, c1 = _halves()
    t["x"]["fill"] = 1.0
    both = dict(program(t, c0, c1), instructions=c0)
    assert "E630" in [d.code for d in check_program(both).diagnostics]
    three = dict(program(t, c0, c1), cores=[{"instructions": c0}] * 3)
    assert "E630" in [d.code for d in check_program(three).diagnostics]
    extra = dict(program(t, c0, c1), cores=[{"instructions": c0, "x": 1},
                                            {"instructions": c1}])
    assert "E630" in [d.code for d in check_program(extra).diagnostics]
    one = {"version": 1, "tensors": {"a": empty((4, 4), "float32", core=0, output=True)},
           "instructions": [{"memset": {"dst": "a", "value": 0.0}}]}
    assert [d.code for d in check_program(one).diagnostics] == ["E631"]
    bad_core = program(dict(t, a=dict(t["a"], core=2)), c0, c1)
    assert "E631" in [d.code for d in check_program(bad_core).diagnostics]
    trn1 = program(t, c0, c1, target="trn1")
    assert "E632" in [d.code for d in check_program(trn1).diagnostics]


def test_the_example_two_core_halves_through_the_cli(tmp_path):
    """programs/two_core_halves.yaml against NumPy: core 0's rows get core 1's row sums
    (core 1 doubled its rows first) and the reverse; core 0 reads core 1's half back."""
    out = run_cli(PROGRAMS / "two_core_halves.yaml", tmp_path)
    x = np.full((256, 64), 1.5, np.float32)
    top, bottom = x[:128], x[128:] * 2
    want = np.concatenate([top + bottom.sum(1, keepdims=True),
                           bottom + top.sum(1, keepdims=True)])
    np.testing.assert_array_equal(out["y"], want)
    np.testing.assert_array_equal(out["seen"], want[128:])
