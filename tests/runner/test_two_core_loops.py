"""Runtime loops inside two-core (LNC2) programs: each core walks its own loops on its own
registers, meeting points inside loops pair by occurrence (checker/meet.py), in YAML, text
and convert; check (W632, races across iterations), run (E642: a deadlock is an error, never
a hang) and cost (trip counts per core from the data or --trip)."""
import numpy as np
import pytest
from two_core import codes2, diags2, empty, program

from nkirun.api import check_program, cost, run
from nkirun.diagnostics import NkirunError
from nkirun.source.write import to_text, to_yaml

RNG = np.random.default_rng(5)
X = RNG.standard_normal((2, 4, 8, 16)).astype(np.float32)
PATTERN = "[[16, 8], [1, 16]]"


def _tile(tensor: str, core: int) -> str:
    """Tile t of x[core] (or y[core]): the register t steps dimension 1 of [2, 4, 8, 16]."""
    offset = f", offset={core * 4 * 8 * 16}" if core else ""
    return f"{tensor}.ap({PATTERN}{offset}, scalar_offset=t, indirect_dim=1)"


def _core(c: int, count: str, op: str) -> list:
    """Core c: n = count; for t < n: exchange x[c][t] with the other core, y[c][t] = op of
    the two tiles."""
    a, r, cnt = f"a{c}", f"r{c}", f"c{c}"
    return [{"dma_copy": {"dst": cnt, "src": count}},
            {"register_alloc": {"dst": "n"}},
            {"register_load": {"dst": "n", "src": cnt}},
            {"for": {"index": "t", "stop": "n", "body": [
                {"dma_copy": {"dst": a, "src": _tile("x", c)}},
                {"sendrecv": {"src": a, "dst": r, "send_to_rank": 1 - c,
                              "recv_from_rank": 1 - c, "pipe_id": 0}},
                {"tensor_tensor": {"dst": r, "data1": a, "data2": r, "op": op}},
                {"dma_copy": {"dst": _tile("y", c), "src": r}}]}}]


def _tensors(y_fill=0.0) -> dict:
    t = {"x": empty((2, 4, 8, 16), "float32", buffer="hbm"),
         "count": empty((1, 1), "int32", buffer="hbm"),
         "count1": empty((1, 1), "int32", buffer="hbm"),
         "y": dict(empty((2, 4, 8, 16), "float32", buffer="hbm", output=True), fill=y_fill)}
    for c in (0, 1):
        t.update({f"c{c}": empty((1, 1), "int32", core=c),
                  f"a{c}": empty((8, 16), "float32", core=c),
                  f"r{c}": empty((8, 16), "float32", core=c)})
    return t


def exchange_loops(count1="count", filled=False) -> dict:
    p = program(_tensors(), _core(0, "count", "add"), _core(1, count1, "multiply"))
    if filled:  # (cost and convert need the tensors' contents declared)
        for name in ("x", "count", "count1"):
            p["tensors"][name]["fill"] = 1
    return p


def _reference(n: int) -> np.ndarray:
    y = np.zeros_like(X)
    y[0, :n] = X[0, :n] + X[1, :n]
    y[1, :n] = X[0, :n] * X[1, :n]
    return y


def _inputs(n, n1=None):
    return {"x": X, "count": np.array([[n]], np.int32),
            "count1": np.array([[n if n1 is None else n1]], np.int32)}


@pytest.mark.parametrize("n", [0, 1, 3, 4])
def test_a_sendrecv_in_a_runtime_loop_pairs_iteration_by_iteration(n):
    y = run(exchange_loops(), inputs=_inputs(n))["y"]
    np.testing.assert_array_equal(y, _reference(n))


def test_check_sees_each_body_once_and_says_what_it_cannot():
    diags = check_program(exchange_loops(), inputs={"x", "count", "count1"}).diagnostics
    assert not [d for d in diags if d.is_error], [d.one_line() for d in diags]
    assert sorted(d.code for d in diags if d.code == "W650") == ["W650", "W650"]


def test_yaml_and_text_round_trip_keep_each_cores_loops(tmp_path):
    first = check_program(exchange_loops(filled=True)).program
    assert [lp.core for lp in first.loops] == [0, 1]
    assert [lp.name for lp in first.loops] == ["t@core0", "t@core1"]
    for suffix, write in (("yaml", to_yaml), ("nkis", to_text)):
        path = tmp_path / f"p.{suffix}"
        path.write_text(write(first))
        again = check_program(str(path)).program
        assert again.loops == first.loops
        assert [(i.op, i.core, i.args) for i in again.instructions] == \
            [(i.op, i.core, i.args) for i in first.instructions]
        assert write(again) == write(first)
        np.testing.assert_array_equal(run(str(path), inputs=_inputs(2))["y"], _reference(2))
    text = to_text(first)
    assert text.index("core 0") < text.index("for index=t") < text.index("end") \
        < text.index("core 1")


def test_counts_that_do_not_pair_are_a_located_run_error_naming_both_cores():
    with pytest.raises(NkirunError) as e:
        run(exchange_loops("count1"), inputs=_inputs(3, 2))
    d = e.value.diagnostics[0]
    assert d.code == "E642"
    assert "core 0" in d.message and "core 1" in d.message
    assert d.loc.line is not None
    # equal counts from the two tensors pair
    y = run(exchange_loops("count1"), inputs=_inputs(2, 2))["y"]
    np.testing.assert_array_equal(y, _reference(2))


def test_cost_counts_each_cores_loop_from_the_data_or_from_trip():
    s = cost(program(dict(_tensors(), x=dict(_tensors()["x"], fill=1.0),
                          count=dict(_tensors()["count"], data=[[3]])),
                     _core(0, "count", "add"), _core(1, "count", "multiply")))
    assert [(r["name"], r["core"], r["iterations"], r["trips"]) for r in s.loops] == \
        [("t@core0", 0, 3, "data"), ("t@core1", 1, 3, "data")]
    pairs = [x for x in s.slots if x.op == "sendrecv"]
    assert len(pairs) == 6 and {x.core for x in pairs} == {0, 1}
    by_core = [sorted(x.start_ns for x in pairs if x.core == c) for c in (0, 1)]
    assert by_core[0] == by_core[1]  # each pair starts on both cores at once
    # --trip NAME=N for a name both cores' loops share (NAME@core0, NAME@core1)
    s2 = cost(exchange_loops(filled=True), trips={"t": 2})
    assert [(r["iterations"], r["trips"]) for r in s2.loops] == [(2, "assumed")] * 2
    with pytest.raises(NkirunError) as e:
        cost(exchange_loops(filled=True), trips={"t@core0": 2, "t@core1": 1})
    assert e.value.diagnostics[0].code == "E642"


def test_each_core_has_its_own_registers():
    t = {"y": dict(empty((2, 1), "int32", buffer="hbm", output=True))}
    core = lambda c, v: [{"register_alloc": {"dst": "r", "x": v}},  # noqa: E731
                         {"register_store": {"dst": f"y[{c}:{c + 1}, :]", "src": "r"}}]
    y = run(program(t, core(0, 7), core(1, -3)))["y"]
    np.testing.assert_array_equal(y, [[7], [-3]])


def _uneven(flag_data):
    """Core 0 exchanges once per iteration of a loop on n; core 1 twice, straight-line."""
    t = {"cnt": dict(empty((1, 1), "int32", buffer="hbm"), data=[[flag_data]]),
         "c0": empty((1, 1), "int32", core=0),
         "a0": dict(empty((2, 4), "float32", core=0), fill=1.0),
         "r0": empty((2, 4), "float32", core=0, output=True),
         "a1": dict(empty((2, 4), "float32", core=1), fill=2.0),
         "r1": empty((2, 4), "float32", core=1, output=True)}
    s0 = {"sendrecv": {"src": "a0", "dst": "r0", "send_to_rank": 1, "recv_from_rank": 1,
                       "pipe_id": 0}}
    s1 = {"sendrecv": {"src": "a1", "dst": "r1", "send_to_rank": 0, "recv_from_rank": 0,
                       "pipe_id": 0}}
    core0 = [{"dma_copy": {"dst": "c0", "src": "cnt"}}, {"register_alloc": {"dst": "n"}},
             {"register_load": {"dst": "n", "src": "c0"}},
             {"for": {"index": "i", "stop": "n", "body": [s0]}}]
    return program(t, core0, [s1, s1])


def test_a_body_once_mismatch_in_a_loop_is_w632_and_run_decides():
    diags = check_program(_uneven(2)).diagnostics
    assert [d.code for d in diags if d.code in ("W632", "E635")] == ["W632"]
    out = run(_uneven(2))
    assert (out["r0"] == 2).all() and (out["r1"] == 1).all()
    with pytest.raises(NkirunError) as e:
        run(_uneven(1))
    assert e.value.diagnostics[0].code == "E642"
    assert "core 1" in e.value.diagnostics[0].message


def test_a_race_between_iterations_of_loops_with_a_barrier_is_found():
    """Core 0 writes y after the barrier, core 1 reads it before: the same iteration is
    ordered, but core 0's write of iteration k meets core 1's read of iteration k+1."""
    t = {"y": dict(empty((4, 4), "float32", buffer="hbm", output=True), fill=0.0),
         "a": dict(empty((4, 4), "float32", core=0), fill=1.0),
         "b": empty((4, 4), "float32", core=1)}
    barrier = {"core_barrier": {"data": "y", "cores": [0, 1]}}
    loop = lambda body: {"for": {"index": "i", "stop": 3, "body": body}}  # noqa: E731
    straight = codes2(t, [barrier, {"dma_copy": {"dst": "y", "src": "a"}}],
                      [{"dma_copy": {"dst": "b", "src": "y"}}, barrier])
    assert "W630" not in straight
    looped = codes2(t, [loop([barrier, {"dma_copy": {"dst": "y", "src": "a"}}])],
                    [loop([{"dma_copy": {"dst": "b", "src": "y"}}, barrier])])
    assert "W630" in looped


def test_crossed_pipes_progress_independently_on_separate_tiles():
    t = {n: dict(empty((2, 4), "float32", core=c), fill=float(v)) for n, c, v in
         (("a", 0, 1), ("a2", 0, 2), ("b", 1, 3), ("b2", 1, 4))}
    t.update({n: empty((2, 4), "float32", c, output=True) for n, c in
              (("ra", 0), ("ra2", 0), ("rb", 1), ("rb2", 1))})
    s = lambda src, dst, rank, pipe: {"sendrecv": {  # noqa: E731
        "src": src, "dst": dst, "send_to_rank": rank, "recv_from_rank": rank, "pipe_id": pipe}}
    core0 = [s("a", "ra", 1, 0), s("a2", "ra2", 1, 1)]
    core1 = [s("b2", "rb2", 0, 1), s("b", "rb", 0, 0)]
    assert codes2(t, core0, core1) == []
    out = run(program(t, core0, core1))
    assert (out["ra"] == 3).all() and (out["rb"] == 1).all()
    assert (out["ra2"] == 4).all() and (out["rb2"] == 2).all()
    # each core reads what its pending transfer writes before reaching the other pipe: core
    # 0 waits for pipe 0, core 1 for pipe 1 -> deadlock, located, naming both
    core0_reads = [core0[0], {"tensor_copy": {"dst": "a2", "src": "ra"}}, core0[1]]
    core1_reads = [core1[0], {"tensor_copy": {"dst": "b", "src": "rb2"}}, core1[1]]
    assert codes2(t, core0_reads, core1) == []  # core 1 runs on to pipe 0: no deadlock
    dead = [d for d in diags2(t, core0_reads, core1_reads) if d.code == "E635"]
    assert len(dead) == 1
    assert "instruction 1 (tensor_copy)" in dead[0].message
    assert "instruction 4 (tensor_copy)" in dead[0].message


def test_the_two_core_passes_name_no_instruction():
    """What pairs across cores is the instructions' own (isa/<name>.py `meeting`): the
    passes are generic, so a new cross-core instruction is one module."""
    import pathlib

    import nkirun
    root = pathlib.Path(nkirun.__file__).parent
    for rel in ("checker/cores.py", "checker/meet.py", "runner/cores.py",
                "schedule/cores.py", "runner/shadow.py", "schedule/model.py",
                "schedule/report.py", "runner/interpret.py"):
        code = (root / rel).read_text()
        for name in ('"sendrecv"', '"core_barrier"', "'sendrecv'", "'core_barrier'"):
            assert name not in code, (rel, name)


def _duplicate_store(v0: float, v1: float) -> dict:
    """Both cores store a tile to the same rows of shared y, no barrier between (router_topk
    without token sharding stores its whole result from each core)."""
    t = {"y": empty((4, 4), "float32", buffer="hbm", output=True),
         "a": dict(empty((4, 4), "float32", core=0), fill=v0),
         "b": dict(empty((4, 4), "float32", core=1), fill=v1)}
    return program(t, [{"dma_copy": {"dst": "y", "src": "a"}}],
                   [{"dma_copy": {"dst": "y", "src": "b"}}])


def test_both_cores_writing_the_same_values_is_harmless_and_run_says_so(tmp_path):
    import yaml
    from prog_helpers import invoke
    same = check_program(_duplicate_store(2.0, 2.0)).diagnostics
    w630 = [d for d in same if d.code == "W630"]
    assert len(w630) == 1 and "unless both write the same values" in w630[0].message
    for v1, expect in ((2.0, []), (3.0, ["W633"])):
        path = tmp_path / f"dup{v1}.yaml"
        path.write_text(yaml.safe_dump(_duplicate_store(2.0, v1)))
        r = invoke("run", path, "--out", tmp_path / "o", "--format", "json")
        assert r.exit_code == 0, r.output
        import json
        codes = [w["code"] for w in json.loads(r.stdout)["diagnostics"]]
        assert [c for c in codes if c.startswith("W63")] == (["W630"] + expect if expect
                                                             else [])


def _run_codes(tmp_path, prog) -> list:
    import json

    import yaml
    from prog_helpers import invoke
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(prog))
    r = invoke("run", path, "--out", tmp_path / "o", "--format", "json")
    assert r.exit_code == 0, r.output
    return [w["code"] for w in json.loads(r.stdout)["diagnostics"]]


def _overlapping_stores(core1_rows_1_2: float, core1_row_3: float) -> dict:
    """Core 0 stores rows 0-2 of y, core 1 rows 1-3: rows 1-2 are written twice."""
    t = {"y": empty((4, 4), "float32", buffer="hbm", output=True),
         "a": dict(empty((4, 4), "float32", core=0), fill=2.0),
         "b": dict(empty((4, 4), "float32", core=1), fill=core1_row_3)}
    return program(t, [{"dma_copy": {"dst": "y[0:3]", "src": "a[0:3]"}}],
                   [{"memset": {"dst": "b[1:3]", "value": core1_rows_1_2}},
                    {"dma_copy": {"dst": "y[1:4]", "src": "b[1:4]"}}])


def test_overlapping_duplicate_stores_compare_only_their_overlap(tmp_path, monkeypatch):
    """Only the rows both cores write decide W633 (each view's elements are made again when
    the pair is compared, not kept); once compared, a loop-free run keeps no copy of either
    write."""
    from nkirun.runner import cores
    made = []
    needed = cores._SameValues.needed.__func__
    monkeypatch.setattr(cores._SameValues, "needed", classmethod(
        lambda cls, p, b: made.append(needed(cls, p, b)) or made[-1]))
    assert [c for c in _run_codes(tmp_path, _overlapping_stores(2.0, 5.0))
            if c.startswith("W63")] == []
    assert made and made[0] is not None and made[0].wrote == {}
    assert "W633" in _run_codes(tmp_path, _overlapping_stores(3.0, 2.0))


def test_a_shadow_run_pairs_the_loops_transfers_as_the_run_does():
    """float32 everywhere: the shadow must agree exactly, which it does only if each of its
    sendrecvs received what the run's did (the run's pairs, iteration by iteration)."""
    from nkirun.api import shadow
    report = shadow(exchange_loops(), inputs=_inputs(3))
    np.testing.assert_array_equal(report.outputs["y"], _reference(3))
    sends = [r for r in report.rows if r.op == "sendrecv"]
    assert len(sends) == 6
    assert all(r.carried.abs == 0 and r.added.abs == 0 for r in report.rows)
    assert not report.warnings
