"""The OCP microscaling (MX) formats of NeuronCore-v4: x4-packed elements and e8m0 scales.

Storage (the `.npy` convention, docs/mx-and-random.md):
* `float8_e4m3fn_x4` / `float8_e5m2_x4`: one uint32 per element holding four fp8 bytes,
  value q in bits 8q..8q+7 (q = 0 first), i.e. a contiguous fp8 array viewed as
  little-endian uint32 (what `arr.view(np.uint32)` gives on x86/ARM);
* `float4_e2m1fn_x4`: one uint16 per element holding four 4-bit e2m1 codes, value q in
  bits 4q..4q+3 (NKI: "the float4_*_x4 type is 16-bits wide");
* `float8_e8m0fnu` scale: 2^(bits - 127), bits 255 = NaN (ml_dtypes.float8_e8m0fnu; uint8
  scale tiles hold the same bits).

A scaling group is 32 values: 8 partitions x the 4 values of one x4 element. Its scale sits
in the SBUF quadrant of its partitions, in the first four partitions of that quadrant
counted from the scale tile's start: group g (data partitions 8g..8g+7) -> scale row
(g // 4) * 32 + g % 4 (MXFP matmul guide, "Scale Tensor"; Trainium3 guide).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

FP8_X4 = {"float8_e4m3fn_x4": ml_dtypes.float8_e4m3fn, "float8_e5m2_x4": ml_dtypes.float8_e5m2}
FP4_X4 = "float4_e2m1fn_x4"
X4_NAMES = frozenset({*FP8_X4, FP4_X4})
SCALE_NAMES = frozenset({"float8_e8m0fnu", "uint8"})
# The largest unbiased exponent of each element type (nki.isa.quantize_mx: 8 for
# float8_e4m3fn, 15 for float8_e5m2).
EMAX = {"float8_e4m3fn_x4": 8, "float8_e5m2_x4": 15}
GROUP_PARTITIONS = 8
QUADRANT = 32
SCALE_BIAS = 127

_LUT = {name: np.arange(256, dtype=np.uint8).view(t).astype(np.float32)
        for name, t in FP8_X4.items()}
_LUT[FP4_X4] = np.arange(16, dtype=np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float32)


def unpack(packed: np.ndarray, name: str) -> np.ndarray:
    """(P, N) x4 storage -> (P, N, 4) float32 values (value q of each element last)."""
    p = np.asarray(packed)
    if name == FP4_X4:
        codes = (p[..., None].astype(np.uint16) >> np.array([0, 4, 8, 12], np.uint16)) & 0xF
    else:
        codes = np.ascontiguousarray(p, "<u4").view(np.uint8).reshape(p.shape + (4,))
    return _LUT[name][codes]


def pack_fp8(values: np.ndarray, name: str) -> np.ndarray:
    """(P, 4N) float values -> (P, N) uint32, each rounded to the element type (RNE)."""
    q = np.ascontiguousarray(np.asarray(values, np.float32).astype(FP8_X4[name]))
    return q.view(np.uint8).view("<u4").astype(np.uint32)


def pack_fp4(values: np.ndarray) -> np.ndarray:
    """(P, 4N) float values -> (P, N) uint16 e2m1 codes (RNE, saturating at +-6)."""
    q = np.asarray(values, np.float32).astype(ml_dtypes.float4_e2m1fn).view(np.uint8)
    q = q.reshape(q.shape[:-1] + (-1, 4)).astype(np.uint16) & 0xF
    return (q << np.array([0, 4, 8, 12], np.uint16)).sum(axis=-1, dtype=np.uint16)


def scale_values(bits: np.ndarray) -> np.ndarray:
    """e8m0 bits (uint8) -> float32 2^(bits - 127); 255 -> NaN."""
    return np.asarray(bits).view(np.uint8).view(ml_dtypes.float8_e8m0fnu).astype(np.float32)


def scale_rows(partitions: int) -> np.ndarray:
    """The scale-tile rows of the groups of a `partitions`-partition data tile."""
    g = np.arange(partitions // GROUP_PARTITIONS)
    return (g // 4) * QUADRANT + g % 4


def scale_rows_needed(partitions: int) -> int:
    """How many partitions a scale tile must span for a `partitions`-partition data tile."""
    rows = scale_rows(partitions)
    return int(rows[-1]) + 1 if rows.size else 0


def group_scales(scale_tile: np.ndarray, partitions: int) -> np.ndarray:
    """(partitions, N) float32: each data partition's scale per x4 column."""
    rows = scale_values(np.asarray(scale_tile)[scale_rows(partitions)])
    return np.repeat(rows, GROUP_PARTITIONS, axis=0)
