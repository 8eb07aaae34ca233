"""What to change: the `advice` view of a schedule (docs/cost.md, "Views").

* latency: the share of the critical path resting on assumed costs, and the share spent waiting (DMA fixed latency, the commit
  latency between dependent instructions, a transfer waiting for its queues) rather than
  on an engine's own work; a kernel above half is latency-bound: more engine speed will not
  help, more independent work in flight will;
* DMA: per source line, the bytes, the descriptor size (the contiguous run), the rate the
  transfers achieved end to end against the peak of the engines they used, and a warning
  for descriptors under 512 B or transfers under 32 KiB (the DMA bandwidth guide: >= 2 KiB
  per partition approaches peak, < 256 B is "severely overhead-bound"; the performance
  guide's >= 32 KiB per transfer);
* roofline: the time the kernel's HBM traffic takes at the core's HBM bandwidth and each
  engine's busy time, against the makespan;
* reordering: the instructions a compiler free to reorder could have started earlier
  (reorder_hints, also used by --compare).
"""
from __future__ import annotations

from nkirun.hw.cost_tables import cost_table
from nkirun.schedule import model as m
from nkirun.schedule.model import Schedule, path_contributions

LATENCY_BOUND = 0.5  # share of the critical path waiting above which a kernel is latency-bound
SMALL_DESCRIPTOR = 512  # bytes
SMALL_TRANSFER = 32 * 1024  # bytes
DMA_ROWS = 8
HINTS = 5  # reordering hints listed per schedule


def _r(x: float) -> float:
    return round(x, 3)


def latency(s: Schedule) -> dict:
    """The critical path split into engine work and waiting."""
    path = s.critical_path()
    total = s.total_ns
    t = cost_table(s.target)
    working = assumed = 0.0
    for x, part in zip(path, path_contributions(path)):
        if x.assumed:  # no documented cost formula: nkirun's assumption
            assumed += part
        if x.engine == "dma":  # streaming only: the fixed latency is waiting
            stream = x.busy_ns / max(1, len(x.queues))
            working += min(part, stream)
        else:
            working += part
    waiting = max(0.0, total - working)
    share = waiting / total if total else 0.0
    return {"critical_path_ns": _r(total), "working_ns": _r(working), "waiting_ns": _r(waiting),
            "waiting_share": _r(share), "latency_bound": share > LATENCY_BOUND,
            "assumed_share": _r(assumed / total if total else 0.0),
            "dma_latency_ns": t.dma_latency_ns}


def dma(s: Schedule, limit: int = DMA_ROWS) -> list[dict]:
    """The DMA transfers grouped by source line and shape: bytes, descriptor size, achieved
    rate (bytes over the transfer's time, latency included) against the peak of the engines
    it used (capped by HBM), and warnings; the groups moving most bytes first."""
    t = cost_table(s.target)
    groups: dict[tuple, dict] = {}
    for x in s.slots:
        if x.engine != "dma" or not x.dma_bytes:
            continue
        g = groups.setdefault((x.line, x.op, x.dma_bytes, x.dma_run, len(x.queues)), {
            "line": x.line, "op": x.op, "transfers": 0, "bytes": x.dma_bytes,
            "descriptor_bytes": x.dma_run, "engines": len(x.queues), "ns": 0.0,
            "hbm": x.hbm_bytes > 0})
        g["transfers"] += 1
        g["ns"] += x.duration_ns
    rows = []
    for g in groups.values():
        peak = g["engines"] * t.dma_engine_bytes_per_ns
        if g["hbm"]:
            peak = min(peak, t.hbm_bytes_per_ns)
        rate = g["bytes"] * g["transfers"] / g["ns"] if g["ns"] else 0.0
        warn = []
        if g["descriptor_bytes"] < SMALL_DESCRIPTOR:
            warn.append(f"{g['descriptor_bytes']:.0f} B descriptors (strided or narrow rows): "
                        "keep >= 2 KiB contiguous per partition")
        if g["bytes"] < SMALL_TRANSFER:
            warn.append(f"{g['bytes']:.0f} B per transfer: the ~{t.dma_latency_ns:.0f} ns fixed "
                        "cost dominates below 32 KiB; batch transfers")
        rows.append({"line": g["line"], "op": g["op"], "transfers": g["transfers"],
                     "bytes_each": int(g["bytes"]), "descriptor_bytes": int(g["descriptor_bytes"]),
                     "engines": g["engines"], "achieved_gbps": _r(rate),
                     "peak_gbps": _r(peak), "of_peak": _r(rate / peak if peak else 0.0),
                     "warnings": warn})
    rows.sort(key=lambda r: -r["bytes_each"] * r["transfers"])
    return rows[:limit]


def roofline(s: Schedule) -> dict:
    """HBM traffic at the core's bandwidth and the busiest compute engine, against the
    makespan: the larger is the kernel's roofline bound."""
    t = cost_table(s.target)
    hbm = sum(x.hbm_bytes for x in s.slots)
    mem_ns = hbm / t.hbm_bytes_per_ns / s.program.cores
    engines = s.engines()
    compute = {n: e["busy_ns"] for n, e in engines.items() if n != "dma"}
    engine = max(compute, key=compute.get, default=None)
    engine_ns = compute.get(engine, 0.0) if engine else 0.0
    bound = max(mem_ns, engine_ns)
    return {"hbm_bytes": int(hbm), "hbm_ns": _r(mem_ns), "busiest_engine": engine,
            "engine_ns": _r(engine_ns), "bound": "memory" if mem_ns >= engine_ns else engine,
            "bound_ns": _r(bound), "of_roofline": _r(bound / s.total_ns if s.total_ns else 0.0)}


def reorder_hints(s: Schedule, limit: int = HINTS) -> dict:
    """Instructions that waited for their engine in program order while that engine sat
    idle, earlier, waiting for an earlier instruction's data: a scheduler free to reorder
    (the compiler's) could have started them in that gap. Returns the time such moves could
    take off each instruction (an upper bound: moving one may delay others) and the top ones."""
    hints, gaps, ends = [], {}, {}
    for x in s.slots:
        if x.engine == "dma":
            continue
        unit = (x.core, x.engine)  # each core's engines are their own
        open_gaps = gaps.setdefault(unit, [])
        if x.wait_kind == m.ENGINE and x.ready_ns < x.start_ns:
            fit = [g for g in open_gaps if g[1] - max(g[0], x.ready_ns) >= x.duration_ns]
            if fit:
                g = min(fit, key=lambda g: max(g[0], x.ready_ns))
                gain = x.start_ns - max(g[0], x.ready_ns)
                hints.append({"index": x.index, "op": x.op, "engine": x.engine,
                              "line": x.line, "ready_ns": _r(x.ready_ns),
                              "start_ns": _r(x.start_ns), "could_start_ns": _r(
                                  max(g[0], x.ready_ns)), "gain_ns": _r(gain)})
                open_gaps.remove(g)
        prev_end = ends.get(unit, 0.0)
        if x.start_ns > prev_end + 1e-9 and x.wait_kind in (m.RAW, m.WAR, m.WAW):
            open_gaps.append((prev_end, x.start_ns))
            del open_gaps[:-8]  # the recent gaps only: linear time
        ends[unit] = x.end_ns
    hints.sort(key=lambda h: -h["gain_ns"])
    return {"instructions": len(hints), "idle_ns_fillable": _r(sum(h["gain_ns"]
                                                                   for h in hints)),
            "top": hints[:limit]}


def advice(s: Schedule) -> dict:
    return {"latency": latency(s), "dma": dma(s), "roofline": roofline(s),
            "reorder": reorder_hints(s)}


def lines(a: dict, fmt) -> list[str]:
    """The advice as text lines; `fmt` formats nanoseconds."""
    lat, roof = a["latency"], a["roofline"]
    out = [f"critical path: {lat['waiting_share']:.0%} waiting (DMA fixed latency, dependent-"
           f"instruction latency, queues), {1 - lat['waiting_share']:.0%} engine work"
           + (": LATENCY-BOUND, put more independent work in flight" if lat["latency_bound"]
              else "")]
    if lat["assumed_share"]:
        out.append(f"assumed: {lat['assumed_share']:.0%} of the critical path rests on "
                   "instructions whose cost no public page gives (marked * in the table)")
    out.append(f"roofline: {roof['hbm_bytes']:,} B of HBM traffic take {fmt(roof['hbm_ns'])} at "
               f"the core's bandwidth; busiest engine {roof['busiest_engine'] or '-'} "
               f"{fmt(roof['engine_ns'])}; bound {roof['bound']} at "
               f"{roof['of_roofline']:.0%} of the makespan")
    for r in a["dma"]:
        out.append(f"dma line {r['line']} ({r['op']}): {r['transfers']:,} x {r['bytes_each']:,} B, "
                   f"{r['descriptor_bytes']:,} B descriptors, {r['engines']} engines, "
                   f"{r['achieved_gbps']:.1f} GB/s = {r['of_peak']:.0%} of {r['peak_gbps']:.0f}"
                   + "".join(f"; WARNING {w}" for w in r["warnings"]))
    ro = a["reorder"]
    if ro["instructions"]:
        out.append(f"reordering: {ro['instructions']} instruction(s) waited for an engine that "
                   f"had idled earlier, up to {fmt(ro['idle_ns_fillable'])} fillable")
        for h in ro["top"]:
            out.append(f"  #{h['index']} {h['op']} (line {h['line']}, {h['engine']}): could "
                       f"start at {fmt(h['could_start_ns'])} instead of {fmt(h['start_ns'])}")
    return out
