"""nkirun — check, run and cost AWS NKI instruction programs on the CPU.

`check`, `cost` and `run` take a program file (YAML or text) or a Python kernel function
(`@nki.jit` or plain; docs/kernels.md), with the kernel's arguments after it.
"""
from nkirun import api as _api
from nkirun.diagnostics import Diagnostic, NkirunError

__version__ = "0.1.0"


def check(program, *args, **kwargs):
    """Diagnostics of a program file, or of a kernel function called with `args`."""
    if callable(program):
        from nkirun.source.kernel.api import check as check_kernel
        return check_kernel(program, *args, **kwargs)
    return _api.check(program, *args, **kwargs)


def cost(program, *args, **kwargs):
    """The schedule of a program file, or of a kernel function called with `args`."""
    if callable(program):
        from nkirun.source.kernel.api import cost as cost_kernel
        return cost_kernel(program, *args, **kwargs)
    return _api.cost(program, *args, **kwargs)


def run(program, *args, **kwargs):
    """Outputs of a program file (dict name -> array); for a kernel function, its return
    structure (as `simulate(kernel)(*args, **kwargs)`)."""
    if callable(program):
        return simulate(program)(*args, **kwargs)
    return _api.run(program, *args, **kwargs)


def simulate(kernel, target=None):
    """`nkirun.simulate(kernel)(*arrays, **kwargs)` runs a kernel on NumPy arrays."""
    from nkirun.source.kernel.api import simulate as simulate_kernel
    return simulate_kernel(kernel, target)


def trace(kernel, *args, **kwargs):
    """The IR Program a kernel function traces to with these arguments."""
    from nkirun.source.kernel.api import trace as trace_kernel
    return trace_kernel(kernel, *args, **kwargs)


def shape(dtype, *dims):
    """A tensor argument known by dtype and shape only: `nkirun.shape("float32", 128, 512)`."""
    from nkirun.source.kernel.trace import Shape
    return Shape(dtype, *dims)


def _install_nki_fallback():
    from nkirun.source.kernel.modules import install_fallback_finder
    install_fallback_finder()


_install_nki_fallback()
