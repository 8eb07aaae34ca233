"""Showing diagnostics to people: `file:line:col: error[CODE]: message`, the source line
with a caret, and a hint. Colour (rich) only on a terminal without NO_COLOR."""
from __future__ import annotations

import os
import re
import sys

from nkirun.diagnostics import Diagnostic

_TOKEN = re.compile(r"[^\s:,{}\[\]]+")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")
LONG_LINE = 160  # source lines longer than this are shown as a window around the column
_MAX_SOURCE_BYTES = 64 << 20  # never read a larger file just to quote one line


from nkirun.terminal import (COLOR_MODES, READING_WIDTH, make_console,  # noqa: F401
                             reading_width, set_color_mode, use_color, wrap_words)


def _source_line(lines, ln: int) -> str | None:
    return lines[ln - 1] if ln and 0 < ln <= len(lines) else None


def read_source(path: str) -> tuple[str, ...]:
    """The lines of a program file, to quote them when the parse itself failed (E001);
    () when it cannot be read (missing, binary, huge)."""
    from nkirun.safeio import not_regular
    try:
        if not_regular(path) or os.path.getsize(path) > _MAX_SOURCE_BYTES:
            return ()
        with open(path, encoding="utf-8", errors="replace", newline="") as f:
            return tuple(f.read().splitlines())
    except (OSError, ValueError):
        return ()


def _window(src: str, col: int) -> tuple[str, int]:
    """A long line cut to LONG_LINE characters around 1-based `col`; the new column."""
    if len(src) <= LONG_LINE:
        return src, col
    start = max(0, min(col - 1 - LONG_LINE // 3, len(src) - LONG_LINE + 3))
    cut = src[start:start + LONG_LINE - 6]
    head = "..." if start else ""
    tail = "..." if start + len(cut) < len(src) else ""
    return head + cut + tail, col - start + len(head)


def parts(d: Diagnostic, lines: tuple[str, ...] = ()):
    """(head, [(gutter, source line, caret line)] or None, hint or None)."""
    ln, col = d.loc.line, d.loc.column
    src = _source_line(lines, ln)
    if src is None:
        return d.one_line(), None, d.hint
    # a column past the end (an error "after" the line) points just after it, so that the
    # window below holds it and the caret line stays as short as the quoted one
    col = min(col, len(src) + 1)
    # cut first: a 1 MB line quoted by 100,000 diagnostics must not be copied each time
    src, col = _window(src, col)
    src = src.replace("\t", " ")  # one column per character, so the caret lines up
    src = _CONTROL.sub("?", src)  # never send a form feed or escape to the terminal
    m = _TOKEN.match(src, max(col - 1, 0))
    width = max(1, len(m.group(0)) if m else 1)
    width = max(1, min(width, len(src) - max(col - 1, 0)))  # never past the (cut) line
    return d.one_line(), (str(ln), src, " " * max(col - 1, 0) + "^" * width), d.hint


def format_plain(d: Diagnostic, lines: tuple[str, ...] = ()) -> str:
    head, quote, hint = parts(d, lines)
    out = [head]
    if quote is not None:
        ln, src, caret = quote
        pad = " " * len(ln)
        out.append(f" {ln} | {src}")
        out.append(f" {pad} | {caret}")
        if hint:
            out.append(f" {pad} = help: {hint}")
    elif hint:
        out.append(f"   = help: {hint}")
    return "\n".join(out)


def _lines_for(d: Diagnostic, lines, cache: dict):
    """`lines`, or (when the caller has none, e.g. the YAML did not parse) the file's."""
    if lines or not d.loc.line or d.loc.file.startswith("<"):
        return lines
    if d.loc.file not in cache:
        cache[d.loc.file] = read_source(d.loc.file)
    return cache[d.loc.file]


def print_diagnostics(diags: list[Diagnostic], lines=(), stream=None) -> None:
    stream = stream or sys.stdout
    if not diags:
        return
    cache: dict = {}
    from nkirun.show.grouping import more_like_this, similar_groups
    groups = similar_groups(diags)
    if use_color(stream):
        _print_rich(groups, lines, stream, cache)
    else:
        for d, others in groups:
            print(format_plain(d, _lines_for(d, lines, cache)), file=stream)
            if others:
                print(f"   {more_like_this(others)}", file=stream)


def _print_rich(groups, lines, stream, cache) -> None:
    from rich.text import Text
    from nkirun.show.grouping import more_like_this
    # soft_wrap: the terminal wraps long lines itself, so rich never breaks a source line
    # away from its caret line
    console = make_console(stream, soft_wrap=True, width=reading_width())
    for d, others in groups:
        _, quote, hint = parts(d, _lines_for(d, lines, cache))
        color = "red" if d.is_error else "yellow"
        t = Text()
        t.append(str(d.loc) + ": ", style="bold")
        t.append(f"{d.severity}[{d.code}]", style=f"bold {color}")
        t.append(": ")
        t.append(d.message, style="bold")
        console.print(t, soft_wrap=False)  # the header wraps between words
        pad = "   "
        if quote is not None:
            ln, src, caret = quote
            pad = " " * (len(ln) + 1)
            console.print(Text.assemble((f" {ln} | ", "bright_blue"), src))
            console.print(Text.assemble((f"{pad} | ", "bright_blue"), (caret, f"bold {color}")))
        if hint:
            console.print(Text.assemble((f"{pad} = ", "bright_blue"), ("help", "bold cyan"),
                                        (": " + hint, "cyan")))
        if others:
            console.print(Text(f"   {more_like_this(others)}", style="dim"))


def summary_line(diags: list[Diagnostic]) -> str:
    """`2 errors, 1 warning`, `1 error`, `1 warning`, `no problems`."""
    e = sum(d.is_error for d in diags)
    w = len(diags) - e
    got = [plural(n, word) for n, word in ((e, "error"), (w, "warning")) if n]
    return ", ".join(got) or "no problems"


def plural(n: int, word: str) -> str:
    """`1 output`, `2 outputs`, `1,024 instructions`."""
    return f"{n:,} {word}{'s' * (n != 1)}"
