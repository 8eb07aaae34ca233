"""How fast is the Python kernel front end (issue 14)?

A kernel looping over small tiles: each iteration allocates a (128, 64) SBUF tile, loads a
column block of x into it and adds it into an accumulator (2 instructions), N/2 times.
Times (CPU seconds, best of the repeats):

  kernel python   the kernel's own Python with no-op `nki` stand-ins (the floor: the loop,
                  the slicing arithmetic, the calls)
  trace           nkirun tracing: the kernel with nkirun's `nki`, into the IR
  check           validating the traced program
  run             executing it (tiles freed after their last use)
  numpy loop      a hand-written NumPy loop doing the same additions

Target (issue 14): trace + check <= 15 us per instruction beyond the kernel's own Python.

Memory (target: peak RSS <= the kernel's peak live bytes + 150 MB): `fresh_rss_mb` is the
peak RSS of a fresh process that imports nkirun and does ONE trace and check (a
subprocess, `--rss-child`), beside the live bytes (x, acc, out and one tile); the
whole-process peak of this run (several traces, a run) is `peak_rss_mb`. Each repeat drops
the previous result before the next starts, so no two traces are alive at once.

    python benchmarks/bench_kernel.py [-n 100000] [--repeat 3] [--json PATH]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

KERNEL = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def stream(x, reps):
    P, F = 128, 64
    out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=acc, value=0.0)
    for i in range(reps):
        b = i % 8
        t = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[:, b * F:(b + 1) * F])
        nisa.tensor_tensor(dst=acc, data1=acc, data2=t, op=nl.add)
    nisa.dma_copy(dst=out, src=acc)
    return out
'''


class _Null:
    """A stand-in tensor: indexing and attributes give more stand-ins."""

    def __init__(self, *a, **k):
        pass

    def __getitem__(self, key):
        return self

    def __getattr__(self, name):
        return self


def null_nki():
    """`nki` modules whose calls do nothing: the kernel's own Python cost."""
    nki = types.ModuleType("nki")
    nisa, nl = types.ModuleType("nki.isa"), types.ModuleType("nki.language")
    nki.isa, nki.language, nki.jit = nisa, nl, lambda f: f
    noop = lambda *a, **k: None  # noqa: E731
    for op in ("memset", "dma_copy", "tensor_tensor"):
        setattr(nisa, op, noop)
    nl.ndarray, nl.float32, nl.sbuf, nl.shared_hbm, nl.add = _Null, "f", "s", "h", "add"
    return {"nki": nki, "nki.isa": nisa, "nki.language": nl}


def best(fn, repeat):
    times, result = [], None
    for _ in range(repeat):
        result = None  # (the previous result goes before the next run starts)
        t0 = time.process_time()
        result = fn()
        times.append(time.process_time() - t0)
    return min(times), result


def _kernel_file() -> str:
    """KERNEL written as stream_kernel.py in a new folder on sys.path (not imported yet)."""
    folder = tempfile.mkdtemp()
    with open(os.path.join(folder, "stream_kernel.py"), "w") as f:
        f.write(KERNEL)
    sys.path.insert(0, folder)
    return os.path.join(folder, "stream_kernel.py")


def rss_child(reps: int) -> int:
    """One trace and check in this (fresh) process: its peak RSS, as JSON on stdout."""
    import numpy as np
    import nkirun  # noqa: F401 - installs the nki fallback finder
    from nkirun.api_kernel import check_traced, trace_call
    _kernel_file()
    import stream_kernel as kernel
    x = np.random.default_rng(0).random((128, 512), dtype=np.float32)
    imports = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    traced = trace_call(kernel.stream, (x, reps))
    _, diags = check_traced(traced)
    assert not [d for d in diags if d.is_error], diags[:3]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"imports_rss_mb": imports, "fresh_rss_mb": peak}))
    return 0


def fresh_rss(reps: int) -> dict:
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--rss-child",
                          str(reps)], check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=100_000, help="instructions (about)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", default=None)
    ap.add_argument("--rss-child", type=int, default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.rss_child is not None:
        return rss_child(a.rss_child)
    reps = (a.n - 2) // 2
    memory = fresh_rss(reps)  # (first: a fresh process, before this one grows)
    import numpy as np
    import nkirun  # noqa: F401 - installs the nki fallback finder
    from nkirun.api_kernel import check_traced, run_traced, trace_call
    x = np.random.default_rng(0).random((128, 512), dtype=np.float32)
    path = _kernel_file()

    saved = {k: sys.modules.pop(k) for k in list(sys.modules) if k.split(".")[0] == "nki"}
    sys.modules.update(null_nki())
    ns: dict = {}
    exec(compile(KERNEL, path, "exec"), ns)
    baseline, _ = best(lambda: ns["stream"](_Null(), reps), a.repeat)
    for k in [k for k in sys.modules if k.split(".")[0] == "nki"]:
        del sys.modules[k]
    sys.modules.update(saved)

    import stream_kernel
    t_trace, traced = best(lambda: trace_call(stream_kernel.stream, (x, reps)), a.repeat)
    t_check, (bound, diags) = best(lambda: check_traced(traced), a.repeat)
    assert not [d for d in diags if d.is_error], diags[:3]
    t_run, outs = best(lambda: run_traced(traced, bound), 1)

    def numpy_loop():
        acc = np.zeros((128, 64), np.float32)
        for i in range(reps):
            b = i % 8
            t = x[:, b * 64:(b + 1) * 64].copy()
            acc = acc + t
        return acc
    t_np, ref = best(numpy_loop, a.repeat)
    assert np.array_equal(outs[0], ref)
    n = len(traced.program.instructions)
    extra_us = (t_trace + t_check - baseline) / n * 1e6
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    live_mb = (x.nbytes + 3 * 128 * 64 * 4) / 2**20  # x, acc, out and one tile at a time
    result = {"instructions": n, "kernel_python_s": baseline, "trace_s": t_trace,
              "check_s": t_check, "run_s": t_run, "numpy_loop_s": t_np,
              "us_per_instruction_beyond_kernel_python": extra_us,
              "run_over_numpy": t_run / t_np, **memory, "peak_live_mb": live_mb,
              "fresh_rss_target_mb": live_mb + 150, "peak_rss_mb": rss_mb}
    for k, v in result.items():
        print(f"{k:42s} {v:,.3f}" if isinstance(v, float) else f"{k:42s} {v:,}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
