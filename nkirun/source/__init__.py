"""Program sources: a YAML or text program file (or, later, a Python kernel) becomes the IR."""
from __future__ import annotations

import os

TEXT_SUFFIXES = (".nkis", ".nki.txt", ".txt")


def detect_format(path: str, fmt: str | None = None) -> str:
    if fmt and fmt != "auto":
        return fmt
    return "text" if path.endswith(TEXT_SUFFIXES) else "yaml"


def parse_file(path: str, fmt: str | None = None):
    """(Program | None, diagnostics) for a program file in YAML or text form."""
    from nkirun.source.reading import read_source
    text, diags = read_source(path)
    if text is None:
        return None, diags
    base = os.path.dirname(path) or "."
    if detect_format(path, fmt) == "text":  # (a text program imports no YAML)
        from nkirun.source.text_front import parse_text
        return parse_text(text, path, base)
    from nkirun.source.yaml_front import parse_yaml
    return parse_yaml(text, path, base)
