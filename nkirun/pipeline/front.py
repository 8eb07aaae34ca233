"""The start of the one pipeline: a YAML program, its text form and a Python kernel each
become a `Front` — the IR program, its run-time inputs, its outputs' names, the source
lines and the language its hints are written in — and nothing after this asks which it
was. check, run, cost and convert (pipeline/commands.py) start from a Front; the command
line (cli/) and the Python API (nkirun.api, nkirun.api_kernel) both make theirs here."""
from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import field, replace

import numpy as np

from nkirun.records import record
from nkirun.diagnostics import Loc, NkirunError, error
from nkirun.hw.targets import TARGETS
from nkirun.ir import Program, TensorDecl
from nkirun.pipeline.kernel_params import OptionError

LANGUAGES = ("yaml", "text", "python")
_YAML_TEXT = re.compile(r"\s*(\{|version\s*:)")


@record(frozen=True)
class Output:
    """One output: `name` is its file's stem and what --expect compares it with (the
    tensor's own name in a program; out0, out1, ... in a kernel's return order)."""

    name: str
    decl: TensorDecl  # what is read: its shape, dtype and where it was declared
    tensor: str  # the IR tensor holding it
    view: tuple | None = None  # (offset, strides) when a kernel returned part of `tensor`
    label: str | None = None  # a kernel's tensor name (`name=`), for the summary


@record()
class Front:
    """What a front end hands the pipeline (`program` None: it did not parse or trace;
    `diagnostics` say why)."""

    label: str  # the input as the user named it: a path, or PATH.py::FUNCTION
    language: str  # yaml | text | python: the language of hints and fixes
    program: Program | None
    diagnostics: list
    outputs: list[Output] = field(default_factory=list)
    inputs: dict = field(default_factory=dict)  # tensor name -> array or .npy path
    lines: tuple = ()  # the source lines diagnostics quote (a kernel's are read from disk)
    structure: object = None  # a kernel's return structure (output positions), for the API
    path: str | None = None  # the file diagnostics name as the user wrote it

    def relocated(self, diags: list) -> list:
        """The diagnostics as the user named the input: a kernel file's absolute path
        written as given, a `<program>` placeholder as the file read."""
        if self.path is None:
            return list(diags)
        here = os.path.abspath(self.path)
        out = []
        for d in diags:
            f = d.loc.file
            if f == Loc().file:
                d = replace(d, loc=Loc(self.path))
            elif f != self.path and f and os.path.abspath(f) == here:
                d = replace(d, loc=replace(d.loc, file=self.path))
            out.append(d)
        return out


class BadOption(NkirunError, ValueError):
    """A bad value of one of nkirun's own API options (target, lnc, trips): a ValueError,
    and an NkirunError carrying one diagnostic, as every nkirun error does."""

    def __init__(self, code: str, message: str, hint: str | None = None):
        super().__init__(error(code, message, Loc(), hint=hint))


def require_target(target) -> str | None:
    """`target` if nkirun knows it (or None); BadOption (E007) naming the choices."""
    if target is not None and target not in TARGETS:
        raise BadOption("E007", f"unknown target {target!r}",
                        "allowed: " + ", ".join(TARGETS))
    return target


def require_lnc(lnc) -> int:
    """The logical NeuronCore size: 1 or 2 (BadOption otherwise)."""
    if lnc is None:
        return 1
    if isinstance(lnc, bool) or lnc not in (1, 2):
        raise BadOption("E595", f"lnc must be 1 or 2; got {lnc!r}",
                        "lnc=2 runs the kernel on the two cores of a trn2/trn3 logical core")
    return int(lnc)


def require_trips(trips) -> dict | None:
    """`trips` ({runtime loop name: trip count}) checked: a ValueError otherwise."""
    if trips is None:
        return None
    if not isinstance(trips, Mapping) or not all(
            isinstance(k, str) and isinstance(n, int) and not isinstance(n, bool) and n >= 0
            for k, n in trips.items()):
        raise BadOption("E595", "trips must be a dict of loop name -> trip count (int "
                        f">= 0); got {trips!r}")
    return dict(trips)


# ---- programs (YAML, text) -----------------------------------------------------------------
def parse_source(program, fmt: str | None):
    """(Program | None, diagnostics, language) from any accepted program form: a path, the
    YAML or text of a program, a dict of its YAML form, or an IR Program."""
    if isinstance(program, Program):  # e.g. nkirun.trace(kernel, ...)'s
        return program, [], "yaml"
    if isinstance(program, Mapping):
        text, name, fmt = _yaml_of(program), "<program dict>", "yaml"
    elif isinstance(program, str) and ("\n" in program or _YAML_TEXT.match(program)):
        text, name = program.lstrip("\ufeff"), "<program text>"
    elif isinstance(program, (str, bytes, os.PathLike)):
        from nkirun.source import detect_format, parse_file
        path = os.fsdecode(os.fspath(program))
        return (*parse_file(path, fmt), detect_format(path, fmt))
    else:
        raise TypeError("program must be a path (str or os.PathLike), the program's YAML "
                        "text, a dict of its YAML form, or an nkirun Program; got "
                        f"{type(program).__name__}")
    if fmt == "text":
        from nkirun.source.text_front import parse_text
        return (*parse_text(text, name, os.getcwd()), "text")
    from nkirun.source.yaml_front import parse_yaml
    return (*parse_yaml(text, name, os.getcwd()), "yaml")


def _yaml_of(program: Mapping) -> str:
    from nkirun.source.yaml_import import yaml

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


def program_front(source, fmt: str | None = None, target: str | None = None,
                  inputs: Mapping | None = None, label: str | None = None) -> Front:
    """The Front of a YAML or text program. `inputs` (tensor name -> array or .npy path)
    replace initial contents at run time: such a tensor counts as initialised."""
    program, diags, language = parse_source(source, fmt)
    name = label or (os.fsdecode(os.fspath(source)) if isinstance(source, (str, os.PathLike))
                     and not (isinstance(source, str) and "\n" in source) else None)
    if program is None:
        return Front(name or "<program>", language, None, diags, path=name)
    if target is not None:
        if target not in TARGETS:
            diags.append(error("E007", f"unknown target {target!r}", Loc(program.path),
                               hint="allowed: " + ", ".join(TARGETS)))
        else:
            program = replace(program, target=target)
    inputs = dict(inputs) if isinstance(inputs, Mapping) else dict.fromkeys(inputs or ())
    if inputs:
        program = _given_inputs(program, inputs)
    outputs = [Output(n, t, n) for n, t in program.tensors.items() if t.output]
    return Front(name or program.path, language, program, diags, outputs, inputs,
                 program.source_lines, path=program.path)


def _given_inputs(program: Program, names) -> Program:
    """--input gives a tensor its initial contents (program-format.md), so one declared
    without file/fill/data is not read before it is written when it is given."""
    tensors = {n: replace(t, init="input") if n in names and t.init is None else t
               for n, t in program.tensors.items()}
    return replace(program, tensors=tensors)


def check_input_names(front: Front, via: str = "--input") -> None:
    """Every input names a declared tensor (E075, located at the program file)."""
    from nkirun.diagnostics import did_you_mean
    program = front.program
    for name in front.inputs:
        if name not in program.tensors:
            raise NkirunError(error(
                "E075", f"{via} names unknown tensor `{name}`", Loc(program.path),
                hint=did_you_mean(name, program.tensors)
                or "the program's tensors: " + ", ".join(program.tensors)))


def parse_input_options(values) -> dict[str, str]:
    """`--input NAME=PATH` words -> {NAME: PATH} (a program's inputs)."""
    inputs = {}
    for v in values:
        name, sep, path = v.partition("=")
        if not sep or not name.strip() or not path:
            raise OptionError(f"{v!r}: expected NAME=PATH.npy", "--input")
        inputs[name.strip()] = path
    return inputs


# ---- kernels ---------------------------------------------------------------------------------
@record(frozen=True)
class KernelOptions:
    """A kernel's parameters as the command line (or the manifest) spells them."""

    inputs: tuple = ()  # NAME=PATH.npy[:DTYPE]
    shapes: tuple = ()  # NAME=DTYPE[D0,...]
    args: tuple = ()  # NAME=VALUE (a Python literal)
    grid: str | None = None
    lnc: int | None = None

    def given(self) -> list[str]:
        return [flag for flag, v in (("--arg", self.args), ("--shape", self.shapes),
                                     ("--grid", self.grid), ("--lnc", self.lnc)) if v]


def is_kernel(spec) -> bool:
    """A Python kernel (`PATH.py`, `PATH::FUNCTION`) rather than a program file."""
    from nkirun.source.kernel import is_kernel_path
    return isinstance(spec, str) and is_kernel_path(spec)


def load(spec: str, fmt: str | None = None, target: str | None = None,
         kernel: KernelOptions = KernelOptions()) -> Front:
    """The Front of a command-line input: a program file, or `PATH.py[::FUNCTION]` traced
    with `kernel`'s parameters. Raises NkirunError (a kernel that does not trace),
    KernelUsageError and OptionError (usage errors)."""
    if is_kernel(spec):
        return kernel_front(spec, kernel, target)
    given = kernel.given()
    if given:
        raise OptionError(f"{', '.join(given)} apply to Python kernels "
                          f"(KERNEL.py::FUNCTION), not to the program {spec}", None)
    return program_front(spec, fmt, target, parse_input_options(kernel.inputs), spec)


def kernel_front(spec: str, opts: KernelOptions, target: str | None = None) -> Front:
    """Import and trace `PATH.py[::FUNCTION]` with the command line's parameters."""
    from nkirun.pipeline import kernel_params as kp
    from nkirun.pipeline.kernel_calls import default_target, import_function
    from nkirun.source.kernel.loader import split_spec
    from nkirun.source.kernel.modules import Kernel
    from nkirun.source.kernel.trace import check_names, trace
    path, func_name = split_spec(spec)
    notes: list = []  # warnings about the inputs (W601)
    values = {**kp._parse_inputs(opts.inputs, notes), **kp._parse_shapes(opts.shapes)}
    for name, v in kp._parse_args(opts.args).items():
        if name in values:
            raise OptionError(f"parameter `{name}` is given twice", None)
        values[name] = v
    func = import_function(path, func_name)
    plain = func.func if isinstance(func, Kernel) else func
    kp._enum_args(getattr(plain, "__wrapped__", plain), values)
    check_names(plain, values)
    from nkirun.gc_policy import paused_gc
    with paused_gc():  # as trace_call (nkirun/gc_policy.py: the caller's collector restored)
        traced = trace(func, values, target or default_target(),
                       kp._grid(opts.grid, opts.lnc), opts.lnc or 1)
    traced.program = replace(traced.program, path=path)  # as the user named it
    return traced_front(traced, spec, path, notes)


def call_front(kernel, args=(), kwargs=None, target=None, lnc: int = 1) -> Front:
    """The Front of a kernel call (the Python API's): arrays and nkirun.shape(...) are its
    tensors."""
    from nkirun.pipeline.kernel_calls import trace_call
    traced = trace_call(kernel, args, kwargs, target, lnc=lnc)
    return traced_front(traced, getattr(kernel, "__name__", "kernel"))


def traced_front(traced, label: str, path: str | None = None, notes=()) -> Front:
    """The Front of a traced kernel: its returned tensors are the outputs out0, out1, ...
    (kernel-contract.md), each the part of its tensor the kernel returned."""
    outputs = []
    for i, h in enumerate(traced.outputs):
        rec = h._rec
        decl = traced.program.tensors[rec.name]
        whole = h.offset == 0 and tuple(h.shape) == decl.shape and tuple(h.strides) == \
            _c_strides(decl.shape)
        out_decl = TensorDecl(f"out{i}", "hbm", tuple(h.shape), decl.dtype, loc=decl.loc)
        outputs.append(Output(f"out{i}", out_decl, rec.name,
                              None if whole else (h.offset, tuple(h.strides)), h.name))
    front = Front(label, "python", traced.program, list(notes) + traced.diagnostics, outputs,
                  dict(traced.inputs), (), traced.structure, path or traced.program.path)
    front.diagnostics = front.relocated(front.diagnostics)
    return front


def _c_strides(shape: tuple) -> tuple:
    out, n = [], 1
    for s in reversed(shape):
        out.append(n)
        n *= s
    return tuple(reversed(out))
