"""nki.isa.local_gather — GpSimd engine: each of the 8 cores gathers for its 16 partitions.

Facts (NKI 0.6 API page, https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/
generated/nki.isa.local_gather.html, with its NumPy example; NKI 0.6 release notes):
* GpSimd core c serves partitions 16c..16c+15. It reads its 16-partition slice of `index`
  and flattens it partition dimension first (column-major), keeps the first
  num_valid_indices (default: all, index.size / (index.shape[0] / 16)), and gathers with
  them; num_elem_per_idx contiguous elements are read per index.
* the page's NumPy equivalent: every partition of core c gets, for each valid index j in
  order, the elements [idx_j, idx_j + num_elem_per_idx) of its own flattened src_buffer
  partition (the example passes element offsets, index * num_elem_per_idx).
* uint16 indices; no casting (dst has src_buffer's dtype); src_buffer and index have the same
  partition count, a multiple of 16; num_elem_per_idx in {1, 2, 4, 8, 16, 32}; at most 4096
  indices per core; out-of-bounds indices are undefined.
* NKI 0.6 known issue: num_elem_per_idx is ignored unless num_valid_indices *
  num_elem_per_idx == dst.size / dst.shape[0].
* cost [LEG]: 150 + (num_valid_indices * num_elem_per_idx) / C GpSimd cycles, C =
  ((28 + t*k) / (t*k)) / min(4 / dtype_size, k), t = 4, k = num_elem_per_idx.

Readings:
* dst must hold exactly num_valid_indices * num_elem_per_idx elements per partition (E414):
  the only size for which NKI 0.6 honours num_elem_per_idx.
* An index whose run [idx, idx + k) leaves src_buffer's partition is a run-time error (E416)
  rather than undefined data.
* All operands in SBUF (GpSimd cannot access PSUM).
"""
from __future__ import annotations

import math

import numpy as np

from nkirun.diagnostics import RunError
from nkirun.isa.common import flat, gather_into
from nkirun.isa.spec import INT, TILE, Bound, InstructionDef, NkiApi, Param

CORE_PARTITIONS = 16
ELEMS_PER_IDX = (1, 2, 4, 8, 16, 32)
MAX_INDICES_PER_CORE = 4096
SBUF = frozenset({"sbuf"})

PARAMS = (
    Param("dst", TILE, required=True, out=True, buffers=SBUF,
          doc="SBUF tile: src_buffer's dtype, num_valid_indices * num_elem_per_idx elements "
              "per partition"),
    Param("src_buffer", TILE, required=True, buffers=SBUF,
          doc="SBUF tile to gather from; partitions a multiple of 16"),
    Param("index", TILE, required=True, buffers=SBUF, dtypes=frozenset({"uint16"}),
          doc="uint16 element offsets; each core's 16 partitions are read column-major"),
    Param("num_elem_per_idx", INT, default=1,
          doc="contiguous elements per index: 1, 2, 4, 8, 16 or 32"),
    Param("num_valid_indices", INT,
          doc="indices used per core (default: all of the core's 16-partition slice)"),
)


def valid_count(b: Bound) -> int:
    n = b.get("num_valid_indices")
    return CORE_PARTITIONS * b["index"].free_size if n is None else n


def check(b: Bound):
    src, idx, dst = b.tile("src_buffer"), b.tile("index"), b.tile("dst")
    k, per_core = b["num_elem_per_idx"], CORE_PARTITIONS * idx.free_size
    if src.partitions % CORE_PARTITIONS:
        yield b.err("E410", f"src_buffer has {src.partitions} partitions; local_gather needs a "
                    "multiple of 16 (one GpSimd core per 16 partitions)", "src_buffer")
    if k not in ELEMS_PER_IDX:
        yield b.err("E411", f"num_elem_per_idx {k} is not allowed", "num_elem_per_idx",
                    hint="allowed: 1, 2, 4, 8, 16, 32")
        return
    n = valid_count(b)
    if not 1 <= n <= per_core:
        yield b.err("E412", f"num_valid_indices {n} must lie in 1..{per_core} (the indices in "
                    "one core's 16-partition slice of index)", "num_valid_indices")
        return
    if n > MAX_INDICES_PER_CORE:
        yield b.err("E413", f"{n} indices per core; at most {MAX_INDICES_PER_CORE} allowed",
                    "num_valid_indices" if b.get("num_valid_indices") else "index",
                    hint="split the gather, or pass num_valid_indices")
    if dst.free_size != n * k:
        yield b.err("E414", f"dst holds {dst.free_size} elements per partition; it must hold "
                    f"num_valid_indices x num_elem_per_idx = {n} x {k} = {n * k}", "dst",
                    hint="NKI 0.6 ignores num_elem_per_idx for any other dst size (known issue)")
    if dst.dtype != src.dtype:
        yield b.err("E415", f"dst is {dst.dtype.name} but src_buffer is {src.dtype.name}; "
                    "local_gather does not cast", "dst", hint="give dst src_buffer's dtype")


def core_indices(index: np.ndarray, n: int) -> np.ndarray:
    """(cores, n) int64: each core's 16-partition index slice flattened partition-first."""
    cores = index.shape[0] // CORE_PARTITIONS
    per_core = index.reshape(cores, CORE_PARTITIONS, -1).transpose(0, 2, 1)
    return per_core.reshape(cores, -1)[:, :n].astype(np.int64)


def execute(b: Bound, m) -> None:
    src, dst, k = b["src_buffer"], b["dst"], b["num_elem_per_idx"]
    idx = core_indices(flat(m.read(b["index"])), valid_count(b))
    f = src.free_size
    over = idx + k > f
    if over.any():
        c, j = map(int, np.argwhere(over)[0])
        raise RunError(b.err("E416", f"core {c} (partitions {16 * c}..{16 * c + 15}): index "
                             f"{j} = {int(idx[c, j])} reads elements up to {int(idx[c, j]) + k - 1}"
                             f", past src_buffer's {f} per partition (undefined on hardware)",
                             "index", hint=f"indices must satisfy index + {k} <= {f}"))
    pos = (idx[:, :, None] + np.arange(k)).reshape(idx.shape[0], 1, -1)  # (cores, 1, n*k)
    # every partition of a core uses its core's offsets; row p starts at p * F
    rows = np.arange(0, src.partitions * f, f).reshape(-1, CORE_PARTITIONS, 1)
    pos = (pos + rows).reshape(src.partitions, -1)
    gather_into(m, dst, m.read(src).reshape(-1), pos)


def cycles(b: Bound, target) -> int:
    k, t, size = b["num_elem_per_idx"], 4, b["src_buffer"].dtype.itemsize
    c = ((28 + t * k) / (t * k)) / min(4 / size, k)
    return target.gpsimd_start + math.ceil(valid_count(b) * k / c)


SPEC = InstructionDef(
    name="local_gather",
    engine="gpsimd",
    params=PARAMS,
    summary="each GpSimd core gathers runs of elements for its 16 partitions by shared indices",
    semantics=(
        "GpSimd core c takes index[16c:16c+16] flattened partition dimension first, keeps its "
        "first num_valid_indices entries, and writes to each of its 16 partitions p the "
        "elements src_buffer[p, idx_j : idx_j + num_elem_per_idx] (free dims flattened) for "
        "j in order. Bit-exact; an index past the partition's end is a run-time error."),
    cost_formula="150 + (num_valid_indices * k) / C GpSimd cycles, C = ((28 + 4k) / (4k)) / "
                 "min(4 / dtype_size, k), k = num_elem_per_idx",
    execute=execute,
    cycles=cycles,
    check=check,
    cost_note="legacy NKI estimate ([LEG] nki.isa.local_gather), t = 4",
    source="https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/"
           "nki.isa.local_gather.html",
    example="- local_gather: {dst: g, src_buffer: table, index: idx, num_elem_per_idx: 4, "
            "num_valid_indices: 64}",
    nki=NkiApi("dst src_buffer index num_elem_per_idx=1 num_valid_indices=None"),
)
