"""Views of a Schedule: JSON (the contract's keys) and the terminal report."""
from __future__ import annotations

import sys

from .model import Schedule


def to_json(s: Schedule) -> dict:
    return {
        "program": s.program.path,
        "target": s.target.name,
        "total_ns": round(s.total_ns, 3),
        "engines": {k: {"clock_ghz": v["clock_ghz"], "busy_ns": round(v["busy_ns"], 3),
                        "utilization": round(v["utilization"], 4),
                        "instructions": v["instructions"]} for k, v in s.engines().items()},
        "instructions": [{
            "index": x.index, "op": x.op, "engine": x.engine, "queue": x.queue,
            "cycles": x.cycles, "start_ns": round(x.start_ns, 3), "end_ns": round(x.end_ns, 3),
            "formula": x.formula, "assumed": x.assumed, "wait": x.wait,
            "waited_on": x.waited_on, "line": x.line} for x in s.slots],
        "critical_path": [x.index for x in s.critical_path()],
    }


def render_report(s: Schedule, stream=None, width: int | None = None, color: bool | None = None
                  ) -> None:
    from rich.console import Console
    from rich.table import Table

    from ..render import use_color
    stream = stream or sys.stdout
    color = use_color(stream) if color is None else color
    console = Console(file=stream, width=width, no_color=not color, highlight=False,
                      force_terminal=color if color else None)
    engines = s.engines()
    console.print(f"[bold]{s.program.path}[/bold] on {s.target.name} ({s.target.core}): "
                  f"total {s.total_ns:,.1f} ns, {len(s.slots)} instructions")
    t = Table(title="engines", title_justify="left")
    for c in ("engine", "clock GHz", "instructions", "busy ns", "utilization"):
        t.add_column(c, justify="right" if c != "engine" else "left")
    for name, e in engines.items():
        t.add_row(name, f"{e['clock_ghz']:g}", str(e["instructions"]), f"{e['busy_ns']:,.1f}",
                  f"{e['utilization']:.0%}")
    console.print(t)
    t = Table(title="instructions", title_justify="left")
    for c in ("#", "op", "engine", "cycles", "start ns", "end ns", "waited for"):
        t.add_column(c, justify="right" if c in ("#", "cycles", "start ns", "end ns") else "left")
    for x in s.slots:
        t.add_row(str(x.index), x.op + (" *" if x.assumed else ""), x.queue, f"{x.cycles:,}",
                  f"{x.start_ns:,.1f}", f"{x.end_ns:,.1f}", x.wait)
    console.print(t)
    if any(x.assumed for x in s.slots):
        console.print("* cost formula assumed: the instruction's page documents none")
