"""pytest plugin for benchmarks/nkilib_suite.py: what a public checkout of nki-library's test
harness lacks to run at all outside AWS (none of it touches the simulator path; nkirun
itself comes in through `--nkirun`, nkirun_pytest.py).

- Two modules the harness imports at load time are not in the public repository:
  `test.utils.perf_analysis_private` (perf analysis on hardware) and
  `test.utils.scripts.remote_lock_scripts` (locking remote Trainium hosts). Stubs that raise
  when called stand in.
- In simulation mode the public harness's orchestrator returns before compiling without
  setting `_compiled_kernel`, which it reads afterwards: a class default of None (no
  compiled kernel) is set once the harness is imported.
- NKILIB_SAMPLE=N keeps N tests of each test function (evenly spaced among those the
  harness does not skip; every function's first before any second), so that a sample
  covers every kernel.
- A timeout landing inside NumPy's C code leaves a traceback entry without a line number,
  on which pytest's report code fails with INTERNALERROR and the session ends; such
  tracebacks get the frame's line before the report is made.
- Once a failed test's report is made, the frames of its traceback are cleared: their
  locals (a kernel's inputs, goldens, a simulator's buffers: gigabytes for the large
  attention shapes) would otherwise stay alive (pytest keeps the last failure for
  post-mortem debugging) and the next tests fail for want of memory.
"""
from __future__ import annotations

import os
import sys
import types

import pytest


def _stub(name: str, **attrs) -> None:
    m = types.ModuleType(name, "not in nki-library's public repository (benchmarks stub)")
    m.__path__ = []
    m.__dict__.update(attrs)
    sys.modules.setdefault(name, m)


def _not_public(*_args, **_kwargs):
    raise NotImplementedError("not in nki-library's public repository")


class _NotPublic:
    def __init__(self, *args, **kwargs):
        _not_public()

    from_exit_code = from_json = classmethod(lambda cls, *a, **k: _not_public())


_stub("test.utils.perf_analysis_private", analyze_trace=_not_public)
_stub("test.utils.scripts")
_stub("test.utils.scripts.remote_lock_scripts",
      LockResult=type("LockResult", (_NotPublic,), {}),
      LockStatus=type("LockStatus", (_NotPublic,), {}))


def pytest_sessionstart(session):
    orch = sys.modules.get("test.utils.test_orchestrator")
    if orch is not None and not hasattr(orch.Orchestrator, "_compiled_kernel"):
        orch.Orchestrator._compiled_kernel = None


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    n = int(os.environ.get("NKILIB_SAMPLE", "0") or 0)
    if n <= 0:
        return
    by_function: dict = {}
    for it in items:
        if it.get_closest_marker("skip") is None:
            by_function.setdefault(it.nodeid.split("[", 1)[0], []).append(it)
    order = {}
    for f, members in enumerate(by_function.values()):
        m = min(n, len(members))
        for i in range(m):
            order[id(members[(2 * i + 1) * len(members) // (2 * m)])] = (i, f)
    kept = sorted((it for it in items if id(it) in order), key=lambda it: order[id(it)])
    config.hook.pytest_deselected(items=[it for it in items if id(it) not in order])
    items[:] = kept


def _with_lines(tb):
    entries = []
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    if all(t.tb_lineno is not None for t in entries):
        return None
    rebuilt = None
    for t in reversed(entries):
        line = t.tb_lineno if t.tb_lineno is not None else (t.tb_frame.f_lineno or 1)
        rebuilt = types.TracebackType(rebuilt, t.tb_frame, t.tb_lasti, line)
    return rebuilt


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    ei = call.excinfo
    if ei is not None:
        exc, seen = ei.value, set()
        while exc is not None and id(exc) not in seen:
            seen.add(id(exc))
            fixed = _with_lines(exc.__traceback__)
            if fixed is not None:
                exc.__traceback__ = fixed
            exc = exc.__cause__ or exc.__context__
        fixed = _with_lines(ei.tb)
        if fixed is not None:
            from _pytest._code import ExceptionInfo
            call.excinfo = ExceptionInfo.from_exc_info((ei.type, ei.value, fixed))
    yield
    if ei is not None and call.when == "call":
        _clear_frames(ei.value)
        sys.last_traceback = sys.last_value = sys.last_exc = None


def _clear_frames(exc) -> None:
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        tb = exc.__traceback__
        while tb is not None:
            try:
                tb.tb_frame.clear()
            except RuntimeError:  # a frame still running (pytest's own)
                pass
            tb = tb.tb_next
        exc = exc.__cause__ or exc.__context__


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """Each test's process peak resident memory so far (MB) and its CPU time (inputs,
    golden, nkirun and comparison: on a shared machine its wall time says little), into
    the junit report."""
    import resource
    before = resource.getrusage(resource.RUSAGE_SELF)
    yield
    after = resource.getrusage(resource.RUSAGE_SELF)
    item.user_properties.append(("cpu_s", round(after.ru_utime + after.ru_stime
                                                - before.ru_utime - before.ru_stime, 1)))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss << 10
    usage = sys.modules.get("nkirun.dropin.usage")  # it resets the kernel's high-water mark
    if usage is not None:
        peak = max(peak, usage.process_peak_bytes() or 0)
    item.user_properties.append(("max_rss_mb", peak >> 20))
