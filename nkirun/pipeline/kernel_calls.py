"""Tracing a kernel for the pipeline: the file imported under nkirun's `nki`, a function
called with the API's arrays or the command line's parameters."""
from __future__ import annotations

import os

from nkirun.diagnostics import Loc, NkirunError, error
from nkirun.gc_policy import paused_gc
from nkirun.hw.targets import DEFAULT_TARGET, TARGETS
from nkirun.source.kernel.trace import Traced, bind_parameters, tensor_arg, trace

_ENV_TARGETS = {"gen2": "trn1", "gen3": "trn2", "gen4": "trn3"}


def default_target() -> str:
    """NEURON_PLATFORM_TARGET_OVERRIDE (trn1|inf2|gen2|trn2|gen3...), else trn2."""
    t = os.environ.get("NEURON_PLATFORM_TARGET_OVERRIDE", "").strip().lower()
    t = _ENV_TARGETS.get(t, t)
    return t if t in TARGETS else DEFAULT_TARGET


def import_function(path: str, func_name: str | None):
    """The kernel function `PATH.py::FUNCTION` (or the file's one @nki.jit function),
    imported with nkirun's `nki`; what the module prints goes to stderr."""
    from nkirun.source.kernel.loader import KernelUsageError, find_function
    from nkirun.source.kernel.modules import installed
    with installed():  # (prints go to stderr while the kernel's module runs: modules.py)
        module = import_kernel(path)
        try:
            return find_function(module, path, func_name)
        except KernelUsageError as e:
            raise NkirunError(error("E600", str(e), Loc(path))) from None


def import_kernel(path: str):
    """The kernel file's module, imported with nkirun's `nki` (the caller holds
    modules.installed()); an exception of the file's own code is its E602."""
    from nkirun.source.kernel.loader import import_kernel_module, kernel_exception
    try:
        return import_kernel_module(path)
    except NkirunError:
        raise
    except Exception as exc:  # noqa: BLE001 - the kernel file's own error
        raise kernel_exception(exc) from None


def _function(kernel):
    from nkirun.source.kernel.modules import Kernel
    from nkirun.source.kernel.resolve import kernel_function
    return kernel_function(kernel.func if isinstance(kernel, Kernel) else kernel), \
        (kernel.grid if isinstance(kernel, Kernel) else ())


def trace_call(kernel, args=(), kwargs=None, target=None, grid=None, lnc: int = 1) -> Traced:
    """Trace `kernel(*args, **kwargs)`: arrays (and nkirun.shape(...)) are its tensors."""
    func, kgrid = _function(kernel)
    values = bind_parameters(func, args, kwargs)
    values = {k: _tensor_args(v, k) for k, v in values.items()}
    with paused_gc():  # (nkirun/gc_policy.py: the caller's collector is restored after)
        traced = trace(func, values, target or default_target(), grid or kgrid, lnc)
    if _skips_middle_end(kernel, func):
        import dataclasses
        traced.program = dataclasses.replace(traced.program, reuse_buffers=True)
    return traced


def _skips_middle_end(kernel, func) -> bool:
    """Whether the kernel carries nki.compiler.skip_middle_end_transformations."""
    from nkirun.source.kernel.modules import SKIP_MIDDLE_END, Kernel
    inner = kernel.func if isinstance(kernel, Kernel) else kernel
    return any(getattr(k, SKIP_MIDDLE_END, False) for k in (kernel, inner, func))


def _tensor_args(v, name: str | None = None):
    """An array as a TensorArg, and each array of a list or tuple of them; else v. `name`:
    the parameter (dtype errors name it, `xs[1]` for a list's element)."""
    def item(i):
        return f"{name}[{i}]" if name else None
    if isinstance(v, (list, tuple)) and any(tensor_arg(x, item(i)) for i, x in enumerate(v)):
        return type(v)(tensor_arg(x, item(i)) or x for i, x in enumerate(v))
    return tensor_arg(v, name) or v
