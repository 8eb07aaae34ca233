"""`nkirun check`."""
from __future__ import annotations

import sys

import click

from nkirun.cli.common import (EXIT_INVALID, EXIT_OK, _debug_option, _echo_json, _guard,
                               _kernel_params, _program_format_option, _target_option)
from nkirun.source.kernel.cli import kernel_options, no_kernel_options
from nkirun.source.kernel.loader import is_kernel_path


@click.command(short_help="Validate programs statically: every problem, located.")
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
