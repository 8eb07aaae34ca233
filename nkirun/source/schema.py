"""The JSON Schema of the program format, generated from the instruction table.

Editors with yaml-language-server complete and check programs with it:
    # yaml-language-server: $schema=<path>/schemas/program.schema.json
Every op in nkirun.isa.REGISTRY becomes one property of an instruction entry, with its
keywords (types from the Param kinds, enums for operators, dtypes, reduce_cmd, ...),
its required keywords and no others. `schemas/program.schema.json` is this output,
committed; a test keeps it equal to `generate()`.

    python -m nkirun.source.schema            # print it
    python -m nkirun.source.schema --write    # regenerate schemas/program.schema.json
"""
from __future__ import annotations

import json
import math
import os
import re
import sys

from nkirun.hw import dtypes as dt
from nkirun.hw import alu as ops
from nkirun.source.builder import BUFFER_ALIASES, NAME_RE
from nkirun.ir import BUFFERS
from nkirun.isa import REGISTRY
from nkirun.isa import spec as S
from nkirun.hw.targets import TARGETS

SCHEMA_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                           "schemas", "program.schema.json")
# the copy installed with the package (`nkirun schema --path` names it, for editor settings)
PACKAGE_SCHEMA_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                   "program.schema.json")
SCHEMA_ID = "urn:nkirun:schema:program:1"

VIEW_MESSAGE = ("a tensor view: a declared tensor name, optionally indexed with ints, "
                "start:stop[:step] and `:`, e.g. `t` or `t[:, 0:128]`")
INT_MESSAGE = "an integer (or a string holding one)"
NUM_MESSAGE = "a number, or one of inf, -inf, nan, fp32.min, fp32.max"

VIEW_PATTERN = r"^\s*[A-Za-z_][A-Za-z0-9_.]*\s*(\[[^\[\]]*\])?\s*$"
INT_STRING = r"^\s*[+-]?(0[xXoObB][0-9a-fA-F_]+|[0-9][0-9_]*)\s*$"
NUM_STRING = r"^\s*[+-]?([0-9][0-9_]*\.?[0-9_]*|\.[0-9][0-9_]*)([eE][+-]?[0-9]+)?\s*$"


def _alternatives(names, prefixes=()) -> str:
    """An anchored regex: one of `names`, optionally after one of `prefixes`."""
    body = "|".join(re.escape(n) for n in sorted(set(names), key=lambda n: (-len(n), n)))
    pre = "|".join(re.escape(p) for p in prefixes)
    return rf"^({pre})?({body})$" if pre else rf"^({body})$"


def _nocase(word: str) -> str:
    return "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else re.escape(c) for c in word)


def _names_or_prefixed(names, prefixes, description: str) -> dict:
    """Canonical names as an enum (editors complete them) or any accepted spelling."""
    shown = ", ".join(f"`{n}`" for n in sorted(names)[:12]) + (", ..." if len(names) > 12
                                                                else "")
    return {"description": description,
            "anyOf": [{"enum": sorted(names)},
                      {"type": "string", "pattern": _alternatives(names, prefixes),
                       "patternErrorMessage": f"one of {shown}"
                       + (f" (prefixes {', '.join(prefixes)} allowed)" if prefixes else "")}]}


SCALAR_SCHEMA = {
    "anyOf": [
        {"type": "number"},
        {"type": "string", "pattern": "^\\s*(" + "|".join(
            _nocase(k) for k in sorted(ops.SPECIAL_SCALARS, key=lambda k: (-len(k), k)))
            + ")\\s*$", "patternErrorMessage": NUM_MESSAGE},
        {"type": "string", "pattern": NUM_STRING, "patternErrorMessage": NUM_MESSAGE},
    ]}


def _op_names(allowed) -> list[str]:
    """Every spelling of the allowed operators: names and the aliases that map onto them."""
    return sorted(set(allowed) | {a for a, t in ops.ALIASES.items() if t in allowed})


def _json_default(v):
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, (tuple, list)):
        return [_json_default(x) for x in v]
    if isinstance(v, dt.DType):
        return v.name
    return v


def _tile_doc(p: S.Param) -> str:
    bufs = sorted(p.buffers) if p.buffers is not None else ["psum", "sbuf"]
    extra = [f"buffers: {', '.join(bufs)}"]
    if p.dtypes is not None:
        extra.append(f"dtypes: {', '.join(sorted(p.dtypes))}")
    if p.per_partition:
        extra.append("shape (P, 1)")
    if p.out:
        extra.append("written by the instruction")
    return f"{p.doc} — a tensor view such as `t` or `t[:, 0:128]` ({'; '.join(extra)})"


def param_schema(p: S.Param) -> dict:
    """The JSON Schema of one keyword, from its Param declaration."""
    k = p.kind
    if k == S.TILE:
        s = {"type": "string", "pattern": VIEW_PATTERN, "patternErrorMessage": VIEW_MESSAGE,
             "description": _tile_doc(p)}
    elif k == S.TILE_OR_SCALAR:
        s = {"description": _tile_doc(p) + ", or a number",
             "anyOf": [SCALAR_SCHEMA, {"type": "string", "pattern": VIEW_PATTERN,
                                       "patternErrorMessage": VIEW_MESSAGE}]}
    elif k == S.SCALAR:
        s = dict(SCALAR_SCHEMA, description=p.doc + " — a number, or inf, -inf, nan, "
                 "fp32.min, fp32.max")
    elif k == S.INT:
        s = {"anyOf": [{"type": "integer"}, {"type": "string", "pattern": INT_STRING,
                                             "patternErrorMessage": INT_MESSAGE}],
             "description": p.doc}
    elif k == S.BOOL:
        s = {"anyOf": [{"type": "boolean"}, {"enum": ["true", "false", "True", "False"]}],
             "description": p.doc}
    elif k == S.OP:
        allowed = p.choices or tuple(ops.OPS)
        s = _names_or_prefixed(_op_names(allowed), ops.PREFIXES, p.doc)
    elif k == S.ENUM:
        s = _names_or_prefixed([str(c) for c in p.choices or ()], S.ENUM_PREFIXES, p.doc)
    elif k == S.PATTERN:
        s = {"type": "array", "minItems": 1, "description": p.doc + " — [[step, num], ...]",
             "items": {"type": "array", "minItems": 2, "maxItems": 2,
                       "items": {"type": "integer"}}}
    elif k == S.INT_LIST:
        s = {"anyOf": [{"type": "integer"},
                       {"type": "array", "minItems": 1, "items": {"type": "integer"}}],
             "description": p.doc}
    elif k == S.DTYPE:
        s = _names_or_prefixed(list(dt.DTYPES) + list(dt.ALIASES), dt.PREFIXES, p.doc)
    elif k == S.MASK:
        s = {"type": "string", "description": p.doc + ' — e.g. "p < 64 and f < 256"'}
    else:
        raise KeyError(f"nkirun.source.schema does not know Param kind {k!r} (of `{p.name}`): "
                       "add it to param_schema()")
    if p.default is not None:
        s["default"] = _json_default(p.default)
    if not p.required:  # an explicit null means "not given"
        s = {"description": s.get("description", ""),
             "anyOf": [{k2: v for k2, v in s.items() if k2 != "description"}, {"type": "null"}]}
    s["markdownDescription"] = _param_markdown(p, s.get("description", ""))
    return s


def _param_markdown(p: S.Param, description: str) -> str:
    need = "required" if p.required else f"optional, default `{_json_default(p.default)}`"
    return f"**`{p.name}`** ({need}{', written' if p.out else ''})\n\n{description}"


def _docs_url(name: str) -> str:
    from nkirun.show.explain import docs_url
    return docs_url(name)


def instruction_schema(spec: S.InstructionDef) -> dict:
    required = [p.name for p in spec.params if p.required]
    return {
        "type": "object",
        "title": f"{spec.name} — {spec.summary}",
        "description": f"{spec.summary} ({spec.engine} engine). {spec.semantics}",
        "markdownDescription": (f"**{spec.name}** — {spec.summary} (*{spec.engine}* engine)"
                                f"\n\n{spec.semantics}\n\nRequired: "
                                + (", ".join(f"`{r}`" for r in required) or "nothing")
                                + f"\n\n[NKI documentation]({_docs_url(spec.name)}) · "
                                f"`nkirun explain {spec.name}`"),
        "properties": {p.name: param_schema(p) for p in spec.params},
        "required": required,
        "additionalProperties": False,
    }


def instruction_snippet(spec: S.InstructionDef) -> dict:
    """An editor snippet: the instruction with its required keywords as tab stops."""
    body = {p.name: f"${{{k}:{p.name}}}"
            for k, p in enumerate((p for p in spec.params if p.required), start=1)}
    return {"label": spec.name, "description": spec.summary, "body": {spec.name: body}}


def tensor_schema() -> dict:
    buffers = list(BUFFERS) + list(BUFFER_ALIASES)
    return {
        "type": "object",
        "properties": {
            "buffer": _names_or_prefixed(buffers, ("nl.",), "hbm, sbuf or psum"),
            "shape": {"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": 1},
                      "description": "on-chip: [partitions (<= 128), free dims...]"},
            "dtype": _names_or_prefixed(list(dt.DTYPES) + list(dt.ALIASES), dt.PREFIXES,
                                        "element type"),
            "file": {"type": "string", "minLength": 1,
                     "description": "initial contents: a .npy file, relative to the program"},
            "fill": dict(SCALAR_SCHEMA, description="initial contents: one scalar everywhere"),
            "data": {"type": "array", "description": "initial contents: a nested list"},
            "output": {"type": "boolean",
                       "description": "write the tensor to OUTDIR/<name>.npy after the run"},
        },
        "required": ["buffer", "shape", "dtype"],
        "additionalProperties": False,
        "not": {"anyOf": [{"required": ["file", "fill"]}, {"required": ["file", "data"]},
                          {"required": ["fill", "data"]}]},
    }


def generate() -> dict:
    ops_by_name = dict(sorted(REGISTRY.items()))
    defs = {f"op_{name}": instruction_schema(spec) for name, spec in ops_by_name.items()}
    defs["tensor"] = tensor_schema()
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$id": SCHEMA_ID,
        "title": "nkirun program, format version 1",
        "description": "Generated by `python -m nkirun.source.schema --write` from nkirun's "
                       "instruction table; do not edit by hand.",
        "type": "object",
        "properties": {
            "version": {"const": 1, "description": "the format version (required)"},
            "name": {"type": ["string", "null"]},
            "target": {"enum": list(TARGETS), "default": "trn2"},
            "tensors": {"type": "object",
                        "propertyNames": {"pattern": NAME_RE.pattern, "patternErrorMessage":
                                          "a tensor name: letters, digits and _, not starting "
                                          "with a digit (it becomes an output file name)"},
                        "additionalProperties": {"$ref": "#/definitions/tensor"}},
            "instructions": {"type": "array", "items": {"$ref": "#/definitions/instruction"}},
        },
        "required": ["version"],
        "additionalProperties": False,
        "definitions": {
            "instruction": {
                "type": "object", "minProperties": 1, "maxProperties": 1,
                "description": "one nki.isa instruction: `- op: {keyword: value, ...}`",
                "defaultSnippets": [instruction_snippet(spec) for spec in ops_by_name.values()],
                "properties": {name: {"$ref": f"#/definitions/op_{name}"}
                               for name in ops_by_name},
                # nisa.range_select, nl.load, ...: the prefixes normalize_name strips
                "patternProperties": {
                    rf"^({'|'.join(re.escape(p) for p in S.NAME_PREFIXES)}){re.escape(name)}$":
                    {"$ref": f"#/definitions/op_{name}"} for name in ops_by_name},
                "additionalProperties": False,
            },
            **defs,
        },
    }


def dumps(schema: dict | None = None) -> str:
    return json.dumps(schema or generate(), indent=2, sort_keys=False) + "\n"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    text = dumps()
    if "--write" in argv:
        for path in (SCHEMA_PATH, PACKAGE_SCHEMA_PATH):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            print(f"wrote {path}")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
