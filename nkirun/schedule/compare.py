"""What-if: two schedules side by side (two programs or kernels, two targets, two shapes),
where the difference comes from, and orderings faster than program order.

`compare(a, b)` is data (the JSON of `nkirun cost A --compare B`); `render_compare` prints
it like the other cost views (rich on a terminal, plain ASCII when piped).
"""
from __future__ import annotations

import sys

from nkirun.schedule import model as m
from nkirun.schedule.advice import reorder_hints
from nkirun.schedule.model import Schedule



def _r(x: float) -> float:
    return round(x, 3)


def side(s: Schedule, label: str) -> dict:
    engines = s.engines()
    path = s.critical_path()
    on_path: dict[str, float] = {}
    for x, t in zip(path, m.path_contributions(path)):
        on_path[x.engine] = on_path.get(x.engine, 0.0) + t
    ops: dict[str, float] = {}
    for x in s.slots:
        ops[x.op] = ops.get(x.op, 0.0) + (x.busy_ns / max(1, len(x.queues))
                                          if x.engine == "dma" else x.duration_ns)
    return {"label": label, "target": s.target.name, "total_ns": _r(s.total_ns),
            "instructions": s.instruction_count, "bottleneck": s.bottleneck(),
            "busy_ns": {n: _r(e["busy_ns"]) for n, e in engines.items()},
            "critical_path_ns": {k: _r(v) for k, v in on_path.items()},
            "critical_path_length": len(path),
            "op_busy_ns": {k: _r(v) for k, v in ops.items()},
            "reorder": reorder_hints(s)}


def compare(a: Schedule, b: Schedule, label_a: str, label_b: str) -> dict:
    sa, sb = side(a, label_a), side(b, label_b)
    engines = list(dict.fromkeys(list(sa["busy_ns"]) + list(sb["busy_ns"])))
    deltas = [{"engine": n, "a_ns": sa["busy_ns"].get(n, 0.0), "b_ns": sb["busy_ns"].get(n, 0.0),
               "delta_ns": _r(sb["busy_ns"].get(n, 0.0) - sa["busy_ns"].get(n, 0.0))}
              for n in engines]
    ops = list(dict.fromkeys(list(sa["op_busy_ns"]) + list(sb["op_busy_ns"])))
    op_deltas = sorted(({"op": o, "delta_ns": _r(sb["op_busy_ns"].get(o, 0.0)
                                                 - sa["op_busy_ns"].get(o, 0.0))}
                        for o in ops), key=lambda d: -abs(d["delta_ns"]))
    ratio = sb["total_ns"] / sa["total_ns"] if sa["total_ns"] else None
    return {"a": sa, "b": sb, "ratio_b_over_a": None if ratio is None else round(ratio, 4),
            "total_delta_ns": _r(sb["total_ns"] - sa["total_ns"]),
            "engine_deltas": deltas, "op_deltas": op_deltas[:8],
            "explanation": explain(sa, sb)}


def explain(sa: dict, sb: dict) -> list[str]:
    """Where the difference comes from, in words."""
    out = []
    ta, tb = sa["total_ns"], sb["total_ns"]
    faster, slower = (sa, sb) if ta <= tb else (sb, sa)
    if ta == tb:
        out.append(f"both take {_us(ta)}: the same makespan")
    elif ta and tb:
        out.append(f"{faster['label']} is {slower['total_ns'] / faster['total_ns']:.2f}x "
                   f"faster ({_us(abs(tb - ta))} less)")
    if sa["bottleneck"] != sb["bottleneck"]:
        out.append(f"the bottleneck moves from {sa['bottleneck']} ({sa['label']}) to "
                   f"{sb['bottleneck']} ({sb['label']})")
    else:
        e = sa["bottleneck"]
        if e:
            out.append(f"both are bound by {e}: {_us(sa['busy_ns'][e])} vs "
                       f"{_us(sb['busy_ns'].get(e, 0.0))} busy")
    for s in (sa, sb):
        r = s["reorder"]
        if r["instructions"]:
            out.append(f"{s['label']}: {r['instructions']} instruction(s) waited in program "
                       f"order while their engine idled; a reordering could fill up to "
                       f"{_us(r['idle_ns_fillable'])} of gaps")
    return out


def _us(ns: float) -> str:
    from nkirun.terminal import duration
    return duration(ns, False)


def render_compare(c: dict, stream=None, width: int | None = None,
                   color: bool | None = None) -> None:
    from nkirun.schedule.report import _console
    out = stream or sys.stdout
    console, color = _console(out, width, color)
    if not color:  # plain text: drop the padding rich leaves at line ends
        import io
        console.file = io.StringIO()
    _compare_text(console, color, c)
    if not color:
        out.write("".join(line.rstrip() + "\n"
                          for line in console.file.getvalue().splitlines()))


def _compare_text(console, color, c: dict) -> None:
    sa, sb = c["a"], c["b"]
    from nkirun.schedule.report import _grid
    rows = [["makespan", _us(sa["total_ns"]), _us(sb["total_ns"])],
            ["target", sa["target"], sb["target"]],
            ["instructions", f"{sa['instructions']:,}", f"{sb['instructions']:,}"],
            ["bottleneck", str(sa["bottleneck"]), str(sb["bottleneck"])]]
    for d in c["engine_deltas"]:
        rows.append([f"{d['engine']} busy", _us(d["a_ns"]), _us(d["b_ns"])])
    for e in sorted(set(sa["critical_path_ns"]) | set(sb["critical_path_ns"])):
        rows.append([f"critical path on {e}", _us(sa["critical_path_ns"].get(e, 0.0)),
                     _us(sb["critical_path_ns"].get(e, 0.0))])
    _grid(console, color, "compare", ["", f"A: {sa['label']}", f"B: {sb['label']}"], rows,
          right=(f"A: {sa['label']}", f"B: {sb['label']}"), drop_order=(),
          wrap=(f"A: {sa['label']}", f"B: {sb['label']}"))
    console.print()
    console.print("where the difference comes from:")
    for line in c["explanation"]:
        console.print(f"  - {line}", soft_wrap=True)
    for d in c["op_deltas"][:5]:
        if d["delta_ns"]:
            console.print(f"  - {d['op']}: {'+' if d['delta_ns'] > 0 else '-'}"
                          f"{_us(abs(d['delta_ns']))} of engine time in B", soft_wrap=True)
    for s in (sa, sb):
        for h in s["reorder"]["top"][:3]:
            console.print(f"  - {s['label']}: #{h['index']} {h['op']} (line {h['line']}) was "
                          f"ready at {_us(h['ready_ns'])} but ran at {_us(h['start_ns'])}; "
                          f"it fits an idle {h['engine']} gap from "
                          f"{_us(h['could_start_ns'])}", soft_wrap=True)
