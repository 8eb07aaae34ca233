"""Watching a run: `--trace` (one line per instruction), `--dump` (every tensor as .npy
after an instruction) and the progress bar. All three are `after_each(bound, machine)`
hooks for interpret.execute; when none is enabled the run loop pays nothing.
"""
from __future__ import annotations

import contextlib
import sys
import time
from dataclasses import dataclass

import numpy as np

from nkirun.diagnostics import NkirunError
from nkirun.runner.dump import Dumper


def chain(*hooks):
    """One after_each hook calling each given hook (None if there are none)."""
    hooks = [h for h in hooks if h is not None]
    if not hooks:
        return None
    if len(hooks) == 1:
        return hooks[0]

    def call_all(b, m):
        for h in hooks:
            h(b, m)
    return call_all


# ---- trace -----------------------------------------------------------------------------------
@dataclass
class Written:
    """Statistics of the values one instruction wrote into one operand."""

    param: str
    view: str
    count: int
    min: float | None
    max: float | None
    mean: float | None
    nan: int
    inf: int

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def written_stats(b, m, param: str) -> Written:
    r = b.tile(param)
    vals = m.view(r)
    if b.mask is not None and b.mask.shape == vals.shape:
        vals = vals[b.mask]  # masked-off elements were not written
    if r.dtype.packed > 1:  # x4 MX data: the statistics of the packed values
        from nkirun.hw.mx import unpack
        vals = unpack(np.asarray(vals).reshape(-1, 1), r.dtype.name)
    x = np.asarray(vals, dtype=np.float64).reshape(-1)
    nan = int(np.count_nonzero(np.isnan(x)))
    inf = int(np.count_nonzero(np.isinf(x)))
    finite = x[np.isfinite(x)] if nan or inf else x
    if finite.size:
        lo, hi, mean = float(finite.min()), float(finite.max()), float(finite.mean())
    else:
        lo = hi = mean = None
    return Written(param, str(b.inst.args.get(param, r.decl.name)), int(x.size), lo, hi, mean,
                   nan, inf)


@dataclass
class TraceRow:
    index: int
    op: str
    engine: str
    outputs: list[Written]
    first_nan: bool = False
    first_inf: bool = False
    name: str | None = None  # the instruction's name= label

    @property
    def title(self) -> str:
        return f"{self.op} (name={self.name})" if self.name else self.op

    def as_dict(self) -> dict:
        d = {"index": self.index, "op": self.op, "engine": self.engine,
             "first_nan": self.first_nan, "first_inf": self.first_inf,
             "outputs": [w.as_dict() for w in self.outputs]}
        if self.name:
            d["name"] = self.name
        return d


def _g(x: float | None) -> str:
    return "-" if x is None else f"{x:.6g}"


def _marks(row: TraceRow) -> str:
    marks = [s for s, on in (("first NaN", row.first_nan), ("first inf", row.first_inf)) if on]
    return ("  <-- " + ", ".join(marks)) if marks else ""


class Tracer:
    """Collects one TraceRow per executed instruction and streams it to `stream` as the
    instruction finishes (so a run that fails still shows how far it got): plain lines when
    piped, the same lines aligned and coloured on a terminal (`bound`, when given, sets the
    column widths)."""

    def __init__(self, stream=None, rich: bool | None = None, bound=(), extra=None):
        from nkirun.terminal import use_color
        self.extra = extra  # extra(bound) -> text added to its first line (run --shadow)
        self.stream = stream or sys.stderr
        self.rich = use_color(self.stream) if rich is None else rich
        self.rows: list[TraceRow] = []
        self.seen_nan = self.seen_inf = False
        self.console = None
        views = (len(f"{p.name}={b.inst.args.get(p.name)}") for b in bound
                 for p in b.spec.params if p.out and p.name in b.inst.args)
        self.two_core = any(b.inst.core for b in bound)  # rows then name the core
        self.widths = (len(str(max(len(bound) - 1, 0))),
                       max((len(b.title) for b in bound), default=0),
                       max((len(b.engine) for b in bound), default=0) + 6 * self.two_core,
                       min(max(views, default=0), 28))

    def __call__(self, b, m) -> None:
        outs = [written_stats(b, m, p.name) for p in b.spec.params
                if p.out and b.tile(p.name) is not None]
        row = TraceRow(b.index, b.op, f"core{b.inst.core}.{b.engine}" if self.two_core
                       else b.engine, outs, name=b.args.get("name"))
        if not self.seen_nan and any(w.nan for w in outs):
            row.first_nan = self.seen_nan = True
        if not self.seen_inf and any(w.inf for w in outs):
            row.first_inf = self.seen_inf = True
        self.rows.append(row)
        more = self.extra(b) if self.extra is not None else ""
        if self.rich:
            self._print_rich(row, more)
        else:
            first, nl, rest = format_row(row).partition("\n")
            print(first + more + nl + rest, file=self.stream, flush=True)

    def close(self, failed_at: int | None = None) -> None:
        """Finish the trace; `failed_at`: the index of an instruction that raised."""
        if failed_at is None:
            return
        if self.rich:
            self._rich_console().print(f"#{failed_at} failed (see the error below)",
                                       style="bold red")
        else:
            print(f"#{failed_at} failed (see the error below)", file=self.stream, flush=True)

    def _rich_console(self):
        if self.console is None:
            from nkirun.terminal import make_console
            self.console = make_console(self.stream, soft_wrap=True)
            self.console.print("trace: what each instruction wrote", style="bold")
        return self.console

    def _print_rich(self, row: TraceRow, more: str = "") -> None:
        from rich.text import Text
        console = self._rich_console()
        wi, wo, we, wv = self.widths
        head = Text.assemble((f"#{row.index:<{wi}} ", "dim"), (f"{row.title:<{wo}}", "bold"),
                             (f" {row.engine:<{we}} ", "dim"))
        blank = " " * len(head.plain)
        if not row.outputs:
            console.print(head + Text("(writes no tile)", style="dim") + Text(more))
        for k, w in enumerate(row.outputs):
            t = head.copy() if k == 0 else Text(blank)
            t.append(f"{w.param}={w.view}".ljust(wv), style="cyan")
            t.append(f"  min {_g(w.min)}  max {_g(w.max)}  mean {_g(w.mean)}")
            for label, n in (("NaN", w.nan), ("inf", w.inf)):
                if n:  # plain output always shows both counts; here only what is there
                    t.append(f"  {n:,} {label}", style="bold red")
            if k == 0 and _marks(row):
                t.append(_marks(row), style="bold red")
            if k == 0 and more:
                t.append(more, style="yellow")
            console.print(t)


def format_row(row: TraceRow) -> str:
    lines = []
    for k, w in enumerate(row.outputs):
        head = f"#{row.index} {row.title} [{row.engine}]" if k == 0 else " " * len(
            f"#{row.index} {row.title} [{row.engine}]")
        lines.append(f"{head} {w.param}={w.view}: min={_g(w.min)} max={_g(w.max)} "
                     f"mean={_g(w.mean)} nan={w.nan} inf={w.inf}"
                     + (_marks(row) if k == 0 else ""))
    return "\n".join(lines) or f"#{row.index} {row.title} [{row.engine}] (writes no tile)"


# ---- progress --------------------------------------------------------------------------------
class Progress:
    """A transient rich progress bar on stderr that appears only once the run has taken
    longer than `delay` seconds. Per instruction it costs one clock read until then."""

    def __init__(self, total: int, delay: float = 1.0, stream=None):
        self.total, self.delay = total, delay
        self.stream = stream or sys.stderr
        self.start = time.monotonic()
        self.bar = None
        self.task = None

    def __call__(self, b, m) -> None:
        if self.bar is None:
            if time.monotonic() - self.start < self.delay:
                return
            from rich.console import Console

            from nkirun.terminal import terminal_width
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeElapsedColumn,
            )
            from rich.progress import Progress as RichProgress
            self.bar = RichProgress(TextColumn("running"), BarColumn(), MofNCompleteColumn(),
                                    TextColumn("{task.description}"), TimeElapsedColumn(),
                                    console=Console(file=self.stream, width=terminal_width()),
                                    transient=True)
            self.bar.start()
            self.task = self.bar.add_task("", total=self.total)
        self.bar.update(self.task, completed=b.index + 1, description=f"#{b.index} {b.title}")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


def want_progress(stream=None) -> bool:
    """A transient bar only on a terminal (never into a pipe, even with --color always)."""
    from nkirun.terminal import use_color
    stream = stream or sys.stderr
    try:
        return use_color(stream) and stream.isatty()
    except (AttributeError, ValueError):
        return False


@contextlib.contextmanager
def watch(program, bound, trace: bool = False, dump_dir: str | None = None,
          dump_after: int | None = None, progress: bool | None = None, stream=None,
          trace_extra=None):
    """The after_each hook for a run with the requested watchers (None when there are
    none), closed properly however the run ends. The progress bar is shown on a
    terminal unless tracing (both would write to stderr). A dump is put in place when
    the run ends or fails at run time (NkirunError), and dropped on a signal or a bug."""
    stream = stream or sys.stderr
    tracer = Tracer(stream, bound=bound, extra=trace_extra) if trace else None
    dumper = Dumper(dump_dir, len(bound), dump_after) if dump_dir else None
    if progress is None:
        progress = not trace and want_progress(stream)
    bar = Progress(len(bound), stream=stream) if progress else None
    failed_at = None
    try:
        yield chain(tracer, dumper, bar)
    except BaseException as e:
        done = len(tracer.rows) if tracer else 0
        failed_at = bound[done].index if tracer and done < len(bound) else None
        if dumper is not None:
            if isinstance(e, NkirunError) and dumper.folders:
                print(dumper.commit(), file=stream)
            else:
                dumper.abort()
        raise
    finally:
        if bar is not None:
            bar.close()
        if tracer is not None:
            tracer.close(failed_at)
    if dumper is not None:
        print(dumper.commit(), file=stream)
