"""The `nkirun` command line: a thin layer over nkirun.api.

Exit status: 0 success; 1 invalid program, bad data or run-time failure (nothing written);
2 usage error; 3 internal error (a bug in nkirun: please report it; --debug shows the
traceback).
"""
from __future__ import annotations

from importlib import import_module

import click

# The commands in workflow order (check, run, cost, ...): name -> (module, function).
COMMANDS = {"check": ("check", "check"), "run": ("run", "run"), "cost": ("cost", "cost"),
            "sweep": ("sweep", "sweep"), "convert": ("cost", "convert"),
            "explain": ("misc", "explain"), "ops": ("misc", "ops"), "schema": ("misc", "schema")}


class _InOrder(click.Group):
    """Lists the commands in workflow order, not alphabetically. A command's module is
    imported when the command is named (`nkirun check` builds no other command's options);
    `--help`, completion and an unknown name (click's "did you mean") load them all."""

    def list_commands(self, ctx):
        return list(dict.fromkeys([*COMMANDS, *self.commands]))

    def get_command(self, ctx, name):
        if name not in self.commands:
            for other in ([name] if name in COMMANDS else COMMANDS):
                if other not in self.commands:
                    module, function = COMMANDS[other]
                    self.add_command(getattr(import_module(f"nkirun.cli.{module}"), function))
        return self.commands.get(name)


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


def main():
    from nkirun.entry import run_main
    from nkirun.gc_policy import paused_gc, skip_exit_collection
    skip_exit_collection()  # this process is ours: see gc_policy
    with paused_gc():
        run_main(cli)


if __name__ == "__main__":  # pragma: no cover
    main()
