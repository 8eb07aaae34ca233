"""Everything about one instruction lives in its module nkirun/isa/<name>.py: the stages
around it (front ends, the kernel front end, checker, runner, scheduler, show, cli, the
shared isa helpers) read facts from the spec and never test for an instruction by name.

What counts as naming one here: an instruction's name as a string in a comparison (`op ==
"nc_matmul"`, `op in ("iota", "affine_select")`), as a key of a dict literal (a table
keyed by instruction), or in a set literal / `frozenset(...)` / `set(...)` of names.
Calling an instruction by name stays allowed: `nl.copy` records a `tensor_copy`, a loop
lowers to `register_move`s — that is what the `nl` function or the construct means, not
a fact about the instruction. hw/ is left out: its operator and activation-function
names (`reciprocal`) share spellings with instructions.
"""
from __future__ import annotations

import ast

import pytest

from nkirun.isa import MODULES
from repo_paths import ROOT

PACKAGE = ROOT / "nkirun"
NAMES = frozenset(MODULES)


def _stage_modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] == "hw" or (rel.parts[0] == "isa" and len(rel.parts) == 2
                                    and rel.stem in NAMES):
            continue
        yield path


def _strings(node) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [s for e in node.elts for s in _strings(e)]
    return []


def named_instructions(source: str) -> list[tuple[int, str]]:
    """(line, name) for every instruction name `source` tests for or tabulates."""
    out = []
    for node in ast.walk(ast.parse(source)):
        found: list[str] = []
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                found += _strings(side)
        elif isinstance(node, ast.Dict):
            for key in node.keys:
                found += _strings(key) if key is not None else []
        elif isinstance(node, ast.Set):
            found += _strings(node)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("frozenset", "set") and node.args \
                and not isinstance(node.args[0], ast.Set):  # (a set literal: above)
            found += _strings(node.args[0])
        out += [(node.lineno, s) for s in found if s in NAMES]
    return out


@pytest.mark.parametrize("path", list(_stage_modules()),
                         ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_stage_names_an_instruction(path):
    hits = named_instructions(path.read_text(encoding="utf-8"))
    assert not hits, (f"{path.relative_to(ROOT)} names instructions {hits}: put the fact in "
                      "the instruction's SPEC (isa/spec.py, isa/nki_api.py) and read it")


@pytest.mark.parametrize("source, expect", [
    ('if op == "nc_matmul": pass', [(1, "nc_matmul")]),
    ('x = op in ("iota", "affine_select")', [(1, "iota"), (1, "affine_select")]),
    ('T = {"dma_copy": "dst src"}', [(1, "dma_copy")]),
    ('S = frozenset({"load", "store"})', [(1, "load"), (1, "store")]),
    ('S = frozenset(("load",))', [(1, "load")]),
    ('emit("tensor_copy", dst=t)', []),  # recording an instruction is not testing for one
    ('if op == "add": pass', []),
])
def test_the_rule_sees_what_it_should(source, expect):
    assert named_instructions(source) == expect
