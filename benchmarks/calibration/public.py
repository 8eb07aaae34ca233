"""The public training set (../shared hw-measurements, read in docs/cost.md "Calibration"):
public NKI kernels with published hardware times, run UNMODIFIED at their published shapes.
Each kernel is read from its repository at a pinned commit at run time
(benchmarks/public_kernels.py); a point whose source is absent is skipped, with the reason.

Per point: the kernel's source, the published shapes, the target, the measured time, how it
was timed (NCL = nki.benchmark nc_latency, device-side; total_time = neuron-profile's
execution wall clock, 6-13 % above NCL on trn2), the toolchain, and the engine times the
source gives (active time per engine).

Families: variants of one kernel at one shape, ranked by their measured times (the ranking
goal), and the unit the hold-out leaves out (run.py).
"""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import public_kernels as pk  # noqa: E402

ACCELOPT = "zhang677/AccelOpt"
SDK = "aws-neuron/aws-neuron-sdk"
CS149_25 = "stanford-cs149/asst4-trainium2"
CS149_24 = "stanford-cs149/asst4-trainium"

NKIBENCH_URL = "https://github.com/zhang677/AccelOpt (experiments/full_complete_local/" \
    "profile_results.csv)"
NKIBENCH_TC = "neuronx-cc of the Neuron DLAMI PyTorch 2.7 venv (version not published)"
NKIBENCH_HOW = "total_time, mean of 10 profiles"
TUTORIAL_URL = ("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/guides/tutorials/"
                "kernel-optimization.html")
TUTORIAL_TC = "Neuron SDK 2.27 (profiles added 2025-12-02)"
CS149_25_URL = "https://github.com/xaviergonzalez/asst4-trainium2 (writeup.md @ 071093b1)"
CS149_24_URL = "https://github.com/robertpare17/asst4-trainium (solution.md @ 028e80d8)"
CS149_25_TC = "Neuron SDK 2.2x (trn2.3xlarge, Nov 2025)"
CS149_24_TC = "Neuron SDK 2.2x (trn1.2xlarge, Nov 2024)"


def _f32(*dims):
    import nkirun
    return nkirun.shape("float32", *dims)


def _nkibench(op: str, shape: str, args, ms: float, act: float, dve: float) -> dict:
    """An NKIBench baseline: kernels/<op>_<shape>_0.py `kernel`, fp32, trn1; ACT and DVE
    active percentages of the profile (profile_results.csv)."""
    lat = ms * 1e6
    return dict(name=f"nkibench {op}", family=f"nkibench {op}", repo=ACCELOPT,
                path=f"NKIBench/kernels/{op}_{shape}_0.py", function="kernel", args=args,
                target="trn1", measured_ns=lat, method=NKIBENCH_HOW, toolchain=NKIBENCH_TC,
                engines={"scalar": act / 100 * lat, "vector": dve / 100 * lat},
                source=NKIBENCH_URL)


def nkibench_points() -> list[dict]:
    f = _f32
    return [
        _nkibench("silu", "M4096_N7168", (f(128, 32, 7168),), 1.333, 31, 74),
        _nkibench("adamw", "M10944_N2048", (f(10944, 2048),) * 4, 2.000, 62, 90),
        _nkibench("rmsnorm_matmul", "M4096_N2048_K1024", (f(32, 128, 1024), f(8, 128, 2048)),
                  1.056, 18, 4),
        _nkibench("add_rmsnorm_matmul", "M4096_N2048_K1024",
                  (f(4096, 1024), f(1024, 2048), 1e-5, f(4096, 1024), f(1024)), 1.222, 23, 15),
        _nkibench("matmul_add_rmsnorm", "M4096_N2048_K2048",
                  (f(4096, 2048), f(2048, 2048), 1e-5, f(4096, 2048), f(2048)), 2.667, 17, 12),
        _nkibench("rope_single_freq_apply", "B1_H64_N4096_D128",
                  (f(128, 262144), f(64, 262144), f(64, 262144)), 4.333, 14, 72),
        _nkibench("bmm", "B16_M4096_K64_N4096", (f(16, 4096, 64), f(16, 64, 4096)),
                  4.611, 37, 0),
        _nkibench("mamba", "M7168_C256_S16",
                  (f(256, 7168), f(256, 7168), f(256, 16), f(16, 7168), f(16, 7168)),
                  2.889, 19, 61),
        _nkibench("swiglu", "M4096_N3072_K1024",
                  (f(8, 4, 128, 8, 128), f(8, 128, 3072), f(24, 128, 1024), f(8, 128, 3072)),
                  4.222, 9, 13),
        _nkibench("transpose_matmul", "M4096_K2048_N10944",
                  (f(128, 16, 4096), f(128, 16, 10944)), 9.610, 4, 0),
        _nkibench("bmm_softmax", "B16_K64_M4096_N4096", (f(16, 4096, 64), f(16, 64, 4096)),
                  12.000, 43, 46),
        _nkibench("gqa_full", "B1_N4096_QH16_KH8_D128",
                  (f(32, 128, 16, 128), f(1, 8, 4, 128, 8, 128), f(1, 32, 128, 1024)),
                  19.111, 39, 31),
        _nkibench("lora", "M4096_N12288_K5120_R128",
                  (f(8, 4, 128, 40, 128), f(40, 128, 12288), f(40, 128, 128), f(128, 12288)),
                  30.166, 3, 10),
        _nkibench("matmul", "M4096_N12288_K5120", (f(32, 128, 40, 128), f(40, 128, 12288)),
                  35.200, 7, 0),
    ]


def tutorial_points() -> list[dict]:
    """The SDK's kernel-optimization tutorial, fp32 4096x8192x8192 on trn2: its code blocks
    2-5 (tiled, loads hoisted, M/N blocked, K blocked too), timed from the profile
    screenshots (timeline end; TensorE / DMA / VectorE active)."""
    big = (_f32(8192, 4096), _f32(8192, 8192))
    rows = [("v2 tiled", 1, 39.894938, 34.82, 39.87, None),
            ("v3 loads hoisted", 2, 28.197982, 28.16, 28.12, None),
            ("v4 M,N blocked", 3, 28.414015, 28.28, 27.19, None),
            ("v5 M,N,K blocked", 4, 28.301971, 28.16, 6.10, 2.99)]
    out = []
    for label, block, ms, pe, dma, dve in rows:
        engines = {"tensor": pe * 1e6, "dma": dma * 1e6}
        if dve is not None:
            engines["vector"] = dve * 1e6
        out.append(dict(name=f"tutorial fp32 matmul {label}", family="tutorial fp32 matmul",
                        repo=SDK, path="nki/guides/tutorials/kernel-optimization.rst",
                        function="matrix_multiply_kernel", block=block, args=big,
                        target="trn2", measured_ns=ms * 1e6, method="profile timeline end",
                        toolchain=TUTORIAL_TC, engines=engines, source=TUTORIAL_URL))
    return out


def cs149_points() -> list[dict]:
    """CS149 assignment 4, part 1: vector add at the row chunk / free size each write-up
    measured (the assignment's own edit of one constant)."""
    out = []
    for year, repo, tc, url, target, rows in (
            (2025, CS149_25, CS149_25_TC, CS149_25_URL, "trn2", (
                ("vector_add_tiled", "ROW_CHUNK", 1, 25600, 37318, "NCL p99"),
                ("vector_add_tiled", "ROW_CHUNK", 128, 25600, 378, "NCL p99"),
                ("vector_add_stream", "FREE_DIM", 2, 25600, 186, "NCL p99"),
                ("vector_add_stream", "FREE_DIM", 200, 25600, 15, "NCL p99"),
                ("vector_add_stream", "FREE_DIM", 2000, 256000, 28, "total_time"),
                ("vector_add_stream", "FREE_DIM", 1000, 256000, 26, "total_time"))),
            (2024, CS149_24, CS149_24_TC, CS149_24_URL, "trn1", (
                ("vector_add_tiled", "ROW_CHUNK", 1, 25600, 27404, "NCL p99"),
                ("vector_add_tiled", "ROW_CHUNK", 128, 25600, 206, "NCL p99"),
                ("vector_add_stream", "FREE_DIM", 2, 25600, 53, "NCL p99"),
                ("vector_add_stream", "FREE_DIM", 200, 25600, 19, "NCL p99"),
                ("vector_add_stream", "FREE_DIM", 2000, 256000, 34, "total_time"),
                ("vector_add_stream", "FREE_DIM", 1000, 256000, 29, "total_time")))):
        for fn, const, value, n, us, how in rows:
            out.append(dict(name=f"cs149 {year} {fn} {const}={value} n={n}",
                            family=f"cs149 {year} vector add n={n}", repo=repo,
                            path="part1/kernels.py", function=fn, constants={const: value},
                            args=(_f32(n), _f32(n)), target=target, measured_ns=us * 1e3,
                            method=how, toolchain=tc, engines={}, source=url))
    return out


def points() -> list[dict]:
    return tutorial_points() + cs149_points() + nkibench_points()


def missing(point: dict) -> str | None:
    return pk.missing(point["repo"], point["path"])


def kernel(point: dict):
    """The point's kernel function, imported from its extracted source."""
    if "block" in point:
        text = pk.read(point["repo"], point["path"])
        blocks = pk.code_blocks(text, point["function"])
        mod = pk.write_module(f"tutorial_block{point['block']}", blocks[point["block"]])
        return getattr(pk.import_path(mod), point["function"])
    if "constants" in point:
        text = pk.with_constants(pk.read(point["repo"], point["path"]), point["function"],
                                 point["constants"])
        tag = "_".join(f"{k}{v}" for k, v in point["constants"].items())
        name = f"{point['repo'].split('/')[1].replace('-', '_')}_{tag}"
        mod = pk.write_module(name, text)
        return getattr(pk.import_path(mod), point["function"])
    return pk.load(point["repo"], point["path"], point["function"])
