"""How much one command or API call may do: the bound that keeps every pass finite.

`max_instructions` (default 10 million; `--max-instructions N` on every command, the
API's `max_instructions=N`) bounds

* the instructions a kernel's trace records (E609, naming the source line that keeps
  recording), and the instances of its launch grid;
* the instructions a run executes and a cost schedules, each loop body counted once per
  trip, an empty trip as one (E662, naming the loop).

The bound is a context variable: each thread (and each API call) sees its own.
"""
from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar

DEFAULT_MAX_INSTRUCTIONS = 10_000_000
_MAX_INSTRUCTIONS: ContextVar[int] = ContextVar("nkirun_max_instructions",
                                                default=DEFAULT_MAX_INSTRUCTIONS)


def max_instructions() -> int:
    """The instruction budget in force."""
    return _MAX_INSTRUCTIONS.get()


def checked_budget(n) -> int:
    """n as a budget: a positive int (ValueError otherwise, naming the keyword)."""
    if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
        raise ValueError(f"max_instructions must be a positive int; got {n!r}")
    return n


@contextmanager
def budget(max_instructions: int | None = None):
    """Within: `max_instructions` is the budget (None: the one in force)."""
    if max_instructions is None:
        yield
        return
    token = _MAX_INSTRUCTIONS.set(checked_budget(max_instructions))
    try:
        yield
    finally:
        _MAX_INSTRUCTIONS.reset(token)
