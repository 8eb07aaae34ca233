"""`nkirun run`."""
from __future__ import annotations

import os
import sys

import click

from nkirun.cli.common import (_TOLERANCE, EXIT_INVALID, EXIT_OK, _debug_option, _echo_json,
                               _guard, _kernel_params, _program_format_option, _target_option)
from nkirun.diagnostics import NkirunError
from nkirun.source.kernel.cli import kernel_options, no_kernel_options
from nkirun.source.kernel.loader import is_kernel_path


def _parse_inputs(values) -> dict[str, str]:
    inputs = {}
    for v in values:
        name, sep, path = v.partition("=")
        if not sep or not name or not path:
            raise click.BadParameter(f"{v!r}: expected NAME=PATH.npy", param_hint="--input")
        inputs[name.strip()] = path
    return inputs


def default_out_dir(program: str) -> str:
    stem = os.path.basename(program)
    for suffix in (".yaml", ".yml", ".nkis", ".txt"):
        stem = stem.removesuffix(suffix)
    if stem in ("", ".", ".."):  # `..yaml` must not write into out/ itself or into ./
        stem = "program"
    return os.path.join("out", stem)


@click.command(short_help="Check, then execute a program with NumPy; write its outputs.")
@click.argument("program", type=click.Path(dir_okay=False))
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None, metavar="DIR",
              help="folder for the output .npy files [default: ./out/<program name>]")
@click.option("--input", "inputs", multiple=True, metavar="NAME=PATH",
              help="replace tensor NAME's initial contents with a .npy file (repeatable)")
@click.option("--max-hbm-bytes", type=click.IntRange(min=1), default=None, metavar="BYTES",
              help="refuse HBM tensors larger than this (default 4 GiB)")
@click.option("--expect", "expect_dir", type=click.Path(file_okay=False), default=None,
              metavar="DIR",
              help="compare each output with DIR/<name>.npy; exit 1 on a mismatch "
                   "(exact by default; integer tensors always exact)")
@click.option("--rtol", type=_TOLERANCE, default=None, metavar="R",
              help="with --expect: relative tolerance for float outputs")
@click.option("--atol", type=_TOLERANCE, default=None, metavar="A",
              help="with --expect: absolute tolerance for float outputs")
@click.option("--range-rtol", type=_TOLERANCE, default=None, metavar="R",
              help="with --expect: also allow R x max|expected| (the tensor's largest "
                   "expected magnitude), as kernel test suites do")
@click.option("--ulp", type=click.IntRange(min=0), default=None, metavar="N",
              help="with --expect: allowed distance in units in the last place of the "
                   "output dtype (instead of --rtol/--atol)")
@click.option("--trace", is_flag=True, help="print one line per executed instruction "
              "(what it wrote: min/max/mean, NaN/inf counts) to stderr")
@click.option("--dump", "dump_dir", type=click.Path(file_okay=False), default=None,
              metavar="DIR",
              help="write every tensor as DIR/<k>_<op>/<tensor>.npy after each instruction")
@click.option("--after", "dump_after", type=int, default=None, metavar="K",
              help="with --dump: only after instruction K (0-based)")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="json: one object on stdout (outputs, warnings, the "
              "--expect verdict); errors too")
@click.option("--shadow", is_flag=True,
              help="also run a float32 shadow of the program (every float tensor kept in "
                   "float32) and report, per instruction, the error its output carries "
                   "against the shadow and the error it added itself, with overflow, "
                   "underflow, NaN born and fp8 saturation counts (docs/shadow.md)")
@click.option("--shadow-top", type=click.IntRange(min=1), default=None, metavar="N",
              help="with --shadow: how many instructions the \"most added error\" summary "
                   "names [default: 5]")
@click.option("--uninitialized", type=click.Choice(["error", "strict", "nan", "zero"]), default="error",
              show_default=True, help="reading an element nothing wrote: error = its garbage "
              "is carried, E090 when it reaches an output, an index or a register; strict = "
              "E090 at the read; nan / zero = it reads as NaN / 0 (the outputs too)")
@_program_format_option
@_target_option
@kernel_options(inputs=False)
@_debug_option
@_guard
def run(program, out_dir, inputs, max_hbm_bytes, expect_dir, rtol, atol, range_rtol, ulp, trace,
        dump_dir, dump_after, uninitialized, program_format, debug, fmt="text", target=None,
        kernel_args=(), kernel_shapes=(), grid=None, lnc=None, shadow=False, shadow_top=None):
    """Check, then execute PROGRAM with NumPy; write every `output: true` tensor.

    Outputs go to DIR/<name>.npy (--out DIR), written only after the whole run succeeded,
    each atomically. On any error nothing in DIR changes and the exit status is 1.
    With --expect the outputs are then compared with golden files: a mismatch is
    reported per tensor and exits 1 (the outputs are written anyway, to inspect them).

    \b
    Examples:
      nkirun run prog.yaml --out out/prog
      nkirun run prog.yaml --input x=x.npy            # other initial contents for x
      nkirun run prog.yaml --expect golden/ --ulp 2   # compare with golden/<name>.npy
      nkirun run prog.yaml --trace                    # what each instruction wrote
      nkirun run prog.yaml --dump dump/ --after 3     # every tensor after instruction 3
      nkirun run prog.yaml --shadow                   # where did the precision go?
      nkirun run kernel.py::fn --shadow --shadow-top 3 --format json

    \b
    --shadow runs the program as written and a float32 copy of it side by side. Per
    instruction: "max abs/rel/ulp" is the error its output holds against the float32
    run (ULPs of its dtype; "at": where it peaks); "added" is the error it adds on its
    own when everything before it is exact (inputs from the float32 run, output rounded
    as written). The top of "added" is where precision is lost (docs/shadow.md).

    Exit status: 0 ok (and outputs match --expect), 1 invalid program, run-time error or
    mismatch, 2 usage error, 3 internal error.
    """
    if shadow_top is not None and not shadow:
        raise click.UsageError("--shadow-top needs --shadow")
    top = shadow_top or 5
    if is_kernel_path(program):
        if expect_dir or trace or dump_dir:
            raise click.UsageError("--expect, --trace and --dump apply to programs; for a "
                                   "kernel, `convert` it and run the program with them")
        from nkirun.source.kernel import commands
        sys.exit(commands.run(program, out_dir, _kernel_params(
            inputs, kernel_shapes, kernel_args, grid, lnc, target), max_hbm_bytes,
            **({"shadow": (top, fmt)} if shadow else {}), uninitialized=uninitialized))
    no_kernel_options(program, kernel_args, kernel_shapes, grid, lnc)
    inputs = _parse_inputs(inputs)
    _check_run_options(out_dir, dump_dir, expect_dir, rtol, atol, range_rtol, ulp, dump_after)
    out_dir = out_dir or default_out_dir(program)
    c = _require_valid(program, program_format, target, max_hbm_bytes, inputs)
    from nkirun.runner.outputs import write_outputs
    expected = _load_expected(c, inputs, expect_dir, dump_after)
    m, result, report = _execute(c, inputs, trace, dump_dir, dump_after, uninitialized, shadow)
    warnings = _print_warnings(c, m, report)
    written = write_outputs(result, out_dir)
    report = _report(program, c, result, written, warnings, fmt, report, top)
    bad = False
    if expected is not None:  # outputs are written even on a mismatch, to inspect them
        bad = _compare(c, result, expected, expect_dir, fmt, report,
                       (rtol, atol, ulp, range_rtol))
    if fmt == "json":
        _echo_json(report)
    sys.exit(EXIT_INVALID if bad else EXIT_OK)


def _report(program, c, result, written, warnings, fmt, shadow, top):
    """The run's summary: printed (text), or the JSON object to complete and print; with
    the --shadow report (runner/shadow.py) when there is one."""
    if fmt == "json":
        report = _run_json(program, c, result, written, warnings)
        if shadow is not None:
            report.update(shadow.as_json(top))
        return report
    _print_run_summary(program, c, result, written)
    if shadow is not None:
        from nkirun.show.render import use_color
        from nkirun.show.shadow_report import render
        render(shadow, sys.stdout, use_color(), top)
    return None


def _check_run_options(out_dir, dump_dir, expect_dir, rtol, atol, range_rtol, ulp,
                       dump_after) -> None:
    """The usage errors of `run`'s options, before anything is read."""
    for flag, value in (("--out", out_dir), ("--dump", dump_dir), ("--expect", expect_dir)):
        if value is not None and not value.strip():
            raise click.BadParameter("an empty folder name; give a folder", param_hint=flag)
    if ulp is not None and (rtol is not None or atol is not None):
        raise click.UsageError("give either --ulp or --rtol/--atol, not both")
    if expect_dir is None and (ulp is not None or rtol is not None or atol is not None):
        raise click.UsageError("--rtol/--atol/--ulp need --expect DIR")
    if range_rtol is not None and (ulp is not None or expect_dir is None):
        raise click.UsageError("--range-rtol needs --expect DIR and goes with --rtol/--atol, "
                               "not --ulp")
    if dump_after is not None and dump_dir is None:
        raise click.UsageError("--after needs --dump DIR")


def _require_valid(program, program_format, target, max_hbm_bytes, inputs):
    """The checked program; on errors the raised NkirunError carries the source lines."""
    from nkirun import api
    from nkirun.hw.targets import DEFAULT_MAX_HBM_BYTES
    try:
        return api.require_valid(program, program_format, target,
                                 max_hbm_bytes=max_hbm_bytes or DEFAULT_MAX_HBM_BYTES,
                                 inputs=inputs)
    except NkirunError as e:
        from nkirun.source import parse_file
        p, _ = parse_file(program, program_format)
        e.lines = p.source_lines if p else ()
        raise


def _load_expected(c, inputs, expect_dir, dump_after):
    """Checks the --input files and --after, then reads the --expect files (or None): all
    before a long run, to fail early."""
    from nkirun import api
    api._check_inputs(c.program, inputs)
    expected = None
    if expect_dir is not None:  # read the expected files first: fail before a long run
        from nkirun.runner.compare import load_expected
        expected = load_expected(c.program, expect_dir)
    if dump_after is not None and not 0 <= dump_after < len(c.bound):
        raise click.BadParameter(f"{dump_after}: the program's instructions are numbered "
                                 f"0..{len(c.bound) - 1}", param_hint="--after")
    return expected


def _execute(c, inputs, trace, dump_dir, dump_after, uninitialized, shadow=False):
    """Runs the program (with --trace/--dump watching, and a --shadow): the machine, the
    outputs and the shadow report (None without --shadow)."""
    from nkirun.runner.interpret import execute, outputs
    from nkirun.runner.watch import watch
    if shadow:
        from nkirun.runner.shadow import Shadow
        from nkirun.show.shadow_report import ShadowReport, trace_extra
        sh = Shadow(c.bound)
        with watch(c.program, c.bound, trace, dump_dir, dump_after,
                   trace_extra=trace_extra(sh)) as hook:
            m = execute(c.program, c.bound, inputs, hook, uninitialized, step=sh.step)
        result = outputs(c.program, m)
        finals = sh.final_errors({name: (name, a) for name, a in result.items()})
        return m, result, ShadowReport(sh.rows, result, sh.warnings, sh.backend, finals)
    with watch(c.program, c.bound, trace, dump_dir, dump_after) as hook:
        m = execute(c.program, c.bound, inputs, hook, uninitialized)
    return m, outputs(c.program, m), None


def _print_warnings(c, m, shadow=None) -> list:
    """Prints the check's and the run's warnings (each once) to stderr; returns them."""
    from nkirun.show.render import print_diagnostics
    from nkirun.runner.cores import harmless  # (less the W630s the run showed harmless)
    warnings = harmless([d for d in c.diagnostics if not d.is_error], m)
    seen = {(d.code, d.loc) for d in warnings}  # e.g. W052 found by check and at run time
    warnings += [w for w in m.warnings if (w.code, w.loc) not in seen]
    warnings += shadow.warnings if shadow is not None else []
    print_diagnostics(warnings, c.program.source_lines, sys.stderr)
    return warnings


def _compare(c, result, expected, expect_dir, fmt, report, tolerances) -> bool:
    """--expect: compares the outputs with the golden files, reports (into `report` for
    json) and returns whether any differs."""
    from nkirun.runner.compare import (Tolerance, compare_headline, compare_outputs,
                                       format_diffs)
    rtol, atol, ulp, range_rtol = tolerances
    tol = Tolerance(rtol or 0.0, atol or 0.0, ulp, range_rtol or 0.0)
    diffs = compare_outputs(c.program, result, expected, tol, c.bound)
    bad = [d for d in diffs if not d.ok]
    if fmt == "json":
        report["ok"] = not bad
        report["expect"] = {"dir": expect_dir, "ok": not bad,
                            "summary": compare_headline(diffs),
                            "tensors": [d.as_dict() for d in diffs]}
    else:
        from nkirun.runner.compare import verdict_line
        from nkirun.show.render import use_color
        click.echo(f"compared with {expect_dir}: {compare_headline(diffs)}")
        click.echo(format_diffs(diffs, use_color()))
        click.echo(verdict_line(diffs, expect_dir, use_color()))  # the last line: PASS/FAIL
    return bool(bad)



def _run_json(program, c, result, written, warnings) -> dict:
    """`run --format json`: one object on stdout (the --expect verdict is added to it)."""
    return {"program": program, "ok": True, "instructions": len(c.program.instructions),
            "outputs": [{"name": name, "shape": list(c.program.tensors[name].shape),
                         "dtype": c.program.tensors[name].dtype.name, "file": path}
                        for name, path in zip(result, written)],
            "diagnostics": [d.as_dict() for d in warnings]}


def _print_run_summary(program, c, result, written) -> None:
    from nkirun.show.render import plural, use_color
    head = (f"{program}: {plural(len(c.program.instructions), 'instruction')} executed, "
            f"{plural(len(written), 'output')} written")
    rows = [(name, "x".join(map(str, c.program.tensors[name].shape)),
             c.program.tensors[name].dtype.name, path)
            for (name, _), path in zip(result.items(), written)]
    if use_color():
        from rich import box
        from rich.table import Table

        from nkirun.show.render import make_console
        console = make_console()
        console.print(head, style="bold", soft_wrap=True)
        if rows:
            table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
            for col in ("output", "shape", "dtype", "file"):
                table.add_column(col, no_wrap=col != "file", overflow="fold")
            for row in rows:
                table.add_row(*row)
            console.print(table)
        return
    click.echo(head)
    widths = [max([len(r[k]) for r in rows], default=0) for k in range(3)]
    for name, shape, dtype, path in rows:
        click.echo(f"  {name:<{widths[0]}}  {shape:<{widths[1]}}  {dtype:<{widths[2]}}  -> {path}")
