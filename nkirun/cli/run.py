"""`nkirun run`."""
from __future__ import annotations

import os
import sys

import click

from nkirun.cli.common import (_TOLERANCE, EXIT_INVALID, EXIT_OK, _debug_option, _echo_json,
                               _guard, _program_format_option, _target_option, kernel_options,
                               kernel_params)


def default_out_dir(program: str) -> str:
    """out/<program's stem>; a kernel's: out/<file stem>_<function> (or out/<file stem>)."""
    path, sep, func = program.partition("::")
    stem = os.path.basename(path)
    for suffix in (".yaml", ".yml", ".nkis", ".txt", ".py"):
        stem = stem.removesuffix(suffix)
    if stem in ("", ".", ".."):  # `..yaml` must not write into out/ itself or into ./
        stem = "program"
    return os.path.join("out", f"{stem}_{func}" if sep and func else stem)


@click.command(short_help="Check, then execute a program with NumPy; write its outputs.")
@click.argument("program", type=click.Path(dir_okay=False))
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None, metavar="DIR",
              help="folder for the output .npy files [default: ./out/<program name>]")
@click.option("--input", "inputs", multiple=True, metavar="NAME=PATH",
              help="replace tensor NAME's initial contents with a .npy file; for a kernel, "
                   "tensor parameter NAME (repeatable)")
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
@click.option("--html", "html_out", type=click.Path(dir_okay=False), default=None,
              metavar="FILE",
              help="also write a self-contained HTML profile of the predicted schedule; with "
                   "--shadow it adds the precision view: each instruction's error and a heat "
                   "map of each output's error (docs/profile.md)")
@click.option("--uninitialized", type=click.Choice(["error", "strict", "nan", "zero"]), default="error",
              show_default=True, help="reading an element nothing wrote: error = its garbage "
              "is carried, E090 when it reaches an output, an index or a register; strict = "
              "E090 at the read; nan / zero = it reads as NaN / 0 (the outputs too)")
@click.option("--ranks", type=click.IntRange(1, 64), default=None, metavar="N",
              help="run N ranks, one program each, meeting at their nki.collectives; "
                   "`{rank}` in an --input path or an --arg value is each rank's number; "
                   "outputs go to DIR/rank<r>/ (docs/kernels.md, \"Collectives\")")
@_program_format_option
@_target_option
@kernel_options
@_debug_option
@_guard
# long: a click command: its help text and the steps of a run, each a call
def run(program, out_dir, inputs, max_hbm_bytes, expect_dir, rtol, atol, range_rtol, ulp, trace,
        dump_dir, dump_after, uninitialized, program_format, debug, fmt="text", target=None,
        kernel_args=(), kernel_shapes=(), grid=None, lnc=None, shadow=False, shadow_top=None,
        html_out=None, ranks=None):
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
      nkirun run prog.yaml --shadow --html prec.html  # the same, as pictures
      nkirun run k.py::gather --ranks 4 --input x=x{rank}.npy --arg group=[[0,1,2,3]]

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
    if html_out is not None and not html_out.strip():
        raise click.BadParameter("an empty file name", param_hint="--html")
    from nkirun.hw.targets import DEFAULT_MAX_HBM_BYTES
    from nkirun.pipeline import commands
    from nkirun.pipeline.front import check_input_names, load
    from nkirun.runner.outputs import write_outputs
    from nkirun.show.render import print_diagnostics
    _check_run_options(out_dir, dump_dir, expect_dir, rtol, atol, range_rtol, ulp, dump_after)
    if ranks is not None:
        if shadow or trace or dump_dir or expect_dir or html_out:
            raise click.UsageError("--ranks runs without --shadow, --trace, --dump, --expect "
                                   "and --html (compare each DIR/rank<r>/ yourself)")
        sys.exit(_run_ranks(program, ranks, out_dir, inputs, kernel_args, kernel_shapes,
                            grid, lnc, program_format, target, uninitialized,
                            max_hbm_bytes or DEFAULT_MAX_HBM_BYTES, fmt))
    front = load(program, program_format, target,
                 kernel_params(inputs, kernel_shapes, kernel_args, grid, lnc))
    c = commands.require_valid(front, max_hbm_bytes or DEFAULT_MAX_HBM_BYTES)
    if front.language != "python":  # (a kernel's --input names its parameters: traced)
        check_input_names(front)
    expected = _load_expected(c, expect_dir, dump_after)
    ran = commands.run(c, uninitialized, shadow, trace, dump_dir, dump_after)
    print_diagnostics(ran.warnings, front.lines, sys.stderr)
    written = write_outputs(ran.outputs, out_dir or default_out_dir(program))
    report = _report(program, c, ran.outputs, written, ran.warnings, fmt, ran.shadow,
                     shadow_top or 5)
    if html_out:
        _write_profile(c, ran, html_out)
    bad = False
    if expected is not None:  # outputs are written even on a mismatch, to inspect them
        bad = _compare(c, ran.outputs, expected, expect_dir, fmt, report,
                       (rtol, atol, ulp, range_rtol))
    if fmt == "json":
        _echo_json(report)
    sys.exit(EXIT_INVALID if bad else EXIT_OK)


def _run_ranks(program, ranks, out_dir, inputs, args, shapes, grid, lnc, program_format,
               target, uninitialized, max_hbm_bytes, fmt) -> int:
    """`run --ranks N`: each rank's program loaded with `{rank}` put in its --input paths
    and --arg values, checked, then all run meeting at their collectives; each rank's
    outputs written to DIR/rank<r>/ once every rank succeeded."""
    from nkirun.pipeline import commands
    from nkirun.pipeline.front import load
    from nkirun.pipeline.ranks import run_checked
    from nkirun.runner.outputs import write_outputs
    from nkirun.show.render import print_diagnostics

    def mine(words, r):
        return [w.replace("{rank}", str(r)) for w in words]
    checked = [commands.require_valid(load(program, program_format, target, kernel_params(
        mine(inputs, r), shapes, mine(args, r), grid, lnc)), max_hbm_bytes)
        for r in range(ranks)]
    ran = run_checked(checked, uninitialized)
    print_diagnostics(ran[0].warnings, checked[0].front.lines, sys.stderr)
    base = out_dir or default_out_dir(program)
    reports = []
    for r, (c, one) in enumerate(zip(checked, ran)):
        written = write_outputs(one.outputs, os.path.join(base, f"rank{r}"))
        if fmt == "json":
            reports.append({"rank": r, **_run_json(program, c, one.outputs, written,
                                                   one.warnings)})
        else:
            _print_run_summary(f"{program} (rank {r})", c, one.outputs, written)
    if fmt == "json":
        _echo_json({"program": program, "ok": True, "ranks": reports})
    return EXIT_OK


def _write_profile(c, ran, html_out) -> None:
    """The HTML profile of the run's program: its schedule, and with --shadow each
    instruction's error and each output's error heat map."""
    from nkirun.cli.cost import write_html_profile
    from nkirun.pipeline import commands
    from nkirun.show.profile_data import error_heatmap
    rows = maps = None
    if ran.shadow is not None:
        from nkirun.show.shadow_report import row_json
        rows = [row_json(r) for r in ran.shadow.rows]
        maps = [m for name, v in ran.shadow.shadow_outputs.items()
                if (m := error_heatmap(name, ran.outputs[name], v)) is not None]
    write_html_profile([commands.cost(c)], html_out, shadow=rows, heatmaps=maps)


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


def _load_expected(c, expect_dir, dump_after):
    """Checks --after, then reads the --expect files (or None): before a long run, to fail
    early."""
    expected = None
    if expect_dir is not None:  # read the expected files first: fail before a long run
        from nkirun.runner.compare import load_expected
        expected = load_expected({o.name: o.decl for o in c.front.outputs}, expect_dir)
    if dump_after is not None and not 0 <= dump_after < len(c.bound):
        raise click.BadParameter(f"{dump_after}: the program's instructions are numbered "
                                 f"0..{len(c.bound) - 1}", param_hint="--after")
    return expected


def _compare(c, result, expected, expect_dir, fmt, report, tolerances) -> bool:
    """--expect: compares the outputs with the golden files, reports (into `report` for
    json) and returns whether any differs."""
    from nkirun.runner.compare import (Tolerance, compare_headline, compare_outputs,
                                       format_diffs)
    rtol, atol, ulp, range_rtol = tolerances
    tol = Tolerance(rtol or 0.0, atol or 0.0, ulp, range_rtol or 0.0)
    outs = c.front.outputs
    diffs = compare_outputs({o.name: o.decl for o in outs}, result, expected, tol, c.bound,
                            {o.name: o.tensor for o in outs})
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
            "outputs": [{"name": o.name, **({"tensor": o.label} if o.label else {}),
                         "shape": list(o.decl.shape), "dtype": o.decl.dtype.name,
                         "file": path} for o, path in zip(c.front.outputs, written)],
            "diagnostics": [d.as_dict() for d in warnings]}


def _print_run_summary(program, c, result, written) -> None:
    from nkirun.show.render import plural, use_color
    head = (f"{program}: {plural(len(c.program.instructions), 'instruction')} executed, "
            f"{plural(len(written), 'output')} written")
    rows = [(o.name, "x".join(map(str, o.decl.shape)), o.decl.dtype.name, path,
             f"name={o.label}" if o.label else "") for o, path in zip(c.front.outputs, written)]
    if use_color():
        from rich import box
        from rich.table import Table

        from nkirun.show.render import make_console
        console = make_console()
        console.print(head, style="bold", soft_wrap=True)
        if rows:
            table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
            cols = ("output", "shape", "dtype", "file", "tensor")
            for col in cols[:5 if any(r[4] for r in rows) else 4]:
                table.add_column(col, no_wrap=col != "file", overflow="fold")
            for row in rows:
                table.add_row(*row[:len(table.columns)])
            console.print(table)
        return
    click.echo(head)
    widths = [max([len(r[k]) for r in rows], default=0) for k in range(3)]
    for name, shape, dtype, path, label in rows:
        click.echo(f"  {name:<{widths[0]}}  {shape:<{widths[1]}}  {dtype:<{widths[2]}}  "
                   f"{label + '  ' if label else ''}-> {path}")
