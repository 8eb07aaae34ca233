"""Executing a checked program on the machine."""
from __future__ import annotations

import numpy as np

from nkirun.diagnostics import InternalError, Loc, NkirunError, RunError, error
from nkirun.ir import Program
from functools import partial

from nkirun.runner.carried import execute_one, garbage_error
from nkirun.runner.files import initial_buffers
from nkirun.runner.machine import Machine


def execute(program: Program, bound, inputs=None, after_each=None,
            uninitialized: str = "error", step=None, plan: bool = True) -> Machine:
    """Run every instruction in order; `after_each(bound, machine)` is called after each.

    Without after_each and step, a one-core program without runtime loops runs from an
    execution plan (runner/plan.py; the same results, errors and warnings); `plan=False`
    runs the plain loop below, the definition the plan is tested against.

    `step(bound, machine)`, when given, executes each instruction instead of
    `bound.spec.execute(bound, machine)` (runner/shadow.py runs a float32 shadow beside it).

    `uninitialized`: what reading an element nothing wrote does — "error" (the default:
    the results computed from it are unwritten too, E090 when one is needed:
    runner/carried.py), "strict" (E090 at the read), "nan" or "zero" (it reads as NaN /
    0; the outputs too).
    """
    from nkirun.runner.memory import refuse_if_too_large
    from nkirun.runner.plan import execute_planned, plannable
    refuse_if_too_large(program, inputs)  # (every tensor, as if all were live at once)
    if plan and after_each is None and step is None and plannable(program):
        return execute_planned(program, bound, inputs, uninitialized)
    try:
        with np.errstate(all="ignore"):  # e.g. `data: [1e300]` saturates to inf in float32
            buffers, written = initial_buffers(program, inputs, uninitialized)
    except MemoryError:
        raise out_of_memory(program)
    m = Machine(buffers, written)
    m.carry, m.fills = uninitialized == "error", uninitialized in ("nan", "zero")
    b = None
    try:
        with np.errstate(all="ignore"):  # inf/nan flow through as on hardware, silently
            if program.cores > 1:  # both cores' streams (and loops) met at meeting points
                from nkirun.runner.cores import steps
                sequence = steps(program, bound, m)
            else:
                from nkirun.runner.registers import order
                sequence = order(program, bound, m)  # loops: registers.py
            for b in sequence:
                m.current = b
                if m.carry:  # (unwritten reads carried into unwritten results)
                    execute_one(b, m, partial(b.spec.execute, b, m),
                                None if step is None else partial(step, b, m))
                elif step is None:
                    b.spec.execute(b, m)
                else:
                    step(b, m)
                if after_each is not None:
                    after_each(b, m)
    except NkirunError:
        raise
    except KeyboardInterrupt as stop:  # Ctrl-C / SIGTERM: the CLI says where it stopped
        stop.nkirun_at = f"#{b.index} {b.title}" if b is not None else None
        raise
    except Exception as exc:
        raise failure(exc, b) from exc
    m.current = None
    return m


def out_of_memory(program: Program) -> RunError:
    """E091 for a MemoryError while allocating the program's tensors."""
    return RunError(error("E091", "out of memory while allocating the program's tensors",
                          Loc(program.path), hint="lower the tensor sizes; --max-hbm-bytes "
                          "(API: max_hbm_bytes=) bounds HBM tensors"))


def failure(exc: Exception, b) -> Exception:
    """What a run reports for an unexpected exception raised while executing b (None:
    before the first instruction): E091 for memory, else an internal error."""
    if isinstance(exc, MemoryError):
        return RunError(error("E091", "out of memory while executing "
                              f"{b.op if b else 'the program'}", b.loc() if b else None))
    where = f"instruction {b.index} ({b.title}) at {b.loc()}" if b else "program start"
    return InternalError(where, exc)


def outputs(program: Program, m: Machine) -> dict[str, np.ndarray]:
    """The `output: true` tensors; reading one that was never (fully) written is an error."""
    result = {}
    for name, t in program.tensors.items():
        if not t.output:
            continue
        w = m.written.get(name)
        if w is not None and not m.fills and not w.all():  # (nan|zero: reads the fill)
            bad = tuple(int(i) for i in np.argwhere(~w)[0])
            carried = garbage_error(m, name, "output")
            if carried is not None:
                raise carried
            raise RunError(error("E092", f"output `{name}` was never written at index {bad}",
                                 t.loc, hint="store into every element of an output tensor"))
        result[name] = m.buffers[name]
    return result


