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

import dataclasses

import numpy as np

from nkirun.isa.common import INT32_MAX, INT32_MIN, flat
from nkirun.isa.dma_rules import core_version, target_name
from nkirun.isa.spec import INT, TILE, Bound, InstructionDef, NkiApi, Param

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
    """(R, T) -> (R, T + 1) ints: nonzero positions + offset, padding, then the count (int32
    unless position + offset can leave int32; the write saturates then)."""
    r, t = x.shape
    nz = x != 0
    count = np.count_nonzero(nz, axis=1)
    at = np.flatnonzero(nz)  # row-major: each row's positions ascending
    row = np.repeat(np.arange(r), count)
    first = np.cumsum(count) - count  # index in `at` of each row's first nonzero
    # the k-th nonzero of row i (at[first[i] + k]) goes to flat slot i*(t+1) + k
    kind = np.int32 if INT32_MIN <= offset and offset + t <= INT32_MAX else np.int64
    out = np.full(r * (t + 1), pad, kind)
    out[np.arange(at.size) + (np.arange(r) * (t + 1) - first)[row]] = \
        at - (np.arange(r) * t)[row] + offset
    out = out.reshape(r, t + 1)
    out[:, -1] = count
    return out


def core_rows(r, rows: np.ndarray):
    """The view of r's rows `rows` (every 16th, from rows[0]): only they are read/written."""
    first, count = int(rows[0]), rows.size
    start = r.part_start + first * r.part_step
    step = CORE_PARTITIONS * r.part_step if count > 1 else 1
    index = (slice(start, start + (count - 1) * step + 1, step),) + tuple(r.np_index[1:])
    box = ((start, count, step),) + tuple(r.box[1:])
    return dataclasses.replace(r, np_index=index, shape=(count,) + tuple(r.shape[1:]),
                               part_start=start, part_step=step, box=box)


def plain(r) -> bool:
    """A basic-index view whose partition rows core_rows can pick (not an access pattern)."""
    return getattr(r, "ap", None) is None and isinstance(r.np_index[0], slice)


def execute(b: Bound, m) -> None:
    src, dst = b["src"], b["dst"]
    rows = active_rows(src)
    if rows.size == 0:
        return
    offset, pad = b["index_offset"], b["padding_val"]
    if plain(src) and plain(dst):  # read and write only the cores' rows
        sub_src, sub_dst = core_rows(src, rows), core_rows(dst, rows)
        out = nonzero_rows(flat(m.read(sub_src)), offset, pad)
        m.write(sub_dst, out.reshape(sub_dst.shape))
        return
    keep = np.zeros(src.partitions, bool)
    keep[rows] = True
    full = np.zeros((dst.partitions, dst.free_size), np.int64)
    full[rows] = nonzero_rows(flat(m.read(src, rows=keep))[rows], offset, pad)
    where = np.broadcast_to(keep.reshape((-1,) + (1,) * (len(dst.shape) - 1)), dst.shape)
    m.write(dst, full.reshape(dst.shape), None, where)


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
    nki=NkiApi("dst src index_offset=0 padding_val=-1"),
)
