"""Chrome-trace / Perfetto JSON (Trace Event Format) of a Schedule."""
from __future__ import annotations

import json
import os
import tempfile

from .model import Schedule


def trace_events(s: Schedule) -> dict:
    queues = sorted({x.queue for x in s.slots})
    tid = {q: i + 1 for i, q in enumerate(queues)}
    events = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0,
               "args": {"name": f"{s.program.path} ({s.target.name})"}}]
    for q, i in tid.items():
        events.append({"ph": "M", "name": "thread_name", "pid": 1, "tid": i, "args": {"name": q}})
    for x in s.slots:
        events.append({"ph": "X", "name": x.op, "cat": x.engine, "pid": 1, "tid": tid[x.queue],
                       "ts": x.start_ns / 1000.0, "dur": (x.end_ns - x.start_ns) / 1000.0,
                       "args": {"index": x.index, "cycles": x.cycles, "formula": x.formula,
                                "wait": x.wait}})
    return {"traceEvents": events, "displayTimeUnit": "ns"}


def write_trace(s: Schedule, path: str) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".trace.", suffix=".json.tmp", dir=folder)
    with os.fdopen(fd, "w") as f:
        json.dump(trace_events(s), f)
    os.replace(tmp, path)
