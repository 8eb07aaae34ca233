"""The Python kernel front end: run an NKI kernel written against `nki.isa` and
`nki.language` unmodified (docs/kernels.md).

The kernel's Python runs with nkirun's own `nki` modules (modules.py: isa_shim.py,
lang.py, convenience.py); every `nisa.*` call becomes an instruction of the same IR the
YAML and text front ends build (session.py records into `source.builder.Builder`),
located at its line in the `.py` file. Tensor handles and views: tensor.py, views.py
(over `views.strided.StridedView`; import order: docs/architecture.md); the pre-0.2 API: legacy.py, tile_ops.py. Parameters, tracing and outputs: trace.py; finding the kernel: loader.py.
Like every front end it stops at the IR: the traced program becomes a pipeline Front
(nkirun/pipeline/front.py) that check, run, cost and convert take from there; the
Python API is nkirun/api_kernel.py, the command line nkirun/cli/.
"""
import os

__all__ = ["KernelUsageError", "is_kernel_path"]


def is_kernel_path(program: str) -> bool:
    """`PATH::FUNCTION`, or a `.py` file (a folder named `x.py` is not one)."""
    path = program.split("::", 1)[0]
    return "::" in program or (path.endswith(".py") and not os.path.isdir(path))


def __getattr__(name: str):
    """KernelUsageError (loader.py), imported on first use: `import nkirun` imports this
    package for the `nki` finder of modules.py, and checking a program loads no kernel."""
    if name == "KernelUsageError":
        from nkirun.source.kernel.loader import KernelUsageError
        return KernelUsageError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
