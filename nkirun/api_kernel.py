"""The Python API for kernels — the shape of AWS's `nki.simulate`:

    out   = nkirun.simulate(kernel)(x, w, eps=1e-6)  # arrays in, the return structure out
    diags = nkirun.check(kernel, x, w, eps=1e-6)      # arrays or nkirun.shape(...)
    sched = nkirun.cost(kernel, x, w, eps=1e-6)
    prog  = nkirun.trace(kernel, x, w, eps=1e-6)      # the IR Program

nkirun's own options are keywords of these functions and never reach the kernel:
`target` (trn1|trn2|trn3|inf2; default: NEURON_PLATFORM_TARGET_OVERRIDE, else trn2), `lnc`
(1 or 2), `max_instructions` (the budget, nkirun/limits.py) and, for cost, `trips`. A bad
value is a ValueError. A kernel parameter that is
itself named `target`, `lnc`, `trips` or `kernel_kwargs` is passed in `kernel_kwargs={...}`,
or through the curried form, whose second call passes everything to the kernel:
`nkirun.simulate(kernel, target="trn1")(x, target=...)`.

Every function goes through the one pipeline (nkirun/pipeline/): the call is traced into a
Front, then checked, run or costed exactly as `nkirun check|run|cost` does. Invalid
kernels raise nkirun.NkirunError with the diagnostics; a call that does not fit the
kernel's parameters raises TypeError naming the parameter.
"""
from __future__ import annotations

from contextlib import ExitStack

import numpy as np

from nkirun.diagnostics import NkirunError
from nkirun.hw.targets import DEFAULT_MAX_HBM_BYTES
from nkirun.limits import budget, checked_budget
from nkirun.pipeline import commands
from nkirun.pipeline.front import call_front, require_lnc, require_target, require_trips
from nkirun.pipeline.kernel_calls import default_target, trace_call  # noqa: F401
from nkirun.source.kernel.trace import Traced


# callables (kernel, front, bound, diagnostics) told of every kernel simulate() runs, before
# it runs (nkirun/dropin/pytest_plugin.py: --nkirun-check, --nkirun-cost); `front.program`
# is the traced program
WATCHERS: list = []
# context-manager factories, called with the kernel and entered around each simulate() call
# (the plugin's measure of nkirun's own time and memory per test)
AROUND: list = []


def _front(kernel, args, kwargs, target, lnc, kernel_kwargs):
    kwargs = dict(kwargs)
    for name, v in (kernel_kwargs or {}).items():
        if name in kwargs:
            raise TypeError(f"kernel parameter `{name}` is given twice (as a keyword and "
                            "in kernel_kwargs)")
        kwargs[name] = v
    return call_front(kernel, args, kwargs, require_target(target), require_lnc(lnc))


def simulate(kernel, target: str | None = None, lnc: int = 1, shadow: bool = False,
             uninitialized: str = "error", max_instructions: int | None = None,
             ranks: int | None = None):
    """`nkirun.simulate(kernel)(*arrays, **kwargs)`: the kernel's return structure, with
    NumPy arrays for its tensors. `lnc=2`: on the two cores of a logical core (trn2/trn3).
    shadow=True: a ShadowReport (docs/shadow.md) whose `outputs` is that structure.
    `uninitialized`: reading an element nothing wrote is E090 ("error") or reads NaN /
    0 ("nan" / "zero"), as `run --uninitialized`. `max_instructions`: the budget of the
    trace and the run (nkirun/limits.py; default 10 million). `ranks=N`: N ranks, each its
    own program, meeting at their nki.collectives; the call returns the list of each
    rank's return structure (simulate_ranks). Each call traces the kernel afresh; the
    object keeps its last call's check and, from a program's second call and when every
    step of it is planned, its execution plan with the plan's arrays (up to 1 GiB of
    tensors), for a next call that
    traces the same program (pipeline/reuse.py, runner/plan_keep.py): drop the object to
    free them."""
    if ranks is not None:
        if shadow:
            raise ValueError("shadow=True runs one rank; leave ranks out")
        return simulate_ranks(kernel, ranks, target, lnc, uninitialized, max_instructions)
    require_target(target)
    if max_instructions is not None:
        checked_budget(max_instructions)
    lnc = require_lnc(lnc)
    if uninitialized not in commands.UNINITIALIZED:
        raise ValueError(f"uninitialized must be one of {', '.join(commands.UNINITIALIZED)}; "
                         f"got {uninitialized!r}")

    from nkirun.pipeline.reuse import CheckMemo
    from nkirun.runner.plan_keep import PlanMemo
    memo = CheckMemo()  # (the last call's check: reused when a call traces the same program)
    plans = PlanMemo()  # (the plan of that check's bound instructions: runner/plan_keep.py)

    def call(*args, **kwargs):
        with budget(max_instructions), ExitStack() as spans:
            for around in AROUND:
                spans.enter_context(around(kernel))
            return _simulated(args, kwargs)

    def _simulated(args, kwargs):
        front = call_front(kernel, args, kwargs, target, lnc)
        c = commands.require_valid(front, memo=memo)
        for watch in WATCHERS:
            watch(kernel, front, c.bound, c.diagnostics)
        ran = commands.run(c, uninitialized, shadow=shadow, progress=False, plans=plans)
        arrays = [ran.outputs[o.name] for o in front.outputs]
        if not shadow:
            if front.structure is None:
                _write_back(front, arrays)
            return _structure(front.structure, arrays)
        ran.shadow.outputs = _structure(front.structure, arrays)
        return ran.shadow
    return call


def simulate_ranks(kernel, ranks: int, target=None, lnc: int = 1,
                   uninitialized: str = "error", max_instructions: int | None = None):
    """`simulate(kernel, ranks=N)(*args, **kwargs)` -> [rank 0's return, ..., rank N-1's]:
    an argument wrapped in `nkirun.per_rank(values)` gives rank r values[r] (or values(r));
    the others are every rank's. `.each(inputs)`: inputs a list of N kwargs dicts, or a
    function rank -> kwargs dict."""
    from nkirun.pipeline import ranks as multi
    n = multi.require_ranks(ranks)
    require_target(target)
    lnc = require_lnc(lnc)
    if max_instructions is not None:
        checked_budget(max_instructions)
    if uninitialized not in commands.UNINITIALIZED:
        raise ValueError(f"uninitialized must be one of {', '.join(commands.UNINITIALIZED)}; "
                         f"got {uninitialized!r}")

    def run_all(calls):
        with budget(max_instructions), ExitStack() as spans:
            for around in AROUND:  # (the plugin's time and memory: the ranks' run as one)
                spans.enter_context(around(kernel))
            fronts = [call_front(kernel, a, k, target, lnc) for a, k in calls]
            checked = [commands.require_valid(f) for f in fronts]
            for watch in WATCHERS:  # (rank 0's view: the plugin's check and cost)
                watch(kernel, fronts[0], checked[0].bound, checked[0].diagnostics)
            ran = multi.run_checked(checked, uninitialized)
        return [_structure(f.structure, [r.outputs[o.name] for o in f.outputs])
                for f, r in zip(fronts, ran)]

    def call(*args, **kwargs):
        return run_all(multi.split(args, kwargs, n))

    def each(inputs):
        if callable(inputs):
            inputs = [inputs(r) for r in range(n)]
        if len(inputs) != n or not all(isinstance(k, dict) for k in inputs):
            raise ValueError(f"each() takes {n} kwargs dicts (one per rank), or a function "
                             "rank -> kwargs dict")
        return run_all([((), dict(k)) for k in inputs])
    call.each = each
    return call


def simulate_world(kernel, target=None, lnc: int = 1, uninitialized: str = "error"):
    """`nki.cpu_simulate(kernel)[lnc](...)` (the drop-in, source/kernel/modules.py): a call
    with no rank count. A kernel whose collectives' replica groups name ranks up to N-1
    runs as N ranks with these same arguments on every rank (nki-library's harness: a
    plain input dict is every rank's), and rank 0's result is returned; any other kernel
    runs as simulate() does."""
    from nkirun.pipeline import ranks as multi
    plain = simulate(kernel, target, lnc, uninitialized=uninitialized)

    def call(*args, **kwargs):
        from nkirun.isa.collective import RanksNeeded
        try:
            return plain(*args, **kwargs)
        except RanksNeeded:  # (only then: tracing again is for collective kernels alone)
            program = trace(kernel, *args, target=target, lnc=lnc, kernel_kwargs=kwargs)
            n = multi.world_size(program)
            return simulate_ranks(kernel, n, target, lnc, uninitialized)(*args, **kwargs)[0]
    return call


def check(kernel, *args, target: str | None = None, lnc: int = 1,
          kernel_kwargs: dict | None = None, max_instructions: int | None = None,
          **kwargs) -> list:
    """Every diagnostic of the traced kernel (errors and warnings)."""
    with budget(max_instructions):
        front = _front(kernel, args, kwargs, target, lnc, kernel_kwargs)
        return commands.check(front).diagnostics


def cost(kernel, *args, target: str | None = None, lnc: int = 1, trips=None,
         kernel_kwargs: dict | None = None, max_instructions: int | None = None, **kwargs):
    """The predicted schedule of the traced kernel (`trips={"loop": N}` assumes runtime
    loop counts; without it they are counted by running the kernel on its arrays)."""
    trips = require_trips(trips)
    with budget(max_instructions):
        c = commands.require_valid(_front(kernel, args, kwargs, target, lnc, kernel_kwargs))
        return commands.cost(c, trips)


def trace(kernel, *args, target: str | None = None, lnc: int = 1,
          kernel_kwargs: dict | None = None, max_instructions: int | None = None, **kwargs):
    """The traced IR Program (nkirun.source.write.write_program turns it into YAML/text)."""
    with budget(max_instructions):
        front = _front(kernel, args, kwargs, target, lnc, kernel_kwargs)
    errors = [d for d in front.diagnostics if d.is_error]
    if errors:
        raise NkirunError(errors)
    return front.program


def _structure(structure, arrays):
    if isinstance(structure, int):
        return arrays[structure]
    if isinstance(structure, (tuple, list)):
        return type(structure)(_structure(s, arrays) for s in structure)
    if isinstance(structure, dict):
        return {k: _structure(s, arrays) for k, s in structure.items()}
    return structure


def _write_back(front, arrays) -> None:
    """A kernel that returns nothing writes its output arguments (the pre-0.2 API's
    `nki.simulate_kernel(kernel, a, b, out)`): their values go into the caller's arrays,
    where an argument was passed as a writable array of the parameter's dtype."""
    for out, value in zip(front.outputs, arrays):
        target = front.inputs.get(out.tensor)
        if isinstance(target, np.ndarray) and target.flags.writeable \
                and target.dtype == value.dtype and target.size == value.size:
            target.reshape(value.shape)[...] = value


# ---- for tests and benchmarks that step through the pipeline by hand ------------------------
def check_traced(traced: Traced, max_hbm_bytes: int = DEFAULT_MAX_HBM_BYTES):
    """(bound instructions, all diagnostics sorted) for a traced kernel."""
    from nkirun.pipeline.front import traced_front
    c = commands.check(traced_front(traced, "kernel"), max_hbm_bytes)
    return c.bound, c.diagnostics


def require_valid(traced: Traced, max_hbm_bytes: int = DEFAULT_MAX_HBM_BYTES):
    bound, diags = check_traced(traced, max_hbm_bytes)
    errors = [d for d in diags if d.is_error]
    if errors:
        from nkirun.diagnostics import ProgramInvalid
        raise ProgramInvalid(errors)
    return bound, diags


def run_traced(traced: Traced, bound, inputs=None, step=None, machine: list | None = None,
               uninitialized: str = "error") -> list:
    """Execute; the returned tensors' values, in return order. `step`: interpret.execute's
    (a shadow run: runner/shadow.py); `machine`: a list the Machine is appended to."""
    from nkirun.pipeline.front import traced_front
    from nkirun.runner.freeing import execute_freeing
    front = traced_front(traced, "kernel")
    inputs = inputs if inputs is not None else traced.inputs
    m = execute_freeing(traced.program, bound, inputs, step=step, uninitialized=uninitialized)
    if machine is not None:
        machine.append(m)
    return [commands.read_output(m, o) for o in front.outputs]


def output_array(m, handle) -> np.ndarray:
    """The values of a returned tensor handle after a run (m: the Machine)."""
    from nkirun.pipeline.front import Output
    from nkirun.ir import TensorDecl
    decl = TensorDecl(handle.name, "hbm", tuple(handle.shape), None, loc=handle._rec.loc)
    return commands.read_output(m, Output(handle.name, decl, handle._rec.name,
                                          (handle.offset, tuple(handle.strides)), handle.name))
