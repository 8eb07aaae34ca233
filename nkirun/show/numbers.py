"""Numbers a person reads (issue 12): one thousands separator (`,`) everywhere, times
scaled to ns / µs / ms / s, and `us` instead of `µs` where standard output cannot encode µ
(an ASCII-only terminal or LANG=C)."""
from __future__ import annotations

import sys

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
