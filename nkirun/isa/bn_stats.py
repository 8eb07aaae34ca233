"""nki.isa.bn_stats — Vector engine.

Per partition, over at most 512 elements (nl.tile_size.bn_stats_fmax), six statistics:
the count, mean and variance*count of the even elements (free index 0, 2, 4, ...), then
the same of the odd elements; bn_aggr combines one or more of these into mean and variance.

Readings (the page fixes the outputs, not the arithmetic):
* "Even"/"odd" is the flattened free index (row-major over the free axes).
* The statistics are computed in float64 (two-pass: the mean, then the sum of squared
  deviations) and rounded once to float32, then cast to dst: close to a float32 engine,
  the same on every CPU.
* A half with no elements (a single element per partition: no odd ones) gives count 0,
  mean 0 and variance*count 0, so bn_aggr weighs it out.
* NaN/inf propagate into that half's mean and variance.
"""
from __future__ import annotations

import numpy as np

from nkirun.isa.common import flat
from nkirun.isa.nki_api import per_partition
from nkirun.isa.spec import DTYPE, TILE, Bound, InstructionDef, NkiApi, Param, out_dtype

URL = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.isa.bn_stats.html"
FMAX = 512  # nl.tile_size.bn_stats_fmax

PARAMS = (
    Param("dst", TILE, required=True, out=True, doc="(P, 6) statistics tile"),
    Param("data", TILE, required=True,
          doc="input tile, at most 512 elements per partition"),
    Param("dtype", DTYPE, doc="legacy: cast the statistics to this dtype before the store"),
)


def check(b: Bound):
    dst, data = b.tile("dst"), b.tile("data")
    if data is not None and data.free_size > FMAX:
        yield b.err("E370", f"data has {data.free_size} elements per partition; bn_stats takes "
                    f"at most {FMAX} (nl.tile_size.bn_stats_fmax)", "data",
                    hint="run bn_stats on 512-element slices into one stats tile, then one "
                         "bn_aggr over all of them")
    if dst is not None and data is not None and (
            dst.partitions != data.partitions or dst.free_size != 6):
        yield b.err("E371", f"dst {list(dst.shape)} must hold 6 elements per partition for "
                    f"data's {data.partitions} partitions", "dst",
                    hint=f"declare dst as [{data.partitions}, 6]")


def half_stats(x: np.ndarray) -> np.ndarray:
    """(P, 3) float64 count, mean, variance*count of the rows of x (float64)."""
    n = x.shape[1]
    out = np.zeros((x.shape[0], 3))
    out[:, 0] = n
    if n:
        mean = x.sum(axis=1) / n
        out[:, 1] = mean
        out[:, 2] = np.square(x - mean[:, None]).sum(axis=1)
    return out


def execute(b: Bound, m) -> None:
    x = flat(m.read_f32(b["data"])).astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        stats = np.concatenate([half_stats(x[:, 0::2]), half_stats(x[:, 1::2])], axis=1)
    m.write(b["dst"], stats.astype(np.float32).reshape(b["dst"].shape), out_dtype(b))


def cycles(b: Bound, target) -> int:
    return max(target.min_ii, b["data"].free_size)


SPEC = InstructionDef(
    name="bn_stats",
    engine="vector",
    params=PARAMS,
    summary="per-partition count/mean/variance*count of the even and of the odd elements",
    semantics=(
        "Writes 6 values per partition: count, mean and variance*count (the sum of squared "
        "deviations) of the elements at even free indices, then of those at odd free "
        "indices, over at most 512 elements per partition. Computed in float64, rounded to "
        "float32, cast to dst. bn_aggr turns one or more such 6-tuples into mean and "
        "variance."),
    cost_formula="max(MIN_II, N) Vector cycles (N = elements per partition of data)",
    execute=execute,
    cycles=cycles,
    check=check,
    source=f"{URL}; cost: NKI 2.26 (legacy) docstring",
    example="""\
- bn_stats:
    dst: stats
    data: x""",
    nki=NkiApi("dst data", result=per_partition(6)),
)
