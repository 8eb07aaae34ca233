"""Chrome-trace / Perfetto JSON (Trace Event Format) of a Schedule: open it in
ui.perfetto.dev or chrome://tracing.

  * one process (the program on its target); a two-core program: one process per core;
  * one thread (track) per engine used, and one per group of DMA queues that ran exactly
    the same transfers (views.tracks: "dma.q0-15" when all 16 queues always moved together,
    not 16 identical tracks); one complete event (`ph: "X"`) per instruction on each of its
    tracks, the full arguments on the first;
  * a flow arrow (`ph: "s"` -> `ph: "f"`) for every "waited for" edge: from the instruction
    whose end set a start (data, write-after-read/write, engine or DMA queue) to the one
    that waited, so a click on an instruction shows why it started when it did;
  * counter tracks (`ph: "C"`) of the live SBUF and PSUM bytes (all partitions): a tensor
    is live from the start of the first instruction that uses it to the end of the last.
Times are microseconds, as the format requires.
"""
from __future__ import annotations

import json

from nkirun.schedule.model import Schedule, Slot
from nkirun.schedule.views import instruction_row, tracks

PID = 1
_ON_CHIP = ("sbuf", "psum")
_CHUNK = 512  # events encoded and written at a time


def _us(ns: float) -> float:
    return round(ns / 1000.0, 6)


def _processes(s: Schedule) -> list[tuple[int, str, Schedule]]:
    """(pid, name, the slots it shows): one process, or one per core of a two-core program."""
    head = f"{s.program.path} on {s.target.name} ({s.target.core})"
    if s.program.cores == 1:
        return [(PID, head, s)]
    return [(PID + c, f"core {c}: {head}", s.core_view(c)) for c in range(s.program.cores)]


def _track_events(s: Schedule) -> tuple[list[dict], dict[int, list[tuple[int, int]]]]:
    """Metadata and slices; per instruction index, the (pid, tid) of its tracks in order."""
    events, tids = _metadata(s)
    events.extend(_slices(s, tids))
    return events, tids


def _metadata(s: Schedule) -> tuple[list[dict], dict[int, list[tuple[int, int]]]]:
    """The process and track names; per instruction index, the (pid, tid) of its tracks."""
    events: list[dict] = []
    tids: dict[int, list[tuple[int, int]]] = {}
    for pid, head, part in _processes(s):
        events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                       "args": {"name": head}})
        named = tracks(part)
        on_track = {x.index for _, slots in named for x in slots}
        elided = [x for x in part.slots if x.index not in on_track]
        if elided:  # a transfer elided as a recompute has no DMA queue: a track of its own
            named.append(("dma.elided", elided))
        for tid, (name, slots) in enumerate(named, start=1):
            label = name if name.startswith("dma") else f"{name} ({s.clock(name):g} GHz)"
            events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                           "args": {"name": label}})
            events.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                           "args": {"sort_index": tid}})
            for x in slots:
                tids.setdefault(x.index, []).append((pid, tid))
    return events, tids


def _slices(s: Schedule, tids: dict[int, list[tuple[int, int]]]):
    """One complete event per instruction on each of its tracks, in program order."""
    for x in s.slots:
        (pid, first), *rest = tids[x.index]
        # the end points are rounded and the duration derived from them: rounding ts and
        # dur each on its own made back-to-back slices on a track overlap by 1 ps
        ts = _us(x.start_ns)
        dur = round(_us(x.end_ns) - ts, 6)
        yield {"ph": "X", "name": x.title, "cat": x.engine, "pid": pid, "tid": first,
               "ts": ts, "dur": dur, "args": instruction_row(x, s.own_ns(x))}
        for _, tid in rest:  # the same transfer on its other queue groups: the index only
            yield {"ph": "X", "name": x.title, "cat": x.engine, "pid": pid, "tid": tid,
                   "ts": ts, "dur": dur, "args": {"index": x.index, "queue": x.queue}}


def _flow_events(s: Schedule, tids: dict[int, list[tuple[int, int]]]) -> list[dict]:
    """One arrow per waited-for edge, bound to the slices it joins (start: inside the
    slice that was waited for; end: the enclosing slice of the waiting one)."""
    by_index = {x.index: x for x in s.slots}
    out = []
    for flow_id, x in enumerate((x for x in s.slots if x.waited_on is not None), start=1):
        src = by_index[x.waited_on]
        args = {"from": src.index, "to": x.index, "kind": x.wait_kind, "why": x.wait}
        (spid, stid), (pid, tid) = tids[src.index][0], tids[x.index][0]
        out.append({"ph": "s", "id": flow_id, "name": "waited for", "cat": "wait",
                    "pid": spid, "tid": stid, "ts": _mid(src), "args": args})
        out.append({"ph": "f", "bp": "e", "id": flow_id, "name": "waited for", "cat": "wait",
                    "pid": pid, "tid": tid, "ts": _mid(x)})
    return out


def _mid(x: Slot) -> float:
    return _us((x.start_ns + x.end_ns) / 2)


def live_ranges(s: Schedule) -> tuple[dict[str, float], dict[str, float], dict[str, int]]:
    """Per tensor used: the start of its first use, the end of its last, and the source
    line of the instruction that used it first."""
    first: dict[str, float] = {}
    last: dict[str, float] = {}
    line: dict[str, int] = {}
    for x in s.slots:
        for name in x.tensors:
            if name not in first or x.start_ns < first[name]:
                first[name], line[name] = x.start_ns, x.line
            last[name] = max(last.get(name, x.end_ns), x.end_ns)
    return first, last, line


def live_bytes(s: Schedule, ranges=None) -> dict[str, list[tuple[float, int]]]:
    """Per on-chip buffer, the steps of its live bytes: [(time ns, bytes from then on)]
    (`ranges`: live_ranges(s), when the caller has it)."""
    first, last, _ = ranges or live_ranges(s)
    out = {}
    for buf in _ON_CHIP:
        deltas: dict[float, int] = {}
        for name, t in s.program.tensors.items():
            if t.buffer != buf or name not in first:
                continue
            nbytes = t.size * t.dtype.itemsize
            deltas[first[name]] = deltas.get(first[name], 0) + nbytes
            deltas[last[name]] = deltas.get(last[name], 0) - nbytes
        steps, live = [(0.0, 0)], 0
        for t_ns in sorted(deltas):
            live += deltas[t_ns]
            steps.append((t_ns, live))
        out[buf] = steps
    return out


def _counter_events(s: Schedule) -> list[dict]:
    out = []
    for pid, _, part in _processes(s):  # each core has its own SBUF and PSUM
        for buf, steps in live_bytes(part).items():
            name = f"live {buf.upper()} bytes"
            out += [{"ph": "C", "name": name, "pid": pid, "ts": _us(t), "args": {"bytes": n}}
                    for t, n in steps]
    return out


def trace_events(s: Schedule) -> dict:
    events, tids = _track_events(s)
    events += _flow_events(s, tids)
    events += _counter_events(s)
    return {"traceEvents": events, **trace_events_tail(s)}


def write_trace(s: Schedule, path: str) -> str:
    """Write the trace (`-`: standard output; a regular file atomically, a device or FIFO
    as a stream: nkirun.safeio). Returns where it went."""
    from nkirun import speed
    from nkirun.safeio import write_file
    if speed.STREAMED_JSON:
        return write_file(path, _streamed(s))
    text = json.dumps(trace_events(s), separators=(",", ":"))  # dumps: much faster
    return write_file(path, text.encode("utf-8"))


def _streamed(s: Schedule):
    """The bytes of json.dumps(trace_events(s), separators=(",", ":")), made and written a
    few hundred events at a time: no list of every event, no one giant string."""
    from itertools import chain, islice
    encode = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode
    meta, tids = _metadata(s)
    events = chain(meta, _slices(s, tids), _flow_events(s, tids), _counter_events(s))
    yield b'{"traceEvents":['
    sep = b""
    while True:
        part = list(islice(events, _CHUNK))
        if not part:
            break
        yield sep + ",".join(map(encode, part)).encode("utf-8")
        sep = b","
    tail = trace_events_tail(s)
    yield b"]," + encode(tail)[1:].encode("utf-8")


def trace_events_tail(s: Schedule) -> dict:
    """The document's keys after traceEvents."""
    return {"displayTimeUnit": "ns",
            "otherData": {"program": s.program.path, "target": s.target.name,
                          "total_ns": round(s.total_ns, 3)}}
