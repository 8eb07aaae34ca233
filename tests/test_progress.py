"""The progress line of long passes (nkirun/progress.py): on a terminal only, after a
delay, erased at the end; a long trace and a long cost show theirs."""
from __future__ import annotations

import io
import sys

import pytest

from nkirun import progress
from nkirun.progress import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_nothing_when_piped_and_a_line_on_a_terminal(monkeypatch):
    monkeypatch.setattr(progress, "DELAY", 0.0)
    monkeypatch.setattr(progress, "_REDRAW", 0.0)
    piped = io.StringIO()
    p = Progress("tracing k.py", stream=piped)
    p.tick(5000, "line 12")
    p.close()
    assert piped.getvalue() == ""
    tty = Terminal()
    p = Progress("tracing k.py", stream=tty)
    p.tick(5000, "line 12")
    shown = tty.getvalue()
    assert shown.startswith("\r") and "tracing k.py: 5,000 instructions" in shown
    assert "(line 12)" in shown
    p.close()
    assert tty.getvalue().endswith("\r") and tty.getvalue()[len(shown):].strip() == ""


def test_not_before_the_delay():
    tty = Terminal()
    p = Progress("costing p.yaml", stream=tty)  # (DELAY: 2 s from now)
    p.tick(4096)
    assert tty.getvalue() == ""


def test_a_long_trace_and_a_long_cost_show_progress(monkeypatch, tmp_path):
    import nkirun
    monkeypatch.setattr(progress, "DELAY", 0.0)
    monkeypatch.setattr(progress, "_REDRAW", 0.0)
    tty = Terminal()
    monkeypatch.setattr(sys, "stderr", tty)
    path = tmp_path / "many.yaml"
    path.write_text("""\
version: 1
tensors:
  t: {buffer: sbuf, shape: [128, 8], dtype: float32, fill: 1}
instructions:
  - for:
      index: i
      stop: 10000
      body:
        - tensor_scalar: {dst: t, data: t, op0: add, operand0: 1.0}
""")
    nkirun.cost(str(path))
    assert "costing" in tty.getvalue() and "instructions" in tty.getvalue()
    assert tty.getvalue().endswith("\r")  # erased
