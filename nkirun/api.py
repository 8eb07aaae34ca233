"""The Python API for programs — like the CLI, a thin layer over the one pipeline
(nkirun/pipeline/: a Front, then check, run, cost); kernels: nkirun/api_kernel.py.

    import nkirun
    outs = nkirun.run("prog.yaml", inputs={"x": x})     # dict name -> ndarray
    diags = nkirun.check("prog.yaml")                     # list of Diagnostic
    sched = nkirun.cost("prog.yaml")                      # nkirun.schedule.Schedule

A program is a path (`str` or `os.PathLike`), the program's YAML text (a `str` holding a
newline, or starting with `{` or `version`), or a dict of the YAML form. Text and dicts
read data files relative to the current folder.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Union

import numpy as np

from nkirun.diagnostics import Diagnostic, Loc, NkirunError
from nkirun.hw.targets import DEFAULT_MAX_HBM_BYTES
from nkirun.ir import Program
from nkirun.pipeline import commands
from nkirun.pipeline.commands import UNINITIALIZED, Checked  # noqa: F401
from nkirun.pipeline.front import Front, check_input_names, program_front, require_trips

if TYPE_CHECKING:
    from nkirun.schedule.model import Schedule
    from nkirun.show.shadow_report import ShadowReport

ProgramSource = Union[str, "os.PathLike[str]", Mapping[str, Any], Program]
InputValue = Union[np.ndarray, float, int, str, "os.PathLike[str]"]


def front(program: ProgramSource, fmt: str | None = None, target: str | None = None,
          inputs=None) -> Front:
    """The pipeline's Front of a program in any accepted form."""
    return program_front(program, fmt, target, inputs)


def check_program(program: ProgramSource, fmt: str | None = None, target: str | None = None,
                  max_hbm_bytes: int = DEFAULT_MAX_HBM_BYTES, inputs=None) -> Checked:
    """Parse and validate; never raises for a bad program (everything is a diagnostic).

    `inputs` (names of tensors `run` will be given with --input) count as initialised.
    """
    return commands.check(front(program, fmt, target, inputs), max_hbm_bytes)


def check(program: ProgramSource, fmt: str | None = None, target: str | None = None
          ) -> list[Diagnostic]:
    """All diagnostics (errors and warnings) of a program; an empty list: a clean one."""
    return check_program(program, fmt, target).diagnostics


def require_valid(program: ProgramSource, fmt: str | None = None, target: str | None = None,
                  max_hbm_bytes: int = DEFAULT_MAX_HBM_BYTES, inputs=None) -> Checked:
    return commands.require_valid(front(program, fmt, target, inputs), max_hbm_bytes)


def run(program: ProgramSource, inputs: Mapping[str, InputValue] | None = None,
        out: str | os.PathLike[str] | None = None, fmt: str | None = None,
        target: str | None = None, uninitialized: str = "error",
        max_hbm_bytes: int = DEFAULT_MAX_HBM_BYTES,
        after_each: Callable[[Any, Any], None] | None = None) -> dict[str, np.ndarray]:
    """Check, then run the program; returns the output tensors (and writes them to `out`).

    `inputs` maps tensor names to arrays (or .npy paths), replacing initial contents; an
    array of another numeric dtype is cast to the declared one, a 0-d array (or a number)
    fills the tensor. `target` overrides the program's. `uninitialized`: reading an
    element nothing wrote is an error ("error", E090), or reads as NaN ("nan") or 0
    ("zero"). Raises nkirun.NkirunError (with diagnostics) for invalid programs or
    run-time errors, ValueError/TypeError for bad arguments.
    """
    return _run(program, inputs, out, fmt, target, uninitialized, max_hbm_bytes,
                after_each).outputs


def shadow(program: ProgramSource, inputs: Mapping[str, InputValue] | None = None,
           out: str | os.PathLike[str] | None = None, fmt: str | None = None,
           target: str | None = None, uninitialized: str = "error",
           max_hbm_bytes: int = DEFAULT_MAX_HBM_BYTES,
           after_each: Callable[[Any, Any], None] | None = None) -> ShadowReport:
    """`run` with a float32 shadow beside it (docs/shadow.md; also `nkirun.run(...,
    shadow=True)`): the ShadowReport, its `.outputs` the run's outputs (`.rows`,
    `.top(n)`, `.as_json()`, `report["shadow"]`)."""
    return _run(program, inputs, out, fmt, target, uninitialized, max_hbm_bytes,
                after_each, shadowed=True).shadow


def _run(program, inputs, out, fmt, target, uninitialized, max_hbm_bytes, after_each,
         shadowed: bool = False):
    """The pipeline's Ran: `run` and `shadow`."""
    from nkirun.pipeline.front import require_target
    from nkirun.runner.outputs import write_outputs
    if uninitialized not in UNINITIALIZED:
        raise ValueError(f"uninitialized must be one of {', '.join(UNINITIALIZED)}; "
                         f"got {uninitialized!r}")
    require_target(target)
    if inputs is not None and not isinstance(inputs, Mapping):
        raise TypeError(f"inputs must be a dict of tensor name -> array or .npy path; got "
                        f"{type(inputs).__name__}")
    inputs = {k: os.fspath(v) if isinstance(v, os.PathLike) else v
              for k, v in (inputs or {}).items()}
    f = front(program, fmt, target, inputs)
    c = commands.require_valid(f, max_hbm_bytes)
    check_input_names(f, via="inputs")
    f.inputs = _load_input_files(f.program, f.inputs)
    ran = commands.run(c, uninitialized, shadow=shadowed, after_each=after_each,
                       progress=False)
    if out is not None:
        try:
            write_outputs(ran.outputs, os.fsdecode(os.fspath(out)))
        except NkirunError as e:
            raise NkirunError(located(e.diagnostics, f.program.path)) from None
    else:
        ran.outputs = {k: v.copy() for k, v in ran.outputs.items()}
    if ran.shadow is not None:
        ran.shadow.outputs = ran.outputs
    return ran


def located(diags: list[Diagnostic], path: str) -> list[Diagnostic]:
    """The diagnostics, those without a file (`<program>`) placed at `path`."""
    return [replace(d, loc=Loc(path)) if d.loc.file == Loc().file else d for d in diags]


def _load_input_files(program: Program, inputs: dict) -> dict:
    """.npy paths among the inputs read here, so messages say `input file` (not the
    CLI's `--input file`); like `file:` data they must match the declaration."""
    from nkirun.runner.files import load_npy
    out = {}
    for name, v in inputs.items():
        if isinstance(v, str):
            t = program.tensors[name]
            v = load_npy(v, t, "input file", Loc(program.path))
        out[name] = v
    return out


def cost(program: ProgramSource, fmt: str | None = None, target: str | None = None,
         trips: Mapping[str, int] | None = None) -> Schedule:
    """The predicted schedule (nkirun.schedule.Schedule) of a valid program;
    nkirun.schedule.to_json(sched) gives the `cost --format json` document.

    `trips` ({loop name: N}) assumes trip counts for runtime loops; without it a loop
    whose count depends on a register is counted by running the program on its data
    (schedule/trips.py)."""
    from nkirun.pipeline.front import require_target
    require_target(target)
    trips = require_trips(trips)
    return commands.cost(require_valid(program, fmt, target), trips)
