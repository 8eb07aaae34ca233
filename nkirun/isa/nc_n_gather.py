"""nki.isa.nc_n_gather — GpSimd engine: a gather inside each partition.

Facts (NKI 0.6 API page, https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/
generated/nki.isa.nc_n_gather.html):
* per partition, data's free dims are flattened; dst's element j (flattened) is the data
  element at the flattened position given by indices' element j of the same partition.
* data, indices and dst in SBUF (GpSimd cannot access PSUM); indices uint32; dst has data's
  dtype; dst holds as many elements per partition as indices (indices' free dims give dst's
  shape); the same partition count for all three, at most 128.
* index values must lie in [0, data.size / data.shape[0]).
* it lowers to n = ceil(elems_per_partition / 512) groups of ISA instructions (formerly
  nl.gather_flattened, limited to 512 per partition).

Readings:
* An index outside [0, F) is a run-time error (E423) naming the partition and the value: the
  page gives the range as a requirement and no out-of-bounds behaviour.
* Cost (no documented formula, an assumption): each of the ceil(F / 512) underlying
  instructions starts like the other GpSimd instructions (GPSIMD_START, about 150 cycles) and
  streams the M indices: ceil(F / 512) * (150 + M) GpSimd cycles.
* The copy is bit-exact (dst has data's dtype).
"""
from __future__ import annotations

import math

import numpy as np

from nkirun.diagnostics import RunError
from nkirun.isa.common import flat, gather_into
from nkirun.isa.spec import TILE, Bound, InstructionDef, NkiApi, Param

SBUF = frozenset({"sbuf"})
GROUP = 512  # elements per partition one underlying instruction covers

PARAMS = (
    Param("dst", TILE, required=True, out=True, buffers=SBUF,
          doc="SBUF tile: data's dtype, as many elements per partition as indices"),
    Param("data", TILE, required=True, buffers=SBUF, doc="SBUF tile to gather from"),
    Param("indices", TILE, required=True, buffers=SBUF, dtypes=frozenset({"uint32"}),
          doc="uint32 SBUF tile of flattened positions in [0, data elements per partition)"),
)


def check(b: Bound):
    data, idx, dst = b.tile("data"), b.tile("indices"), b.tile("dst")
    if dst.dtype != data.dtype:
        yield b.err("E420", f"dst is {dst.dtype.name} but data is {data.dtype.name}; "
                    "nc_n_gather does not cast", "dst", hint="give dst the dtype of data")
    if dst.free_size != idx.free_size:
        yield b.err("E421", f"dst holds {dst.free_size} elements per partition but indices "
                    f"{idx.free_size}; one output per index", "dst",
                    hint=f"declare dst with {idx.free_size} elements per partition")


def gather_positions(b: Bound, m) -> np.ndarray:
    """(P, M) int64 positions in the (P*F) flattened data, each checked against F."""
    pos = flat(m.read(b["indices"])).astype(np.int64)
    n = b["data"].free_size
    if pos.size and pos.max() >= n:  # uint32: never negative
        bad = pos >= n
        p, j = map(int, np.argwhere(bad)[0])
        raise RunError(b.err("E423", f"indices[{p}, {j}] = {int(pos[p, j])} is outside data's "
                             f"{n} elements per partition ({int(bad.sum())} indices out of "
                             "range)", "indices", hint=f"indices must lie in [0, {n})"))
    pos += np.arange(0, pos.shape[0] * n, n)[:, None]  # row p starts at p * F
    return pos


def execute(b: Bound, m) -> None:
    dst = b["dst"]
    gather_into(m, dst, m.read(b["data"]).reshape(-1), gather_positions(b, m))


def cycles(b: Bound, target) -> int:
    groups = math.ceil(b["data"].free_size / GROUP)
    return groups * (target.gpsimd_start + b["indices"].free_size)


SPEC = InstructionDef(
    name="nc_n_gather",
    engine="gpsimd",
    params=PARAMS,
    summary="gather elements inside each partition by flattened uint32 indices",
    semantics=(
        "For each partition p and each index position j (flattened): dst[p, j] = "
        "data[p, indices[p, j]], with data's free dims flattened row-major. Bit-exact; "
        "an index outside [0, data elements per partition) is a run-time error."),
    cost_formula="ceil(F / 512) * (150 + M) GpSimd cycles, F = data elements per partition, "
                 "M = indices per partition (assumed)",
    execute=execute,
    cycles=cycles,
    check=check,
    cost_assumed=True,
    cost_note="no documented formula: ceil(F/512) underlying instructions (the page), each a "
              "GpSimd start (~150 cycles) plus one cycle per index",
    source="https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/"
           "nki.isa.nc_n_gather.html",
    example="- nc_n_gather: {dst: picked, data: scores, indices: idx}",
    nki=NkiApi("dst data indices"),
)
