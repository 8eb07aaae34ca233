"""A progress line on standard error for a long pass (a trace, a run, a cost): shown only
on a terminal, only once the pass has taken `DELAY` seconds, redrawn at most ten times a
second, and erased when the pass ends. Piped or redirected, nothing is written."""
from __future__ import annotations

import sys
import time

DELAY = 2.0  # seconds before a pass shows its progress
_REDRAW = 0.1


class Progress:
    """`tick(count, where)` from the pass every few thousand steps; `close()` at its end."""

    def __init__(self, what: str, unit: str = "instructions", stream=None,
                 live: bool = True):
        self.what, self.unit = what, unit
        self.stream = stream if stream is not None else sys.stderr
        self.start = self.last = time.monotonic()
        self.width = 0  # of the line shown, 0: none
        try:
            self.live = live and self.stream.isatty()
        except (AttributeError, ValueError, OSError):
            self.live = False

    def tick(self, count: int, where: str = "") -> None:
        if not self.live:
            return
        now = time.monotonic()
        if now - self.start < DELAY or now - self.last < _REDRAW:
            return
        self.last = now
        line = f"{self.what}: {count:,} {self.unit}, {now - self.start:.0f} s"
        line += f" ({where})" if where else ""
        line = line[:_columns() - 1]
        self._write("\r" + line.ljust(self.width))
        self.width = len(line)

    def close(self) -> None:
        if self.width:
            self._write("\r" + " " * self.width + "\r")
            self.width = 0

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            self.live = False


def _columns() -> int:
    import shutil
    return max(20, min(shutil.get_terminal_size((80, 24)).columns, 500))
