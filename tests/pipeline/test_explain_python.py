"""Issue 25: `nkirun explain` speaks Python too: `explain nl.exp` says what the call
records, and an instruction's YAML example has its nisa.* spelling beside it."""
from __future__ import annotations

import ast
import json

import pytest
from click.testing import CliRunner

from nkirun.cli import cli
from nkirun.isa import REGISTRY
from nkirun.show.python_example import nisa_example


def test_explain_nl_exp():
    r = CliRunner().invoke(cli, ["explain", "nl.exp"])
    assert r.exit_code == 0, r.output
    assert "nl.exp: records activation" in r.output and "r = nl.exp(t)" in r.output
    assert "- activation: {dst: r, op: exp, data: t}" in r.output


@pytest.mark.parametrize("name, records", [("nl.mean", ["tensor_reduce", "tensor_scalar"]),
                                           ("nki.language.add", ["tensor_tensor"]),
                                           ("nl.matmul", ["nc_matmul"])])
def test_explain_nl_json(name, records):
    r = CliRunner().invoke(cli, ["explain", name, "--format", "json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["records"] == records


def test_explain_unknown_nl_function_suggests():
    r = CliRunner().invoke(cli, ["explain", "nl.expp"])
    assert r.exit_code == 1 and "did you mean `exp`" in r.output


def test_every_python_example_is_python():
    shown = 0
    for name in REGISTRY:
        text = nisa_example(REGISTRY[name])
        if text:
            ast.parse(text)
            assert all(line.startswith(("nisa.", " ")) for line in text.splitlines())
            assert max(map(len, text.splitlines())) <= 78
            shown += 1
    assert shown > 40


def test_explain_instruction_shows_both():
    r = CliRunner().invoke(cli, ["explain", "nc_matmul"])
    assert "in a Python kernel:\n  nisa.nc_matmul(dst=acc, stationary=aT, moving=b)" in r.output
