"""The text form's tokens and values: the careful line scanner (`tokens`) and the reader of
one value token (`value_of`: words, numbers, quoted strings, nested `[...]` lists) as the
plain values YAML would give. `text_front` (the fast path and the directives) uses them.
"""
from __future__ import annotations

import json
import re

from nkirun.limits import MAX_DEPTH

_KEY = re.compile(r"([A-Za-z_]\w*)=")
_INT = re.compile(r"[-+]?\d+")
_FLOAT = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
_NUM_LIST = re.compile(r"[\[\]\d\s,.eE+-]*")  # what json.loads can read for us
_LIST_TOKEN = re.compile(r"\s*(?:([\[\],])|(\"(?:[^\"\\]|\\.)*\"|'[^']*')|([^\s,\[\]\"']+))")
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)")
_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"'}
_WORDS = {"true": True, "false": False, "True": True, "False": False, "null": None}
_MISSING = object()


class _Syntax(Exception):
    """A lexical problem at a 0-based column of the current line."""

    def __init__(self, col: int, message: str, hint: str | None = None, code: str = "E001"):
        super().__init__(message)
        self.col, self.hint, self.code = col, hint, code


# ---- values ----------------------------------------------------------------------------------
def plain(text: str):
    """An unquoted word as the value YAML would give: bool, null, int, float or string."""
    w = _WORDS.get(text, _MISSING)
    if w is not _MISSING:
        return w
    if _INT.fullmatch(text):
        # past Python's 4,300-digit conversion limit a literal can only be a mistake: it
        # stays a (short) word, which every numeric keyword refuses with its own code
        return int(text) if len(text) <= 4000 else f"{text[:12]}... ({len(text):,} digits)"
    if _FLOAT.fullmatch(text):
        return float(text)
    return text


def _unquote(text: str, col: int) -> str:
    if text[0] == "'":
        return text[1:-1]  # single quotes: literal, no escapes
    body = text[1:-1]
    if "\\" not in body:
        return body

    def sub(m):
        c = m.group(1)
        if len(c) == 5:  # \uXXXX: how `convert` writes control characters
            return chr(int(c[1:], 16))
        if c not in _ESCAPES:
            raise _Syntax(col + m.start() + 1, f"unknown escape `\\{c}` in a quoted string",
                          hint="allowed: \\\" \\\\ \\n \\t \\uXXXX")
        return _ESCAPES[c]
    return _ESCAPE.sub(sub, body)


def _list(text: str, col: int):
    """A `[...]` literal (nested lists of words, numbers and quoted strings)."""
    if text.count("[") > MAX_DEPTH:  # rare: then find the first list too deep, by its column
        _too_deep(text, col)
    if _NUM_LIST.fullmatch(text):
        try:
            return json.loads(text)
        except ValueError:
            pass  # e.g. `+1` or `1.`: the general reader below takes them
    pos, n = 0, len(text)

    def token():
        nonlocal pos
        m = _LIST_TOKEN.match(text, pos)
        if m is None:
            raise _Syntax(col + pos, f"cannot read {text[pos:].strip()!r} in a list")
        at = col + m.start(m.lastindex)
        pos = m.end()
        return m, at

    def items(open_at):
        out = []
        while True:
            if pos >= n:
                raise _Syntax(open_at, "unclosed `[`", hint="close every `[` with `]`")
            m, at = token()
            if m.group(1) == "]" and not out:
                return out
            if m.group(1) == "[":
                out.append(items(at))
            elif m.group(2):
                out.append(_unquote(m.group(2), at))
            elif m.group(3):
                out.append(plain(m.group(3)))
            else:
                raise _Syntax(at, f"expected a list element, got `{m.group(1)}`")
            if pos >= n:
                raise _Syntax(open_at, "unclosed `[`", hint="close every `[` with `]`")
            m, at = token()
            if m.group(1) == "]":
                return out
            if m.group(1) != ",":
                raise _Syntax(at, "expected `,` or `]` between list elements")

    m, at = token()
    value = items(at)
    if text[pos:].strip():
        raise _Syntax(col + pos, f"unexpected {text[pos:].strip()!r} after the list")
    return value


def _too_deep(text: str, col: int) -> None:
    """Refuse a list nested more than MAX_DEPTH deep (recursion in the readers below, and
    no tensor has that many dimensions); brackets inside quotes do not count."""
    depth, quote, escaped = 0, None, False
    for i, c in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif c == "\\" and quote == '"':
                escaped = True
            elif c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif c == "[":
            depth += 1
            if depth > MAX_DEPTH:
                raise _Syntax(col + i, f"the list nests more than {MAX_DEPTH} levels deep",
                              hint="a data list has one level per dimension; large data "
                                   "belongs in a .npy file (`file=`)")
        elif c == "]":
            depth -= 1


def value_of(text: str, col: int):
    """A value token (0-based column `col`) as a plain value."""
    c = text[0]
    if c == '"' or c == "'":
        end = _quote_end(text, 0, col)
        if end != len(text):
            raise _Syntax(col + end, f"unexpected {text[end:]!r} after the closing quote",
                          hint="quote the whole value")
        return _unquote(text, col)
    if c == "[":
        return _list(text, col)
    return plain(text)


# ---- the careful scanner ---------------------------------------------------------------------
def _quote_end(line: str, i: int, col0: int = 0) -> int:
    """Index just past the string literal starting at line[i]."""
    q = line[i]
    j = i + 1
    n = len(line)
    while j < n:
        c = line[j]
        if c == "\\" and q == '"':
            j += 2
            continue
        if c == q:
            return j + 1
        j += 1
    raise _Syntax(col0 + i, f"unterminated string: no closing {q}",
                  hint=f"end the string with {q} on the same line")


def tokens(line: str, start: int = 0):
    """[(col, key | None, value_col, value_text)] for `line` from `start` (0-based columns);
    a `#` at the start or after a blank begins a comment."""
    out = []
    i, n = start, len(line)
    while True:
        while i < n and line[i] in " \t":
            i += 1
        if i >= n or line[i] == "#":
            return out
        begin, depth = i, 0
        while i < n:
            c = line[i]
            if c == '"' or c == "'":
                i = _quote_end(line, i)
                continue
            if c == "[" or c == "(":
                depth += 1
            elif c == "]" or c == ")":
                if depth == 0:
                    raise _Syntax(i, f"unmatched `{c}`")
                depth -= 1
            elif depth == 0 and c in " \t":
                break
            i += 1
        if depth:
            opened = min(j for j in (line[begin:i].find("["), line[begin:i].find("("))
                         if j >= 0)
            raise _Syntax(begin + opened, f"unclosed `{line[begin + opened]}`",
                          hint="close every `[` with `]` and `(` with `)` on the same line")
        text = line[begin:i]
        m = _KEY.match(text)
        if m:
            vcol = begin + m.end()
            value = text[m.end():]
            if not value:
                raise _Syntax(begin, f"`{text}` has no value", code="E020",
                              hint="write key=value with no blank around `=`")
            out.append((begin, m.group(1), vcol, value))
        else:
            out.append((begin, None, begin, text))
