"""Writing for a person at a terminal: colour when the stream is a terminal (or `--color`
says so), the reading width, and numbers a person reads (issue 12): one thousands
separator (`,`) everywhere, times scaled to ns / µs / ms / s, and `us` instead of `µs`
where standard output cannot encode µ (an ASCII-only terminal or LANG=C). Below every
stage: the runner's --trace, the scheduler's report and show/ all write through it."""
from __future__ import annotations

import os
import sys

READING_WIDTH = (60, 80)  # prose (explain, diagnostic headers) wraps within these columns
TERMINAL_WIDTH = (20, 400)  # a COLUMNS outside this (COLUMNS=99999999) is held within it


def terminal_width() -> int:
    """The terminal's width (COLUMNS or the tty's) held within TERMINAL_WIDTH: rich sizes
    tables and timelines to it, and 99,999,999 columns would never finish drawing."""
    import shutil
    try:
        columns = shutil.get_terminal_size((80, 24)).columns
    except (ValueError, OSError, OverflowError):
        columns = 80
    lo, hi = TERMINAL_WIDTH
    return max(lo, min(hi, columns))


def reading_width(columns: int | None = None) -> int:
    """The terminal's width (COLUMNS or the tty's) held within READING_WIDTH: never wider
    than a comfortable line, never so narrow that every word gets its own line."""
    if columns is None:
        columns = terminal_width()
    lo, hi = READING_WIDTH
    return max(lo, min(hi, columns))


def wrap_words(line: str, width: int | None = None) -> str:
    """`line` wrapped between words (never inside one) within reading_width(); continuation
    lines are indented under the text (two more spaces than the line's own indent, four
    for a `- ` bullet's text)."""
    import textwrap
    width = width or reading_width()
    if len(line) <= width:
        return line
    lead = line[:len(line) - len(line.lstrip(" "))]
    more = lead + ("  " if line.lstrip().startswith("- ") else "    " if lead else "  ")
    return textwrap.fill(line.lstrip(" "), width, initial_indent=lead, subsequent_indent=more,
                         break_long_words=False, break_on_hyphens=False)


COLOR_MODES = ("auto", "always", "never")
_color_mode = "auto"  # set by `nkirun --color`


def set_color_mode(mode: str) -> None:
    global _color_mode
    if mode not in COLOR_MODES:
        raise ValueError(f"--color: {mode!r}; allowed: {', '.join(COLOR_MODES)}")
    _color_mode = mode


def use_color(stream=None) -> bool:
    """Colour for `stream`? `--color always|never` decides; under `auto` (the default) a
    non-empty NO_COLOR turns it off, a FORCE_COLOR other than 0/false turns it on, and
    otherwise a terminal (not TERM=dumb) gets colour, a pipe or file does not."""
    if _color_mode != "auto":
        return _color_mode == "always"
    if os.environ.get("NO_COLOR"):
        return False
    force = os.environ.get("FORCE_COLOR")
    if force is not None and force.strip().lower() not in ("0", "false", "no", "off"):
        return True
    if os.environ.get("TERM") == "dumb":
        return False
    stream = stream or sys.stdout
    try:
        return hasattr(stream, "isatty") and stream.isatty()
    except ValueError:  # a closed stream
        return False


def make_console(file=None, **kw):
    """A rich Console for `file` that colours exactly when use_color(file) says so (rich's
    own terminal and environment detection would disagree under --color/FORCE_COLOR)."""
    from rich.console import Console
    color = use_color(file or sys.stdout)
    kw.setdefault("highlight", False)
    kw.setdefault("width", terminal_width())
    return Console(file=file, force_terminal=color, no_color=not color,
                   color_system="standard" if color else None, **kw)


_UNITS = ((1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1.0, "ns"))


def micro_ok(stream=None) -> bool:
    stream = stream or sys.stdout
    try:
        "µ".encode(getattr(stream, "encoding", None) or "ascii")
        return True
    except (UnicodeEncodeError, LookupError):
        return False


def _label(unit: str, micro: bool) -> str:
    return unit if unit != "µs" or micro else "us"


def time_unit(ns: float, micro: bool = False) -> tuple[str, float]:
    """(unit label, ns per unit) for showing times up to `ns`: the largest unit in which
    `ns` is at least 10, so a column of times reads 0.0 .. 4,748.7 ns or 0.00 .. 47.49 µs.
    `micro`: write µs (a terminal that can show it), else us (pipes, files: plain ASCII)."""
    for scale, unit in _UNITS:
        if ns >= 10 * scale:
            return _label(unit, micro), scale
    return "ns", 1.0


def in_unit(ns: float, scale: float) -> str:
    """`ns` in the unit of `scale`: one decimal for ns, two otherwise; `,` separates
    thousands."""
    return f"{ns:,.1f}" if scale == 1.0 else f"{ns / scale:,.2f}"


def duration(ns: float, micro: bool = False) -> str:
    """`748.7 ns`, `4.75 µs` (`us` unless `micro`), `3.20 ms`."""
    for scale, unit in _UNITS:
        if ns >= scale:
            return f"{in_unit(ns, scale)} {_label(unit, micro)}"
    return f"{ns:,.1f} ns"


def count(n: int) -> str:
    return f"{n:,}"
