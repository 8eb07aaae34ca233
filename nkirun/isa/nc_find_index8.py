"""nki.isa.nc_find_index8 — the first index of each of 8 values in every partition.

Facts (the nki.isa.nc_find_index8 documentation; the nki.isa.nc_find_index8 API page):
* data: up to 5-D, 8..16,384 elements per partition; vals: exactly 8 per partition;
  dst: (P, 8) uint16 or uint32 (default uint32); free dims of data are flattened.
* NKI 0.6 (normative, the simulator was fixed to match the hardware): a value with no
  match gives all-ones (0xFFFFFFFF / 0xFFFF); when a value occurs several times in `vals`,
  the copies take successive matches in ascending order (the k-th copy gets the k-th
  match); copies beyond the number of matches are unmatched.
* "a mask is applied only to the data tensor": masked-off data elements never match, and a
  partition whose data is fully masked off keeps its dst row.
* cost: "N engine cycles", N = data elements per partition; the engine is not named
  (§8) — Vector is assumed, like its sibling nc_match_replace8.
Values are compared as float32 (-0.0 matches 0.0; NaN never matches).
"""
from __future__ import annotations

import numpy as np

from nkirun.hw import dtypes as dt
from nkirun.isa.mask import rows_mask
from nkirun.isa.common import flat
from nkirun.isa.nki_api import per_partition
from nkirun.isa.spec import DTYPE, MASK, TILE, Bound, InstructionDef, NkiApi, Param

INDEX_DTYPES = frozenset({"uint16", "uint32"})
MIN_N, MAX_N = 8, 16384

PARAMS = (
    Param("dst", TILE, required=True, out=True, dtypes=INDEX_DTYPES,
          doc="(P, 8) uint16/uint32 tile receiving the flattened indices"),
    Param("data", TILE, required=True, doc="tile to search (up to 5-D, 8..16384 per partition)"),
    Param("vals", TILE, required=True, doc="the 8 values per partition to look up"),
    Param("mask", MASK, doc="predicate over data's indices: masked-off data never matches"),
    Param("dtype", DTYPE, doc="uint16 or uint32: the index type before dst's own cast"),
)


def check(b: Bound):
    data, vals, dst = b.tile("data"), b.tile("vals"), b.tile("dst")
    if len(data.shape) > 5:
        yield b.err("E250", f"data has {len(data.shape)} dimensions; at most 5 allowed", "data")
    if not MIN_N <= data.free_size <= MAX_N:
        yield b.err("E250", f"data has {data.free_size} elements per partition; "
                    f"{MIN_N}..{MAX_N} allowed", "data", hint="split or pad the free axis")
    if len(vals.shape) > 3:
        yield b.err("E251", f"vals has {len(vals.shape)} dimensions; at most 3 allowed", "vals")
    if vals.free_size != 8:
        yield b.err("E251", f"vals must hold exactly 8 elements per partition (got "
                    f"{vals.free_size})", "vals", hint="e.g. the (P, 8) result of max8")
    if dst.free_size != 8:
        yield b.err("E252", f"dst must hold 8 indices per partition, shape (P, 8) (got "
                    f"{list(dst.shape)})", "dst")
    d = b.get("dtype")
    if d is not None and d.name not in INDEX_DTYPES:
        yield b.err("E253", f"dtype must be uint16 or uint32 (got {d.name})", "dtype")


def find_index8(data: np.ndarray, vals: np.ndarray, all_ones: int,
                valid: np.ndarray | None = None) -> np.ndarray:
    """(P, 8) int64 first-match indices, duplicates of a value taking successive matches.

    data (P, N) / vals (P, 8) float32; `valid` (P, N) bool hides masked-off data.
    """
    eq = data[:, None, :] == vals[:, :, None]  # (P, 8, N)
    if valid is not None:
        eq &= valid[:, None, :]
    # how many earlier slots of this partition hold the same value: this slot takes match #k
    same = vals[:, :, None] == vals[:, None, :]  # (P, 8, 8)
    rank = np.tril(same, k=-1).sum(axis=2)  # (P, 8)
    count = np.cumsum(eq, axis=2, dtype=np.int32)  # matches up to and including j
    hit = eq & (count == (rank + 1)[:, :, None])
    idx = np.argmax(hit, axis=2)
    return np.where(hit.any(axis=2), idx, all_ones)


def execute(b: Bound, m) -> None:
    dst = b["dst"]
    idx_type = b.get("dtype") or dt.DTYPES["uint32"]
    all_ones = int(np.iinfo(idx_type.np_type).max)
    data = flat(m.read_f32(b["data"]))
    vals = flat(m.read_f32(b["vals"]))
    valid = None if b.mask is None else flat(b.mask)
    out = find_index8(data, vals, all_ones, valid)
    m.write(dst, out.astype(idx_type.np_type).reshape(dst.shape), idx_type,
            rows_mask(b.mask, dst.shape))


def cycles(b: Bound, target) -> int:
    return b["data"].free_size  # "N engine cycles" (API page)


SPEC = InstructionDef(
    name="nc_find_index8",
    engine="vector",
    params=PARAMS,
    summary="indices of the first occurrence of 8 values in each partition",
    semantics=(
        "For each partition and each of the 8 values in vals (in order), writes to dst the "
        "flattened free index of its first occurrence in data, compared as float32. A value "
        "repeated in vals takes the next match each time (ascending); a value with no "
        "(remaining) match gives all-ones (0xFFFFFFFF for uint32, 0xFFFF for uint16), as NKI "
        "0.6 specifies. A mask is applied to data: masked-off elements never match."),
    cost_formula="N Vector cycles, N = elements per partition of data",
    execute=execute,
    cycles=cycles,
    check=check,
    mask_on="data",
    cost_note="the page says 'N engine cycles' without naming the engine; Vector assumed",
    source="the nki.isa.nc_find_index8 documentation; nc_find_index8 API page",
    example="""\
- max8: {dst: top, src: t}
- nc_find_index8: {dst: idx, data: t, vals: top}""",
    nki=NkiApi("dst data vals", result=per_partition(8), result_dtype="uint32"),
)

