"""`nkirun check`."""
from __future__ import annotations

import sys

import click

from nkirun.cli.common import (EXIT_INVALID, EXIT_OK, _debug_option, _echo_json, _guard,
                               _program_format_option, _target_option, input_option,
                               kernel_options, kernel_params)


@click.command(short_help="Validate programs statically: every problem, located.")
@click.argument("programs", nargs=-1, required=True, metavar="PATH...",
                type=click.Path(allow_dash=False))
@click.option("--format", "--output-format", "fmt", show_default=True, default="text",
              type=click.Choice(["text", "json", "github", "junit"]),
              help="text for people, json for tools, github for Actions annotations, junit "
                   "for CI test reports")
@_target_option
@_program_format_option
@input_option
@kernel_options
@_debug_option
@_guard
def check(programs, fmt, target, program_format, debug, inputs=(), kernel_args=(),
          kernel_shapes=(), grid=None, lnc=None):
    """Validate programs and kernels statically (reads no data file). Each PATH is a
    program, a Python kernel KERNEL.py[::FUNCTION] (traced with --shape/--input/--arg),
    a folder (its .yaml/.yml/.nkis programs, and the kernels listed in its pyproject.toml)
    or a pyproject.toml whose [[tool.nkirun.kernels]] list each kernel with its shapes
    (docs/kernels.md, "Checking many kernels in CI").

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
      nkirun check a.py::f b.py::g --shape x=float32[128,512]
      nkirun check . --format github            # programs + pyproject.toml's kernels

    Exit status: 0 no errors (warnings allowed), 1 errors in any program, 2 usage error.
    """
    from nkirun.show import check_report as cr
    opts = kernel_params(inputs, kernel_shapes, kernel_args, grid, lnc)
    items, empty = _items(programs)
    if empty:
        raise click.BadParameter(f"no .yaml/.yml/.nkis program (nor a [tool.nkirun] kernel "
                                 f"list in a pyproject.toml) in {', '.join(empty)}",
                                 param_hint="PATH")
    from nkirun.pipeline.front import KernelOptions, is_kernel
    mixed = any(is_kernel(p) for p, _, _ in items)  # (the options are for the kernels then)
    many = len(items) > 1
    results = [check_one(p, program_format, its_target or target,
                         its_opts or (opts if is_kernel(p) or not mixed else KernelOptions()),
                         many)
               for p, its_opts, its_target in items]
    if fmt == "json":
        _echo_json(cr.to_json(results))
    elif fmt == "github":
        click.echo(cr.github(results))
    elif fmt == "junit":
        click.echo(cr.junit(results))
    else:
        cr.print_text(results)
    sys.exit(EXIT_INVALID if any(r.errors for r in results) else EXIT_OK)


def check_one(spec: str, program_format, target, opts, many: bool = False):
    """One program or kernel's check_report.Checked: a kernel that does not trace is its
    diagnostics, like a program that does not parse. With `many` (several PATHs, a
    manifest) a kernel's usage problem (a missing parameter, a bad --shape) is its E595
    there too, so one entry does not hide the others; alone it is a usage error (exit 2)."""
    from nkirun.diagnostics import Loc, NkirunError, error
    from nkirun.pipeline import commands
    from nkirun.pipeline.front import Front, check_input_names, load
    from nkirun.pipeline.kernel_params import OptionError
    from nkirun.show.check_report import Checked
    path = spec.split("::")[0]
    try:
        front = load(spec, program_format, target, opts)
        if front.language != "python" and front.program is not None:
            check_input_names(front)  # (E075: --input names an undeclared tensor)
    except (NkirunError, OptionError) as e:
        usage = isinstance(e, (ValueError, TypeError))
        if usage and not many:
            raise
        diags = [error("E595", str(e), Loc(path))] if isinstance(e, OptionError) \
            else e.diagnostics
        return Checked(spec, Front(spec, "python", None, [], path=path).relocated(diags))
    c = commands.check(front)
    return Checked(spec, c.diagnostics, len(c.program.instructions) if c.program else 0,
                   front.lines)


MANIFEST = "pyproject.toml"  # pipeline/manifest.py's, imported only to read one


def _read_manifest(path: str) -> list:
    from nkirun.pipeline.manifest import read_manifest
    return read_manifest(path)


def _items(paths):
    """((spec, its KernelOptions or None, its target or None) to check, the paths with
    nothing to check): program files, folders (their programs, and the kernels their
    pyproject.toml lists), a pyproject.toml (its kernels), kernels."""
    import os

    from nkirun.show.check_report import expand
    items, empty = [], []
    for p in paths:
        manifest = p if os.path.basename(p) == MANIFEST and os.path.isfile(p) else \
            os.path.join(p, MANIFEST) if os.path.isdir(p) else None
        listed = _read_manifest(manifest) if manifest and os.path.isfile(manifest) else []
        found = [] if manifest == p else expand([p])[0]
        items += [(f, None, None) for f in found]
        items += [(e.spec, e.options, e.target) for e in listed]
        if not found and not listed:
            empty.append(p)
    seen = set()
    return [x for x in items if not (x[0] in seen or seen.add(x[0]))], empty
