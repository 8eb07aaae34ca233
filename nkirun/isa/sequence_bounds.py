"""nki.isa.sequence_bounds — GpSimd engine: the [start, end) bounds of each element's segment.

Facts (NKI 0.6 API page, https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/
generated/nki.isa.sequence_bounds.html, with its NumPy equivalent and example):
* segment_ids is one partition of n ids; dst is (1, 2, n): for each element the start index
  (dst[0, 0, i]) and the end index (dst[0, 1, i]) of the segment it belongs to.
* a segment is a run of equal consecutive ids: start = the index of the run's first element,
  end = one past its last (the example: ids [0, 1, 1, 2, 2, 2, 0, 3, 3] give starts
  [9, 1, 1, 3, 3, 3, 9, 7, 7] and ends [-1, 3, 3, 6, 6, 6, -1, 9, 9]).
* id 0 is padding: start n, end -1. Ids must be non-negative integers.
* segment_ids and dst are float32 or int32; the partition dimension must be 1.

Readings:
* segment_ids' free dims are flattened (n = its elements); dst must hold 2n elements, read as
  [2, n] after flattening (the documented (1, 2, n) shape, or any shape of that size).
* A negative or fractional id (or NaN) is a run-time error (E452).
* Cost (no documented formula, an assumption): one GpSimd start (~150 cycles) plus a forward
  and a backward pass over the n ids: 150 + 2n GpSimd cycles.
"""
from __future__ import annotations

import numpy as np

from nkirun.diagnostics import RunError
from nkirun.isa.common import flat
from nkirun.isa.spec import TILE, Bound, InstructionDef, NkiApi, Param

ID_DTYPES = frozenset({"float32", "int32"})
SBUF = frozenset({"sbuf"})

PARAMS = (
    Param("dst", TILE, required=True, out=True, buffers=SBUF, dtypes=ID_DTYPES,
          doc="(1, 2, n) float32/int32: start indices, then end indices"),
    Param("segment_ids", TILE, required=True, buffers=SBUF, dtypes=ID_DTYPES,
          doc="(1, n) float32/int32 segment ids; 0 marks padding"),
)


def check(b: Bound):
    ids, dst = b.tile("segment_ids"), b.tile("dst")
    if ids.partitions != 1:
        yield b.err("E450", f"segment_ids has {ids.partitions} partitions; sequence_bounds "
                    "works on one partition", "segment_ids",
                    hint="use a view of one partition, e.g. ids[0:1, :]")
    if dst.free_size != 2 * ids.free_size:
        yield b.err("E451", f"dst holds {dst.free_size} elements per partition; it must hold "
                    f"2 x {ids.free_size} (start and end for each id), e.g. shape "
                    f"(1, 2, {ids.free_size})", "dst")


def bounds(ids: np.ndarray) -> np.ndarray:
    """(2, n) int64 [start, end) of each element's run of equal ids; (n, -1) for id 0."""
    n = ids.size
    change = np.empty(n, bool)
    change[:1] = True
    np.not_equal(ids[1:], ids[:-1], out=change[1:])
    run = np.cumsum(change) - 1
    starts = np.flatnonzero(change)
    ends = np.append(starts[1:], n)
    pad = ids == 0
    return np.stack([np.where(pad, n, starts[run]), np.where(pad, -1, ends[run])])


def execute(b: Bound, m) -> None:
    dst = b["dst"]
    ids = flat(m.read(b["segment_ids"]))[0]
    bad = ids < 0 if ids.dtype.kind != "f" else ~((ids >= 0) & (ids == np.floor(ids)))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise RunError(b.err("E452", f"segment_ids[0, {i}] = {ids[i]} is not a non-negative "
                             "integer; segment ids must be (0 marks padding)", "segment_ids"))
    # values lie in [-1, n]: exact in int32 and (n < 2^24) in float32, so cast here
    m.write(dst, bounds(ids).astype(dst.dtype.np_type).reshape(dst.shape))


def cycles(b: Bound, target) -> int:
    return target.gpsimd_start + 2 * b["segment_ids"].free_size


def _bounds_shape(values, first):
    """The pre-0.2 result (NkiApi.result): (1, 2, n) starts and ends for (1, n) ids."""
    return (first.shape[0], 2) + tuple(first.shape[1:]), "sbuf"


SPEC = InstructionDef(
    name="sequence_bounds",
    engine="gpsimd",
    params=PARAMS,
    summary="start and end index of the segment (run of equal ids) of every element",
    semantics=(
        "For each element i of the one-partition segment_ids (n elements): dst[0, 0, i] is "
        "the index of the first element of the run of equal ids containing i and dst[0, 1, "
        "i] one past its last; padding (id 0) gets start n and end -1. Written in dst's "
        "dtype (float32 or int32)."),
    cost_formula="150 + 2n GpSimd cycles, n = number of ids (assumed)",
    execute=execute,
    cycles=cycles,
    check=check,
    cost_assumed=True,
    cost_note="no documented formula: a GpSimd start plus a forward and a backward pass",
    source="https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/"
           "nki.isa.sequence_bounds.html",
    example="- sequence_bounds: {dst: bounds, segment_ids: ids}",
    nki=NkiApi("dst segment_ids", result=_bounds_shape),
)
