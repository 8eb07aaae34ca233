"""`cost --html` opened in a real headless Chromium: the page renders with no console message
and no request, and its views draw the schedule's numbers.

Needs a Chromium (Debian: `apt-get install chromium`); skipped without one unless
NKIRUN_REQUIRE_BROWSER=1 (CI sets it, so a lost browser fails instead of skipping).
NKIRUN_SCREENSHOTS=DIR also writes a PNG of each view there (docs/img/ comes from it).
"""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from repo_paths import PROGRAMS

BROWSER = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")
                if shutil.which(n)), None)
if BROWSER is None:
    if os.environ.get("NKIRUN_REQUIRE_BROWSER") == "1":
        raise RuntimeError("NKIRUN_REQUIRE_BROWSER=1 but no chromium on PATH")
    pytest.skip("no headless Chromium on this machine", allow_module_level=True)

SHOTS = os.environ.get("NKIRUN_SCREENSHOTS")
KERNELS = PROGRAMS / "kernels"


def _chromium(tmp_path, *args, timeout=120):
    cmd = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           f"--user-data-dir={tmp_path / 'chromium-profile'}", "--enable-logging=stderr",
           "--v=0", "--virtual-time-budget=5000", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def open_page(tmp_path, page, view="timeline") -> dict:
    """The page's <body> attributes after its script ran; fails on any console message."""
    got = _chromium(tmp_path, "--dump-dom", f"file://{page}#view={view}")
    console = [ln for ln in got.stderr.splitlines() if ":CONSOLE" in ln]
    assert not console, console  # the page logs nothing; a blocked request would log here
    m = re.search(r"<body([^>]*)>", got.stdout)
    assert m, got.stdout[:500] + got.stderr[-2000:]
    attrs = dict(re.findall(r'data-([\w-]+)="([^"]*)"', m.group(1)))
    assert attrs.get("rendered") == "1", attrs
    assert "errors" not in attrs, attrs["errors"]
    return attrs


def screenshots(tmp_path, page, name, views):
    if not SHOTS:
        return
    os.makedirs(SHOTS, exist_ok=True)
    for v in views:
        _chromium(tmp_path, "--window-size=1400,760", f"--screenshot={SHOTS}/{name}-{v}.png",
                  f"file://{page}#view={v}")


def cost_html(tmp_path, *args) -> tuple:
    """`nkirun cost ARGS --html F --format json`: the page and the JSON report."""
    page = tmp_path / "profile.html"
    got = subprocess.run([sys.executable, "-m", "nkirun", "cost", *map(str, args), "--html",
                          str(page), "--format", "json"], capture_output=True, text=True,
                         timeout=300)
    assert got.returncode == 0, got.stderr
    assert str(page) in got.stderr  # says where it wrote
    return page, json.loads(got.stdout)


def _hottest(table) -> int:
    per = {}
    for row in table:
        per[row["line"]] = per.get(row["line"], 0.0) + row["duration_ns"]
    return max(per, key=lambda ln: (per[ln], -ln))


def test_example_program_one_bar_per_instruction(tmp_path):
    page, report = cost_html(tmp_path, PROGRAMS / "rowmax_in_window.yaml")
    attrs = open_page(tmp_path, page)
    assert int(attrs["bars"]) == int(attrs["instructions"]) == len(report["instructions"])
    assert int(attrs["hottest-line"]) == _hottest(report["instructions"])
    screenshots(tmp_path, page, "program", ["summary", "timeline", "source", "memory", "dma"])


def test_kernel_hottest_line_is_the_reports(tmp_path):
    page, report = cost_html(tmp_path, KERNELS / "flash_attention.py",
                             "--shape", "q=float32[64,128]", "--shape", "k=float32[64,384]",
                             "--shape", "v=float32[384,64]")
    attrs = open_page(tmp_path, page, "source")
    assert int(attrs["hottest-line"]) == _hottest(report["instructions"])
    assert int(attrs["instructions"]) == len(report["instructions"])
    screenshots(tmp_path, page, "kernel", ["summary", "timeline", "source", "memory", "dma"])


def test_two_core_kernel(tmp_path):
    page, report = cost_html(tmp_path, KERNELS / "rmsnorm_lnc2.py", "--lnc", "2",
                             "--shape", "x=float32[256,200]", "--shape", "w=float32[1,200]")
    attrs = open_page(tmp_path, page)
    assert int(attrs["instructions"]) == len(report["instructions"])
    assert int(attrs["bars"]) > 0
    html = page.read_text()
    assert '"core0.' in html and '"core1.' in html  # a lane per engine of each core
    screenshots(tmp_path, page, "lnc2", ["timeline"])


def test_shadow_run_precision_view(tmp_path):
    import numpy as np
    rng = np.random.default_rng(0)
    args = []
    for name, shape in (("q", (64, 128)), ("k", (64, 128)), ("v", (128, 64))):
        np.save(tmp_path / f"{name}.npy", rng.standard_normal(shape).astype(np.float32))
        args += ["--input", f"{name}={tmp_path / (name + '.npy')}"]
    page = tmp_path / "precision.html"
    got = subprocess.run([sys.executable, "-m", "nkirun", "run", str(KERNELS / "attention_bf16.py"),
                          *args, "--shadow", "--html", str(page), "--out", str(tmp_path / "o"),
                          "--format", "json"], capture_output=True, text=True, timeout=300)
    assert got.returncode == 0, got.stderr
    report = json.loads(got.stdout)
    attrs = open_page(tmp_path, page, "precision")
    assert attrs["view"] == "precision"
    added = [r for r in report["shadow"] if r["added_max_abs_error"]]
    assert int(attrs["precision-rows"]) == len(added) > 0
    assert int(attrs["heatmaps"]) == 1  # out0, the one output
    screenshots(tmp_path, page, "shadow", ["precision"])
