"""How many variants per hour per core does `nkirun sweep` screen (issue 29)?

Cost only (`--verify none`), on the public nki-samples fully optimised matmul
(`nki_matmul_fully_optimized_`, bf16, lhsT [K=4096, M=2048], rhs [K=4096, N=4096]),
over its three TILES_IN_BLOCK parameters. The kernel is read at run time from the
nki-samples repository at a pinned commit (benchmarks/public_kernels.py: a local git
mirror, `git show COMMIT:PATH`) into a temporary folder; nothing is copied into nkirun.

    python benchmarks/bench_sweep.py [--jobs 1] [--backend local] [--space small|full]
    python benchmarks/bench_sweep.py --space thousand --jobs 2 --backend ray   # (or dask)

`--space thousand` is the backend comparison instead: 1,000 variants of a small kernel
written here (TILE 4 values x REPS 1..250, every program different, ~0.01-0.1 s each), to
set ray's and dask's time beside the local pool's (issue 29: <= 1.15x, cluster start-up
excluded).

Reported: the variants and their statuses; wall seconds (pool start-up excluded: the
forkserver is started before the clock); variants per hour per core = variants / wall /
jobs * 3600; and the mean worker seconds per variant (the `seconds` field: trace, check
and cost inside the worker) for `ok` variants; and the worker's CPU seconds per variant
(`cpu_seconds`), whose inverse is the rate of a core that does nothing else (on a shared,
loaded machine the wall-clock rates fall below it). Target: >= 10,000 variants/hour/core.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from benchmarks.public_kernels import SAMPLES, SAMPLES_AT, extract  # noqa: E402

PATH = "src/nki_samples/tutorials/matrix_multiplication/matrix_multiplication_nki_kernels.py"
FUNCTION = "nki_matmul_fully_optimized_"
SMALL = """
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def stream(x, TILE=128, REPS=1):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    acc = nl.ndarray((128, TILE), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=acc, value=0.0)
    for r in range(REPS):
        j = r % (x.shape[1] // TILE)
        t = nl.ndarray((128, TILE), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[:, j * TILE:(j + 1) * TILE])
        nisa.tensor_tensor(dst=acc, data1=acc, data2=t, op=nl.add)
    nisa.dma_copy(dst=out[:, 0:TILE], src=acc)
    return out
"""
SPACES = {  # TILES_IN_BLOCK_M, _N, _K
    "small": ([4, 8, 16], [1, 2, 4], [4, 8]),
    "full": ([1, 2, 4, 8, 16], [1, 2, 4, 8], [1, 2, 4, 8, 16, 32]),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--backend", default="local")
    ap.add_argument("--space", choices=sorted(SPACES) + ["thousand"], default="full")
    ap.add_argument("--json", default=None, help="also write the numbers here")
    a = ap.parse_args()
    import nkirun
    from nkirun.sweep import make_backend
    from nkirun.sweep.driver import run_plan
    from nkirun.sweep.trust import status_counts
    with tempfile.TemporaryDirectory(prefix="bench-sweep-") as tmp:
        if a.space == "thousand":
            kernel = os.path.join(tmp, "stream.py")
            with open(kernel, "w", encoding="utf-8") as f:
                f.write(SMALL)
            spec, vary = f"{kernel}::stream", {"TILE": [64, 128, 256, 512],
                                               "REPS": list(range(1, 251))}
            values = {"x": nkirun.shape("float32", 128, 2048)}
        else:
            kernel = os.path.join(tmp, "matrix_multiplication_nki_kernels.py")
            with open(kernel, "w", encoding="utf-8") as f:
                f.write(extract(SAMPLES, SAMPLES_AT, PATH))
            m, n, k = SPACES[a.space]
            spec = f"{kernel}::{FUNCTION}"
            vary = {"TILES_IN_BLOCK_M": m, "TILES_IN_BLOCK_N": n, "TILES_IN_BLOCK_K": k}
            values = {"lhsT": nkirun.shape("bfloat16", 4096, 2048),
                      "rhs": nkirun.shape("bfloat16", 4096, 4096)}
        plan = nkirun.sweep.build_plan(spec, values, vary, target="trn2", verify="none")
        backend = make_backend(a.backend, a.jobs, timeout=600)
        if hasattr(backend, "_context"):
            backend._context()  # the forkserver up before the clock (start-up excluded)
        elif hasattr(backend, "_start"):
            backend._start()
        t0 = time.perf_counter()
        rows = run_plan(plan, backend, os.path.join(tmp, "out"), close=False)
        wall = time.perf_counter() - t0
        backend.close()  # (start-up and shut-down outside the clock)
    rows = list(rows.values())
    ok = [r["seconds"] for r in rows if r["status"] == "ok"]
    cpu = [r["cpu_seconds"] for r in rows if r["cpu_seconds"] is not None]
    name = "stream (written here)" if a.space == "thousand" else \
        f"nki-samples@{SAMPLES_AT}:{PATH}::{FUNCTION}"
    out = {"kernel": name, "space": a.space,
           "variants": len(rows), "statuses": status_counts(rows), "jobs": a.jobs,
           "backend": a.backend, "wall_s": round(wall, 2),
           "variants_per_hour_per_core": round(len(rows) / wall / a.jobs * 3600),
           "ok_mean_worker_s": round(statistics.mean(ok), 4) if ok else None,
           "ok_per_hour_per_core": round(3600 / statistics.mean(ok)) if ok else None,
           "cpu_s_per_variant": round(statistics.mean(cpu), 4) if cpu else None,
           "cpu_variants_per_hour_per_core": round(3600 / statistics.mean(cpu)) if cpu else None,
           "instructions_ok_median": statistics.median(
               r["instructions"] for r in rows if r["status"] == "ok") if ok else None}
    print(json.dumps(out, indent=2))
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
