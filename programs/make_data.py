"""Generate the .npy inputs of the example programs in this folder, deterministically.

    python programs/make_data.py            # every generator
    python programs/make_data.py NAME ...   # only these programs

Each program `NAME.yaml` reads its inputs from the folder `NAME/`. To add a program, write
one function `NAME(folder)` that saves its inputs there and list it in GENERATORS.
"""
from __future__ import annotations

import pathlib
import sys

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent


def _save(folder: pathlib.Path, **arrays: np.ndarray) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, a in arrays.items():
        np.save(folder / f"{name}.npy", a, allow_pickle=False)


def rowmax_in_window(folder: pathlib.Path) -> None:
    """The contract's example: per-partition windows lo <= i < hi over 512 columns, up to
    111 wide; row 5's window is empty (lo == hi), so it keeps nothing."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((128, 512)).astype(np.float32)
    lo = rng.integers(0, 400, (128, 1))
    hi = lo + rng.integers(0, 112, (128, 1))
    lo[5] = hi[5] = 300
    _save(folder, x=x, lo=lo.astype(np.float32), hi=hi.astype(np.float32))


def range_select_chain(folder: pathlib.Path) -> None:
    """Page 000 Example 2a/2b/2c: three successive 128x128 tiles (each the previous + 1, the
    page's `nl.add(on_true_tile, ones)`), per-partition windows over indices 0..383."""
    rng = np.random.default_rng(2000)
    x0 = (rng.standard_normal((128, 128)) * 3).astype(np.float32)
    p = np.arange(128, dtype=np.float32)[:, None]
    lo = 2 * p  # windows start in the first tile ...
    hi = lo + 64 + 2 * p  # ... and end in the first, second or third
    hi[15::16] = lo[15::16]  # every 16th row selects nothing
    _save(folder, x0=x0, x1=x0 + np.float32(1), x2=x0 + np.float32(2), lo=lo, hi=hi)


def select_reduce_reverse(folder: pathlib.Path) -> None:
    """Page 001 Example 3 with a reduction: keep x where the mask byte is ZERO."""
    rng = np.random.default_rng(2001)
    x = (rng.standard_normal((128, 384)) * 5).astype(np.float32)
    mask = (rng.random((128, 384)) < 0.75).astype(np.uint8)
    mask[::8] = 1  # rows that keep nothing: fill everywhere, reduce_res FP32_MIN
    mask[1::8] = 0  # rows that keep everything
    _save(folder, x=x, mask=mask)


def affine_select_causal(folder: pathlib.Path) -> None:
    """Attention scores for page 002's causal-mask use case."""
    rng = np.random.default_rng(2002)
    _save(folder, scores=(rng.standard_normal((128, 128)) * 2).astype(np.float32))


def topk_match_replace(folder: pathlib.Path) -> None:
    """Page 003 Example 4: a (128, 4, 96) tile of distinct random values (no ties, so the
    8 values max8 finds each occur once)."""
    rng = np.random.default_rng(2003)
    _save(folder, data=(rng.standard_normal((128, 4, 96)) * 4).astype(np.float32))


def scan_two_halves(folder: pathlib.Path) -> None:
    """Page 004 Example 1: decay factors a in [0, 1) and inputs b for c[i] = a[i]*c[i-1] + b[i]
    (bounded, so the scan stays finite over 1024 steps)."""
    rng = np.random.default_rng(2004)
    _save(folder, a=rng.random((128, 1024)).astype(np.float32),
          b=rng.standard_normal((128, 1024)).astype(np.float32))


# ---- real kernels (issue 5) ----------------------------------------------------------------
def causal_softmax(folder: pathlib.Path) -> None:
    """A 128x512 attention-score tile: the last 128 queries of a 512-token sequence."""
    rng = np.random.default_rng(2005)
    _save(folder, scores=(rng.standard_normal((128, 512)) * 3).astype(np.float32))


def topk16(folder: pathlib.Path) -> None:
    """A 128x512 tile of distinct values (a permutation per row), so top-16 has no ties."""
    rng = np.random.default_rng(2006)
    x = np.argsort(rng.random((128, 512)), axis=1).astype(np.float32) * np.float32(0.25) - 60
    _save(folder, x=x)


def selective_scan(folder: pathlib.Path) -> None:
    """Mamba-style inputs: 128 channels x 512 steps; A < 0 and D per channel, delta > 0."""
    rng = np.random.default_rng(2007)
    shape = (128, 512)
    _save(folder,
          x=rng.standard_normal(shape).astype(np.float32),
          delta=rng.uniform(0.01, 0.2, shape).astype(np.float32),
          B=rng.standard_normal(shape).astype(np.float32),
          C=rng.standard_normal(shape).astype(np.float32),
          A=-rng.uniform(0.5, 4.0, (128, 1)).astype(np.float32),
          D=rng.standard_normal((128, 1)).astype(np.float32),
          h0=(rng.standard_normal((128, 1)) * 0.1).astype(np.float32))


def sliding_window_max(folder: pathlib.Path) -> None:
    """Row p's window starts at 3p and is 64 wide (bounds come from iota in the program)."""
    rng = np.random.default_rng(2008)
    _save(folder, x=(rng.standard_normal((128, 512)) * 10).astype(np.float32))


def cumsum_scan(folder: pathlib.Path) -> None:
    rng = np.random.default_rng(2009)
    _save(folder, x=rng.standard_normal((128, 512)).astype(np.float32))


def matmul_transpose(folder: pathlib.Path) -> None:
    """C = A @ B with A [128, 256] and B [256, 512] in bfloat16 (B as two 128-row halves)."""
    import ml_dtypes
    rng = np.random.default_rng(2010)
    # through float32: ml_dtypes 0.7 rounds float64 to bfloat16 once, earlier releases
    # went through float32 (twice); the committed data must come back under both
    a = rng.standard_normal((128, 256)).astype(np.float32).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((256, 512)).astype(np.float32).astype(ml_dtypes.bfloat16)
    _save(folder, a=a, b0=b[:128].copy(), b1=b[128:].copy())


def layernorm_bn_stats(folder: pathlib.Path) -> None:
    """LayerNorm of 128 rows of 1024: rows offset and scaled differently, gamma/beta rows."""
    rng = np.random.default_rng(2011)
    x = rng.standard_normal((128, 1024)) * rng.uniform(0.5, 4, (128, 1)) \
        + rng.uniform(-3, 3, (128, 1))
    gamma = np.broadcast_to(rng.uniform(0.5, 1.5, (1, 1024)), (128, 1024))
    beta = np.broadcast_to(rng.standard_normal((1, 1024)) * 0.1, (128, 1024))
    _save(folder, x=x.astype(np.float32), gamma=gamma.astype(np.float32),
          beta=beta.astype(np.float32))


def softmax_exponential(folder: pathlib.Path) -> None:
    rng = np.random.default_rng(2012)
    _save(folder, x=(rng.standard_normal((128, 2048)) * 3).astype(np.float32))


def moe_expert_loop(folder: pathlib.Path) -> None:
    """Six token tiles, four of them routed to the expert (the loop's run-time count)."""
    rng = np.random.default_rng(2013)
    _save(folder, x=rng.standard_normal((6, 128, 256)).astype(np.float32),
          count=np.array([[4]], np.int32))


KERNELS = (causal_softmax, topk16, selective_scan, sliding_window_max, cumsum_scan,
           matmul_transpose, layernorm_bn_stats, softmax_exponential, moe_expert_loop)


GENERATORS = {f.__name__: f for f in (rowmax_in_window, range_select_chain,
                                      select_reduce_reverse, affine_select_causal,
                                      topk_match_replace, scan_two_halves)}

GENERATORS.update({f.__name__: f for f in KERNELS})


def main(argv: list[str] | None = None, root: pathlib.Path = HERE) -> None:
    names = argv if argv else list(GENERATORS)
    unknown = [n for n in names if n not in GENERATORS]
    if unknown:
        sys.exit(f"unknown program(s) {', '.join(unknown)}; known: {', '.join(GENERATORS)}")
    for name in names:
        GENERATORS[name](pathlib.Path(root) / name)
        print(f"wrote {pathlib.Path(root) / name}/")


if __name__ == "__main__":
    main(sys.argv[1:])
