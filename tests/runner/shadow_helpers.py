"""What the shadow tests share: a bf16 kernel ready to call, and reports compared row by
row (tests/runner/test_shadow_bits.py, test_shadow_native.py)."""
from __future__ import annotations

import dataclasses
import importlib.util
import pathlib

import ml_dtypes
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]


def bf16_kernel(kernel: str, seed: int):
    """(the function, its bf16 arguments) of programs/kernels/<kernel>.py: rmsnorm or
    attention_bf16, at small shapes."""
    src = ROOT / "programs" / "kernels" / f"{kernel}.py"
    spec = importlib.util.spec_from_file_location(f"k_{kernel}_{seed}", src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rng = np.random.default_rng(seed)
    bf = ml_dtypes.bfloat16
    args = ([rng.standard_normal((256, 96)).astype(bf), rng.standard_normal((1, 96)).astype(bf)]
            if kernel == "rmsnorm" else
            [rng.standard_normal(s).astype(bf) for s in ((64, 128), (64, 128), (128, 64))])
    return getattr(mod, kernel), args


def rows(rep) -> list:
    return [dataclasses.asdict(r) for r in rep.rows]


def same_rows(a: list, b: list) -> None:
    """Field for field the same (NaN equal to NaN)."""
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.keys() == y.keys()
        for k in x:
            same = x[k] == y[k] or (isinstance(x[k], float) and np.isnan(x[k])
                                    and np.isnan(y[k]))
            assert same, (x["instruction"], x["op"], k, x[k], y[k])


def perturbed(ref: np.ndarray, d, seed: int, flip: bool, specials: np.ndarray,
              share: float) -> np.ndarray:
    """A run's version of shadow values `ref`: cast to dtype d and back to float32, nudged
    by a few 2^-6 steps, sign-flipped in ~30% of the places (`flip`), and a `share` of
    the elements replaced by one of `specials`."""
    from nkirun.runner.shadow_bits import as_f32, real_cast
    rng = np.random.default_rng(seed)
    with np.errstate(all="ignore"):
        x = as_f32(real_cast(ref, None, d))
        x = x * np.float32(1 + 2.0 ** -6 * rng.integers(-3, 4, ref.size))
        if flip:
            x[rng.random(ref.size) < 0.3] *= -1
        x[rng.random(ref.size) < share] = rng.choice(specials, 1)
    return x
