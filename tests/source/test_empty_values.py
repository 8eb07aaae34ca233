"""A key written with no value (`shape:` with nothing after the colon, `shape: null`) is a
located error: nothing is ever dropped silently (issue 12). Before, an empty `buffer`/`shape`
made the tensor vanish with every instruction that touched it, `check` said ok and `run`
exited 0 with wrong outputs."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from nkirun.api import check_program
from nkirun.cli import cli

BASE = {"buffer": "sbuf", "shape": "[128, 4]", "dtype": "float32"}


def program(tmp_path, key: str, value: str) -> str:
    fields = dict(BASE)
    fields[key] = value
    body = "\n".join(f"    {k}: {v}" for k, v in fields.items())
    text = ("version: 1\ntensors:\n"
            "  x: {buffer: hbm, shape: [128, 4], dtype: float32, fill: 1}\n"
            f"  t:\n{body}\n"
            "  y: {buffer: hbm, shape: [128, 4], dtype: float32, output: true}\n"
            "instructions:\n  - load: {dst: t, src: x}\n  - store: {dst: y, src: t}\n")
    path = tmp_path / "p.yaml"
    path.write_text(text)
    return str(path), text.splitlines().index(f"    {key}: {value}") + 1


@pytest.mark.parametrize("key,code", [("buffer", "E005"), ("shape", "E005"), ("dtype", "E005"),
                                      ("output", "E006"), ("file", "E006"), ("fill", "E006"),
                                      ("data", "E006")])
@pytest.mark.parametrize("value", ["", "null", "~"])
def test_empty_value_is_a_located_error(tmp_path, key, code, value):
    path, line = program(tmp_path, key, value)
    diags = check_program(path).diagnostics
    hits = [d for d in diags if d.code == code and "has no value" in d.message]
    assert hits, [(d.code, d.message) for d in diags]
    assert hits[0].loc.line == line and hits[0].loc.column == 5 and f"`{key}`" in hits[0].message
    assert len([d for d in diags if d.severity == "error"]) == 1, [d.message for d in diags]


@pytest.mark.parametrize("key", ["buffer", "shape"])
def test_run_refuses_a_program_with_an_empty_value(tmp_path, key):
    path, _ = program(tmp_path, key, "")
    out = tmp_path / "out"
    r = CliRunner().invoke(cli, ["run", path, "--out", str(out)])
    assert r.exit_code == 1 and "has no value" in r.output
    assert not out.exists()
    r = CliRunner().invoke(cli, ["check", path, "--format", "json"])
    assert r.exit_code == 1
    assert [d["code"] for d in json.loads(r.output)["diagnostics"]] == ["E005"]


def test_empty_operand_says_nothing_not_a_number(tmp_path):
    path = tmp_path / "q.yaml"
    path.write_text("version: 1\ntensors:\n"
                    "  x: {buffer: hbm, shape: [4, 4], dtype: float32, fill: 1}\n"
                    "  t: {buffer: sbuf, shape: [4, 4], dtype: float32}\n"
                    "instructions:\n  - load: {dst: , src: x}\n")
    [d] = check_program(str(path)).diagnostics
    assert d.code == "E024" and "got nothing" in d.message and "number" not in d.message
