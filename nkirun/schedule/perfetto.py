"""Chrome-trace / Perfetto JSON (Trace Event Format) of a Schedule: open it in
ui.perfetto.dev or chrome://tracing.

One process (the program on its target); one thread (track) per engine used and per DMA
queue used; one complete event (`ph: "X"`) per instruction on its engine's track, and for a
DMA transfer one on each queue it occupies (same name and args). Times are microseconds, as
the format requires.
"""
from __future__ import annotations

import json
import os
import tempfile

from nkirun.schedule.model import Schedule
from nkirun.schedule.views import instruction_row

PID = 1


def trace_events(s: Schedule) -> dict:
    tracks: list[str] = [n for n in s.engine_names()
                         if n != "dma" and any(x.engine == n for x in s.slots)]
    queues = sorted({q for x in s.slots for q in x.queues})
    tracks += [f"dma.q{q}" for q in queues]
    tid = {name: i + 1 for i, name in enumerate(tracks)}
    events: list[dict] = [
        {"ph": "M", "name": "process_name", "pid": PID, "tid": 0,
         "args": {"name": f"{s.program.path} on {s.target.name} ({s.target.core})"}}]
    for name, i in tid.items():
        clock = s.clock(name.split(".")[0])
        label = name if name.startswith("dma") else f"{name} ({clock:g} GHz)"
        events.append({"ph": "M", "name": "thread_name", "pid": PID, "tid": i,
                       "args": {"name": label}})
        events.append({"ph": "M", "name": "thread_sort_index", "pid": PID, "tid": i,
                       "args": {"sort_index": i}})
    for x in s.slots:
        names = [f"dma.q{q}" for q in x.queues] if x.queues else [x.engine]
        ts, dur = x.start_ns / 1000.0, x.duration_ns / 1000.0
        # the full args on the first track; the copies on a transfer's other queues carry
        # only the index (a long program's trace stays a manageable size)
        events.append({"ph": "X", "name": x.op, "cat": x.engine, "pid": PID,
                       "tid": tid[names[0]], "ts": ts, "dur": dur, "args": instruction_row(x)})
        for name in names[1:]:
            events.append({"ph": "X", "name": x.op, "pid": PID, "tid": tid[name], "ts": ts,
                           "dur": dur, "args": {"index": x.index, "queue": x.queue}})
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"program": s.program.path, "target": s.target.name,
                          "total_ns": round(s.total_ns, 3)}}


def write_trace(s: Schedule, path: str) -> None:
    """Write the trace atomically (a temporary file in the same folder, then rename)."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".trace.", suffix=".json.tmp", dir=folder)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(json.dumps(trace_events(s), separators=(",", ":")))  # dumps: much faster
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
