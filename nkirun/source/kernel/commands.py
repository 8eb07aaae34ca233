"""`nkirun check|run|cost|convert` for a Python kernel (nkirun/cli.py dispatches here)."""
from __future__ import annotations

import os
import sys
from dataclasses import replace

import click

from nkirun.diagnostics import NkirunError
from nkirun.source.kernel.cli import relocate, split_spec, trace_spec

EXIT_OK, EXIT_INVALID = 0, 1


def _traced(spec, params):
    try:
        return trace_spec(spec, **params)
    except NkirunError as e:
        raise relocate(e, spec) from None


def _checked(spec, traced, max_hbm_bytes=None):
    from nkirun.hw.targets import DEFAULT_MAX_HBM_BYTES
    from nkirun.source.kernel.api import check_traced
    from nkirun.source.kernel.cli import _user_path
    bound, diags = check_traced(traced, max_hbm_bytes or DEFAULT_MAX_HBM_BYTES)
    path = split_spec(spec)[0]
    return bound, [_user_path(d, path) for d in diags]


def check(spec, fmt, params) -> int:
    from nkirun.show.render import plural, print_diagnostics, summary_line
    try:
        traced = _traced(spec, params)
        _, diags = _checked(spec, traced)
    except NkirunError as e:  # the kernel could not be traced: its diagnostics, like any
        traced, diags = None, e.diagnostics
    errors = [d for d in diags if d.is_error]
    if fmt == "json":
        import json
        click.echo(json.dumps({"program": spec, "ok": not errors, "errors": len(errors),
                               "warnings": len(diags) - len(errors),
                               "diagnostics": [d.as_dict() for d in diags]}, indent=2))
    else:
        print_diagnostics(diags)
        n = len(traced.program.instructions) if traced else 0
        if errors:
            click.echo(f"{spec}: {summary_line(diags)}")
        else:
            click.echo(f"{spec}: ok — {plural(n, 'instruction')}"
                       + (f", {summary_line(diags)}" if diags else ""))
    return EXIT_INVALID if errors else EXIT_OK


def _require_valid(spec, traced, max_hbm_bytes=None):
    from nkirun.diagnostics import ProgramInvalid
    bound, diags = _checked(spec, traced, max_hbm_bytes)
    errors = [d for d in diags if d.is_error]
    if errors:
        raise ProgramInvalid(errors)
    return bound, diags


def default_out_dir(spec: str) -> str:
    path, func = split_spec(spec)
    stem = os.path.basename(path).removesuffix(".py")
    return os.path.join("out", stem if func is None else f"{stem}_{func}")


def run(spec, out_dir, params, max_hbm_bytes=None, shadow=None,
        uninitialized: str = "error") -> int:
    """`shadow`: (top N, format) for `run --shadow` (runner/shadow.py); `uninitialized`:
    `run --uninitialized`."""
    from nkirun.runner.outputs import write_outputs
    from nkirun.show.render import plural, print_diagnostics
    from nkirun.source.kernel.api import run_traced
    traced = _traced(spec, {**params, "max_hbm_bytes": max_hbm_bytes})
    bound, diags = _require_valid(spec, traced, max_hbm_bytes)
    sh = None
    if shadow is not None:
        from nkirun.runner.shadow import Shadow
        sh = Shadow(bound)
    ran: list = []
    try:
        arrays = run_traced(traced, bound, step=sh.step if sh is not None else None,
                            machine=ran, uninitialized=uninitialized)
    except NkirunError as e:
        raise relocate(e, spec) from None
    from nkirun.runner.cores import harmless  # (less the W630s the run showed harmless)
    late = [w for w in ran[0].warnings if w.code == "W633"]  # (the run's own two-core ones)
    print_diagnostics(harmless([d for d in diags if not d.is_error], ran[0]) + late, (),
                      sys.stderr)
    result = {f"out{i}": a for i, a in enumerate(arrays)}
    written = write_outputs(result, out_dir or default_out_dir(spec)) if result else []
    if sh is not None:
        from nkirun.show.shadow_report import kernel_shadow_output
        return kernel_shadow_output(spec, traced, sh, result, written, *shadow)
    click.echo(f"{spec}: {plural(len(traced.program.instructions), 'instruction')} executed, "
               f"{plural(len(written), 'output')} written")
    for (key, arr), handle, path in zip(result.items(), traced.outputs, written):
        click.echo(f"  {key}  {'x'.join(map(str, arr.shape))}  {handle.dtype}  "
                   f"name={handle.name}  -> {path}")
    return EXIT_OK


def cost(spec, fmt, params, trace_out, views, max_rows, width, trips=None) -> int:
    from nkirun.schedule import render_report, schedule, to_json, write_trace
    from nkirun.schedule.trips import expand
    from nkirun.source.kernel.execute import execute_freeing
    traced = _traced(spec, params)
    bound, _ = _require_valid(spec, traced)
    try:  # runtime loops: counted on the --input data, or from --trip
        seq, loops = expand(traced.program, bound, trips, lambda observe: execute_freeing(
            traced, bound, traced.inputs, observe))
    except NkirunError as e:
        raise relocate(e, spec) from None
    sched = schedule(traced.program, seq)
    sched.loops = loops
    if trace_out:
        try:
            write_trace(sched, trace_out)
        except OSError as e:
            from nkirun.diagnostics import error
            raise NkirunError(error("E080", f"--trace-out: cannot write {trace_out}: "
                                    f"{e.strerror or e}"))
    if fmt == "json":
        import json
        click.echo(json.dumps(to_json(sched, views), indent=2))
    else:
        render_report(sched, width=width, views=views, max_rows=max_rows)
    return EXIT_OK


def convert(spec, to, output, params) -> int:
    from nkirun.source.write import write_program
    traced = _traced(spec, params)
    _require_valid(spec, traced)
    program = program_for_file(traced)
    text = write_program(program, to, None if output is None else os.path.dirname(output) or ".")
    if output is None:
        click.echo(text, nl=False)
        return EXIT_OK
    tmp = f"{output}.tmp{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, output)
    except OSError as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        from nkirun.diagnostics import error
        raise NkirunError(error("E080", f"-o: cannot write {output}: {exc.strerror or exc}"))
    return EXIT_OK


def program_for_file(traced):
    """The traced program as a file states it: parameters given only at run time have no
    initial contents in the file (pass them with `run --input`)."""
    program = traced.program
    tensors = {n: replace(t, init=None) if t.init == "input" else t
               for n, t in program.tensors.items()}
    name = os.path.basename(program.path).removesuffix(".py")
    return replace(program, tensors=tensors, name=program.name or name)
