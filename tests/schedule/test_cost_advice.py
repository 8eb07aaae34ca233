"""The `advice` view (schedule/advice.py): a latency-bound kernel named as such, each DMA's
bytes, descriptor size and achieved rate with small-descriptor warnings, a roofline line,
and the reordering hints in the plain report."""
from __future__ import annotations

import itertools

import yaml
from click.testing import CliRunner

from nkirun import api
from nkirun.cli import cli
from nkirun.schedule.advice import advice

_n = itertools.count()


def _program(tmp_path, tensors, instructions, target="trn2"):
    doc = {"version": 1, "target": target, "tensors": tensors, "instructions": instructions}
    path = tmp_path / f"a{next(_n)}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(path)


def _t(shape, buffer="sbuf", **kw):
    return {"buffer": buffer, "shape": list(shape), "dtype": "float32", "fill": 1.0, **kw}


def test_a_chain_of_tiny_dependent_transfers_is_latency_bound(tmp_path):
    tensors = {"x": _t((128, 1), "hbm"), "a": _t((128, 1)), "y": _t((128, 1), "hbm")}
    steps = []
    for _ in range(4):
        steps += [{"load": {"dst": "a", "src": "x"}}, {"store": {"dst": "x", "src": "a"}}]
    a = advice(api.cost(_program(tmp_path, tensors, steps)))
    assert a["latency"]["latency_bound"] and a["latency"]["waiting_share"] > 0.8
    assert a["latency"]["assumed_share"] == 0  # documented costs only
    row = a["dma"][0]
    assert row["descriptor_bytes"] == 4 and row["bytes_each"] == 512
    assert any("descriptors" in w for w in row["warnings"])
    assert any("32 KiB" in w for w in row["warnings"])


def test_a_large_contiguous_load_has_no_warning_and_a_memory_roofline(tmp_path):
    tensors = {"x": _t((128, 8192), "hbm"), "a": _t((128, 8192))}
    a = advice(api.cost(_program(tmp_path, tensors, [{"load": {"dst": "a", "src": "x"}}])))
    row = a["dma"][0]
    assert row["descriptor_bytes"] == 32768 and not row["warnings"]
    assert 0 < row["of_peak"] <= 1
    assert not a["latency"]["latency_bound"]
    assert a["roofline"]["bound"] == "memory" and a["roofline"]["hbm_bytes"] == 128 * 8192 * 4


def test_plain_report_has_the_advice_and_reorder_hints(tmp_path):
    # the Vector engine idles waiting for the load, then a later independent copy waits
    # behind the dependent one: the copy could have run in that gap
    tensors = {"x": _t((128, 2048), "hbm"), "a": _t((128, 2048)), "b": _t((128, 2048)),
               "c": _t((128, 64)), "d": _t((128, 64))}
    path = _program(tmp_path, tensors, [
        {"load": {"dst": "a", "src": "x"}},
        {"tensor_copy": {"dst": "b", "src": "a", "engine": "vector"}},
        {"tensor_copy": {"dst": "d", "src": "c", "engine": "vector"}}])
    r = CliRunner().invoke(cli, ["cost", path, "--view", "advice"])
    assert r.exit_code == 0, r.output
    assert "what to change" in r.output and "roofline:" in r.output
    assert "reordering: 1 instruction" in r.output and "could start at" in r.output


def test_the_share_resting_on_an_assumed_cost_is_named(tmp_path):
    # exponential (trn3) has no documented cost formula (cost_assumed): an assumption
    tensors = {"a": _t((128, 512)), "b": _t((128, 512)), "e": _t((128, 512))}
    s = api.cost(_program(tmp_path, tensors, [
        {"tensor_copy": {"dst": "b", "src": "a", "engine": "vector"}},
        {"exponential": {"dst": "e", "src": "b"}}], target="trn3"))
    a = advice(s)
    assert 0 < a["latency"]["assumed_share"] < 1
