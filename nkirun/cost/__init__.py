"""`nkirun cost`: the schedule model and its views (report, JSON, Perfetto trace)."""
from .model import Schedule, Slot, schedule  # noqa: F401
from .report import render_report, to_json  # noqa: F401
from .trace import write_trace  # noqa: F401
