"""The calibration report: nkirun's predicted time for kernels written from the public NKI
tutorials, against the times AWS published for them (docs/cost.md "Calibration").

    python benchmarks/calibration/run.py                 # the table
    python benchmarks/calibration/run.py --json out.json # also the data
    python benchmarks/calibration/run.py --quick         # small points only (no 4096x8192x8192)

Each point: the kernel, its shapes and target, what is compared (the makespan; for the single
DMA the engine's busy time, as the profile shows it; for the tiny chain the initiation
interval), the published figure and its page, and why a point stays outside +-30 % when it
does.

LayerNorm: the tutorial's text names an input of (300, 1000), but its published p50 (2311 us
and 1969 us) comes from the script's perf mode, whose default input is (4096, 8192) fp32
(`--nrows 4096 --ncols 8192`): (300, 1000) is about 1/110 of that work and cannot take
2.3 ms on any engine. nkirun compares at (4096, 8192). Rankings: the published orderings (faster first) and whether nkirun's agree.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TUT = "https://awsdocs-neuron.readthedocs-hosted.com/en/v2.26.1/general/nki/tutorials/"
NEW = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/"
MATMUL_SRC = TUT + "matrix_multiplication.html"
MAMBA_SRC = NEW + "guides/tutorials/fused_mamba.html"
LN_SRC = TUT + "layernorm.html"
DMA_SRC = NEW + "about/nki-dma-overview.html"
PERF_SRC = NEW + "deep-dives/nki_perf_guide.html"

LN_WHY = ("v2's shift and scale in one tensor_scalar is charged the documented N cycles, "
          "but the published gap (v1 -15 %) is smaller than nkirun's (-30 %): v1's separate "
          "passes overlap Vector, Scalar and DMA better on hardware than nkirun's in-order "
          "engines let them")
MAMBA_WHY = ("the published Vector time per state equals three 2N-cycle element-wise "
             "instructions plus the dependent-instruction overhead; nkirun runs four on Vector "
             "(the `+=` accumulation too): where the compiler places nki.language element-wise "
             "operations (Vector or GpSimd) is not documented, so nkirun keeps them on Vector")
MATMUL_WHY = ("DMA-bound on 256 B / 1 KiB bf16 rows: the time rests on the descriptor "
              "overhead and the NC-v2 element-width reading (docs/cost.md)")


def _f32(*dims):
    import nkirun
    return nkirun.shape("float32", *dims)


def _bf16(*dims):
    import nkirun
    return nkirun.shape("bfloat16", *dims)


def mamba_args(channels, seq, state=16):
    return (_f32(1, channels, seq), _f32(1, channels, seq), _f32(channels, state),
            _f32(1, state, seq), _f32(1, state, seq))


def points(quick: bool) -> list[dict]:
    """(name, module, kernel, args, target, metric, measured ns, source, why-if-outside)."""
    big = (_bf16(8192, 4096), _bf16(8192, 8192))
    out = []
    if not quick:
        for v, ms in (("v1", 51.80), ("v2", 42.96), ("v3", 22.07), ("v4", 6.97)):
            out.append(dict(name=f"matmul {v} 4096x8192x8192 bf16", module="matmul",
                            kernel=f"matmul_{v}", args=big, target="trn1", metric="total",
                            measured_ns=ms * 1e6, source=MATMUL_SRC, why=MATMUL_WHY))
    out.append(dict(name="mamba v1 b1 s512 c256 n16", module="small", kernel="mamba_v1",
                    args=mamba_args(256, 512), target="trn1", metric="total",
                    measured_ns=172.93e3, source=MAMBA_SRC, why=MAMBA_WHY))
    for v, ms in (("v1", 2.34), ("v2", 1.61)):
        out.append(dict(name=f"mamba {v} c4096 s512", module="small", kernel=f"mamba_{v}",
                        args=mamba_args(4096, 512), target="trn1", metric="total",
                        measured_ns=ms * 1e6, source=MAMBA_SRC, why=MAMBA_WHY))
    out.append(dict(name="mamba v3 c4096 s512", module="small", kernel="mamba_v3",
                    args=mamba_args(4096, 512), target="trn1", metric="total",
                    measured_ns=1.6e6, source=MAMBA_SRC, why=MAMBA_WHY))
    sweep = ((1024, 4.4, 3.3), (2048, 8.9, 6.6)) if quick else \
        ((1024, 4.4, 3.3), (2048, 8.9, 6.6), (4096, 17.6, 13.3))
    for seq, v2, v3 in sweep:
        for v, ms in (("v2", v2), ("v3", v3)):
            out.append(dict(name=f"mamba {v} c4096 s{seq}", module="small",
                            kernel=f"mamba_{v}", args=mamba_args(4096, seq), target="trn1",
                            metric="total", measured_ns=ms * 1e6, source=MAMBA_SRC,
                            why=MAMBA_WHY))
    for v, us in (("v1", 2311), ("v2", 1969)):
        out.append(dict(name=f"layernorm {v} (4096, 8192)", module="small",
                        kernel=f"layernorm_{v}", args=(_f32(4096, 8192), _f32(8192), _f32(8192)),
                        target="trn1", metric="total", measured_ns=us * 1e3, source=LN_SRC,
                        why=LN_WHY))
    out.append(dict(name="single DMA [4,4096] bf16 (engine time)", module="small",
                    kernel="single_dma", args=(_bf16(4, 4096),), target="trn2",
                    metric="first_dma_engine", measured_ns=1416, source=DMA_SRC, why=""))
    out.append(dict(name="dependent tiny Scalar instructions (interval)", module="small",
                    kernel="tiny_chain", args=(_f32(128, 1),), target="trn1",
                    metric="activation_interval", measured_ns=189, source=PERF_SRC,
                    why=""))
    return out


RANKINGS = [  # faster first, as published
    ("matmul v4 < v3 < v2 < v1", [f"matmul {v} 4096x8192x8192 bf16" for v in
                                  ("v4", "v3", "v2", "v1")]),
    ("mamba v2 < v1 (c4096 s512)", ["mamba v2 c4096 s512", "mamba v1 c4096 s512"]),
    ("layernorm v2 < v1", ["layernorm v2 (4096, 8192)", "layernorm v1 (4096, 8192)"]),
] + [(f"mamba v3 < v2 (s{s})", [f"mamba v3 c4096 s{s}", f"mamba v2 c4096 s{s}"])
     for s in (1024, 2048, 4096)]


def predict(point: dict) -> tuple[float, int]:
    """(predicted ns of the point's metric, instructions)."""
    import importlib
    from nkirun.schedule import schedule
    from nkirun.api_kernel import require_valid, trace_call
    kernel = getattr(importlib.import_module(point["module"]), point["kernel"])
    traced = trace_call(kernel, point["args"], {}, point["target"])
    bound, _ = require_valid(traced)
    s = schedule(traced.program, bound)
    metric = point["metric"]
    if metric == "first_dma_engine":
        return s.slots[0].busy_ns / len(s.slots[0].queues), len(s.slots)
    if metric == "activation_interval":
        acts = [x for x in s.slots if x.op == "activation"]
        return (acts[-1].start_ns - acts[0].start_ns) / (len(acts) - 1), len(s.slots)
    return s.total_ns, len(s.slots)


def evaluate(quick: bool = False, log=None) -> dict:
    from nkirun.source.kernel.modules import install_fallback_finder
    install_fallback_finder()  # `import nki` in the kernel files: nkirun's own nki package
    if HERE not in sys.path:
        sys.path.insert(0, HERE)
    rows = []
    for p in points(quick):
        t0 = time.perf_counter()
        ns, n = predict(p)
        err = ns / p["measured_ns"] - 1
        rows.append(dict(name=p["name"], target=p["target"], instructions=n,
                         predicted_ns=ns, measured_ns=p["measured_ns"], error=err,
                         within_30=abs(err) <= 0.30, source=p["source"],
                         why=p["why"] if abs(err) > 0.30 else "",
                         seconds=time.perf_counter() - t0))
        if log:
            log(rows[-1])
    by = {r["name"]: r for r in rows}
    ranks = []
    for label, order in RANKINGS:
        if all(n in by for n in order):
            pred = [by[n]["predicted_ns"] for n in order]
            ranks.append(dict(ranking=label, holds=all(a < b for a, b in zip(pred, pred[1:])),
                              predicted_ns=pred))
    return dict(points=rows, rankings=ranks)


def _fmt(ns: float) -> str:
    return f"{ns / 1e6:.3f} ms" if ns >= 1e6 else f"{ns / 1e3:.2f} us" if ns >= 1e3 \
        else f"{ns:.0f} ns"


def table(result: dict) -> str:
    lines = [f"{'point':48} {'target':6} {'predicted':>12} {'measured':>12} {'error':>7}"]
    for r in result["points"]:
        mark = "" if r["within_30"] else "  OUT"
        lines.append(f"{r['name']:48} {r['target']:6} {_fmt(r['predicted_ns']):>12} "
                     f"{_fmt(r['measured_ns']):>12} {r['error']:+7.0%}{mark}")
    lines.append("")
    for k in result["rankings"]:
        lines.append(f"ranking {k['ranking']:34} {'holds' if k['holds'] else 'BROKEN'}")
    why = {r["why"] for r in result["points"] if r["why"]}
    if why:
        lines.append("")
        lines.append("outside +-30 %, why:")
        lines += [f"  - {w}" for w in sorted(why)]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", metavar="FILE", help="also write the result as JSON")
    ap.add_argument("--quick", action="store_true", help="skip the 4096x8192x8192 matmuls")
    args = ap.parse_args()
    result = evaluate(args.quick, log=lambda r: print(
        f"  {r['name']}: {_fmt(r['predicted_ns'])} ({r['instructions']:,} instructions, "
        f"{r['seconds']:.1f} s)", file=sys.stderr))
    print(table(result))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
