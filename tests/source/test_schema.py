"""schemas/program.schema.json: generated from the instruction table, committed, and
accepting every program nkirun accepts (programs/, each instruction's own example)."""
from __future__ import annotations

import copy
import json
import pathlib

import jsonschema
import pytest
import yaml
from click.testing import CliRunner

from nkirun.cli import cli
from nkirun.isa import REGISTRY
from nkirun.source.schema import SCHEMA_PATH, dumps, generate
from repo_paths import ROOT

PROGRAMS = sorted((ROOT / "programs").glob("*.yaml"))


@pytest.fixture(scope="module")
def schema():
    s = generate()
    jsonschema.Draft7Validator.check_schema(s)
    return s


@pytest.fixture(scope="module")
def validator(schema):
    return jsonschema.Draft7Validator(schema)


def test_committed_schema_is_up_to_date():
    committed = pathlib.Path(SCHEMA_PATH).read_text()
    assert committed == dumps(), ("schemas/program.schema.json is stale: run "
                                  "`python -m nkirun.cli.regenerate`")


def test_cli_schema_prints_it():
    r = CliRunner().invoke(cli, ["schema"])
    assert r.exit_code == 0
    assert json.loads(r.stdout) == generate()


def test_every_registered_op_and_keyword_appears(schema):
    inst = schema["definitions"]["instruction"]
    assert set(inst["properties"]) == set(REGISTRY) | {"for", "while"}  # + runtime loops
    for name, spec in REGISTRY.items():
        d = schema["definitions"][f"op_{name}"]
        assert set(d["properties"]) == set(spec.param_names), name
        assert d["required"] == [p.name for p in spec.params if p.required]
        assert d["additionalProperties"] is False


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_programs_validate(validator, path):
    doc = yaml.safe_load(path.read_text())
    errors = [e.message for e in validator.iter_errors(doc)]
    assert not errors, errors


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_each_instructions_example_validates(validator, name):
    example = REGISTRY[name].example
    assert example, f"{name} has no SPEC.example"
    entries = yaml.safe_load(example)
    entries = entries if isinstance(entries, list) else [entries]
    doc = {"version": 1, "instructions": entries}
    errors = [e.message for e in validator.iter_errors(doc)]
    assert not errors, errors


BASE = {"version": 1,
        "tensors": {"t": {"buffer": "sbuf", "shape": [128, 8], "dtype": "bf16"},
                    "lo": {"buffer": "sbuf", "shape": [128, 1], "dtype": "float32",
                           "fill": "fp32.min"}},
        "instructions": [{"range_select": {
            "dst": "t[:, 0:4]", "on_true_tile": "t", "comp_op0": "np.greater_equal",
            "comp_op1": "less", "bound0": "lo", "bound1": "lo", "reduce_cmd": "reset_reduce",
            "reduce_op": "max", "on_false_value": "fp32.min", "range_start": 0, "dtype": "nl.fp32",
            "mask": None}},
            {"nisa.memset": {"dst": "t", "value": "-inf"}}]}


def test_accepts_the_documented_spellings(validator):
    assert not [e.message for e in validator.iter_errors(BASE)]


def _bad(path, value):
    doc = copy.deepcopy(BASE)
    node = doc
    for k in path[:-1]:
        node = node[k]
    if value is KeyError:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return doc


@pytest.mark.parametrize("path,value", [
    (("version",), 2),
    (("target",), "trn9"),
    (("tensors", "t", "dtype"), "float64"),
    (("tensors", "t", "buffer"), "dram"),
    (("tensors", "t", "shape"), [128, 0]),
    (("tensors", "t", "colour"), "red"),
    (("tensors", "lo", "data"), [[1]]),  # fill and data
    (("tensors", "t", "buffer"), KeyError),
    (("instructions", 0, "range_select", "comp_op0"), "greatest"),
    (("instructions", 0, "range_select", "reduce_cmd"), "reduce_all"),
    (("instructions", 0, "range_select", "reduce_op"), "add"),  # range_select: max only
    (("instructions", 0, "range_select", "bogus"), 1),
    (("instructions", 0, "range_select", "bound1"), KeyError),
    (("instructions", 0, "range_select", "range_start"), 1.5),
    (("instructions", 0, "range_select", "on_false_value"), "minus infinity"),
    (("instructions", 0, "range_select", "dst"), "t[:, 0:4"),
    (("instructions", 1), {"memset": {"dst": "t", "value": 0}, "load": {}}),
    (("instructions", 1), {"nisa.memzap": {"dst": "t", "value": 0}}),
])
def test_rejects(validator, path, value):
    assert list(validator.iter_errors(_bad(path, value))), (path, value)
