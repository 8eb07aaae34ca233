"""Speed on public kernels at their authors' shapes (issue 28): one command, one table.

    python benchmarks/public_suite.py                  # the default set; table to stdout and
                                                       # benchmarks/results/public-suite.md
    python benchmarks/public_suite.py -k mamba         # kernels whose name contains "mamba"
    python benchmarks/public_suite.py --all            # every kernel of public_kernels.KERNELS
    python benchmarks/public_suite.py --out FILE.md

Each kernel is extracted from its repository at the pinned commit (benchmarks/
public_kernels.py; nothing of it is stored here; an nki-library kernel as its package tree,
traced through its driver there at a shape of the library's own tests, so it has no
whole-process `nkirun check` row) and measured in a FRESH Python process, so
that one kernel's caches and heap do not help or hurt the next and the peak RSS
(`ru_maxrss`) is that kernel's alone. Inside it, stage by stage, CPU time
(`time.process_time`, user + system of this process; the shared machine's load makes wall
time meaningless): trace (import + trace of the kernel), check, cost (the schedule), then
each output of `nkirun cost`: the text report (all views, as piped), `--format json` (all
views, and the summary level `--detail summary`), the Perfetto trace (`--trace-out`).
µs/instr divides by the traced instruction count. `run` rows time `nkirun.simulate` against a hand-written NumPy
equivalent (one thread: OPENBLAS_NUM_THREADS=1), in the same process, alternating.
The stage process holds everything at once, so its peak RSS is an upper bound; the whole
`nkirun check` and `nkirun cost --format json` processes are then run once each (CPU time
and peak RSS from os.wait4, that child alone).

Every child runs with byte code cached (as an installed nkirun has it: a PYTHONPYCACHEPREFIX
under the temp dir, every module compiled once before the first kernel), even where the
environment sets PYTHONDONTWRITEBYTECODE.

Start-up: whole processes, `python -m nkirun check` of a 6-instruction program against
`python -c "import numpy"`, children's CPU time (resource.RUSAGE_CHILDREN), median of 7.
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
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import public_kernels as pk  # noqa: E402

# kernels measured by default: every tutorial version and Mamba at the tutorial shapes,
# NKIBench baselines that trace in seconds, nki-library's attention, MLP and RMSNorm kernels
# at their tests' shapes (--all adds the rest)
DEFAULT = ("matmul tutorial v1", "matmul tutorial v2", "matmul tutorial v3",
           "matmul tutorial v4", "fused mamba v1 c4096 s512", "fused mamba v2 c4096 s512",
           "fused mamba v3 c4096 s512", "nkibench silu", "nkibench rmsnorm_matmul",
           "nkibench swiglu", "nkibench adamw", "nkibench bmm",
           "nkilib attention_cte float32 q4096 kv9216",
           "nkilib attention_cte bfloat16 q9216 kv9216 causal",
           "nkilib mlp_cte s4096 h8192 i448 rms_norm", "nkilib mlp_cte s2048 h8448 i1408 no_norm",
           "nkilib rmsnorm_quant s2048", "nkilib rmsnorm_quant s160")
# run against NumPy at a smaller shape (the authors' shape is 550 GFLOP: minutes of NumPy);
# the fourth field: the K block after which the kernel rounds its partial sum to bfloat16
# (v4's TILES_IN_BLOCK_K = 8 tiles of 128: it adds each block's float32 sum onto a bfloat16
# SBUF tile), which the NumPy line above skips; the table shows a second NumPy line that
# makes those roundings, beside (not instead of) the first (docs/performance.md, session 10)
RUNS = (("matmul tutorial v1", (2048, 1024), (2048, 2048), None),
        ("matmul tutorial v4", (2048, 2048), (2048, 4096), 1024))
STARTUP_PROGRAM = ROOT / "programs" / "rowmax_in_window.yaml"


def _cpu() -> float:
    return time.process_time()


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def worker(name: str) -> dict:
    """Runs in its own process: every stage of one kernel, CPU seconds each."""
    import gc
    import io

    k = pk.KERNELS[name]
    folder = Path(tempfile.mkdtemp(prefix="nkirun-suite-"))
    out: dict = {"name": name, "target": k.target, "source": f"{k.repo}@{k.commit}"}
    if k.package is not None:  # a library kernel: its package tree, traced by its driver
        pk.extract_tree(k.repo, k.commit, k.package, folder)
    else:
        path = pk.write_kernel(k, folder)
        opts = pk.shape_options(k)
        shapes = tuple(v for f, v in zip(opts[::2], opts[1::2]) if f == "--shape")
        args = tuple(v for f, v in zip(opts[::2], opts[1::2]) if f == "--arg")
    t = _cpu()
    from nkirun.pipeline import commands
    from nkirun.pipeline.front import KernelOptions, load
    from nkirun.schedule import render_report, to_json, write_trace
    from nkirun.schedule.report import parse_views
    out["import_s"] = _cpu() - t
    from nkirun.diagnostics import NkirunError
    t = _cpu()
    _warm_up(folder, k.target)
    if k.package is not None:  # the library's modules imported (and compiled: a fresh
        _quiet(pk.package_call, k, folder)  # folder) before its kernel is traced
    out["start_s"] = _cpu() - t
    t = _cpu()
    try:
        if k.package is not None:
            front = _quiet(pk.package_front, k, folder)
        else:
            front = load(f"{path}::{k.function}", None, k.target,
                         KernelOptions(shapes=shapes, args=args))
    except NkirunError as e:  # refused while tracing: named in the table, not timed
        out["refused"] = sorted({d.code for d in e.diagnostics})
        return out
    out["trace_s"] = _cpu() - t
    out["instructions"] = len(front.program.instructions)
    t = _cpu()
    c = commands.check(front)
    out["check_s"] = _cpu() - t
    errors = [d.code for d in c.diagnostics if d.severity == "error"]
    out["errors"] = sorted(set(errors))
    if errors:
        out["peak_mb"] = _peak_mb()
        return out
    gc.collect()
    t = _cpu()
    sched = commands.cost(c)
    out["cost_s"] = _cpu() - t
    views = parse_views(None)
    t = _cpu()
    render_report(sched, stream=io.StringIO(), width=100, color=False, views=views)
    out["text_s"] = _cpu() - t
    try:  # what `nkirun cost --format json [--detail summary]` writes with (issue 28)
        from nkirun.show.cost_json import write_cost_json
    except ImportError:  # (an older nkirun: the document, then the writer)
        try:
            from nkirun.show.json_out import write_json
        except ImportError:
            def write_json(obj, stream):
                stream.write(json.dumps(obj, indent=2) + "\n")

        def write_cost_json(s, views, stream, detail="full"):
            if detail == "summary":  # (no summary level yet: the summary view)
                views = parse_views("summary")
            write_json(to_json(s, views), stream)
    t = _cpu()
    write_cost_json(sched, views, io.StringIO())
    out["json_s"] = _cpu() - t
    t = _cpu()
    write_cost_json(sched, views, io.StringIO(), "summary")
    out["json_summary_s"] = _cpu() - t
    t = _cpu()
    write_trace(sched, str(folder / "trace.json"))
    out["perfetto_s"] = _cpu() - t
    out["peak_mb"] = _peak_mb()
    return out


# A kernel of two instructions taken through every stage before the timed ones, with every
# instruction module imported: what any trace, check, cost and output pays once per process
# (the front end's and the instructions' modules, ml_dtypes, the report's rich; and for an
# nki-library kernel the library's modules, compiled: it is extracted afresh) is the row's
# "start s", so that the µs per instruction are the kernel's own (the issue's "beyond
# start-up").
WARM_UP = '''import nki
import nki.language as nl


@nki.jit
def warm_up(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.load(a))
    return out
'''


def _warm_up(folder: Path, target: str) -> None:
    import io

    from nkirun.isa import REGISTRY
    from nkirun.pipeline import commands
    from nkirun.pipeline.front import KernelOptions, load
    from nkirun.schedule import render_report, write_trace
    from nkirun.schedule.report import parse_views
    from nkirun.show.cost_json import write_cost_json
    from nkirun.hw.dtypes import DTYPES
    for op in REGISTRY:
        REGISTRY[op]
    DTYPES["bfloat16"].np_type  # (ml_dtypes, imported on first use)
    path = folder / "warm_up.py"
    path.write_text(WARM_UP)
    front = load(f"{path}::warm_up", None, target,
                 KernelOptions(shapes=("a=float32[128,512]",)))
    sched = commands.cost(commands.check(front))
    views = parse_views(None)
    render_report(sched, stream=io.StringIO(), width=100, color=False, views=views)
    write_cost_json(sched, views, io.StringIO())
    write_cost_json(sched, views, io.StringIO(), "summary")
    write_trace(sched, str(folder / "warm_up.json"))


def _quiet(f, *args):
    """f(*args) with what it prints (nki-library logs its allocator) kept off stdout,
    where the worker's JSON row goes."""
    import contextlib
    with contextlib.redirect_stdout(sys.stderr):
        return f(*args)


def run_worker(name: str, inner: tuple, outer: tuple, k_block: int | None = None) -> dict:
    """`nkirun.simulate` of a matmul tutorial kernel against NumPy (one thread); with
    k_block, also against NumPy making the kernel's bfloat16 roundings of each K block."""
    import ml_dtypes
    import numpy as np

    import nkirun
    k = pk.KERNELS[name]
    kernel = pk.load(k.repo, k.path, k.function, k.commit)
    rng = np.random.default_rng(0)
    lhs_t = rng.standard_normal(inner).astype(ml_dtypes.bfloat16)
    rhs = rng.standard_normal(outer).astype(ml_dtypes.bfloat16)

    def numpy_matmul():  # the hand-written equivalent: fp32 accumulation, bf16 result
        return (lhs_t.astype(np.float32).T @ rhs.astype(np.float32)).astype(ml_dtypes.bfloat16)

    def numpy_rounded():  # ... with the partial sum rounded to bf16 after each K block
        a, b, acc = lhs_t.astype(np.float32), rhs.astype(np.float32), None
        for k in range(0, a.shape[0], k_block):
            part = a[k:k + k_block].T @ b[k:k + k_block]
            acc = (part if acc is None else acc.astype(np.float32) + part).astype(
                ml_dtypes.bfloat16)
        return acc

    sim = nkirun.simulate(kernel, target=k.target)
    got = sim(lhs_t, rhs)  # warm-up (traces once) and a check of the result
    want = numpy_matmul()
    # the kernels round partial sums to bfloat16 where the tutorial does: not bit-equal to
    # one fp32 sum, so the table shows the largest difference relative to the largest value
    diff = np.abs(got.astype(np.float32) - want.astype(np.float32)).max()
    close = float(diff / np.abs(want.astype(np.float32)).max())
    ours, base, rounded = [], [], []
    for _ in range(3):
        t = _cpu()
        sim(lhs_t, rhs)
        ours.append(_cpu() - t)
        t = _cpu()
        numpy_matmul()
        base.append(_cpu() - t)
        if k_block:
            t = _cpu()
            numpy_rounded()
            rounded.append(_cpu() - t)
    row = {"name": f"{name} run {inner}x{outer}", "run_s": statistics.median(ours),
           "numpy_s": statistics.median(base), "matches": close, "peak_mb": _peak_mb(),
           "live_mb": (lhs_t.nbytes + rhs.nbytes + want.nbytes) / 2**20}
    if k_block:
        rw = numpy_rounded().astype(np.float32)
        row["numpy_rounded_s"] = statistics.median(rounded)
        row["matches_rounded"] = float(np.abs(got.astype(np.float32) - rw).max()
                                       / np.abs(rw).max())
    return row


def _env() -> dict:
    """The children's environment: this tree's nkirun, one BLAS thread, and byte code
    cached (as an installed package has it; PYTHONDONTWRITEBYTECODE would otherwise make
    every fresh process compile each module it imports, inside the stage that first
    imports it: 0.03-0.1 s, several µs per instruction of a 14,000-instruction kernel)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), OPENBLAS_NUM_THREADS="1",
               PYTHONPYCACHEPREFIX=os.path.join(tempfile.gettempdir(), "nkirun-suite-pyc"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _compile_all() -> None:
    """Byte code of every nkirun module in the cache before the first kernel is timed."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "nkirun")],
                   capture_output=True, env=_env(), check=False)


def _child(argv: list[str], timeout: float) -> dict:
    env = _env()
    p = subprocess.run([sys.executable, __file__, *argv], capture_output=True, text=True,
                       timeout=timeout, env=env)
    if p.returncode != 0:
        return {"name": argv[-1], "failed": (p.stderr.strip() or p.stdout.strip())[-300:]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def _command(cmd: list[str], env: dict) -> dict:
    """One whole process: its CPU seconds (user + system) and peak RSS (os.wait4's rusage,
    this child alone), and its exit status."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return {"cpu_s": ru.ru_utime + ru.ru_stime, "peak_mb": ru.ru_maxrss / 1024,
            "exit": p.returncode}


def commands(name: str, folder: Path) -> dict:
    """`nkirun check` and `nkirun cost --format json` of the kernel as whole processes."""
    k = pk.KERNELS[name]
    path = pk.write_kernel(k, folder)
    env = _env()
    base = [sys.executable, "-m", "nkirun"]
    spec = [f"{path}::{k.function}", "--target", k.target, *pk.shape_options(k)]
    return {"check": _command(base + ["check", *spec], env),
            "cost_json": _command(base + ["cost", *spec, "--format", "json"], env)}


def _children_cpu(cmd: list[str], env: dict) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, capture_output=True, env=env, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def startup(repeats: int = 7) -> dict:
    env = _env()
    check = [sys.executable, "-m", "nkirun", "check", str(STARTUP_PROGRAM)]
    numpy = [sys.executable, "-c", "import numpy"]
    _children_cpu(check, env)  # byte code cached, as installed
    a, b = [], []
    for _ in range(repeats):
        a.append(_children_cpu(check, env))
        b.append(_children_cpu(numpy, env))
    return {"check_s": statistics.median(a), "numpy_s": statistics.median(b),
            "ratio": statistics.median(x / y for x, y in zip(a, b))}


def _us(row, key):
    n = row.get("instructions") or 0
    return f"{row[key] / n * 1e6:.1f}" if key in row and n else "-"


def _s(row, key):
    return f"{row[key]:.2f}" if key in row else "-"


def table(rows: list[dict], runs: list[dict], start: dict | None) -> str:
    head = ("| kernel | instr | start s | trace+check µs/instr | cost µs/instr | text s | json s "
            "| json/text | json/text (command) | json summary s | perfetto s | check s "
            "| peak RSS MB |")
    lines = [head, "|" + "|".join(["---"] * (head.count("|") - 1)) + "|"]
    medians: dict = {"tc": [], "cost": [], "ratio": [], "command": []}
    for r in rows:
        if "failed" in r:
            lines.append(f"| {r['name']} | failed: {r['failed'][:80]} |")
            continue
        if "refused" in r:
            lines.append(f"| {r['name']} | refused while tracing: {', '.join(r['refused'])} |")
            continue
        n = r["instructions"]
        tc = (r["trace_s"] + r["check_s"]) / n * 1e6
        medians["tc"].append(tc)
        if "cost_s" in r:
            medians["cost"].append(r["cost_s"] / n * 1e6)
            ratio = r["json_s"] / r["text_s"]
            medians["ratio"].append(ratio)
            # the whole `nkirun cost` command: import, trace, check, cost, then the output
            base = r["import_s"] + r.get("start_s", 0) + r["trace_s"] + r["check_s"] + \
                r["cost_s"]
            command = (base + r["json_s"]) / (base + r["text_s"])
            medians["command"].append(command)
            lines.append(f"| {r['name']} | {n:,} | {_s(r, 'start_s')} | {tc:.1f} | "
                         f"{_us(r, 'cost_s')} | "
                         f"{r['text_s']:.2f} | {r['json_s']:.2f} | {ratio:.2f} | {command:.2f} | "
                         f"{r['json_summary_s']:.3f} | {r['perfetto_s']:.2f} | "
                         f"{r['check_s']:.2f} | {r['peak_mb']:.0f} |")
        else:
            lines.append(f"| {r['name']} | {n:,} | {_s(r, 'start_s')} | {tc:.1f} | "
                         f"refused {r['errors']} | "
                         f"- | - | - | - | - | - | {r['check_s']:.2f} | {r['peak_mb']:.0f} |")
    med = {k: statistics.median(v) for k, v in medians.items() if v}
    cmd_rows = [r for r in rows if "commands" in r]
    lines.append(f"| **median** | | | **{med.get('tc', 0):.1f}** | **{med.get('cost', 0):.1f}** "
                 f"| | | **{med.get('ratio', 0):.2f}** | **{med.get('command', 0):.2f}** "
                 "| | | | |")
    lines.append("")
    if cmd_rows:
        lines += ["Whole processes (start-up included), CPU s and peak RSS MB:", "",
                  "| kernel | `check` s | `check` MB | `cost --format json` s | "
                  "`cost --format json` MB |", "|---|---|---|---|---|"]
        for r in cmd_rows:
            c, j = r["commands"]["check"], r["commands"]["cost_json"]
            lines.append(f"| {r['name']} | {c['cpu_s']:.2f} | {c['peak_mb']:.0f} | "
                         f"{j['cpu_s']:.2f} | {j['peak_mb']:.0f} |")
        lines.append("")
    if runs:
        lines += ["| run | nkirun s | NumPy s | ratio | max rel. difference | peak RSS MB | "
                  "live tensors MB | NumPy with the kernel's bf16 roundings s (ratio, max "
                  "rel. difference) |", "|---|---|---|---|---|---|---|---|"]
        for r in runs:
            if "failed" in r:
                lines.append(f"| {r['name']} | failed: {r['failed'][:80]} ||||||")
                continue
            rounded = "-" if "numpy_rounded_s" not in r else (
                f"{r['numpy_rounded_s']:.3f} ({r['run_s'] / r['numpy_rounded_s']:.2f}, "
                f"{r['matches_rounded']:.1e})")
            lines.append(f"| {r['name']} | {r['run_s']:.3f} | {r['numpy_s']:.3f} | "
                         f"{r['run_s'] / r['numpy_s']:.2f} | {r['matches']:.1e} | "
                         f"{r['peak_mb']:.0f} | {r['live_mb']:.0f} | {rounded} |")
        lines.append("")
    if start:
        lines.append(f"Start-up: `nkirun check` of a 6-instruction program {start['check_s']:.3f} s "
                     f"CPU, `import numpy` {start['numpy_s']:.3f} s: {start['ratio']:.2f}× "
                     "(median of pairs).")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-k", default=None, help="only kernels whose name contains this")
    ap.add_argument("--all", action="store_true", help="every kernel of the table")
    ap.add_argument("--no-run", action="store_true", help="skip the run-vs-NumPy rows")
    ap.add_argument("--no-startup", action="store_true")
    ap.add_argument("--no-commands", action="store_true",
                    help="skip the whole `nkirun check` / `cost --format json` processes")
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--out", default=str(HERE / "results" / "public-suite.md"))
    ap.add_argument("--table", help="only print the table of rows saved with --save")
    ap.add_argument("--save", help="also write the raw rows (JSON) here")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--run-worker", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        print(json.dumps(worker(a.worker)))
        return 0
    if a.run_worker:
        name, inner, outer, *k_block = json.loads(a.run_worker)
        print(json.dumps(run_worker(name, tuple(inner), tuple(outer), *k_block)))
        return 0
    if a.table:
        saved = json.loads(Path(a.table).read_text())
        print(table(saved["rows"], saved["runs"], saved["startup"]))
        return 0
    names = list(pk.KERNELS) if a.all else list(DEFAULT)
    if a.k:
        names = [n for n in pk.KERNELS if a.k in n]
    rows = []
    folder = Path(tempfile.mkdtemp(prefix="nkirun-suite-"))
    _compile_all()
    for name in names:
        rows.append(_child(["--worker", name], a.timeout))
        if not a.no_commands and "cost_s" in rows[-1] and pk.KERNELS[name].package is None:
            rows[-1]["commands"] = commands(name, folder)
        print(json.dumps(rows[-1]), file=sys.stderr)
    runs = []
    if not a.no_run:
        for name, inner, outer, k_block in RUNS:
            if a.k and a.k not in name:
                continue
            runs.append(_child(["--run-worker", json.dumps([name, inner, outer, k_block])],
                               a.timeout))
            print(json.dumps(runs[-1]), file=sys.stderr)
    start = None if a.no_startup else startup()
    load = os.getloadavg()[0]
    text = (f"CPU time (user + system) of a fresh process per kernel; load average {load:.1f} "
            f"on {os.cpu_count()} CPUs; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
            f", nkirun at {_commit()}.\n\n" + table(rows, runs, start))
    print(text)
    if a.save:
        Path(a.save).write_text(json.dumps({"rows": rows, "runs": runs, "startup": start}))
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(text)
    return 0


def _commit() -> str:
    p = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                       capture_output=True, text=True)
    return p.stdout.strip() or "?"


if __name__ == "__main__":
    sys.exit(main())
