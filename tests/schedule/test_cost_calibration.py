"""The calibrated cost model's invariants (docs/cost.md) and the published rankings of the
calibration kernels (benchmarks/calibration/), at shapes small enough for the suite. No
timing is asserted here: speed lives in benchmarks/."""
from __future__ import annotations

import dataclasses
import itertools
import json
import sys

import pytest
import yaml
from click.testing import CliRunner

from nkirun import api
from nkirun.hw import cost_tables
from nkirun.schedule.model import QUEUE, RAW
from repo_paths import ROOT

CAL = ROOT / "benchmarks" / "calibration"
_n = itertools.count()
LATENCY_NS = 1300.0  # the DMA bandwidth guide's ~1300 ns


def program(tmp_path, tensors, instructions, target="trn2"):
    doc = {"version": 1, "target": target, "tensors": tensors, "instructions": instructions}
    path = tmp_path / f"c{next(_n)}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(path)


def t(shape, buffer="sbuf", dtype="float32", **kw):
    return {"buffer": buffer, "shape": list(shape), "dtype": dtype, "fill": 1.0, **kw}


def test_a_load_does_not_wait_behind_an_unrelated_store(tmp_path):
    # a long Vector chain produces p; its store waits for it; the load after it in program
    # order touches other tensors and must start at once on the idle engines
    tensors = {"p": t((128, 4096)), "q": t((128, 4096)), "out": t((128, 4096), "hbm"),
               "x": t((128, 512), "hbm"), "y": t((128, 512))}
    s = api.cost(program(tmp_path, tensors, [
        {"tensor_copy": {"dst": "q", "src": "p"}},
        {"tensor_copy": {"dst": "p", "src": "q"}},
        {"store": {"dst": "out", "src": "p"}},
        {"load": {"dst": "y", "src": "x"}}]))
    copy2, store, load = s.slots[1], s.slots[2], s.slots[3]
    assert store.start_ns >= copy2.end_ns
    assert load.start_ns == 0 and load.end_ns < copy2.end_ns
    assert load.wait_kind not in (QUEUE, RAW)


def test_dmas_overlap_up_to_the_engine_limit(tmp_path):
    # 16 transfers of 8 partitions each use their own engine and run together; a 17th on
    # partitions 0-7 shares engine 0 and streams after the first, its latency overlapped
    tensors = {"x": t((128, 512), "hbm"), "a": t((128, 512)), "b": t((8, 512))}
    loads = [{"load": {"dst": f"a[{8 * k}:{8 * k + 8}, :]", "src": f"x[{8 * k}:{8 * k + 8}, :]"}}
             for k in range(16)]
    loads.append({"load": {"dst": "b", "src": "x[0:8, :]"}})
    s = api.cost(program(tmp_path, tensors, loads))
    first16, extra = s.slots[:16], s.slots[16]
    assert len({x.end_ns for x in first16}) == 1
    one = first16[0].end_ns
    stream = one - LATENCY_NS
    assert extra.queues == (0,) and extra.wait_kind == QUEUE and extra.waited_on == 0
    assert extra.end_ns == pytest.approx(one + stream)
    assert extra.end_ns < 2 * one  # not latency + stream twice


def test_hbm_bandwidth_caps_the_engines(tmp_path, monkeypatch):
    tensors = {"x": t((128, 4096), "hbm"), **{f"a{k}": t((128, 4096)) for k in range(4)}}
    prog = program(tmp_path, tensors, [{"load": {"dst": f"a{k}", "src": "x"}}
                                       for k in range(4)])
    free = api.cost(prog).total_ns
    slow = dataclasses.replace(cost_tables.COST_TABLES[3], hbm_bytes_per_ns=50.0)
    monkeypatch.setitem(cost_tables.COST_TABLES, 3, slow)
    capped = api.cost(prog).total_ns
    nbytes = 128 * 4096 * 4
    # four 2 MiB loads through a 50 B/ns HBM: the HBM time, not the engines', sets the pace
    assert capped == pytest.approx(LATENCY_NS + 4 * nbytes / 50.0, rel=1e-6)
    assert free < capped


def test_row_tiled_matmuls_share_the_pe_array(tmp_path):
    tensors = {"st": t((64, 128), dtype="bfloat16"), "mv": t((64, 512), dtype="bfloat16"),
               "d0": t((128, 512), "psum"), "d1": t((128, 512), "psum")}

    def mm(dst, row):
        return {"nc_matmul": {"dst": dst, "stationary": "st", "moving": "mv",
                              "tile_position": [row, 0], "tile_size": [64, 128]}}
    s = api.cost(program(tmp_path, tensors, [mm("d0", 0), mm("d1", 64)]))
    a, b = s.slots
    assert a.start_ns == b.start_ns == 0  # disjoint row tiles run at once
    assert a.queue == "tensor[r0-63,c0-127]" and b.queue == "tensor[r64-127,c0-127]"
    s = api.cost(program(tmp_path, tensors, [mm("d0", 0), mm("d1", 0)]))
    a, b = s.slots
    assert b.start_ns == pytest.approx(a.end_ns)  # the same tile: one after the other


def test_dge_instructions_occupy_their_issuer(tmp_path):
    # two transfers on different partitions (different engines): only the issuer serialises
    tensors = {"x": t((128, 512), "hbm"), "a": t((128, 512)), "b": t((128, 512))}
    s = api.cost(program(tmp_path, tensors, [
        {"dma_copy": {"dst": "a[0:64, :]", "src": "x[0:64, :]", "dge_mode": "hwdge"}},
        {"dma_copy": {"dst": "b[64:128, :]", "src": "x[64:128, :]", "dge_mode": "hwdge"}}]))
    a, b = s.slots
    dge = cost_tables.COST_TABLES[3].dge_ns
    assert b.start_ns == pytest.approx(a.start_ns + dge)  # the sync engine builds in turn
    assert a.cycles > api.cost(program(tmp_path, tensors, [
        {"dma_copy": {"dst": "a", "src": "x"}}])).slots[0].cycles


def _calibration():
    from nkirun.source.kernel.modules import install_fallback_finder
    install_fallback_finder()
    if str(CAL) not in sys.path:
        sys.path.insert(0, str(CAL))
    import run
    return run


def _total(kernel, args, target="trn1"):
    run = _calibration()
    p = dict(module=kernel[0], kernel=kernel[1], args=args, target=target, metric="total")
    return run.predict(p)[0]


def test_matmul_tutorial_ranking_holds():
    run = _calibration()
    args = (run._bf16(1024, 2048), run._bf16(1024, 2048))
    times = [_total(("matmul", f"matmul_{v}"), args) for v in ("v1", "v2", "v3", "v4")]
    assert times[0] > times[1] > times[2] > times[3]


def test_mamba_and_layernorm_rankings_hold():
    run = _calibration()
    v1, v2 = (_total(("small", f"mamba_{v}"), run.mamba_args(512, 512)) for v in ("v1", "v2"))
    assert v2 < v1
    ln = (run._f32(300, 1000), run._f32(1000), run._f32(1000))
    assert _total(("small", "layernorm_v2"), ln) < _total(("small", "layernorm_v1"), ln)


def test_mamba_v3_beats_v2_once_the_sequence_outgrows_one_tile():
    # seq 1024: v2's state-invariant delta*u is 4 KiB per partition, beyond what the compiler
    # keeps (schedule/recompute.py), so v2 computes it every state; v3's 512-column chunks
    # are kept. At seq 512 both reuse it and v3 only adds the carried scan column.
    run = _calibration()
    v2, v3 = (_total(("small", f"mamba_{v}"), run.mamba_args(256, 1024)) for v in ("v2", "v3"))
    assert v3 < v2
    v2, v3 = (_total(("small", f"mamba_{v}"), run.mamba_args(256, 512)) for v in ("v2", "v3"))
    assert v2 <= v3 < 1.1 * v2


def _elided(s):
    from nkirun.schedule.model import RECOMPUTE
    return [x for x in s.slots if x.wait_kind == RECOMPUTE]


def test_a_recomputed_value_is_elided(tmp_path):
    # the second product reads the same unchanged elements into a fresh tile: no engine time,
    # starts once the first one's value exists; readers of its tile wait for that
    tensors = {"a": t((128, 256)), "b": t((128, 256)), "p": t((128, 256)), "q": t((128, 256)),
               "r": t((128, 256))}
    mul = {"op": "multiply", "data1": "a", "data2": "b"}
    s = api.cost(program(tmp_path, tensors, [
        {"tensor_tensor": {"dst": "p", **mul}},
        {"tensor_tensor": {"dst": "q", **mul}},
        {"tensor_copy": {"dst": "r", "src": "q"}}]))
    first, again, use = s.slots
    assert _elided(s) == [again] and again.waited_on == 0 and again.cycles == 0
    assert again.start_ns == again.end_ns == first.end_ns
    assert "elided" in again.wait and use.start_ns > first.end_ns


@pytest.mark.parametrize("between", [
    {"tensor_copy": {"dst": "a", "src": "b"}},   # an input changed: a new value
    {"tensor_copy": {"dst": "p", "src": "b"}},   # the first result was overwritten
])
def test_a_changed_input_or_lost_result_is_computed_again(tmp_path, between):
    tensors = {"a": t((128, 256)), "b": t((128, 256)), "p": t((128, 256)), "q": t((128, 256))}
    mul = {"op": "multiply", "data1": "a", "data2": "b"}
    s = api.cost(program(tmp_path, tensors, [
        {"tensor_tensor": {"dst": "p", **mul}}, between, {"tensor_tensor": {"dst": "q", **mul}}]))
    assert not _elided(s) and s.slots[2].cycles > 0


def test_in_place_updates_wide_values_and_dma_are_never_elided(tmp_path):
    tensors = {"a": t((128, 256)), "w": t((128, 1024)), "v": t((128, 1024)),
               "u": t((128, 1024)), "x": t((128, 256), "hbm"), "y": t((128, 256))}
    s = api.cost(program(tmp_path, tensors, [
        {"activation": {"dst": "a", "op": "exp", "data": "a"}},   # reads what it writes
        {"activation": {"dst": "a", "op": "exp", "data": "a"}},
        {"tensor_copy": {"dst": "v", "src": "w"}},                 # 4 KiB per partition
        {"tensor_copy": {"dst": "u", "src": "w"}},
        {"dma_copy": {"dst": "y", "src": "x"}},
        {"dma_copy": {"dst": "y", "src": "x"}}]))
    assert not _elided(s)


def test_a_language_level_load_of_unchanged_elements_is_elided(tmp_path):
    # nl.load (IR `load`) is a value to the compiler: loading the same unchanged HBM
    # elements again into a tile of the same shape costs nothing; a store to them in
    # between, a wider tile (over 2 KiB per partition) or an explicit dma_copy pay again
    tensors = {"x": t((128, 256), "hbm"), "a": t((128, 256)), "b": t((128, 256)),
               "c": t((128, 256)), "w": t((128, 1024), "hbm"), "p": t((128, 1024)),
               "q": t((128, 1024))}
    s = api.cost(program(tmp_path, tensors, [
        {"load": {"dst": "a", "src": "x"}},
        {"load": {"dst": "b", "src": "x"}},    # elided
        {"store": {"dst": "x", "src": "a"}},
        {"load": {"dst": "c", "src": "x"}},    # x was written: paid
        {"load": {"dst": "p", "src": "w"}},
        {"load": {"dst": "q", "src": "w"}}]))  # 4 KiB per partition: paid
    assert [x.index for x in _elided(s)] == [1]
    assert s.slots[1].cycles == 0 and s.slots[1].start_ns == s.slots[0].end_ns


def test_value_key_is_the_plain_definition(tmp_path):
    # the scheduler elides exactly the instructions whose value_key and read versions match
    # an earlier intact result (recompute.py), checked here against a direct replay
    from nkirun.schedule import recompute
    from nkirun.api_kernel import require_valid, trace_call
    run = _calibration()
    import small
    traced = trace_call(small.mamba_v2, run.mamba_args(256, 512), {}, "trn1")
    bound, _ = require_valid(traced)
    from nkirun.schedule import schedule
    got = {x.index for x in _elided(schedule(traced.program, bound))}
    seen, versions, want = {}, {}, set()
    for b in bound:
        acc = b.accesses()
        reads = tuple(dict.fromkeys(r.decl.name for _, r in acc.reads))
        writes = tuple(dict.fromkeys(r.decl.name for _, r in acc.writes))
        key = recompute.value_key(b)
        full = None if key is None else (key, tuple(versions.get(n, 0) for n in reads))
        hit = seen.get(full) if full else None
        if hit is not None and all(versions.get(n, 0) == v for n, v in hit):
            want.add(b.inst.index)
        for n in writes:
            versions[n] = versions.get(n, 0) + 1
        if full and b.inst.index not in want:
            seen[full] = tuple((n, versions[n]) for n in writes)
    assert got == want and len(got) == 2 * 15  # delta*u: 15 of 16 states, 2 channel tiles


def test_single_dma_and_tiny_chain_points():
    run = _calibration()
    pts = {p["name"]: p for p in run.points(quick=True)}
    dma = run.predict(pts["single DMA [4,4096] bf16 (engine time)"])[0]
    assert dma == pytest.approx(1416, rel=0.30)
    tiny = run.predict(pts["dependent tiny Scalar instructions (interval)"])[0]
    assert tiny == pytest.approx(189, rel=0.05)


def test_compare_cli_json_and_text(monkeypatch):
    from nkirun.cli import cli as main
    monkeypatch.chdir(ROOT)
    r = CliRunner().invoke(main, ["cost", "programs/causal_softmax.yaml", "--compare-target",
                                  "trn1", "--format", "json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert (d["a"]["target"], d["b"]["target"]) == ("trn2", "trn1")
    assert {"engine_deltas", "op_deltas", "explanation", "ratio_b_over_a"} <= set(d)
    assert d["a"]["reorder"]["instructions"] >= 0
    r = CliRunner().invoke(main, ["cost", "programs/causal_softmax.yaml", "--compare",
                                  "programs/softmax_exponential.yaml"])
    assert r.exit_code == 0, r.output
    assert "where the difference comes from" in r.output and "makespan" in r.output


def test_reorder_hint_names_an_instruction_that_could_start_earlier(tmp_path):
    # vector: a copy waiting for a long GpSimd producer, then an independent copy that was
    # ready at 0 but queued behind it in program order
    tensors = {"a": t((128, 4096)), "b": t((128, 4096)), "c": t((128, 64)), "d": t((128, 64))}
    s = api.cost(program(tmp_path, tensors, [
        {"memset": {"dst": "a", "value": 1.0, "engine": "gpsimd"}},
        {"tensor_copy": {"dst": "b", "src": "a", "engine": "vector"}},
        {"tensor_copy": {"dst": "d", "src": "c", "engine": "vector"}}]))
    from nkirun.schedule.advice import reorder_hints
    h = reorder_hints(s)
    assert h["instructions"] == 1 and h["top"][0]["index"] == 2
    assert h["top"][0]["could_start_ns"] == 0.0


def test_compare_refuses_a_trace_and_reports_a_missing_file(monkeypatch):
    from nkirun.cli import cli as main
    monkeypatch.chdir(ROOT)
    r = CliRunner().invoke(main, ["cost", "programs/causal_softmax.yaml", "--compare-target",
                                  "trn1", "--trace-out", "t.json"])
    assert r.exit_code == 2 and "--trace-out" in r.output
    r = CliRunner().invoke(main, ["cost", "programs/causal_softmax.yaml", "--compare",
                                  "no/such.yaml"])
    assert r.exit_code == 1 and "not found" in r.output


def test_compare_two_kernel_shapes(monkeypatch):
    from nkirun.cli import cli as main
    monkeypatch.chdir(ROOT)
    k = "programs/kernels/matmul_tiled.py::matmul_tiled"
    r = CliRunner().invoke(main, ["cost", k, "--shape", "lhsT=bfloat16[256,128]", "--shape",
                                  "rhs=bfloat16[256,512]", "--compare-shape",
                                  "lhsT=bfloat16[512,128]", "--compare-shape",
                                  "rhs=bfloat16[512,512]", "--format", "json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["b"]["instructions"] > d["a"]["instructions"] and d["ratio_b_over_a"] > 1


def test_compare_explains_equal_makespans_without_a_winner():
    from nkirun.schedule.compare import explain
    side = {"label": "A", "total_ns": 100.0, "bottleneck": "dma", "busy_ns": {"dma": 90.0},
            "reorder": {"instructions": 0, "idle_ns_fillable": 0.0}}
    lines = explain(side, dict(side, label="B"))
    assert lines[0] == "both take 100.0 ns: the same makespan"
    assert not any("faster" in line for line in lines)
    faster = explain(dict(side, total_ns=50.0), dict(side, label="B"))
    assert faster[0].startswith("A is 2.00x faster")
