"""The NKI data types: names, NumPy storage types and casting rules.

The twelve general types, plus the NeuronCore-v4 MX types (hw/mx.py): float8_e8m0fnu
(power-of-two block scales, ml_dtypes.float8_e8m0fnu) and the x4-packed float8_e4m3fn_x4,
float8_e5m2_x4 (four fp8 values in a uint32) and float4_e2m1fn_x4 (four fp4 values in a
uint16). A packed element is not a number: `packed` is 4 for them, only quantize_mx and
nc_matmul_mx compute on them, and copies move their bits (checker/bind.py, E490/E491).

Every value is computed in float32 and then cast to the destination type:
floats with round-to-nearest-even (ml_dtypes / NumPy), tfloat32 as float32 with a
10-bit mantissa, integers with round-half-even and saturation (NaN becomes 0),
which is what NKI 0.6 documents for fp32 -> int on hardware.

Reading (float8_e4m3fn): NKI documents only the format (no inf, NaN is 0bS1111111, so the
largest value is 448) and that it is native on trn3 alone; a cast to it follows ml_dtypes,
which NKI's own simulator uses to store fp8 values: round to nearest even, a value that
rounds past 448 (|x| >= 464), an infinity or a NaN becomes NaN (no saturation).
"""
from __future__ import annotations

import sys
from functools import partial

import numpy as np

from nkirun import speed
from nkirun.records import record


@record(frozen=True, slots=True)
class DType:
    """A tensor element type: its name, NumPy type and size on chip."""
    name: str
    np_type: np.dtype
    is_float: bool
    itemsize: int  # bytes per element on chip
    rank: int  # precision order used for "highest precision" defaults
    packed: int = 1  # values per element: 4 for the x4 MX types

    @property
    def is_int(self) -> bool:
        return not self.is_float


def _d(name, np_type, is_float, rank, packed=1):
    t = np.dtype(np_type)
    return DType(name, t, is_float, t.itemsize, rank, packed)


_NP_TYPE = DType.__dict__["np_type"]  # (the slot under the field)


class _MlDType(DType):
    """A DType stored as an ml_dtypes type, which is imported when `np_type` is first read:
    importing ml_dtypes costs several times `import numpy` (0.7 registers its ufunc loops
    one by one), and checking a program that has no such tensor never reads it."""

    __slots__ = ()

    @property
    def np_type(self) -> np.dtype:
        try:
            return _NP_TYPE.__get__(self)
        except AttributeError:
            import ml_dtypes
            t = np.dtype(getattr(ml_dtypes, self.name))
            _NP_TYPE.__set__(self, t)
            return t

    @np_type.setter
    def np_type(self, t) -> None:  # (dataclass __init__, copy and pickle set it)
        if t is not None:
            _NP_TYPE.__set__(self, np.dtype(t))


def register_ml_names() -> None:
    """Have NumPy know the ml_dtypes names ("bfloat16", "float8_e4m3", ...): ml_dtypes
    registers them when imported. A kernel's `nl` dtype is its name, so
    `np.zeros(n, dtype=nl.bfloat16)` resolves only then (the nki modules call this)."""
    import ml_dtypes  # noqa: F401


def _ml(name, is_float, rank, itemsize):
    """A DType of ml_dtypes.<name> (itemsize bytes), ml_dtypes imported on first use."""
    return _MlDType(name, None, is_float, itemsize, rank)


DTYPES: dict[str, DType] = {d.name: d for d in [
    _d("float32", np.float32, True, 60),
    _d("tfloat32", np.float32, True, 50),  # stored as float32, mantissa rounded to 10 bits
    _d("float16", np.float16, True, 40),
    _ml("bfloat16", True, 41, 2),
    _ml("float8_e4m3", True, 20, 1),
    _ml("float8_e5m2", True, 21, 1),
    # OCP fp8 (NeuronCore-v4 only: NCV4_ONLY): no inf, max 448, NaN is S.1111.111
    _ml("float8_e4m3fn", True, 22, 1),
    _d("int8", np.int8, False, 10),
    _d("uint8", np.uint8, False, 10),
    _d("int16", np.int16, False, 12),
    _d("uint16", np.uint16, False, 12),
    _d("int32", np.int32, False, 14),
    _d("uint32", np.uint32, False, 14),
    # MX types (NeuronCore-v4): stored as their bits. is_float False for the packed ones, so
    # that a cast to them is a bit-level integer store (memset 0 writes zero bits).
    _ml("float8_e8m0fnu", True, 19, 1),
    _d("float8_e4m3fn_x4", np.uint32, False, 5, packed=4),
    _d("float8_e5m2_x4", np.uint32, False, 5, packed=4),
    _d("float4_e2m1fn_x4", np.uint16, False, 4, packed=4),
]}

# The `nl` short forms and a few NumPy spellings users write.
ALIASES = {
    "fp32": "float32", "tf32": "tfloat32", "fp16": "float16", "bf16": "bfloat16",
    "half": "float16", "float": "float32",
    "fp8_e4m3": "float8_e4m3", "fp8_e5m2": "float8_e5m2",
    "float8e4": "float8_e4m3", "float8e5": "float8_e5m2",
}

# dtypes only NeuronCore-v4 (trn3) stores and computes with: the NKI compiler refuses an
# F8E4M3FN operand on trn1/trn2 (error NCC_EVRF051)
NCV4_ONLY = frozenset({"float8_e4m3fn"})

FLOAT_NAMES = frozenset(n for n, d in DTYPES.items() if d.is_float)
INT_NAMES = frozenset(n for n, d in DTYPES.items() if not d.is_float and d.packed == 1)
PACKED_NAMES = frozenset(n for n, d in DTYPES.items() if d.packed > 1)


PREFIXES = ("nl.", "np.", "numpy.")  # stripped from dtype names (nl.float32, np.int8)


def lookup(name: str) -> DType | None:
    """The DType for an NKI name or alias (optionally prefixed `nl.`/`np.`), else None."""
    if not isinstance(name, str):
        return None
    key = name.strip()
    for prefix in PREFIXES:
        if key.startswith(prefix):
            key = key[len(prefix):]
    key = ALIASES.get(key, key)
    return DTYPES.get(key)


# An x4-packed array is its storage type (uint32 / uint16) tagged with the NKI dtype's name
# in the NumPy dtype's metadata: numpy_dtype("float8_e4m3fn_x4"), under nkirun's key and
# under "neuron_dtype" (the key of the neuron_dtypes stand-in nki-library's harness runs with
# here, so that its static_cast reads such an array as x4); either is read.
TAG_KEYS = ("nki_dtype", "neuron_dtype")


def numpy_dtype(name: str) -> np.dtype:
    """The NumPy dtype of an NKI dtype's arrays; for an x4 type, its tagged storage type."""
    d = DTYPES[name]
    return np.dtype(d.np_type, metadata=dict.fromkeys(TAG_KEYS, name)) if d.packed > 1 \
        else d.np_type


# NumPy reads an x4 name as its tagged storage type: np.dtype("float8_e4m3fn_x4") and so
# np.zeros(n, dtype=nl.float8_e4m3fn_x4) (an `nl` dtype is its name) are x4 (NumPy looks a
# name up in sctypeDict and converts what it finds, here a dtype with its metadata).
for _name, _d4 in DTYPES.items():
    if _d4.packed > 1:
        np.sctypeDict.setdefault(_name, numpy_dtype(_name))


def from_numpy(t: np.dtype) -> DType | None:
    """The NKI dtype whose storage is NumPy type `t` (float32 files map to float32); an
    x4 type when `t` carries its tag (numpy_dtype)."""
    t = np.dtype(t)
    for key in TAG_KEYS if t.metadata else ():
        d = DTYPES.get(t.metadata.get(key))
        if d is not None and d.np_type == t:
            return d
    ml = "ml_dtypes" in sys.modules  # (else no dtype of t's is an ml_dtypes type)
    for d in DTYPES.values():
        if d.__class__ is _MlDType and not ml:
            continue
        if d.np_type == t and d.name != "tfloat32" and d.packed == 1:
            return d
    return None


def nki_stand_in(t: np.dtype) -> str | None:
    """The NKI dtype to save an array of NumPy dtype `t` as when `t` is none (float64 ->
    float32, int64 -> int32, uint64 -> uint32), or None (complex, strings, objects)."""
    return {"f": "float32", "i": "int32", "u": "uint32"}.get(np.dtype(t).kind)


def _round_tf32(x: np.ndarray) -> np.ndarray:
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    finite = (bits & 0x7F800000) != 0x7F800000
    # round-to-nearest-even on the 13 dropped mantissa bits
    lsb = (bits >> 13) & 1
    rounded = ((bits + 0x0FFF + lsb) & 0xFFFFE000).astype(np.uint32)
    return np.where(finite, rounded, bits).view(np.float32)


def cast(x: np.ndarray, dt: DType) -> np.ndarray:
    """Cast float32 (or any numeric) values to `dt`'s storage type, hardware style."""
    x = np.asarray(x)
    if dt.name == "tfloat32":
        return _round_tf32(x.astype(np.float32, copy=False))
    if x.dtype == dt.np_type:
        return x
    with np.errstate(all="ignore"):
        if dt.is_float:
            return x.astype(np.float32, copy=False).astype(dt.np_type)
        if x.dtype.kind in "iu" and np.can_cast(x.dtype, dt.np_type):
            return x.astype(dt.np_type)
        info = np.iinfo(dt.np_type)
        f = np.rint(x.astype(np.float64, copy=False))
        f = np.nan_to_num(f, nan=0.0, posinf=info.max, neginf=info.min)
        return np.clip(f, info.min, info.max).astype(dt.np_type)


def widen_into(work: np.ndarray, a: np.ndarray) -> None:
    """a's values into the float32 array `work` (a's shape), exactly: `widen_into_plain`
    (NumPy's cast), except that bfloat16 is moved as bits. bfloat16 is float32's upper half,
    so its widening is a 16-bit shift of the bits into a uint32, the same bits for each of
    the 65,536 values, NaN payloads too (tests/hw/test_widen_bits.py), and faster than
    ml_dtypes' cast on this machine: ~1.5x on a contiguous tile, ~2x on a strided one
    (docs/performance.md, session 9). Twin: speed.BF16_SHIFT off. The two integer views are
    of native byte order, so the shift is right on either endianness."""
    if speed.BF16_SHIFT and a.dtype.name == "bfloat16" and a.dtype.itemsize == 2:
        np.left_shift(a.view(np.uint16), 16, out=work.view(np.uint32), dtype=np.uint32)
    else:
        np.copyto(work, a, casting="unsafe")


def widen_into_plain(work: np.ndarray, a: np.ndarray) -> None:
    """widen_into's definition: NumPy's (ml_dtypes') cast of a into float32 `work`."""
    np.copyto(work, a, casting="unsafe")


def filler(d: np.ndarray, value: np.ndarray):
    """A zero-argument call doing `filler_plain(d, value)()` (value: one element): every
    element of d set to value as stored in d's dtype, by the stored bits through an
    unsigned integer view of d: one `fill`, where NumPy's broadcast copy of an ml_dtypes
    type is ~8x slower (a (128, 2, 512) bfloat16 tile 49 -> 6 us, docs/performance.md,
    session 9). The bits are those the copy would store (the element is cast once by the
    copy itself). Twin: speed.FILL_BITS off (tests/hw/test_widen_bits.py)."""
    u = _UINT.get(d.dtype.itemsize)
    if not speed.FILL_BITS or u is None or d.dtype.hasobject or value.size != 1:
        return filler_plain(d, value)
    one = np.empty((), d.dtype)
    np.copyto(one, value.reshape(()), casting="unsafe")
    return partial(d.view(u).fill, one.view(u)[()])


def filler_plain(d: np.ndarray, value: np.ndarray):
    """filler's definition: NumPy's copy of value into every element of d."""
    return partial(np.copyto, d, value, casting="unsafe")


_UINT = {1: np.dtype(np.uint8), 2: np.dtype(np.uint16), 4: np.dtype(np.uint32),
         8: np.dtype(np.uint64)}


def to_f32(x: np.ndarray) -> np.ndarray:
    """Widen to float32 for computation (a no-op for float32 input)."""
    return np.asarray(x).astype(np.float32, copy=False)


def store_cast(values, to: DType, out_dtype: DType | None = None) -> np.ndarray:
    """`values` as Machine.write copies them into a `to` tensor: cast to the instruction's
    `dtype=` (out_dtype) and then to `to`, except where NumPy's own cast on the copy is
    nkirun's (the copy then casts; runner/plan.py's fast forms and memset use this too)."""
    v = values if values.__class__ is np.ndarray else np.asarray(values)
    if out_dtype is not None and out_dtype.np_type != to.np_type:
        v = cast(v, out_dtype)
    if not (v.dtype is to.np_type and to.name != "tfloat32") and \
            not _numpy_cast_is_ours(v.dtype, to):  # (the first test: the usual case)
        v = cast(v, to)
    return v


def _numpy_cast_is_ours(src: np.dtype, dst: DType) -> bool:
    """Whether NumPy's own cast of `src` values to dst's storage is nkirun's cast (dt.cast),
    so that write() can cast straight into the destination without a temporary: no cast at
    all, or float32 to a float type other than tfloat32 (both round to nearest even)."""
    if src == dst.np_type:
        return dst.name != "tfloat32"  # tfloat32 is float32 storage whose mantissa is rounded
    return src == np.float32 and dst.is_float and dst.name != "tfloat32"


def to_int32(value: int) -> int:
    """A register holds 32 bits: wrap like the hardware's two's-complement register."""
    return (int(value) + 2 ** 31) % 2 ** 32 - 2 ** 31
