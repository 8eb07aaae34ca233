"""The kernel function as nkirun traces it, given the function a user imported.

When the user's module was imported with nkirun's `nki` (no AWS `nki` installed, or the
CLI), the function is used as it is. When AWS's `nki` is installed, the module bound
AWS's modules: it is imported again from its file with nkirun's `nki` in place (the
kernel's helpers in other files then see nkirun's `nki` too), and the same function taken
from that copy; that copy is cached and never enters `sys.modules` for good.
"""
from __future__ import annotations

import inspect
import sys
import types

from nkirun.source.kernel.modules import KERNEL_LOCK, is_ours, installed

_COPIES: dict = {}  # (file, mtime) -> module imported with nkirun's nki


def _binds_foreign_nki(func) -> bool:
    for v in getattr(func, "__globals__", {}).values():
        if isinstance(v, types.ModuleType) and (v.__name__ == "nki" or v.__name__.startswith(
                "nki.")) and not is_ours(v):
            return True
    return False


def kernel_function(func):
    if not _binds_foreign_nki(func):
        return func
    path = inspect.getsourcefile(func)
    qual = getattr(func, "__qualname__", "")
    if path is None or "<locals>" in qual:
        return _rebound(func)
    import os
    key = (path, os.path.getmtime(path))
    with KERNEL_LOCK:  # (sys.modules is swapped around the import: one thread at a time)
        module = _COPIES.get(key)
        if module is None:
            module = _COPIES[key] = _fresh_import(path)
    obj = module
    for part in qual.split("."):
        obj = getattr(obj, part)
    from nkirun.source.kernel.modules import Kernel
    return obj.func if isinstance(obj, Kernel) else obj


def _fresh_import(path: str):
    from nkirun.source.kernel.loader import import_kernel_module, module_name_for
    name, _ = module_name_for(path)
    top = name.split(".")[0]
    saved = {k: v for k, v in sys.modules.items() if k == top or k.startswith(top + ".")
             or k.startswith("_nkirun_kernel_")}
    for k in saved:
        del sys.modules[k]
    try:
        with installed():
            return import_kernel_module(path)
    finally:
        for k in [k for k in sys.modules if k == top or k.startswith(top + ".")
                  or k.startswith("_nkirun_kernel_")]:
            del sys.modules[k]
        sys.modules.update(saved)


def _rebound(func):
    """A nested function: the same code with its `nki` globals replaced by nkirun's."""
    from nkirun.source.kernel.modules import modules
    ours = modules()
    g = dict(func.__globals__)
    for k, v in list(g.items()):
        if isinstance(v, types.ModuleType) and v.__name__ in ours:
            g[k] = ours[v.__name__]
    return types.FunctionType(func.__code__, g, func.__name__, func.__defaults__,
                              func.__closure__)
