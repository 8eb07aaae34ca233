"""The Python kernel front end: run an NKI kernel written against `nki.isa` and
`nki.language` unmodified (docs/kernels.md).

The kernel's Python runs with nkirun's own `nki` modules (modules.py: isa_shim.py,
lang.py, convenience.py); every `nisa.*` call becomes an instruction of the same IR the
YAML and text front ends build (session.py records into `source.builder.Builder`),
located at its line in the `.py` file. Tensor handles and views: tensor.py, views.py
(over `views.strided.StridedView`); the pre-0.2 API: legacy.py, tile_ops.py. Parameters, tracing and outputs: trace.py; finding the kernel: loader.py.
Like every front end it stops at the IR: the traced program becomes a pipeline Front
(nkirun/pipeline/front.py) that check, run, cost and convert take from there; the
Python API is nkirun/api_kernel.py, the command line nkirun/cli/.
"""
from nkirun.source.kernel.loader import KernelUsageError, is_kernel_path

__all__ = ["KernelUsageError", "is_kernel_path"]
