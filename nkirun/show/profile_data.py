"""The data of the HTML profile (`cost --html`): a Schedule turned into plain, compact JSON
that the page's script draws. Pure functions of the schedule; profile_page.py writes the file.

Instructions are stored column-wise (one list per field, strings interned in tables) so a
100,000-instruction schedule stays a few MB and the page never builds an object per bar.

Readings:
- a source line's time is the engine time of every instruction recorded at that line, summed
  over loop iterations (engine time, not wall time: lines whose instructions overlap add up);
- PSUM banks: nkirun does not know the compiler's allocation, so each PSUM tile is given the
  first banks free at its first use (first fit, in order of first use); the page says so;
- "latency-bound": more than half the makespan passes on the critical path with no
  instruction of the path running (waiting for a commit or DMA latency), or no engine is busy
  for half the makespan.
"""
from __future__ import annotations

import math
import os

from nkirun.hw.cost_tables import cost_table
from nkirun.schedule.model import Schedule, path_contributions
from nkirun.schedule.perfetto import live_bytes, live_ranges
from nkirun.schedule.views import summary, tracks

MAX_SOURCE_LINES = 20_000  # a longer source shows its first lines only
MAX_LINE_CHARS = 400


class _Interned:
    """Strings as indexes into one table (op names, formulas, tensor names)."""

    def __init__(self):
        self.table: list[str] = []
        self._index: dict[str, int] = {}

    def __call__(self, text: str | None) -> int:
        if text is None:
            return -1
        i = self._index.get(text)
        if i is None:
            i = self._index[text] = len(self.table)
            self.table.append(text)
        return i


def _r(x: float) -> float:
    return round(x, 3)


def instruction_columns(s: Schedule, path: list) -> dict:
    """Per instruction (in schedule order): start/end ns, lane, op, line, wait and formula."""
    strings = _Interned()
    lanes = tracks(s)
    lane_of: dict[int, int] = {}
    extra_lanes: dict[int, list[int]] = {}  # a DMA on several queue groups
    for k, (_, slots) in enumerate(lanes):
        for x in slots:
            if x.index in lane_of:
                extra_lanes.setdefault(x.index, []).append(k)
            else:
                lane_of[x.index] = k
    cols = {k: [] for k in ("index", "start", "end", "lane", "op", "line", "cycles",
                            "formula", "wait_kind", "waited_on", "wait_tensor", "assumed",
                            "core")}
    for x in s.slots:
        cols["index"].append(x.index)
        cols["start"].append(_r(x.start_ns))
        cols["end"].append(_r(x.end_ns))
        cols["lane"].append(lane_of.get(x.index, 0))
        cols["op"].append(strings(x.title))
        cols["line"].append(x.line)
        cols["cycles"].append(x.cycles)
        cols["formula"].append(strings(x.formula))
        cols["wait_kind"].append(strings(x.wait_kind))
        cols["waited_on"].append(-1 if x.waited_on is None else x.waited_on)
        cols["wait_tensor"].append(strings(x.wait_tensor))
        cols["assumed"].append(1 if x.assumed else 0)
        cols["core"].append(x.core)
    return {"lanes": [{"name": name, "unit": "ns" if name.startswith(("dma", "core0.dma",
                                                                       "core1.dma"))
                       else "cycles", "clock_ghz": s.clock(name.split(".q")[0])}
                      for name, _ in lanes],
            "columns": cols, "strings": strings.table,
            "extra_lanes": {str(k): v for k, v in extra_lanes.items()},
            "critical": [x.index for x in path]}


def verdict(s: Schedule, summ: dict, path: list) -> dict:
    """Bottleneck or latency-bound, with the numbers behind the word (`summ`: views.summary)."""
    total = s.total_ns
    running = sum(path_contributions(path))
    waiting = max(0.0, total - running) / total if total else 0.0
    busiest = summ["bottleneck"]
    util = summ["engines"][busiest]["utilization"] if busiest else 0.0
    latency_bound = bool(total) and (waiting > 0.5 or util < 0.5)
    durations = sum(x.duration_ns for x in s.slots)
    assumed = sum(x.duration_ns for x in s.slots if x.assumed)
    if not total:
        words = "empty program"
    elif latency_bound:
        words = (f"latency-bound: the busiest engine ({busiest}) is busy "
                 f"{util:.0%} of the time; {waiting:.0%} of the critical path is waiting")
    else:
        words = f"bound by the {busiest} engine ({util:.0%} busy)"
    return {"latency_bound": latency_bound, "critical_wait_share": round(waiting, 4),
            "bottleneck": busiest, "bottleneck_utilization": round(util, 4),
            "assumed_share": round(assumed / durations, 4) if durations else 0.0,
            "words": words}


def source_view(s: Schedule, source_text: str | None) -> dict:
    """The program or kernel text with each line's time, count and share."""
    per_line: dict[int, list[float]] = {}
    for x in s.slots:
        a = per_line.setdefault(x.line, [0.0, 0])
        a[0] += x.duration_ns
        a[1] += 1
    total = sum(a[0] for a in per_line.values())
    lines = (source_text or "").split("\n")[:MAX_SOURCE_LINES]
    hot = sorted(per_line.items(), key=lambda kv: (-kv[1][0], kv[0]))
    return {"path": s.program.path,
            "lines": [_printable(t)[:MAX_LINE_CHARS] for t in lines],
            "truncated": source_text is not None and source_text.count("\n") >= MAX_SOURCE_LINES,
            "per_line": {str(ln): {"ns": _r(ns), "count": n,
                                   "share": round(ns / total, 4) if total else 0.0}
                         for ln, (ns, n) in hot},
            "hottest": [ln for ln, _ in hot if ln > 0][:50]}


def _printable(text: str) -> str:
    return "".join(c if c == "\t" or c.isprintable() else "\ufffd" for c in text)


def memory_view(s: Schedule) -> dict:
    """Live SBUF/PSUM bytes over time, the capacity, the tiles live at each peak, and PSUM
    tiles placed on banks (first fit; see the module docstring)."""
    t = s.target
    cores = s.program.cores
    ranges = first, last, where = live_ranges(s)
    out = {"capacity": {"sbuf": t.sbuf_bytes_per_partition * t.partitions * cores,
                        "psum": t.psum_bytes_per_partition * t.partitions * cores},
           "series": {}, "peaks": {}, "psum_banks": []}
    for buf, steps in live_bytes(s, ranges).items():
        out["series"][buf] = [[_r(a), b] for a, b in steps]
        peak_t, peak = max(steps, key=lambda st: (st[1], -st[0]))
        live = [(name, d) for name, d in s.program.tensors.items()
                if d.buffer == buf and name in first and first[name] <= peak_t < last[name]]
        live.sort(key=lambda nd: -nd[1].size * nd[1].dtype.itemsize)
        out["peaks"][buf] = {"t": _r(peak_t), "bytes": peak, "tiles": [
            {"name": n, "bytes": d.size * d.dtype.itemsize, "shape": list(d.shape),
             "dtype": d.dtype.name, "line": where.get(n, 0)} for n, d in live[:200]],
            "tiles_total": len(live)}
    out["psum_banks"] = _psum_banks(s, first, last)
    out["bank_count"] = max(1, t.psum_bytes_per_partition // t.psum_bank_bytes)
    return out


def _psum_banks(s: Schedule, first: dict, last: dict) -> list[dict]:
    t = s.target
    banks = max(1, t.psum_bytes_per_partition // t.psum_bank_bytes)
    free_at = [0.0] * banks
    out = []
    tiles = sorted((first[n], n, d) for n, d in s.program.tensors.items()
                   if d.buffer == "psum" and n in first)
    for start, name, d in tiles:
        need = min(banks, max(1, math.ceil(d.bytes_per_partition / t.psum_bank_bytes)))
        pick = next((b for b in range(banks - need + 1)
                     if all(free_at[b + i] <= start for i in range(need))), None)
        if pick is None:  # over capacity: the bank freed first
            pick = min(range(banks - need + 1), key=lambda b: max(free_at[b:b + need]))
        for i in range(need):
            free_at[pick + i] = max(free_at[pick + i], last[name])
        out.append({"name": name, "bank": pick, "banks": need, "start": _r(start),
                    "end": _r(last[name]), "bytes_per_partition": d.bytes_per_partition})
    return out


def dma_view(s: Schedule) -> dict:
    """Each transfer's bytes, descriptor size, duration and achieved rate (the scheduler's
    figures: Slot.dma_bytes, Slot.dma_run); per queue group, the totals."""
    rows = []
    for x in s.slots:
        if x.engine != "dma":
            continue
        dur = x.duration_ns
        rows.append({"index": x.index, "op": x.op, "line": x.line, "queue": x.queue,
                     "bytes": int(x.dma_bytes), "descriptor_bytes": int(x.dma_run),
                     "ns": _r(dur), "gbps": round(x.dma_bytes / dur, 3) if dur > 0 else 0.0})
    queues: dict[str, dict] = {}
    for r in rows:
        q = queues.setdefault(r["queue"], {"queue": r["queue"], "transfers": 0, "bytes": 0,
                                           "ns": 0.0})
        q["transfers"] += 1
        q["bytes"] += r["bytes"]
        q["ns"] = _r(q["ns"] + r["ns"])
    return {"peak_gbps": cost_table(s.target).hbm_bytes_per_ns,  # bytes per ns = GB/s
            "rows": rows, "queues": list(queues.values())}


def profile_data(s: Schedule, source_text: str | None = None, shadow: list | None = None,
                 title: str | None = None) -> dict:
    """Everything the page shows about one schedule."""
    summ, path = summary(s), s.critical_path()
    return {"title": title or os.path.basename(s.program.path),
            "summary": summ, "verdict": verdict(s, summ, path),
            "timeline": instruction_columns(s, path), "source": source_view(s, source_text),
            "memory": memory_view(s), "dma": dma_view(s), "precision": shadow or []}


HEATMAP_MAX = (128, 512)  # an output larger than this is max-pooled down to it


def error_heatmap(name: str, real, shadow) -> dict | None:
    """|real - shadow| of one output as a grid of log10 values (rows: the first dimension,
    columns: the rest flattened), max-pooled to at most HEATMAP_MAX cells; None when the
    output is empty. NaN or inf on either side counts as the largest error shown."""
    import numpy as np
    r = np.asarray(real, dtype=np.float64)
    if r.size == 0:
        return None
    err = np.abs(r - np.asarray(shadow, dtype=np.float64)).reshape(r.shape[0], -1)
    bad = ~np.isfinite(err)
    finite = err[~bad]
    top = float(finite.max()) if finite.size else 1.0
    err[bad] = top if top > 0 else 1.0
    rows, cols = err.shape
    ph, pw = math.ceil(rows / HEATMAP_MAX[0]), math.ceil(cols / HEATMAP_MAX[1])
    pad = np.zeros((math.ceil(rows / ph) * ph, math.ceil(cols / pw) * pw))
    pad[:rows, :cols] = err
    pooled = pad.reshape(pad.shape[0] // ph, ph, pad.shape[1] // pw, pw).max(axis=(1, 3))
    positive = pooled > 0  # exact cells stay blank (null)
    logs = np.log10(np.where(positive, pooled, 1.0))
    lo = float(logs[positive].min()) if positive.any() else 0.0
    hi = float(logs[positive].max()) if positive.any() else 0.0
    note = "exact" if not positive.any() else (
        f"cells of {ph}x{pw} elements, max" if ph * pw > 1 else "one cell per element")
    return {"name": name, "shape": list(pooled.shape),
            "values": [round(float(v), 3) if p else None
                       for v, p in zip(logs.ravel(), positive.ravel())],
            "lo": round(lo, 3), "hi": round(hi, 3),
            "max_abs_error": float(err.max()), "note": note}
