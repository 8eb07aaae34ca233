"""`cost --html FILE`: one self-contained HTML file of a predicted schedule (profile_data.py
makes the data; profile_assets/ holds the page's script and style, inlined here).

Self-contained means: no network at all. The page has a Content-Security-Policy that allows
only its own inline script and style, so a request to anything outside the file cannot be
made even by accident; the data sits in a `<script type="application/json">` element.
Why no charting library: the views are a Gantt chart, two step charts, bank rows and tables.
A canvas draws them in ~300 lines of script that ship with nkirun (about 25 KB); the smallest
well-kept libraries that draw a 100,000-bar timeline with culling add 0.3-3.5 MB to every
file and a dependency to the install (docs/profile.md).
"""
from __future__ import annotations

import html
import json
import math
from importlib import resources

from nkirun.schedule.model import Schedule
from nkirun.show.profile_data import profile_data

_CSP = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
        "img-src data:")


def _asset(name: str) -> str:
    return resources.files("nkirun.show").joinpath("profile_assets", name).read_text("utf-8")


def _json_for_script(data) -> str:
    """JSON safe inside a <script> element: every `<` escaped (so no `</script>` or `<!--`
    of a kernel's text can end or change the element) and the two JS line separators;
    non-finite numbers as strings (JSON has none)."""
    try:  # numbers of a schedule are finite: walk the data only when one is not
        text = json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except ValueError:
        text = json.dumps(_finite(data), separators=(",", ":"), ensure_ascii=False)
    return (text.replace("<", "\\u003c").replace("\u2028", "\\u2028")
            .replace("\u2029", "\\u2029"))


def _finite(x):
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    return x


def read_source(s: Schedule) -> str | None:
    """The program or kernel text behind a schedule, when it can be read."""
    if s.program.source_lines:
        return "\n".join(s.program.source_lines)
    path = s.program.path.split("::")[0]
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(8 << 20)
    except OSError:
        return None


def render_html(schedules: list[Schedule], titles: list[str] | None = None,
                shadow: list | None = None, heatmaps: list | None = None) -> str:
    """The page for one schedule, or two side by side (`cost A --compare B --html`)."""
    profiles = []
    for k, s in enumerate(schedules):
        p = profile_data(s, read_source(s), shadow if k == 0 else None,
                         titles[k] if titles else None)
        if k == 0 and heatmaps:
            p["heatmaps"] = heatmaps
        profiles.append(p)
    title = "  vs  ".join(p["title"] for p in profiles)
    return "".join([
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{_CSP}\">",
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
        f"<title>nkirun profile: {html.escape(title)}</title>",
        f"<style>{_asset('profile.css')}</style></head><body>",
        "<header><h1></h1><span class=\"verdict\"></span></header><nav></nav><main></main>",
        "<div id=\"tip\"></div>",
        f"<script id=\"data\" type=\"application/json\">"
        f"{_json_for_script({'profiles': profiles})}</script>",
        f"<script>{_asset('profile.js')}</script></body></html>\n"])


def write_html(schedules: list[Schedule], path: str, **kw) -> str:
    """Write the page (`-`: standard output; files atomically: nkirun.safeio). Returns where."""
    from nkirun.safeio import write_file
    return write_file(path, render_html(schedules, **kw).encode("utf-8"))
