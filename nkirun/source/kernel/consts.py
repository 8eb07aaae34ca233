"""The constant objects kernels compare and pass around: dtypes, buffers, tile sizes,
enums and operator tokens (the `nl.add` / `nl.exp` objects used as `op=`).

Readings:
- NKI 0.6 types dtypes as plain strings (`DType = str`), so an nkirun dtype is a `str`
  subclass whose value is its name: `str(nl.float32) == "float32"`, hashable, and it
  compares equal to its name. `nl.bool_` is stored as a byte (its documentation), so it
  is nkirun's uint8; every other NKI dtype is nkirun's of the same name (float8_e4m3fn
  on trn3 only: E680), and a dtype NKI lacks (float64) is refused, located (E605).
  The MX x4 dtypes are such strs too (NlPackedDType), which NumPy reads as their tagged
  storage types (hw.dtypes.numpy_dtype), so arrays made with them are x4 arrays.
- Buffers are `str` subclasses too; `nl.hbm` is documented as an alias of `private_hbm`
  and is the same object. Kernel parameters live in `shared_hbm`.
- `tile_size` values are the documented NeuronCore limits (pmax 128, PSUM bank 2 KiB =
  512 fp32, stationary 128, moving 512, bn_stats 512); the SBUF sizes follow --target.
  The alignments (PSUM 4 B, SBUF 1 B) are not given by the docs and are our assumption.
"""
from __future__ import annotations

import sys

import numpy as np

from nkirun.hw import dtypes as dt


class NlDType(str):
    """An `nl` dtype: its string value is the NKI name."""

    __slots__ = ()

    @property
    def nkirun(self):
        """The nkirun DType, or None when nkirun does not support this NKI dtype."""
        return _nkirun_dtype(str.__str__(self))

    @property
    def itemsize(self) -> int:
        d = self.nkirun
        return d.itemsize if d is not None else 1

    def __repr__(self) -> str:
        return f"nl.{str.__str__(self)}"


class NlPackedDType(NlDType):
    """An MX x4 `nl` dtype (`nl.float8_e4m3fn_x4`, ...): a str like every `nl` dtype (NKI
    0.6 types dtypes as `str`), so it compares and hashes as its name and never equals
    another dtype of its storage type. NumPy reads a str by its name, and nkirun has NumPy
    read these names as their storage types tagged with the name (hw.dtypes.numpy_dtype),
    so `np.zeros(n, dtype=nl.float4_e2m1fn_x4)` is an x4 array, as simulate reads it.
    Not a NumPy dtype: NumPy dtypes compare and hash without their metadata, so
    float8_e4m3fn_x4 would equal float8_e5m2_x4 and uint32 (docs/kernels.md). Compared with a
    NumPy dtype, the dtype's x4 tag decides. (Only here: a plain `nl` dtype keeps str's own
    comparison, which kernels and libraries make all the time; `nl.uint32 == a.dtype` of an
    x4 array `a` is then NumPy's comparison, as `a.dtype == nl.uint32` is anyway.)"""

    __slots__ = ()

    def __eq__(self, other):
        if isinstance(other, np.dtype):
            return _same_as_numpy(self, other)
        return str.__eq__(self, other)

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = str.__hash__


def _same_as_numpy(d: NlDType, t: np.dtype) -> bool:
    """`d == t` for an x4 `d` and a NumPy dtype: the tag decides."""
    found = dt.from_numpy(t)
    return found is not None and found.name == (d.nkirun.name if d.nkirun else str(d))


def _nkirun_dtype(key: str):
    hit = _NKIRUN.get(key, _NKIRUN)
    if hit is _NKIRUN:
        hit = _NKIRUN[key] = dt.lookup(_STORAGE.get(key, key))
    return hit


NL_DTYPES = (NlDType,)  # isinstance: any `nl` dtype (the x4 ones too)

_DTYPE_NAMES = ("bool_", "int8", "int16", "int32", "uint8", "uint16", "uint32", "float16",
                "float32", "bfloat16", "tfloat32", "float8_e4m3", "float8_e4m3fn",
                "float8_e5m2", "float8_e5m2_x4", "float8_e4m3fn_x4", "float8_e8m0fnu",
                "float4_e2m1fn_x4")
_STORAGE = {"bool_": "uint8"}
_NKIRUN: dict = {}  # NKI dtype name -> nkirun DType or None
DTYPES = {n: (NlPackedDType if n.endswith("_x4") else NlDType)(n) for n in _DTYPE_NAMES}
DTYPES["bool"] = DTYPES["bool_"]  # nki-library writes nl.bool


def to_dtype(value):
    """An NlDType for an `nl` dtype, a dtype name, or a NumPy/ml_dtypes dtype; else None."""
    if isinstance(value, NL_DTYPES):
        return value
    if isinstance(value, str):
        d = DTYPES.get(value.removeprefix("nl.").removeprefix("np."))
        if d is not None:
            return d
        found = dt.lookup(value)
        return DTYPES[found.name] if found is not None else None
    try:
        found = dt.from_numpy(np.dtype(value))
    except (TypeError, ValueError):
        return None
    return DTYPES[found.name] if found is not None else None


class Buffer(str):
    """An `nl` memory region (`nl.sbuf`, `nl.psum`, `nl.shared_hbm`, ...)."""

    __slots__ = ()

    @property
    def ir(self) -> str:
        # interned: each traced tile's TensorDecl keeps it (a new str per tile otherwise)
        return "hbm" if self.endswith("hbm") else sys.intern(str.__str__(self))

    def __repr__(self) -> str:
        return f"nl.{str.__str__(self)}"


sbuf, psum = Buffer("sbuf"), Buffer("psum")
private_hbm, shared_hbm = Buffer("private_hbm"), Buffer("shared_hbm")
hbm = private_hbm
BUFFERS = {"sbuf": sbuf, "psum": psum, "hbm": hbm, "private_hbm": private_hbm,
           "shared_hbm": shared_hbm}


def to_buffer(value):
    if isinstance(value, Buffer):
        return value
    if isinstance(value, str):
        return BUFFERS.get(value.removeprefix("nl."))
    name = getattr(value, "name", None)  # an Enum member such as MemoryRegion.sbuf
    return BUFFERS.get(name) if isinstance(name, str) else None


class TileSize:
    """`nl.tile_size`: hardware tile limits (SBUF sizes follow the target)."""

    pmax = 128
    psum_fmax = 512
    psum_bank_fmax = 512
    psum_bank_fmax_bytes = 2048
    psum_fmax_bytes = 2048
    psum_num_banks = 8
    gemm_stationary_fmax = 128
    gemm_moving_fmax = 512
    bn_stats_fmax = 512
    psum_min_align = 4
    sbuf_min_align = 1

    def __init__(self):
        self.sbuf_bytes_per_partition = 196608

    @property
    def sbuf_fmax_bytes(self) -> int:
        return self.sbuf_bytes_per_partition

    @property
    def sbuf_fmax(self) -> int:
        return self.sbuf_bytes_per_partition // 4

    @property
    def sbuf_size_bytes(self) -> int:
        return self.sbuf_bytes_per_partition * self.pmax

    @property
    def total_available_sbuf_size(self) -> int:
        return self.sbuf_bytes_per_partition

    def __getattr__(self, name):  # a limit nkirun does not know: E601, not AttributeError
        if name.startswith("_"):
            raise AttributeError(name)
        from nkirun.source.kernel.unsupported import unsupported
        raise unsupported(f"nki.language.tile_size.{name}")

    def __repr__(self) -> str:
        return "nl.tile_size"


tile_size = TileSize()


class Token:
    """An enum member or operator token: hashable, compares by identity, with the
    keyword value nkirun's instruction table takes (`ir`)."""

    __slots__ = ("ir", "label", "call")

    def __init__(self, ir: str, label: str, call=None):
        self.ir, self.label, self.call = ir, label, call

    def __repr__(self) -> str:
        return self.label

    def __call__(self, *args, **kwargs):
        if self.call is None:
            raise TypeError(f"{self.label} is not callable")
        return self.call(*args, **kwargs)

    @property
    def name(self) -> str:
        return self.ir

    @property
    def value(self) -> str:
        return self.ir


class EnumNamespace:
    """A namespace of Tokens (`nisa.engine.vector`, `nisa.reduce_cmd.reset_reduce`)."""

    def __init__(self, qual: str, members):
        self._qual = qual
        self._members = {m: Token(m, f"{qual}.{m}") for m in members}
        for m, tok in self._members.items():
            setattr(self, m, tok)

    def __iter__(self):
        return iter(self._members.values())

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        from nkirun.source.kernel.unsupported import unsupported
        raise unsupported(f"{self._qual}.{name}")

    def __repr__(self) -> str:
        return self._qual


class VersionToken(Token):
    """An nc_version member: ordered by generation (gen2 < gen3 < gen4)."""

    __slots__ = ()

    def _gen(self, other) -> tuple:
        if not isinstance(other, VersionToken):
            return NotImplemented
        return int(self.ir[3:]), int(other.ir[3:])

    def __lt__(self, other):
        a, b = self._gen(other)
        return a < b

    def __le__(self, other):
        a, b = self._gen(other)
        return a <= b

    def __gt__(self, other):
        a, b = self._gen(other)
        return a > b

    def __ge__(self, other):
        a, b = self._gen(other)
        return a >= b

    __hash__ = Token.__hash__


class NcVersion(EnumNamespace):
    """nisa.nc_version: members compare by generation (gen2 < gen3 < gen4)."""

    def __init__(self):
        super().__init__("nki.isa.nc_version", ())
        for m in ("gen2", "gen3", "gen4"):
            self._members[m] = VersionToken(m, f"nki.isa.nc_version.{m}")
            setattr(self, m, self._members[m])


TARGET_VERSION = {"trn1": "gen2", "inf2": "gen2", "trn2": "gen3", "trn3": "gen4"}
