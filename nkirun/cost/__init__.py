"""`nkirun cost`: the schedule model and its views (report, JSON, Perfetto trace)."""
from .model import Schedule, Slot, overlaps, schedule  # noqa: F401
from .report import parse_views, render_report, to_json  # noqa: F401
from .trace import trace_events, write_trace  # noqa: F401
from .views import VIEWS  # noqa: F401
