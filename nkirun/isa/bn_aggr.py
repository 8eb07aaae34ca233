"""nki.isa.bn_aggr — Vector engine.

Combines the (count, mean, variance*count) triples of one or more bn_stats outputs (3k
elements per partition) into two values per partition: the mean and the (population)
variance of all the elements they describe.

Readings:
* The triples are pooled exactly as their definitions imply: C = sum(c_i),
  mean = sum(c_i * m_i) / C, variance = (sum(M2_i) + sum(c_i * (m_i - mean)^2)) / C,
  computed in float64 and rounded once to float32 (then cast to dst).
* A triple with count 0 (bn_stats' empty odd half: mean 0, variance*count 0) contributes
  nothing; if every count is 0 the mean and variance are NaN (0/0), as the formula gives.
* The triples are read as float32 values whatever data's dtype (the engine casts its input
  to float32).
"""
from __future__ import annotations

import numpy as np

from nkirun.isa.common import flat
from nkirun.isa.nki_api import per_partition
from nkirun.isa.spec import DTYPE, TILE, Bound, InstructionDef, NkiApi, Param, out_dtype

URL = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.isa.bn_aggr.html"

PARAMS = (
    Param("dst", TILE, required=True, out=True, doc="(P, 2) tile: mean, then variance"),
    Param("data", TILE, required=True,
          doc="bn_stats outputs: (count, mean, variance*count) triples, 3k per partition"),
    Param("dtype", DTYPE, doc="legacy: cast the results to this dtype before the store"),
)


def check(b: Bound):
    dst, data = b.tile("dst"), b.tile("data")
    if data is not None and data.free_size % 3:
        yield b.err("E380", f"data has {data.free_size} elements per partition; bn_aggr needs "
                    "a multiple of 3 (count, mean, variance*count triples)", "data",
                    hint="pass whole bn_stats outputs (6 elements each)")
    if dst is not None and data is not None and (
            dst.partitions != data.partitions or dst.free_size != 2):
        yield b.err("E381", f"dst {list(dst.shape)} must hold 2 elements per partition (mean, "
                    f"variance) for data's {data.partitions} partitions", "dst",
                    hint=f"declare dst as [{data.partitions}, 2]")


def execute(b: Bound, m) -> None:
    t = flat(m.read_f32(b["data"])).astype(np.float64)
    count, mean, m2 = t[:, 0::3], t[:, 1::3], t[:, 2::3]
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        total = count.sum(axis=1, keepdims=True)
        mu = (count * mean).sum(axis=1, keepdims=True) / total
        var = (m2 + count * np.square(mean - mu)).sum(axis=1, keepdims=True) / total
    out = np.concatenate([mu, var], axis=1).astype(np.float32)
    m.write(b["dst"], out.reshape(b["dst"].shape), out_dtype(b))


def cycles(b: Bound, target) -> int:
    return max(target.min_ii, 13 * (b["data"].free_size // 3))  # [OLD-ISA] 13*(N/3)


SPEC = InstructionDef(
    name="bn_aggr",
    engine="vector",
    params=PARAMS,
    summary="mean and variance per partition from bn_stats (count, mean, variance*count)",
    semantics=(
        "Reads data as (count, mean, variance*count) triples (3k elements per partition, "
        "e.g. several bn_stats outputs side by side) and writes the pooled mean and "
        "population variance of everything they describe: mean = sum(c*m)/C, variance = "
        "(sum(M2) + sum(c*(m - mean)^2))/C with C = sum(c); float64 math rounded to "
        "float32, cast to dst."),
    cost_formula="max(MIN_II, 13*(N/3)) Vector cycles (N = elements per partition of data)",
    execute=execute,
    cycles=cycles,
    check=check,
    source=f"{URL}; cost: NKI 2.26 (legacy) docstring",
    example="""\
- bn_aggr:
    dst: mean_var
    data: stats""",
    nki=NkiApi("dst data", result=per_partition(2)),
)
