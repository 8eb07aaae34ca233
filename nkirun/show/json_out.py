"""`--format json` written as a stream, each row of a long list on one line.

json.dumps(indent=2) runs Python's pure-Python encoder (the C encoder serves only
indent=None): on a 39,000-instruction `cost --format json` that was half the command's
time, and it built the whole document as one string first. Here the document's outer
levels are indented as before and every element of a list of objects or lists (an
instruction row, a diagnostic, a critical-path step) is one compact line from the C
encoder, written as it is made. The plain twin is `json.dumps(obj, indent=2)` (speed.
STREAMED_JSON False); both parse to the same value (tests/show/test_json_out.py).
"""
from __future__ import annotations

import json

_ROW = json.JSONEncoder(ensure_ascii=True, check_circular=False, allow_nan=True)
_CHUNK = 512  # rows per write: few calls, little held


def _rows(items: list, pad: str, write) -> None:
    encode = _ROW.encode
    for start in range(0, len(items), _CHUNK):
        part = items[start:start + _CHUNK]
        last = start + _CHUNK >= len(items)
        text = (",\n" + pad).join(encode(x) for x in part)
        write(pad + text + ("\n" if last else ",\n"))


class EncodedRows:
    """A list given as the compact JSON text of each element, written where the list would
    be, as it would be (the texts are what the row encoder gives each element; a producer
    such as show/cost_json.py spells them without building the elements)."""

    __slots__ = ("count", "texts")

    def __init__(self, count: int, texts):
        self.count, self.texts = count, texts  # texts: an iterator of `count` strings


def _encoded_rows(rows: EncodedRows, pad: str, write) -> None:
    from itertools import islice
    texts, left = iter(rows.texts), rows.count
    while left > 0:
        part = list(islice(texts, min(_CHUNK, left)))
        if not part:  # (a producer that miscounted: never a truncated document)
            raise ValueError(f"{rows.count} rows announced, {rows.count - left} given")
        left -= len(part)
        write(pad + (",\n" + pad).join(part) + ("\n" if left <= 0 else ",\n"))


def _key(key) -> str:
    """A dict key as json.dumps spells it."""
    if isinstance(key, str):
        return key
    if key is True or key is False or key is None:
        return _ROW.encode(key)
    if isinstance(key, float):
        return _ROW.encode(key)
    return str(int(key))


def _value(obj, depth: int, write) -> None:
    pad = "  " * (depth + 1)
    if isinstance(obj, dict) and obj:
        write("{\n")
        last = len(obj) - 1
        for i, (key, v) in enumerate(obj.items()):
            write(f"{pad}{_ROW.encode(_key(key))}: ")
            _value(v, depth + 1, write)
            write(",\n" if i < last else "\n")
        write("  " * depth + "}")
    elif obj.__class__ is EncodedRows:
        if not obj.count:
            write("[]")
            return
        write("[\n")
        _encoded_rows(obj, pad, write)
        write("  " * depth + "]")
    elif isinstance(obj, (list, tuple)) and obj and \
            any(isinstance(x, (dict, list, tuple)) for x in obj):
        write("[\n")
        _rows(list(obj), pad, write)
        write("  " * depth + "]")
    else:  # a scalar, an empty container or a list of scalars: one line
        write(_ROW.encode(obj))


def write_json(obj, stream) -> None:
    """Write obj to stream (a text stream) as JSON followed by a newline."""
    from nkirun import speed
    if not speed.STREAMED_JSON:
        stream.write(json.dumps(obj, indent=2) + "\n")
        return
    _value(obj, 0, stream.write)
    stream.write("\n")
