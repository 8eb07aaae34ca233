"""Reading a program file, in either format: its text, or a located diagnostic for a file
that is missing, unreadable, binary or not UTF-8."""
from __future__ import annotations

from nkirun.diagnostics import Diagnostic, Loc, error


def read_source(path: str) -> tuple[str | None, list[Diagnostic]]:
    """The program text, or a diagnostic for a missing/unreadable/non-UTF-8 file."""
    from nkirun.safeio import not_regular
    why = not_regular(path)  # before opening: reading a FIFO or /dev/zero never ends
    if why is not None:
        return None, [error("E000", f"cannot read program file {path}: it is {why}, not a "
                            "regular file", Loc(path))]
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except MemoryError:
        return None, [error("E000", f"program file {path} is too large to read into memory",
                            Loc(path))]
    except FileNotFoundError:
        return None, [error("E000", f"program file not found: {path}", Loc(path))]
    except OSError as e:
        return None, [error("E000", f"cannot read program file {path}: {e.strerror}", Loc(path))]
    except ValueError:  # a NUL character in the path
        return None, [error("E000", f"not a valid program path: {path!r}", Loc(repr(path)))]
    binary = _binary_kind(raw)
    if binary is not None:
        return None, [error("E001", f"{path} is not a program ({binary})", Loc(path),
                            hint="a program is a YAML (.yaml) or text (.nkis) file; .npy data "
                                 "goes in a tensor's `file:` or `run --input NAME=PATH`")]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[:e.start].count(b"\n") + 1
        return None, [error("E001", f"the program is not UTF-8 text (byte 0x{raw[e.start]:02x} "
                            f"at offset {e.start})", Loc(path, line, 1),
                            hint="save the file as UTF-8")]
    return text.lstrip("\ufeff"), []


_MAGIC = ((b"\x93NUMPY", "binary data: a NumPy .npy file"),
          (b"PK\x03\x04", "binary data: a zip archive, e.g. an .npz file"),
          (b"\x7fELF", "binary data: an executable"),
          (b"\x89PNG", "binary data: a PNG image"))


def _binary_kind(raw: bytes) -> str | None:
    """Why `raw` is binary data rather than text (a known header, or mostly bytes no text
    has), or None for text — also text in another encoding, whose
    one-byte-off UTF-8 error gets the "save as UTF-8" advice instead."""
    for magic, what in _MAGIC:
        if raw.startswith(magic):
            return what
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16/32 byte-order marks: text
        return None
    head = raw[:8192]  # (a stray NUL in a text program is a located error of its own)
    controls = sum(b < 32 and b not in b"\t\n\r\f\v\x1b" for b in head)
    return "binary data" if head and controls * 10 > len(head) else None
