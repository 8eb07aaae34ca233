"""What the pytest plugin (nkirun_pytest.py, beside the nkirun package) does once a run
asks for nkirun: install the drop-in, watch every kernel each test simulates, and report.

`--nkirun-check`: every kernel a test simulates is checked first (an error fails the test,
as it stops the run); the warnings are summarised at the end. `--nkirun-cost`: each test's
predicted kernel time (the sum over the kernels it simulates), as a table at the end.
`--nkirun-json F` writes both, per test, as JSON. Works under pytest-xdist (each test's
numbers travel with its report).
"""
from __future__ import annotations

import json
import time
from contextlib import contextmanager

import pytest

_KEY = "nkirun"
_USAGE = ("seconds", "cpu_seconds", "trace_seconds", "cost_seconds", "rss_mb", "peak_mb",
          "extra_mb")


def configure(config, target, uninitialized, check: bool, cost: bool, json_path) -> None:
    """nkirun_pytest's pytest_configure, once the options ask for nkirun."""
    install(target, uninitialized)
    config.pluginmanager.register(_Report(check, cost, json_path), "nkirun-report")


def install(target, uninitialized=None) -> None:
    from nkirun.dropin import install as install_dropin
    try:
        install_dropin(target, uninitialized or "error")
    except ValueError as e:
        raise pytest.UsageError(f"--nkirun: {e}") from None


class _Report:
    """What the kernels of each test showed: collected on the worker that ran it (a watcher
    of nkirun's simulate), carried in the report's user_properties, tabled at the end."""

    def __init__(self, check: bool, cost: bool, json_path: str | None):
        self.check, self.cost, self.json_path = check, cost, json_path
        self.current: list | None = None  # the running test's kernels
        self.calls: list | None = None  # its simulate() calls: time and memory
        self.tests: dict = {}  # node id -> {"outcome", "kernels": [...]}

    # -- on the worker ------------------------------------------------------------------
    def watch(self, kernel, traced, bound, diags) -> None:
        if self.current is None or not self.calls:
            return
        call = self.calls[-1]
        t0 = call.pop("_t0", None)  # (None: a call that ended, e.g. a collective kernel's
        if t0 is not None:         # one-rank try before its ranks run as a call of their own)
            call["trace_seconds"] = round(time.perf_counter() - t0, 3)
        row = call.setdefault("kernel_row", {})
        row.update(kernel=getattr(kernel, "__qualname__", None) or "kernel",
                   target=traced.program.target, lnc=traced.program.cores,
                   tensor_bytes=_tensor_bytes(traced.program))
        if self.check or self.json_path:
            row["warnings"] = [{"code": d.code, "message": d.message,
                                "where": str(d.loc) if d.loc else None}
                               for d in diags if not d.is_error]
        if self.cost or self.json_path:
            t0 = time.perf_counter()
            row["predicted_ns"] = _predicted_ns(traced, bound)
            call["cost_seconds"] = round(time.perf_counter() - t0, 3)
        self.current.append(row)

    @contextmanager
    def around(self, kernel):
        """One simulate() call of the running test: nkirun's own time and memory."""
        if self.current is None:
            yield
            return
        from nkirun.dropin.usage import measured
        call = {"_t0": time.perf_counter()}
        self.calls.append(call)
        try:
            with measured(call):
                yield
        finally:
            call.pop("_t0", None)
            row = call.pop("kernel_row", None)
            if row is not None:  # traced and valid: its time and memory too
                row.update({k: call[k] for k in _USAGE if k in call})
                row["run_seconds"] = round(call["seconds"] - call.get("trace_seconds", 0)
                                           - call.get("cost_seconds", 0), 3)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        from nkirun.api_kernel import AROUND, WATCHERS
        self.current, self.calls = [], []
        WATCHERS.append(self.watch)
        AROUND.append(self.around)
        start = time.perf_counter()
        try:
            outcome = yield
        finally:
            WATCHERS.remove(self.watch)
            AROUND.remove(self.around)
        data = {"kernels": self.current, "seconds": round(time.perf_counter() - start, 3)}
        data.update(_nkirun_share(self.calls))
        self.current = self.calls = None
        exc = outcome.excinfo[1] if outcome.excinfo else None
        diags = getattr(exc, "diagnostics", None)
        if diags:
            data["errors"] = [{"code": d.code, "message": d.message,
                               "where": str(d.loc) if d.loc else None}
                              for d in diags if d.is_error]
        item.user_properties.append((_KEY, data))

    # -- where the reports arrive (the controller under xdist) ---------------------------
    def pytest_runtest_logreport(self, report):
        if report.when != "call":
            return
        for key, data in report.user_properties:
            if key == _KEY:
                self.tests[report.nodeid] = dict(data, outcome=report.outcome)

    def pytest_terminal_summary(self, terminalreporter):
        from nkirun.dropin.summary import cost_table, warnings_summary
        tr = terminalreporter
        if self.check:
            tr.write_sep("=", "nkirun check")
            for line in warnings_summary(self.tests):
                tr.write_line(line)
        if self.cost:
            tr.write_sep("=", "nkirun predicted kernel time")
            for line in cost_table(self.tests):
                tr.write_line(line)
        if self.json_path:
            with open(self.json_path, "w", encoding="utf-8") as f:
                json.dump({"tests": self.tests}, f, indent=1, sort_keys=True)
            tr.write_line(f"nkirun: wrote {self.json_path}")


def _nkirun_share(calls: list) -> dict:
    """A test's simulate() calls together: nkirun_seconds (their time; nkirun_cpu_seconds
    the process's CPU time in them), nkirun_peak_mb (the
    process's resident size at its highest during one of them) and nkirun_extra_mb (the
    most one call added over what the process held when it began: nkirun's own memory)."""
    if not calls:
        return {}
    return {"nkirun_calls": len(calls),
            "nkirun_seconds": round(sum(c.get("seconds", 0) for c in calls), 3),
            "nkirun_cpu_seconds": round(sum(c.get("cpu_seconds", 0) for c in calls), 3),
            "nkirun_peak_mb": max(c.get("peak_mb", 0) for c in calls),
            "nkirun_extra_mb": max(c.get("extra_mb", 0) for c in calls)}


def _tensor_bytes(program) -> int:
    """The bytes of every tensor the kernel declares (its HBM inputs, outputs and scratch,
    its on-chip tiles): what a simulator must hold, against which nkirun's own memory is
    judged (issue 28: peak RSS <= live tensor bytes + 150 MB)."""
    return sum(t.nbytes for t in program.tensors.values())


def _predicted_ns(traced, bound):
    """The schedule's end, or None where runtime loops need their trip counts from data
    (the plugin does not run a kernel twice)."""
    from nkirun.diagnostics import NkirunError
    from nkirun.schedule import schedule
    from nkirun.schedule.trips import expand
    try:
        seq, _ = expand(traced.program, bound, None, None)
        return round(schedule(traced.program, seq).total_ns, 1)
    except NkirunError:
        return None
