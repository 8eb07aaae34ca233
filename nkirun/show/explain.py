"""`nkirun explain OP` and `nkirun ops`: an instruction's documentation, read from the
same `SPEC` the validator, interpreter and cost model use, so it cannot disagree with them.
"""
from __future__ import annotations

import math

from nkirun.hw import alu as ops
from nkirun.hw.cost_tables import tag_meanings
from nkirun.isa import REGISTRY
from nkirun.isa import spec as S
from nkirun.isa.nki_api import signature_text



from nkirun.show.python_example import nisa_example  # noqa: E402


def lookup(name: str) -> S.InstructionDef | None:
    return REGISTRY.get(S.normalize_name(name.strip()))


def suggestion(name: str) -> str | None:
    from nkirun.diagnostics import did_you_mean
    return did_you_mean(S.normalize_name(name.strip()), REGISTRY)


def show_value(v) -> str:
    """A default as a user would write it in a program."""
    if isinstance(v, float):
        if v == ops.FP32_MIN:
            return "fp32.min"
        if v == ops.FP32_MAX:
            return "fp32.max"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if math.isnan(v):
            return "nan"
    if isinstance(v, bool):
        return "true" if v else "false"
    if hasattr(v, "name") and not isinstance(v, str):
        return v.name  # a DType
    if isinstance(v, tuple):
        return "[" + ", ".join(show_value(x) for x in v) + "]"
    return str(v)


def param_info(p: S.Param) -> dict:
    is_tile = p.kind.is_view
    buffers = (sorted(p.buffers) if p.buffers is not None else ["psum", "sbuf"]) \
        if is_tile else None
    choices = list(p.choices) if p.choices else (
        list(ops.OPS) if p.kind is S.OP else None)
    return {"name": p.name, "kind": p.kind.name, "kind_text": p.kind.text, "required": p.required,
            "default": None if p.required or p.default is None else show_value(p.default),
            "output": p.out, "buffers": buffers,
            "dtypes": sorted(p.dtypes) if p.dtypes is not None else None,
            "choices": choices, "per_partition": p.per_partition, "doc": p.doc}


def constraints(spec: S.InstructionDef) -> list[str]:
    """The rules the declarations imply (checked generically by validate.py), then the
    instruction's own `constraints` text if it has one."""
    out = []
    for p in spec.params:
        if not p.kind.is_view:
            continue
        rules = []
        if p.buffers is not None:
            rules.append("in " + " or ".join(sorted(p.buffers)))
        if p.dtypes is not None:
            rules.append("dtype " + _dtype_text(p.dtypes))
        if p.per_partition:
            rules.append("one element per partition, shape (P, 1)")
        if rules:
            out.append(f"{p.name}: " + "; ".join(rules))
    tiles = [p.name for p in spec.params if p.kind.is_view]
    group = tiles if spec.same_partitions is None else list(spec.same_partitions)
    if len(group) > 1:
        out.append("same number of partitions: " + ", ".join(group))
    eng = spec.param("engine")
    if spec.engine == "gpsimd" or (eng is not None and "gpsimd" in (eng.choices or ())):
        out.append("on the GpSimd engine no operand may be in PSUM (it cannot access it)")
    if spec.accumulator is not None:
        acc = S.ACCUMULATORS[spec.accumulator]
        sharing = sorted(s.name for s in REGISTRY.values()
                         if s.accumulator == spec.accumulator and s.name != spec.name)
        out.append(f"reduce_cmd drives the {acc.engine}-engine accumulator"
                   + (f" (shared with {', '.join(sharing)})" if sharing else "")
                   + "; reduce before a reset warns W052"
                   + ("; even idle may modify it" if acc.idle_may_modify else ""))
    extra = getattr(spec, "constraints", None)
    if extra:
        out.extend([extra] if isinstance(extra, str) else list(extra))
    return out


def _dtype_text(names) -> str:
    from nkirun.hw import dtypes as dt
    names = set(names)
    if names == set(dt.FLOAT_NAMES):
        return "a float type"
    if names == set(dt.INT_NAMES):
        return "an integer type"
    return " or ".join(sorted(names))


def signature(spec: S.InstructionDef) -> str:
    req = [p.name for p in spec.params if p.required]
    opt = [f"{p.name}={show_value(p.default)}" if p.default is not None else f"{p.name}=None"
           for p in spec.params if not p.required]
    return f"{spec.name}({', '.join(req + (['*'] if opt else []) + opt)})"


def describe(spec: S.InstructionDef) -> dict:
    return {
        "name": spec.name, "summary": spec.summary, "engine": spec.engine,
        "engine_selectable": spec.engine_of is not None,
        "signature": signature(spec),
        "nki_call": signature_text(spec.name, spec.nki) or None,  # positional order
        "params": [param_info(p) for p in spec.params],
        "constraints": constraints(spec),
        "semantics": spec.semantics,
        "cost": {"formula": spec.cost_formula, "assumed": spec.cost_assumed,
                 "note": spec.cost_note or None,
                 "tags": tag_meanings([spec.cost_formula, spec.cost_note])},
        "example": spec.example or None,
        "python_example": nisa_example(spec),
        "source": docs_url(spec.name),
    }


def _allowed(p: dict) -> list[str]:
    """A parameter's declared buffers, dtypes and (P, 1) shape, as short phrases."""
    out = []
    if p["buffers"]:
        out.append("/".join(p["buffers"]))
    if p["dtypes"]:
        out.append(_dtype_text(p["dtypes"]))
    if p["per_partition"]:
        out.append("(P, 1)")
    return out


def _param_line(p: dict) -> str:
    kind = p["kind_text"]
    if p["choices"] and p["kind"] in (S.ENUM.name, S.OP.name):
        kind += " " + " | ".join(p["choices"])
    bits = ["required" if p["required"] else f"default {p['default'] or 'none'}"]
    if p["output"]:
        bits.append("written")
    bits += _allowed(p)
    return f"{p['name']}: {kind} [{', '.join(bits)}]" + (f" — {p['doc']}" if p["doc"] else "")


def _rules(d: dict) -> list[str]:
    """The constraints a reader has not seen yet: those restating one parameter's
    declaration (`bound0: dtype float32; ...`) are already on that parameter's line."""
    names = {p["name"] for p in d["params"]}
    return [c for c in d["constraints"] if c.split(":", 1)[0] not in names]


def render_text(d: dict) -> str:
    engine = d["engine"] + (" (selectable with `engine:`)" if d["engine_selectable"] else "")
    out = [f"{d['name']} — {d['summary']}", "", f"  {d['signature']}"]
    if d.get("nki_call"):
        out.append(f"  in a Python kernel: {d['nki_call']}")
    out += ["", f"engine: {engine}", "", "parameters:"]
    out += [f"  {_param_line(p)}" for p in d["params"]]
    if _rules(d):
        out += ["", "rules:"] + [f"  - {c}" for c in _rules(d)]
    out += ["", "semantics:", f"  {d['semantics']}", "", "cost:", f"  {d['cost']['formula']}"]
    if d["cost"]["assumed"]:
        out.append("  (assumed: the instruction's page documents no cost formula)")
    if d["cost"]["note"]:
        out.append(f"  note: {d['cost']['note']}")
    out += [f"  {m}" for m in d["cost"]["tags"]]
    if d["example"]:
        out += ["", "example:"] + [f"  {line}" for line in d["example"].splitlines()]
    if d.get("python_example"):  # (spelled again within the reading width)
        from nkirun.show.render import reading_width
        text = nisa_example(lookup(d["name"]), reading_width() - 2) or d["python_example"]
        d = {**d, "python_example": text}
        out += ["", "in a Python kernel:"] + [f"  {x}" for x in text.splitlines()]
    if d["source"]:
        out += ["", f"source: {d['source']}"]
    from nkirun.show.render import wrap_words
    keep = set()  # code is never re-wrapped
    for head, key in (("example:", "example"), ("in a Python kernel:", "python_example")):
        if d.get(key):
            at = out.index(head) + 1
            keep.update(range(at, at + len(d[key].splitlines())))
    return "\n".join(line if k in keep or line.startswith("source: ") else wrap_words(line)
                     for k, line in enumerate(out))


def render_rich(d: dict, console) -> None:
    from rich import box
    from rich.markup import escape
    from rich.padding import Padding
    from rich.syntax import Syntax
    from rich.table import Table

    def para(text, style=""):  # indented, wrapped under itself
        console.print(Padding(f"[{style}]{escape(text)}[/{style}]" if style else escape(text),
                              (0, 0, 0, 2)))

    def section(title):
        console.print()
        console.print(f"[bold]{title}[/bold]")

    console.print(f"[bold]{d['name']}[/bold] — {escape(d['summary'])}")
    console.print()
    para(d["signature"], "cyan")
    if d.get("nki_call"):
        para(f"in a Python kernel: {d['nki_call']}")
    console.print()
    console.print(f"engine: [bold]{d['engine']}[/bold]"
                  + (" (selectable with `engine:`)" if d["engine_selectable"] else ""))
    section("parameters")
    t = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    t.add_column("name", no_wrap=True, style="bold")
    t.add_column("kind", no_wrap=True)
    t.add_column("default", no_wrap=True)
    t.add_column("allowed", ratio=1, overflow="fold")
    t.add_column("meaning", ratio=2)
    for p in d["params"]:
        allowed = ([" | ".join(p["choices"])] if p["choices"] else []) + _allowed(p)
        t.add_row(p["name"] + (" (out)" if p["output"] else ""),
                  p["kind_text"],
                  "[yellow]required[/yellow]" if p["required"] else escape(p["default"] or "-"),
                  escape("; ".join(allowed)), escape(p["doc"]))
    console.print(Padding(t, (0, 0, 0, 2)))
    if _rules(d):
        section("rules")
        for c in _rules(d):
            console.print(Padding(f"- {escape(c)}", (0, 0, 0, 2)))
    section("semantics")
    para(d["semantics"])
    section("cost")
    para(d["cost"]["formula"] + ("  (assumed: the page documents no formula)"
                                 if d["cost"]["assumed"] else ""))
    for text in ([f"note: {d['cost']['note']}"] if d["cost"]["note"] else []) + d["cost"]["tags"]:
        para(text)
    if d["example"]:
        section("example")
        console.print(Padding(Syntax(d["example"], "yaml", theme="ansi_dark",
                                     background_color="default"), (0, 0, 0, 2)))
    if d.get("python_example"):
        section("in a Python kernel")
        console.print(Padding(Syntax(d["python_example"], "python", theme="ansi_dark",
                                     background_color="default"), (0, 0, 0, 2)))
    if d["source"]:
        console.print()
        console.print(f"[dim]source: {escape(d['source'])}[/dim]")


def ops_list() -> list[dict]:
    return [{"name": s.name, "engine": s.engine, "summary": s.summary,
             "cost_assumed": s.cost_assumed} for s in sorted(REGISTRY.values(),
                                                             key=lambda s: s.name)]


def render_ops_text(rows: list[dict]) -> str:
    w = max((len(r["name"]) for r in rows), default=0)
    we = max((len(r["engine"]) for r in rows), default=0)
    return "\n".join(f"{r['name']:<{w}}  {r['engine']:<{we}}  {r['summary']}" for r in rows)


def render_ops_rich(rows: list[dict], console) -> None:
    from rich.markup import escape
    from rich.table import Table
    t = Table(title=f"{len(rows)} instructions (nkirun explain OP for details)",
              title_justify="left")
    for c in ("op", "engine", "summary"):
        t.add_column(c)
    for r in rows:
        t.add_row(f"[bold]{r['name']}[/bold]", r["engine"], escape(r["summary"]))
    console.print(t)


def docs_url(op: str) -> str:
    """The public NKI documentation page of an instruction (its spec's `page_url`: load and
    store are nki.language functions, the rest nki.isa instructions)."""
    return REGISTRY[op].page_url


def explain_code(text: str, fmt: str) -> int:
    """`nkirun explain E040`: prints the code's entry; returns the exit status."""
    import json
    import textwrap

    import click

    from nkirun import codes
    from nkirun.show.render import reading_width
    c = codes.lookup(text)
    if c is None:
        click.echo(f"nkirun: unknown diagnostic code `{text}` (docs/diagnostics.md lists "
                   "them)", err=True)
        return 1
    if fmt == "json":
        click.echo(json.dumps({"code": c.code, "severity": c.severity, "section": c.section,
                               "instruction": c.instruction, "meaning": c.meaning}, indent=2))
    else:
        width = reading_width()
        click.echo("\n".join(textwrap.fill(line, width, break_long_words=False,
                                           break_on_hyphens=False)
                             for line in codes.explain_text(c).splitlines()))
    return 0
