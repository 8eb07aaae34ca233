"""Writing a parsed Program back out, as YAML or as the text form (`nkirun convert`).

Lossless at the IR level: reading the output gives the same tensors and instructions
(locations and comments aside). An instruction keeps the keywords its source gave, in
their order; keywords that were not given are left out when they hold the default.
"""
from __future__ import annotations

import json
import math
import os
import re
from dataclasses import replace

from nkirun.hw.dtypes import DType
from nkirun.ir import Instruction, Program, Register, TensorDecl, View
from nkirun.isa import REGISTRY
from nkirun.hw.alu import FP32_MAX, FP32_MIN
from nkirun.source.text_front import CONTROL, plain

# A word the text reader takes back as the same string (not a number, bool or list).
_TEXT_WORD = re.compile(r"[^\s\"'#\[\]=,]+")
# A YAML plain scalar that resolves to a string in every context (flow included).
_YAML_WORD = re.compile(r"[A-Za-z_][\w.\-/]*")
_YAML_FLOATS = {"inf": ".inf", "-inf": "-.inf", "nan": ".nan"}  # YAML's own spellings
_YAML_RESERVED = frozenset(
    "yes Yes YES no No NO true True TRUE false False FALSE on On ON off Off OFF "
    "null Null NULL ~".split())


def instruction_args(inst: Instruction) -> list[tuple[str, object]]:
    """(keyword, typed value) pairs worth writing: the given ones, then non-defaults."""
    spec = REGISTRY[inst.op]
    keys = [k for k in inst.arg_locs if k in inst.args]
    given = set(keys)
    for p in spec.params:
        if p.name not in given and p.name in inst.args \
                and not _same(inst.args[p.name], p.default):
            keys.append(p.name)
    return [(k, inst.args[k]) for k in keys if inst.args[k] is not None]


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def float_text(v: float) -> str:
    """A float both readers take back bit-exactly (and as a float, not an int)."""
    if v == FP32_MIN:
        return "fp32.min"
    if v == FP32_MAX:
        return "fp32.max"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if math.isnan(v):
        return "nan"
    s = repr(float(v))
    if "." not in s:  # PyYAML reads 1e+20 as a string: write 1.0e+20
        mant, e, exp = s.partition("e")
        s = f"{mant}.0{e}{exp}"
    return s


def _number(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    return float_text(float(v))


# ---- the text form ---------------------------------------------------------------------------
def _text_str(s: str) -> str:
    if s and _TEXT_WORD.fullmatch(s) and plain(s) == s and not CONTROL.search(s):
        return s
    body = s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    body = CONTROL.sub(lambda m: f"\\u{ord(m.group(0)):04x}", body)  # the reader refuses them raw
    return f'"{body}"'


def value_text(v, fmt: str) -> str:
    """A typed IR value written in `fmt` ("text" or "yaml")."""
    if isinstance(v, View):
        return str(v) if fmt == "text" else _yaml_str(str(v))
    if isinstance(v, Register):
        return v.name
    if isinstance(v, DType):
        return v.name
    if isinstance(v, str):
        return _text_str(v) if fmt == "text" else _yaml_str(v)
    if isinstance(v, (list, tuple)):  # (a view inside a text list is quoted: it has brackets)
        return "[" + ", ".join(_text_str(str(x)) if fmt == "text" and isinstance(x, View)
                               else value_text(x, fmt) for x in v) + "]"
    if hasattr(v, "tolist"):  # NumPy arrays (inline data) and scalars
        return value_text(v.tolist(), fmt)
    s = _number(v)
    return _YAML_FLOATS.get(s, s) if fmt == "yaml" else s


def text_value(v) -> str:
    return value_text(v, "text")


def yaml_value(v) -> str:
    return value_text(v, "yaml")


def to_text(program: Program) -> str:
    out = ["version 1"]
    if program.name is not None:
        out.append(f"name {_text_str(program.name)}")
    out.append(f"target {program.target}")
    rows = [_tensor_text(t) for t in program.tensors.values()]
    if rows:
        out.append("")
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        for r in rows:
            head = " ".join(c.ljust(w) for c, w in zip(r[:4], widths))
            out.append(f"tensor {head} {' '.join(r[4:])}".rstrip())
    from nkirun.source.loops import text_lines
    for core, stream in _streams(program):
        if stream or core is not None or program.loops:
            out.append("")
        if core is not None:
            out.append(f"core {core}")
        out += text_lines(_one_core(program, core, stream), _text_instruction, text_value)
    return "\n".join(out) + "\n"


def _text_instruction(inst: Instruction) -> str:
    args = " ".join(f"{k}={text_value(v)}" for k, v in instruction_args(inst))
    return f"{inst.op} {args}".rstrip()


def _one_core(program: Program, core, stream) -> Program:
    """The program with one core's instructions and loops (loops: source/loops.py)."""
    if core is None:
        return program
    from dataclasses import replace
    return replace(program, instructions=tuple(stream),
                   loops=tuple(lp for lp in program.loops if lp.core == core))


def _streams(program: Program):
    """(core, its instructions) per core of a two-core program; (None, all) otherwise."""
    if program.cores == 1:
        return [(None, program.instructions)]
    return [(c, [i for i in program.instructions if i.core == c])
            for c in range(program.cores)]


def _tensor_text(t: TensorDecl) -> list[str]:
    row = [_text_str(t.name), t.buffer, text_value(t.shape), t.dtype.name]
    if t.init is not None:
        row.append(f"{t.init}={_init_value(t, text_value)}")
    if t.output:
        row.append("output")
    if t.core is not None:
        row.append(f"core={t.core}")
    return row


def _init_value(t: TensorDecl, render) -> str:
    if t.init == "data":
        return render(_data_list(t.init_value.tolist()))
    return render(t.init_value)


def _data_list(v):
    """Inline data (float64 in the IR): integral values as ints, except -0.0."""
    if isinstance(v, list):
        return [_data_list(x) for x in v]
    if math.isfinite(v) and v.is_integer() and math.copysign(1.0, v) > 0 \
            and abs(v) < 2**53:
        return int(v)
    return v


# ---- YAML ------------------------------------------------------------------------------------
def _yaml_str(s: str) -> str:
    if _YAML_WORD.fullmatch(s) and s not in _YAML_RESERVED:
        return s
    return json.dumps(s)  # a JSON string is a YAML double-quoted scalar


def to_yaml(program: Program) -> str:
    out = ["version: 1"]
    if program.name is not None:
        out.append(f"name: {_yaml_str(program.name)}")
    out.append(f"target: {program.target}")
    if not program.tensors:
        out.append("tensors: {}")
    else:
        out.append("tensors:")
        width = max(len(_yaml_str(n)) for n in program.tensors) + 1
        for t in program.tensors.values():
            fields = [f"buffer: {t.buffer}", f"shape: {yaml_value(t.shape)}",
                      f"dtype: {t.dtype.name}"]
            if t.init is not None:
                fields.append(f"{t.init}: {_init_value(t, yaml_value)}")
            if t.output:
                fields.append("output: true")
            if t.core is not None:
                fields.append(f"core: {t.core}")
            out.append(f"  {(_yaml_str(t.name) + ':').ljust(width)} {{{', '.join(fields)}}}")
    from nkirun.source.loops import yaml_lines
    streams = _streams(program)
    if streams[0][0] is not None:
        out.append("cores:")
    for core, stream in streams:
        pad = "" if core is None else "    "
        head = "instructions:" if core is None else f"  - instructions:   # core {core}"
        if not stream:
            out.append(head.replace(":", ": []", 1))
            continue
        out.append(head)
        out += yaml_lines(_one_core(program, core, stream), _yaml_instruction, yaml_value, pad)
    return "\n".join(out) + "\n"


def _yaml_instruction(inst: Instruction, indent: str) -> list[str]:
    args = [f"{k}: {yaml_value(v)}" for k, v in instruction_args(inst)]
    line = f"{indent}- {inst.op}: {{{', '.join(args)}}}"
    if len(line) <= 100:
        return [line]
    # long entries one keyword per line, like the hand-written programs
    return [f"{indent}- {inst.op}:"] + [f"{indent}    {a}" for a in args]


FORMATS = {"yaml": to_yaml, "text": to_text}


def write_program(program: Program, fmt: str, out_dir: str | None = None) -> str:
    """`program` as the text of format `fmt` ("yaml" or "text"). With `out_dir` (the folder
    the result will live in), relative data-file paths are rewritten to stay valid there."""
    program = without_run_time_inputs(program)
    if out_dir is not None:
        program = rebase_files(program, out_dir)
    return FORMATS[fmt](program)


def without_run_time_inputs(program: Program) -> Program:
    """Tensors whose contents come only at run time (a kernel's array parameters, `run
    --input`) have no initial contents in a file."""
    if not any(t.init == "input" for t in program.tensors.values()):
        return program
    return replace(program, tensors={n: replace(t, init=None) if t.init == "input" else t
                                     for n, t in program.tensors.items()})


def rebase_files(program: Program, out_dir: str) -> Program:
    src, dst = os.path.abspath(program.base_dir), os.path.abspath(out_dir)
    if src == dst:
        return program
    tensors = {}
    for n, t in program.tensors.items():
        if t.init == "file" and not os.path.isabs(t.init_value):
            path = os.path.relpath(os.path.join(src, t.init_value), dst)
            t = replace(t, init_value=path.replace(os.sep, "/"))
        tensors[n] = t
    return replace(program, tensors=tensors, base_dir=out_dir)


def _install() -> None:
    from nkirun import ir
    ir.WRITER[0] = write_program


_install()  # Program.to_yaml() / to_text()
