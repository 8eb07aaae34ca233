"""nki.isa.nc_stream_shuffle — Vector engine: move whole partitions inside 32-partition quadrants.

Facts (the NKI 0.6 API page, https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/
generated/nki.isa.nc_stream_shuffle.html, and the Trainium arch guide's "Cross-partition data
movement"):
* shuffle_mask is a list of 32 ints: dst partition i of every quadrant copies src partition
  shuffle_mask[i] of the same quadrant; 255 leaves dst partition i unmodified (NKI 0.4.0 fixed
  the simulator to preserve it). The same mask applies to every quadrant.
* src and dst may be in SBUF or PSUM, may be the same tile (in place), must have the same dtype
  and the same elements per partition; their partition counts may differ (one src partition
  broadcast to 32 dst partitions is the documented example).
* start partitions: with num_active = ceil(max(src, dst partitions) / 32) * 32, a start must be
  0 when num_active is 96/128, 0 or 64 when 64, and 0/32/64/96 when 32.
* cost [LEG, nki.isa.nc_stream_shuffle estimated cost]: max(MIN_II, N) Vector cycles.

Readings:
* Quadrants and mask positions count from each view's own first partition (the start rule
  puts that first partition on a quadrant boundary anyway).
* A dst partition whose mask entry names a src partition the src view does not have is a
  located error (E403), not undefined data.
* A view with a partition step other than 1 is refused with the start-partition rule (E402):
  the engine streams contiguous partitions.
* The copy is bit-exact (no float32 round trip): the dtypes are equal.
"""
from __future__ import annotations

import numpy as np

from nkirun.isa.spec import INT_LIST, TILE, Bound, InstructionDef, NkiApi, Param

QUADRANT = 32
KEEP = 255  # "output partition [i] will be unmodified"

PARAMS = (
    Param("dst", TILE, required=True, out=True, doc="destination tile (SBUF or PSUM)"),
    Param("src", TILE, required=True, doc="source tile (SBUF or PSUM); may be dst itself"),
    Param("shuffle_mask", INT_LIST, required=True,
          doc="32 ints: dst partition i of each quadrant copies src partition shuffle_mask[i] "
              "of that quadrant; 255 leaves it unmodified"),
)


def allowed_starts(num_active: int) -> tuple[int, ...]:
    return {32: (0, 32, 64, 96), 64: (0, 64)}.get(num_active, (0,))


def source_rows(mask, dst_partitions: int) -> np.ndarray:
    """(dst_partitions,) int64: the src row each dst row copies, -1 where the mask says 255."""
    m = np.asarray(mask, np.int64)
    r = np.arange(dst_partitions)
    pos = m[r % QUADRANT]
    return np.where(pos == KEEP, -1, (r // QUADRANT) * QUADRANT + pos)


def check(b: Bound):
    src, dst, mask = b.tile("src"), b.tile("dst"), b["shuffle_mask"]
    if len(mask) != QUADRANT:
        yield b.err("E400", f"shuffle_mask has {len(mask)} entries; it must have exactly 32 "
                    "(one per partition of a quadrant)", "shuffle_mask",
                    hint="e.g. [0] * 32 broadcasts partition 0 of each quadrant")
        return
    bad = [v for v in mask if not (0 <= v < QUADRANT or v == KEEP)]
    if bad:
        yield b.err("E401", f"shuffle_mask entry {bad[0]} is not a partition of a quadrant",
                    "shuffle_mask", hint="allowed: 0..31, or 255 to leave the dst partition "
                                         "unmodified")
        return
    if src.dtype != dst.dtype:
        yield b.err("E404", f"src is {src.dtype.name} and dst is {dst.dtype.name}; "
                    "nc_stream_shuffle does not cast", "dst",
                    hint="give dst the dtype of src")
    if src.free_size != dst.free_size:
        yield b.err("E405", f"src has {src.free_size} elements per partition and dst "
                    f"{dst.free_size}; they must be equal", "dst")
    active = -(-max(src.partitions, dst.partitions) // QUADRANT) * QUADRANT
    starts = allowed_starts(active)
    for key, r in (("src", src), ("dst", dst)):
        if r.part_start not in starts or (r.part_step != 1 and r.partitions > 1):
            step = f" with step {r.part_step}" if r.part_step != 1 else ""
            yield b.err("E402", f"{key} starts at partition {r.part_start}{step}; with "
                        f"{active} active partitions it must start at "
                        f"{' or '.join(map(str, starts))}", key,
                        hint="num_active_partitions = ceil(max(src, dst partitions) / 32) * 32; "
                             "a view of contiguous partitions (step 1)")
    rows = source_rows(mask, dst.partitions)
    over = np.flatnonzero(rows >= src.partitions)
    if over.size:
        r = int(over[0])
        yield b.err("E403", f"dst partition {r} copies src partition {int(rows[r])}, but src "
                    f"has {src.partitions} partitions", "shuffle_mask",
                    hint="each quadrant of dst reads the same quadrant of src: give src as many "
                         "quadrants as dst, or set those mask entries to 255")


def execute(b: Bound, m) -> None:
    src, dst = b["src"], b["dst"]
    rows = source_rows(b["shuffle_mask"], dst.partitions)
    keep = rows >= 0
    if not keep.any():
        return
    needed = np.zeros(src.partitions, bool)  # the src partitions actually copied
    needed[rows[keep]] = True
    values = m.read(src, rows=needed)
    values = values.reshape(src.partitions, -1)
    if keep.all():
        out = m.direct_view(dst, (dst.partitions, dst.free_size))
        if out is not None and not np.may_share_memory(out, values):  # gather straight in
            np.take(values, rows, axis=0, out=out, mode="clip")  # (checked: no buffering)
            m.mark_written(dst)
            return
    values = values[np.where(keep, rows, rows[keep][0])]
    where = np.broadcast_to(keep.reshape((-1,) + (1,) * (len(dst.shape) - 1)), dst.shape)
    m.write(dst, values.reshape(dst.shape), None, None if keep.all() else where)


def cycles(b: Bound, target) -> int:
    return max(target.min_ii, b["src"].free_size)


SPEC = InstructionDef(
    name="nc_stream_shuffle",
    engine="vector",
    params=PARAMS,
    summary="copy partitions inside each 32-partition quadrant by a 32-entry mask",
    semantics=(
        "For every dst partition r (quadrant q = r // 32, position i = r % 32): if "
        "shuffle_mask[i] is 255 the partition is left unmodified, otherwise it receives a "
        "bit-exact copy of src partition q*32 + shuffle_mask[i] (partitions counted from each "
        "view's first). The same mask serves every quadrant; src may be dst (in place)."),
    cost_formula="max(MIN_II, N) Vector cycles, N = elements per partition",
    execute=execute,
    cycles=cycles,
    check=check,
    same_partitions=(),  # src and dst partition counts may differ (broadcast)
    source="https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/"
           "nki.isa.nc_stream_shuffle.html",
    example="""\
- nc_stream_shuffle:
    dst: b
    src: a[0:1, :]
    shuffle_mask: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                   0, 0, 0, 0, 0, 0]""",
    nki=NkiApi("dst src shuffle_mask"),
)
