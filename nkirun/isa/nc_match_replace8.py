"""nki.isa.nc_match_replace8 — replace the first occurrence of 8 values with imm (the nki.isa.nc_match_replace8 documentation).

Facts (the nki.isa.nc_match_replace8 documentation; the nki.isa.nc_match_replace8 documentation):
* data: up to 5-D, at most 16,384 elements per partition; vals: up to 3-D, exactly 8 per
  partition; same partitions; both in SBUF or PSUM; free dims are flattened for the search.
* dst gets data with the matches replaced by imm (a float32 constant) and keeps data's shape;
  dst_idx (optional) gets the flattened index of each match and keeps vals' shape.
* "a mask is applied to the data tensor": masked-off data never matches and its dst
  elements are not written; a partition with nothing selected is not touched at all.
* cost: the page says min(MIN_II, N) engine cycles, N = data elements per partition; a min
  would cap every instruction at 64 cycles, so it is read as max(MIN_II, N).

Readings:
* the page's NumPy loop is followed literally: vals are taken in order j = 0..7, each
  replacing the first element that *currently* equals it; so duplicate vals take successive
  occurrences, and a val equal to imm may match an element an earlier val replaced. NKI 0.6
  documents reverse order (k = 7..0) instead (§1.13): a partition with duplicate vals gets a
  run-time warning (W137) because the hardware generation may differ.
* a val with no match is undefined behaviour on hardware: nkirun leaves data alone for it,
  writes 0 to its dst_idx slot (the page's loop) and warns at run time (W136).
* comparison is in float32: -0.0 matches 0.0, NaN never matches. dst_idx is uint32 in the
  page; another integer dtype receives the index saturated (W138 warns when it cannot hold
  every index).
"""
from __future__ import annotations

import numpy as np

from nkirun.hw import dtypes as dt
from nkirun.diagnostics import warning
from nkirun.isa.mask import active_rows, rows_mask
from nkirun.isa.common import flat, float32_scalar
from nkirun.isa.fast.match_replace import match_replace8
from nkirun.isa.spec import (MASK, SCALAR, TILE, Bound, InstructionDef, NkiApi, Param, common_tail,
                             out_dtype)

K, MAX_N = 8, 16384  # values per partition, data elements per partition (page 003)
MAX_DATA_DIMS, MAX_VALS_DIMS = 5, 3  # page 003
SHOW = 3  # partitions named in a run-time warning

PARAMS = (
    Param("dst", TILE, required=True, out=True,
          doc="tile receiving data with the matches replaced (data's shape; may be data itself)"),
    Param("data", TILE, required=True,
          doc="tile to search: up to 5-D, at most 16384 elements per partition"),
    Param("vals", TILE, required=True, doc="the 8 values per partition to replace (up to 3-D)"),
    Param("imm", SCALAR, required=True, doc="float32 constant written over each match"),
    Param("dst_idx", TILE, out=True, dtypes=dt.INT_NAMES,
          doc="optional integer tile (8 per partition) receiving the flattened match indices"),
    Param("mask", MASK, doc="predicate over data's indices (page 003): masked-off data never "
                            "matches and its dst element is not written"),
    *common_tail(mask=False),
)


def check(b: Bound):
    data, vals, dst, idx = b.tile("data"), b.tile("vals"), b.tile("dst"), b.tile("dst_idx")
    if len(data.shape) > MAX_DATA_DIMS:
        yield b.err("E132", f"data has {len(data.shape)} dimensions; at most {MAX_DATA_DIMS} "
                    "allowed", "data")
    if data.free_size > MAX_N:
        yield b.err("E131", f"data has {data.free_size} elements per partition; at most "
                    f"{MAX_N} allowed", "data", hint="split the free axis into chunks")
    if len(vals.shape) > MAX_VALS_DIMS:
        yield b.err("E133", f"vals has {len(vals.shape)} dimensions; at most {MAX_VALS_DIMS} "
                    "allowed", "vals")
    if vals.free_size != K:
        yield b.err("E130", f"vals must hold exactly 8 elements per partition; got "
                    f"{list(vals.shape)}", "vals", hint="e.g. the (P, 8) result of max8")
    yield from float32_scalar(b, "imm", "E139")  # page 003: "imm – float32 constant"
    if dst.shape != data.shape:
        yield b.err("E134", f"dst {list(dst.shape)} must have data's shape {list(data.shape)}",
                    "dst", hint="write into data itself for an in-place replace")
    if idx is not None:
        if idx.free_size != vals.free_size:
            yield b.err("E135", f"dst_idx holds {idx.free_size} elements per partition; it "
                        f"needs one per value of vals ({vals.free_size})", "dst_idx",
                        hint="e.g. a (P, 8) uint32 tile")
        top = int(np.iinfo(idx.dtype.np_type).max)
        if top < data.free_size - 1:
            yield b.warn("W138", f"dst_idx is {idx.dtype.name} (at most {top}) but indices go "
                         f"up to {data.free_size - 1}: larger ones saturate", "dst_idx",
                         hint="declare dst_idx as uint32 (the page's index type)")


def definition(x: np.ndarray, v: np.ndarray, imm: np.float32,
               valid: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The page's loop, the definition `fast.match_replace.match_replace8` must equal:
    per partition, each of the 8 vals in order replaces the first element of `x` that
    currently equals it (x: (P, N) float32, modified in place). Returns (indices, found)."""
    indices, found = np.zeros(v.shape, np.int64), np.zeros(v.shape, bool)
    for p in range(x.shape[0]):
        for j in range(v.shape[1]):
            hits = np.flatnonzero((x[p] == v[p, j]) & (True if valid is None else valid[p]))
            if hits.size:
                indices[p, j], found[p, j] = hits[0], True
                x[p, hits[0]] = imm
    return indices, found


def _warn_missing(b: Bound, m, v: np.ndarray, missing: np.ndarray) -> None:
    ps = np.flatnonzero(missing.any(axis=1))
    if ps.size == 0:
        return
    shown = ", ".join(f"partition {p}: {float(v[p, np.flatnonzero(missing[p])[0]]):g}"
                      for p in ps[:SHOW])
    more = f" (and {ps.size - SHOW} more partitions)" if ps.size > SHOW else ""
    m.warnings.append(warning(
        "W136", f"{b.op}: vals not found in data, undefined behaviour on hardware: {shown}"
        f"{more}; nkirun leaves data alone and writes index 0 for them", b.loc("vals"), b.index,
        hint="pass values that occur in data, e.g. the result of max8 on the same data"))


def _warn_duplicates(b: Bound, m, v: np.ndarray, rows: np.ndarray | None) -> None:
    s = np.sort(v, axis=1)
    dup = s[:, 1:] == s[:, :-1]  # NaN != NaN: NaN vals never count as duplicates
    if rows is not None:
        dup &= rows[:, None]
    ps = np.flatnonzero(dup.any(axis=1))
    if ps.size == 0:
        return
    shown = ", ".join(f"partition {p}: {float(s[p, 1:][dup[p]][0]):g}" for p in ps[:SHOW])
    more = f" (and {ps.size - SHOW} more partitions)" if ps.size > SHOW else ""
    m.warnings.append(warning(
        "W137", f"{b.op}: vals hold duplicates ({shown}{more}); nkirun gives them successive "
        "occurrences in vals order (the nki.isa.nc_match_replace8 documentation), NKI 0.6 documents reverse order",
        b.loc("vals"), b.index, hint="the hardware generation may assign the indices differently"))


def _data_in_dst(b: Bound, m) -> np.ndarray | None:
    """A float32 dst's own storage, as a C-contiguous (P, N) array now holding data, so the
    replace runs there; None when dst needs a cast or is not contiguous.

    This saves a full pass over the data (a working copy, then copying it to dst): the
    instruction reads data twice (two candidate compares) and copies it once, or not at all
    when dst is data itself (docs/performance.md). Masked-off elements of dst keep their
    old values there, and never match (match_replace8's `valid`).
    """
    dst = b["dst"]
    if dst.dtype.name != "float32" or out_dtype(b) not in (None, dst.dtype):
        return None
    out = m.view(dst)
    if not out.flags.c_contiguous:
        return None
    src = m.read(b["data"])
    same = src.ctypes.data == out.ctypes.data and src.strides == out.strides  # in place
    if not same:
        m.write(dst, src, None, b.mask)
    return out.reshape(out.shape[0], -1)


def execute(b: Bound, m) -> None:
    dst, idx_t = b["dst"], b.tile("dst_idx")
    rows = active_rows(b.mask)  # partitions the mask leaves something in
    v = np.array(flat(m.read_f32(b["vals"], rows)), dtype=np.float32)  # (a copy: dst may be vals)
    valid = None if b.mask is None else flat(b.mask)
    x = _data_in_dst(b, m)
    if x is None:  # a working copy, written (cast) to dst afterwards
        x = np.ascontiguousarray(flat(m.read_f32(b["data"])))
        if np.may_share_memory(x, m.buffers[b["data"].decl.name]):
            x = x.copy()  # data itself stays unchanged
    indices, found = match_replace8(x, v, np.float32(b["imm"]), valid)
    _warn_missing(b, m, v, ~found if rows is None else ~found & rows[:, None])
    _warn_duplicates(b, m, v, rows)
    if not np.may_share_memory(x, m.buffers[dst.decl.name]):
        m.write(dst, x.reshape(dst.shape), out_dtype(b), b.mask)
    if idx_t is not None:
        m.write(idx_t, indices.astype(np.uint32).reshape(idx_t.shape), None,
                rows_mask(b.mask, idx_t.shape))


def cycles(b: Bound, target) -> int:
    return max(target.min_ii, b["data"].free_size)


SPEC = InstructionDef(
    name="nc_match_replace8",
    engine="vector",
    params=PARAMS,
    summary="replace the first occurrence of each of 8 values with imm; optional indices",
    semantics=(
        "Flattens data's free dimensions; for each partition takes the 8 values of vals in "
        "order and replaces the first element that currently equals each one (compared as "
        "float32) with imm, so a value repeated in vals takes successive occurrences. dst "
        "receives the result in data's shape, cast to its dtype; dst_idx the flattened index "
        "of each match (0 for a value that is missing, which is undefined on hardware and "
        "warned about). With a mask (over data's indices) masked-off data never matches."),
    cost_formula="max(MIN_II, N) Vector cycles, N = elements per partition of data",
    execute=execute,
    cycles=cycles,
    check=check,
    mask_on="data", direct_storage=True,
    cost_note="the page writes min(MIN_II, N), read as a typo for max(MIN_II, N) "
              "(the nki.isa.nc_match_replace8 documentation)",
    source="the nki.isa.nc_match_replace8 documentation; the nki.isa.nc_match_replace8 documentation",
    example="""\
- max8: {dst: top, src: t}
- nc_match_replace8: {dst: t, data: t, vals: top, imm: -inf, dst_idx: idx}""",
    nki=NkiApi("dst data vals imm dst_idx=None"),
)
