"""nki.isa.nonzero_with_count — GpSimd engine: positions of the nonzero elements, and their count.

Facts (NKI 0.6 API page, https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/
generated/nki.isa.nonzero_with_count.html, with its "Behavior" pseudo-code):
* for one partition of T elements the output has T + 1: the positions (0-based, plus
  index_offset) of the nonzero elements in order, then padding_val up to T, then the count.
* each of the 8 GpSimd cores reads and writes only its 0-th partition: partitions 0, 16, ...,
  112; every other dst partition (count slot included) is left unmodified.
* NeuronCore-v3 and newer; src in SBUF, float32 or int32; dst in SBUF, int32, with exactly one
  more element per partition than src and the same partition count; index_offset and
  padding_val are int32.

Readings:
* "Partition 16c" is the physical partition: a view row r is processed when its partition
  (the view's start + r) is a multiple of 16, and it is written to dst's row r. src and dst
  must therefore start at the same partition modulo 16, each with step 1 (E463).
* Free dims are flattened (T = elements per partition). -0.0 counts as zero; NaN as nonzero.
* Cost (no documented formula, an assumption): 150 + T GpSimd cycles (a GpSimd start and one
  pass over the elements, like iota).
"""
from __future__ import annotations

import numpy as np

from nkirun.isa.common import INT32_MAX, INT32_MIN, flat
from nkirun.isa.dma_rules import core_version, target_name
from nkirun.isa.spec import INT, TILE, Bound, InstructionDef, Param

CORE_PARTITIONS = 16
SBUF = frozenset({"sbuf"})

PARAMS = (
    Param("dst", TILE, required=True, out=True, buffers=SBUF, dtypes=frozenset({"int32"}),
          doc="int32 SBUF tile with one more element per partition than src"),
    Param("src", TILE, required=True, buffers=SBUF, dtypes=frozenset({"float32", "int32"}),
          doc="float32/int32 SBUF tile; only partitions 0, 16, ..., 112 are read"),
    Param("index_offset", INT, default=0, doc="int32 added to every found position"),
    Param("padding_val", INT, default=-1, doc="int32 written after the found positions"),
)


def check(b: Bound):
    src, dst = b.tile("src"), b.tile("dst")
    if core_version(b) < 3:
        yield b.err("E460", f"nonzero_with_count needs NeuronCore-v3 or newer; {target_name(b)} "
                    f"is NeuronCore-v{core_version(b)}", None, hint="target: trn2")
    if dst.free_size != src.free_size + 1:
        yield b.err("E461", f"dst holds {dst.free_size} elements per partition; it must hold "
                    f"src's {src.free_size} + 1 (the count comes last)", "dst")
    for key in ("index_offset", "padding_val"):
        if not INT32_MIN <= b[key] <= INT32_MAX:
            yield b.err("E462", f"{key} {b[key]} is not an int32", key,
                        hint=f"allowed: {INT32_MIN}..{INT32_MAX}")
    steps = (src.part_step, dst.part_step)
    if (src.part_start - dst.part_start) % CORE_PARTITIONS or \
            any(s != 1 for s, r in zip(steps, (src, dst)) if r.partitions > 1):
        yield b.err("E463", f"src starts at partition {src.part_start} and dst at "
                    f"{dst.part_start}: each GpSimd core reads and writes its own 0-th partition, "
                    "so they must start at the same partition modulo 16 (step 1)", "dst",
                    hint="use views that start on the same 16-partition boundary")


def active_rows(r) -> np.ndarray:
    """View rows that sit on a GpSimd core's 0-th partition (a multiple of 16)."""
    rows = np.arange(r.partitions)
    return rows[(r.part_start + rows * r.part_step) % CORE_PARTITIONS == 0]


def nonzero_rows(x: np.ndarray, offset: int, pad: int) -> np.ndarray:
    """(R, T) -> (R, T + 1) int64: nonzero positions + offset, padding, then the count."""
    nz = x != 0
    count = nz.sum(axis=1)
    order = np.argsort(~nz, axis=1, kind="stable")  # nonzero positions first, in order
    t = x.shape[1]
    body = np.where(np.arange(t) < count[:, None], order + offset, pad)
    return np.concatenate([body, count[:, None]], axis=1)


def execute(b: Bound, m) -> None:
    src, dst = b["src"], b["dst"]
    rows = active_rows(src)
    if rows.size == 0:
        return
    keep = np.zeros(src.partitions, bool)
    keep[rows] = True
    x = flat(m.read(src, rows=keep))[rows]
    out = np.zeros((dst.partitions, dst.free_size), np.int64)
    out[rows] = nonzero_rows(x, b["index_offset"], b["padding_val"])
    where = np.broadcast_to(keep.reshape((-1,) + (1,) * (len(dst.shape) - 1)), dst.shape)
    m.write(dst, out.reshape(dst.shape), None, where)


def cycles(b: Bound, target) -> int:
    return target.gpsimd_start + b["src"].free_size


SPEC = InstructionDef(
    name="nonzero_with_count",
    engine="gpsimd",
    params=PARAMS,
    summary="positions of nonzero elements, padding, then their count (partitions 0, 16, ...)",
    semantics=(
        "For each partition whose index is a multiple of 16 (one per GpSimd core): writes the "
        "positions of src's nonzero elements in order plus index_offset, then padding_val up "
        "to src's T elements, then the count, into dst's T + 1 elements. Every other dst "
        "partition is left unmodified. NeuronCore-v3 and newer."),
    cost_formula="150 + T GpSimd cycles, T = src elements per partition (assumed)",
    execute=execute,
    cycles=cycles,
    check=check,
    cost_assumed=True,
    cost_note="no documented formula: a GpSimd start plus one pass over the elements",
    source="https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/"
           "nki.isa.nonzero_with_count.html",
    example="- nonzero_with_count: {dst: found, src: flags, index_offset: 0, padding_val: -1}",
)
