"""Reading a program file (either format) and its data files."""
from __future__ import annotations

import os

import numpy as np

from . import dtypes as dt
from .errors import Loc, NkirunError, error
from .ir import Program, TensorDecl

TEXT_SUFFIXES = (".nkis", ".nki.txt", ".txt")


def detect_format(path: str, fmt: str | None = None) -> str:
    if fmt and fmt != "auto":
        return fmt
    return "text" if path.endswith(TEXT_SUFFIXES) else "yaml"


def parse_file(path: str, fmt: str | None = None):
    """(Program | None, diagnostics) for a program file in YAML or text form."""
    from .parse_yaml import parse_yaml, read_source
    text, diags = read_source(path)
    if text is None:
        return None, diags
    base = os.path.dirname(path) or "."
    if detect_format(path, fmt) == "text":
        from .parse_text import parse_text
        return parse_text(text, path, base)
    return parse_yaml(text, path, base)


def load_npy(path: str, decl: TensorDecl, what: str, loc: Loc) -> np.ndarray:
    """Read a .npy for `decl` safely (no pickles) and check it against the declaration."""
    name = decl.name
    try:
        arr = np.load(path, allow_pickle=False, mmap_mode=None)
    except FileNotFoundError:
        raise NkirunError(error("E070", f"tensor `{name}`: {what} {path} not found", loc))
    except ValueError as e:
        msg = str(e)
        if "pickle" in msg.lower() or "object" in msg.lower():
            raise NkirunError(error("E071", f"tensor `{name}`: {path} holds Python objects; "
                                    "nkirun never unpickles data", loc,
                                    hint="save a numeric array with np.save"))
        raise NkirunError(error("E072", f"tensor `{name}`: {path} is not a valid .npy file ({msg})",
                                loc))
    except (OSError, EOFError) as e:
        raise NkirunError(error("E072", f"tensor `{name}`: cannot read {path}: {e}", loc))
    if not isinstance(arr, np.ndarray):
        raise NkirunError(error("E072", f"tensor `{name}`: {path} is not a single .npy array",
                                loc, hint="use np.save, not np.savez"))
    want = decl.dtype.np_type
    if arr.dtype.kind == "V" and decl.dtype.is_float and arr.dtype.itemsize == want.itemsize \
            and decl.dtype.np_type.kind == "V":
        arr = arr.view(want)  # how np.save stores ml_dtypes arrays (bfloat16 as |V2, fp8 as |V1)
    elif arr.dtype.kind == "O":
        raise NkirunError(error("E071", f"tensor `{name}`: {path} holds Python objects", loc))
    elif arr.dtype != want:
        got = dt.from_numpy(arr.dtype)
        raise NkirunError(error(
            "E073", f"tensor `{name}`: {path} has dtype {got.name if got else arr.dtype}, "
            f"declared {decl.dtype.name}", loc,
            hint=f"save it with dtype {decl.dtype.name} (ml_dtypes.{decl.dtype.name} for "
                 "bfloat16/fp8), or change the declaration"))
    if arr.shape != decl.shape:
        raise NkirunError(error("E074", f"tensor `{name}`: {path} has shape {list(arr.shape)}, "
                                f"declared {list(decl.shape)}", loc))
    if decl.dtype.name == "tfloat32":
        arr = dt.cast(arr, decl.dtype)
    return np.ascontiguousarray(arr)


def initial_buffers(program: Program, inputs: dict | None = None):
    """Allocate every tensor with its initial contents: (buffers, written-masks)."""
    inputs = inputs or {}
    buffers, written = {}, {}
    for name, t in program.tensors.items():
        loc = t.key_locs.get(t.init or "", t.loc)
        if name in inputs:
            src = inputs[name]
            if isinstance(src, str):
                arr = load_npy(src, t, "--input file", loc)
            else:
                arr = _check_array(np.asarray(src), t, loc)
            buffers[name] = arr.copy() if not isinstance(src, str) else arr
            written[name] = None
        elif t.init == "file":
            path = os.path.join(program.base_dir, t.init_value)
            buffers[name] = load_npy(path, t, "file", loc)
            written[name] = None
        elif t.init == "fill":
            buffers[name] = np.full(t.shape, 0, t.dtype.np_type)
            buffers[name][...] = dt.cast(np.array(t.init_value), t.dtype)
            written[name] = None
        elif t.init == "data":
            buffers[name] = dt.cast(np.asarray(t.init_value, np.float64).astype(
                np.float32) if t.dtype.is_float else t.init_value, t.dtype)
            written[name] = None
        else:
            buffers[name] = np.zeros(t.shape, t.dtype.np_type)
            written[name] = np.zeros(t.shape, bool)
    return buffers, written


def _check_array(arr: np.ndarray, t: TensorDecl, loc: Loc) -> np.ndarray:
    if arr.shape != t.shape:
        raise NkirunError(error("E074", f"input for `{t.name}` has shape {list(arr.shape)}, "
                                f"declared {list(t.shape)}", loc))
    if arr.dtype != t.dtype.np_type:
        if arr.dtype.kind in "fiub" or arr.dtype == t.dtype.np_type:
            return dt.cast(arr.astype(np.float64) if arr.dtype.kind != "f" else arr, t.dtype)
        raise NkirunError(error("E073", f"input for `{t.name}` has dtype {arr.dtype}, declared "
                                f"{t.dtype.name}", loc))
    return arr
