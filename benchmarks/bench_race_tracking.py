"""What the two-core run-time race tracking (runner/cores.py, W631) costs per epoch: each
core DMAs its half of a shared [rows, cols] float32 tensor in [128, cols] row tiles (and,
second case, in [rows, 128] column tiles), the tracking compares every access with the
other core's. Old: each access's elements listed as int64 (np.unique) and compared with
np.intersect1d against each of the other core's lists. New: runs (runner/footprint.py)
and per-core unions. Prints seconds and the bytes the kept footprints hold.

    python benchmarks/bench_race_tracking.py [--rows 2048] [--cols 1024]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nkirun.runner import footprint  # noqa: E402
from nkirun.runner.cores import _Touched  # noqa: E402
from nkirun.views.access import _byte_offsets  # noqa: E402


def accesses(rows: int, cols: int, by: str):
    """(core, byte offset, shape, byte strides) per DMA, cores interleaved."""
    out = []
    if by == "rows":
        for t in range(rows // 128):
            out.append((t % 2, t * 128 * cols * 4, (128, cols), (cols * 4, 4)))
    else:
        for t in range(cols // 128):
            out.append((t % 2, t * 128 * 4, (rows, 128), (cols * 4, 4)))
    return out


def old(acc) -> tuple[float, int, bool]:
    start, kept, race = time.perf_counter(), [[], []], False
    for core, base, shape, strides in acc:
        elems = np.unique(_byte_offsets(base, shape, strides) // 4)
        race |= any(np.intersect1d(elems, o).size for o in kept[1 - core])
        kept[core].append(elems)
    return time.perf_counter() - start, sum(e.nbytes for k in kept for e in k), race


def new(acc) -> tuple[float, int, bool]:
    start, kept, race = time.perf_counter(), (_Touched(), _Touched()), False
    for core, base, shape, strides in acc:
        runs = footprint.lattice(base, shape, strides, 4, 4)
        race |= kept[1 - core].meets(runs, True)
        kept[core].add(None, True, runs)
    size = sum(r.nbytes for t in kept for _, _, (lo, hi) in t.accesses for r in (lo, hi))
    return time.perf_counter() - start, size, race


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=2048)
    p.add_argument("--cols", type=int, default=1024)
    a = p.parse_args()
    for by in ("rows", "columns"):
        acc = accesses(a.rows, a.cols, by)
        (t0, b0, r0), (t1, b1, r1) = old(acc), new(acc)
        assert r0 == r1 is False
        print(f"{len(acc)} [{'128, cols' if by == 'rows' else 'rows, 128'}] tiles of a "
              f"[{a.rows}, {a.cols}] fp32 tensor: element lists {t0:.2f} s, {b0 / 2**20:,.0f} MB;"
              f" runs {t1:.3f} s, {b1 / 2**20:,.2f} MB")


if __name__ == "__main__":
    main()
