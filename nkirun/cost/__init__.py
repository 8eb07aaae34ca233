"""`nkirun cost`: the schedule model and its views (report, JSON, Perfetto trace).

Only the model is imported eagerly; the views (report.py pulls in rich) load on first use,
so that `nkirun check` and `run` do not pay for them at start-up (issue 7, docs/performance.md).
"""
from .model import Schedule, Slot, overlaps, schedule  # noqa: F401

_LAZY = {"parse_views": "report", "render_report": "report", "to_json": "report",
         "trace_events": "trace", "write_trace": "trace", "VIEWS": "views"}


def __getattr__(name: str):
    if name in _LAZY:
        from importlib import import_module
        return getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
