"""The plain run loop: every instruction in order through its module's `execute` — the
definition runner/plan.py's planned run is tested against (interpret.execute chooses)."""
from __future__ import annotations

from functools import partial

import numpy as np

from nkirun.diagnostics import InternalError, Loc, NkirunError, RunError, error
from nkirun.ir import Program
from nkirun.runner.carried import execute_one
from nkirun.runner.files import initial_buffers
from nkirun.runner.machine import Machine


def execute_plain(program: Program, bound, inputs=None, after_each=None,
                  uninitialized: str = "error", step=None) -> Machine:
    """interpret.execute's run without a plan (its docstring says what each argument does)."""
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
        stop.nkirun_at = stopped_at(b, m)
        raise
    except Exception as exc:
        raise failure(exc, b) from exc
    finally:
        if m.walk is not None:  # (its progress line goes now, before any message)
            m.walk.close()
    m.current = None
    return m


def stopped_at(b, m: Machine) -> str | None:
    """Where a run stopped: the instruction; in loops, its line and the trips so far."""
    if b is None:
        return None
    loops = m.walk.where() if m.walk is not None else ""
    return f"#{b.index} {b.title}" + (f" (line {b.loc().line}; {loops})" if loops else "")


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
