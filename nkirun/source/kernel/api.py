"""The Python API for kernels — the shape of AWS's `nki.simulate`:

    out   = nkirun.simulate(kernel)(x, w, eps=1e-6)  # arrays in, the return structure out
    diags = nkirun.check(kernel, x, w, eps=1e-6)      # arrays or nkirun.shape(...)
    sched = nkirun.cost(kernel, x, w, eps=1e-6)
    prog  = nkirun.trace(kernel, x, w, eps=1e-6)      # the IR Program

The target is `simulate(kernel, target=...)`'s argument, else the environment variable
NEURON_PLATFORM_TARGET_OVERRIDE (trn1|inf2|gen2|trn2|gen3), else trn2. Invalid kernels
raise nkirun.NkirunError with the diagnostics; a call that does not fit the kernel's
parameters raises TypeError naming the parameter.
"""
from __future__ import annotations

import os

import numpy as np

from nkirun.diagnostics import NkirunError, ProgramInvalid
from nkirun.gc_policy import paused_gc
from nkirun.hw.targets import DEFAULT_MAX_HBM_BYTES, DEFAULT_TARGET, TARGETS
from nkirun.source.kernel.trace import Traced, bind_parameters, tensor_arg, trace as _trace

_ENV_TARGETS = {"gen2": "trn1", "gen3": "trn2", "gen4": "trn3"}
# callables (kernel, traced, bound, diagnostics) told of every kernel simulate() runs, before it
# runs (nkirun/dropin/pytest_plugin.py: --nkirun-check, --nkirun-cost)
WATCHERS: list = []


def default_target() -> str:
    t = os.environ.get("NEURON_PLATFORM_TARGET_OVERRIDE", "").strip().lower()
    t = _ENV_TARGETS.get(t, t)
    return t if t in TARGETS else DEFAULT_TARGET


def _function(kernel):
    from nkirun.source.kernel.modules import Kernel
    from nkirun.source.kernel.resolve import kernel_function
    return kernel_function(kernel.func if isinstance(kernel, Kernel) else kernel), \
        (kernel.grid if isinstance(kernel, Kernel) else ())


def trace_call(kernel, args=(), kwargs=None, target=None, grid=None, lnc: int = 1) -> Traced:
    func, kgrid = _function(kernel)
    values = bind_parameters(func, args, kwargs)
    values = {k: _tensor_args(v) for k, v in values.items()}
    with paused_gc():  # (nkirun/gc_policy.py: the caller's collector is restored after)
        return _trace(func, values, target or default_target(), grid or kgrid, lnc)


def _tensor_args(v):
    """An array as a TensorArg, and each array of a list or tuple of them; else v."""
    if isinstance(v, (list, tuple)) and any(tensor_arg(x) for x in v):
        return type(v)(tensor_arg(x) or x for x in v)
    return tensor_arg(v) or v


def check_traced(traced: Traced, max_hbm_bytes: int = DEFAULT_MAX_HBM_BYTES):
    """(bound instructions, all diagnostics sorted) for a traced kernel."""
    from nkirun.checker.passes import sort_key, validate
    with paused_gc():
        bound, more = validate(traced.program, max_hbm_bytes)
    return bound, sorted(traced.diagnostics + more, key=sort_key)


def require_valid(traced: Traced, max_hbm_bytes: int = DEFAULT_MAX_HBM_BYTES):
    bound, diags = check_traced(traced, max_hbm_bytes)
    errors = [d for d in diags if d.is_error]
    if errors:
        raise ProgramInvalid(errors)
    return bound, diags


def run_traced(traced: Traced, bound, inputs=None, step=None, machine: list | None = None,
               uninitialized: str = "error") -> list:
    """Execute; the returned tensors' values, in return order. `step`: interpret.execute's
    (a shadow run: runner/shadow.py); `machine`: a list the Machine is appended to;
    `uninitialized`: execute_freeing's."""
    from nkirun.source.kernel.execute import execute_freeing
    inputs = inputs if inputs is not None else traced.inputs
    m = execute_freeing(traced, bound, inputs, step=step, uninitialized=uninitialized)
    if machine is not None:
        machine.append(m)
    return [output_array(m, h) for h in traced.outputs]


def output_array(m, handle) -> np.ndarray:
    from nkirun.diagnostics import RunError, error
    rec = handle._rec
    w = m.written.get(rec.name)

    def seen(a):  # the returned view of a tensor-shaped array
        return np.lib.stride_tricks.as_strided(
            a.reshape(-1)[handle.offset:], shape=handle.shape,
            strides=tuple(s * a.itemsize for s in handle.strides), writeable=False)
    view = seen(m.buffers[rec.name])
    if w is not None and not m.fills:  # (nan|zero: unwritten elements read as the fill)
        wv = seen(w)
        if not wv.all():
            from nkirun.runner.carried import garbage_error
            carried = garbage_error(m, rec.name, "returned tensor", seen)
            if carried is not None:
                raise carried
            bad = tuple(int(i) for i in np.argwhere(~wv)[0])
            raise RunError(error("E092", f"output `{rec.name}` was never written at index "
                                 f"{bad}", rec.loc, hint="write every element of a returned "
                                 "tensor"))
    return np.array(view)


def _structure(structure, arrays):
    if isinstance(structure, int):
        return arrays[structure]
    if isinstance(structure, (tuple, list)):
        return type(structure)(_structure(s, arrays) for s in structure)
    if isinstance(structure, dict):
        return {k: _structure(s, arrays) for k, s in structure.items()}
    return structure


def _write_back(traced, arrays) -> None:
    """A kernel that returns nothing writes its output arguments (the pre-0.2 API's
    `nki.simulate_kernel(kernel, a, b, out)`): their values go into the caller's arrays,
    where an argument was passed as a writable array of the parameter's dtype."""
    for handle, value in zip(traced.outputs, arrays):
        target = traced.inputs.get(handle._rec.name)
        if isinstance(target, np.ndarray) and target.flags.writeable \
                and target.dtype == value.dtype and target.size == value.size:
            target.reshape(value.shape)[...] = value


def simulate(kernel, target: str | None = None, lnc: int = 1, shadow: bool = False,
             uninitialized: str = "error"):
    """`nkirun.simulate(kernel)(*arrays, **kwargs)`: the kernel's return structure, with
    NumPy arrays for its tensors. `lnc=2`: on the two cores of a logical core (trn2/trn3).
    shadow=True: a ShadowReport (docs/shadow.md) whose `outputs` is that structure.
    `uninitialized`: reading an element nothing wrote is E090 ("error") or reads NaN /
    0 ("nan" / "zero"), as `run --uninitialized`."""
    from nkirun.api import UNINITIALIZED
    if uninitialized not in UNINITIALIZED:
        raise ValueError(f"uninitialized must be one of {', '.join(UNINITIALIZED)}; "
                         f"got {uninitialized!r}")

    def call(*args, **kwargs):
        traced = trace_call(kernel, args, kwargs, target, lnc=lnc)
        bound, diags = require_valid(traced)
        for watch in WATCHERS:
            watch(kernel, traced, bound, diags)
        if not shadow:
            arrays = run_traced(traced, bound, uninitialized=uninitialized)
            if traced.structure is None:
                _write_back(traced, arrays)
            return _structure(traced.structure, arrays)
        from nkirun.runner.shadow import Shadow
        from nkirun.show.shadow_report import ShadowReport
        sh = Shadow(bound)
        arrays = run_traced(traced, bound, step=sh.step, uninitialized=uninitialized)
        return ShadowReport(sh.rows, _structure(traced.structure, arrays), sh.warnings,
                            sh.backend)
    return call


def check(kernel, *args, **kwargs) -> list:
    """Every diagnostic of the traced kernel (errors and warnings)."""
    return check_traced(trace_call(kernel, args, kwargs))[1]


def cost(kernel, *args, **kwargs):
    """The predicted schedule of the traced kernel (`trips={"loop": N}` assumes runtime
    loop counts; without it they are counted by running the kernel on its arrays)."""
    from nkirun.schedule import schedule
    from nkirun.schedule.trips import expand
    trips = kwargs.pop("trips", None)  # runtime loops: {loop name: N}, else counted on the data
    traced = trace_call(kernel, args, kwargs)
    bound, _ = require_valid(traced)
    from nkirun.source.kernel.execute import execute_freeing
    seq, loops = expand(traced.program, bound, trips,
                        lambda observe: execute_freeing(traced, bound, traced.inputs, observe))
    sched = schedule(traced.program, seq)
    sched.loops = loops
    return sched


def trace(kernel, *args, **kwargs):
    """The traced IR Program (nkirun.source.write.write_program turns it into YAML/text)."""
    traced = trace_call(kernel, args, kwargs)
    errors = [d for d in traced.diagnostics if d.is_error]
    if errors:
        raise NkirunError(errors)
    return traced.program
