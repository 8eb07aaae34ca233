"""`nkirun explain` in a kernel author's words: an instruction's YAML example spelled as
the `nisa.*` calls a Python kernel makes, and what an `nl.*` function records (found by
tracing one call of it: what the kernel front end really records, never a second copy)."""
from __future__ import annotations

import re

_OPS = ("op", "op0", "op1", "reduce_op", "op2", "cmp_op", "func")  # operator keywords


def nisa_example(spec, width: int = 76) -> str | None:
    """The instruction's YAML example as `nisa.<name>(...)` calls, lines within `width`
    columns where the keywords allow (None: no example)."""
    from nkirun.source.yaml_import import yaml
    if not spec.example:
        return None
    try:
        entries = yaml.safe_load(spec.example)
    except yaml.YAMLError:
        return None
    if not isinstance(entries, list):
        return None
    lines = []
    for entry in entries:
        if not isinstance(entry, dict) or len(entry) != 1:
            return None  # a loop or a core block: no one-call spelling
        (op, args), = entry.items()
        if not isinstance(args, dict):
            return None
        kinds = {p.name: p.kind.name for p in _spec(op).params} if _spec(op) else {}
        lines += _call_lines(f"nisa.{op}(", [f"{k}={_value(v, kinds.get(k), k)}"
                                            for k, v in args.items()], width)
    return "\n".join(lines)


def _call_lines(head: str, items: list[str], width: int = 76) -> list[str]:
    """`head` + the items + `)`, continued under the first item where a line would pass
    `width` columns, or four columns in after `head` alone where the head is too long for
    that (explain's text stays within 80)."""
    lines = _filled([], head, " " * len(head), items, width)
    if items and max(map(len, lines)) > width:
        lines = _filled([head], "    ", "    ", items, width)
    return lines


def _filled(lines: list[str], line: str, indent: str, items: list[str], width: int):
    head = line
    for k, item in enumerate(items):
        piece = item + (")" if k == len(items) - 1 else ",")
        if line != head and not line.endswith("(") and len(line) + 1 + len(piece) > width:
            lines.append(line)
            line = indent + piece
        else:
            line += ("" if line.endswith("(") or not line.strip() else " ") + piece
    return lines + [line if items else head + ")"]


def _spec(op):
    from nkirun.isa import REGISTRY
    return REGISTRY.get(op)


def _value(v, kind, key) -> str:
    if isinstance(v, str):
        if kind == "op" or kind == "enum" and key in _OPS or kind == "dtype":
            return f"nl.{v}"  # an operator, activation function or dtype: nki.language's
        if kind == "enum":
            return repr(v)
        if re.fullmatch(r"[A-Za-z_][\w.]*(\[[^\]]*\])?", v.strip()):
            return v.strip()  # a tile or view, as Python indexes it
        return repr(v)
    if isinstance(v, list):
        if len(v) > 4 and all(x == v[0] for x in v) and not isinstance(v[0], list):
            return f"[{_value(v[0], kind, key)}] * {len(v)}"  # as a kernel writes it
        return "[" + ", ".join(_value(x, kind, key) for x in v) + "]"
    return repr(v)


# How `explain nl.NAME` calls the function (t: a float32 (128, 512) SBUF tile holding the
# kernel's input; x: that HBM input); UNARY/BINARY functions take one tile / two.
_CALLS = {call.split("(")[0].removeprefix("nl."): call for call in (  # name -> its call
    "nl.copy(t)", "nl.zeros((128, 512), dtype=nl.float32)",
    "nl.ones((128, 512), dtype=nl.float32)", "nl.full((128, 512), 2.0, dtype=nl.float32)",
    "nl.load(x)", "nl.transpose(t[:, 0:128])", "nl.matmul(t[:, 0:128], t, transpose_x=True)",
    "nl.sum(t, axis=1)", "nl.max(t, axis=1)", "nl.min(t, axis=1)", "nl.mean(t, axis=1)",
    "nl.prod(t, axis=1)", "nl.negative(t)", "nl.broadcast_to(t[0:1, :], (128, 512))")}


def nl_call(name: str) -> str | None:
    """The call `explain nl.NAME` traces, or None for a function it does not know."""
    from nkirun.source.kernel.convenience import BINARY, UNARY
    if name in _CALLS:
        return _CALLS[name]
    if name in UNARY:
        return f"nl.{name}(t)"
    if name in BINARY:
        return f"nl.{name}(t, t)"
    return None


def nl_function(name: str) -> dict | None:
    """`explain nl.NAME`: the call, and the instructions it records (YAML and Python)."""
    call = nl_call(name.removeprefix("nl.").removeprefix("nki.language."))
    if call is None:
        return None
    program = _readable(_traced(call))
    from nkirun.source.write import write_program
    text = write_program(program, "yaml")
    body = text[text.index("instructions:\n") + len("instructions:\n"):].rstrip()
    body = "\n".join(line[2:] for line in body.splitlines()[1:-1])  # the call's own
    records = [i.op for i in program.instructions[1:-1]]
    tensors = {n: f"{t.buffer} {list(t.shape)} {t.dtype.name}"
               for n, t in program.tensors.items() if n not in ("x", "out")}
    return {"name": f"nl.{name.removeprefix('nl.')}", "call": f"r = {call}",
            "records": records, "yaml": body, "tensors": tensors,
            "note": "t: a float32 [128, 512] SBUF tile; each result tile is a new tensor"}


def _readable(program):
    """The example's tensors named as the call names them: t, then r, r2, ... in order."""
    from nkirun.ir import rename_tensors
    first = program.instructions[0].args["dst"].tensor
    last = program.instructions[-1].args["dst"].tensor  # the HBM copy the kernel returns
    names, k = {first: "t", last: "out"}, 1
    for n in program.tensors:
        if n not in names and n != "x":
            names[n] = "r" if k == 1 else f"r{k}"
            k += 1
    return rename_tensors(program, names)


def _traced(call: str):
    import numpy as np

    from nkirun.source.kernel.modules import installed
    from nkirun.source.kernel.trace import tensor_arg, trace
    src = ("import nki\nimport nki.isa as nisa\nimport nki.language as nl\n\n"
           "def example(x):\n"
           "    t = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)\n"
           "    nisa.dma_copy(dst=t, src=x)\n"
           f"    r = {call}\n"
           "    out = nl.ndarray(r.shape, dtype=r.dtype, buffer=nl.shared_hbm)\n"
           "    nisa.dma_copy(dst=out, src=r)\n"  # (a kernel returns HBM tensors)
           "    return out\n")
    scope: dict = {}
    with installed():
        exec(compile(src, "<explain>", "exec"), scope)  # noqa: S102 - our own text
    x = tensor_arg(np.zeros((128, 512), np.float32))
    return trace(scope["example"], {"x": x}, "trn2").program
