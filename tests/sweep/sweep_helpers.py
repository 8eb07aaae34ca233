"""Small kernels for the sweep tests, written into a test's tmp_path."""
from __future__ import annotations

import pathlib
import textwrap

HEADER = "import nki\nimport nki.isa as nisa\nimport nki.language as nl\n"

# A copy kernel: TILE chooses the tile width; UNUSED changes nothing (duplicates);
# SLEEP makes each variant slow (the resume test kills a sweep in the middle).
COPY = HEADER + textwrap.dedent('''
    import time


    @nki.jit
    def copy(x, TILE=128, UNUSED=0, SLEEP=0.0):
        if SLEEP:
            time.sleep(SLEEP)
        P, F = x.shape
        assert F % TILE == 0, f"F={F} is no multiple of TILE={TILE}"
        out = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.shared_hbm)
        for j in range(F // TILE):
            t = nl.ndarray((P, TILE), dtype=x.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=x[:, j * TILE:(j + 1) * TILE])
            nisa.dma_copy(dst=out[:, j * TILE:(j + 1) * TILE], src=t)
        return out


    def reference(x, **_):
        return x.copy()


    def wrong(x, **_):
        return x + 1
''')


def write(tmp_path: pathlib.Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def copy_kernel(tmp_path) -> str:
    return write(tmp_path, "copy_kernel.py", COPY)


def faulty(tmp_path) -> dict:
    """One candidate file per fault, each a variant of the copy kernel's body."""
    body = {
        "loops": ["while True:", "    pass"],
        "allocates": ["import numpy as np", "big = np.ones(50 * 2**30, dtype=np.uint8)"],
        "exits": ["import os", "os._exit(7)"],
        "syntax": ["return ("],
        "imports": ["import not_a_module_nkirun_sweep"],
        "fine": ["pass"],
    }
    tail = ["out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)",
            "t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)",
            "nisa.dma_copy(dst=t, src=x)", "nisa.dma_copy(dst=out, src=t)", "return out"]
    folder = tmp_path / "cands"
    folder.mkdir()
    for name, code in body.items():
        lines = ["", "", "@nki.jit", "def cand(x, TILE=128):"] + \
            ["    " + line for line in code + tail]
        (folder / f"{name}.py").write_text(HEADER + "\n".join(lines) + "\n")
    return {name: str(folder / f"{name}.py") for name in body}


def strip_timing(rows):
    from nkirun.sweep.results import TIMING_FIELDS
    return [{k: v for k, v in r.items() if k not in TIMING_FIELDS} for r in rows]
