"""The Python API — the CLI is a thin layer over these functions.

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
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Union

import numpy as np

from nkirun.checker.passes import sort_key, validate
from nkirun.diagnostics import Diagnostic, Loc, NkirunError, ProgramInvalid, error
from nkirun.hw.targets import DEFAULT_MAX_HBM_BYTES, TARGETS
from nkirun.ir import Program

if TYPE_CHECKING:
    from nkirun.schedule.model import Schedule
    from nkirun.show.shadow_report import ShadowReport

ProgramSource = Union[str, "os.PathLike[str]", Mapping[str, Any], Program]
InputValue = Union[np.ndarray, float, int, str, "os.PathLike[str]"]
UNINITIALIZED = ("error", "strict", "nan", "zero")
_YAML_TEXT = re.compile(r"\s*(\{|version\s*:)")


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


def _parse(program: ProgramSource, fmt: str | None):
    """(Program | None, diagnostics) from any accepted program form."""
    if isinstance(program, Program):  # e.g. nkirun.trace(kernel, ...)'s
        return program, []
    if isinstance(program, Mapping):
        text, name, fmt = _yaml_of(program), "<program dict>", "yaml"
    elif isinstance(program, str) and ("\n" in program or _YAML_TEXT.match(program)):
        text, name = program.lstrip("\ufeff"), "<program text>"
    elif isinstance(program, (str, bytes, os.PathLike)):
        from nkirun.source import parse_file
        return parse_file(os.fsdecode(os.fspath(program)), fmt)
    else:
        raise TypeError("program must be a path (str or os.PathLike), the program's YAML "
                        "text, a dict of its YAML form, or an nkirun Program; got "
                        f"{type(program).__name__}")
    if fmt == "text":
        from nkirun.source.text_front import parse_text
        return parse_text(text, name, os.getcwd())
    from nkirun.source.yaml_front import parse_yaml
    return parse_yaml(text, name, os.getcwd())


def _yaml_of(program: Mapping) -> str:
    import yaml

    def plain(v):
        if isinstance(v, Mapping):
            return {k: plain(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        if isinstance(v, np.ndarray):
            return v.tolist()
        if isinstance(v, np.generic):
            return v.item()
        return v
    try:
        return yaml.safe_dump(plain(program), sort_keys=False)
    except yaml.YAMLError as e:
        raise TypeError(f"the program dict holds a value that is not plain YAML data: {e}") \
            from None


def check_program(program: ProgramSource, fmt: str | None = None, target: str | None = None,
                  max_hbm_bytes: int = DEFAULT_MAX_HBM_BYTES, inputs=None) -> Checked:
    """Parse and validate; never raises for a bad program (everything is a diagnostic).

    `inputs` (names of tensors `run` will be given with --input) count as initialised.
    """
    program_ir, diags = _parse(program, fmt)
    if program_ir is None:
        return Checked(None, [], diags)
    if target is not None:
        if target not in TARGETS:
            diags.append(error("E007", f"unknown target {target!r}", Loc(program_ir.path),
                               hint="allowed: " + ", ".join(TARGETS)))
        else:
            program_ir = replace(program_ir, target=target)
    if inputs:
        program_ir = _given_inputs(program_ir, inputs)
    bound, more = validate(program_ir, max_hbm_bytes)
    all_diags = sorted(diags + more, key=sort_key)
    return Checked(program_ir, bound, all_diags)


def _given_inputs(program: Program, names) -> Program:
    """--input gives a tensor its initial contents (program-format.md), so one declared
    without file/fill/data is not read before it is written when it is given."""
    tensors = {n: replace(t, init="input") if n in names and t.init is None else t
               for n, t in program.tensors.items()}
    return replace(program, tensors=tensors)


def check(program: ProgramSource, fmt: str | None = None, target: str | None = None
          ) -> list[Diagnostic]:
    """All diagnostics (errors and warnings) of a program; an empty list: a clean one."""
    return check_program(program, fmt, target).diagnostics


def require_valid(program: ProgramSource, fmt: str | None = None, target: str | None = None,
                  max_hbm_bytes: int = DEFAULT_MAX_HBM_BYTES, inputs=None) -> Checked:
    c = check_program(program, fmt, target, max_hbm_bytes, inputs)
    if not c.ok:
        raise ProgramInvalid(c.errors or c.diagnostics)
    return c


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
    return _run(program, inputs, out, fmt, target, uninitialized, max_hbm_bytes, after_each)[0]


def shadow(program: ProgramSource, inputs: Mapping[str, InputValue] | None = None,
           out: str | os.PathLike[str] | None = None, fmt: str | None = None,
           target: str | None = None, uninitialized: str = "error",
           max_hbm_bytes: int = DEFAULT_MAX_HBM_BYTES,
           after_each: Callable[[Any, Any], None] | None = None) -> ShadowReport:
    """`run` with a float32 shadow beside it (docs/shadow.md; also `nkirun.run(...,
    shadow=True)`): the ShadowReport, its `.outputs` the run's outputs (`.rows`,
    `.top(n)`, `.as_json()`, `report["shadow"]`)."""
    from nkirun.show.shadow_report import ShadowReport
    result, sh = _run(program, inputs, out, fmt, target, uninitialized, max_hbm_bytes,
                      after_each, shadowed=True)
    return ShadowReport(sh.rows, result, sh.warnings, sh.backend,
                        sh.final_errors({name: (name, a) for name, a in result.items()}))


def _run(program, inputs, out, fmt, target, uninitialized, max_hbm_bytes, after_each,
         shadowed: bool = False):
    """(the outputs, the Shadow or None): `run` and `shadow`."""
    from nkirun.runner.interpret import execute, outputs
    from nkirun.runner.outputs import write_outputs
    if uninitialized not in UNINITIALIZED:
        raise ValueError(f"uninitialized must be one of {', '.join(UNINITIALIZED)}; "
                         f"got {uninitialized!r}")
    if inputs is not None and not isinstance(inputs, Mapping):
        raise TypeError(f"inputs must be a dict of tensor name -> array or .npy path; got "
                        f"{type(inputs).__name__}")
    inputs = {k: os.fspath(v) if isinstance(v, os.PathLike) else v
              for k, v in (inputs or {}).items()}
    c = require_valid(program, fmt, target, max_hbm_bytes=max_hbm_bytes, inputs=inputs)
    prog = c.program
    assert prog is not None  # require_valid raised otherwise
    _check_inputs(prog, inputs, via="inputs")
    _require_run_time_inputs(prog, inputs)
    inputs = _load_input_files(prog, inputs)
    sh = None
    if shadowed:
        from nkirun.runner.shadow import Shadow
        sh = Shadow(c.bound)
    m = (execute(prog, c.bound, inputs, after_each, uninitialized) if sh is None else
         execute(prog, c.bound, inputs, after_each, uninitialized, step=sh.step))
    result = outputs(prog, m)
    if out is not None:
        try:
            write_outputs(result, os.fsdecode(os.fspath(out)))
        except NkirunError as e:
            raise NkirunError(located(e.diagnostics, prog.path)) from None
    return ({k: v.copy() for k, v in result.items()} if out is None else result), sh


def located(diags: list[Diagnostic], path: str) -> list[Diagnostic]:
    """The diagnostics, those without a file (`<program>`) placed at `path`."""
    return [replace(d, loc=Loc(path)) if d.loc.file == Loc().file else d for d in diags]


def _check_inputs(program: Program, inputs, via: str = "--input") -> None:
    """Every name given is a declared tensor (E075, located at the program file)."""
    from nkirun.source.builder import did_you_mean
    for name in inputs or {}:
        if name not in program.tensors:
            raise NkirunError(error(
                "E075", f"{via} names unknown tensor `{name}`", Loc(program.path),
                hint=did_you_mean(name, program.tensors)
                or "the program's tensors: " + ", ".join(program.tensors)))


def _require_run_time_inputs(program: Program, inputs) -> None:
    """A Program traced from a kernel (nkirun.trace) knows its array parameters only by
    shape: `run` needs their contents (E596, naming them all)."""
    missing = [n for n, t in program.tensors.items() if t.init == "input" and n not in inputs]
    if missing:
        names = ", ".join(f"`{n}`" for n in missing)
        raise NkirunError(error(
            "E596", f"the program's run-time inputs {names} were not given",
            program.tensors[missing[0]].loc,
            hint="pass inputs={" + ", ".join(f"{n!r}: array" for n in missing) + "}"))


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
    from nkirun.schedule import schedule
    from nkirun.schedule.trips import expand
    c = require_valid(program, fmt, target)

    def run(after_each):
        from nkirun.runner.interpret import execute
        return execute(c.program, c.bound, None, after_each)

    seq, loops = expand(c.program, c.bound, trips, run)
    sched = schedule(c.program, seq)
    sched.loops = loops
    return sched
