"""Showing a shadow run (runner/shadow.py): the JSON list, the per-instruction table (rich
on a terminal, plain text when piped), the "top N by added error" summary, and the error
columns `run --trace` lines gain.

Readings:
- JSON numbers that are not finite are written as the strings "inf", "-inf" and "nan"
  (JSON has no such numbers); a field with nothing to report (an instruction that stores
  no element) is null.
- "Top N" ranks by added max abs error, then added max rel error, then program order;
  instructions that added no error, or whose real stores lost nothing (a copy of values
  already in its destination's dtype), are left out.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from nkirun.runner.shadow_metrics import Row


def jnum(x: float | None):
    """A JSON-safe number: non-finite floats as the strings "inf", "-inf", "nan"."""
    if x is None:
        return None
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    return x


def row_json(r: Row) -> dict:
    none = r.carried.at < 0  # stores no element
    c, a = r.carried, r.added
    return {
        "instruction": r.instruction, "op": r.op, "engine": r.engine,
        "file": r.file, "line": r.line, "column": r.column,
        "max_abs_error": None if none else jnum(c.abs),
        "max_rel_error": None if none else jnum(c.rel),
        "max_ulp_error": None if none else jnum(c.ulp),
        "peak": None if r.tensor is None else {
            "tensor": r.tensor, "index": list(r.index), "dtype": r.dtype,
            "value": jnum(r.value), "shadow": jnum(r.shadow)},
        "added_max_abs_error": None if none else jnum(a.abs),
        "added_max_rel_error": None if none else jnum(a.rel),
        "added_max_ulp_error": None if none else jnum(a.ulp),
        "added_peak": None if r.added_tensor is None else {
            "tensor": r.added_tensor, "index": list(r.added_index)},
        "store_max_abs_error": jnum(r.store_abs),
        "overflow": r.overflow, "underflow": r.underflow, "nan_born": r.nan_born,
        "fp8_saturated": r.fp8_saturated,
    }


def top(rows: list[Row], n: int) -> list[Row]:
    """The n instructions that added the most error. Left out: those that added none, and
    those whose stores lost nothing in the real run (store error 0: e.g. a copy of values
    an earlier instruction already rounded to this dtype; its added error repeats theirs)."""
    hit = [r for r in rows if (r.added.abs > 0 or r.added.rel > 0)
           and (r.store_abs > 0 or r.overflow or r.underflow or r.fp8_saturated)]
    hit.sort(key=lambda r: (-r.added.abs, -r.added.rel, r.instruction))
    return hit[:n]


@dataclass
class ShadowReport:
    """The result of a shadow run: per-instruction rows, the program's outputs, and the
    shadow's own warnings (W620)."""

    rows: list[Row]
    outputs: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)
    backend: str = "numpy"  # which comparison ran: "native" (C) or "numpy" (docs/shadow.md)
    finals: dict = field(default_factory=dict)  # Shadow.final_errors: each output's error
    # each output as the float32 shadow computed it (the HTML profile's error heat map)
    shadow_outputs: dict = field(default_factory=dict)

    def top(self, n: int = 5) -> list[Row]:
        return top(self.rows, n)

    def as_json(self, n: int = 5) -> dict:
        return {"shadow": [row_json(r) for r in self.rows],
                "shadow_outputs": [
                    {"name": label, "tensor": name, "max_abs_error": jnum(e.abs),
                     "max_rel_error": jnum(e.rel), "max_ulp_error": jnum(e.ulp),
                     "index": None if peak is None else list(peak)}
                    for label, (name, e, peak) in self.finals.items()],
                "shadow_top": [r.instruction for r in self.top(n)],
                "shadow_warnings": [w.as_dict() for w in self.warnings],
                "shadow_backend": self.backend}

    def __getitem__(self, key: str):
        """report["shadow"], report["shadow_top"], ...: the `--format json` fields (and
        report["outputs"])."""
        return self.outputs if key == "outputs" else self.as_json()[key]

    def row(self, instruction: int) -> Row:
        return next(r for r in self.rows if r.instruction == instruction)


def g(x: float) -> str:
    """An error for a table cell: 0, 3 significant digits, or inf."""
    if x == 0:
        return "0"
    if not math.isfinite(x):
        return "inf" if x > 0 else ("nan" if math.isnan(x) else "-inf")
    return f"{x:.3g}"


def where(r: Row) -> str:
    if r.tensor is None:
        return "-"
    return f"{r.tensor}[{', '.join(map(str, r.index))}]"


def events(r: Row) -> str:
    parts = [f"{n} {label}" for label, n in (
        ("overflow", r.overflow), ("underflow", r.underflow), ("NaN born", r.nan_born),
        ("fp8 sat", r.fp8_saturated)) if n]
    return ", ".join(parts)


def trace_columns(r: Row) -> str:
    """The error columns a --trace line gains."""
    if r.carried.at < 0:
        return ""
    ev = events(r)
    return (f" | err abs={g(r.carried.abs)} rel={g(r.carried.rel)} ulp={g(r.carried.ulp)}"
            f" added abs={g(r.added.abs)} rel={g(r.added.rel)}"
            f" at {where(r)}" + (f" [{ev}]" if ev else ""))


HEAD = ("#", "op", "line", "max abs", "rel", "ulp", "at", "added abs", "added rel", "events")


def cells(r: Row) -> tuple[str, ...]:
    none = r.carried.at < 0
    c, a = r.carried, r.added
    return (str(r.instruction), r.op, str(r.line),
            "-" if none else g(c.abs), "-" if none else g(c.rel), "-" if none else g(c.ulp),
            where(r), "-" if none else g(a.abs), "-" if none else g(a.rel), events(r))


LONG = 60  # a table longer than this shows only the rows that added error


def shown(report: ShadowReport, n: int) -> tuple[list[Row], int]:
    """The table's rows: all of them, or for a long program those that added error or
    had an event (and the top N); and how many were left out."""
    rows = report.rows
    if len(rows) <= LONG:
        return rows, 0
    ranked = {r.instruction for r in report.top(n)}
    keep = [r for r in rows if r.added.abs > 0 or events(r) or r.instruction in ranked]
    return keep, len(rows) - len(keep)


def left_out(k: int) -> str:
    return (f"({k} instructions that added no error are not shown; --format json lists "
            "every instruction)")


def render(report: ShadowReport, stream, rich: bool, n: int = 5, table: bool = True) -> None:
    """The table and the top-N summary."""
    best = report.top(n)
    if rich:
        return _render_rich(report, stream, n, table)
    if table:
        rows, hidden = shown(report, n)
        print("shadow: error against a float32 run, per instruction", file=stream)
        widths = [max([len(h)] + [len(cells(r)[k]) for r in rows]) for k, h in enumerate(HEAD)]
        print("  ".join(h.ljust(w) for h, w in zip(HEAD, widths)).rstrip(), file=stream)
        for r in rows:
            print("  ".join(c.ljust(w) for c, w in zip(cells(r), widths)).rstrip(),
                  file=stream)
        if hidden:
            print(left_out(hidden), file=stream)
    print(summary_line(report.rows, best, n), file=stream)
    for r in best:
        print(f"  #{r.instruction} {r.op} at {r.file}:{r.line}: added abs {g(r.added.abs)}"
              f" (rel {g(r.added.rel)}), carries abs {g(r.carried.abs)} at {where(r)}",
              file=stream)
    for line in final_lines(report):
        print(line, file=stream)


def final_lines(report: ShadowReport) -> list[str]:
    """Each output's error against the shadow when the run ended (JSON: shadow_outputs)."""
    if not report.finals:
        return []
    out = ["shadow: each output's final error against the float32 shadow:"]
    for label, (name, e, peak) in report.finals.items():
        at = f" at {label}[{', '.join(map(str, peak))}]" if peak and e.abs > 0 else ""
        out.append(f"  {label}: max abs {g(e.abs)}, rel {g(e.rel)}, ulp {g(e.ulp)}{at}")
    return out


def summary_line(rows, best, n) -> str:
    if not best:
        return ("shadow: no instruction added error (the run equals its float32 shadow)"
                if rows else "shadow: no instruction ran")
    return f"shadow: top {min(n, len(best))} instructions by added error (max abs):"


def _render_rich(report: ShadowReport, stream, n: int, table: bool) -> None:
    from rich import box
    from rich.table import Table

    from nkirun.show.render import make_console
    (rows, hidden), best = shown(report, n), report.top(n)
    widths = [max([len(h)] + [len(cells(r)[k]) for r in rows]) for k, h in enumerate(HEAD)]
    console = make_console(stream, soft_wrap=True)
    need = sum(widths) + 3 * len(widths) + 2
    if table and need > console.width:  # one line per row, no cell clipped
        console = make_console(stream, soft_wrap=True, width=need)
    ranked = {r.instruction for r in best}
    if table:
        t = Table(title="shadow: error against a float32 run, per instruction",
                  box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, title_justify="left")
        numeric = ("#", "line", "max abs", "rel", "ulp", "added abs", "added rel")
        for h, w in zip(HEAD, widths):
            t.add_column(h, no_wrap=True, min_width=w,
                         justify="right" if h in numeric else "left")
        for r in rows:
            style = "bold yellow" if r.instruction in ranked else (
                "dim" if r.carried.abs == 0 and not events(r) else None)
            t.add_row(*cells(r), style=style)
        console.print(t)
        if hidden:
            console.print(left_out(hidden), style="dim")
    console.print(summary_line(report.rows, best, n), style="bold")
    for r in best:
        console.print(f"  [bold]#{r.instruction} {r.op}[/] at {r.file}:{r.line}: added abs "
                      f"[yellow]{g(r.added.abs)}[/] (rel {g(r.added.rel)}), carries abs "
                      f"{g(r.carried.abs)} at {where(r)}", highlight=False)
    for k, line in enumerate(final_lines(report)):
        console.print(line, style="bold" if k == 0 else None, highlight=False, markup=False)


def trace_extra(shadow):
    """The --trace hook's extra text for instruction b: its shadow error columns."""
    def extra(b) -> str:
        rows = shadow.rows
        return trace_columns(rows[-1]) if rows and rows[-1].instruction == b.index else ""
    return extra
