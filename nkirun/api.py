"""The Python API — the CLI is a thin layer over these functions.

    import nkirun
    outs = nkirun.run("prog.yaml", inputs={"x": x})     # dict name -> ndarray
    diags = nkirun.check("prog.yaml")                     # list of Diagnostic
    sched = nkirun.cost("prog.yaml")                      # Schedule
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from nkirun.diagnostics import Diagnostic, ProgramInvalid, error
from nkirun.ir import Program
from nkirun.hw.targets import DEFAULT_MAX_HBM_BYTES, TARGETS
from nkirun.checker.passes import sort_key, validate


@dataclass
class Checked:
    program: Program | None
    bound: list = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.is_error]

    @property
    def ok(self) -> bool:
        return self.program is not None and not self.errors


def check_program(path: str, fmt: str | None = None, target: str | None = None,
                  max_hbm_bytes: int = DEFAULT_MAX_HBM_BYTES, inputs=None) -> Checked:
    """Parse and validate; never raises for bad input (everything is a diagnostic).

    `inputs` (names of tensors `run` will be given with --input) count as initialised.
    """
    from nkirun.source import parse_file
    program, diags = parse_file(path, fmt)
    if program is None:
        return Checked(None, [], diags)
    if target is not None:
        if target not in TARGETS:
            diags.append(error("E007", f"unknown target {target!r}",
                               hint="allowed: " + ", ".join(TARGETS)))
        else:
            program = replace(program, target=target)
    if inputs:
        program = _given_inputs(program, inputs)
    bound, more = validate(program, max_hbm_bytes)
    all_diags = sorted(diags + more, key=sort_key)
    return Checked(program, bound, all_diags)


def _given_inputs(program: Program, names) -> Program:
    """--input gives a tensor its initial contents (program-format.md), so one declared
    without file/fill/data is not read before it is written when it is given."""
    tensors = {n: replace(t, init="input") if n in names and t.init is None else t
               for n, t in program.tensors.items()}
    return replace(program, tensors=tensors)


def check(path: str, fmt: str | None = None, target: str | None = None) -> list[Diagnostic]:
    """All diagnostics (errors and warnings) for a program file."""
    return check_program(path, fmt, target).diagnostics


def require_valid(path: str, fmt: str | None = None, target: str | None = None,
                  max_hbm_bytes: int = DEFAULT_MAX_HBM_BYTES, inputs=None) -> Checked:
    c = check_program(path, fmt, target, max_hbm_bytes, inputs)
    if not c.ok:
        raise ProgramInvalid(c.errors or c.diagnostics)
    return c


def run(path: str, inputs: dict | None = None, out: str | None = None, fmt: str | None = None,
        max_hbm_bytes: int = DEFAULT_MAX_HBM_BYTES, after_each=None) -> dict[str, np.ndarray]:
    """Check, then run the program; returns the output tensors (and writes them to `out`).

    `inputs` maps tensor names to arrays or .npy paths, replacing initial contents.
    Raises nkirun.NkirunError (with diagnostics) for invalid programs or run-time errors.
    """
    from nkirun.runner.files import write_outputs
    from nkirun.runner.interpret import execute, outputs
    c = require_valid(path, fmt, max_hbm_bytes=max_hbm_bytes, inputs=inputs)
    _check_inputs(c.program, inputs)
    m = execute(c.program, c.bound, inputs, after_each)
    result = outputs(c.program, m)
    if out is not None:
        write_outputs(result, out)
    return {k: v.copy() for k, v in result.items()} if out is None else result


def _check_inputs(program: Program, inputs) -> None:
    from nkirun.diagnostics import NkirunError
    from nkirun.source.builder import did_you_mean
    for name in inputs or {}:
        if name not in program.tensors:
            raise NkirunError(error("E075", f"--input names unknown tensor `{name}`",
                                    hint=did_you_mean(name, program.tensors)
                                    or "allowed: " + ", ".join(program.tensors)))


def cost(path: str, fmt: str | None = None, target: str | None = None):
    """The predicted schedule (nkirun.schedule.Schedule) of a valid program."""
    from nkirun.schedule import schedule
    c = require_valid(path, fmt, target)
    return schedule(c.program, c.bound)
