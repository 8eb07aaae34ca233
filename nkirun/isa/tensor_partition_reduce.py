"""nki.isa.tensor_partition_reduce — GpSimd engine.

dst[0, ...] = op over the partitions p of data[p, ...]: a reduction across the partition
axis (the SDK example: `np.sum(a, axis=0, keepdims=True)`), with op add, average, max,
bitwise_or or bitwise_and.

Readings (the page gives only the signature and the operator list):
* dst has one partition and data's elements per partition.
* Arithmetic operators run in float32, folding the partitions in order 0, 1, ..., P-1
  (add: ((x0 + x1) + x2) + ...); average is that sum divided by P in float32, then cast.
* bitwise_or/bitwise_and act on the integer bits: data and dst must be integer tiles.
* GpSimd cannot access PSUM (the NKI architecture guide), so data and dst are SBUF tiles.
* cost: the page gives none. Assumed: GPSIMD_START + 2*N GpSimd cycles (each of the 8
  cores folds its 16 partitions at 16 lanes per cycle, ~N cycles, then the 8 partial rows
  are combined, ~N more).
"""
from __future__ import annotations

import numpy as np

from nkirun.hw import alu as ops
from nkirun.isa.common import flat
from nkirun.isa.nki_api import across_partitions
from nkirun.isa.spec import OP, TILE, Bound, InstructionDef, NkiApi, Param, common_tail, out_dtype

URL = ("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/"
       "nki.isa.tensor_partition_reduce.html")
REDUCE_OPS = ("add", "average", "maximum", "bitwise_or", "bitwise_and")
FOLDS = {"add": np.add, "average": np.add, "maximum": np.maximum,
         "bitwise_or": np.bitwise_or, "bitwise_and": np.bitwise_and}

PARAMS = (
    Param("dst", TILE, required=True, out=True,
          doc="SBUF tile with 1 partition and data's elements per partition"),
    Param("op", OP, required=True, choices=REDUCE_OPS,
          doc="add, average, max, bitwise_or or bitwise_and"),
    Param("data", TILE, required=True, doc="SBUF input tile (GpSimd cannot reach PSUM: E044)"),
    *common_tail(),
)


def check(b: Bound):
    dst, data = b.tile("dst"), b.tile("data")
    if dst is not None and data is not None and (
            dst.partitions != 1 or dst.free_size != data.free_size):
        yield b.err("E360", f"dst {list(dst.shape)} must have 1 partition and data's "
                    f"{data.free_size} elements per partition", "dst",
                    hint=f"declare dst as [1, ...] with {data.free_size} elements")
    if ops.OPS[b["op"]].kind == ops.BITWISE:
        for key, t in (("data", data), ("dst", dst)):
            if t is not None and t.dtype.is_float:
                yield b.err("E361", f"{b['op']} needs integer tiles; `{key}` is "
                            f"{t.dtype.name}", key,
                            hint="bitwise operators act on integer bits (the NKI ALU operator table)")


def execute(b: Bound, m) -> None:
    op, data = b["op"], b["data"]
    bitwise = ops.OPS[op].kind == ops.BITWISE
    x = np.ascontiguousarray(flat(m.read(data) if bitwise else m.read_f32(data)))
    with np.errstate(all="ignore"):
        # a reduction over the slow axis of a C-contiguous array adds whole rows in order:
        # partition 0, 1, ..., P-1 (NumPy's pairwise summation applies to the fast axis only)
        y = FOLDS[op].reduce(x, axis=0, keepdims=True)
        if op == "average":
            y = y / np.float32(x.shape[0])
    m.write(b["dst"], y.reshape(b["dst"].shape), None if bitwise else out_dtype(b), b.mask)


def cycles(b: Bound, target) -> int:
    return target.gpsimd_start + 2 * b["data"].free_size


SPEC = InstructionDef(
    name="tensor_partition_reduce",
    engine="gpsimd",
    params=PARAMS,
    summary="reduce across the partitions of data into one partition (GpSimd)",
    semantics=(
        "dst[0, i] = op over p of data[p, i], for every element i of a partition: add, "
        "average (the sum divided by the partition count), max in float32, folding the "
        "partitions in order; bitwise_or/bitwise_and on the integer bits. dst has one "
        "partition and data's elements per partition; both live in SBUF (GpSimd cannot "
        "reach PSUM)."),
    cost_formula="GPSIMD_START + 2*N GpSimd cycles (N = elements per partition of data; "
                 "assumed)",
    execute=execute,
    cycles=cycles,
    check=check,
    same_partitions=(),  # dst has 1 partition: E360 checks it
    cost_assumed=True,
    cost_note="the page gives no formula: 8 cores fold 16 partitions each, then combine",
    source=f"{URL}; example golden: the SDK's test_nki_isa_partition_reduce.py",
    example="""\
- tensor_partition_reduce:
    dst: colsum
    op: add
    data: x""",
    nki=NkiApi("dst op data", result=across_partitions),
)
