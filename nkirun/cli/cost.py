"""`nkirun cost` and `nkirun convert`."""
from __future__ import annotations

import os
import sys

import click

from nkirun.cli.common import (EXIT_OK, _debug_option, _echo_json, _fmt_option, _guard,
                               _program_format_option, _target_option, input_option,
                               kernel_options, kernel_params)
from nkirun.diagnostics import NkirunError
from nkirun.hw.targets import TARGETS


TARGET_NAMES = tuple(TARGETS)


@click.command(short_help="Estimate cycles and the multi-engine schedule of a program.")
@click.argument("program", type=click.Path(dir_okay=False))
@_fmt_option
@_target_option
@click.option("--trace-out", type=click.Path(dir_okay=False, allow_dash=True), default=None,
              metavar="FILE",
              help="also write a Chrome/Perfetto trace (open it in ui.perfetto.dev); "
                   "- writes it to standard output instead of the report")
@click.option("--html", "html_out", type=click.Path(dir_okay=False, allow_dash=True),
              default=None, metavar="FILE",
              help="also write a self-contained HTML profile: timeline, source lines, memory, "
                   "DMA (docs/profile.md); with --compare both schedules; - writes it to "
                   "standard output instead of the report")
@click.option("--view", "view", default="all", show_default=True, metavar="LIST",
              help="views to show, comma-separated: summary, table, timeline, critical, "
                   "advice, all")
@click.option("--detail", type=click.Choice(("full", "summary")), default="full",
              show_default=True,
              help="--format json: full lists every instruction (`instructions`); summary "
                   "leaves that list out (totals, engines and the chosen views only: for "
                   "sweeps and CI jobs)")
@click.option("--max-rows", type=int, default=200, show_default=True, metavar="N",
              help="instruction-table rows in text output (0: all)")
@click.option("--width", type=click.IntRange(60, 400), default=None, metavar="COLUMNS",
              help="text width [default: the terminal's, 100 when piped]")
@click.option("--compare", "compare_with", type=click.Path(dir_okay=False), default=None,
              metavar="PROGRAM",
              help="what-if: compare with this program or kernel (side by side)")
@click.option("--compare-target", type=click.Choice(TARGET_NAMES), default=None,
              help="what-if: compare with the same (or --compare) program on this target")
@click.option("--compare-shape", "compare_shapes", multiple=True, metavar="NAME=DTYPE[D0,...]",
              help="what-if: the compared kernel's --shape values instead, repeatable")
@click.option("--trip", "trip", multiple=True, metavar="NAME=N",
              help="assume runtime loop NAME runs N iterations each time it is entered "
                   "(stated in the report); without it a loop's count comes from running "
                   "the program on its data")
@_program_format_option
@input_option
@kernel_options
@_debug_option
@_guard
# long: a click command: its help text, the kernel dispatch and the report
def cost(program, fmt, target, trace_out, html_out, view, detail, max_rows, width,
         program_format, debug, compare_with=None, compare_target=None, compare_shapes=(),
         inputs=(), kernel_args=(), kernel_shapes=(), grid=None, lnc=None, trip=()):
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
      nkirun cost prog.yaml --format json --detail summary   # no per-instruction rows
      nkirun cost prog.yaml --trace-out trace.json    # open it in ui.perfetto.dev
      nkirun cost k.py::f --shape x=float32[256,512] --html k.html   # open it in a browser
      nkirun cost a.yaml --compare b.yaml             # what-if: side by side
      nkirun cost k.py::f --shape x=float32[128,512] --target trn1 --compare-target trn2
      nkirun cost moe.yaml --trip experts=8          # a runtime loop's trip count

    Exit status: 0 ok, 1 invalid program, 2 usage error.
    """
    from dataclasses import replace

    from nkirun.schedule import parse_views, render_report
    try:
        views = parse_views(view)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--view")
    if detail != "full" and fmt != "json":
        raise click.UsageError("--detail applies to --format json; the text report chooses "
                               "what it shows with --view (e.g. --view summary)")
    from nkirun.schedule.trips import parse_trips
    trips = parse_trips(trip)
    opts = kernel_params(inputs, kernel_shapes, kernel_args, grid, lnc)
    for name, value in (("--trace-out", trace_out), ("--html", html_out)):
        if value == "":
            raise click.BadParameter("an empty file name; give a file, or - for standard "
                                     "output", param_hint=name)
    if trace_out == "-" and html_out == "-":
        raise click.UsageError("--trace-out - and --html - would both write to standard "
                               "output; give one of them a file")
    if compare_with or compare_target or compare_shapes:
        if trace_out:
            raise click.UsageError("--trace-out writes one schedule; it cannot be combined "
                                   "with --compare/--compare-target/--compare-shape")
        if detail != "full":
            raise click.UsageError("--detail applies to one schedule's JSON; the "
                                   "comparison has no instruction rows to leave out")
        other = replace(opts, shapes=tuple(compare_shapes)) if compare_shapes else opts
        sys.exit(_compare(program, compare_with or program, target, compare_target or target,
                          opts, other, fmt, width, program_format, trips, html_out))
    sched = _schedule_of(program, target, opts, program_format, trips)
    to_stdout = _write_trace(sched, trace_out)
    to_stdout |= write_html_profile([sched], html_out)
    if to_stdout:  # standard output carries the trace or the page alone
        sys.exit(EXIT_OK)
    if fmt == "json":
        from nkirun.show.cost_json import write_cost_json
        write_cost_json(sched, views, sys.stdout, detail)
    else:
        render_report(sched, width=width, views=views, max_rows=max_rows)
    sys.exit(EXIT_OK)


def _write_trace(sched, trace_out) -> bool:
    """Write the Perfetto trace when asked; True when it went to standard output."""
    from nkirun.schedule import write_trace
    if not trace_out:
        return False
    try:
        where = write_trace(sched, trace_out)
    except OSError as e:
        from nkirun.diagnostics import error
        raise NkirunError(error("E080", f"--trace-out: cannot write {trace_out}: "
                                f"{e.strerror or e}"))
    click.echo(f"wrote the Perfetto trace to {where} (open it in ui.perfetto.dev)", err=True)
    return trace_out == "-"


def write_html_profile(schedules, html_out, **kw) -> bool:
    """Write the HTML profile (show/profile_page.py) when asked; True when it went to
    standard output."""
    if not html_out:
        return False
    from nkirun.show.profile_page import write_html
    try:
        where = write_html(schedules, html_out, **kw)
    except OSError as e:
        from nkirun.diagnostics import error
        raise NkirunError(error("E080", f"--html: cannot write {html_out}: "
                                f"{e.strerror or e}"))
    click.echo(f"wrote the HTML profile to {where} (open it in a browser)", err=True)
    return html_out == "-"


def _schedule_of(program, target, opts, program_format, trips):
    """The schedule of a program file or a KERNEL.py::FUNCTION on `target` (runtime loops
    counted by --trip, else by a run on its data and --input files)."""
    from nkirun.pipeline import commands
    from nkirun.pipeline.front import load
    c = commands.require_valid(load(program, program_format, target, opts))
    return commands.cost(c, trips)


def _compare(a, b, target_a, target_b, opts_a, opts_b, fmt, width, program_format, trips,
             html_out=None):
    from nkirun.schedule.compare import compare, render_compare
    sa = _schedule_of(a, target_a, opts_a, program_format, trips)
    sb = _schedule_of(b, target_b, opts_b, program_format, trips)
    shapes_a, shapes_b = opts_a.shapes, opts_b.shapes

    def label(path, s, shapes):
        name = os.path.basename(path)
        extra = f" {' '.join(shapes)}" if shapes and shapes_a != shapes_b else ""
        return f"{name} on {s.target.name}{extra}"
    titles = [label(a, sa, shapes_a), label(b, sb, shapes_b)]
    c = compare(sa, sb, *titles)
    if write_html_profile([sa, sb], html_out, titles=titles):
        return EXIT_OK
    if fmt == "json":
        _echo_json(c)
    else:
        render_compare(c, width=width)
    return EXIT_OK


@click.command(short_help="Convert a program between YAML and the text form.")
@click.argument("program", type=click.Path(dir_okay=False))
@click.option("--to", "to", type=click.Choice(["yaml", "text"]), required=True,
              help="the format to write")
@click.option("-o", "--output", type=click.Path(dir_okay=False, allow_dash=True), default=None,
              help="write to this file (atomically) instead of standard output")
@_program_format_option
@_target_option
@input_option
@kernel_options
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
    from nkirun.pipeline import commands
    from nkirun.pipeline.front import load
    if output is not None and not output.strip():
        raise click.BadParameter("an empty file name; give a file, or - for standard "
                                 "output", param_hint="-o")
    c = commands.require_valid(load(program, program_format, target, kernel_params(
        inputs, kernel_shapes, kernel_args, grid, lnc)))
    text = commands.convert(c, to, None if output in (None, "-")
                            else os.path.dirname(output) or ".")
    if output is None or output == "-":
        click.echo(text, nl=False)
        sys.exit(EXIT_OK)
    from nkirun.diagnostics import error
    from nkirun.safeio import write_file
    try:
        where = write_file(output, text.encode("utf-8"))
    except OSError as exc:
        raise NkirunError(error("E080", f"-o: cannot write {output}: {exc.strerror or exc}"))
    click.echo(f"wrote {where}", err=True)
    sys.exit(EXIT_OK)
