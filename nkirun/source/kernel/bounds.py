"""What keeps a kernel's trace finite (nkirun/limits.py): the tensor parameters' sizes,
checked before the kernel's Python runs (E043, as the checker would say after the trace);
the launch grid's instances and the instructions the trace records, both within the
instruction budget (E609, naming the source line that keeps recording); a progress line
on a terminal; and where Ctrl-C stopped the kernel (its line and loop variables)."""
from __future__ import annotations

import ast
import linecache
import math
import os
from collections import Counter

from nkirun.diagnostics import Loc, NkirunError, error
from nkirun.limits import max_instructions
from nkirun.progress import Progress

_NKIRUN_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK_EVERY = 4096  # instructions between two looks at the budget and the clock
_HINT_HBM = "raise the limit with --max-hbm-bytes if this is intended"


def size_text(n: int) -> str:
    """A byte count as text, however many digits it has."""
    return f"{n:,}" if n < 10 ** 30 else "more than 10^30"


def check_parameter_sizes(tensors: list, max_hbm_bytes: int, locs: dict) -> None:
    """E043 for each (name, parameter, TensorArg) over the HBM limit, or for all of them
    together (`locs`: parameter -> where the kernel's `def` names it)."""
    sizes = [(name, param, math.prod(v.shape) * v.dtype.itemsize) for name, param, v in tensors]
    diags = [error("E043", f"tensor parameter `{name}` is {size_text(n)} bytes, over the "
                   f"{max_hbm_bytes:,}-byte HBM limit", locs.get(param), hint=_HINT_HBM)
             for name, param, n in sizes if n > max_hbm_bytes]
    total = sum(n for _, _, n in sizes)
    if not diags and total > max_hbm_bytes:
        diags = [error("E043", f"the {len(sizes)} tensor parameters total {size_text(total)} "
                       f"bytes, over the {max_hbm_bytes:,}-byte HBM limit", None,
                       hint=_HINT_HBM)]
    if diags:
        raise NkirunError(diags)


def check_grid(grid: tuple, path: str) -> None:
    """E609 for a launch grid of more instances than the budget allows traces of."""
    instances = math.prod(grid) if grid else 1
    budget = max_instructions()
    if instances > budget:
        raise NkirunError(error(
            "E609", f"the launch grid {list(grid)} has {size_text(instances)} program "
            f"instances, more than the trace budget of {budget:,} (each instance is traced)",
            Loc(path), hint="launch a smaller grid, or raise the budget: --max-instructions N "
                            "(API: max_instructions=N)"))


class TraceBudget:
    """The Tracer's budget: `next_check` is the instruction count at which the trace next
    calls `checkpoint` (one comparison per recorded instruction in the hot paths)."""

    def __init__(self, path: str):
        self.limit = max_instructions()
        self.next_check = min(CHECK_EVERY, self.limit)
        self.progress = Progress(f"tracing {os.path.basename(path)}")

    def checkpoint(self, builder, loc: Loc) -> None:
        n = builder.count
        if n >= self.limit:
            self.progress.close()
            raise over_budget(builder, self.limit)
        self.progress.tick(n, f"line {loc.line}" if loc.line else "")
        self.next_check = min(n + CHECK_EVERY, self.limit)


def over_budget(builder, limit: int) -> NkirunError:
    """E609 at the source line that recorded most of the last instructions."""
    recent = builder.instructions[-CHECK_EVERY:]
    lines = Counter((i.loc.file, i.loc.line) for i in recent)
    (file, line), n = lines.most_common(1)[0] if lines else ((None, 0), 0)
    loc = next((i.loc for i in reversed(recent) if (i.loc.file, i.loc.line) == (file, line)),
               Loc(file)) if file else None
    return NkirunError(error(
        "E609", f"the trace recorded {limit:,} instructions (the budget) and goes on: "
        f"{n:,} of the last {len(recent):,} come from this line", loc,
        hint="a loop that does not end, or a kernel larger than intended? If it is meant to "
             "be this long, raise the budget: --max-instructions N (API: max_instructions=N)"))


def interrupted_at(tb, count: int) -> str | None:
    """Where Ctrl-C stopped the kernel's Python: `file:line` of its innermost frame, the
    values of the `for` loop variables around that line, and the instructions so far."""
    import sys
    # (nkirun's frames, the standard library's and installed packages' are not the kernel)
    skip = (_NKIRUN_DIR, "<", sys.prefix, sys.base_prefix)
    frame = None
    while tb is not None:
        f = tb.tb_frame
        if not f.f_code.co_filename.startswith(skip):
            frame = (f, tb.tb_lineno)
        tb = tb.tb_next
    if frame is None:
        return None
    f, line = frame
    path = f.f_code.co_filename
    loops = ", ".join(f"{name}={f.f_locals[name]!r}" for name in _loop_names(path, line)
                      if name in f.f_locals)
    return (f"{path}:{line} while tracing" + (f" ({loops})" if loops else "")
            + f", {count:,} instructions recorded")


def _loop_names(path: str, line: int) -> list:
    """The variables of the `for` loops whose bodies hold `line`, outermost first."""
    try:
        tree = ast.parse("".join(linecache.getlines(path)))
    except (SyntaxError, ValueError):
        return []
    loops = [n for n in ast.walk(tree) if isinstance(n, ast.For)
             and n.body[0].lineno <= line <= (n.end_lineno or 0)]
    names = []
    for n in sorted(loops, key=lambda n: n.lineno):
        names += [t.id for t in ast.walk(n.target) if isinstance(t, ast.Name)]
    return names
