"""Showing diagnostics to people: `file:line:col: error[CODE]: message`, the source line
with a caret, and a hint. Colour (rich) only on a terminal without NO_COLOR."""
from __future__ import annotations

import os
import re
import sys

from .errors import Diagnostic

_TOKEN = re.compile(r"[^\s:,{}\[\]]+")


def use_color(stream=None) -> bool:
    stream = stream or sys.stdout
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return hasattr(stream, "isatty") and stream.isatty()


def format_plain(d: Diagnostic, lines: tuple[str, ...] = ()) -> str:
    out = [d.one_line()]
    ln, col = d.loc.line, d.loc.column
    if ln and 0 < ln <= len(lines):
        src = lines[ln - 1]
        gutter = len(str(ln))
        m = _TOKEN.match(src, max(col - 1, 0))
        width = max(1, len(m.group(0)) if m else 1)
        out.append(f" {ln} | {src}")
        out.append(f" {' ' * gutter} | {' ' * max(col - 1, 0)}{'^' * width}")
        if d.hint:
            out.append(f" {' ' * gutter} = help: {d.hint}")
    elif d.hint:
        out.append(f"   = help: {d.hint}")
    return "\n".join(out)


def print_diagnostics(diags: list[Diagnostic], lines=(), stream=None) -> None:
    stream = stream or sys.stdout
    if not diags:
        return
    if use_color(stream):
        from rich.console import Console
        from rich.text import Text
        console = Console(file=stream, highlight=False)
        for d in diags:
            style = "bold red" if d.is_error else "bold yellow"
            text = format_plain(d, lines)
            head, _, rest = text.partition("\n")
            t = Text()
            t.append(str(d.loc) + ": ", style="bold")
            t.append(f"{d.severity}[{d.code}]", style=style)
            t.append(": " + d.message)
            console.print(t)
            if rest:
                console.print(Text(rest, style="cyan"))
    else:
        for d in diags:
            print(format_plain(d, lines), file=stream)


def summary_line(diags: list[Diagnostic]) -> str:
    e = sum(d.is_error for d in diags)
    w = len(diags) - e
    return f"{e} error{'s' * (e != 1)}, {w} warning{'s' * (w != 1)}"
