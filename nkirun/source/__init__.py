"""Program sources: a YAML or text program file (or, later, a Python kernel) becomes the IR."""
from __future__ import annotations

import gc
import os
from contextlib import contextmanager

TEXT_SUFFIXES = (".nkis", ".nki.txt", ".txt")


def detect_format(path: str, fmt: str | None = None) -> str:
    if fmt and fmt != "auto":
        return fmt
    return "text" if path.endswith(TEXT_SUFFIXES) else "yaml"


def parse_file(path: str, fmt: str | None = None):
    """(Program | None, diagnostics) for a program file in YAML or text form."""
    from nkirun.source.yaml_front import parse_yaml, read_source
    text, diags = read_source(path)
    if text is None:
        return None, diags
    base = os.path.dirname(path) or "."
    with paused_gc():
        if detect_format(path, fmt) == "text":
            from nkirun.source.text_front import parse_text
            return parse_text(text, path, base)
        return parse_yaml(text, path, base)


@contextmanager
def paused_gc():
    """Pause the cyclic garbage collector while building or checking a program: that
    allocates millions of small objects and frees almost none, so collections would only
    rescan the growing IR (a third of the time on 100k-instruction traces)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        if gc.get_freeze_count() == 0:
            # file everything allocated meanwhile under the oldest generation directly;
            # otherwise the next young collection would scan all of it at once
            gc.freeze()
            gc.unfreeze()
        gc.enable()


