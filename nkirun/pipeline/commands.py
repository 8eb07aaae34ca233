"""check, run, cost and convert — each written once, after the front end (pipeline/front.py).
A YAML program, its text form and a traced kernel go through the same steps here; the
command line (cli/) prints what these return, the Python API returns it."""
from __future__ import annotations

import os
from dataclasses import field, replace

import numpy as np

from nkirun.records import record
from nkirun.diagnostics import Diagnostic, NkirunError, ProgramInvalid, RunError, error
from nkirun.hw.targets import DEFAULT_MAX_HBM_BYTES
from nkirun.pipeline.front import Front, Output

UNINITIALIZED = ("error", "strict", "nan", "zero")


@record()
class Checked:
    """A front end's program after the checker: the bound instructions and every
    diagnostic (the front end's and the checker's), sorted."""

    front: Front
    bound: list = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def program(self):
        return self.front.program

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.is_error]

    @property
    def ok(self) -> bool:
        return self.program is not None and not self.errors


def check(front: Front, max_hbm_bytes: int = DEFAULT_MAX_HBM_BYTES, memo=None) -> Checked:
    """Validate; never raises for a bad program (everything is a diagnostic). `memo`: a
    pipeline/reuse.py CheckMemo (simulate()'s: the last call's check, reused when this
    call traced the same program)."""
    from nkirun.checker.passes import sort_key, validate
    from nkirun.gc_policy import paused_gc
    if front.program is None:
        return Checked(front, [], list(front.diagnostics))
    with paused_gc():  # (nkirun/gc_policy.py: the caller's collector is restored after)
        bound, more = (validate if memo is None else memo.validate)(front.program,
                                                                    max_hbm_bytes)
    diags = sorted(front.diagnostics + front.relocated(more), key=sort_key)
    if front.language != "yaml":  # (the checker words its fixes for YAML)
        from nkirun.pipeline.hints import in_language
        diags = in_language(diags, front)
    return Checked(front, bound, diags)


def require_valid(front: Front, max_hbm_bytes: int = DEFAULT_MAX_HBM_BYTES,
                  memo=None) -> Checked:
    """The checked program; ProgramInvalid (carrying the source lines) on errors."""
    c = check(front, max_hbm_bytes, memo)
    if not c.ok:
        e = ProgramInvalid(c.errors or c.diagnostics)
        e.lines = front.lines
        raise e
    return c


def located(front: Front, e: NkirunError) -> NkirunError:
    """A run-time error's diagnostics as the user named the input (and its lines)."""
    from nkirun.pipeline.hints import in_language
    e.diagnostics = in_language(front.relocated(e.diagnostics), front)
    if not getattr(e, "lines", ()):
        e.lines = front.lines
    return e


# ---- run -----------------------------------------------------------------------------------
@record()
class Ran:
    """What `run` gives: the outputs, the machine they ran on and the warnings."""
    outputs: dict  # output name -> array, in output order
    machine: object
    warnings: list  # the check's (less those the run showed harmless), the run's, the shadow's
    shadow: object = None  # show.shadow_report.ShadowReport with run(shadow=True)


def run(c: Checked, uninitialized: str = "error", shadow: bool = False, trace: bool = False,
        dump_dir: str | None = None, dump_after: int | None = None, after_each=None,
        progress: bool | None = None, plans=None) -> Ran:
    """Execute a valid program on its Front's inputs. `trace`/`dump_dir`/`dump_after`:
    `run --trace/--dump/--after`; `after_each(b, m)`: called after each instruction;
    `shadow`: a float32 shadow run beside it (docs/shadow.md); `progress`: the bar on a
    terminal (None: when stderr is one); `plans`: simulate()'s kept plan (runner/
    plan_keep.py PlanMemo)."""
    from nkirun.runner.watch import chain, watch
    if uninitialized not in UNINITIALIZED:
        raise ValueError(f"uninitialized must be one of {', '.join(UNINITIALIZED)}; "
                         f"got {uninitialized!r}")
    front, program, bound = c.front, c.program, c.bound
    require_run_time_inputs(front)
    sh = extra = None
    if shadow:
        from nkirun.runner.shadow import Shadow
        from nkirun.show.shadow_report import trace_extra
        sh = Shadow(bound)
        extra = trace_extra(sh)
    step = None if sh is None else sh.step
    try:
        with watch(program, bound, trace, dump_dir, dump_after, progress=progress,
                   trace_extra=extra) as hook:
            hook = chain(hook, after_each)
            m = _execute(program, bound, front.inputs, hook, step, uninitialized,
                         plain=dump_dir is not None or after_each is not None, plans=plans)
        result = {o.name: read_output(m, o) for o in front.outputs}
    except NkirunError as e:
        raise located(front, e) from None
    from nkirun.runner.cores import harmless  # (less the W630s the run showed harmless)
    warnings = harmless([d for d in c.diagnostics if not d.is_error], m)
    seen = {(d.code, d.loc) for d in warnings}  # e.g. W052 found by check and at run time
    warnings += front.relocated([w for w in m.warnings if (w.code, w.loc) not in seen])
    report = None
    if sh is not None:
        from nkirun.show.shadow_report import ShadowReport
        picked = {o.name: (o.tensor, result[o.name], None if o.view is None else _strided(o))
                  for o in front.outputs}
        from nkirun.runner.shadow_finals import final_errors, final_values
        report = ShadowReport(sh.rows, result, sh.warnings, sh.backend,
                              final_errors(sh, picked),
                              {k: ref for k, (_, ref) in final_values(sh, picked).items()})
        warnings += sh.warnings
    return Ran(result, m, warnings, report)


def _execute(program, bound, inputs, hook, step, uninitialized, plain: bool, plans=None):
    """A run whose tensors live from first to last use (runner/freeing.py), or, where
    something looks at every tensor after each instruction (a dump, the API's
    after_each), with every tensor alive throughout."""
    if plain:
        from nkirun.runner.interpret import execute
        return execute(program, bound, inputs, hook, uninitialized, step=step)
    from nkirun.runner.freeing import execute_freeing
    return execute_freeing(program, bound, inputs, hook, step, uninitialized, plans)


def read_output(m, out: Output) -> np.ndarray:
    """An output's values; reading one not wholly written is an error (E090 when garbage
    computed from unwritten memory reaches it, E092 otherwise)."""
    from nkirun.runner.carried import garbage_error
    buf, w = m.buffers[out.tensor], m.written.get(out.tensor)
    seen = None if out.view is None else _strided(out)
    if w is not None and not m.fills and not (wv := (w if seen is None else seen(w))).all():
        # (nan|zero: unwritten elements read as the fill)
        carried = garbage_error(m, out.tensor, "output" if seen is None else "returned tensor",
                                seen)
        if carried is not None:
            raise carried
        bad = tuple(int(i) for i in np.argwhere(~wv)[0])
        raise RunError(error("E092", f"output `{out.label or out.name}` was never written "
                             f"at index {bad}", out.decl.loc,
                             hint="write every element of an output tensor"))
    return buf if seen is None else np.array(seen(buf))


def _strided(out: Output):
    offset, strides = out.view
    shape = out.decl.shape

    def seen(a):  # the returned view of a tensor-shaped array
        return np.lib.stride_tricks.as_strided(
            a.reshape(-1)[offset:], shape=shape,
            strides=tuple(s * a.itemsize for s in strides), writeable=False)
    return seen


def require_run_time_inputs(front: Front) -> None:
    """A program traced from a kernel knows its array parameters only by shape: `run`
    needs their contents (E596, naming them all)."""
    program = front.program
    missing = [n for n, t in program.tensors.items()
               if t.init == "input" and n not in front.inputs]
    if missing:
        names = ", ".join(f"`{n}`" for n in missing)
        fix = ("pass arrays for them, not nkirun.shape(...)" if front.language == "python"
               else "pass inputs={" + ", ".join(f"{n!r}: array" for n in missing) + "}")
        raise NkirunError(error("E596", f"the program's run-time inputs {names} were not "
                                "given", program.tensors[missing[0]].loc, hint=fix))


# ---- cost, convert -------------------------------------------------------------------------
def cost(c: Checked, trips=None):
    """The predicted schedule; runtime loops counted by `trips` ({loop: N}) or by running
    the program on its inputs (schedule/trips.py)."""
    from nkirun.gc_policy import paused_gc
    from nkirun.runner.freeing import execute_freeing
    from nkirun.schedule import schedule
    from nkirun.schedule.trips import expand
    program, bound = c.program, c.bound
    try:
        seq, loops = expand(program, bound, trips, lambda observe: execute_freeing(
            program, bound, c.front.inputs, observe))
    except NkirunError as e:
        raise located(c.front, e) from None
    from nkirun import speed
    may_spill = None  # (None: the schedule works out the live sets itself)
    if speed.SPILLS_FROM_CHECK and not any(d.code in ("W047", "E041") for d in c.diagnostics):
        may_spill = False  # the check found every live set within capacity: no spills
    with paused_gc():  # a slot per instruction, none freed: as check (gc_policy.py)
        sched = schedule(program, seq, may_spill=may_spill)
    sched.loops = loops
    return sched


def convert(c: Checked, to: str, out_dir: str | None = None) -> str:
    """The program as YAML or text (`to`); `out_dir`: where it will be written (relative
    data paths are rewritten to still point at their files). A kernel's program names its
    returned tensors out0, out1, ... as `run` does, and leaves the parameters given at
    run time without contents (`run --input`)."""
    from nkirun.source.write import write_program
    program = c.program
    if c.front.language == "python":
        program = program_for_file(c.front)
    return write_program(program, to, out_dir)


def program_for_file(front: Front):
    """A traced kernel's program as a file states it: run-time parameters without initial
    contents; each returned whole tensor renamed as its output (out0, ...)."""
    from nkirun.ir import rename_tensors
    program = front.program
    tensors = {n: replace(t, init=None) if t.init == "input" else t
               for n, t in program.tensors.items()}
    name = os.path.basename(program.path).removesuffix(".py")
    program = replace(program, tensors=tensors, name=program.name or name)
    mapping: dict = {}
    for o in front.outputs:
        if o.view is None and o.tensor not in mapping and o.name not in mapping.values():
            mapping[o.tensor] = o.name
    return rename_tensors(program, mapping)
