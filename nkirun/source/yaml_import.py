"""PyYAML, imported without compiling its pure-Python reader's character check up front.

`yaml.reader.Reader.NON_PRINTABLE`, a character class over all of Unicode, is compiled
when PyYAML is imported: about a third of `import yaml` (4-6 ms of CPU, the largest single
cost of `nkirun check`'s start-up after NumPy and the IR; issue 28, docs/performance.md).
nkirun reads YAML with libyaml's C loader (yaml_limits.LOADER), whose reader checks the
characters itself, so the pattern is compiled only if a pure-Python loader ever reads text
(`yaml.safe_load`, the fallback without libyaml). `import_yaml` is the shortcut; its plain
twin is `import yaml`. Both give the same module; the pattern, made on first use, finds
what the eager one finds (tests/source/test_yaml_import.py).
"""
from __future__ import annotations

import re
import sys
import threading

# yaml/reader.py's pattern, character for character (PyYAML 5.1 to 6.0.x); another
# version's compiles as usual
NON_PRINTABLE = "[^\x09\x0A\x0D\x20-\x7E\x85\xA0-\uD7FF\uE000-\uFFFD\U00010000-\U0010ffff]"
_lock = threading.Lock()


class LazyPattern:
    """A compiled pattern made on first use: every attribute is the compiled one's."""

    __slots__ = ("_source", "_flags", "_compiled")

    def __init__(self, source: str, flags: int = 0):
        self._source, self._flags, self._compiled = source, flags, None

    def compiled(self) -> re.Pattern:
        if self._compiled is None:
            self._compiled = re.compile(self._source, self._flags)
        return self._compiled

    def __getattr__(self, name: str):
        return getattr(self.compiled(), name)

    def __repr__(self) -> str:
        return repr(self.compiled())


def import_yaml():
    """The `yaml` module, as `import yaml` gives it; when this call imports it, the reader's
    NON_PRINTABLE is a LazyPattern (see the module docstring)."""
    if "yaml" in sys.modules:
        return sys.modules["yaml"]
    with _lock:
        eager = re.compile

        def compile_(pattern, flags=0):
            if pattern == NON_PRINTABLE and flags == 0:
                return LazyPattern(pattern, flags)
            return eager(pattern, flags)

        re.compile = compile_
        try:
            import yaml
        finally:
            re.compile = eager
    return yaml


yaml = import_yaml()  # (`from nkirun.source.yaml_import import yaml` where nkirun needs it)
