"""nkirun's own share of a test's time and memory (the pytest plugin's `nkirun_s` and
`nkirun_mb`): a suite's test also builds inputs and computes goldens, so the process's
totals do not say what nkirun costs.

Around each simulate() call: the wall time, the resident memory at the start, and the
peak resident memory during the call. On Linux the peak is exact: the kernel's high-water
mark (VmHWM) is reset to the current resident size at the start of the call (writing 5 to
/proc/self/clear_refs) and read at its end; what the process had reached before is kept
(`process_peak_bytes`), so the process's own peak stays known. Elsewhere only the resident
size after the call is seen.
"""
from __future__ import annotations

import re
import threading
import time
from contextlib import contextmanager

_STATUS = "/proc/self/status"
_CLEAR_REFS = "/proc/self/clear_refs"
_lock = threading.Lock()
_peak_before_resets = [0]  # the process's high-water mark before our last reset (bytes)


def _status_kb(field: str) -> int | None:
    try:
        with open(_STATUS, encoding="ascii") as f:
            m = re.search(rf"^{field}:\s+(\d+) kB", f.read(), re.M)
    except OSError:
        return None
    return int(m.group(1)) if m else None


def _reset_peak() -> bool:
    """Reset VmHWM to the current resident size, remembering the old one."""
    hwm = _status_kb("VmHWM")
    if hwm is None:
        return False
    _peak_before_resets[0] = max(_peak_before_resets[0], hwm << 10)
    try:
        with open(_CLEAR_REFS, "w", encoding="ascii") as f:
            f.write("5")
    except OSError:
        return False
    return True


def process_peak_bytes() -> int | None:
    """The process's peak resident size so far, across the resets made here."""
    hwm = _status_kb("VmHWM")
    if hwm is None:
        return None
    return max(_peak_before_resets[0], hwm << 10)


@contextmanager
def measured(row: dict):
    """Time and memory of the enclosed call, into `row`: seconds, cpu_seconds (the
    process's CPU time over it: on a loaded machine, what wall time cannot say), rss_mb
    (resident at the start), peak_mb (resident at the peak during the call) and extra_mb (peak_mb - rss_mb:
    what the call itself added at its worst, nkirun's own share)."""
    # a call running beside another (threads) measures without resetting the other's peak
    alone = _lock.acquire(blocking=False)
    try:
        start_kb = _status_kb("VmRSS")
        exact = alone and start_kb is not None and _reset_peak()
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            yield row
        finally:
            row["seconds"] = round(time.perf_counter() - t0, 3)
            row["cpu_seconds"] = round(time.process_time() - c0, 3)
            end_kb = _status_kb("VmHWM" if exact else "VmRSS")
            if start_kb is not None and end_kb is not None:
                row["rss_mb"] = start_kb >> 10
                row["peak_mb"] = max(start_kb, end_kb) >> 10
                row["extra_mb"] = row["peak_mb"] - row["rss_mb"]
                row["peak_exact"] = exact
    finally:
        if alone:
            _lock.release()
