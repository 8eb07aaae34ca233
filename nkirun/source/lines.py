"""The lines of a program text, found on demand (issue 12, "slow rejections").

A 40 MB file of blank lines used to become a tuple of 40 million strings (700 MB) before
anything looked at it. `Lines` keeps the text and finds line k only when a diagnostic
quotes it; `content_lines` walks only the lines that hold something, counting the newlines
in between at C speed.
"""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Sequence

from nkirun.diagnostics import Diagnostic, error, loc_at

# A line ends only at \n (or \r\n): every other control character, and the Unicode line
# and paragraph separators Python's splitlines() would also break at, is an error, so text
# hidden behind one (e.g. in a comment) can never run as an instruction.
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")
_CONTROL_NAMES = {"\x0c": "form feed", "\x0b": "vertical tab", "\x1c": "file separator",
                  "\x1d": "group separator", "\x1e": "record separator", "\x85": "next line",
                  "\r": "carriage return", "\x00": "NUL", "\x7f": "delete", "\x1b": "escape"}
LONG_LINE_CHECK = 10_000  # only lines this long are counted (real lines are far shorter)
MAX_KEYWORDS_PER_LINE = 1_000  # an instruction has about 20 keywords


def control_error(path: str, ln: int, bad: re.Match) -> Diagnostic:
    ch = bad.group(0)
    name = unicodedata.name(ch, "") or _CONTROL_NAMES.get(ch, "a control character")
    return error("E001", f"control character U+{ord(ch):04X} ({name.lower()}) in the "
                 "program: a line ends only at a newline, and no other control character "
                 "may appear", loc_at(path, ln, bad.start() + 1),
                 hint="remove it; in a quoted string write it as \\uXXXX")


def too_many_keywords(path: str, ln: int, n: int) -> Diagnostic:
    return error("E020", f"a line with {n:,} `key=value` pairs: an instruction has a few "
                 f"dozen keywords at most (over {MAX_KEYWORDS_PER_LINE:,} is refused unread)",
                 loc_at(path, ln, 1), hint="one instruction per line; large data belongs "
                 "in a .npy file (`file=`)")



class Lines(Sequence):
    """`text` split at \\n (a \\r before it dropped), indexable like a tuple of lines."""

    def __init__(self, text: str):
        self._text = text
        self._len: int | None = None
        self._at = (0, 0)  # (line index, offset of its start): the last one found

    def __len__(self) -> int:
        if self._len is None:
            t = self._text
            self._len = t.count("\n") + (1 if t and not t.endswith("\n") else 0)
        return self._len

    def __getitem__(self, k):
        if isinstance(k, slice):
            return tuple(self[i] for i in range(*k.indices(len(self))))
        n = len(self)
        if k < 0:
            k += n
        if not 0 <= k < n:
            raise IndexError("line index out of range")
        line, offset = self._at if self._at[0] <= k else (0, 0)
        t = self._text
        while line < k:  # jump over (k - line) newlines without making strings
            step = min(k - line, 1_000_000)
            m = re.compile(r"(?:[^\n]*\n){%d}" % step).match(t, offset)
            offset, line = m.end(), line + step
        self._at = (line, offset)
        end = t.find("\n", offset)
        s = t[offset:] if end < 0 else t[offset:end]
        return s[:-1] if s.endswith("\r") else s

    def __iter__(self) -> Iterator[str]:
        for s in self._text.split("\n")[:len(self)]:
            yield s[:-1] if s.endswith("\r") else s


_NONBLANK = re.compile(r"[^ \t\r\n]")


def content_lines(text: str) -> Iterator[tuple[int, str]]:
    """(1-based line number, line) for every line holding more than blanks or a comment.
    Runs of blank lines are skipped by one regex search each (C speed)."""
    ln, counted, pos, n = 1, 0, 0, len(text)
    search, find, count = _NONBLANK.search, text.find, text.count
    while pos < n:
        m = search(text, pos)
        if m is None:
            return
        start = text.rfind("\n", 0, m.start()) + 1
        end = find("\n", m.start())
        end = n if end < 0 else end
        pos = end + 1
        if text[m.start()] == "#":
            continue
        ln += count("\n", counted, start)
        counted = start
        s = text[start:end]
        yield ln, s[:-1] if s.endswith("\r") else s


def has_content(text: str) -> bool:
    return next(content_lines(text), None) is not None
