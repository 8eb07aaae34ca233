"""`nkirun sweep`: a thin layer over nkirun.sweep (docs/sweep.md)."""
from __future__ import annotations

import click

from nkirun.cli.common import _TOLERANCE, _target_option

EXIT_OK, EXIT_NONE_OK, EXIT_USAGE = 0, 1, 2


@click.command(context_settings={"max_content_width": 100})
@click.argument("kernel")
@click.option("--shape", "shapes", multiple=True, metavar="NAME=DTYPE[D0,...]",
              help="a tensor parameter by shape only, repeatable")
@click.option("--input", "inputs", multiple=True, metavar="NAME=PATH",
              help="a tensor parameter from a .npy file (its data is used by --verify), "
                   "repeatable")
@click.option("--arg", "args", multiple=True, metavar="NAME=VALUE",
              help="a fixed keyword (a Python literal), repeatable")
@click.option("--vary", "vary", multiple=True, required=True,
              metavar="NAME=V1,V2,...|NAME=A:B[:STEP]",
              help="a keyword to vary: Python literals, or an inclusive integer range; "
                   "repeatable, the values are crossed")
@click.option("--where", default=None, metavar="EXPR",
              help="keep the combinations for which EXPR is true (names, literals, "
                   "arithmetic, comparisons, and/or/not)")
@click.option("--reference", default=None, metavar="REF.py::FN",
              help="a NumPy function taking the kernel's arrays and keywords, returning "
                   "the expected outputs")
@click.option("--verify", default="top:5", show_default=True, metavar="top:K|all|none",
              help="which variants run and are compared with --reference")
@click.option("--rtol", type=_TOLERANCE, default=0.0, show_default=True)
@click.option("--atol", type=_TOLERANCE, default=0.0, show_default=True)
@_target_option
@click.option("--lnc", type=click.IntRange(1, 2), default=1, show_default=True,
              help="logical NeuronCore size (2: two cores, trn2/trn3)")
@click.option("--grid", default=None, metavar="G[,G...]", help="the SPMD launch grid")
@click.option("--jobs", type=click.IntRange(1, 4096), default=None,
              help="workers (default: the usable cores)")
@click.option("--backend", default="local", show_default=True,
              metavar="local|ray[:ADDRESS]|dask[:ADDRESS]",
              help="where the variants run (ray/dask: pip install 'nkirun[ray]' / "
                   "'nkirun[dask]')")
@click.option("--timeout", type=click.FloatRange(0.1, None), default=300.0,
              show_default=True, help="seconds per variant before it is stopped")
@click.option("--max-instructions", type=click.IntRange(1, None), default=None,
              help="the instruction budget of one variant's trace")
@click.option("--memory-limit", type=click.FloatRange(0.5, None), default=None,
              metavar="GB", help="address space per worker (default: the machine's "
                                 "memory shared by the workers, at least 2 GB)")
@click.option("--out", "out_dir", required=True, metavar="DIR",
              help="where results.jsonl, summary.csv and sweep.json go")
@click.option("--resume", is_flag=True, help="continue the sweep in DIR")
@click.option("--measured", default=None, metavar="FILE.csv",
              help="hardware timings (id,ns or the varied names plus ns): pairwise "
                   "accuracy, Kendall tau, regret")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "csv"]),
              default="table", show_default=True,
              help="table for people; json or csv print the summary to stdout")
def sweep(kernel, shapes, inputs, args, vary, where, reference, verify, rtol, atol, target,
          lnc, grid, jobs, backend, timeout, max_instructions, memory_limit, out_dir,
          resume, measured, fmt):
    """Screen kernel variants: trace, check, cost each, verify the best.

    KERNEL is FILE.py::FN or a quoted glob of candidate files 'cands/*.py::FN'. Each
    --vary crosses its values with the others (and with every candidate file); --where
    keeps the combinations for which it is true.

    Examples:

    \b
      nkirun sweep programs/kernels/matmul_blocked.py::matmul_blocked \\
          --shape 'lhsT=bfloat16[1024,512]' --shape 'rhs=bfloat16[1024,2048]' \\
          --vary TILE_N=128,256,512 --vary BLOCK_N=1:4 --where 'TILE_N * BLOCK_N <= 1024' \\
          --reference programs/kernels/matmul_blocked.py::reference --rtol 1e-2 \\
          --out out/sweep
      nkirun sweep 'cands/*.py::kernel' --shape x=float32[128,512] --vary T=1 \\
          --out out/cands --resume

    DIR/results.jsonl gets one line per variant as it finishes (status ok, invalid,
    error, mismatch, timeout, crashed or duplicate); DIR/summary.csv ranks them
    (docs/sweep.md).

    Exit status: 0 a variant is ok, 1 none is, 2 usage error (also: DIR holds another
    sweep), 3 internal error.
    """
    import os
    from nkirun.sweep.driver import run_plan
    from nkirun.sweep.report import Progress
    from nkirun.sweep.results import ResumeError, write_summary
    from nkirun.sweep.trust import MeasuredError, read_measured
    plan, pool = _plan(kernel, shapes, inputs, args, vary, where, reference, verify, rtol,
                       atol, target, lnc, grid, jobs, backend, timeout, max_instructions,
                       memory_limit)
    progress = Progress()
    try:
        rows = run_plan(plan, pool, out_dir, resume, on_row=progress.row,
                        on_start=progress.start)
    except ResumeError as e:
        raise click.UsageError(str(e)) from None
    finally:
        progress.stop()
    rows = [rows[i] for i in sorted(rows)]
    path = write_summary(out_dir, rows)
    try:
        timings = read_measured(measured, rows) if measured else None
    except MeasuredError as e:
        raise click.UsageError(str(e)) from None
    _show(rows, timings, fmt, path, os.path.join(out_dir, "results.jsonl"))
    return EXIT_OK if any(r["status"] == "ok" for r in rows) else EXIT_NONE_OK


def _plan(kernel, shapes, inputs, args, vary, where, reference, verify, rtol, atol, target,
          lnc, grid, jobs, backend, timeout, max_instructions, memory_limit):
    """(the sweep's Plan, its backend); usage errors as click's."""
    from nkirun.pipeline.kernel_params import _grid, _parse_args, _parse_inputs, \
        _parse_shapes
    from nkirun.sweep import SpaceError, build_plan, make_backend, parse_varies
    if not kernel.partition("::")[0].endswith(".py"):
        raise click.BadParameter(f"{kernel!r}: expected FILE.py::FN or a quoted glob "
                                 "'cands/*.py::FN'", param_hint="KERNEL")
    try:
        space = parse_varies(vary)
        values = {**_parse_inputs(inputs), **_parse_shapes(shapes), **_parse_args(args)}
        clash = sorted(set(values) & set(space))
        if clash:
            raise SpaceError(f"{', '.join(clash)}: given both fixed and --vary")
        plan = build_plan(kernel, values, space, where, target=target, lnc=lnc,
                          grid=_grid(grid, lnc), reference=reference, verify=verify,
                          rtol=rtol, atol=atol, max_instructions=max_instructions,
                          fixed_text=sorted(inputs + shapes + args))
        pool = make_backend(backend, jobs, timeout,
                            None if memory_limit is None else int(memory_limit * (1 << 30)))
    except (SpaceError, ValueError) as e:
        raise click.UsageError(str(e)) from None
    return plan, pool


def _show(rows, timings, fmt, summary_path, results_path) -> None:
    import sys
    from nkirun.sweep.report import render, summary_json
    from nkirun.sweep.results import summary_csv
    if fmt == "json":
        import json
        click.echo(json.dumps(summary_json(rows, timings), indent=2, default=repr))
    elif fmt == "csv":
        click.echo(summary_csv(rows), nl=False)
    else:
        render(rows, timings)
        click.echo(f"wrote {results_path} and {summary_path}", err=sys.stdout.isatty())
