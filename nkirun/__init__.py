"""nkirun — check, run and cost AWS NKI instruction programs on the CPU.

    import nkirun
    outs  = nkirun.run("prog.yaml", inputs={"x": x})   # dict: output name -> ndarray
    diags = nkirun.check("prog.yaml")                   # list of nkirun.Diagnostic
    sched = nkirun.cost("prog.yaml")                    # nkirun.schedule.Schedule
    nkirun.testing.assert_close(outs["y"], expected, ulp=2)

A program is a path, its YAML text or a dict of its YAML form (docs/api.md). `check`, `cost`
and `run` also take a Python kernel function (`@nki.jit` or plain; docs/kernels.md), with the
kernel's arguments after it; `simulate(kernel)(*arrays)` runs one like AWS's nki.simulate.
"""
from __future__ import annotations

import nkirun._startup  # noqa: F401,I001  (first: a signal while the command starts exits quietly)

from collections.abc import Callable  # noqa: E402
from typing import TYPE_CHECKING, Any, Literal, overload  # noqa: E402

import numpy as np  # noqa: E402

from nkirun import schedule
from nkirun import api as _api
from nkirun import ir as _ir
from nkirun.api import ProgramSource
from nkirun.diagnostics import Diagnostic, Loc, NkirunError
from nkirun.limits import budget as _budget

if TYPE_CHECKING:
    from nkirun.schedule.model import Schedule
    from nkirun.show.shadow_report import ShadowReport

__version__ = "0.1.0"
__all__ = ["check", "cost", "run", "simulate", "per_rank", "trace", "shape", "sweep",
           "install", "Diagnostic", "Loc", "NkirunError", "schedule", "testing", "__version__"]


@overload
def check(program: ProgramSource, fmt: str | None = None, target: str | None = None
          ) -> list[Diagnostic]: ...
@overload
def check(program: Callable[..., Any], *args: Any, **kwargs: Any) -> list[Diagnostic]: ...
def check(program: Any, *args: Any, **kwargs: Any) -> list[Diagnostic]:  # noqa: E302
    """Diagnostics of a program file, or of a kernel function called with `args`
    (`max_instructions=N`: the budget, nkirun/limits.py)."""
    if callable(program):
        from nkirun.api_kernel import check as check_kernel
        return check_kernel(program, *args, **kwargs)
    with _budget(kwargs.pop("max_instructions", None)):
        return _api.check(program, *args, **kwargs)


@overload
def cost(program: ProgramSource, fmt: str | None = None, target: str | None = None
         ) -> Schedule: ...
@overload
def cost(program: Callable[..., Any], *args: Any, **kwargs: Any) -> Schedule: ...
def cost(program: Any, *args: Any, **kwargs: Any) -> Schedule:  # noqa: E302
    """The schedule of a program file, or of a kernel function called with `args`
    (`max_instructions=N`: the budget of the trace and the loops' trips, nkirun/limits.py)."""
    if callable(program):
        from nkirun.api_kernel import cost as cost_kernel
        return cost_kernel(program, *args, **kwargs)
    with _budget(kwargs.pop("max_instructions", None)):
        return _api.cost(program, *args, **kwargs)


@overload
def run(program: ProgramSource, inputs: dict[str, Any] | None = None, out: Any = None,
        fmt: str | None = None, target: str | None = None, uninitialized: str = "error",
        after_each: Any = None) -> dict[str, np.ndarray]: ...
@overload
def run(program: ProgramSource, inputs: dict[str, Any] | None = None, out: Any = None,
        fmt: str | None = None, target: str | None = None, uninitialized: str = "error",
        after_each: Any = None, *, shadow: Literal[True]) -> ShadowReport: ...
@overload
def run(program: Callable[..., Any], *args: Any, **kwargs: Any) -> Any: ...
def run(program: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: E302
    """Outputs of a program file (dict name -> array); for a kernel function, its return
    structure (as `simulate(kernel)(*args, **kwargs)`). shadow=True (programs): the
    ShadowReport of a float32 shadow run instead (nkirun.api.shadow, docs/shadow.md)."""
    if callable(program):  # nkirun's options are not the kernel's (docs/api.md)
        opts = {k: kwargs.pop(k) for k in ("target", "lnc", "shadow", "uninitialized",
                                           "max_instructions") if k in kwargs}
        extra = kwargs.pop("kernel_kwargs", None) or {}
        clash = set(extra) & set(kwargs)
        if clash:
            raise TypeError(f"kernel parameter `{min(clash)}` is given twice (as a keyword "
                            "and in kernel_kwargs)")
        return simulate(program, **opts)(*args, **kwargs, **extra)
    with _budget(kwargs.pop("max_instructions", None)):
        if kwargs.pop("shadow", False):
            return _api.shadow(program, *args, **kwargs)
        return _api.run(program, *args, **kwargs)


def simulate(kernel: Callable[..., Any], target: str | None = None, lnc: int = 1,
             shadow: bool = False, uninitialized: str = "error",
             max_instructions: int | None = None, *, ranks: int | None = None
             ) -> Callable[..., Any]:
    """`nkirun.simulate(kernel)(*arrays, **kwargs)` runs a kernel on NumPy arrays; `lnc=2`
    on the two cores of a logical core (trn2/trn3, like `--lnc 2`); with shadow=True the
    call returns a ShadowReport (docs/shadow.md), outputs in `.outputs`; `uninitialized`
    "nan"/"zero" reads elements nothing wrote as NaN/0 instead of E090 (`run
    --uninitialized`); `max_instructions`: the budget of the trace and the run
    (`--max-instructions`, default 10 million). `ranks=N`: N ranks meeting at their
    nki.collectives, one program each; the call returns a list of N results, and takes
    per-rank arguments as `nkirun.per_rank([v0, ..., vN-1])` (docs/kernels.md,
    "Collectives")."""
    from nkirun.api_kernel import simulate as simulate_kernel
    return simulate_kernel(kernel, target, lnc, shadow, uninitialized, max_instructions,
                           ranks)


def per_rank(values: Any) -> Any:
    """An argument of `simulate(kernel, ranks=N)` with one value per rank: a sequence of N,
    or a function of the rank."""
    from nkirun.pipeline.ranks import PerRank
    return PerRank(values)


def trace(kernel: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """The IR Program a kernel function traces to with these arguments
    (`max_instructions=N`: the trace's budget)."""
    from nkirun.api_kernel import trace as trace_kernel
    return trace_kernel(kernel, *args, **kwargs)


def shape(dtype: str, *dims: int) -> Any:
    """A tensor argument known by dtype and shape only: `nkirun.shape("float32", 128, 512)`."""
    from nkirun.source.kernel.trace import Shape
    return Shape(dtype, *dims)


def __getattr__(name: str) -> Any:
    """`nkirun.sweep(...)` (docs/sweep.md), `nkirun.testing` and `nkirun.Schedule`, imported
    on first use: the command's start-up does not pay for them."""
    if name in ("sweep", "testing"):  # testing pulls in runner/compare.py: `check` needs none
        import importlib
        return importlib.import_module(f"nkirun.{name}")
    if name == "Schedule":  # (the cost model: `check` needs none)
        from nkirun.schedule.model import Schedule
        return Schedule
    raise AttributeError(f"module 'nkirun' has no attribute {name!r}")


def install(target: str | None = None, uninitialized: str = "error") -> None:
    """Make `import nki` (and, where no such package is installed, `import
    nki_cpu_simulator`) resolve to nkirun's modules, so that a test suite written for NKI's
    CPU simulator runs on nkirun (nkirun/dropin; pytest: `--nkirun`). `uninitialized`:
    what `nki.cpu_simulate` does where a kernel reads elements nothing wrote ("error": E090;
    "nan", "zero": as `simulate(uninitialized=)`)."""
    from nkirun.dropin import install as install_dropin
    install_dropin(target, uninitialized)


def _write_program(program: Any, fmt: str) -> str:
    """Program.to_yaml/to_text: source/write.py, imported on first use (`check` writes no
    program; the IR sits below the front ends that write it)."""
    from nkirun.source.write import write_program
    return write_program(program, fmt)


if _ir.WRITER[0] is None:
    _ir.WRITER[0] = _write_program


def _install_nki_fallback() -> None:
    from nkirun.source.kernel.modules import install_fallback_finder, set_simulator
    install_fallback_finder()
    set_simulator(simulate, _simulate_world)  # what `nki.simulate`, a jit kernel's call
    # and `nki.cpu_simulate` run


def _simulate_world(*args: Any, **kwargs: Any) -> Any:
    """`nki.cpu_simulate`'s run: api_kernel.simulate_world (imported on first use)."""
    from nkirun.api_kernel import simulate_world
    return simulate_world(*args, **kwargs)


_install_nki_fallback()
