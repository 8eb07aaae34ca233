"""Issue 12, "Self-contained docs" and "Editor": the README and docs/ never send a reader
outside the repository; docs/diagnostics.md is made from the installed code table; the
schema ships in the package with an $id, titles, snippets and readable messages; every
YAML example carries the yaml-language-server modeline."""
from __future__ import annotations

import json
import pathlib
import re

import pytest
from click.testing import CliRunner

from nkirun import codes
from nkirun.cli import cli
from nkirun.isa import REGISTRY
from nkirun.source.schema import PACKAGE_SCHEMA_PATH, SCHEMA_ID, dumps, generate

from repo_paths import ROOT
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
OUTSIDE = re.compile(r"\.\./shared|nki-reference|seed page|seed's|isa-coverage|"
                     r"kernel-contract|code-review-20|ux-review-20", re.IGNORECASE)
LINK = re.compile(r"\]\(([^)#]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_pages_never_send_a_reader_outside_the_repository(page):
    text = page.read_text()
    assert not OUTSIDE.findall(text), OUTSIDE.findall(text)
    for target in LINK.findall(text):  # relative links resolve inside the repository
        if re.match(r"[a-z]+://", target):
            assert target.startswith("https://"), target
            continue
        path = (page.parent / target).resolve()
        assert path.exists() and ROOT in path.parents, target


def test_program_format_page_covers_the_format():
    text = (ROOT / "docs" / "program-format.md").read_text()
    for word in ("version", "target", "tensors", "instructions", "buffer", "shape", "dtype",
                 "file", "fill", "data", "output", "dst", "fp32.min", "reduce_cmd",
                 "--format json", "E050", "awsdocs-neuron.readthedocs-hosted.com"):
        assert word in text, word
    assert "docs/program-format.md" in (ROOT / "README.md").read_text()


def test_diagnostics_page_is_generated_from_the_installed_table():
    assert (ROOT / "docs" / "diagnostics.md").read_text() == codes.markdown(), (
        "docs/diagnostics.md differs from nkirun/codes.json: edit the table, then run "
        "`python -m nkirun.codes --write`")


def test_every_documented_code_explains():
    for code in re.findall(r"`([EW]\d{3})`", (ROOT / "docs" / "diagnostics.md").read_text()):
        r = CliRunner().invoke(cli, ["explain", code])
        assert r.exit_code == 0 and r.output.startswith(code), code


# ---- the schema ------------------------------------------------------------------------------
def test_schema_ships_in_the_package_and_has_an_id(tmp_path):
    assert pathlib.Path(PACKAGE_SCHEMA_PATH).read_text() == dumps()
    assert generate()["$id"] == SCHEMA_ID
    out = tmp_path / "s.json"
    r = CliRunner().invoke(cli, ["schema", "-o", str(out)])
    assert r.exit_code == 0 and str(out) in r.stderr
    assert json.loads(out.read_text()) == generate()
    r = CliRunner().invoke(cli, ["schema", "--path"])
    assert r.output.strip() == PACKAGE_SCHEMA_PATH
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert "source/program.schema.json" in pyproject  # installed as package data


def test_schema_titles_snippets_markdown_and_messages():
    s = generate()
    defs = s["definitions"]
    snippets = {x["label"]: x for x in defs["instruction"]["defaultSnippets"]}
    assert set(snippets) == set(REGISTRY)
    for name, spec in REGISTRY.items():
        d = defs[f"op_{name}"]
        assert d["title"].startswith(name) and spec.summary in d["title"]
        assert f"**{name}**" in d["markdownDescription"]
        assert "https://awsdocs-neuron" in d["markdownDescription"]
        body = snippets[name]["body"][name]
        assert set(body) == {p.name for p in spec.params if p.required}
        assert all(re.fullmatch(r"\$\{\d+:\w+\}", v) for v in body.values())
        for p in spec.params:
            assert "markdownDescription" in d["properties"][p.name], (name, p.name)

    def patterns(node):
        if isinstance(node, dict):
            if isinstance(node.get("pattern"), str) and node.get("type") == "string":
                yield node
            for v in node.values():
                yield from patterns(v)
        elif isinstance(node, list):
            for v in node:
                yield from patterns(v)
    found = list(patterns(s))
    assert found and all("patternErrorMessage" in n for n in found)
    # readable: words, not the regular expression again
    assert not [n["patternErrorMessage"] for n in found
                if re.search(r"\\[sdw]|\^\(|\)\$|\[\^|\|\w+\|", n["patternErrorMessage"])]


@pytest.mark.parametrize("path", sorted((ROOT / "programs").glob("*.yaml")),
                         ids=lambda p: p.name)
def test_every_yaml_example_has_the_modeline(path):
    first = path.read_text().splitlines()[0]
    m = re.fullmatch(r"# yaml-language-server: \$schema=(\S+)", first)
    assert m, first
    assert (path.parent / m.group(1)).resolve() == (ROOT / "schemas" / "program.schema.json")


def test_readme_shows_editor_settings():
    text = (ROOT / "README.md").read_text()
    assert "yaml-language-server: $schema=" in text and '"yaml.schemas"' in text
