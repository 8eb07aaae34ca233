"""The JSON Schema of the program format, generated from the instruction table.

Editors with yaml-language-server complete and check programs with it:
    # yaml-language-server: $schema=<path>/schemas/program.schema.json
Every op in nkirun.isa.REGISTRY becomes one property of an instruction entry, with its
keywords (types from the Param kinds, enums for operators, dtypes, reduce_cmd, ...),
its required keywords and no others. `schemas/program.schema.json` is this output,
committed; a test keeps it equal to `generate()`.

    nkirun schema                             # print it
    python -m nkirun.cli.regenerate           # regenerate schemas/program.schema.json
"""
from __future__ import annotations

import json
import math
import os
import re

from nkirun.hw import dtypes as dt
from nkirun.source.builder import BUFFER_ALIASES, NAME_RE
from nkirun.ir import BUFFERS
from nkirun.isa import REGISTRY
from nkirun.isa import spec as S
from nkirun.isa.kinds import SCALAR_SCHEMA, names_or_prefixed
from nkirun.hw.targets import TARGETS

SCHEMA_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                           "schemas", "program.schema.json")
# the copy installed with the package (`nkirun schema --path` names it, for editor settings)
PACKAGE_SCHEMA_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                   "program.schema.json")
SCHEMA_ID = "urn:nkirun:schema:program:1"


def _json_default(v):
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, (tuple, list)):
        return [_json_default(x) for x in v]
    if isinstance(v, dt.DType):
        return v.name
    return v


def param_schema(p: S.Param) -> dict:
    """The JSON Schema of one keyword, from its Param declaration."""
    s = p.kind.json_schema(p)
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
    return REGISTRY[name].page_url  # (the page `nkirun explain` names too)


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
            "buffer": names_or_prefixed(buffers, ("nl.",), "hbm, sbuf or psum"),
            "shape": {"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": 1},
                      "description": "on-chip: [partitions (<= 128), free dims...]"},
            "dtype": names_or_prefixed(list(dt.DTYPES) + list(dt.ALIASES), dt.PREFIXES,
                                        "element type"),
            "file": {"type": "string", "minLength": 1,
                     "description": "initial contents: a .npy file, relative to the program"},
            "fill": dict(SCALAR_SCHEMA, description="initial contents: one scalar everywhere"),
            "data": {"type": "array", "description": "initial contents: a nested list"},
            "output": {"type": "boolean",
                       "description": "write the tensor to OUTDIR/<name>.npy after the run"},
            "core": {"enum": [0, 1], "description": "two-core programs: the core that owns "
                     "this SBUF/PSUM/private-HBM tensor (HBM without it: shared)"},
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
    from nkirun.source.loops import schema_defs  # runtime loops: `for:` / `while:` entries
    defs.update(schema_defs())
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$id": SCHEMA_ID,
        "title": "nkirun program, format version 1",
        "description": "Generated by `python -m nkirun.cli.regenerate` from nkirun's "
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
            "cores": {"type": "array", "minItems": 2, "maxItems": 2,
                      "description": "a two-core (LNC2) program, instead of `instructions`: "
                                     "core 0's stream, then core 1's",
                      "items": {"type": "object", "required": ["instructions"],
                                "additionalProperties": False, "properties": {
                                    "instructions": {"type": "array", "items": {
                                        "$ref": "#/definitions/instruction"}}}}},
        },
        "not": {"required": ["instructions", "cores"]},
        "required": ["version"],
        "additionalProperties": False,
        "definitions": {
            "instruction": {
                "type": "object", "minProperties": 1, "maxProperties": 1,
                "description": "one nki.isa instruction: `- op: {keyword: value, ...}`",
                "defaultSnippets": [instruction_snippet(spec) for spec in ops_by_name.values()],
                "properties": {**{name: {"$ref": f"#/definitions/op_{name}"}
                                  for name in ops_by_name},
                               "for": {"$ref": "#/definitions/loop_for"},
                               "while": {"$ref": "#/definitions/loop_while"}},
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
