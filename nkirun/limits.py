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
# how deep a program source nests lists (text) and collections (YAML): a 5-D data list needs 5
MAX_DEPTH = 64
_MAX_INSTRUCTIONS: ContextVar[int] = ContextVar("nkirun_max_instructions",
                                                default=DEFAULT_MAX_INSTRUCTIONS)
_MAX_HBM_BYTES: ContextVar = ContextVar("nkirun_max_hbm_bytes", default=None)


def max_instructions() -> int:
    """The instruction budget in force."""
    return _MAX_INSTRUCTIONS.get()


def checked_budget(n) -> int:
    """n as a budget: a positive int (ValueError otherwise, naming the keyword)."""
    if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
        raise ValueError(f"max_instructions must be a positive int; got {n!r}")
    return n


def max_hbm_bytes() -> int:
    """The HBM limit in force (a kernel's tensor parameters are checked against it before
    its Python runs; the checker applies the same limit to every HBM tensor)."""
    from nkirun.hw.targets import DEFAULT_MAX_HBM_BYTES
    n = _MAX_HBM_BYTES.get()
    return DEFAULT_MAX_HBM_BYTES if n is None else n


@contextmanager
def budget(max_instructions: int | None = None, max_hbm_bytes: int | None = None):
    """Within: `max_instructions` is the budget and `max_hbm_bytes` the HBM limit (None:
    the one in force)."""
    tokens = []
    if max_instructions is not None:
        tokens.append((_MAX_INSTRUCTIONS, _MAX_INSTRUCTIONS.set(checked_budget(
            max_instructions))))
    if max_hbm_bytes is not None:
        tokens.append((_MAX_HBM_BYTES, _MAX_HBM_BYTES.set(int(max_hbm_bytes))))
    try:
        yield
    finally:
        for var, token in reversed(tokens):
            var.reset(token)
