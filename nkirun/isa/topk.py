"""nki.isa.topk — GpSimd engine: the K largest bf16 values of each 16-partition snake.

Facts (NKI 0.6 API page, https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/
generated/nki.isa.topk.html; the page of the next release, which spells the layout out; the
nki-library gpsimd_topk kernel built on it):
* src is read as a 16-partition "snake": element i of a snake sits at partition i % 16, free
  position i // 16; n is the number of active elements (slots past n are ignored). Each group
  of 16 partitions holds its own snake: a 128-partition tile solves 8 problems.
* K is val_dst's free size. val_dst receives the K largest values in ascending order, idx_dst
  their 0-based indices in the group's snake (uint32); results are written in the same snake
  layout (result j at partition j % 16, free position j // 16).
* src bf16 in SBUF; val_dst bf16 and idx_dst uint32 in SBUF, shape [par_dim, K];
  8 <= n < 65536; 1 <= K < 32768 and K <= n; src free size >= ceil(n / 16); the partition
  count is a multiple of 16.
* cost (the only new-API formula): 4*n + K GpSimd cycles.

Readings:
* Free positions 0..ceil(K/16)-1 are written, each across all 16 partitions of the group (the
  next release: "the hardware writes each position across all 16 partitions at once"); the
  slots j >= K of the last one get values the docs do not give: nkirun writes -inf and index
  0xFFFFFFFF there (never a real result). Positions from ceil(K/16) on are not written (a
  read of one that nothing wrote is E090).
* Ties: among equal values the lower snake index is selected first and listed first. NaN
  counts as larger than every number (it is selected first and listed last).
"""
from __future__ import annotations

import math

import numpy as np

from nkirun.hw import dtypes as dt
from nkirun.isa.spec import INT, TILE, Bound, InstructionDef, NkiApi, Param

GROUP = 16
SBUF = frozenset({"sbuf"})
BF16 = frozenset({"bfloat16"})

PARAMS = (
    Param("val_dst", TILE, required=True, out=True, buffers=SBUF, dtypes=BF16,
          doc="bf16 (P, K): the K largest values of each group, ascending, in snake layout"),
    Param("idx_dst", TILE, required=True, out=True, buffers=SBUF,
          dtypes=frozenset({"uint32"}), doc="uint32 (P, K): their indices in the group's snake"),
    Param("src", TILE, required=True, buffers=SBUF, dtypes=BF16,
          doc="bf16 (P, X) snakes: element i of a group at partition i % 16, column i // 16"),
    Param("n", INT, required=True, doc="active elements per snake, 8 <= n < 65536"),
)


def check(b: Bound):
    src, val, idx, n = b.tile("src"), b.tile("val_dst"), b.tile("idx_dst"), b["n"]
    k = val.free_size
    if src.partitions % GROUP:
        yield b.err("E470", f"src has {src.partitions} partitions; topk needs a multiple of 16 "
                    "(one snake per 16 partitions)", "src")
    if not 8 <= n < 65536:
        yield b.err("E471", f"n = {n}; topk needs 8 <= n < 65536", "n")
    if not 1 <= k < 32768 or k > n:
        yield b.err("E472", f"val_dst asks for K = {k} results (its elements per partition); "
                    f"1 <= K < 32768 and K <= n ({n}) are required", "val_dst")
    if idx.free_size != k:
        yield b.err("E473", f"idx_dst holds {idx.free_size} elements per partition but val_dst "
                    f"{k}; both are (P, K)", "idx_dst")
    if src.free_size < math.ceil(n / GROUP):
        yield b.err("E474", f"src has {src.free_size} elements per partition; a snake of n = {n} "
                    f"needs ceil(n / 16) = {math.ceil(n / GROUP)}", "src")


def top_k(snakes: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(G, n) float32 -> (G, K) values ascending and (G, K) int64 snake indices."""
    g, n = snakes.shape
    index = np.broadcast_to(np.arange(n), (g, n))
    nan = np.isnan(snakes)
    # selection: NaN first, then larger values, ties by lower index (lexsort: last key first)
    sel = np.lexsort((index, -snakes, ~nan), axis=-1)[:, :k]
    v, nan_sel = np.take_along_axis(snakes, sel, 1), np.take_along_axis(nan, sel, 1)
    # listing: ascending, NaN last, ties by lower index
    order = np.lexsort((sel, v, nan_sel), axis=-1)
    return np.take_along_axis(v, order, 1), np.take_along_axis(sel, order, 1)


def snake_slots(p: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(P, K) rows and columns of a (P, K) tile that hold result slots j < K of each group."""
    row = np.arange(p)[:, None]
    j = (np.arange(k)[None, :] * GROUP) + (row % GROUP)  # slot of (partition, column)
    return row, j


def execute(b: Bound, m) -> None:
    src, val_dst, idx_dst, n = b["src"], b["val_dst"], b["idx_dst"], b["n"]
    p, k, cols = src.partitions, val_dst.free_size, math.ceil(n / GROUP)
    x = m.read(src).reshape(p, -1)[:, :cols]
    # group g's snake: element i at partition 16g + i % 16, column i // 16
    snakes = dt.to_f32(x).reshape(p // GROUP, GROUP, cols).transpose(0, 2, 1)
    values, index = top_k(snakes.reshape(p // GROUP, -1)[:, :n], k)
    row, slot = snake_slots(p, k)
    written = slot < math.ceil(k / GROUP) * GROUP  # whole positions
    real = slot < k
    grp = row // GROUP
    pick = np.where(real, slot, 0)
    out_v = np.where(real, np.take_along_axis(values[grp[:, 0]], pick, 1), -np.inf)
    out_i = np.where(real, np.take_along_axis(index[grp[:, 0]], pick, 1), 0xFFFFFFFF)
    m.write(val_dst, out_v.reshape(val_dst.shape), None, written.reshape(val_dst.shape))
    m.write(idx_dst, out_i.reshape(idx_dst.shape), None, written.reshape(idx_dst.shape))


def cycles(b: Bound, target) -> int:
    return 4 * b["n"] + b["val_dst"].free_size


SPEC = InstructionDef(
    name="topk",
    engine="gpsimd",
    params=PARAMS,
    summary="K largest bf16 values and their indices per 16-partition snake",
    semantics=(
        "Each group of 16 partitions holds a snake of n bf16 values (element i at partition "
        "i % 16, column i // 16). For every group the K = val_dst-free-size largest values "
        "are found and written in ascending order, in the same snake layout (result j at "
        "partition j % 16, column j // 16), to val_dst, with their snake indices (uint32) to "
        "idx_dst. Free positions from ceil(K/16) on are left unmodified; the slots j >= K of "
        "the last written position get -inf / 0xFFFFFFFF."),
    cost_formula="4*n + K GpSimd cycles (per partition, in parallel)",
    execute=execute,
    cycles=cycles,
    check=check,
    same_partitions=("val_dst", "idx_dst", "src"),
    source="https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/"
           "nki.isa.topk.html",
    example="- topk: {val_dst: top_v, idx_dst: top_i, src: snake, n: 42}",
    nki=NkiApi("val_dst idx_dst src n"),
)
