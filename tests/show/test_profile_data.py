"""The HTML profile's data (nkirun/show/profile_data.py) and page (profile_page.py), without a
browser: every number the page draws is the schedule's."""
import json
import re

import numpy as np
import pytest

import nkirun
from nkirun.show.profile_data import memory_view, profile_data
from nkirun.show.profile_page import render_html

from repo_paths import PROGRAMS


def _data(html: str) -> dict:
    m = re.search(r'<script id="data" type="application/json">(.*?)</script>', html, re.S)
    return json.loads(m.group(1))


@pytest.fixture(scope="module")
def rowmax():
    return nkirun.cost(PROGRAMS / "rowmax_in_window.yaml")


def test_one_bar_per_instruction_with_its_times(rowmax):
    cols = profile_data(rowmax)["timeline"]["columns"]
    assert cols["index"] == [x.index for x in rowmax.slots]
    assert cols["start"] == [round(x.start_ns, 3) for x in rowmax.slots]
    assert cols["end"] == [round(x.end_ns, 3) for x in rowmax.slots]
    assert len(set(cols["lane"])) == 2  # vector and one DMA queue group


def test_source_lines_sum_engine_time(rowmax):
    src = profile_data(rowmax, "\n".join(rowmax.program.source_lines))["source"]
    per = {int(k): v for k, v in src["per_line"].items()}
    for line, v in per.items():
        got = [x for x in rowmax.slots if x.line == line]
        assert v["count"] == len(got)
        assert v["ns"] == pytest.approx(sum(x.duration_ns for x in got), abs=1e-3)
    assert src["hottest"][0] == max(per, key=lambda k: (per[k]["ns"], -k))
    assert src["lines"][src["hottest"][0] - 1].strip().startswith("- ")


def test_verdict_names_a_dma_bound_program(rowmax):
    v = profile_data(rowmax)["verdict"]
    assert v["bottleneck"] == "dma" and not v["latency_bound"]
    assert 0 <= v["critical_wait_share"] < 1


def _psum_program(n_tiles: int) -> dict:
    tensors = {"a": {"buffer": "sbuf", "shape": [128, 128], "dtype": "float32", "fill": 1.0},
               "b": {"buffer": "sbuf", "shape": [128, 512], "dtype": "float32", "fill": 1.0},
               "o": {"buffer": "hbm", "shape": [128, 512], "dtype": "float32", "output": True},
               "s": {"buffer": "sbuf", "shape": [128, 512], "dtype": "float32"}}
    ins = []
    for k in range(n_tiles):
        tensors[f"p{k}"] = {"buffer": "psum", "shape": [128, 512], "dtype": "float32"}
        ins += [{"nc_matmul": {"dst": f"p{k}", "stationary": "a", "moving": "b"}},
                {"tensor_copy": {"dst": "s", "src": f"p{k}"}}]
    ins.append({"store": {"dst": "o", "src": "s"}})
    return {"version": 1, "target": "trn2", "tensors": tensors, "instructions": ins}


def test_psum_banks_never_overlap_in_time():
    s = nkirun.cost(_psum_program(12))
    m = memory_view(s)
    tiles = m["psum_banks"]
    assert len(tiles) == 12
    for i, a in enumerate(tiles):
        assert 0 <= a["bank"] and a["bank"] + a["banks"] <= m["bank_count"]
        for b in tiles[i + 1:]:
            share_bank = a["bank"] < b["bank"] + b["banks"] and b["bank"] < a["bank"] + a["banks"]
            share_time = a["start"] < b["end"] and b["start"] < a["end"]
            assert not (share_bank and share_time), (a, b)


def test_peak_lists_the_tiles_live_then(rowmax):
    m = memory_view(rowmax)
    peak = m["peaks"]["sbuf"]
    assert peak["bytes"] == sum(t["bytes"] for t in peak["tiles"])
    assert peak["bytes"] == max(b for _, b in m["series"]["sbuf"])


def test_page_is_self_contained_and_escapes_its_data(tmp_path):
    kernel = tmp_path / "k.py"
    kernel.write_text(
        "import nki\nimport nki.isa as nisa\nimport nki.language as nl\n\n\n"
        "@nki.jit\ndef k(x):  # </script><script>alert(1)</script> https://example.com\n"
        "    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)\n"
        "    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)\n"
        "    nisa.dma_copy(dst=t, src=x)\n"
        "    nisa.dma_copy(dst=out, src=t)\n"
        "    return out\n")
    ns: dict = {}
    exec(compile(kernel.read_text(), str(kernel), "exec"), ns)
    html = render_html([nkirun.cost(ns["k"], np.zeros((128, 64), np.float32))])
    assert html.count("<script") == 2  # the data and the page's own script, nothing else
    assert "alert(1)</script>" not in html and "\\u003c/script>" in html
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    data = _data(html)
    assert "</script>" in data["profiles"][0]["source"]["lines"][6]


def test_compare_page_holds_both_schedules(rowmax):
    other = nkirun.cost(PROGRAMS / "rowmax_in_window.yaml", target="trn1")
    data = _data(render_html([rowmax, other], titles=["trn2", "trn1"]))
    assert [p["title"] for p in data["profiles"]] == ["trn2", "trn1"]
    assert data["profiles"][1]["summary"]["target"] == "trn1"


def test_dma_rows_are_the_schedulers_transfers(rowmax):
    from nkirun.show.profile_data import dma_view
    d = dma_view(rowmax)
    dma = [x for x in rowmax.slots if x.engine == "dma"]
    assert [r["index"] for r in d["rows"]] == [x.index for x in dma]
    assert [r["bytes"] for r in d["rows"]] == [int(x.dma_bytes) for x in dma]
    assert d["rows"][0]["bytes"] == 128 * 512 * 4  # the first load: x, float32 [128, 512]
    assert sum(q["bytes"] for q in d["queues"]) == sum(r["bytes"] for r in d["rows"])
    assert d["peak_gbps"] > 0
