"""The bounds the YAML front end checks before PyYAML composes a document: nesting depth,
keys per line, and characters YAML refuses (located). Also which PyYAML loader to use and
how a large text is handed to it."""
from __future__ import annotations

import re

from nkirun.diagnostics import Diagnostic, Loc, error
from nkirun.limits import MAX_DEPTH
from nkirun.source.yaml_import import yaml

try:  # the C composer is ~10x faster; fall back to pure Python where libyaml is missing
    LOADER = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    LOADER = yaml.SafeLoader

LAZY_LINES_FROM = 1 << 20
_LONG_LINE = 10_000
_YAML_BREAK = re.compile("\r\n|[\n\r\x85\u2028\u2029]")
_MAX_KEYS_PER_LINE = 1_000  # an instruction has a few dozen keywords at most
LONG_LINE_RE = re.compile(r"[^\n]{%d}" % _LONG_LINE)
_KEY_SEP = re.compile(r"[^\s,{\[\]]\s*:\s")


class _Chunks:
    """A large text handed to libyaml in pieces: given the whole str, PyYAML would first
    make a UTF-8 copy of all of it (40 MB more for a 40 MB file)."""

    def __init__(self, text: str):
        self.text, self.pos = text, 0

    def read(self, size: int = -1) -> str:
        size = len(self.text) if size is None or size < 0 else size
        piece = self.text[self.pos:self.pos + size]
        self.pos += len(piece)
        return piece


def stream(text: str):
    return _Chunks(text) if len(text) > LAZY_LINES_FROM else text


def too_many_keys(text: str, path: str) -> Diagnostic | None:
    """A line holding thousands of `key: value` pairs is refused before PyYAML composes it
    (a 100,000-keyword line took a minute to reject); only long lines are looked at."""
    from nkirun.source.lines import content_lines
    for ln, line in content_lines(text):
        if len(line) > _LONG_LINE:
            n = len(_KEY_SEP.findall(line))
            if n > _MAX_KEYS_PER_LINE:
                return error("E020", f"a line with {n:,} `key: value` pairs: an instruction "
                             f"has a few dozen keywords at most (over {_MAX_KEYS_PER_LINE:,} "
                             "is refused unread)", Loc(path, ln, 1),
                             hint="one instruction per entry; large data belongs in a .npy "
                                  "file (`file:`)")
    return None


def reader_error(e, text: str, path: str) -> Diagnostic:
    """PyYAML's reader names a character it refuses by its offset in the text: give
    its line and column (1-based, lines broken where YAML breaks them, as in PyYAML's
    other marks) and say which character it is."""
    at = max(0, min(e.position, len(text)))
    breaks = list(_YAML_BREAK.finditer(text, 0, at))
    line = len(breaks) + 1
    column = at - (breaks[-1].end() if breaks else 0) + 1
    char = e.character if isinstance(e.character, str) else chr(e.character)
    return error("E001", f"the character U+{ord(char):04X} is not allowed in YAML "
                 f"({e.reason})", Loc(path, line, column),
                 hint="remove it, or write it as an escape inside double quotes "
                      f"(\"\\x{ord(char):02x}\")" if ord(char) < 0x100 else "remove it")


def too_deep(text: str, path: str) -> Diagnostic | None:
    """A diagnostic when collections nest deeper than MAX_DEPTH, found from the event
    stream and stopping at the first offending one: libyaml's composer recurses in C (it
    crashes the process at ~100,000 levels) and is quadratic on deep flow collections.
    Newer libyaml builds (PyYAML 6.0.4's) stop at their own depth limit while scanning
    ahead; the pure-Python parser, which has none, then finds the level nkirun refuses,
    so the message and location do not depend on which PyYAML 6.x is installed."""
    try:
        return _first_too_deep(text, path, LOADER)
    except yaml.MarkedYAMLError as e:
        if LOADER is yaml.SafeLoader or "nesting depth" not in str(e.problem):
            raise
        return _first_too_deep(text, path, yaml.SafeLoader)


def _first_too_deep(text: str, path: str, loader) -> Diagnostic | None:
    depth = 0
    for ev in yaml.parse(stream(text), Loader=loader):
        if isinstance(ev, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                m = ev.start_mark
                return error("E001", f"the YAML document nests collections more than "
                             f"{MAX_DEPTH} levels deep", Loc(path, m.line + 1, m.column + 1))
        elif isinstance(ev, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            depth -= 1
    return None
