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
    return {"description": description,
            "anyOf": [{"enum": sorted(names)},
                      {"type": "string", "pattern": _alternatives(names, prefixes)}]}


SCALAR_SCHEMA = {
    "anyOf": [
        {"type": "number"},
        {"type": "string", "pattern": "^\\s*(" + "|".join(
            _nocase(k) for k in sorted(ops.SPECIAL_SCALARS, key=lambda k: (-len(k), k)))
            + ")\\s*$"},
        {"type": "string", "pattern": NUM_STRING},
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
        s = {"type": "string", "pattern": VIEW_PATTERN, "description": _tile_doc(p)}
    elif k == S.TILE_OR_SCALAR:
        s = {"description": _tile_doc(p) + ", or a number",
             "anyOf": [SCALAR_SCHEMA, {"type": "string", "pattern": VIEW_PATTERN}]}
    elif k == S.SCALAR:
        s = dict(SCALAR_SCHEMA, description=p.doc + " — a number, or inf, -inf, nan, "
                 "fp32.min, fp32.max")
    elif k == S.INT:
        s = {"anyOf": [{"type": "integer"}, {"type": "string", "pattern": INT_STRING}],
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
                       {"type": "array", "minItems": 0 if p.default == () else 1,
                        "items": {"type": "integer"}}],
             "description": p.doc}
    elif k == S.TILE_LIST:
        s = {"type": "array", "minItems": 1, "description": _tile_doc(p) + ", in a list",
             "items": {"type": "string", "pattern": VIEW_PATTERN}}
    elif k == S.NUMBER_LIST:
        s = {"type": "array", "minItems": 1, "items": SCALAR_SCHEMA, "description": p.doc}
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
    return s


def instruction_schema(spec: S.InstructionDef) -> dict:
    return {
        "type": "object",
        "description": f"{spec.summary} ({spec.engine} engine). {spec.semantics}",
        "properties": {p.name: param_schema(p) for p in spec.params},
        "required": [p.name for p in spec.params if p.required],
        "additionalProperties": False,
    }


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
        "title": "nkirun program, format version 1",
        "description": "Generated by `python -m nkirun.source.schema --write` from nkirun's "
                       "instruction table; do not edit by hand.",
        "type": "object",
        "properties": {
            "version": {"const": 1, "description": "the format version (required)"},
            "name": {"type": ["string", "null"]},
            "target": {"enum": list(TARGETS), "default": "trn2"},
            "tensors": {"type": "object", "propertyNames": {"pattern": NAME_RE.pattern},
                        "additionalProperties": {"$ref": "#/definitions/tensor"}},
            "instructions": {"type": "array", "items": {"$ref": "#/definitions/instruction"}},
        },
        "required": ["version"],
        "additionalProperties": False,
        "definitions": {
            "instruction": {
                "type": "object", "minProperties": 1, "maxProperties": 1,
                "description": "one nki.isa instruction: `- op: {keyword: value, ...}`",
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
        os.makedirs(os.path.dirname(SCHEMA_PATH), exist_ok=True)
        with open(SCHEMA_PATH, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"wrote {SCHEMA_PATH}")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
