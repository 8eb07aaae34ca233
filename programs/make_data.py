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


GENERATORS = {f.__name__: f for f in (range_select_chain, select_reduce_reverse,
                                      affine_select_causal)}


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
