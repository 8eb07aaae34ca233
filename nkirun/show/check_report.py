"""`nkirun check PATH...`: many programs and folders, one summary, one exit status, and the
report formats for CI: `github` (workflow-command annotations, shown on the pull request's
lines) and `junit` (one test case per program, read by most CI servers)."""
from __future__ import annotations

import os
from dataclasses import field

from nkirun.records import record
from nkirun.diagnostics import Diagnostic

PROGRAM_SUFFIXES = (".yaml", ".yml", ".nkis", ".nki.txt")


@record()
class Checked:
    """One program's result (`program`: the path as given or found)."""

    program: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    instructions: int = 0
    lines: tuple[str, ...] = ()

    @property
    def errors(self) -> int:
        return sum(d.is_error for d in self.diagnostics)

    @property
    def warnings(self) -> int:
        return len(self.diagnostics) - self.errors

    def as_dict(self) -> dict:
        return {"program": self.program, "ok": not self.errors, "errors": self.errors,
                "warnings": self.warnings,
                "diagnostics": [d.as_dict() for d in self.diagnostics]}


def expand(paths) -> tuple[list[str], list[str]]:
    """(program files, folders holding none): folders are searched recursively for
    .yaml/.yml/.nkis/.nki.txt files (hidden folders skipped), in sorted order; a file is
    taken whatever its suffix. Each program once, in the order first met."""
    out: list[str] = []
    empty: list[str] = []
    for p in paths:
        if not os.path.isdir(p):
            out.append(p)
            continue
        found = []
        for folder, dirs, files in os.walk(p):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            found += [os.path.join(folder, f) for f in sorted(files)
                      if f.endswith(PROGRAM_SUFFIXES) and not f.startswith(".")]
        out += found
        if not found:
            empty.append(p)
    return list(dict.fromkeys(out)), empty


def summary(results: list[Checked]) -> str:
    """`3 programs: 2 ok, 1 with errors (4 errors, 1 warning)`."""
    from nkirun.show.render import plural
    bad = sum(1 for r in results if r.errors)
    e, w = sum(r.errors for r in results), sum(r.warnings for r in results)
    counts = [plural(n, word) for n, word in ((e, "error"), (w, "warning")) if n]
    head = f"{plural(len(results), 'program')}: {len(results) - bad} ok"
    if bad:
        head += f", {bad} with errors"
    return head + (f" ({', '.join(counts)})" if counts else "")


def to_json(results: list[Checked]) -> dict:
    """One object; `diagnostics` lists every program's (each names its `file`)."""
    if len(results) == 1:
        return results[0].as_dict()
    return {"ok": not any(r.errors for r in results),
            "errors": sum(r.errors for r in results),
            "warnings": sum(r.warnings for r in results),
            "programs": [r.as_dict() for r in results],
            "diagnostics": [d.as_dict() for r in results for d in r.diagnostics]}


def _gh_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_prop(text: str) -> str:
    return _gh_data(text).replace(":", "%3A").replace(",", "%2C")


def github(results: list[Checked]) -> str:
    """GitHub Actions workflow commands: `::error file=F,line=L,col=C,title=E040::msg`."""
    out = []
    for r in results:
        for d in r.diagnostics:
            props = [f"file={_gh_prop(d.loc.file if d.loc.line else r.program.split('::', 1)[0])}"]
            if d.loc.line:
                props += [f"line={d.loc.line}", f"col={d.loc.column or 1}"]
            props.append(f"title={_gh_prop(f'nkirun {d.code}')}")
            msg = d.message + (f"\nhelp: {d.hint}" if d.hint else "")
            kind = "error" if d.is_error else "warning"
            out.append(f"::{kind} {','.join(props)}::{_gh_data(msg)}")
    out.append(f"::notice title=nkirun check::{_gh_data(summary(results))}")
    return "\n".join(out)


def junit(results: list[Checked]) -> str:
    """JUnit XML: one test case per program, failed when it has errors (warnings are
    listed in its system-out)."""
    from xml.etree import ElementTree as ET  # (only --format junit: ~10 ms of every start)
    failures = sum(1 for r in results if r.errors)
    suites = ET.Element("testsuites", name="nkirun check", tests=str(len(results)),
                        failures=str(failures), errors="0")
    suite = ET.SubElement(suites, "testsuite", name="nkirun check", tests=str(len(results)),
                          failures=str(failures), errors="0", skipped="0")
    for r in results:
        case = ET.SubElement(suite, "testcase", classname="nkirun.check", name=r.program,
                             file=r.program.split("::", 1)[0])
        lines = [d.one_line() + (f"\n    help: {d.hint}" if d.hint else "")
                 for d in r.diagnostics]
        errors = [d for d in r.diagnostics if d.is_error]
        if errors:
            from nkirun.show.render import summary_line
            fail = ET.SubElement(case, "failure", message=summary_line(r.diagnostics),
                                 type=errors[0].code)
            fail.text = _xml_safe("\n".join(lines))
        elif lines:
            ET.SubElement(case, "system-out").text = _xml_safe("\n".join(lines))
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, "unicode")


def _xml_safe(text: str) -> str:
    """XML 1.0 cannot hold most control characters, even escaped: show them as \\xNN."""
    return "".join(c if c in "\t\n\r" or (" " <= c and c not in "\ufffe\uffff")
                   else f"\\x{ord(c):02x}" for c in text)


def print_text(results: list[Checked]) -> None:
    """Each program's diagnostics and verdict line; with several, one summary at the end."""
    import click

    from nkirun.show.render import plural, print_diagnostics, summary_line
    for r in results:
        print_diagnostics(r.diagnostics, r.lines)
        if r.errors:
            click.echo(f"{r.program}: {summary_line(r.diagnostics)}")
        else:
            click.echo(f"{r.program}: ok — {plural(r.instructions, 'instruction')}"
                       + (f", {summary_line(r.diagnostics)}" if r.diagnostics else ""))
    if len(results) > 1:
        click.echo(f"checked {summary(results)}")
