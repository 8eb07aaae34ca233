"""nki.isa.nc_matmul_mx — Tensor engine, NeuronCore-v4 (trn3) only: matrix multiply of
MXFP8/MXFP4 tiles with their e8m0 scales, into PSUM.

Facts (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.isa.nc_matmul_mx.html,
the MXFP matmul guide and the Trainium3 architecture guide):
* stationary (K, M) and moving (K, N) are x4-packed (float8_e5m2_x4, float8_e4m3fn_x4,
  float4_e2m1fn_x4; MXFP8 x MXFP4 may be mixed) in SBUF; each x4 element holds 4 values of
  the contraction, so the contraction is K x 4 values long;
* stationary_scale / moving_scale (float8_e8m0fnu or uint8, SBUF): one scale per 8
  partitions x one x4 element, in the group's quadrant (hw/mx.py), free size M / N;
* dst (M, N) in PSUM, float32 or bfloat16: dst[i, j] = sum over k, q of
  st[k, i, q] * 2^(sst[k//8, i] - 127) * mv[k, j, q] * 2^(smv[k//8, j] - 127);
* K a multiple of 32, at most 128, equal for both; M even and at most 128; N at most 4096
  (float32 dst) or 8192 (bfloat16 dst): eight PSUM banks;
* row tiling only: tile_size (row_size, 128) with row_size 32, 64 or 128, tile_position
  (start_row, 0) with start_row a multiple of row_size below 128; both or neither; K at
  most row_size;
* accumulate: true adds into dst, false overwrites, None (the default) "auto-detect[s]
  based on whether this PSUM location was previously written": nkirun adds into the
  elements of dst that hold data (written earlier, or given initial contents) and
  overwrites the others, so a chain of nc_matmul_mx into one PSUM tile accumulates.
* cost: no formula; an MX matmul runs at 4x the BF16 throughput (Trainium3 guide): nkirun
  charges nc_matmul's bf16 formula on the x4 element counts, max(min(64, M), N) cycles.

Readings: products and sums are float32 (the order of the sum is NumPy's); a bfloat16 dst
is rounded to nearest even once, after the float32 sum (and, accumulating, after adding the
float32 value of dst); a NaN scale (255) makes its products NaN.
"""
from __future__ import annotations

import numpy as np

from nkirun.hw import mx
from nkirun.isa.common import flat, require_core
from nkirun.isa.quantize_mx import quadrant_rules, scale_rules
from nkirun.isa.spec import BOOL, INT_LIST, TILE, Bound, InstructionDef, NkiApi, Param

SBUF = frozenset({"sbuf"})
X4 = frozenset(mx.X4_NAMES)
STATIONARY_FMAX = 128
MOVING_FMAX = {"float32": 4096, "bfloat16": 8192}
ROW_SIZES = (32, 64, 128)
PARAMS = (
    Param("dst", TILE, required=True, out=True, buffers=frozenset({"psum"}),
          dtypes=frozenset(MOVING_FMAX), doc="PSUM tile (M, N), float32 or bfloat16"),
    Param("stationary", TILE, required=True, buffers=SBUF, dtypes=X4,
          doc="x4-packed SBUF tile (K, M), M even and <= 128"),
    Param("moving", TILE, required=True, buffers=SBUF, dtypes=X4,
          doc="x4-packed SBUF tile (K, N)"),
    Param("stationary_scale", TILE, required=True, buffers=SBUF, dtypes=mx.SCALE_NAMES,
          doc="stationary's e8m0 scales (free size M)"),
    Param("moving_scale", TILE, required=True, buffers=SBUF, dtypes=mx.SCALE_NAMES,
          doc="moving's e8m0 scales (free size N)"),
    Param("tile_position", INT_LIST, doc="(start_row, 0): the row tile used"),
    Param("tile_size", INT_LIST, doc="(row_size, 128): row_size 32, 64 or 128"),
    Param("accumulate", BOOL, doc="true: add into dst; false: overwrite; unset: add where "
                                  "dst already holds data, overwrite elsewhere"),
)


def check(b: Bound):
    yield from require_core(b, 4, "E493")
    st, mv, dst = b.tile("stationary"), b.tile("moving"), b.tile("dst")
    k = st.partitions
    if mv.partitions != k:
        yield b.err("E510", f"stationary has {k} partitions and moving {mv.partitions}; the "
                    "contraction (partition) dims must be equal", "moving")
    elif k % mx.QUADRANT:
        yield b.err("E510", f"the contraction dim is {k} partitions; it must be a multiple "
                    "of 32 (at most 128)", "stationary")
    if st.free_size > STATIONARY_FMAX or st.free_size % 2:
        yield b.err("E511", f"stationary has {st.free_size} elements per partition; it must "
                    f"be even and at most {STATIONARY_FMAX}", "stationary")
    fmax = MOVING_FMAX.get(dst.dtype.name, 4096)
    if mv.free_size > fmax:
        yield b.err("E512", f"moving has {mv.free_size} elements per partition; at most "
                    f"{fmax} with a {dst.dtype.name} dst (eight PSUM banks)", "moving")
    if dst.partitions != st.free_size or dst.free_size != mv.free_size:
        yield b.err("E513", f"dst {list(dst.shape)} must be {st.free_size} partitions x "
                    f"{mv.free_size} elements (stationary's free size x moving's)", "dst")
    yield from scale_rules(b, "stationary_scale", k, st.free_size, "E514")
    yield from scale_rules(b, "moving_scale", k, mv.free_size, "E514")
    yield from quadrant_rules(b, ("stationary",), "stationary_scale", "E516")
    yield from quadrant_rules(b, ("moving",), "moving_scale", "E516")
    yield from _tiling_rules(b, k)


def _tiling_rules(b: Bound, k: int):
    pos, size = b.get("tile_position"), b.get("tile_size")
    if pos is None and size is None:
        return
    key = "tile_size" if size is not None else "tile_position"
    if pos is None or size is None:
        yield b.err("E515", "tile_position and tile_size must be given together", key,
                    hint="e.g. tile_position: [64, 0], tile_size: [64, 128]")
        return
    if len(size) != 2 or size[0] not in ROW_SIZES or size[1] != 128:
        yield b.err("E515", f"tile_size {list(size)} is not allowed; nc_matmul_mx tiles rows "
                    "only: (32, 128), (64, 128) or (128, 128)", "tile_size")
        return
    if len(pos) != 2 or pos[1] != 0 or pos[0] % size[0] or not 0 <= pos[0] < 128:
        yield b.err("E515", f"tile_position {list(pos)} must be (start_row, 0) with start_row "
                    f"a multiple of {size[0]} below 128", "tile_position")
    if k > size[0]:
        yield b.err("E515", f"the stationary tile has {k} partitions, more than the "
                    f"{size[0]}-row tile", "tile_size")


def reads_out(b: Bound) -> tuple[str, ...]:
    return ("dst",) if b.get("accumulate") else ()


def dequantized(m, data, scale) -> np.ndarray:
    """(K, F) x4 tile and its scales -> (K * 4, F) float32, contraction index k * 4 + q."""
    vals = mx.unpack(flat(m.read(data)), data.dtype.name)  # (K, F, 4)
    used = np.zeros(scale.partitions, bool)  # only the groups' rows must hold scales
    used[mx.scale_rows(data.partitions)] = True
    scales = mx.group_scales(flat(m.read(scale, used)), data.partitions)  # (K, F)
    vals = vals * scales[:, :, None]
    return vals.transpose(0, 2, 1).reshape(-1, vals.shape[1])


def execute(b: Bound, m) -> None:
    dst = b["dst"]
    with np.errstate(all="ignore"):
        st = dequantized(m, b["stationary"], b["stationary_scale"])
        mv = dequantized(m, b["moving"], b["moving_scale"])
        out = np.matmul(st.T, mv)
        acc = b.get("accumulate")
        if acc:
            out = flat(m.read_f32(dst)) + out
        elif acc is None:  # auto: add where this PSUM location was written before
            held = m.held_first_run(b, dst)  # (in a loop body: as on its first iteration)
            prior = flat(m.view(dst).astype(np.float32))
            if held is None:
                out = prior + out
            elif held.any():
                out = np.where(held.reshape(out.shape), prior + out, out)
    m.write(dst, out.reshape(dst.shape))


def cycles(b: Bound, target) -> int:
    return max(min(64, b["stationary"].free_size), b["moving"].free_size)


SPEC = InstructionDef(
    name="nc_matmul_mx",
    engine="tensor",
    params=PARAMS,
    summary="dst (PSUM) = dequantised MX stationary.T @ MX moving (trn3 only)",
    semantics=(
        "Unpacks the x4 elements of stationary (K, M) and moving (K, N) into their four "
        "values, multiplies each by 2^(scale - 127) of its group (8 partitions x 1 element, "
        "the scale in the group's quadrant), and contracts over the K x 4 values: dst (M, N) "
        "= sum_k,q st[k, i, q] * mv[k, j, q], in float32, rounded once to dst's dtype "
        "(float32 or bfloat16). accumulate: true adds into dst, false overwrites; unset adds "
        "where dst already holds data (NKI's auto-detection). NeuronCore-v4 (trn3) only."),
    cost_formula="max(min(64, M), N) PE cycles (M, N = x4 elements per partition of "
                 "stationary / moving)",
    cost_assumed=True,
    cost_note="no documented formula: nc_matmul's bf16 cost on the x4 counts (the Trainium3 "
              "guide: 4x the BF16 throughput)",
    execute=execute,
    direct_storage=True,
    cycles=cycles,
    check=check,
    reads_out=reads_out,
    pipelined_accumulate=True,  # (as nc_matmul)
    same_partitions=(),  # E510/E514 say how the partition dims relate
    constraints=(
        "NeuronCore-v4 only: target trn3 (E493)",
        "stationary and moving: the same partitions, a multiple of 32, at most 128 (E510)",
        ("stationary elements per partition even, at most 128 (E511); moving at most 4096 "
         "(float32 dst) or 8192 (bfloat16 dst) (E512)"),
        "dst is stationary's free size x moving's (E513)",
        "each scale tile: its data tile's free size, spanning the groups' quadrant rows (E514)",
        ("row tiling only: tile_size (32|64|128, 128), tile_position (multiple of the row "
         "size, 0), both or neither, K within the row tile (E515)"),
        "data on a quadrant boundary; scales at offset 0, 4, 8 or 12 of a quadrant (E516)",
    ),
    source="https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/"
           "nki.isa.nc_matmul_mx.html",
    example="- nc_matmul_mx: {dst: acc, stationary: wq, moving: xq, stationary_scale: ws, "
            "moving_scale: xs}",
    nki=NkiApi("dst stationary moving stationary_scale moving_scale tile_position=None "
               "tile_size=None accumulate=None"),
)
