"""The streamed JSON writer (speed.STREAMED_JSON) against its plain twin json.dumps(indent=2)."""
import io
import json
import math

import pytest

from nkirun import speed
from nkirun.show.json_out import write_json

DOCS = [
    {},
    [],
    {"a": 1},
    {"target": "trn2", "total_ns": 12.5, "engines": {"vector": {"clock_ghz": 1.4, "busy_ns": 3}},
     "instructions": [{"index": i, "op": "tensor_copy", "queues": [0, 1], "wait": None,
                       "assumed": i % 2 == 0, "name": "é\u2028\"q\""} for i in range(1300)]},
    {"rows": [[1, 2], [], {"x": []}], "scalars": [1, 2.5, "s", None, True], "empty": {}},
    {1: "int key", 2.5: "float key", True: "bool key", None: "null key"},
    [[[[1]]], {"deep": [{"deeper": [{"x": 1}]}]}],
    {"nan": [math.inf, -math.inf]},
    "just a string",
    3,
]


def _streamed(doc) -> str:
    out = io.StringIO()
    write_json(doc, out)
    return out.getvalue()


@pytest.mark.parametrize("doc", DOCS)
def test_streamed_parses_to_the_plain_twins_value(doc, monkeypatch):
    text = _streamed(doc)
    monkeypatch.setattr(speed, "STREAMED_JSON", False)
    plain = _streamed(doc)
    assert plain == json.dumps(doc, indent=2) + "\n"
    assert json.loads(text) == json.loads(plain)
    assert text.endswith("\n")


def test_a_long_list_of_rows_is_one_line_per_row():
    doc = {"instructions": [{"index": i} for i in range(1025)]}
    lines = _streamed(doc).splitlines()
    assert lines[:3] == ["{", '  "instructions": [', '    {"index": 0},']
    assert lines[-3:] == ['    {"index": 1024}', "  ]", "}"]
    assert len(lines) == 1025 + 4


def test_outer_levels_are_indented_as_before():
    doc = {"a": {"b": 1, "c": [1, 2]}}
    assert _streamed(doc) == '{\n  "a": {\n    "b": 1,\n    "c": [1, 2]\n  }\n}\n'


def test_unserialisable_values_fail_as_json_dumps_does():
    with pytest.raises(TypeError):
        _streamed({"x": [{"y": object()}]})
