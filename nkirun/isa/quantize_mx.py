"""nki.isa.quantize_mx — Vector engine, NeuronCore-v4 (trn3) only: float16/bfloat16 ->
MXFP8 data (x4-packed) plus one e8m0 scale per group of 32 values.

Facts (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.isa.quantize_mx.html,
the MXFP matmul guide and the Trainium3 architecture guide):
* src float16/bfloat16, dst float8_e4m3fn_x4 / float8_e5m2_x4, dst_scale float8_e8m0fnu
  or uint8; all three in SBUF;
* src partitions a multiple of 32 (at most 128), its free size a multiple of 4; dst has
  src's partitions and a quarter of its free size (four values per x4 element);
* a group is 8 partitions x 4 consecutive values (one x4 element); its scale is
  X = 2^(floor(log2(amax)) - (Emax - 1)), Emax = 8 (e4m3fn) or 15 (e5m2), i.e. twice the
  OCP sample scale, so the largest value never saturates; an all-zero group gets 2^-127;
* each value is v / X rounded to the element type; the layout is preserved;
* scales go to the quadrant of their group (hw/mx.py: group g -> scale row
  (g // 4) * 32 + g % 4); the scale tile's free size is exactly dst's; scales of several
  tensors can share a tile at partition offsets 0, 4, 8 or 12 of a quadrant.
* cost: "four input elements per partition per cycle" (Trainium3 guide): max(MIN_II, N/4).

Readings (the docs are silent):
* a group holding NaN or +-inf gets the NaN scale (bits 255) and NaN values, as OCP MX
  specifies for a NaN scale;
* exponents below -127 clamp to -127 (the smallest e8m0 value); values are then rounded
  to the element type (subnormals kept, round to nearest even);
* src and dst start on a quadrant boundary (a multiple of 32), so that a group's quadrant
  is defined; scale rows not used by a group are left as they were.
"""
from __future__ import annotations

import numpy as np

from nkirun.hw import mx
from nkirun.isa.common import flat, require_core
from nkirun.isa.spec import TILE, Bound, InstructionDef, NkiApi, Param

SBUF = frozenset({"sbuf"})
PARAMS = (
    Param("dst", TILE, required=True, out=True, buffers=SBUF, dtypes=frozenset(mx.FP8_X4),
          doc="MXFP8 data (P, N/4), float8_e4m3fn_x4 or float8_e5m2_x4"),
    Param("src", TILE, required=True, buffers=SBUF,
          dtypes=frozenset({"float16", "bfloat16"}), doc="float16/bfloat16 tile (P, N)"),
    Param("dst_scale", TILE, required=True, out=True, buffers=SBUF,
          dtypes=mx.SCALE_NAMES, doc="scales: one per 8 partitions x 4 values, in the "
                                     "group's quadrant; free size N/4"),
)


def check(b: Bound):
    yield from require_core(b, 4, "E493")
    src, dst = b.tile("src"), b.tile("dst")
    p, n = src.partitions, src.free_size
    if p % mx.QUADRANT:
        yield b.err("E500", f"src has {p} partitions; quantize_mx needs a multiple of 32 "
                    "(32, 64, 96 or 128)", "src", hint="pad the partition dim to 32")
    if n % 4:
        yield b.err("E501", f"src has {n} elements per partition; a multiple of 4 is needed "
                    "(four values per x4 element)", "src")
    if dst.partitions != p or dst.free_size * 4 != n:
        yield b.err("E502", f"dst {list(dst.shape)} must be {p} partitions x {n // 4} "
                    f"elements (src's partitions, a quarter of its {n} values)", "dst")
    yield from scale_rules(b, "dst_scale", p, n // 4, "E503")
    yield from quadrant_rules(b, ("src", "dst"), "dst_scale", "E504")


def scale_rules(b: Bound, key: str, partitions: int, columns: int, code: str):
    """The scale tile holds `columns` per partition and reaches every group's row."""
    sc = b.tile(key)
    need = mx.scale_rows_needed(partitions)
    if sc.free_size != columns:
        yield b.err(code, f"{key} has {sc.free_size} elements per partition; it needs "
                    f"exactly {columns} (one scale per x4 element column)", key)
    if sc.partitions < need:
        yield b.err(code, f"{key} spans {sc.partitions} partitions; the scales of "
                    f"{partitions} data partitions need {need} (each quadrant's scales sit "
                    "in its first 4 partitions)", key,
                    hint=f"declare the scale tile with {partitions if partitions > 32 else need}"
                         " partitions")


def quadrant_rules(b: Bound, data: tuple[str, ...], scale: str, code: str):
    for key in data:
        r = b.tile(key)
        if r is not None and (r.part_start % mx.QUADRANT or r.part_step != 1):
            yield b.err(code, f"{key} starts at partition {r.part_start}"
                        f"{'' if r.part_step == 1 else f' with step {r.part_step}'}; MX data "
                        "must start on a quadrant boundary (0, 32, 64, 96), contiguously", key)
    sc = b.tile(scale)
    if sc is not None and (sc.part_start % mx.QUADRANT not in (0, 4, 8, 12) or sc.part_step != 1):
        yield b.err(code, f"{scale} starts at partition {sc.part_start}; a scale tile starts "
                    "at offset 0, 4, 8 or 12 of a quadrant, contiguously", scale)


def quantize(v: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """(P, N) float32 -> ((P, N/4) packed data, (P/8, N/4) uint8 scale bits)."""
    p, n = v.shape
    groups = v.reshape(p // 8, 8, n // 4, 4)
    with np.errstate(all="ignore"):
        amax = np.abs(groups).max(axis=(1, 3))
        bad = ~np.isfinite(amax)  # NaN or inf in the group (max of |NaN| is NaN)
        _, e = np.frexp(np.where(bad | (amax == 0), 1, amax))  # amax = m * 2^e, m in [.5, 1)
        exp = np.where(amax == 0, -127, np.maximum(e - 1 - (mx.EMAX[name] - 1), -127))
        bits = np.where(bad, 255, exp + mx.SCALE_BIAS).astype(np.uint8)
        factor = np.ldexp(np.float32(1), -exp).astype(np.float32)  # 1 / X, exact
        factor = np.where(bad, np.float32(np.nan), factor)
        q = groups * factor[:, None, :, None]
    return mx.pack_fp8(q.reshape(p, n), name), bits


def execute(b: Bound, m) -> None:
    src, dst, sc = b["src"], b["dst"], b["dst_scale"]
    data, bits = quantize(flat(m.read_f32(src)), dst.dtype.name)
    m.write(dst, data.reshape(dst.shape).view(dst.dtype.np_type))
    rows = mx.scale_rows(src.partitions)
    full = np.zeros((sc.partitions, sc.free_size), np.uint8)
    full[rows] = bits
    keep = np.zeros(full.shape, bool)
    keep[rows] = True
    m.write(sc, full.view(sc.dtype.np_type).reshape(sc.shape), None, keep.reshape(sc.shape))


def cycles(b: Bound, target) -> int:
    return max(target.min_ii, -(-b["src"].free_size // 4))


SPEC = InstructionDef(
    name="quantize_mx",
    engine="vector",
    params=PARAMS,
    summary="float16/bfloat16 -> MXFP8 (x4-packed) data and e8m0 scales (trn3 only)",
    semantics=(
        "Splits src (P, N) into groups of 8 partitions x 4 consecutive values. Each group's "
        "scale is X = 2^(floor(log2 amax) - (Emax - 1)) (Emax 8 for float8_e4m3fn, 15 for "
        "float8_e5m2; 2^-127 for an all-zero group), stored as e8m0 bits in dst_scale in the "
        "group's quadrant (group g -> row (g // 4) * 32 + g % 4). Each value is divided by "
        "its scale, rounded to the fp8 type and packed four per x4 element of dst (P, N/4). "
        "A group with NaN or inf gets the NaN scale. NeuronCore-v4 (trn3) only."),
    cost_formula="max(MIN_II, N/4) Vector cycles (N = src elements per partition)",
    cost_assumed=True,
    cost_note="no documented formula; the Trainium3 guide: four input elements per "
              "partition per cycle",
    execute=execute,
    cycles=cycles,
    check=check,
    same_partitions=(),  # E502/E503 say how the partition dims relate
    constraints=(
        "NeuronCore-v4 only: target trn3 (E493)",
        ("src partitions a multiple of 32, at most 128 (E500); src elements per partition a "
         "multiple of 4 (E501)"),
        "dst holds src's partitions x a quarter of its elements (E502)",
        ("dst_scale holds exactly src elements / 4 per partition, spanning the groups' rows: P/8 "
         "partitions for P <= 32, else (P/32 - 1) x 32 + 4 (E503)"),
        ("src/dst start on a quadrant boundary; dst_scale at offset 0, 4, 8 or 12 of a "
         "quadrant (E504)"),
    ),
    source="https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/"
           "nki.isa.quantize_mx.html",
    example="- quantize_mx: {dst: xq, src: x, dst_scale: xs}",
    nki=NkiApi("dst src dst_scale"),
)
