"""Runtime loops in both program formats (source/loops.py): the YAML `for:`/`while:`
entries with a `body`, the text `for ...`/`while ...`/`end` lines, and `convert` between
them keeping every loop (the IR compares equal, locations aside)."""
import pytest

from nkirun.api import check
from nkirun.source.text_front import parse_text
from nkirun.source.write import to_text, to_yaml
from nkirun.source.yaml_front import parse_yaml

YAML = """\
version: 1
tensors:
  c: {buffer: hbm, shape: [1, 1], dtype: int32, data: [[2]]}
  s: {buffer: sbuf, shape: [1, 1], dtype: int32}
  y: {buffer: hbm, shape: [1, 1], dtype: int32, output: true}
instructions:
  - register_alloc: {dst: n}
  - register_load: {dst: n, src: c}
  - register_alloc: {dst: go, x: 1}
  - for:
      index: i
      start: 1
      stop: n
      step: 2
      name: outer
      body:
        - for: {index: j, stop: 3, body: []}
        - register_store: {dst: s, src: i}
        - while:
            cond: go
            next: n
            body:
              - register_move: {dst: n, src: 0}
  - for:
      index: i
      stop: 2
      body:
        - register_store: {dst: s, src: i}
  - dma_copy: {dst: y, src: s}
"""


def _parse_yaml(text):
    program, diags = parse_yaml(text, "p.yaml", ".")
    assert [d for d in diags if d.is_error] == []
    return program


def test_yaml_loops_become_spans_of_the_flat_instruction_list():
    p = _parse_yaml(YAML)
    assert [i.op for i in p.instructions] == [
        "register_alloc", "register_load", "register_alloc", "register_store",
        "register_move", "register_store", "dma_copy"]
    spans = [(lp.kind, lp.name, lp.first, lp.end) for lp in p.loops]
    assert spans == [("for", "outer", 3, 5), ("for", "j", 3, 3), ("while", "go", 4, 5),
                     ("for", "i", 5, 6)]
    outer = p.loops[0]
    assert (outer.start, str(outer.stop), outer.step, outer.named) == (1, "n", 2, True)
    assert p.loops[2].next == "n"


@pytest.mark.parametrize("first", ["yaml", "text"])
def test_convert_round_trips_loops(first):
    p = _parse_yaml(YAML)
    text = to_text(p)
    assert "for index=i start=1 stop=n step=2 name=outer" in text and "\nend" in text
    q, diags = parse_text(text, "p.nkis", ".")
    assert [d for d in diags if d.is_error] == []
    assert q.loops == p.loops and q.instructions == p.instructions
    r = _parse_yaml(to_yaml(q if first == "text" else p))
    assert r.loops == p.loops and r.instructions == p.instructions
    assert to_yaml(r) == to_yaml(p)


def test_default_names_get_the_line_when_shared():
    p = _parse_yaml(YAML.replace("      name: outer\n", ""))
    names = [lp.name for lp in p.loops]
    assert names == ["i@10", "j", "go", "i@23"]


def test_text_form_errors():
    _, diags = parse_text("version 1\ntensor y hbm [1, 1] int32 output\nend\n", "p.nkis", ".")
    assert [d.code for d in diags] == ["E652"]
    _, diags = parse_text("version 1\nfor index=i stop=2 bogus=1\nend\n", "p.nkis", ".")
    assert [d.code for d in diags] == ["E652"] and "bogus" in diags[0].message


@pytest.mark.parametrize("entry,word", [
    ("- for: {index: i, stop: 2, body: 3}", "must be a list"),
    ("- for: {stop: 2, body: []}", "missing `index`"),
    ("- while: {body: []}", "missing `cond`"),
    ("- for: {index: i, stop: 1.5, body: []}", "integer or a register"),
    ("- for: {index: i, stop: 2, step: n, body: []}", "positive integer"),
    ("- for: {index: i, stop: 2, name: a, body: [{for: {index: j, stop: 1, name: a, "
     "body: []}}]}", "two loops are named `a`")])
def test_yaml_loop_errors_are_e652(entry, word):
    text = "version: 1\ntensors: {}\ninstructions:\n  " + entry + "\n"
    diags = [d for d in check(text) if d.code == "E652"]
    assert diags and word in diags[0].message, [d.message for d in check(text)]


def test_schema_accepts_loops():
    import json
    import jsonschema
    import yaml
    from nkirun.source.schema import generate as program_schema
    jsonschema.validate(yaml.safe_load(YAML), program_schema())
    bad = yaml.safe_load(YAML.replace("stop: n\n", "stopp: n\n"))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, program_schema())
    json.dumps(program_schema())
