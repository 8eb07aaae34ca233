"""Kernel files imported once per worker process (a sweep traces the same file many
times), from the file itself or from the source text that travelled with the task."""
from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import tempfile

_MODULES: dict = {}  # (path, source digest) -> module


def kernel_module(path: str, source: str | None):
    """The imported kernel file; `source`: its text, written to a private folder and
    imported from there when this machine has no such file or another version of it."""
    from nkirun.pipeline.kernel_calls import import_kernel
    from nkirun.source.kernel.modules import installed
    digest = hashlib.blake2b(source.encode(), digest_size=16).hexdigest() if source else ""
    key = (path, digest)
    if key in _MODULES:
        return _MODULES[key]
    where = path
    if source is not None and not _same_file(path, source):  # another machine: the text
        folder = os.path.join(tempfile.gettempdir(), f"nkirun-sweep-{digest}")
        os.makedirs(folder, exist_ok=True)
        where = os.path.join(folder, os.path.basename(path))
        if not os.path.exists(where):
            tmp = f"{where}.tmp{os.getpid()}"
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(source)
            os.replace(tmp, where)
    with installed(), contextlib.redirect_stdout(sys.stderr):
        module = import_kernel(where)
    _MODULES[key] = module
    return module


def _same_file(path: str, source: str) -> bool:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read() == source
    except OSError:
        return False
