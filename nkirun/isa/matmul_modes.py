"""nc_matmul's NKI 0.6 mode keywords: PE tiling (tile_position/tile_size), the FP8
double-row performance mode, transpose mode and the one/zero hints (nc_matmul.py keeps the
matmul itself; this module holds the rules and the arithmetic these keywords change).

Facts (NKI 0.6 API page, https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/
generated/nki.isa.nc_matmul.html; Trainium2 arch guide "Double FP8 Matmul Performance" and
"Built-in Transpose Support"):
* tiling: tile_size = (row_size, column_size), each 64 or 128 (NeuronCore-v2 on) or 32
  (NeuronCore-v3 on); tile_position = (start_row, start_column), each a multiple of its size
  inside the 128 x 128 array; both set or neither (unset: (0, 0) and (128, 128)). The
  partition count must not exceed row_size and stationary's free size column_size.
* perf_mode double_row (NeuronCore-v3 on): fp8 operands (float8_e4m3 / float8_e5m2), the
  contraction split over the partition dim and the first free dim, which must be 2
  (stationary [K, 2, M], moving [K, 2, N] -> dst [M, N]); not with column tiling or transpose
  mode; twice the fp8 throughput.
* is_transpose (NeuronCore-v3 on): a bit-accurate transpose of stationary through an identity
  moving tile (NaN/Inf survive), fp16/bf16 results in PSUM for fp16/bf16 input, 2x faster for
  fp32; on NeuronCore-v2 it only labels the instruction for the profiler.
* is_stationary_onezero / is_moving_onezero: hints that the operand holds only 0/1; up to 2x
  faster when that operand is fp32.

Readings:
* Tiling changes no value; the schedule runs one Tensor instruction at a time, so the
  concurrency of tiles is not modelled (costs are unchanged).
* Transpose mode on v3+: moving must be the K x K identity (run-time error E486 otherwise)
  and dst gets stationary.T bit for bit, so dst's dtype must be stationary's or float32 (an
  exact widening); stationary fp32, bf16 or fp16 (the fp8 case, 16-bit PSUM elements holding
  fp8 bits, is not modelled, E485).
* A one/zero hint on an operand holding other values warns at run time (W487).
"""
from __future__ import annotations

import numpy as np

from nkirun.diagnostics import RunError, warning
from nkirun.isa.dma_rules import core_version, target_name
from nkirun.isa.spec import Bound

FP8 = frozenset({"float8_e4m3", "float8_e5m2"})
TRANSPOSE_DTYPES = frozenset({"float32", "bfloat16", "float16"})
ARRAY = 128


def double_row(b: Bound) -> bool:
    return b.get("perf_mode", "none") == "double_row"


def transposing(b: Bound) -> bool:
    """Transpose mode proper: is_transpose on NeuronCore-v3 or newer."""
    return bool(b.get("is_transpose")) and core_version(b) >= 3


def dims(b: Bound) -> tuple[int, int, int]:
    """(K, M, N): contraction, dst partitions, dst free size (double_row: K counts the 2)."""
    st, mv = b.tile("stationary"), b.tile("moving")
    if double_row(b):
        return st.partitions * 2, st.free_size // 2, mv.free_size // 2
    return st.partitions, st.free_size, mv.free_size


def tiling_rules(b: Bound):
    pos, size = b.get("tile_position") or None, b.get("tile_size") or None  # (): untiled
    if (pos is None) != (size is None):
        given = "tile_position" if pos is not None else "tile_size"
        yield b.err("E480", f"{given} without {'tile_size' if pos is not None else 'tile_position'}"
                    ": tiling mode needs both", given,
                    hint="e.g. tile_position: [64, 0] with tile_size: [64, 128]")
        return
    if pos is None:
        return
    if len(pos) != 2 or len(size) != 2:
        key = "tile_position" if len(pos) != 2 else "tile_size"
        yield b.err("E480", f"{key} must be two integers (row, column)", key)
        return
    sizes = (64, 128) if core_version(b) < 3 else (32, 64, 128)
    if any(s not in sizes for s in size):
        yield b.err("E481", f"tile_size {list(size)}: each size must be one of "
                    f"{', '.join(map(str, sizes))} on {target_name(b)}", "tile_size",
                    hint="32-row/column tiles need NeuronCore-v3 (trn2)" if core_version(b) < 3
                    else None)
        return
    for what, start, s in (("start_row", pos[0], size[0]), ("start_column", pos[1], size[1])):
        if start % s or not 0 <= start <= ARRAY - s:
            yield b.err("E482", f"tile_position {what} {start} must be a multiple of its tile "
                        f"size {s} inside the 128-wide array", "tile_position",
                        hint=f"allowed: {', '.join(map(str, range(0, ARRAY, s)))}")
    st = b.tile("stationary")
    k, m, _ = dims(b)
    if st.partitions > size[0] or m > size[1]:
        yield b.err("E483", f"stationary ({st.partitions} partitions x {m} columns) does not fit "
                    f"the {size[0]} x {size[1]} PE tile", "tile_size",
                    hint="the partition count must not exceed row_size and stationary's free "
                         "size column_size")


def perf_rules(b: Bound):
    if not double_row(b):
        return
    st, mv = b.tile("stationary"), b.tile("moving")
    why = []
    if core_version(b) < 3:
        why.append(f"{target_name(b)} has no double-row mode (NeuronCore-v3 on)")
    bad = [f"{k} is {r.dtype.name}" for k, r in (("stationary", st), ("moving", mv))
           if r.dtype.name not in FP8]
    if bad:
        why.append("operands must be float8_e4m3/float8_e5m2 (" + ", ".join(bad) + ")")
    for k, r in (("stationary", st), ("moving", mv)):
        if len(r.shape) < 3 or r.shape[1] != 2:
            why.append(f"{k} {list(r.shape)} must be [K, 2, ...] (the contraction's second half "
                       "in the first free dim)")
    size = b.get("tile_size")
    if size and len(size) == 2 and size[1] != ARRAY:
        why.append("column tiling (column_size < 128) cannot be combined with it")
    if b.get("is_transpose"):
        why.append("transpose mode cannot be combined with it")
    if why:
        yield b.err("E484", "perf_mode double_row: " + "; ".join(why), "perf_mode",
                    hint="stationary [K, 2, M] and moving [K, 2, N] fp8 tiles on trn2")


def transpose_rules(b: Bound):
    if not transposing(b):
        return
    st, mv, dst = b.tile("stationary"), b.tile("moving"), b.tile("dst")
    if st.dtype.name not in TRANSPOSE_DTYPES or dst.dtype.name not in (st.dtype.name,
                                                                         "float32"):
        yield b.err("E485", f"is_transpose gives stationary.T bit for bit: dst must have "
                    f"stationary's dtype (or float32, an exact widening), stationary being "
                    f"float32/bfloat16/float16 (stationary {st.dtype.name}, dst "
                    f"{dst.dtype.name})", "dst",
                    hint="declare the PSUM dst with stationary's dtype")
    if mv.free_size != st.partitions:
        yield b.err("E485", f"is_transpose: moving must be the {st.partitions} x {st.partitions} "
                    f"identity (got {list(mv.shape)})", "moving")


def dst_dtype_rule(b: Bound):
    """dst is float32 (bfloat16 too from NeuronCore-v4) unless transpose mode sets it."""
    dst = b.tile("dst")
    if transposing(b) or dst.dtype.name == "float32":
        return
    if dst.dtype.name == "bfloat16" and core_version(b) >= 4:
        return
    yield b.err("E060", f"`dst` must be float32 (got {dst.dtype.name})", "dst",
                hint="bfloat16 needs NeuronCore-v4; or is_transpose with a bf16/fp16 stationary")


def mode_rules(b: Bound):
    yield from tiling_rules(b)
    yield from perf_rules(b)
    yield from transpose_rules(b)
    yield from dst_dtype_rule(b)


def transpose(b: Bound, m) -> None:
    """Transpose mode: dst = stationary.T bit for bit (moving must be the identity)."""
    st, mv, dst = b["stationary"], b["moving"], b["dst"]
    eye = m.read_f32(mv).reshape(st.partitions, -1)
    if not np.array_equal(eye, np.eye(st.partitions, dtype=np.float32)):
        raise RunError(b.err("E486", "is_transpose: moving is not the identity matrix, so the "
                             "transpose mode's result is not defined", "moving",
                             hint="pass an identity moving tile (the transpose's partner)"))
    values = m.read(st).reshape(st.partitions, -1)
    m.write(dst, values.T.reshape(dst.shape), None, b.mask)


def warn_onezero(b: Bound, m, key: str, values: np.ndarray) -> None:
    if b.get(f"is_{key}_onezero") and not np.isin(values, (0.0, 1.0)).all():
        m.warnings.append(warning(
            "W487", f"nc_matmul: is_{key}_onezero says {key} holds only 0/1, but it holds other "
            "values (hardware results may differ)", b.loc(f"is_{key}_onezero"), b.index,
            hint=f"drop is_{key}_onezero"))


def cost_factor(b: Bound, fp32_passes: int = 4) -> int:
    """fp32_passes (4) for fp32 operands (half with transpose mode or one/zero hints on each
    fp32 one), else 1."""
    fp32 = [k for k in ("stationary", "moving") if b[k].dtype.name == "float32"]
    if not fp32:
        return 1
    if transposing(b) or all(b.get(f"is_{k}_onezero") for k in fp32):
        return fp32_passes // 2
    return fp32_passes
