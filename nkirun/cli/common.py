"""What the `nkirun` commands share: exit statuses, common options, the error guard."""
from __future__ import annotations

import sys

import click

from nkirun.diagnostics import NkirunError

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
    # lazily: json is only needed for --format json (start-up time, issue 7)
    from nkirun.show.json_out import write_json
    write_json(obj, sys.stdout)


def _fail(e: NkirunError, lines=()) -> None:
    from nkirun.show.render import print_diagnostics
    ctx = click.get_current_context(silent=True)
    program = ctx.params.get("program") if ctx is not None else None
    diags = e.diagnostics
    if isinstance(program, str):  # no `<program>` placeholder: the file the command read
        from nkirun.api import located
        diags = located(diags, program.split("::", 1)[0])
    print_diagnostics(diags, lines, sys.stderr)
    sys.exit(EXIT_INVALID)


def _guard(fn):
    """Run a command body: user errors -> exit 1, usage errors -> exit 2, bugs -> one
    line and exit 3."""
    import functools

    from nkirun.pipeline.kernel_params import OptionError

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        debug = kwargs.get("debug", False)
        try:
            return fn(*args, **kwargs)
        except OptionError as e:
            if e.option is None:
                raise click.UsageError(str(e)) from None
            raise click.BadParameter(str(e), param_hint=e.option) from None
        except NkirunError as e:
            if _kernel_usage(e):  # a missing or unknown kernel parameter
                raise click.UsageError(str(e)) from None
            if kwargs.get("fmt") == "json" and fn.__name__ in ("run", "cost"):
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


def _kernel_usage(e: Exception) -> bool:
    """Whether `e` is a KernelUsageError (source/kernel/loader.py, not imported until a
    kernel is loaded: a program's check never raises one)."""
    loader = sys.modules.get("nkirun.source.kernel.loader")
    return loader is not None and isinstance(e, loader.KernelUsageError)


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


def kernel_options(f):
    """--input, --arg, --shape, --grid, --lnc: a kernel's parameters (--input also a
    program's initial contents where the command has no --input of its own); and
    --max-instructions, the budget the command runs within (nkirun/limits.py), for
    programs too."""
    f = _within_budget(f)
    opts = [
        click.option("--arg", "kernel_args", multiple=True, metavar="NAME=VALUE",
                     help="kernel parameter NAME (a Python literal), repeatable"),
        click.option("--shape", "kernel_shapes", multiple=True, metavar="NAME=DTYPE[D0,...]",
                     help="kernel tensor parameter NAME by shape only, repeatable"),
        click.option("--grid", "grid", default=None, metavar="G[,G...]",
                     help="launch the kernel on an SPMD grid (nl.program_id)"),
        click.option("--lnc", "lnc", type=click.IntRange(1, 2), default=None,
                     help="logical NeuronCore size: 2 runs the kernel on two cores "
                          "(trn2/trn3)"),
        click.option("--max-instructions", "max_instructions", default=None,
                     type=click.IntRange(min=1), metavar="N",
                     help="the budget: instructions a kernel's trace may record and a run "
                          "or cost may execute, loop bodies once per trip [default: "
                          "10,000,000]"),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def _within_budget(f):
    """The command `f` run within its --max-instructions budget, and the --max-hbm-bytes
    limit where it has one (a kernel's parameters are checked against it as it traces)."""
    import functools

    @functools.wraps(f)
    def command(*args, max_instructions=None, **kwargs):
        from nkirun.limits import budget
        with budget(max_instructions, kwargs.get("max_hbm_bytes")):
            return f(*args, **kwargs)
    return command


input_option = click.option(
    "--input", "inputs", multiple=True, metavar="NAME=PATH",
    help="a program's tensor NAME, or a kernel's tensor parameter NAME, from a .npy file "
         "(a kernel's shape and dtype come from its header), repeatable")


def kernel_params(inputs=(), shapes=(), args=(), grid=None, lnc=None):
    from nkirun.pipeline.front import KernelOptions
    return KernelOptions(tuple(inputs), tuple(shapes), tuple(args), grid, lnc)


def _console():
    from nkirun.show.render import make_console
    return make_console()
