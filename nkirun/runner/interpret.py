"""Executing a checked program on the machine."""
from __future__ import annotations

import numpy as np

from nkirun.diagnostics import RunError, error
from nkirun.ir import Program
from nkirun.runner.carried import garbage_error
from nkirun.runner.machine import Machine
from nkirun.runner.plain import execute_plain, failure, out_of_memory  # noqa: F401


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
    return execute_plain(program, bound, inputs, after_each, uninitialized, step)


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


