"""`nkirun explain`, `ops` and `schema`."""
from __future__ import annotations

import sys

import click

from nkirun.cli.common import EXIT_INVALID, _console, _echo_json, _fmt_option


@click.command(short_help="Explain an instruction (signature, rules, cost) or a diagnostic code.")
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
      nkirun explain nl.exp                    # what an nki.language call records

    Exit status: 0 ok, 1 unknown instruction or code (with a did-you-mean).
    """
    from nkirun import codes
    from nkirun.show.explain import describe, lookup, render_rich, render_text, suggestion
    from nkirun.show.render import use_color
    if codes.CODE_RE.fullmatch(op.strip()):
        from nkirun.show.explain import explain_code
        sys.exit(explain_code(op, fmt))
    if op.strip().startswith(("nl.", "nki.language.")):
        sys.exit(_explain_nl(op.strip(), fmt))
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


@click.command(short_help="List the instructions nkirun knows.")
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


@click.command(short_help="Print or write the JSON Schema of the program format.")
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


def _explain_nl(name: str, fmt: str) -> int:
    """`explain nl.NAME`: the call, the instructions it records (YAML), what to explain
    next."""
    from nkirun.show.python_example import nl_call, nl_function
    short = name.removeprefix("nki.language.").removeprefix("nl.")
    if nl_call(short) is None:
        from nkirun.diagnostics import did_you_mean
        from nkirun.source.kernel.convenience import BINARY, UNARY
        from nkirun.show.python_example import _CALLS
        hint = did_you_mean(short, [*UNARY, *BINARY, *_CALLS])
        click.echo(f"nkirun: nkirun does not explain `{name}`" + (f"; {hint}" if hint else
                   "") + " (docs/kernels.md lists the nki.language functions)", err=True)
        return EXIT_INVALID
    d = nl_function(short)
    if fmt == "json":
        _echo_json(d)
        return 0
    lines = [f"{d['name']}: records {', '.join(d['records'])}", "", "in a Python kernel:",
             f"  {d['call']}", "", "records (YAML):"]
    lines += [f"  {x}" for x in d["yaml"].splitlines()]
    lines += ["", "tensors:"] + [f"  {n}: {v}" for n, v in d["tensors"].items()]
    lines += ["", f"({d['note']}; `nkirun explain {d['records'][0]}` for the instruction)"]
    click.echo("\n".join(lines))
    return 0
