"""`nkirun explain OP` / `nkirun ops`: generated from each instruction's SPEC."""
from __future__ import annotations

import io
import json

import pytest
from click.testing import CliRunner
from rich.console import Console

from nkirun.cli import cli
from nkirun.show.explain import describe, render_ops_rich, render_rich, ops_list
from nkirun.isa import REGISTRY


def invoke(*args):
    return CliRunner().invoke(cli, list(args))


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_explain_text_has_every_part(name):
    spec = REGISTRY[name]
    r = invoke("explain", name)
    assert r.exit_code == 0, r.output
    raw = r.stdout
    # prose wraps between words within 80 columns (issue 12); compare with words rejoined
    assert all(len(line) <= 80 for line in raw.splitlines()
               if not line.startswith("source: ") and " " in line.strip()
               and line.strip() not in {x.strip() for x in (spec.example or "").splitlines()})
    out = " ".join(raw.split())
    assert out.startswith(f"{name} — {' '.join(spec.summary.split())}")
    assert f"engine: {spec.engine}" in out
    for p in spec.params:
        assert f" {p.name}: " in out, p.name
    assert "semantics:" in out and " ".join(spec.semantics.split()) in out
    assert " ".join(spec.cost_formula.split()) in out
    assert f"source: https://awsdocs-neuron.readthedocs-hosted.com/" in raw
    if spec.cost_assumed:
        assert "assumed" in out
    if spec.example:
        assert spec.example.splitlines()[0] in raw  # code is never re-wrapped
    assert "\x1b[" not in raw  # plain when piped


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_explain_json_matches_the_spec(name):
    spec = REGISTRY[name]
    r = invoke("explain", name, "--format", "json")
    assert r.exit_code == 0
    d = json.loads(r.stdout)
    assert d["name"] == name and d["engine"] == spec.engine
    assert [p["name"] for p in d["params"]] == list(spec.param_names)
    for p, q in zip(d["params"], spec.params):
        assert p["required"] == q.required and p["output"] == q.out
        if q.dtypes is not None:
            assert p["dtypes"] == sorted(q.dtypes)
        if q.buffers is not None:
            assert p["buffers"] == sorted(q.buffers)
    tags = [t for t in ("[OLD-ISA]",) if t in (spec.cost_note or "") + spec.cost_formula]
    assert d["cost"] == {"formula": spec.cost_formula, "assumed": spec.cost_assumed,
                         "note": spec.cost_note or None,
                         "tags": [m for m in d["cost"]["tags"] if m.split(":")[0] in tags]}
    assert len(d["cost"]["tags"]) == len(tags)  # each tag used says what it means
    assert d["semantics"] == spec.semantics


def test_explain_range_select_details():
    d = describe(REGISTRY["range_select"])
    assert d["signature"].startswith("range_select(dst, on_true_tile, comp_op0, comp_op1, "
                                     "bound0, bound1, *, reduce_cmd=idle")
    assert "on_false_value=fp32.min" in d["signature"]
    params = {p["name"]: p for p in d["params"]}
    assert params["bound0"]["dtypes"] == ["float32"] and params["bound0"]["per_partition"]
    assert params["reduce_cmd"]["choices"] == ["idle", "reset", "reduce", "reset_reduce"]
    assert params["comp_op0"]["choices"] == ["equal", "less", "less_equal", "greater",
                                             "greater_equal"]
    assert "bound0: dtype float32; one element per partition, shape (P, 1)" in d["constraints"]
    assert any(c.startswith("same number of partitions: dst, on_true_tile") for c in
               d["constraints"])


def test_explain_accepts_nisa_prefix_and_rejects_unknown():
    assert invoke("explain", "nisa.range_select").exit_code == 0
    r = invoke("explain", "rang_select")
    assert r.exit_code == 1
    assert "unknown instruction `rang_select`" in r.stderr
    assert "did you mean `range_select`?" in r.stderr
    r = invoke("explain", "zzz", "--format", "json")
    assert r.exit_code == 1 and r.stdout == ""


def test_ops_lists_every_instruction():
    r = invoke("ops")
    assert r.exit_code == 0
    names = [line.split()[0] for line in r.stdout.splitlines()]
    assert names == sorted(REGISTRY)
    r = invoke("ops", "--format", "json")
    rows = json.loads(r.stdout)["instructions"]
    assert {x["name"]: x["engine"] for x in rows} == {n: s.engine for n, s in REGISTRY.items()}


def test_rich_rendering():
    buf = io.StringIO()
    console = Console(file=buf, width=140, force_terminal=True, highlight=False)
    render_rich(describe(REGISTRY["range_select"]), console)
    render_ops_rich(ops_list(), console)
    out = buf.getvalue()
    assert "\x1b[" in out and "parameters" in out and "reset_reduce" in out
    assert f"{len(REGISTRY)} instructions" in out
