"""The cost schedule: the model and its views (report, JSON, Perfetto trace).

Every name loads its module on first use (report.py pulls in rich), so that `nkirun check`
and `run` do not pay for them at start-up (issues 7 and 9, docs/performance.md).
"""
_LAZY = {"Schedule": "model", "Slot": "model", "schedule": "cores",
         "parse_views": "report", "render_report": "report", "to_json": "report",
         "trace_events": "perfetto", "write_trace": "perfetto", "VIEWS": "views"}


def __getattr__(name: str):
    if name == "overlaps":  # (exact box overlap: checker/overlap.py, the checker's too)
        from nkirun.checker.overlap import overlaps
        return overlaps
    if name in _LAZY:
        from importlib import import_module
        return getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
