"""The diagnostic codes: one table, installed with nkirun (issue 12, "Self-contained docs").

The table itself is data, `nkirun/codes.json` (package data). `nkirun explain E040` reads
it; docs/diagnostics.md is generated from it (`python -m nkirun.codes --write`;
tests/test_docs.py fails when the two differ). A new code gets its row in codes.json, then
the page is regenerated.
"""
from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Code:
    code: str
    section: str
    meaning: str
    instruction: str | None = None

    @property
    def severity(self) -> str:
        return "warning" if self.code.startswith("W") else "error"


def _load() -> tuple[str, tuple]:
    """The table in codes.json (installed next to this module): the page's introduction and
    the sections, each (title, text under the title, rows: (code, instruction or None,
    meaning))."""
    data = json.loads((Path(__file__).parent / "codes.json").read_text(encoding="utf-8"))
    return data["intro"], tuple(
        (s["title"], s["text"], tuple((c, ins, m) for c, ins, m in s["rows"]))
        for s in data["sections"])


INTRO, SECTIONS = _load()


CODES: dict[str, Code] = {code: Code(code, title, meaning, instruction)
                          for title, _, rows in SECTIONS for code, instruction, meaning in rows}
CODE_RE = re.compile(r"[EW]\d{3}", re.IGNORECASE)


def lookup(text: str) -> Code | None:
    """The entry of a code (`E040`, `e040`), or None."""
    return CODES.get(text.strip().upper())


def markdown() -> str:
    """docs/diagnostics.md."""
    out = ["# Diagnostic codes", "", INTRO.strip(), ""]
    for title, text, rows in SECTIONS:
        out.append(f"## {title}")
        if text:
            out.append(text)
            out.append("")
        with_instruction = any(ins for _, ins, _ in rows)
        if with_instruction:
            out += ["| code | instruction | meaning |", "| --- | --- | --- |"]
            out += [f"| `{c}` | {ins} | {m} |" for c, ins, m in rows]
        else:
            out += ["| code | meaning |", "| --- | --- |"]
            out += [f"| `{c}` | {m} |" for c, _, m in rows]
        out.append("")
    return "\n".join(out)


def explain_text(c: Code) -> str:
    """What `nkirun explain CODE` prints."""
    what = c.severity + (f" of {c.instruction}" if c.instruction else "")
    lines = [f"{c.code} ({what}) — {c.section}", "", c.meaning]
    if c.instruction:
        lines += ["", f"`nkirun explain {c.instruction}` lists the instruction's rules."]
    lines += ["", "Errors stop `check` (exit status 1) and nothing runs; warnings do not. "
              "Every code: docs/diagnostics.md."]
    return "\n".join(lines)


if __name__ == "__main__":  # python -m nkirun.codes [--write]: (re)generate the page
    page = Path(__file__).resolve().parent.parent / "docs" / "diagnostics.md"
    if sys.argv[1:] == ["--write"]:
        page.write_text(markdown())
    else:
        sys.stdout.write(markdown())
