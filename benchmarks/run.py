"""nkirun's benchmark suite (issue 7). A script a person runs; never part of the tests.

    python benchmarks/run.py            # everything: prints tables, writes benchmarks/results/latest.json
    python benchmarks/run.py --quick    # fewer repeats, smaller scale programs
    python benchmarks/run.py --only instructions,startup,scale,memory

Sections:
  instructions  each seed instruction at 128x16384 (float32, and bfloat16 where allowed):
                nkirun's execute() time vs hand-written NumPy (benchmarks/handwritten.py),
                median of repeats in the same process; nc_match_replace8 also vs the page's loop
  startup       `nkirun check` of a small program vs `python -c "import numpy"` (whole process)
  scale         generated programs of 1k/10k/100k instructions: parse, check and cost times
  memory        peak RSS of `nkirun run` on a program whose tensors total ~200 MB
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import ml_dtypes
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import companion_cases  # noqa: E402
import handwritten as hw  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
P, N = 128, 16384


def median_time(fn, repeats: int, clock=time.perf_counter) -> float:
    fn()  # warm up
    times = []
    for _ in range(repeats):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return statistics.median(times)


def paired_cpu_times(fa, fb, repeats: int) -> tuple[float, float]:
    """Median CPU times of fa and fb, run alternately so that both see the same machine load.

    CPU time (time.process_time), not wall time: the machine may be shared, and NumPy's
    element-wise work is single-threaded, so CPU time is the work done, without the time
    spent waiting for a core. Memory-bandwidth contention still shows; repeat runs.
    """
    fa(), fb()  # warm up (first-touch page faults, caches)
    ta, tb = [], []
    for _ in range(repeats):
        t0 = time.process_time()
        fa()
        ta.append(time.process_time() - t0)
        t0 = time.process_time()
        fb()
        tb.append(time.process_time() - t0)
    return statistics.median(ta), statistics.median(tb)


def prepare(program_yaml: str, inputs: dict):
    """Bind a one-instruction program and allocate its machine with `inputs`."""
    from nkirun.api import check_program
    from nkirun.runner.files import initial_buffers
    from nkirun.runner.machine import Machine
    d = tempfile.mkdtemp(prefix="nkirun-bench-")
    path = os.path.join(d, "p.yaml")
    with open(path, "w") as f:
        f.write(program_yaml)
    c = check_program(path)
    errors = [x.one_line() for x in c.diagnostics if x.is_error]
    if errors:
        raise RuntimeError("\n".join(errors))
    buffers, written = initial_buffers(c.program, inputs)
    return c.bound, Machine(buffers, written)


def _tensors(decls: dict) -> str:
    lines = ["version: 1", "tensors:"]
    for name, (shape, dtype) in decls.items():
        lines.append(f"  {name}: {{buffer: sbuf, shape: {list(shape)}, dtype: {dtype}, fill: 0}}")
    return "\n".join(lines) + "\ninstructions:\n"


def _case_range_select(dtype, rng):
    x = rng.standard_normal((P, N)).astype(np.float32).astype(dtype)
    lo = rng.integers(0, N // 2, (P, 1)).astype(np.float32)
    hi = lo + rng.integers(0, N // 2, (P, 1)).astype(np.float32)
    name = np.dtype(dtype).name
    prog = _tensors({"x": ((P, N), name), "lo": ((P, 1), "float32"), "hi": ((P, 1), "float32"),
                     "r": ((P, N), name), "m": ((P, 1), "float32")}) + \
        "  - range_select: {dst: r, on_true_tile: x, comp_op0: greater_equal, comp_op1: less, " \
        "bound0: lo, bound1: hi, reduce_cmd: reset_reduce, reduce_res: m}\n"
    return prog, {"x": x, "lo": lo, "hi": hi}, lambda: hw.range_select(x, lo, hi)


def _select_reduce_case(x, pred):
    name = x.dtype.name
    prog = _tensors({"x": ((P, N), name), "pr": ((P, N), "uint8"), "r": ((P, N), name),
                     "m": ((P, 1), "float32")}) + \
        "  - select_reduce: {dst: r, predicate: pr, on_true: x, on_false: fp32.min, " \
        "reduce_cmd: reset_reduce, reduce_res: m}\n"
    return prog, {"x": x, "pr": pred}, lambda: hw.select_reduce(pred, x, hw.FP32_MIN)


def _case_select_reduce(dtype, rng):
    x = rng.standard_normal((P, N)).astype(np.float32).astype(dtype)
    return _select_reduce_case(x, (rng.random((P, N)) < 0.5).astype(np.uint8))


def _case_select_reduce_runs(dtype, rng):
    """select_reduce with a predicate that holds in long runs (a causal-style band), where
    NumPy's branching select is at its best."""
    x = rng.standard_normal((P, N)).astype(np.float32).astype(dtype)
    j, start = np.arange(N)[None, :], rng.integers(0, N // 2, (P, 1))
    return _select_reduce_case(x, ((j >= start) & (j < start + N // 3)).astype(np.uint8))


def _case_affine_select(dtype, rng):
    x = rng.standard_normal((P, N)).astype(np.float32).astype(dtype)
    name = np.dtype(dtype).name
    prog = _tensors({"x": ((P, N), name), "r": ((P, N), name)}) + \
        f"  - affine_select: {{dst: r, on_true_tile: x, pattern: [[-1, {N}]], offset: 0, " \
        "channel_multiplier: 128, cmp_op: greater_equal, on_false_value: fp32.min}\n"
    return prog, {"x": x}, lambda: hw.affine_select(x, 0, 128, -1)


def _case_scan(dtype, rng):
    a = rng.uniform(0.5, 1.0, (P, N)).astype(np.float32).astype(dtype)
    b = rng.standard_normal((P, N)).astype(np.float32).astype(dtype)
    name = np.dtype(dtype).name
    prog = _tensors({"a": ((P, N), name), "b": ((P, N), name), "c": ((P, N), name)}) + \
        "  - tensor_tensor_scan: {dst: c, data0: a, data1: b, initial: 0.0, op0: multiply, " \
        "op1: add}\n"
    return prog, {"a": a, "b": b}, lambda: hw.tensor_tensor_scan(a, b, 0.0)


def _case_match_replace(dtype, rng):
    data = rng.standard_normal((P, N)).astype(np.float32).astype(dtype)
    top = -np.sort(-data.astype(np.float32), axis=1)[:, :8]
    name = np.dtype(dtype).name
    prog = _tensors({"d": ((P, N), name), "v": ((P, 8), "float32"), "o": ((P, N), name),
                     "i": ((P, 8), "uint32")}) + \
        "  - nc_match_replace8: {dst: o, data: d, vals: v, imm: -inf, dst_idx: i}\n"
    return prog, {"d": data, "v": top}, lambda: hw.nc_match_replace8(data, top, -np.inf)


# (row label, instruction, case): every case in float32 and bfloat16
CASES = [("range_select", "range_select", _case_range_select),
         ("select_reduce", "select_reduce", _case_select_reduce),
         ("select_reduce (runs)", "select_reduce", _case_select_reduce_runs),
         ("affine_select", "affine_select", _case_affine_select),
         ("tensor_tensor_scan", "tensor_tensor_scan", _case_scan),
         ("nc_match_replace8", "nc_match_replace8", _case_match_replace)] \
    + companion_cases.CASES


def _same(a, b) -> bool:
    """Bit-exact equality (NaN included) of two arrays of one dtype."""
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and \
        bool((a.view(np.uint8) == b.view(np.uint8)).all())


def _verify(op: str, m, baseline) -> None:
    """nkirun's results must be the hand-written baseline's, bit for bit (the reductions
    too), or the comparison would not be fair."""
    want = baseline()
    got = {"range_select": ("r", "m"), "select_reduce": ("r", "m"), "affine_select": ("r",),
           "tensor_tensor_scan": ("c",), "nc_match_replace8": ("o", "i"),
           **companion_cases.OUTPUTS}[op]
    want = want if isinstance(want, tuple) else (want,)
    for name, w in zip(got, want):
        g = m.buffers[name]
        if not _same(g, np.asarray(w).astype(g.dtype, copy=False)):
            raise AssertionError(f"{op}: nkirun's `{name}` differs from the hand-written one")


def bench_instructions(repeats: int) -> list[dict]:
    from nkirun.isa import REGISTRY
    rng = np.random.default_rng(0)
    rows = []
    for label, op, make in CASES:
        if op not in REGISTRY:
            rows.append({"op": label, "status": "not registered"})
            continue
        for dtype in (np.float32, ml_dtypes.bfloat16):
            prog, inputs, baseline = make(dtype, rng)
            bound, m = prepare(prog, inputs)
            b = bound[0]
            with np.errstate(all="ignore"):
                b.spec.execute(b, m)
                _verify(op, m, baseline)
                t_nk, t_np = paired_cpu_times(lambda: b.spec.execute(b, m), baseline, repeats)
            shape = list(max((a.shape for a in inputs.values()), key=np.prod))
            rows.append({"op": label, "dtype": np.dtype(dtype).name, "shape": shape,
                         "nkirun_ms": t_nk * 1e3, "numpy_ms": t_np * 1e3,
                         "ratio": t_nk / t_np})
    if "tensor_tensor_scan" in REGISTRY:
        # for the record: against the best hand-written loop too (transposed, out=)
        prog, inputs, _ = _case_scan(np.float32, rng)
        bound, m = prepare(prog, inputs)
        b = bound[0]
        best = lambda: hw.tensor_tensor_scan_transposed(inputs["a"], inputs["b"], 0.0)  # noqa
        with np.errstate(all="ignore"):
            t_nk, t_np = paired_cpu_times(lambda: b.spec.execute(b, m), best, repeats)
        rows.append({"op": "tensor_tensor_scan vs transposed loop", "dtype": "float32",
                     "shape": [P, N], "nkirun_ms": t_nk * 1e3, "numpy_ms": t_np * 1e3,
                     "ratio": t_nk / t_np})
    if "nc_match_replace8" in REGISTRY:
        prog, inputs, _ = _case_match_replace(np.float32, rng)
        bound, m = prepare(prog, inputs)
        b = bound[0]
        loop = lambda: hw.nc_match_replace8_page_loop(inputs["d"], inputs["v"], -np.inf)  # noqa
        t_nk, t_loop = paired_cpu_times(lambda: b.spec.execute(b, m), loop,
                                        max(3, repeats // 2))
        rows.append({"op": "nc_match_replace8 vs page loop", "dtype": "float32", "shape": [P, N],
                     "nkirun_ms": t_nk * 1e3, "page_loop_ms": t_loop * 1e3,
                     "speedup": t_loop / t_nk})
        # issue 15's standing target: <= 3x one np.copyto of the tile (its physical floor:
        # the instruction must read and write the whole tile)
        floor = np.empty_like(inputs["d"])
        t_nk, t_copy = paired_cpu_times(lambda: b.spec.execute(b, m),
                                        lambda: np.copyto(floor, inputs["d"]), repeats)
        rows.append({"op": "nc_match_replace8 vs np.copyto", "dtype": "float32",
                     "shape": [P, N], "nkirun_ms": t_nk * 1e3, "numpy_ms": t_copy * 1e3,
                     "ratio": t_nk / t_copy})
    import cases_movement  # data movement, gathers, top-k (issue 15)
    rows += cases_movement.bench(repeats, prepare, paired_cpu_times)
    return rows


def _child_env() -> dict:
    """The environment of a normal installation: byte-code caching on (this sandbox may set
    PYTHONDONTWRITEBYTECODE, which would recompile nkirun at every start), kept out of the
    source tree."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), "nkirun-bench-pycache")
    # `import numpy` starts OpenBLAS worker threads that spin on idle cores while the process
    # lives, so a process's CPU time (the ratio's measure) would grow with its wall time and
    # the machine's idle cores, not with the work done: one BLAS thread (nothing here uses
    # BLAS) makes the ratio stable. (With them, e.g. 1.33x-1.66x on the same code.)
    env["OPENBLAS_NUM_THREADS"] = "1"
    return env


def _run_child(cmd: list[str], env: dict) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child: user + system)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
                   env=env)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def bench_startup(repeats: int) -> dict:
    """Whole-process times, the two commands alternating; the ratio is taken on CPU time
    (wall time is shown too, but on a shared machine it mostly measures the queue)."""
    prog = os.path.join(ROOT, "programs", "rowmax_in_window.yaml")
    cmds = {"numpy": [sys.executable, "-c", "import numpy"],
            "check": [sys.executable, "-m", "nkirun", "check", prog]}
    env = _child_env()
    # for the record: nkirun compiled at every start, as this sandbox runs it
    # (PYTHONDONTWRITEBYTECODE=1 and no __pycache__ in the source tree)
    uncached = {**env, "PYTHONDONTWRITEBYTECODE": "1"}
    uncached.pop("PYTHONPYCACHEPREFIX")
    cmds["check_uncached"] = cmds["check"]
    envs = {"numpy": env, "check": env, "check_uncached": uncached}
    for k, cmd in cmds.items():
        _run_child(cmd, envs[k])  # warm up (and fill the byte-code cache)
    runs = {k: [] for k in cmds}
    for _ in range(repeats):
        for k, cmd in cmds.items():
            runs[k].append(_run_child(cmd, envs[k]))
    med = {k: [statistics.median(r[i] for r in v) for i in (0, 1)] for k, v in runs.items()}
    return {"import_numpy_cpu_ms": med["numpy"][1] * 1e3,
            "nkirun_check_cpu_ms": med["check"][1] * 1e3,
            "ratio_cpu": med["check"][1] / med["numpy"][1],
            "import_numpy_wall_ms": med["numpy"][0] * 1e3,
            "nkirun_check_wall_ms": med["check"][0] * 1e3,
            "ratio_wall": med["check"][0] / med["numpy"][0],
            "uncached_check_cpu_ms": med["check_uncached"][1] * 1e3,
            "uncached_ratio_cpu": med["check_uncached"][1] / med["numpy"][1]}


def scale_program(n: int) -> str:
    """A program of `n` instructions: loads, range_selects and stores over a few tiles."""
    lines = ["version: 1", "tensors:",
             "  x: {buffer: hbm, shape: [128, 512], dtype: float32, fill: 1.0}",
             "  y: {buffer: hbm, shape: [128, 512], dtype: float32, output: true}",
             "  lo: {buffer: sbuf, shape: [128, 1], dtype: float32, fill: 0}",
             "  hi: {buffer: sbuf, shape: [128, 1], dtype: float32, fill: 256}",
             "  t0: {buffer: sbuf, shape: [128, 512], dtype: float32}",
             "  t1: {buffer: sbuf, shape: [128, 512], dtype: float32}",
             "instructions:"]
    for i in range(n):
        k = i % 4
        if k == 0:
            lines.append("  - load: {dst: t0, src: x}")
        elif k == 1:
            lines.append(f"  - range_select: {{dst: 't1[:, 0:256]', on_true_tile: 't0[:, 0:256]', "
                         f"comp_op0: greater_equal, comp_op1: less, bound0: lo, bound1: hi, "
                         f"range_start: {i % 1000}}}")
        elif k == 2:
            lines.append(f"  - range_select: {{dst: 't1[:, 256:512]', on_true_tile: "
                         f"'t0[:, 256:512]', comp_op0: greater_equal, comp_op1: less, "
                         f"bound0: lo, bound1: hi}}")
        else:
            lines.append("  - store: {dst: y, src: t1}")
    return "\n".join(lines) + "\n"


def bench_scale(sizes: list[int], repeats: int = 3) -> list[dict]:
    """CPU seconds to parse (once), and to check and cost (median of `repeats`), with the
    garbage collector paused as api.check_program does."""
    from nkirun.schedule import schedule
    from nkirun.gc_policy import paused_gc
    from nkirun.source.yaml_front import parse_yaml
    from nkirun.checker.passes import validate
    clock = time.process_time
    rows = []
    for n in sizes:
        text = scale_program(n)
        with paused_gc():
            t0 = clock()
            program, _ = parse_yaml(text, "scale.yaml", ".")
            t_parse = clock() - t0
        checks, costs = [], []
        for _ in range(repeats):
            with paused_gc():
                t0 = clock()
                bound, diags = validate(program)
                t1 = clock()
                schedule(program, bound)
                t2 = clock()
            checks.append(t1 - t0)
            costs.append(t2 - t1)
            del bound
        assert not [d for d in diags if d.is_error], diags[:3]
        check, cost = statistics.median(checks), statistics.median(costs)
        rows.append({"instructions": n, "parse_yaml_s": t_parse, "check_s": check,
                     "cost_s": cost, "check_plus_cost_s": check + cost})
    for a, b in zip(rows, rows[1:]):
        b["growth_vs_previous"] = b["check_plus_cost_s"] / max(a["check_plus_cost_s"], 1e-9)
    return rows


def bench_memory() -> dict:
    """Peak RSS of `nkirun run` on ~200 MB of declared tensors, in a child process."""
    d = tempfile.mkdtemp(prefix="nkirun-mem-")
    rows, cols = 128, 49152  # 24 MiB per float32 tile
    x = np.random.default_rng(1).standard_normal((rows * 4, cols)).astype(np.float32)
    np.save(os.path.join(d, "x.npy"), x)  # 96 MiB input in HBM
    prog = f"""version: 1
tensors:
  x: {{buffer: hbm, shape: [{rows * 4}, {cols}], dtype: float32, file: x.npy}}
  y: {{buffer: hbm, shape: [{rows * 4}, {cols}], dtype: float32, output: true}}
  t: {{buffer: sbuf, shape: [128, {cols}], dtype: float32}}
instructions:
""" + "".join(f"  - load: {{dst: t, src: 'x[{k * 128}:{(k + 1) * 128}, :]'}}\n"
              f"  - store: {{dst: 'y[{k * 128}:{(k + 1) * 128}, :]', src: t}}\n" for k in range(4))
    path = os.path.join(d, "mem.yaml")
    with open(path, "w") as f:
        f.write(prog)
    declared = 2 * x.nbytes + 128 * cols * 4
    hwm = ("def _hwm():\n return [int(l.split()[1]) for l in open('/proc/self/status') "
           "if l.startswith('VmHWM')][0]\n")
    code = (hwm + "import sys; from nkirun.cli import main; sys.argv=['nkirun','run',"
            f"{path!r},'--out',{os.path.join(d, 'out')!r},'--max-hbm-bytes','{10**9}']\n"
            "try:\n main()\nexcept SystemExit as e:\n rc=e.code\n"
            "print(_hwm())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    # VmHWM, not ru_maxrss: the latter can carry over the parent's peak across fork.
    base = subprocess.run([sys.executable, "-c", hwm + "import nkirun.cli, nkirun.api; "
                           "print(_hwm())"],
                          capture_output=True, text=True)
    peak = int(out.stdout.strip().splitlines()[-1]) * 1024
    base_rss = int(base.stdout.strip()) * 1024
    return {"declared_mb": declared / 2**20, "peak_rss_mb": peak / 2**20,
            "import_rss_mb": base_rss / 2**20,
            "overhead_over_declared_mb": (peak - declared) / 2**20}


def _print_table(title: str, rows: list[dict]) -> None:
    print(f"\n== {title}")
    if not rows:
        return
    keys = list(dict.fromkeys(k for r in rows for k in r))
    fmt = lambda v: f"{v:.3f}" if isinstance(v, float) else str(v)  # noqa: E731
    widths = {k: max(len(k), *(len(fmt(r.get(k, ""))) for r in rows)) for k in keys}
    print("  ".join(k.ljust(widths[k]) for k in keys))
    for r in rows:
        print("  ".join(fmt(r.get(k, "")).ljust(widths[k]) for k in keys))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="instructions,startup,scale,memory")
    ap.add_argument("--json", default=os.path.join(HERE, "results", "latest.json"))
    args = ap.parse_args()
    only = set(args.only.split(","))
    repeats = 5 if args.quick else 21
    result = {"load_average_at_start": os.getloadavg(), "cpus": os.cpu_count()}
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs "
          "(other processes share the machine: compare ratios, re-run to confirm)")
    if "instructions" in only:
        result["instructions"] = bench_instructions(repeats)
        _print_table("instructions (median CPU ms; ratio = nkirun / hand-written NumPy)",
                     result["instructions"])
    if "startup" in only:
        result["startup"] = bench_startup(7 if args.quick else 31)
        _print_table("start-up (whole process, median ms; ratio on CPU time)",
                     [result["startup"]])
    if "scale" in only:
        sizes = [1000, 10000] if args.quick else [1000, 10000, 100000]
        result["scale"] = bench_scale(sizes)
        _print_table("scale (CPU seconds; YAML parse shown apart from check + cost)",
                     result["scale"])
    if "memory" in only:
        result["memory"] = bench_memory()
        _print_table("memory (MiB)", [result["memory"]])
    result["load_average_at_end"] = os.getloadavg()
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(result, f, indent=2)
    print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
