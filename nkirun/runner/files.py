"""Data files: the .npy inputs a program starts from (the outputs a run writes: outputs.py)."""
from __future__ import annotations

import ast
import os
import struct

import numpy as np

from nkirun import safeio
from nkirun.hw import dtypes as dt
from nkirun.diagnostics import Loc, NkirunError, error
from nkirun.ir import Program, TensorDecl

_NPY_MAGIC = b"\x93NUMPY"
_ZIP_MAGIC = b"PK\x03\x04"


def load_npy(path: str, decl: TensorDecl, what: str, loc: Loc,
             any_dtype: bool = False) -> np.ndarray:
    """Read a .npy for `decl` safely and check it against the declaration.

    The header is read and checked (dtype, shape, file length) before any data is read,
    so a file claiming a huge shape allocates nothing; pickles are never loaded.
    Accepted forms (docs/robustness.md): exactly the declared storage dtype, in either
    byte order; for bfloat16/fp8 also the raw void form ml_dtypes arrays get from np.save
    (|V2 for bfloat16, |V1 for the fp8 types); C or Fortran order. With `any_dtype` (a
    golden file) any other plain numeric dtype is returned as it is (|V2 as bfloat16,
    |V1 as float8_e4m3, '<f1' as float8_e5m2).
    """
    name = decl.name

    def bad(code: str, msg: str, hint: str | None = None) -> NkirunError:
        return NkirunError(error(code, f"tensor `{name}`: {what} {path} {msg}", loc, hint=hint))

    if "\0" in path:  # open() would raise ValueError
        raise bad("E070", "is not a valid path (it contains a NUL character)")
    why = safeio.not_regular(path)  # checked before opening: a FIFO would block forever
    if why is not None:
        raise bad("E072", f"is {why}, not a .npy file", hint="give the path of a regular file")
    try:
        with open(path, "rb") as f:
            _check_magic(f, bad)
            try:
                shape, fortran, dtype, e5m2 = _read_header(f)
            except (ValueError, EOFError, TypeError, struct.error) as e:
                raise bad("E072", f"has a damaged or truncated .npy header ({e})") from None
            unpack = _mx_unpacked(np.dtype(dtype), tuple(shape), decl)
            if unpack is not None:  # x4 MX data given as its unpacked bytes
                return _read_mx(f, shape, fortran, decl, unpack, bad)
            other = any_dtype and _other_numeric(np.dtype(dtype), e5m2, decl)
            if e5m2 and decl.dtype.name != "float8_e5m2" and not other:
                raise bad("E073", f"holds float8_e5m2 values (descr '<f1', as np.save writes "
                          f"ml_dtypes.float8_e5m2), declared {decl.dtype.name}",
                          hint="declare the tensor float8_e5m2, or save the declared dtype")
            arr_dtype = np.dtype(dtype) if other else _accepted_dtype(np.dtype(dtype), decl, bad)
            if tuple(shape) != decl.shape:
                raise bad("E074", f"has shape {list(shape)}, declared {list(decl.shape)}")
            raw = _read_data(f, decl.size * arr_dtype.itemsize, bad)
    except FileNotFoundError:
        raise bad("E070", "not found") from None
    except IsADirectoryError:
        raise bad("E072", "is a folder, not a .npy file") from None
    except OSError as e:
        raise bad("E072", f"cannot be read: {e.strerror or e}") from None
    arr = np.frombuffer(raw, dtype=arr_dtype).reshape(shape, order="F" if fortran else "C")
    if other:
        return np.array(_as_numeric(arr, e5m2), order="C")
    return _as_declared(arr, decl)


def _check_magic(f, bad) -> None:
    """Refuses a file that does not start with the .npy magic (an .npz, an empty file, ...);
    leaves `f` at its start."""
    head = f.read(len(_NPY_MAGIC))
    if head != _NPY_MAGIC:
        if head.startswith(_ZIP_MAGIC[:len(head)]) and len(head) >= 4:
            raise bad("E072", "is an .npz archive, not a single .npy array",
                      hint="save one array with np.save")
        raise bad("E072", "is not a .npy file (no NumPy header)" if head else
                  "is empty", hint="write it with np.save")
    f.seek(0)


def _read_data(f, need: int, bad) -> bytes:
    """The `need` data bytes after the header, refusing a truncated file before reading."""
    data_start = f.tell()
    f.seek(0, os.SEEK_END)
    have = f.tell() - data_start
    if have < need:
        raise bad("E072", f"is truncated: its header declares {need:,} data bytes, "
                  f"the file holds {have:,}")
    f.seek(data_start)
    return f.read(need)


def _as_declared(arr: np.ndarray, decl: TensorDecl) -> np.ndarray:
    """The data read in an accepted form as an owned, writable, C-ordered array of the
    declared storage dtype (native byte order; tfloat32 rounded)."""
    if arr.dtype != decl.dtype.np_type:
        arr = arr.astype(arr.dtype.newbyteorder("=")) if arr.dtype.kind != "V" else arr
        arr = arr.view(decl.dtype.np_type)
    if decl.dtype.name == "tfloat32":
        arr = dt.cast(arr, decl.dtype)
    return np.array(arr, order="C")  # an owned, writable, C-ordered copy


def _mx_unpacked(got: np.dtype, shape: tuple, decl: TensorDecl):
    """For an x4 MX tensor, the other accepted .npy forms (docs/mx-and-random.md): one byte
    per value with 4x the last dim (an ml_dtypes fp8 / float4_e2m1fn array, or uint8), and
    for float4_e2m1fn_x4 also two codes per byte (low nibble first) with 2x the last dim.
    Returns "bytes" / "nibbles" / "pairs", or None (then only the packed storage type)."""
    if decl.dtype.packed == 1 or got.itemsize != 1 or got.kind not in "uVf" or not shape \
            or tuple(shape[:-1]) != decl.shape[:-1]:
        return None
    last, fp4 = decl.shape[-1], decl.dtype.name == "float4_e2m1fn_x4"
    if shape[-1] == 4 * last:
        return "nibbles" if fp4 else "bytes"
    if fp4 and shape[-1] == 2 * last and got.kind == "u":
        return "pairs"
    return None


def _read_mx(f, shape, fortran: bool, decl: TensorDecl, form: str, bad) -> np.ndarray:
    """Read unpacked MX bytes and pack them into the declared x4 storage."""
    need = int(np.prod(shape, dtype=np.int64))
    raw = f.read(need)
    if len(raw) < need:
        raise bad("E072", f"is truncated: its header declares {need:,} data bytes, the file "
                  f"holds {len(raw):,}")
    b = np.ascontiguousarray(np.frombuffer(raw, np.uint8).reshape(
        shape, order="F" if fortran else "C"))
    if form == "bytes":  # four fp8 bytes -> one little-endian uint32
        return b.reshape(decl.shape + (4,)).view("<u4").reshape(decl.shape).astype(np.uint32)
    if form == "pairs":  # two bytes of two codes each -> one little-endian uint16
        return b.reshape(decl.shape + (2,)).view("<u2").reshape(decl.shape).astype(np.uint16)
    codes = (b.reshape(decl.shape + (4,)) & 0xF).astype(np.uint16)  # one e2m1 code per byte
    return (codes << np.array([0, 4, 8, 12], np.uint16)).sum(axis=-1, dtype=np.uint16)


# np.save writes ml_dtypes arrays as raw bytes (bfloat16 '<V2', float8_e4m3 '<V1',
# float8_e5m2 '<f1'): for these declared dtypes, raw bytes of the same width are accepted.
_SAVED_RAW = frozenset({"bfloat16", "float8_e4m3", "float8_e4m3fn", "float8_e5m2",
                        "float8_e8m0fnu"})
_MAX_HEADER = 10_000  # NumPy's own default limit for .npy headers
# ml_dtypes' float8_e5m2 is saved with descr '<f1', which NumPy cannot read back: it
# is read as raw bytes, and accepted for float8_e5m2 only.
_E5M2_DESCR = ("<f1", "|f1", ">f1")


def _read_header(f):
    """(shape, fortran_order, dtype, is_e5m2) from a .npy header, parsed as a literal."""
    version = np.lib.format.read_magic(f)
    if version == (1, 0):
        size, encoding = struct.unpack("<H", f.read(2) or b"\0\0")[0], "latin1"
    elif version in ((2, 0), (3, 0)):
        raw = f.read(4)
        if len(raw) < 4:
            raise EOFError("the header length is cut off")
        size, encoding = struct.unpack("<I", raw)[0], "latin1" if version == (2, 0) else "utf8"
    else:
        raise ValueError(f"unsupported .npy format version {version[0]}.{version[1]}")
    if size > _MAX_HEADER:
        raise ValueError(f"header of {size:,} bytes, over {_MAX_HEADER:,}")
    text = f.read(size)
    if len(text) < size:
        raise EOFError(f"the header needs {size} bytes, the file has {len(text)}")
    try:
        d = ast.literal_eval(text.decode(encoding))
    except (SyntaxError, ValueError, UnicodeDecodeError, RecursionError, MemoryError):
        raise ValueError("the header is not a valid .npy header") from None
    if not (isinstance(d, dict) and set(d) == {"descr", "fortran_order", "shape"}
            and isinstance(d["fortran_order"], bool) and isinstance(d["shape"], tuple)
            and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0
                    for n in d["shape"])):
        raise ValueError("the header lacks descr/fortran_order/shape or has bad values")
    e5m2 = isinstance(d["descr"], str) and d["descr"] in _E5M2_DESCR
    dtype = np.dtype("V1") if e5m2 else np.lib.format.descr_to_dtype(d["descr"])
    return d["shape"], d["fortran_order"], dtype, e5m2


def _other_numeric(got: np.dtype, e5m2: bool, decl: TensorDecl) -> bool:
    """Whether a golden file's dtype is a plain numeric one other than the declared."""
    if e5m2:
        return decl.dtype.name != "float8_e5m2"
    if got.hasobject or got.fields is not None or got.subdtype is not None:
        return False
    if got.kind == "V":
        return got.itemsize in (1, 2) and (decl.dtype.name not in _SAVED_RAW
                                           or got.itemsize != decl.dtype.itemsize)
    return got.kind in "biuf" and got.newbyteorder("=") != decl.dtype.np_type


def _as_numeric(arr: np.ndarray, e5m2: bool) -> np.ndarray:
    """A golden file's array in a NumPy/ml_dtypes type, native byte order."""
    import ml_dtypes
    if arr.dtype.kind == "V":
        return arr.view(ml_dtypes.float8_e5m2 if e5m2 else
                        ml_dtypes.bfloat16 if arr.dtype.itemsize == 2 else ml_dtypes.float8_e4m3)
    return arr.astype(arr.dtype.newbyteorder("="))


def _accepted_dtype(got: np.dtype, decl: TensorDecl, bad) -> np.dtype:
    """The file's dtype if it is an accepted form of the declared one, else raise E071/E073."""
    want = decl.dtype.np_type
    raw_ok = decl.dtype.name in _SAVED_RAW
    if got.hasobject:
        raise bad("E071", "holds Python objects (dtype object); nkirun never unpickles data, "
                  "since loading a pickle can run arbitrary code",
                  hint=f"save a numeric array: np.save(path, arr.astype(np.{want.name}))"
                  if not raw_ok else f"save a {decl.dtype.name} array with np.save")
    if got.fields is not None or got.subdtype is not None:
        raise bad("E073", f"has a structured dtype {got}, declared {decl.dtype.name}",
                  hint="save a plain array of the declared dtype")
    if got == want or (got.kind != "V" and got.newbyteorder("=") == want):
        return got  # exact, or the same type in the other byte order
    if decl.dtype.name == "uint8" and got == np.bool_:
        return got  # booleans: nl.bool_ is stored as a byte (0 or 1)
    if decl.dtype.name == "float8_e8m0fnu" and got == np.uint8:
        return got  # MX scales: uint8 holds the same bits (docs/mx-and-random.md)
    if got.kind == "V" and raw_ok:  # ml_dtypes arrays are saved as raw bytes
        if got.itemsize == want.itemsize:
            return got
        raise bad("E073", f"holds {got.itemsize}-byte raw values ({got.str}); "
                  f"{decl.dtype.name} is {want.itemsize} byte{'s' * (want.itemsize > 1)}",
                  hint=f"save an ml_dtypes.{decl.dtype.name} array with np.save")
    shown = "raw bytes " + got.str if got.kind == "V" else (
        dt.from_numpy(got).name if dt.from_numpy(got) else str(got))
    hint = f"save it as {decl.dtype.name} (np.save(path, arr.astype(...))), or change the " \
        "declaration"
    if raw_ok and got.kind in "iu" and got.itemsize == want.itemsize:
        hint = (f"if these are the raw bits of {decl.dtype.name} values, save "
                f"arr.view(ml_dtypes.{decl.dtype.name}) instead; integer files are not "
                "reinterpreted")
    elif raw_ok:
        hint = f"save an ml_dtypes.{decl.dtype.name} array with np.save, or change the " \
            "declaration"
    elif got.kind == "V":
        hint = ("np.save stores ml_dtypes arrays as raw bytes: |V2 is bfloat16, |V1 an fp8 "
                "type; declare the tensor with that dtype, or save it as " + decl.dtype.name)
    raise bad("E073", f"has dtype {shown}, declared {decl.dtype.name}", hint=hint)


UNINITIALIZED = ("error", "strict", "nan", "zero")


def initial_buffers(program: Program, inputs: dict | None = None, uninitialized: str = "error",
                    into: dict | None = None):
    """Allocate every tensor with its initial contents: (buffers, written-masks). `into`:
    arrays to copy the given inputs into instead, by name (a kept plan's, runner/
    plan_keep.py; an array of another shape or dtype is not used).

    A tensor with no initial contents is tracked element by element (written-mask) under
    the `error` and `strict` policies (runner/carried.py: reading an unwritten element
    is E090 when its garbage is needed / at once); under `nan` / `zero` it starts as NaN
    (0 for integer dtypes, which have no NaN) / 0, and reads of it see that fill — but it is
    tracked all the same: the fill is what an unwritten element reads as, not a write
    (nc_matmul's auto accumulate overwrites an element nothing wrote)."""
    inputs = inputs or {}
    buffers, written = {}, {}
    for name, t in program.tensors.items():
        loc = t.key_locs.get(t.init or "", t.loc)
        if name in inputs:
            src = inputs[name]
            if isinstance(src, str):  # a file is data like `file:`: dtype and shape must match
                arr = load_npy(src, t, "--input file", loc)
            else:  # an array in memory is converted (see _check_array)
                arr = _check_array(np.asarray(src), t, loc)
            target = None if into is None else into.get(name)
            if target is not None and target.shape == arr.shape and target.dtype == arr.dtype:
                np.copyto(target, arr)
                buffers[name] = target
            else:
                buffers[name] = arr.copy() if arr is src else arr
            written[name] = None
        elif t.init == "file":
            path = os.path.join(program.base_dir, t.init_value)
            buffers[name] = load_npy(path, t, "file", loc)
            written[name] = None
        elif t.init == "fill":
            buffers[name] = np.full(t.shape, 0, t.dtype.np_type)
            buffers[name][...] = dt.cast(np.array(t.init_value, np.float64), t.dtype)
            written[name] = None
        elif t.init == "data":
            buffers[name] = dt.cast(np.asarray(t.init_value, np.float64).astype(
                np.float32) if t.dtype.is_float else t.init_value, t.dtype)
            written[name] = None
        else:
            buffers[name], written[name] = fresh_buffer(t, uninitialized)
    return buffers, written


def fresh_buffer(t: TensorDecl, uninitialized: str = "error"):
    """(storage, written-mask) of a tensor without initial contents, under the policy."""
    buf = np.zeros(t.shape, t.dtype.np_type)
    if uninitialized == "nan" and t.dtype.is_float:
        buf[...] = dt.cast(np.array(np.nan, np.float32), t.dtype)
    return buf, np.zeros(t.shape, bool)


def _check_array(arr: np.ndarray, t: TensorDecl, loc: Loc) -> np.ndarray:
    """An input in the declared dtype and shape: another numeric dtype (float64, int,
    bool, bfloat16/fp8) is cast as nkirun casts results (round to nearest even,
    integers saturate); a 0-d array fills the tensor. Anything else is E073/E074."""
    if arr.dtype != t.dtype.np_type and t.dtype.packed > 1:  # x4 MX data: packed bits only
        raise NkirunError(error("E073", f"input for `{t.name}` has dtype {arr.dtype}; "
                                f"{t.dtype.name} data is given as its packed bits, "
                                f"{t.dtype.np_type} (docs/mx-and-random.md)", loc))
    if arr.dtype != t.dtype.np_type or t.dtype.name == "tfloat32":
        if arr.dtype.kind not in "fiub" and dt.from_numpy(arr.dtype) is None:
            raise NkirunError(error("E073", f"input for `{t.name}` has dtype {arr.dtype}, "
                                    f"declared {t.dtype.name}", loc,
                                    hint="give a numeric array (it is cast to the declared "
                                         "dtype)"))
        with np.errstate(all="ignore"):  # out-of-range values saturate, as in dt.cast
            src = arr.astype(np.float64) if arr.dtype.kind != "f" or arr.dtype.itemsize < 4 \
                else arr
            arr = dt.cast(src, t.dtype)
    if arr.shape == () and t.shape != ():
        return np.full(t.shape, arr, t.dtype.np_type)
    if arr.shape != t.shape:
        raise NkirunError(error("E074", f"input for `{t.name}` has shape {list(arr.shape)}, "
                                f"declared {list(t.shape)}", loc,
                                hint="give an array of the declared shape (or a 0-d array "
                                     "to fill it)"))
    return arr
