"""The garbage-collector policy of nkirun's long passes.

Building and checking a long program allocates millions of small objects and frees almost
none, so cyclic collections would only rescan the growing IR (a third of the time on
100k-instruction traces). The `nkirun` command owns its process and pauses the collector
for the whole command. In a caller's process the collector is paused only while a kernel
is traced, while the traced program is checked and while it is scheduled (api_kernel.py,
pipeline/kernel_calls.py and front.py's load of a kernel file, pipeline/commands.py:
10-15% of the trace and ~25% of the check of 100,000 instructions, 20-25% of the schedule
of the 39,000-instruction matmul tutorial), and restored as it was when the pass ends,
also when the kernel raises; `import nkirun` alone changes nothing.

When the command's process exits, the interpreter's shutdown runs one more full collection
over every object it holds (NumPy's, the modules', the IR's); none of them needs it, as the
process's memory goes back whole. `skip_exit_collection` freezes them first, at exit (10-15%
of the CPU time of `nkirun check` of a small program; issue 28, docs/performance.md).

A pause must not keep garbage alive for ever in a long-lived caller (1,500 API calls grew
a process to 1 GB): what a short pass allocated is left to the young generations, where
its garbage dies as usual; a long pass's objects are filed under the oldest generation
(so that no young collection scans them all at once) and counted, and once those since
the last full collection exceed a quarter of the objects that survived it (CPython's own
rule for full collections, which never sees objects filed this way), the next pause starts
with a full collection — by then the caller has usually dropped the earlier results.
A full collection that ran since the last filing (the caller's own `gc.collect()`, or
CPython's) has already scanned every filed object, and the count starts again from zero
rather than start a second full collection at once (the suite's worker collects before
timing `cost`: it paid two, 0.1 s of NKIBench bmm's 0.7 s schedule).
"""
from __future__ import annotations

import atexit
import gc
import threading
from contextlib import contextmanager

YOUNG_LIMIT = 50_000  # objects a pass may leave to the young generations
MIN_FILED = 200_000  # filed objects below which no full collection is started
_lock = threading.Lock()
_filed = 0  # objects filed under the oldest generation since the last full collection
_survivors = 0  # gc-tracked objects after that collection
_fulls = 0  # full collections CPython had counted at the last filing or collection


@contextmanager
def paused_gc():
    """Pause the cyclic garbage collector for the duration (see the module docstring)."""
    if not gc.isenabled():
        yield
        return
    _collect_if_due()
    gc.disable()
    try:
        yield
    finally:
        _file_what_the_pass_left()
        gc.enable()


def skip_exit_collection() -> None:
    """At this process's exit, move every object out of the shutdown's full collection
    (gc.freeze; registered before the command runs, so after the exit handlers the command
    registers; freezing frees nothing, so handlers after it still see their objects).
    Only for a process that is the `nkirun` command (cli.main)."""
    atexit.register(gc.freeze)


def _full_collections() -> int:
    return gc.get_stats()[-1]["collections"]


def _collect_if_due() -> None:
    global _filed, _survivors, _fulls
    with _lock:
        if _full_collections() != _fulls:  # one ran since the filing: it scanned them
            _filed, _fulls = 0, _full_collections()
        if _filed < max(MIN_FILED, _survivors // 4):
            return
        gc.collect()
        _filed, _survivors, _fulls = 0, len(gc.get_objects()), _full_collections()


def _file_what_the_pass_left() -> None:
    global _filed, _fulls
    # The youngest generation's count (tracked objects made minus freed since its last
    # collection: with the collector paused, what the pass left) is what is filed, give or
    # take the few in the middle generation. Counting the frozen list instead walks every
    # object of the process (gc.get_freeze_count: ~15 ns each, 24 ms of the matmul
    # tutorial v4's schedule); freeze and unfreeze themselves only splice lists.
    young = gc.get_count()[0]
    if young < YOUNG_LIMIT or gc.get_freeze_count() != 0:
        return  # (a short pass: left young; a caller's own frozen objects stay frozen)
    gc.freeze()
    with _lock:
        if _full_collections() != _fulls:  # (what was filed before it has been scanned)
            _filed, _fulls = 0, _full_collections()
        _filed += young
    gc.unfreeze()
