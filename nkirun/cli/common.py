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


def _kernel_params(inputs, shapes, args, grid, lnc, target) -> dict:
    return dict(inputs=inputs, shapes=shapes, args=args, grid=grid, lnc=lnc, target=target)


def _console():
    from nkirun.show.render import make_console
    return make_console()
