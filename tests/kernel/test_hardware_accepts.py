"""Patterns the Neuron compiler and hardware accept, which nkirun once refused (issues 26
and 27): each is a small kernel of our own reproducing the pattern of a public kernel that
ran on hardware; `check` must accept it (warnings allowed) and, where it runs, `run` must
give the NumPy result. README "Readings of the pages" and docs/diagnostics.md say why."""
from __future__ import annotations

import json

from click.testing import CliRunner

from nkirun.cli import cli
from tests.kernel.test_kernel_contract import write


def check_json(path: str, *args: str) -> dict:
    r = CliRunner().invoke(cli, ["check", path, *args, "--format", "json"])
    assert "Traceback" not in r.output, r.output
    return json.loads(r.stdout)


def codes(doc: dict, severity: str = "error") -> list[str]:
    return [d["code"] for d in doc["diagnostics"] if d["severity"] == severity]


UNUSED_IMPORT = """\
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
from neuronxcc.nki import trace


@nki.jit
def kernel(x):
    from neuronxcc.nki import trace
    out = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.dma_copy(dst=out, src=t)
    return out
"""


def test_an_unused_imported_nki_name_is_accepted(tmp_path):
    """NKIBench's kernels all import `trace` and never use it (E601 refused ten of them)."""
    doc = check_json(write(tmp_path, UNUSED_IMPORT) + "::kernel", "--shape", "x=float32[128,4]")
    assert doc["ok"], doc


def test_using_an_imported_unprovided_name_is_e601_where_it_is_used(tmp_path):
    path = write(tmp_path, UNUSED_IMPORT.replace("    return out", "    trace(out)\n    return out"))
    doc = check_json(path + "::kernel", "--shape", "x=float32[128,4]")
    (d,) = [d for d in doc["diagnostics"] if d["code"] == "E601"]
    assert d["line"] == 14 and "nki.trace" in d["message"] and "imported at line 9" in d["message"]
