"""The `nkirun` command line: a thin layer over nkirun.api.

Exit status: 0 success; 1 invalid program, bad data or run-time failure (nothing written);
2 usage error; 3 internal error (a bug in nkirun: please report it; --debug shows the
traceback).
"""
from __future__ import annotations

import os
import sys

import click

from nkirun.diagnostics import NkirunError
from nkirun.source.kernel.cli import kernel_options, no_kernel_options
from nkirun.source.kernel.loader import is_kernel_path

EXIT_OK, EXIT_INVALID, EXIT_USAGE, EXIT_BUG = 0, 1, 2, 3

_fmt_option = click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
    help="text for people, json for tools")
_program_format_option = click.option(
    "--program-format", type=click.Choice(["auto", "yaml", "text"]), default="auto",
    show_default=True, help="how to read PROGRAM (auto: .nkis/.txt are text, else YAML)")
_target_option = click.option(
    "--target", type=click.Choice(["trn1", "trn2", "inf2", "trn3"]), default=None,
    help="override the program's target (memory sizes and clocks)")
_debug_option = click.option("--debug", is_flag=True, help="show Python tracebacks of "
                             "internal errors")


class _ToleranceType(click.ParamType):
    """A tolerance: a number >= 0; NaN is refused (it would make every comparison fail
    silently), inf is allowed (anything finite passes)."""

    name = "tolerance"

    def convert(self, value, param, ctx):
        import math
        try:
            v = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number", param, ctx)
        if math.isnan(v) or v < 0:
            self.fail(f"{value!r}: a tolerance is a number >= 0 (not NaN)", param, ctx)
        return v


_TOLERANCE = _ToleranceType()


def _echo_json(obj) -> None:
    import json  # lazily: json is only needed for --format json (start-up time, issue 7)
    click.echo(json.dumps(obj, indent=2))


def _fail(e: NkirunError, lines=()) -> None:
    from nkirun.show.render import print_diagnostics
    ctx = click.get_current_context(silent=True)
    program = ctx.params.get("program") if ctx is not None else None
    diags = e.diagnostics
    if isinstance(program, str):  # no `<program>` placeholder: the file the command read
        from nkirun.api import located
        diags = located(diags, program)
    print_diagnostics(diags, lines, sys.stderr)
    sys.exit(EXIT_INVALID)


def _guard(fn):
    """Run a command body: user errors -> exit 1, bugs -> one line and exit 3."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        debug = kwargs.get("debug", False)
        try:
            return fn(*args, **kwargs)
        except NkirunError as e:
            if kwargs.get("fmt") == "json" and fn.__name__ == "run":
                _echo_json({"program": kwargs.get("program"), "ok": False,
                            "diagnostics": [d.as_dict() for d in e.diagnostics]})
            _fail(e, getattr(e, "lines", ()))
        except (click.exceptions.Exit, click.ClickException, SystemExit, KeyboardInterrupt):
            raise
        except OSError as e:
            from nkirun.entry import quiet_stdout_error
            if not quiet_stdout_error(e):  # stdout gone (`| head`) or full: not a bug
                return _internal(e, debug)
            sys.exit(EXIT_INVALID)
        except Exception as e:  # noqa: BLE001
            return _internal(e, debug)
    return wrapper


def _internal(e: Exception, debug: bool):
    """A bug: one line and exit 3 (--debug: the traceback)."""
    if debug:
        raise e
    from nkirun.diagnostics import InternalError
    where = e.where if isinstance(e, InternalError) else "nkirun"
    inner = e.exc if isinstance(e, InternalError) else e
    click.echo(f"nkirun: internal error (a bug in nkirun, not in your program) at "
               f"{where}: {type(inner).__name__}: {inner}. Re-run with --debug for the "
               "traceback.", err=True)
    sys.exit(EXIT_BUG)


class _InOrder(click.Group):
    """Lists the commands in workflow order (check, run, cost, ...), not alphabetically."""

    def list_commands(self, ctx):
        return list(self.commands)


@click.group(cls=_InOrder, context_settings={"help_option_names": ["-h", "--help"],
                                             "max_content_width": 100})
@click.version_option(package_name="nkirun")
@click.option("--color", "--colour", "color", type=click.Choice(["auto", "always", "never"]),
              default="auto", show_default=True, expose_value=True, is_eager=True,
              help="colour the output; auto: on a terminal, unless NO_COLOR is set or "
                   "FORCE_COLOR asks for it")
def cli(color):
    """Check, run and cost AWS NKI instruction programs on the CPU.

    A program (YAML, or the line-oriented text form) declares named HBM/SBUF/PSUM tensors
    and a list of nki.isa instructions with their NKI keyword arguments:

    \b
      nkirun check programs/rowmax_in_window.yaml   # every rule of the pages, located
      nkirun run   programs/rowmax_in_window.yaml   # NumPy execution, writes .npy outputs
      nkirun cost  programs/rowmax_in_window.yaml   # cycles per instruction and engine
      nkirun explain range_select                   # what an instruction takes and does

    `nkirun COMMAND --help` shows each command's options and examples. Diagnostic codes:
    docs/diagnostics.md (`nkirun explain E040` explains one). Output is coloured on a
    terminal, plain when piped (--color, NO_COLOR, FORCE_COLOR change that).

    Exit status: 0 ok, 1 invalid program or failed run, 2 usage error, 3 internal error.
    """
    from nkirun.show.render import set_color_mode
    set_color_mode(color)


@cli.command(short_help="Validate programs statically: every problem, located.")
@click.argument("programs", nargs=-1, required=True, metavar="PATH...",
                type=click.Path(allow_dash=False))
@click.option("--format", "--output-format", "fmt", show_default=True, default="text",
              type=click.Choice(["text", "json", "github", "junit"]),
              help="text for people, json for tools, github for Actions annotations, junit "
                   "for CI test reports")
@_target_option
@_program_format_option
@kernel_options(inputs=True)
@_debug_option
@_guard
def check(programs, fmt, target, program_format, debug, inputs=(), kernel_args=(),
          kernel_shapes=(), grid=None, lnc=None):
    """Validate programs statically (reads no data file). Each PATH is a program, a folder
    (searched for .yaml/.yml/.nkis programs) or a Python kernel KERNEL.py::FUNCTION.

    Reports every problem at once, each as `file:line:col: error[CODE]: message`, the
    source line with a caret under the offending keyword, and `= help:` saying what is
    allowed (`nkirun explain CODE` explains a code). With several programs, one summary
    line and one exit status for all of them.

    \b
    Examples:
      nkirun check prog.yaml
      nkirun check programs/ more.nkis          # many programs, one summary
      nkirun check prog.yaml --target trn1      # the rules of another chip
      nkirun check prog.yaml --format json      # for editors and tools
      nkirun check programs/ --format github    # annotations in GitHub Actions
      nkirun check programs/ --format junit > report.xml

    Exit status: 0 no errors (warnings allowed), 1 errors in any program, 2 usage error.
    """
    if any(is_kernel_path(p) for p in programs):
        if len(programs) != 1:
            raise click.UsageError("a kernel is checked on its own: give one KERNEL.py::FUNCTION")
        from nkirun.source.kernel import commands
        sys.exit(commands.check(programs[0], fmt, _kernel_params(
            inputs, kernel_shapes, kernel_args, grid, lnc, target)))
    for program in programs:
        no_kernel_options(program, kernel_args, kernel_shapes or inputs, grid, lnc)
    from nkirun.show import check_report as cr
    paths, empty = cr.expand(programs)
    if empty:
        raise click.BadParameter(f"no .yaml/.yml/.nkis program in {', '.join(empty)}",
                                 param_hint="PATH")
    results = [cr.check_one(p, program_format, target) for p in paths]
    if fmt == "json":
        _echo_json(cr.to_json(results))
    elif fmt == "github":
        click.echo(cr.github(results))
    elif fmt == "junit":
        click.echo(cr.junit(results))
    else:
        cr.print_text(results)
    sys.exit(EXIT_INVALID if any(r.errors for r in results) else EXIT_OK)


def _kernel_params(inputs, shapes, args, grid, lnc, target) -> dict:
    return dict(inputs=inputs, shapes=shapes, args=args, grid=grid, lnc=lnc, target=target)


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


@cli.command(short_help="Check, then execute a program with NumPy; write its outputs.")
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
@click.option("--uninitialized", type=click.Choice(["error", "nan", "zero"]), default="error",
              show_default=True, help="reading an element nothing wrote: an error (E090), "
              "or it reads as NaN / 0 (the outputs too)")
@_program_format_option
@_target_option
@kernel_options(inputs=False)
@_debug_option
@_guard
def run(program, out_dir, inputs, max_hbm_bytes, expect_dir, rtol, atol, range_rtol, ulp, trace,
        dump_dir, dump_after, uninitialized, program_format, debug, fmt="text", target=None,
        kernel_args=(), kernel_shapes=(), grid=None, lnc=None):
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

    Exit status: 0 ok (and outputs match --expect), 1 invalid program, run-time error or
    mismatch, 2 usage error, 3 internal error.
    """
    if is_kernel_path(program):
        if expect_dir or trace or dump_dir:
            raise click.UsageError("--expect, --trace and --dump apply to programs; for a "
                                   "kernel, `convert` it and run the program with them")
        from nkirun.source.kernel import commands
        sys.exit(commands.run(program, out_dir, _kernel_params(
            inputs, kernel_shapes, kernel_args, grid, lnc, target), max_hbm_bytes))
    no_kernel_options(program, kernel_args, kernel_shapes, grid, lnc)
    from nkirun import api
    from nkirun.hw.targets import DEFAULT_MAX_HBM_BYTES
    inputs = _parse_inputs(inputs)
    for flag, value in (("--out", out_dir), ("--dump", dump_dir), ("--expect", expect_dir)):
        if value is not None and not value.strip():
            raise click.BadParameter("an empty folder name; give a folder", param_hint=flag)
    out_dir = out_dir or default_out_dir(program)
    if ulp is not None and (rtol is not None or atol is not None):
        raise click.UsageError("give either --ulp or --rtol/--atol, not both")
    if expect_dir is None and (ulp is not None or rtol is not None or atol is not None):
        raise click.UsageError("--rtol/--atol/--ulp need --expect DIR")
    if range_rtol is not None and (ulp is not None or expect_dir is None):
        raise click.UsageError("--range-rtol needs --expect DIR and goes with --rtol/--atol, "
                               "not --ulp")
    if dump_after is not None and dump_dir is None:
        raise click.UsageError("--after needs --dump DIR")
    try:
        c = api.require_valid(program, program_format, target,
                              max_hbm_bytes=max_hbm_bytes or DEFAULT_MAX_HBM_BYTES,
                              inputs=inputs)
    except NkirunError as e:
        from nkirun.source import parse_file
        p, _ = parse_file(program, program_format)
        e.lines = p.source_lines if p else ()
        raise
    from nkirun.runner.files import write_outputs
    from nkirun.runner.interpret import execute, outputs
    api._check_inputs(c.program, inputs)
    expected = None
    if expect_dir is not None:  # read the expected files first: fail before a long run
        from nkirun.runner.compare import load_expected
        expected = load_expected(c.program, expect_dir)
    if dump_after is not None and not 0 <= dump_after < len(c.bound):
        raise click.BadParameter(f"{dump_after}: the program's instructions are numbered "
                                 f"0..{len(c.bound) - 1}", param_hint="--after")
    from nkirun.runner.watch import watch
    with watch(c.program, c.bound, trace, dump_dir, dump_after) as hook:
        m = execute(c.program, c.bound, inputs, hook, uninitialized)
    result = outputs(c.program, m)
    from nkirun.show.render import print_diagnostics
    warnings = [d for d in c.diagnostics if not d.is_error]
    seen = {(d.code, d.loc) for d in warnings}  # e.g. W052 found by check and at run time
    warnings += [w for w in m.warnings if (w.code, w.loc) not in seen]
    print_diagnostics(warnings, c.program.source_lines, sys.stderr)
    written = write_outputs(result, out_dir)
    if fmt == "json":
        report = _run_json(program, c, result, written, warnings)
    else:
        _print_run_summary(program, c, result, written)
    if expected is not None:  # outputs are written even on a mismatch, to inspect them
        from nkirun.runner.compare import Tolerance, compare_outputs, format_diffs
        tol = Tolerance(rtol or 0.0, atol or 0.0, ulp, range_rtol or 0.0)
        diffs = compare_outputs(c.program, result, expected, tol, c.bound)
        bad = [d for d in diffs if not d.ok]
        from nkirun.runner.compare import compare_headline
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
    if fmt == "json":
        _echo_json(report)
    sys.exit(EXIT_INVALID if expected is not None and bad else EXIT_OK)


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


@cli.command(short_help="Estimate cycles and the multi-engine schedule of a program.")
@click.argument("program", type=click.Path(dir_okay=False))
@_fmt_option
@_target_option
@click.option("--trace-out", type=click.Path(dir_okay=False, allow_dash=True), default=None,
              metavar="FILE",
              help="also write a Chrome/Perfetto trace (open it in ui.perfetto.dev); "
                   "- writes it to standard output instead of the report")
@click.option("--view", "view", default="all", show_default=True, metavar="LIST",
              help="views to show, comma-separated: summary, table, timeline, critical, all")
@click.option("--max-rows", type=int, default=200, show_default=True, metavar="N",
              help="instruction-table rows in text output (0: all)")
@click.option("--width", type=click.IntRange(60, 400), default=None, metavar="COLUMNS",
              help="text width [default: the terminal's, 100 when piped]")
@_program_format_option
@kernel_options(inputs=True)
@_debug_option
@_guard
def cost(program, fmt, target, trace_out, view, max_rows, width, program_format, debug,
         inputs=(), kernel_args=(), kernel_shapes=(), grid=None, lnc=None):
    """Estimate cycles per instruction and the multi-engine schedule of PROGRAM.

    Each engine runs its instructions in program order; an instruction waits for its
    engine (or DMA queues) and for the data it reads, and a write waits for earlier readers
    and writers of the same elements. Views: summary (makespan, utilisation, bottleneck),
    table (per instruction: cycles, start/end, why it waited), timeline (a Gantt chart per
    engine), critical (the chain that decides the makespan). Reads no data file. The model
    and its assumptions: docs/cost.md.

    \b
    Examples:
      nkirun cost prog.yaml
      nkirun cost prog.yaml --view summary,critical
      nkirun cost prog.yaml --target trn1 --format json
      nkirun cost prog.yaml --trace-out trace.json    # open it in ui.perfetto.dev

    Exit status: 0 ok, 1 invalid program, 2 usage error.
    """
    from nkirun import api
    from nkirun.schedule import parse_views, render_report, to_json, write_trace
    try:
        views = parse_views(view)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--view")
    if is_kernel_path(program):
        from nkirun.source.kernel import commands
        sys.exit(commands.cost(program, fmt, _kernel_params(
            inputs, kernel_shapes, kernel_args, grid, lnc, target), trace_out, views,
            max_rows, width))
    no_kernel_options(program, kernel_args, kernel_shapes or inputs, grid, lnc)
    try:
        sched = api.cost(program, program_format, target)
    except NkirunError as e:
        from nkirun.source import parse_file
        p, _ = parse_file(program, program_format)
        e.lines = p.source_lines if p else ()
        raise
    if trace_out == "":
        raise click.BadParameter("an empty file name; give a file, or - for standard "
                                 "output", param_hint="--trace-out")
    if trace_out:
        try:
            where = write_trace(sched, trace_out)
        except OSError as e:
            from nkirun.diagnostics import error
            raise NkirunError(error("E080", f"--trace-out: cannot write {trace_out}: "
                                    f"{e.strerror or e}"))
        click.echo(f"wrote the Perfetto trace to {where} (open it in ui.perfetto.dev)",
                   err=True)
        if trace_out == "-":  # standard output carries the trace alone
            sys.exit(EXIT_OK)
    if fmt == "json":
        _echo_json(to_json(sched, views))
    else:
        render_report(sched, width=width, views=views, max_rows=max_rows)
    sys.exit(EXIT_OK)


@cli.command(short_help="Convert a program between YAML and the text form.")
@click.argument("program", type=click.Path(dir_okay=False))
@click.option("--to", "to", type=click.Choice(["yaml", "text"]), required=True,
              help="the format to write")
@click.option("-o", "--output", type=click.Path(dir_okay=False, allow_dash=True), default=None,
              help="write to this file (atomically) instead of standard output")
@_program_format_option
@_target_option
@kernel_options(inputs=True)
@_debug_option
@_guard
def convert(program, to, output, program_format, debug, target=None, inputs=(), kernel_args=(),
            kernel_shapes=(), grid=None, lnc=None):
    """Convert PROGRAM between YAML and the text form (docs/text-format.md).

    Lossless: reading the result gives the same tensors and instructions (comments and
    layout are not kept). With -o in another folder, relative data-file paths are
    rewritten to point at the same files. PROGRAM must pass `check` (warnings allowed).

    \b
    Examples:
      nkirun convert prog.yaml --to text -o prog.nkis
      nkirun convert trace.nkis --to yaml > trace.yaml

    Exit status: 0 ok, 1 invalid program or unwritable output, 2 usage error.
    """
    if is_kernel_path(program):
        from nkirun.source.kernel import commands
        sys.exit(commands.convert(program, to, output, _kernel_params(
            inputs, kernel_shapes, kernel_args, grid, lnc, target)))
    no_kernel_options(program, kernel_args, kernel_shapes or inputs, grid, lnc)
    from nkirun.api import check_program
    from nkirun.diagnostics import ProgramInvalid, error
    from nkirun.source.write import write_program
    c = check_program(program, program_format)
    if not c.ok:
        e = ProgramInvalid(c.errors or c.diagnostics)
        e.lines = c.program.source_lines if c.program else ()
        raise e
    text = write_program(c.program, to,
                         None if output is None else os.path.dirname(output) or ".")
    if output is None or output == "-":
        click.echo(text, nl=False)
        sys.exit(EXIT_OK)
    from nkirun.safeio import write_file
    try:
        where = write_file(output, text.encode("utf-8"))
    except OSError as exc:
        raise NkirunError(error("E080", f"-o: cannot write {output}: {exc.strerror or exc}"))
    click.echo(f"wrote {where}", err=True)
    sys.exit(EXIT_OK)


def _console():
    from nkirun.show.render import make_console
    return make_console()


@cli.command(short_help="Explain an instruction (signature, rules, cost) or a diagnostic code.")
@click.argument("op")
@_fmt_option
def explain(op, fmt):
    """Show instruction OP (signature, engine, parameters, rules, semantics, cost formula
    and an example) or explain a diagnostic code (E040, W051, ...).

    An instruction's entry comes from the module that implements it (nkirun/isa/<op>.py),
    the same definition check, run and cost use; `nisa.` prefixes are accepted. A code's
    entry comes from the table installed with nkirun (docs/diagnostics.md is made from it).

    \b
    Examples:
      nkirun explain range_select
      nkirun explain nisa.activation --format json
      nkirun explain E040

    Exit status: 0 ok, 1 unknown instruction or code (with a did-you-mean).
    """
    from nkirun import codes
    from nkirun.show.explain import describe, lookup, render_rich, render_text, suggestion
    from nkirun.show.render import use_color
    if codes.CODE_RE.fullmatch(op.strip()):
        from nkirun.show.explain import explain_code
        sys.exit(explain_code(op, fmt))
    spec = lookup(op)
    if spec is None:
        hint = suggestion(op)
        click.echo(f"nkirun: unknown instruction `{op}`" + (f"; {hint}" if hint else "")
                   + " (`nkirun ops` lists them)", err=True)
        sys.exit(EXIT_INVALID)
    d = describe(spec)
    if fmt == "json":
        _echo_json(d)
    elif use_color():
        render_rich(d, _console())
    else:
        click.echo(render_text(d))


@cli.command(short_help="List the instructions nkirun knows.")
@_fmt_option
def ops(fmt):
    """List the instructions nkirun knows, with engine and summary (`nkirun explain OP`
    for one of them). Exit status 0."""
    from nkirun.show.explain import ops_list, render_ops_rich, render_ops_text
    from nkirun.show.render import use_color
    rows = ops_list()
    if fmt == "json":
        _echo_json({"instructions": rows})
    elif use_color():
        render_ops_rich(rows, _console())
    else:
        click.echo(render_ops_text(rows))


@cli.command(short_help="Print or write the JSON Schema of the program format.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, allow_dash=True), default=None,
              metavar="FILE", help="write it to FILE (atomically) instead of standard output")
@click.option("--path", "show_path", is_flag=True,
              help="print where the installed copy is (for editor settings)")
def schema(output, show_path):
    """Print the JSON Schema of the program format (generated from the instruction table;
    the same as schemas/program.schema.json and the copy installed with nkirun). For
    completion, hover docs and snippets in an editor with yaml-language-server (VS Code's
    YAML extension, Neovim, Helix, ...), start a program with:

    \b
      # yaml-language-server: $schema=PATH/program.schema.json

    \b
    Examples:
      nkirun schema -o program.schema.json
      nkirun schema --path        # the installed copy, e.g. for yaml.schemas settings

    Exit status 0; 1 if FILE cannot be written.
    """
    from nkirun.source.schema import PACKAGE_SCHEMA_PATH, dumps
    if show_path:
        click.echo(PACKAGE_SCHEMA_PATH)
        return
    text = dumps()
    if output is None or output == "-":
        click.echo(text, nl=False)
        return
    from nkirun.safeio import write_file
    try:
        where = write_file(output, text.encode("utf-8"))
    except OSError as exc:
        from nkirun.diagnostics import error
        click.echo(error("E080", f"-o: cannot write {output}: {exc.strerror or exc}").one_line(),
                   err=True)
        sys.exit(EXIT_INVALID)
    click.echo(f"wrote {where}", err=True)


def main():
    from nkirun.entry import run_main
    from nkirun.gc_policy import paused_gc
    with paused_gc():  # this process is ours: see gc_policy
        run_main(cli)


if __name__ == "__main__":  # pragma: no cover
    main()
