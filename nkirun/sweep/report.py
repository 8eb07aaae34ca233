"""What a sweep shows: progress while it runs (rich, on a terminal only), then the ranked
table, the status counts, the resolution band, the assumed-cost share and the failure
census; with --measured, how the ranking fares against hardware."""
from __future__ import annotations

import sys

from nkirun.sweep.results import ranked
from nkirun.sweep.trust import RESOLUTION, against_measured, band, failure_census, \
    status_counts


class Progress:
    """A rich progress bar on stderr when it is a terminal; silent otherwise."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        self._bar = self._task = None

    def start(self, total: int, done: int) -> None:
        if not self.stream.isatty():
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress as Bar, \
            TextColumn, TimeRemainingColumn
        from nkirun.show.render import make_console
        self._bar = Bar(TextColumn("sweep"), BarColumn(), MofNCompleteColumn(),
                        TextColumn("{task.fields[counts]}"), TimeRemainingColumn(),
                        console=make_console(self.stream), transient=True)
        self._bar.start()
        self._task = self._bar.add_task("sweep", total=total, completed=done, counts="")
        self._counts: dict = {}

    def row(self, row: dict) -> None:
        if self._bar is None:
            return
        self._counts[row["status"]] = self._counts.get(row["status"], 0) + 1
        counts = " ".join(f"{k} {v}" for k, v in sorted(self._counts.items()))
        self._bar.update(self._task, advance=1, counts=counts)

    def stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def _ns(v) -> str:
    if v is None:
        return ""
    return f"{v / 1000:,.2f} µs" if v < 1e6 else f"{v / 1e6:,.3f} ms"


def render(rows, measured: dict | None = None, top: int = 20, stream=None) -> None:
    """The ranked table and the trust summary, as text (rich on a terminal)."""
    from nkirun.show.render import make_console, use_color
    stream = stream or sys.stdout
    console = make_console(stream, width=120 if not stream.isatty() else None)
    color = use_color(stream)
    from rich import box
    from rich.table import Table
    ordered = ranked(rows)
    ok = [r for r in ordered if r["status"] == "ok"]
    in_band = {r["id"] for r in band(rows)}
    names = list(dict.fromkeys(k for r in rows for k in r["params"]))
    kernels = len({r["kernel"] for r in rows}) > 1
    table = Table(box=box.ROUNDED if color else box.ASCII2)
    heads = [("rank", "right"), ("id", "right")] + ([("kernel", "left")] if kernels else []) \
        + [(n, "right") for n in names] + [("status", "left"), ("predicted", "right"),
                                           ("vs best", "right"), ("verify", "left")]
    for name, just in heads:
        table.add_column(name, justify=just)
    best = ok[0]["total_ns"] if ok else None
    for n, r in enumerate(ordered[:top], 1):
        rel = "" if best is None or r["total_ns"] is None else f"{r['total_ns'] / best:.3f}x"
        v = r.get("verify")
        vtext = "" if not v else ("pass" if not v["mismatches"] else
                                  f"{v['mismatches']} differ") + f" (max abs {v['max_abs']:.3g})"
        mark = "*" if r["id"] in in_band else ""
        cells = [f"{n}{mark}" if r["status"] == "ok" else "", str(r["id"])]
        if kernels:
            cells.append(r["kernel"].rsplit("/", 1)[-1])
        cells += [repr(r["params"][k]) if k in r["params"] else "" for k in names]
        cells += [r["status"], _ns(r["total_ns"]), rel, vtext]
        table.add_row(*cells)
    console.print(table)
    if len(ordered) > top:
        console.print(f"... {len(ordered) - top} more in summary.csv")
    for line in trust_lines(rows, measured):
        console.print(line, markup=False)


def trust_lines(rows, measured: dict | None = None) -> list[str]:
    counts = status_counts(rows)
    out = [f"{len(rows)} variants: " + ", ".join(f"{v} {k}" for k, v in counts.items())]
    b = band(rows)
    if b:
        out.append(f"resolution band (*): {len(b)} variant{'s' if len(b) > 1 else ''} within "
                   f"{RESOLUTION:.0%} of the best ({_ns(b[0]['total_ns'])}), the model's "
                   "median error on its calibration points: it cannot rank them further")
        shares = [r.get("assumed_share") or 0.0 for r in b]
        out.append(f"assumed cost formulas: {max(shares):.0%} of the band's predicted time "
                   "at most (the rest rests on documented formulas)")
    census = failure_census(rows)
    if census:
        out.append("failures: " + ", ".join(f"{code} x{n}" for code, n in census))
    if measured is not None:
        m = against_measured(rows, measured)
        if m["pairwise_accuracy"] is None:
            out.append(f"measured: {m['variants']} ok variant(s) measured; need 2 to compare")
        else:
            out.append(f"measured ({m['variants']} variants): pairwise accuracy "
                       f"{m['pairwise_accuracy']:.1%}, Kendall tau {m['kendall_tau']:.3f}, "
                       f"regret of nkirun's pick (id {m['pick']}) {m['regret']:.1%}")
    return out


def summary_json(rows, measured: dict | None = None) -> dict:
    from nkirun.sweep.trust import trust_summary
    out = {"rows": ranked(rows), **trust_summary(rows)}
    if measured is not None:
        out["measured"] = against_measured(rows, measured)
    return out
