"""Drawing the views: JSON (the contract's keys plus the views) and the terminal report.

Colour and Unicode box characters only on a terminal; piped output (and the golden files)
is plain ASCII with no escape codes.
"""
from __future__ import annotations

import sys

from rich.text import Text

from nkirun.schedule import model as m
from nkirun.schedule import views as v
from nkirun.schedule.model import Schedule

DEFAULT_MAX_ROWS = 200  # table rows shown in text (JSON always has every instruction)
# One colour per engine (readable on dark and light backgrounds: no red, which means an
# error, and no dark blue, unreadable on black); instructions take their engine's colour.
ENGINE_COLORS = {"tensor": "green", "vector": "cyan", "scalar": "magenta", "gpsimd": "yellow",
                 "dma": "bright_blue"}
_OTHER_COLOR = "white"


def parse_views(text: str | None) -> tuple[str, ...]:
    """`summary,table` -> ("summary", "table"); `all`/None -> every view. ValueError if a name
    is unknown."""
    if not text or text.strip() == "all":
        return v.VIEWS
    names = tuple(dict.fromkeys(x.strip() for x in text.split(",") if x.strip()))
    bad = [n for n in names if n not in v.VIEWS]
    if bad or not names:
        raise ValueError(f"unknown view {', '.join(bad) or text!r}; allowed: "
                         f"{', '.join(v.VIEWS)}, all")
    return names


def to_json(s: Schedule, views: tuple[str, ...] = v.VIEWS, timeline_width: int = 64,
            detail: str = "full", rows=None, steps=None) -> dict:
    """The contract's keys (target, total_ns, engines, instructions) always, plus the
    summary's fields and the selected views. detail="summary" (opt-in: `cost --detail
    summary`) leaves out the `instructions` list; `rows` stands in for it (show/
    cost_json.py: the rows already spelled as JSON), `steps` for the critical path's
    steps (views.critical)."""
    out = v.summary(s)
    if detail != "summary":
        out["instructions"] = v.table(s) if rows is None else rows
    if "timeline" in views:
        out["timeline"] = v.timeline(s, timeline_width)
    if "critical" in views:
        out["critical_path"] = v.critical(s, steps)
    if "advice" in views:
        from nkirun.schedule.advice import advice
        out["advice"] = advice(s)
    return out


# ---- text --------------------------------------------------------------------------------
_MICRO = {"on": False}  # µs on a terminal that can show it (render_report sets it), else us


def _time(x: float) -> str:
    from nkirun.terminal import duration
    return duration(x, _MICRO["on"])


def _cycles(x) -> str:
    """The cycles column: an engine's cycles; "-" for a DMA transfer, which is modelled
    in ns (its own time is in the next column, as every row's is)."""
    return "-" if x.engine == "dma" else f"{x.cycles:,}"


def _console(stream, width, color):
    from rich.console import Console

    from nkirun.terminal import terminal_width, use_color
    color = use_color(stream) if color is None else color
    if width is None:
        width = terminal_width() if color else 100
    return Console(file=stream, width=width, no_color=not color, highlight=False,
                   force_terminal=True if color else False, emoji=False,
                   soft_wrap=False), color


def _table(console, color: bool, title: str, **kw):
    """A table, its title printed first as a plain line (rich pads titles to the width)."""
    from rich import box
    from rich.table import Table
    from rich.text import Text
    if title:
        console.print(Text(title, style="bold" if color else ""))
    return Table(box=box.ROUNDED if color else box.ASCII2, **kw)


def _min_width(headers, rows, keep, wrap=()) -> int:
    """The width an ASCII/rounded table needs with columns `keep` unwrapped (a column in
    `wrap` may fold down to 16 characters): 3 per column (padding, rule) + 1."""
    w = 1
    for i in keep:
        widest = max([len(headers[i])] + [len(r[i]) for r in rows])
        w += (min(widest, 16) if headers[i] in wrap else widest) + 3
    return w


def _fit(width: int, headers, rows, drop_order, wrap=()) -> list[int]:
    """The column indices to show: drop the columns of `drop_order`, in turn, until the
    table fits `width` without cutting a number."""
    keep = list(range(len(headers)))
    for name in drop_order:
        if _min_width(headers, rows, keep, wrap) <= width:
            break
        keep.remove(headers.index(name))
    return keep


def _grid(console, color, title, headers, rows, right, drop_order, wrap=(), styles=None):
    """Print `rows` as a table that fits the console: numbers are never cut (optional
    columns are dropped instead), only the `wrap` columns fold."""
    keep = _fit(console.width, headers, rows, drop_order, wrap)
    t = _table(console, color, title)
    for i in keep:
        t.add_column(headers[i], justify="right" if headers[i] in right else "left",
                     no_wrap=headers[i] not in wrap, overflow="fold")
    for k, r in enumerate(rows):
        t.add_row(*(r[i] for i in keep), style=styles[k] if styles else None)
    console.print(t)


def _items(console, prefix: str, items: list[str]) -> None:
    """`prefix item, item, ...` wrapped between items, continuation lines indented."""
    line, lines, indent = prefix, [], " " * 2
    for k, it in enumerate(items):
        piece = it + ("," if k < len(items) - 1 else "")
        if line.strip() and len(line) + 1 + len(piece) > console.width:
            lines.append(line)
            line = indent + piece
        else:
            line = f"{line} {piece}" if line else piece
    lines.append(line)
    for ln in lines:
        console.print(ln, soft_wrap=True)


def _short(x) -> str:
    """Slot x's wait reason, compact for tables."""
    k, t = x.waited_on, x.wait_tensor
    words = m.meeting_words(x.wait_kind)
    if words is not None:
        return f"core {1 - x.core} {words} (after #{k})"
    return {m.RAW: f"data from #{k} ({t})", m.WAR: f"WAR: #{k} reads {t}",
            m.WAW: f"WAW: #{k} writes {t}", m.ENGINE: f"engine busy (#{k})",
            m.QUEUE: f"DMA queues busy (#{k})",
            m.RECOMPUTE: f"elided: recomputes #{k}",
            m.SPILL: f"spill/reload ({x.wait_tensor})"}.get(x.wait_kind, "ready at start")


def render_report(s: Schedule, stream=None, width: int | None = None,
                  color: bool | None = None, views: tuple[str, ...] = v.VIEWS,
                  max_rows: int = DEFAULT_MAX_ROWS) -> None:
    """Print the selected views. `width`: fixed width (default: the terminal's, or 100
    when piped); `color`: None = colour only on a terminal without NO_COLOR."""
    stream = stream or sys.stdout
    out = stream
    console, color = _console(stream, width, color)
    if not color:  # plain text: drop the padding rich leaves at line ends
        import io
        stream = io.StringIO()
        console.file = stream
    from nkirun.terminal import micro_ok
    _MICRO["on"] = bool(color) and micro_ok(out)
    palette = {x.op: ENGINE_COLORS.get(x.engine, _OTHER_COLOR) for x in s.slots}
    first = True
    for name in views:
        if not first:
            console.print()
        first = False
        if name == "summary":
            _summary(console, s, color)
        elif name == "table":
            _instructions(console, s, color, max_rows, palette)
        elif name == "timeline":
            _timeline(console, s, color)
        elif name == "critical":
            _critical(console, s, color, palette, max_rows)
        elif name == "advice":
            from nkirun.schedule.advice import advice, lines
            console.print("what to change")
            console.print(_hanging([("-", x) for x in lines(advice(s), _time)]))
    if stream is not out:
        out.write("".join(line.rstrip() + "\n" for line in stream.getvalue().splitlines()))


def _bar(frac: float, n: int, color: bool) -> str:
    full = round(max(0.0, min(1.0, frac)) * n)
    return ("█" * full + "░" * (n - full)) if color else ("#" * full + "." * (n - full))


def _summary(console, s: Schedule, color: bool) -> None:
    from rich.text import Text
    d = v.summary(s)
    head = Text()
    head.append(d["program"], style="bold")
    head.append(f" on {d['target']} ({d['core']}): {d['instruction_count']} instructions, "
                f"makespan ")
    head.append(_time(d["total_ns"]), style="bold")
    if d.get("launch_ns"):
        head.append(f"; one call {_time(d['kernel_ns'])} with the launch cost (FITTED, "
                    "docs/cost.md)")
    console.print(head)
    for row in d.get("loops", ()):  # runtime loops: schedule/trips.py
        core = f", core {row['core']}" if "core" in row else ""
        console.print(f"loop {row['name']} (line {row['line']}{core}): {row['iterations']:,} "
                      f"iterations in {row['entries']:,} "
                      f"{'entry' if row['entries'] == 1 else 'entries'}, trip count "
                      + {"static": "from its constant bounds", "data": "from running the data",
                         "assumed": "ASSUMED (--trip)"}[row["trips"]]
                      + _extrapolated(row))
    bn = d["bottleneck"]
    if bn:
        e = d["engines"][bn]
        console.print(f"bottleneck: {bn} (busy {_time(e['busy_ns'])}, "
                      f"{e['utilization']:.0%} of the makespan)")
    from nkirun.terminal import in_unit, time_unit
    unit, scale = time_unit(d["total_ns"], _MICRO["on"])
    busy = f"busy {unit}"
    headers = ["engine", "clock GHz", "instructions", busy, "utilization"]
    rows = []
    for name, e in d["engines"].items():
        label = f"dma ({e['queues']} queues)" if name == "dma" else name
        # DMA times are ns already (no clock): see the cost formulas
        rows.append([label, "-" if name == "dma" else f"{e['clock_ghz']:g}",
                     f"{e['instructions']:,}", in_unit(e["busy_ns"], scale),
                     f"{e['utilization']:.0%}"])
    room = console.width - _min_width(headers, rows, range(len(headers))) - 3
    n_bar = min(20, room)  # the bar takes what is left, up to 20 characters
    if n_bar >= 5:
        headers.append("")
        for row, e in zip(rows, d["engines"].values()):
            row.append(_bar(e["utilization"], n_bar, color))
    styles = [("bold" if name == bn else ("dim" if not e["instructions"] and color else None))
              for name, e in d["engines"].items()]
    _grid(console, color, "engines", headers, rows,
          ("clock GHz", "instructions", busy, "utilization"), ("clock GHz",),
          styles=styles)
    if d["engines"]["dma"]["instructions"]:
        q = d["engines"]["dma"]
        console.print(f"DMA queues: {_time(q['queue_busy_ns'])} of queue time busy, "
                      f"{q['queue_utilization']:.0%} of {q['queues']} queues x makespan")
    if d["notes"]:
        console.print("notes:")
        console.print(_hanging([("-", n) for n in d["notes"]]))


def _instructions(console, s: Schedule, color: bool, max_rows: int, palette) -> None:
    from nkirun.terminal import in_unit, time_unit
    unit, scale = time_unit(s.total_ns, _MICRO["on"])
    start, end, own = f"start {unit}", f"end {unit}", f"own {unit}"
    headers = ["#", "line", "op", "engine", "cycles", own, start, end, "waited for"]
    shown = s.slots if max_rows <= 0 else s.slots[:max_rows]
    rows = [[f"{x.index:,}", str(x.line), x.title + (" *" if x.assumed else ""), x.queue,
             _cycles(x), in_unit(s.own_ns(x), scale), in_unit(x.start_ns, scale),
             in_unit(x.end_ns, scale), _short(x)]
            for x in shown]
    if console.width < 110:  # the source line column only when there is room
        headers, rows = headers[:1] + headers[2:], [r[:1] + r[2:] for r in rows]
    _grid(console, color, "instructions", headers, rows,
          ("#", "line", "cycles", own, start, end), (own, start, end, "engine"),  # engine last
          wrap=("waited for",),
          styles=[palette.get(x.op) if color else None for x in shown])
    if len(shown) < len(s.slots):
        console.print(f"... {len(s.slots) - len(shown):,} more instructions "
                      "(--max-rows 0 shows all; --format json lists every one)")
    console.print(f"cost formulas (cycles of the executing engine; own {unit}: cycles / its "
                  f"clock, or a DMA transfer's time on its own, which is modelled in ns):")
    seen = {}
    for x in s.slots:
        seen.setdefault(x.op, x)
    console.print(_hanging([(f"{op}{' *' if x.assumed else ''}:", x.formula)
                            for op, x in seen.items()]))
    if any(x.assumed for x in seen.values()):
        console.print("  * assumed: the instruction's page documents no cost formula")


def _hanging(rows):
    """Two columns, the second wrapped with a hanging indent."""
    from rich.table import Table
    t = Table.grid(padding=(0, 1))
    t.add_column(no_wrap=True)
    t.add_column(overflow="fold")
    for a, b in rows:
        t.add_row("  " + a, b)
    return t


def _timeline(console, s: Schedule, color: bool) -> None:
    from rich.text import Text
    total = s.total_ns
    rows = v.tracks(s)
    label_w = max([len(n) for n, _ in rows] + [5])
    width = max(16, console.width - label_w - 4 - 7)
    console.print(Text(f"timeline (1 column = {_time(total / width if width else 0)})",
                       style="bold" if color else ""))
    for name, slots in rows:
        line = Text(f"{name:<{label_w}} |")
        for ch in v.bar(slots, total, width):
            if ch == ".":
                line.append("·" if color else ".", style="dim" if color else "")
            else:
                line.append(ch, style=f"black on {_letter_color(ch)}" if color else "")
        busy = sum(x.duration_ns for x in slots)
        line.append(f"| {busy / total:4.0%}" if total else "|")
        console.print(line)
    from nkirun.terminal import in_unit, time_unit
    unit, scale = time_unit(total, _MICRO["on"])
    left, mid, right = "0", in_unit(total / 2, scale), f"{in_unit(total, scale)} {unit}"
    axis = [" "] * width
    pos = max(0, width // 2 - len(mid) // 2)
    axis[:len(left)] = left
    axis[pos:pos + len(mid)] = mid
    axis[width - len(right):] = right
    console.print(" " * (label_w + 2) + "".join(axis)[:width])
    legend, line = [], Text("legend:")
    entries = [(ch, engine) for engine, ch in v.legend(s).items()]
    entries.append(("", "(case alternates between consecutive instructions)"))
    for ch, what in entries:  # wrapped between entries, never inside one
        if len(line) + 3 + len(what) + 1 > console.width and len(line) > 8:
            legend.append(line)
            line = Text("       ")
        line.append("  ")
        if ch:
            line.append(ch, style=f"black on {_letter_color(ch)}" if color else "")
            line.append(" ")
        line.append(what)
    for ln in legend + [line]:
        console.print(ln)


def _letter_color(ch: str) -> str:
    """A timeline letter's engine colour (ENGINE_COLORS)."""
    engine = next((e for e, c in v.ENGINE_LETTERS.items() if c == ch.upper()), None)
    return ENGINE_COLORS.get(engine, _OTHER_COLOR)


def _critical(console, s: Schedule, color: bool, palette, max_rows: int) -> None:
    d = v.critical(s)
    path = s.critical_path()
    total = s.total_ns
    console.print(Text(f"critical path ({len(path):,} instructions, {_time(total)})",
                       style="bold" if color else ""))
    _items(console, "time on the path by engine:", [
        f"{k} {e['share']:.0%} ({e['instructions']} instr.)" for k, e in d["by_engine"].items()])
    from nkirun.terminal import in_unit, time_unit
    unit, scale = time_unit(total, _MICRO["on"])
    start = f"start {unit}"
    headers = ["#", "op", "engine", start, unit, "share", "started after"]
    shown = path if max_rows <= 0 else path[:max_rows]
    rows = [[f"{x.index:,}", x.op, x.queue, in_unit(x.start_ns, scale),
             in_unit(x.duration_ns, scale),
             f"{x.duration_ns / total:.0%}" if total else "-", _short(x)] for x in shown]
    _grid(console, color, "", headers, rows, ("#", start, unit, "share"),
          (start, "engine"), wrap=("started after",),
          styles=[palette.get(x.op) if color else None for x in shown])
    if len(shown) < len(path):
        console.print(f"... {len(path) - len(shown):,} more steps (--max-rows 0 shows all)")


def _extrapolated(row: dict) -> str:
    """The words for a loop whose later trips repeat its steady state (schedule/steady.py)."""
    x = row.get("extrapolated")
    if not x:
        return ""
    return (f"; trips {x['trips_scheduled'] + 1:,} on repeat trip {x['trips_scheduled']:,}, "
            f"{_time(x['period_ns'])} apart (steady state)")
