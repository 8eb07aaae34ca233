"""How fast does nkirun refuse hostile or oversized programs?

The tests assert only the outcome (exit 1, a located E-code, nothing written, bounded
memory); how long each refusal takes depends on the machine's load, so it is measured
here. Each case is one whole `python -m nkirun check|run` process (interpreter start-up
included, which is what a user waits for); the budget column is what the tests asserted
before the timings moved out of them, on a quiet 2-core machine.

    python benchmarks/bench_rejections.py [--repeat 3]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _bomb(levels: int = 9, fan: int = 10) -> str:
    lines = ["version: 1", "a0: &a0 [" + ", ".join(["x"] * fan) + "]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * fan) + "]")
    return "\n".join(lines) + "\n"


def _keyword_line() -> str:
    return ("version 1\ntensor x hbm [4, 8] float32 fill=1.0\ntensor t sbuf [4, 8] float32\n"
            "load dst=t src=x " + " ".join(f"k{i}=1" for i in range(100_000)) + "\n")


def _blank_lines() -> str:
    return "version: 1\n" + "\n" * 40_000_000 + "# the end\n"


def _huge_tensor() -> str:
    return ("version: 1\ntensors:\n  big: {buffer: hbm, shape: [1000000, 1000000, 1000], "
            "dtype: float32, fill: 1.0}\ninstructions: []\n")


# name, file name, text, command, budget in seconds (what the tests used to assert)
CASES = [
    ("deep flow list (100k brackets)", "p.yaml",
     lambda: "version: 1\nname: " + "[" * 100_000 + "]" * 100_000 + "\n", "check", 5.0),
    ("alias bomb (10^14 values)", "p.yaml", lambda: _bomb(14), "check", 5.0),
    ("100,000 keywords on one line", "p.nkis", _keyword_line, "check", 3.0),
    ("40 MB of blank lines", "p.yaml", _blank_lines, "check", 10.0),
    ("a 4 EB tensor", "p.yaml", _huge_tensor, "run", 3.0),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    print(f"{'case':34} {'exit':>4} {'median s':>9} {'budget s':>9}")
    with tempfile.TemporaryDirectory(prefix="nkirun-bench-") as d:
        for name, fname, make, cmd, budget in CASES:
            path = os.path.join(d, fname)
            with open(path, "w") as f:
                f.write(make())
            times, code = [], None
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                p = subprocess.run([sys.executable, "-m", "nkirun", cmd, path,
                                    *(["--out", os.path.join(d, "out")] if cmd == "run" else [])],
                                   cwd=d, env=env, capture_output=True, timeout=300)
                times.append(time.perf_counter() - t0)
                code = p.returncode
            t = statistics.median(times)
            flag = "" if t <= budget else "  OVER"
            print(f"{name:34} {code:>4} {t:>9.2f} {budget:>9.1f}{flag}")


if __name__ == "__main__":
    main()
