"""Folding identical diagnostics for people: a problem repeated on 48 instructions is shown
once, then `... and 47 more like this at lines ...`. JSON output keeps every one."""
from __future__ import annotations

import re

from nkirun.diagnostics import Diagnostic

_INSTRUCTION_NO = re.compile(r"\binstruction \d+")
# a kernel's tensors allocated in a loop are `x`, `x_1`, `x_2`, ...: one problem
_NUMBERED_TENSOR = re.compile(r"`([A-Za-z_]\w*?)_\d+`")
_NUMBERED_NAME = re.compile(r"\b([A-Za-z_]\w*?)_\d+\b")  # in a hint's code: `src=x_3`
MAX_LINES_LISTED = 10


def _key(d: Diagnostic):
    # messages that differ only in the instruction they point at are the same problem
    message = _NUMBERED_TENSOR.sub(r"`\1`", _INSTRUCTION_NO.sub("instruction #", d.message))
    hint = _NUMBERED_NAME.sub(r"\1", d.hint) if d.hint else d.hint
    return (d.severity, d.code, message, hint, d.loc.file)


def similar_groups(diags: list[Diagnostic]) -> list[tuple[Diagnostic, list[Diagnostic]]]:
    """(first, the others like it) in the order the firsts come."""
    groups: dict = {}
    for d in diags:
        groups.setdefault(_key(d), []).append(d)
    return [(g[0], g[1:]) for g in groups.values()]


def more_like_this(others: list[Diagnostic]) -> str:
    """`... and 47 more like this at lines 12, 15, ... (--format json lists each)`."""
    lines = sorted({d.loc.line for d in others if d.loc.line})
    shown = ", ".join(f"{n:,}" for n in lines[:MAX_LINES_LISTED])
    if len(lines) > MAX_LINES_LISTED:
        shown += ", ..."
    where = f" at line{'s' * (len(lines) != 1)} {shown}" if lines else ""
    return f"... and {len(others):,} more like this{where} (--format json lists each)"
